//! Kubernetes label selectors: `matchLabels` plus `matchExpressions`, ANDed (`docs/semantics.md#selectors`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::labels::{check_label, is_label_key, is_label_value};
use policy_decode::error::SettingsError;
use policy_decode::settings::is_reread;

/// A label selector as written in settings.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawLabelSelector {
    /// Labels that must be present with these values.
    #[serde(default)]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Set-based requirements.
    #[serde(default)]
    pub match_expressions: Option<Vec<RawRequirement>>,
}

/// One `matchExpressions` entry as written in settings.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawRequirement {
    /// Label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    /// Values for `In`/`NotIn`.
    #[serde(default)]
    pub values: Option<Vec<String>>,
}

/// A validated, non-empty label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSelector {
    match_labels: BTreeMap<String, String>,
    requirements: Vec<Requirement>,
}

/// A validated set-based requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// Key present with one of the values.
    In(String, Vec<String>),
    /// Key absent, or present with none of the values.
    NotIn(String, Vec<String>),
    /// Key present.
    Exists(String),
    /// Key absent.
    DoesNotExist(String),
}

/// Refuses invalid label keys and values: `matchLabels["<key>"]`,
/// `matchExpressions[i].key` and `matchExpressions[i].values[j]`.
fn check_label_syntax(raw: &RawLabelSelector) -> Result<(), SettingsError> {
    for (key, value) in raw.match_labels.iter().flatten() {
        check_label("matchLabels", key, value)?;
    }
    for (i, r) in raw.match_expressions.iter().flatten().enumerate() {
        if !is_label_key(&r.key) {
            return Err(SettingsError::new(
                format!("matchExpressions[{i}].key"),
                format!("invalid label key {:?}", r.key),
            ));
        }
        for (j, value) in r.values.iter().flatten().enumerate() {
            if !is_label_value(value) {
                return Err(SettingsError::new(
                    format!("matchExpressions[{i}].values[{j}]"),
                    format!("invalid label value {value:?}"),
                ));
            }
        }
    }
    Ok(())
}

impl Requirement {
    /// Validates one `matchExpressions` entry at `path`: a key, a known operator, values
    /// for `In`/`NotIn` and none for `Exists`/`DoesNotExist`.
    fn build(path: &str, r: &RawRequirement) -> Result<Self, SettingsError> {
        if r.key.is_empty() {
            return Err(SettingsError::new(
                format!("{path}.key"),
                "must not be empty",
            ));
        }
        let values = r.values.clone().unwrap_or_default();
        let key = r.key.clone();
        match r.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => Err(SettingsError::new(
                format!("{path}.values"),
                format!("operator {} needs at least one value", r.operator),
            )),
            "In" => Ok(Requirement::In(key, values)),
            "NotIn" => Ok(Requirement::NotIn(key, values)),
            "Exists" | "DoesNotExist" if !values.is_empty() => Err(SettingsError::new(
                format!("{path}.values"),
                format!("operator {} takes no values", r.operator),
            )),
            "Exists" => Ok(Requirement::Exists(key)),
            "DoesNotExist" => Ok(Requirement::DoesNotExist(key)),
            other => Err(SettingsError::new(
                format!("{path}.operator"),
                format!("{other:?} is not one of In, NotIn, Exists, DoesNotExist"),
            )),
        }
    }
}

impl LabelSelector {
    /// Validates a selector. An empty selector (`{}`) is refused as ambiguous
    /// (`docs/semantics.md#selectors`); label keys and values must be valid
    /// ([`crate::labels`], checked only when the settings are validated, not re-read).
    pub fn build(raw: &RawLabelSelector) -> Result<Self, SettingsError> {
        let match_labels = raw.match_labels.clone().unwrap_or_default();
        if match_labels.keys().any(String::is_empty) {
            return Err(SettingsError::new(
                "matchLabels",
                "label keys must not be empty",
            ));
        }
        let requirements = raw
            .match_expressions
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| Requirement::build(&format!("matchExpressions[{i}]"), r))
            .collect::<Result<Vec<_>, _>>()?;
        if match_labels.is_empty() && requirements.is_empty() {
            return Err(SettingsError::new(
                "",
                "an empty selector is ambiguous (it would select everything); omit the restriction instead",
            ));
        }
        if !is_reread() {
            check_label_syntax(raw)?;
        }
        Ok(LabelSelector {
            match_labels,
            requirements,
        })
    }

    /// The label keys the selector names (`matchLabels` keys, then each expression's key),
    /// possibly repeated.
    ///
    /// ```
    /// use kube_values::selector::{LabelSelector, RawLabelSelector};
    /// let raw: RawLabelSelector = serde_json::from_value(serde_json::json!({"matchLabels": {"a": "1"},
    ///     "matchExpressions": [{"key": "b", "operator": "Exists"}]})).unwrap();
    /// assert_eq!(LabelSelector::build(&raw).unwrap().keys().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.match_labels
            .keys()
            .map(String::as_str)
            .chain(self.requirements.iter().map(|r| match r {
                Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Exists(k)
                | Requirement::DoesNotExist(k) => k.as_str(),
            }))
    }

    /// Whether the labels satisfy every requirement (Kubernetes semantics: `NotIn` and
    /// `DoesNotExist` match objects lacking the key).
    pub fn matches<'a, L>(&self, labels: L) -> bool
    where
        L: Fn(&str) -> Option<&'a str>,
    {
        self.match_labels
            .iter()
            .all(|(k, v)| labels(k) == Some(v.as_str()))
            && self.requirements.iter().all(|r| match r {
                Requirement::In(k, vs) => labels(k).is_some_and(|v| vs.iter().any(|x| x == v)),
                Requirement::NotIn(k, vs) => labels(k).is_none_or(|v| !vs.iter().any(|x| x == v)),
                Requirement::Exists(k) => labels(k).is_some(),
                Requirement::DoesNotExist(k) => labels(k).is_none(),
            })
    }

    /// Whether a label map (`metadata.labels` read strictly, every value a string; `None`:
    /// no labels) satisfies the selector.
    pub fn matches_map(&self, labels: Option<&serde_json::Map<String, serde_json::Value>>) -> bool {
        self.matches(|k| {
            labels
                .and_then(|l| l.get(k))
                .and_then(serde_json::Value::as_str)
        })
    }

    /// The selector in Kubernetes' string syntax (`a=b,c in (x,y),!d`), for list lookups and
    /// messages.
    pub fn to_query(&self) -> String {
        let mut parts: Vec<String> = self
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for r in &self.requirements {
            parts.push(match r {
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
            });
        }
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn build(v: serde_json::Value) -> Result<LabelSelector, SettingsError> {
        let raw: RawLabelSelector = serde_json::from_value(v).unwrap();
        LabelSelector::build(&raw)
    }

    #[test]
    fn empty_selector_refused() {
        assert!(build(json!({})).is_err());
        assert!(build(json!({"matchLabels": {}, "matchExpressions": []})).is_err());
    }

    #[test]
    fn invalid_requirements_refused() {
        let e = build(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).unwrap_err();
        assert_eq!(e.path, "matchExpressions[0].values");
        let e = build(
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        )
        .unwrap_err();
        assert_eq!(e.path, "matchExpressions[0].values");
        let e =
            build(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}))
                .unwrap_err();
        assert_eq!(e.path, "matchExpressions[0].operator");
    }

    #[test]
    fn invalid_label_syntax_refused() {
        let e = build(json!({"matchLabels": {"bad key": "x"}})).unwrap_err();
        assert_eq!(e.to_string(), "matchLabels[\"bad key\"]: invalid label key");
        assert_eq!(
            e.under("selector").to_string(),
            "selector.matchLabels[\"bad key\"]: invalid label key"
        );
        let e = build(json!({"matchLabels": {"env": "not valid"}})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "matchLabels[\"env\"]: invalid label value \"not valid\""
        );
        let e = build(json!({"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]}))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "matchExpressions[0].key: invalid label key \"a/b/c\""
        );
        let e = build(
            json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "-b"]}]}),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "matchExpressions[0].values[1]: invalid label value \"-b\""
        );
        // an empty key keeps its own refusal
        let e = build(json!({"matchLabels": {"": "x"}})).unwrap_err();
        assert_eq!(e.to_string(), "matchLabels: label keys must not be empty");
    }

    #[test]
    fn label_syntax_is_not_checked_again_on_reread() {
        let reread =
            policy_decode::settings::reread(|| build(json!({"matchLabels": {"bad key": "x"}})));
        assert!(reread.is_ok());
    }

    #[test]
    fn kubernetes_semantics() {
        let s = build(json!({
            "matchLabels": {"tier": "gold"},
            "matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "legacy", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap();
        assert!(s.matches_map(json!({"tier": "gold"}).as_object()));
        assert!(s.matches_map(json!({"tier": "gold", "env": "prod"}).as_object()));
        assert!(!s.matches_map(json!({"tier": "gold", "env": "dev"}).as_object()));
        assert!(!s.matches_map(json!({"tier": "gold", "legacy": ""}).as_object()));
        assert!(!s.matches_map(None));
        assert_eq!(s.to_query(), "tier=gold,env notin (dev),!legacy");
    }

    proptest! {
        #[test]
        fn in_and_notin_are_complements_when_key_present(
            v in "[a-c]", vals in proptest::collection::vec("[a-c]", 1..3)
        ) {
            let mk = |op: &str| build(json!({"matchExpressions": [{"key": "k", "operator": op, "values": vals.clone()}]})).unwrap();
            let labels = json!({"k": v});
            prop_assert_ne!(mk("In").matches_map(labels.as_object()), mk("NotIn").matches_map(labels.as_object()));
        }

        #[test]
        fn exists_and_does_not_exist_are_complements(has in any::<bool>()) {
            let labels = has.then(|| json!({"k": "x"}));
            let labels = labels.as_ref().and_then(serde_json::Value::as_object);
            let e = build(json!({"matchExpressions": [{"key": "k", "operator": "Exists"}]})).unwrap();
            let d = build(json!({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]})).unwrap();
            prop_assert_ne!(e.matches_map(labels), d.matches_map(labels));
        }

        #[test]
        fn match_labels_requires_all(a in "[xy]", b in "[xy]") {
            let s = build(json!({"matchLabels": {"a": "x", "b": "y"}})).unwrap();
            let labels = json!({"a": a, "b": b});
            prop_assert_eq!(s.matches_map(labels.as_object()), a == "x" && b == "y");
        }
    }
}
