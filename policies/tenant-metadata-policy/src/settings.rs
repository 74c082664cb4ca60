//! Settings of tenant-metadata-policy (README "Settings").

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use kube_values::labels::{is_annotation_key, is_label_key, is_label_value};
use policy_decode::SettingsError;
use policy_decode::matcher::{OneOrMany, StringMatcher, regexes};
use policy_decode::message::bracketed;
use policy_decode::names::NameList;
use policy_decode::settings::{Validated, is_reread, no_duplicate_names};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    rules: Option<Vec<RawRule>>,
}

/// One rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRule {
    #[serde(default)]
    kinds: Option<Vec<String>>,
    #[serde(default)]
    api_groups: Option<Vec<String>>,
    #[serde(default)]
    labels: Option<KeyMap>,
    #[serde(default)]
    annotations: Option<KeyMap>,
}

/// What one label or annotation key gets, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawKeyRule {
    #[serde(default)]
    managed: Option<String>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    required: Option<bool>,
    #[serde(default)]
    allowed: Option<NameList>,
    #[serde(default)]
    allowed_regex: Option<OneOrMany>,
    #[serde(default)]
    denied: Option<NameList>,
    #[serde(default)]
    denied_regex: Option<OneOrMany>,
}

/// A map of keys to their rules as written, in document order (the order writes and messages
/// follow). Decoded in full when the settings are validated; when `validate` re-reads them
/// (every request, `docs/semantics.md#cost`) kept as its JSON text, from which a request
/// decodes only the key rules that can concern it ([`Rule::key_rules`]).
#[derive(Debug)]
enum KeyMap {
    /// Every key rule, decoded.
    Decoded(Vec<(String, Box<RawKeyRule>)>),
    /// The map's JSON text (re-read settings).
    Text(Box<RawValue>),
}

impl<'de> Deserialize<'de> for KeyMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor;

        impl<'de> Visitor<'de> for MapVisitor {
            type Value = Vec<(String, Box<RawKeyRule>)>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of keys to their rules")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(1));
                while let Some(pair) = map.next_entry::<String, Box<RawKeyRule>>()? {
                    pairs.push(pair);
                }
                Ok(pairs)
            }
        }

        if is_reread() {
            Box::<RawValue>::deserialize(d).map(KeyMap::Text)
        } else {
            d.deserialize_map(MapVisitor).map(KeyMap::Decoded)
        }
    }
}

/// Which metadata map a key belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// `metadata.labels`.
    Labels,
    /// `metadata.annotations`.
    Annotations,
}

impl MapKind {
    /// The field name (`labels`).
    pub fn field(self) -> &'static str {
        match self {
            MapKind::Labels => "labels",
            MapKind::Annotations => "annotations",
        }
    }

    /// The noun in messages (`label`).
    pub fn noun(self) -> &'static str {
        match self {
            MapKind::Labels => "label",
            MapKind::Annotations => "annotation",
        }
    }
}

/// The Kinds a rule applies to (README rule 1).
#[derive(Clone, Debug, PartialEq)]
pub enum Kinds {
    /// `"*"`: every kind.
    Any,
    /// These Kind names (exact, as in `request.kind.kind`).
    Named(HashSet<String>),
}

/// The API groups and versions a rule applies to (README rule 1), in Capsule's forms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApiGroups {
    /// `"*"`: every group and version.
    pub any: bool,
    /// Groups matched at any version (`apps`).
    pub groups: HashSet<String>,
    /// Exact group and version pairs (`apps/v1`; core `v1` is `("", "v1")`).
    pub versions: HashSet<(String, String)>,
}

impl ApiGroups {
    /// Whether a request of `group`/`version` is covered.
    pub fn matches(&self, group: &str, version: &str) -> bool {
        self.any
            || self.groups.contains(group)
            || self
                .versions
                .contains(&(group.to_owned(), version.to_owned()))
    }

    /// Reads `apiGroups`: absent, `[]`, `[""]`, `["v1"]` are core `v1`; `"*"` is everything;
    /// `group` any version of it; `group/version` that version only.
    fn build(path: &str, raw: Option<Vec<String>>) -> Result<Self, SettingsError> {
        let mut out = ApiGroups::default();
        let entries = raw.unwrap_or_default();
        if entries.is_empty() {
            out.versions.insert((String::new(), "v1".to_owned()));
        }
        for (i, entry) in entries.into_iter().enumerate() {
            let at = || format!("{path}[{i}]");
            match entry.as_str() {
                "*" => out.any = true,
                "" | "v1" => {
                    out.versions.insert((String::new(), "v1".to_owned()));
                }
                _ => match entry.split_once('/') {
                    Some((group, version)) => {
                        if !is_reread() && (!is_group(group) || !is_version(version)) {
                            return Err(SettingsError::new(
                                at(),
                                format!(
                                    "{entry:?} is not an API group or group/version (write \"apps\", \"apps/v1\", \"v1\" or \"*\")"
                                ),
                            ));
                        }
                        out.versions.insert((group.to_owned(), version.to_owned()));
                    }
                    None => {
                        if !is_reread() && !is_group(&entry) {
                            return Err(SettingsError::new(
                                at(),
                                format!(
                                    "{entry:?} is not an API group or group/version (write \"apps\", \"apps/v1\", \"v1\" or \"*\")"
                                ),
                            ));
                        }
                        out.groups.insert(entry);
                    }
                },
            }
        }
        Ok(out)
    }
}

/// An API group name: a DNS subdomain (`apps`, `gateway.networking.k8s.io`).
fn is_group(s: &str) -> bool {
    kube_values::labels::is_dns_subdomain(s)
}

/// An API version: lower-case letters and digits starting with `v` (`v1`, `v1beta1`).
fn is_version(s: &str) -> bool {
    s.starts_with('v')
        && s.len() > 1
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A Kind name: an ASCII letter upper-case first, then letters and digits (`Pod`, `HTTPRoute`).
fn is_kind(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// What the policy writes for a key (README rules 2 and 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Written on CREATE and UPDATE when absent or different.
    Managed(String),
    /// Written on CREATE only, when absent.
    Default(String),
}

/// A value list: exact values and full-match regexes, with how messages show them.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    /// The values and regexes.
    pub matcher: StringMatcher,
}

impl Values {
    /// Builds from `names` and `regex`; `field` is `allowed` or `denied` (path of the list).
    fn build(
        path: KeyPath<'_>,
        field: &str,
        names: Option<NameList>,
        regex: Option<OneOrMany>,
    ) -> Result<Option<Box<Self>>, SettingsError> {
        if names.is_none() && regex.is_none() {
            return Ok(None);
        }
        let names = names.unwrap_or_default();
        if !is_reread() {
            no_duplicate_names(&format!("{path}.{field}"), &names)?;
        }
        let compiled = match regex {
            None => Vec::new(),
            Some(OneOrMany::One(pattern)) => {
                let regex_path = format!("{path}.{field}Regex");
                regexes(&regex_path, &[pattern])
                    .map_err(|e| SettingsError::new(&regex_path, e.problem))?
            }
            Some(OneOrMany::Many(patterns)) => regexes(&format!("{path}.{field}Regex"), &patterns)?,
        };
        Ok(Some(Box::new(Values {
            matcher: StringMatcher::new(names, compiled),
        })))
    }

    /// Whether `value` is listed or fully matches a regex.
    pub fn matches(&self, value: &str) -> bool {
        self.matcher.matches(value)
    }

    /// `allowed: [a, b], allowedRegex: [x.*]` (`field` is `allowed` or `denied`); an empty
    /// part is left out, the lists cut after their first 20 entries.
    pub fn describe(&self, field: &str) -> String {
        let mut parts = Vec::new();
        let names = self.matcher.names();
        if !names.is_empty() {
            parts.push(format!("{field}: {}", bracketed(names.iter())));
        }
        let regexes = self.matcher.regex_list();
        if !regexes.is_empty() {
            parts.push(format!(
                "{field}Regex: {}",
                bracketed(regexes.iter().map(|r| r.pattern()))
            ));
        }
        parts.join(", ")
    }
}

/// The settings path of one key rule (`rules[0].labels["team"]`), written out only when a
/// message needs it: settings are re-read with every request (`docs/semantics.md#cost`).
#[derive(Clone, Copy)]
struct KeyPath<'a> {
    rule: &'a str,
    map: MapKind,
    key: &'a str,
}

impl fmt::Display for KeyPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}[{:?}]", self.rule, self.map.field(), self.key)
    }
}

/// What one label or annotation key gets (README rules 2–5).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRule {
    /// The key.
    pub key: String,
    /// The value written, if any.
    pub write: Option<Write>,
    /// Whether the key must be present.
    pub required: bool,
    /// The values allowed (exact and regexes), if restricted (boxed: a rule may list
    /// thousands of keys, most without lists).
    pub allowed: Option<Box<Values>>,
    /// The values denied (exact and regexes), if any.
    pub denied: Option<Box<Values>>,
}

impl KeyRule {
    /// Validates the rule of `key` at settings path `path` (`rules[0].labels["team"]`).
    fn build(
        rule: &str,
        map: MapKind,
        key: String,
        raw: RawKeyRule,
    ) -> Result<Self, SettingsError> {
        let path = KeyPath {
            rule,
            map,
            key: &key,
        };
        let write = match (raw.managed, raw.default) {
            (Some(_), Some(_)) => {
                return Err(SettingsError::new(
                    path.to_string(),
                    "managed and default together: managed is written on every CREATE and UPDATE, default only when the key is absent on CREATE; give one",
                ));
            }
            (Some(v), None) => Some(Write::Managed(v)),
            (None, Some(v)) => Some(Write::Default(v)),
            (None, None) => None,
        };
        let allowed = Values::build(path, "allowed", raw.allowed, raw.allowed_regex)?;
        let denied = Values::build(path, "denied", raw.denied, raw.denied_regex)?;
        let key_rule = KeyRule {
            key,
            write,
            required: raw.required.unwrap_or(false),
            allowed,
            denied,
        };
        if !is_reread() {
            let path = KeyPath {
                rule,
                map,
                key: &key_rule.key,
            };
            key_rule.check(&path.to_string(), map)?;
        }
        Ok(key_rule)
    }

    /// The checks that cannot change a verdict of settings that passed them once.
    fn check(&self, path: &str, map: MapKind) -> Result<(), SettingsError> {
        if self.write.is_none() && !self.required && self.allowed.is_none() && self.denied.is_none()
        {
            return Err(SettingsError::new(
                path,
                "give managed, default, required, allowed, allowedRegex, denied or deniedRegex (an empty rule does nothing)",
            ));
        }
        if let Some(allowed) = &self.allowed
            && allowed.matcher.is_empty()
        {
            return Err(SettingsError::new(
                format!("{path}.allowed"),
                "an empty list allows no value: list the allowed values, or leave allowed out",
            ));
        }
        if let Some(write) = &self.write {
            let (field, value) = match write {
                Write::Managed(v) => ("managed", v),
                Write::Default(v) => ("default", v),
            };
            let at = format!("{path}.{field}");
            if map == MapKind::Labels && !is_label_value(value) {
                return Err(SettingsError::new(
                    at,
                    format!("{value:?} is not a valid label value"),
                ));
            }
            if let Some(problem) = self.problems(value).into_iter().next() {
                return Err(SettingsError::new(
                    at,
                    format!("{problem}: the policy would refuse the value it writes"),
                ));
            }
        }
        Ok(())
    }

    /// Every problem of `value` under the key's own lists (README rule 4), in this order: not
    /// in `allowed`/`allowedRegex` (when either is given), in `denied`/`deniedRegex`.
    pub fn problems(&self, value: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(allowed) = &self.allowed
            && !allowed.matches(value)
        {
            out.push(format!(
                "{value:?} is not allowed; {}",
                allowed.describe("allowed")
            ));
        }
        if let Some(denied) = &self.denied
            && denied.matches(value)
        {
            out.push(format!(
                "{value:?} is denied; {}",
                denied.describe("denied")
            ));
        }
        out
    }
}

/// One rule: where it applies, and what its keys get.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The Kinds.
    pub kinds: Kinds,
    /// The API groups and versions.
    pub api_groups: ApiGroups,
    /// The settings path of the rule (`rules[0]`).
    path: String,
    /// The label keys, in settings order.
    labels: KeyRules,
    /// The annotation keys, in settings order.
    annotations: KeyRules,
}

impl Rule {
    /// Whether the rule applies to a request of `group`/`version` `kind` (README rule 1).
    pub fn applies(&self, group: &str, version: &str, kind: &str) -> bool {
        let kind_matches = match &self.kinds {
            Kinds::Any => true,
            Kinds::Named(names) => names.contains(kind),
        };
        kind_matches && self.api_groups.matches(group, version)
    }

    /// The key rules of `map` that can concern an object: every one when the settings were
    /// decoded in full; from re-read settings, those whose key `present` says the object or
    /// the old object carries, and those that may write or require a key
    /// ([`may_write_or_require`]) — the others neither write nor find anything to judge
    /// (README rules 2–4). Settings order.
    pub fn key_rules(
        &self,
        map: MapKind,
        present: impl Fn(&str) -> bool,
    ) -> Result<Cow<'_, [KeyRule]>, SettingsError> {
        let rules = match map {
            MapKind::Labels => &self.labels,
            MapKind::Annotations => &self.annotations,
        };
        match rules {
            KeyRules::Built(rules) => Ok(Cow::Borrowed(rules)),
            KeyRules::Text(text) => {
                let mut out = Vec::new();
                for_each_entry(text, |key, raw| {
                    if present(&key) || may_write_or_require(raw.get()) {
                        let decoded: RawKeyRule = policy_decode::settings::decode(
                            policy_decode::settings::Raw::Json(raw.get()),
                        )
                        .map_err(|e| {
                            let at = KeyPath {
                                rule: &self.path,
                                map,
                                key: &key,
                            };
                            e.under(&at.to_string())
                        })?;
                        out.push(KeyRule::build(&self.path, map, key.into_owned(), decoded)?);
                    }
                    Ok(())
                })
                .map_err(|e| match e.path.is_empty() {
                    true => e.under(&format!("{}.{}", self.path, map.field())),
                    false => e,
                })?;
                Ok(Cow::Owned(out))
            }
        }
    }

    /// Whether `map` of this rule may hold a key rule for one of `keys` that `decoded` (what
    /// [`Rule::key_rules`] returned) lacks. Decoded settings hold every key rule; a map's
    /// text names a key literally unless written with an escape (label and annotation keys
    /// need none), and names each key once. Linear: beyond a few keys, say yes.
    pub fn may_name(&self, map: MapKind, keys: &HashSet<String>, decoded: &[KeyRule]) -> bool {
        const FEW: usize = 16;
        let text = match map {
            MapKind::Labels => &self.labels,
            MapKind::Annotations => &self.annotations,
        };
        let KeyRules::Text(text) = text else {
            return false;
        };
        let text = text.get();
        if keys.len() > FEW || text.contains('\\') {
            return true;
        }
        keys.iter().any(|key| {
            !decoded.iter().any(|d| &d.key == key) && text.contains(&format!("\"{key}\""))
        })
    }

    fn build(path: &str, raw: RawRule) -> Result<Self, SettingsError> {
        let kinds = match raw.kinds {
            None => {
                return Err(SettingsError::new(
                    format!("{path}.kinds"),
                    "missing: list the Kinds the rule applies to (\"*\" for every kind)",
                ));
            }
            Some(kinds) if kinds.is_empty() => {
                return Err(SettingsError::new(
                    format!("{path}.kinds"),
                    "must not be empty: list the Kinds the rule applies to (\"*\" for every kind)",
                ));
            }
            Some(kinds) => {
                if !is_reread() {
                    for (i, kind) in kinds.iter().enumerate() {
                        if kind != "*" && !is_kind(kind) {
                            return Err(SettingsError::new(
                                format!("{path}.kinds[{i}]"),
                                format!(
                                    "{kind:?} is not a Kind: write it as in kind.kind (Pod, Deployment), or \"*\" for every kind"
                                ),
                            ));
                        }
                    }
                    no_duplicate_names(&format!("{path}.kinds"), &kinds.clone().into())?;
                }
                if kinds.iter().any(|k| k == "*") {
                    Kinds::Any
                } else {
                    Kinds::Named(kinds.into_iter().collect())
                }
            }
        };
        let api_groups = ApiGroups::build(&format!("{path}.apiGroups"), raw.api_groups)?;
        let no_keys = |m: &Option<KeyMap>| match m {
            None => true,
            Some(KeyMap::Decoded(pairs)) => pairs.is_empty(),
            Some(KeyMap::Text(_)) => false,
        };
        if no_keys(&raw.labels) && no_keys(&raw.annotations) {
            return Err(SettingsError::new(
                path,
                "give labels or annotations (a rule without keys does nothing)",
            ));
        }
        let labels = key_rules(path, MapKind::Labels, raw.labels)?;
        let annotations = key_rules(path, MapKind::Annotations, raw.annotations)?;
        Ok(Rule {
            kinds,
            api_groups,
            path: path.to_owned(),
            labels,
            annotations,
        })
    }
}

/// The key rules of one map of a rule, keys checked (label keys; annotation keys lower-cased
/// first, as the API server checks them) and each listed once.
fn key_rules(path: &str, map: MapKind, raw: Option<KeyMap>) -> Result<KeyRules, SettingsError> {
    let pairs = match raw {
        None => Vec::new(),
        Some(KeyMap::Decoded(pairs)) => pairs,
        Some(KeyMap::Text(text)) => return Ok(KeyRules::Text(text)),
    };
    let mut seen = HashSet::with_capacity(if is_reread() { 0 } else { pairs.len() });
    let mut out = Vec::with_capacity(pairs.len());
    for (key, raw) in pairs {
        if !is_reread() {
            let at = KeyPath {
                rule: path,
                map,
                key: &key,
            }
            .to_string();
            let valid = match map {
                MapKind::Labels => is_label_key(&key),
                MapKind::Annotations => is_annotation_key(&key),
            };
            if !valid {
                return Err(SettingsError::new(
                    at,
                    format!("{key:?} is not a valid {} key", map.noun()),
                ));
            }
            if !seen.insert(key.clone()) {
                return Err(SettingsError::new(at, "duplicate key"));
            }
        }
        let rule = KeyRule::build(path, map, key, *raw)?;
        out.push(rule);
    }
    Ok(KeyRules::Built(out))
}

/// The key rules of one map of a rule.
#[derive(Clone, Debug)]
enum KeyRules {
    /// Decoded and validated (`validate_settings`).
    Built(Vec<KeyRule>),
    /// The map's JSON text, decoded per request ([`Rule::key_rules`]).
    Text(Box<RawValue>),
}

/// Whether a key rule's JSON text may hold `managed`, `default` or `required`: it names one
/// of them, or holds an escape (a name could be spelt with one). Conservative: a value that
/// happens to be one of these words only costs the rule's decoding.
pub fn may_write_or_require(text: &str) -> bool {
    // one pass over the bytes: a quote followed by one of the names and a quote, or an escape
    const NAMES: [&[u8]; 3] = [b"managed\"", b"default\"", b"required\""];
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| match b {
        b'\\' => true,
        b'"' => bytes
            .get(i + 1..)
            .is_some_and(|rest| NAMES.iter().any(|name| rest.starts_with(name))),
        _ => false,
    })
}

/// Calls `f` with every key and value text of the JSON map `text`, in document order.
fn for_each_entry<'a>(
    text: &'a RawValue,
    mut f: impl FnMut(Cow<'a, str>, &'a RawValue) -> Result<(), SettingsError>,
) -> Result<(), SettingsError> {
    struct Entries<'f, F>(&'f mut F);

    impl<'de, F> Visitor<'de> for Entries<'_, F>
    where
        F: FnMut(Cow<'de, str>, &'de RawValue) -> Result<(), String>,
    {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map of keys to their rules")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Key<'de>>()? {
                let value: &'de RawValue = map.next_value()?;
                (self.0)(key.0, value).map_err(serde::de::Error::custom)?;
            }
            Ok(())
        }
    }

    // an error of `f` is returned as it is, already named by its settings path
    let mut failed = None;
    let mut visit = |key: Cow<'a, str>, value: &'a RawValue| {
        f(key, value).map_err(|e| {
            let problem = e.to_string();
            failed = Some(e);
            problem
        })
    };
    let mut de = serde_json::Deserializer::from_str(text.get());
    let read = de.deserialize_map(Entries(&mut visit));
    match (failed, read) {
        (Some(e), _) => Err(e),
        (None, Ok(())) => Ok(()),
        (None, Err(e)) => Err(SettingsError::new("", e.to_string())),
    }
}

/// A map key, borrowed from the settings text unless it holds an escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }

        d.deserialize_str(KeyVisitor)
    }
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The rules, in settings order.
    pub rules: Vec<Rule>,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let rules = match raw.rules {
            None => {
                return Err(SettingsError::new(
                    "rules",
                    "missing: list at least one rule ({kinds, labels | annotations})",
                ));
            }
            Some(rules) if rules.is_empty() => {
                return Err(SettingsError::new(
                    "rules",
                    "must not be empty: list at least one rule ({kinds, labels | annotations})",
                ));
            }
            Some(rules) => rules,
        };
        let rules = rules
            .into_iter()
            .enumerate()
            .map(|(i, rule)| Rule::build(&format!("rules[{i}]"), rule))
            .collect::<Result<_, _>>()?;
        Ok(Settings { rules })
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )]
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn one(rule: Value) -> Value {
        json!({"rules": [rule]})
    }

    #[rstest]
    #[case(json!({}), "rules: missing")]
    #[case(Value::Null, "rules: missing")]
    #[case(json!({"rules": []}), "rules: must not be empty")]
    #[case(json!({"rules": null}), "rules: invalid type: null")]
    #[case(json!({"rule": []}), "rule: unknown field `rule`")]
    #[case(one(json!({"labels": {"a": {"required": true}}})), "rules[0].kinds: missing")]
    #[case(one(json!({"kinds": [], "labels": {"a": {"required": true}}})), "rules[0].kinds: must not be empty")]
    #[case(one(json!({"kinds": ["pods"], "labels": {"a": {"required": true}}})), "rules[0].kinds[0]: \"pods\" is not a Kind")]
    #[case(one(json!({"kinds": ["Pod", "Pod"], "labels": {"a": {"required": true}}})), "rules[0].kinds[1]: duplicate entry \"Pod\"")]
    #[case(one(json!({"kinds": ["Pod"]})), "rules[0]: give labels or annotations")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {}, "annotations": {}})), "rules[0]: give labels or annotations")]
    #[case(one(json!({"kinds": ["Pod"], "apiGroups": ["apps/"], "labels": {"a": {"required": true}}})), "rules[0].apiGroups[0]: \"apps/\" is not an API group")]
    #[case(one(json!({"kinds": ["Pod"], "apiGroups": ["Apps"], "labels": {"a": {"required": true}}})), "rules[0].apiGroups[0]: \"Apps\" is not an API group")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"managed": "x", "default": "y"}}})), "rules[0].labels[\"a\"]: managed and default together")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"bad key": {"required": true}}})), "rules[0].labels[\"bad key\"]: \"bad key\" is not a valid label key")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"Acme.io/x": {"required": true}}})), "rules[0].labels[\"Acme.io/x\"]: \"Acme.io/x\" is not a valid label key")]
    #[case(one(json!({"kinds": ["Pod"], "annotations": {"a b": {"required": true}}})), "rules[0].annotations[\"a b\"]: \"a b\" is not a valid annotation key")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {}}})), "rules[0].labels[\"a\"]: give managed, default, required")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"allowed": []}}})), "rules[0].labels[\"a\"].allowed: an empty list allows no value")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"allowedRegex": "("}}})), "rules[0].labels[\"a\"].allowedRegex: invalid regex \"(\"")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"deniedRegex": ["x", "a)|(b"]}}})), "rules[0].labels[\"a\"].deniedRegex[1]: invalid regex \"a)|(b\"")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"denied": ["x", "x"]}}})), "rules[0].labels[\"a\"].denied[1]: duplicate entry \"x\"")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"managed": "not valid"}}})), "rules[0].labels[\"a\"].managed: \"not valid\" is not a valid label value")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"default": "qa", "allowed": ["prod"]}}})), "rules[0].labels[\"a\"].default: \"qa\" is not allowed; allowed: [prod]: the policy would refuse the value it writes")]
    #[case(one(json!({"kinds": ["Pod"], "annotations": {"a": {"managed": "x-tmp", "deniedRegex": ".*-tmp"}}})), "rules[0].annotations[\"a\"].managed: \"x-tmp\" is denied; deniedRegex: [.*-tmp]")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"required": true, "values": []}}})), "rules[0].labels.a.values: unknown field `values`")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"managed": null}}})), "rules[0].labels.a.managed: invalid type: null")]
    #[case(one(json!({"kinds": ["Pod"], "labels": {"a": {"required": "yes"}}})), "rules[0].labels.a.required: invalid type: string")]
    #[case(one(json!({"kinds": ["Pod"], "labels": ["a"]})), "rules[0].labels: invalid type: sequence")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn api_group_forms() {
        let groups = |g: Value| {
            let s = Settings::parse(&one(
                json!({"kinds": ["*"], "apiGroups": g, "labels": {"a": {"required": true}}}),
            ))
            .unwrap();
            s.rules[0].api_groups.clone()
        };
        for core in [json!([]), json!([""]), json!(["v1"]), Value::Null] {
            let g = if core.is_null() {
                let s = Settings::parse(&one(
                    json!({"kinds": ["*"], "labels": {"a": {"required": true}}}),
                ))
                .unwrap();
                s.rules[0].api_groups.clone()
            } else {
                groups(core)
            };
            assert!(g.matches("", "v1"));
            assert!(!g.matches("", "v2") && !g.matches("apps", "v1"));
        }
        let g = groups(json!(["apps", "batch/v1"]));
        assert!(g.matches("apps", "v1") && g.matches("apps", "v1beta2"));
        assert!(g.matches("batch", "v1") && !g.matches("batch", "v1beta1"));
        assert!(!g.matches("", "v1"));
        let g = groups(json!(["*"]));
        assert!(g.matches("", "v1") && g.matches("example.io", "v3alpha1"));
    }

    #[test]
    fn kinds_and_keys_keep_their_order() {
        let s = Settings::parse(&json!({"rules": [
            {"kinds": ["Pod", "Service"], "labels": {"z": {"required": true}, "a": {"managed": "x"}},
             "annotations": {"Example.com/Note": {"default": "any text"}}},
            {"kinds": ["*"], "apiGroups": ["*"], "labels": {"team": {"allowed": ["prod"], "allowedRegex": "v[0-9]+"}}}
        ]}))
        .unwrap();
        let all = |_: &str| true;
        let labels = s.rules[0].key_rules(MapKind::Labels, all).unwrap();
        let keys: Vec<&str> = labels.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["z", "a"]);
        assert!(s.rules[0].applies("", "v1", "Service"));
        assert!(!s.rules[0].applies("", "v1", "ConfigMap"));
        assert!(s.rules[1].applies("apps", "v1", "Deployment"));
        assert_eq!(
            s.rules[0].key_rules(MapKind::Annotations, all).unwrap()[0].write,
            Some(Write::Default("any text".into()))
        );
        let team = &s.rules[1].key_rules(MapKind::Labels, all).unwrap()[0];
        assert!(team.problems("v2").is_empty());
        assert_eq!(
            team.problems("qa"),
            ["\"qa\" is not allowed; allowed: [prod], allowedRegex: [v[0-9]+]"]
        );
    }

    #[test]
    fn may_write_or_require_is_conservative() {
        assert!(may_write_or_require(r#"{"managed":"x"}"#));
        assert!(may_write_or_require(r#"{ "required" : false }"#));
        assert!(may_write_or_require(r#"{"m\u0061naged":"x"}"#));
        assert!(may_write_or_require(r#"{"denied":["default"]}"#));
        assert!(!may_write_or_require(
            r#"{"denied":["legacy"],"allowedRegex":"v.*"}"#
        ));
    }

    #[test]
    fn reread_settings_decode_only_the_key_rules_a_request_concerns() {
        // kept as text when re-read: a key rule is decoded when its key is present, or when
        // it may write or require a key; this settings text was validated before, except
        // for the broken rule of "broken", which only a request carrying it decodes
        let raw = r#"{"rules": [{"kinds": ["Pod"], "labels": {
            "team": {"managed": "platform"}, "env": {"denied": ["legacy"]},
            "broken": {"denied": 5}, "escaped": {"req\u0075ired": true}}}]}"#;
        let s = policy_decode::settings::reread(|| {
            Settings::parse(policy_decode::settings::Raw::Json(raw))
        })
        .unwrap();
        let keys = |present: &[&str]| {
            let rules = s.rules[0]
                .key_rules(MapKind::Labels, |k| present.contains(&k))
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(rules.iter().map(|k| k.key.clone()).collect::<Vec<_>>())
        };
        assert_eq!(keys(&[]).unwrap(), ["team", "escaped"]);
        assert_eq!(keys(&["env"]).unwrap(), ["team", "env", "escaped"]);
        assert!(
            s.rules[0]
                .key_rules(MapKind::Labels, |k| k == "escaped")
                .unwrap()[1]
                .required
        );
        let err = keys(&["broken"]).unwrap_err();
        assert!(
            err.starts_with("rules[0].labels[\"broken\"].denied: invalid type: integer `5`"),
            "{err}"
        );
    }

    #[test]
    fn reread_skips_syntax_checks_only() {
        let raw = one(
            json!({"kinds": ["pods", "pods"], "labels": {"bad key": {"managed": "bad value"}}}),
        );
        assert!(Settings::parse(&raw).is_err());
        assert!(policy_decode::settings::reread(|| Settings::parse(&raw)).is_ok());
        // re-read, the key rules stay text until a request needs them
        let raw = one(json!({"kinds": ["Pod"], "labels": {"a": {"managed": "x", "default": "y"}}}));
        let s = policy_decode::settings::reread(|| Settings::parse(&raw)).unwrap();
        let err = s.rules[0]
            .key_rules(MapKind::Labels, |_| false)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("rules[0].labels[\"a\"]: managed and default together"),
            "{err}"
        );
    }
}
