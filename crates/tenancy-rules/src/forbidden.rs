//! Forbidden label and annotation keys (Capsule's `forbiddenLabels` / `forbiddenAnnotations`):
//! exact keys and full-match regexes a requester may not add or give a new value
//! (`docs/semantics.md#metadata`). Removing a forbidden key, or leaving it unchanged, is never
//! judged, so a key an administrator set does not block later updates.
//!
//! ```
//! use tenancy_rules::forbidden::{ForbiddenKeys, RawForbiddenKeys};
//! let raw: RawForbiddenKeys = serde_json::from_value(serde_json::json!(
//!     {"denied": ["team"], "deniedRegex": ".*\\.acme\\.net/.*"})).unwrap();
//! let keys = ForbiddenKeys::build(raw, "forbiddenLabels", "label").unwrap();
//! assert!(keys.forbids("team") && keys.forbids("x.acme.net/y") && !keys.forbids("acme.net/y"));
//! assert_eq!(keys.describe(), r#"names [team], regexes [".*\\.acme\\.net/.*"]"#);
//! ```

use serde::Deserialize;
use serde_json::Value;

use policy_admission::verdict::Verdict;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::json::At;
use policy_decode::matcher::{OneOrMany, StringMatcher, regexes};
use policy_decode::names::NameList;
use policy_decode::settings::{is_reread, no_duplicate_names};

/// `forbiddenLabels` / `forbiddenAnnotations` as written: `denied` (exact keys) and
/// `deniedRegex` (one full-match regex or a list).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawForbiddenKeys {
    #[serde(default)]
    denied: Option<NameList>,
    #[serde(default)]
    denied_regex: Option<OneOrMany>,
}

/// Validated forbidden keys of one metadata map: exact keys and full-match regexes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForbiddenKeys {
    keys: StringMatcher,
}

impl ForbiddenKeys {
    /// Validates the block at settings path `path` (`forbiddenLabels`); `noun` is `label`
    /// or `annotation`. `{}` is refused (it would forbid nothing while looking like a rule);
    /// a denied key that is not a valid `noun` key, a repeated key and an invalid regex are
    /// refused, naming the entry.
    pub fn build(raw: RawForbiddenKeys, path: &str, noun: &str) -> Result<Self, SettingsError> {
        if raw.denied.is_none() && raw.denied_regex.is_none() {
            return Err(SettingsError::new(
                path,
                format!("give denied or deniedRegex (omit {path} to forbid no {noun} key)"),
            ));
        }
        let denied = raw.denied.unwrap_or_default();
        check_keys(&format!("{path}.denied"), &denied, noun)?;
        let regex_path = format!("{path}.deniedRegex");
        let compiled = match raw.denied_regex {
            None => Vec::new(),
            Some(OneOrMany::One(pattern)) => regexes(&regex_path, &[pattern])
                .map_err(|e| SettingsError::new(&regex_path, e.problem))?,
            Some(OneOrMany::Many(patterns)) => regexes(&regex_path, &patterns)?,
        };
        Ok(ForbiddenKeys {
            keys: StringMatcher::new(denied, compiled),
        })
    }

    /// [`ForbiddenKeys::build`] for an optional block; absent forbids nothing.
    pub fn build_optional(
        raw: Option<RawForbiddenKeys>,
        path: &str,
        noun: &str,
    ) -> Result<Self, SettingsError> {
        match raw {
            Some(raw) => Self::build(raw, path, noun),
            None => Ok(ForbiddenKeys::default()),
        }
    }

    /// Whether `key` is forbidden.
    pub fn forbids(&self, key: &str) -> bool {
        self.keys.matches(key)
    }

    /// Whether no key is forbidden.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// What is forbidden, for messages: `names [a], regexes ["x.*"]`.
    pub fn describe(&self) -> String {
        self.keys.describe()
    }

    /// The violation for forbidden `key`: `<noun> key "<key>" is not allowed (forbidden:
    /// names [...], regexes [...])`.
    pub fn refusal(&self, noun: &str, key: &str) -> String {
        format!(
            "{noun} key {key:?} is not allowed (forbidden: {})",
            self.describe()
        )
    }

    /// Adds a violation for every forbidden key of `metadata.<map>` of `object` that is new
    /// or has a new value compared with `old` (the old object on UPDATE; `None` on CREATE,
    /// where every key is new), at `metadata.<map>["<key>"]` ([`ForbiddenKeys::refusal`]).
    /// A map that is not a map of strings is malformed (400 naming the path).
    pub fn judge(
        &self,
        object: &At<'_>,
        old: Option<&At<'_>>,
        map: &str,
        noun: &str,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        if self.is_empty() {
            return Ok(());
        }
        let Some(meta) = object.get_object("metadata")? else {
            return Ok(());
        };
        let pairs = meta.get_string_map(map)?;
        if pairs.is_empty() {
            return Ok(());
        }
        let old_pairs = match old.map(|o| o.get_object("metadata")).transpose()?.flatten() {
            Some(old_meta) => old_meta.get_object(map)?.and_then(|m| m.value.as_object()),
            None => None,
        };
        let path = meta.path.field(map);
        for (key, value) in pairs {
            if !self.forbids(key) {
                continue;
            }
            let unchanged =
                old_pairs.and_then(|m| m.get(key)).and_then(Value::as_str) == Some(value);
            if !unchanged {
                verdict.violation(&path.key(key), self.refusal(noun, key));
            }
        }
        Ok(())
    }
}

/// Refuses a denied key that is not a valid `noun` key (no object can carry it, so it is a
/// mistake) and repeated keys; skipped when settings are re-read (syntax checks cannot
/// change a verdict). Annotation keys are checked lower-cased, as the API server does.
fn check_keys(path: &str, denied: &NameList, noun: &str) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    no_duplicate_names(path, denied)?;
    for (i, key) in denied.iter().enumerate() {
        let checked = match noun {
            "annotation" => key.to_ascii_lowercase(),
            _ => key.to_owned(),
        };
        if !kube_values::labels::is_label_key(&checked) {
            return Err(SettingsError::new(
                format!("{path}[{i}]"),
                format!("{key:?} is not a valid {noun} key"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::path::FieldPath;
    use serde_json::json;

    fn keys(raw: Value, noun: &str) -> Result<ForbiddenKeys, SettingsError> {
        let raw: RawForbiddenKeys = serde_json::from_value(raw).unwrap();
        ForbiddenKeys::build(raw, "forbiddenLabels", noun)
    }

    #[test]
    fn refused_blocks_name_the_entry() {
        for (raw, message) in [
            (json!({}), "forbiddenLabels: give denied or deniedRegex"),
            (
                json!({"denied": ["bad key"]}),
                "forbiddenLabels.denied[0]: \"bad key\" is not a valid label key",
            ),
            (
                json!({"denied": ["a", "a"]}),
                "forbiddenLabels.denied[1]: duplicate entry \"a\"",
            ),
            (
                json!({"deniedRegex": "("}),
                "forbiddenLabels.deniedRegex: invalid regex \"(\"",
            ),
            (
                json!({"deniedRegex": ["x", "("]}),
                "forbiddenLabels.deniedRegex[1]: invalid regex \"(\"",
            ),
        ] {
            let err = keys(raw, "label").unwrap_err().to_string();
            assert!(err.starts_with(message), "{err}");
        }
        assert!(keys(json!({"denied": ["Acme.net/x"]}), "annotation").is_ok());
        assert!(keys(json!({"denied": ["Acme.net/x"]}), "label").is_err());
    }

    #[test]
    fn only_added_or_changed_forbidden_keys_are_violations() {
        let k = keys(
            json!({"denied": ["team"], "deniedRegex": [".*\\.acme\\.net/.*"]}),
            "label",
        )
        .unwrap();
        let old = json!({"metadata": {"labels": {"team": "a", "x.acme.net/keep": "1", "x.acme.net/gone": "1"}}});
        let new = json!({"metadata": {"labels": {"team": "b", "x.acme.net/keep": "1", "x.acme.net/new": "2", "free": "z"}}});
        let (new_at, old_at) = (
            At::new(&new, FieldPath::empty()),
            At::new(&old, FieldPath::root("oldObject")),
        );
        let mut v = Verdict::accept();
        k.judge(&new_at, Some(&old_at), "labels", "label", &mut v)
            .unwrap();
        assert_eq!(
            v.message(),
            "metadata.labels[\"team\"]: label key \"team\" is not allowed (forbidden: names [team], regexes [\".*\\\\.acme\\\\.net/.*\"]); \
             metadata.labels[\"x.acme.net/new\"]: label key \"x.acme.net/new\" is not allowed (forbidden: names [team], regexes [\".*\\\\.acme\\\\.net/.*\"])"
        );
        // CREATE: every key present is new
        let mut v = Verdict::accept();
        k.judge(&old_at, None, "labels", "label", &mut v).unwrap();
        assert_eq!(v.message().matches("is not allowed").count(), 3);
        // removal only: nothing judged
        let mut v = Verdict::accept();
        let none = json!({"metadata": {}});
        k.judge(
            &At::new(&none, FieldPath::empty()),
            Some(&old_at),
            "labels",
            "label",
            &mut v,
        )
        .unwrap();
        assert!(v.is_clean());
    }

    #[test]
    fn a_map_of_non_strings_is_malformed() {
        let k = keys(json!({"denied": ["team"]}), "label").unwrap();
        let new = json!({"metadata": {"labels": {"team": 1}}});
        let err = k
            .judge(
                &At::new(&new, FieldPath::empty()),
                None,
                "labels",
                "label",
                &mut Verdict::accept(),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata.labels[\"team\"]: expected a string"
        );
    }
}
