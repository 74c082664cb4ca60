//! Taints and tolerations: which toleration tolerates which taint (pod-toleration-policy README rule 3).

use std::fmt;

use serde::de::{Deserialize, Deserializer};

use policy_decode::settings::{ExactName, exact_name};

use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::json::At;
use policy_decode::path::FieldPath;

/// A taint effect; settings name it exactly (`"Never" is not one of NoSchedule, ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// `NoSchedule`
    NoSchedule,
    /// `PreferNoSchedule`
    PreferNoSchedule,
    /// `NoExecute`
    NoExecute,
}

impl Effect {
    /// Parses an effect name exactly.
    pub fn parse(s: &str) -> Option<Self> {
        Self::from_name(s)
    }

    /// The effect's name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Effect::NoSchedule => "NoSchedule",
            Effect::PreferNoSchedule => "PreferNoSchedule",
            Effect::NoExecute => "NoExecute",
        }
    }
}

impl ExactName for Effect {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("NoSchedule", Effect::NoSchedule),
        ("PreferNoSchedule", Effect::PreferNoSchedule),
        ("NoExecute", Effect::NoExecute),
    ];
}

impl<'de> Deserialize<'de> for Effect {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        exact_name(deserializer)
    }
}

/// A node taint: key, value and optionally an effect (none = any effect).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    /// Non-empty key.
    pub key: String,
    /// Value (may be empty).
    pub value: String,
    /// Effect; `None` means the rule covers every effect.
    pub effect: Option<Effect>,
}

impl Taint {
    /// Validates a taint from settings (its key must not be empty).
    pub fn new(key: String, value: String, effect: Option<Effect>) -> Result<Self, SettingsError> {
        if key.is_empty() {
            return Err(SettingsError::new("key", "must not be empty"));
        }
        Ok(Taint { key, value, effect })
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)?;
        if let Some(e) = self.effect {
            write!(f, ":{}", e.as_str())?;
        }
        Ok(())
    }
}

/// A toleration's operator (omitted means `Equal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `Equal`
    Equal,
    /// `Exists`
    Exists,
}

/// A toleration read from a pod spec.
#[derive(Clone, Debug)]
pub struct Toleration<'a> {
    /// Its path (`spec.tolerations[0]`).
    pub path: FieldPath,
    /// Key (empty = none).
    pub key: &'a str,
    /// Operator.
    pub operator: Operator,
    /// Value (empty = none).
    pub value: &'a str,
    /// Effect (`None` = every effect).
    pub effect: Option<&'a str>,
}

impl<'a> Toleration<'a> {
    /// Reads `<podspec>.tolerations`; wrong types and unknown operators are malformed.
    pub fn read_all(spec: &At<'a>) -> Result<Vec<Toleration<'a>>, PolicyError> {
        spec.get_list("tolerations")?
            .into_iter()
            .map(|t| {
                let operator = match t.get_str("operator")? {
                    None | Some("") | Some("Equal") => Operator::Equal,
                    Some("Exists") => Operator::Exists,
                    Some(other) => {
                        return Err(PolicyError::malformed(
                            &t.path.field("operator"),
                            format!("{other:?} is not Equal or Exists"),
                        ));
                    }
                };
                Ok(Toleration {
                    key: t.get_str("key")?.unwrap_or(""),
                    operator,
                    value: t.get_str("value")?.unwrap_or(""),
                    effect: t.get_str("effect")?.filter(|e| !e.is_empty()),
                    path: t.path,
                })
            })
            .collect()
    }

    /// Whether this toleration covers `taint`'s key and effect: same key, or no key with
    /// `Exists` (tolerates everything); and no effect, or a taint rule without effect, or
    /// the same effect. The value is not compared.
    pub fn covers(&self, taint: &Taint) -> bool {
        let key_matches =
            self.key == taint.key || (self.key.is_empty() && self.operator == Operator::Exists);
        let effect_matches = match (self.effect, taint.effect) {
            (None, _) | (_, None) => true,
            (Some(e), Some(t)) => e == t.as_str(),
        };
        key_matches && effect_matches
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn taint(effect: Option<&str>) -> Taint {
        let effect = effect.map(|e| Effect::parse(e).unwrap());
        Taint::new("dedicated".into(), "tenantA".into(), effect).unwrap()
    }

    fn tol(v: serde_json::Value) -> bool {
        let spec = json!({"tolerations": [v]});
        let at = At::new(&spec, FieldPath::root("spec"));
        let t = Toleration::read_all(&at).unwrap();
        t[0].covers(&taint(Some("NoSchedule")))
    }

    #[rstest]
    #[case(json!({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}), true)]
    #[case(json!({"operator": "Exists"}), true)]
    #[case(json!({"key": "", "operator": "Exists"}), true)]
    #[case(json!({"key": "dedicated", "value": "tenantA"}), true)]
    #[case(json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}), false)]
    #[case(json!({"key": "other", "operator": "Exists"}), false)]
    #[case(json!({"operator": "Equal", "value": "tenantA"}), false)]
    fn coverage(#[case] t: serde_json::Value, #[case] expected: bool) {
        assert_eq!(tol(t), expected);
    }

    #[test]
    fn taint_without_effect_covers_every_effect() {
        let spec = json!({"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]});
        let at = At::new(&spec, FieldPath::root("spec"));
        let t = Toleration::read_all(&at).unwrap();
        assert!(t[0].covers(&taint(None)));
    }

    #[test]
    fn malformed_tolerations() {
        let spec = json!({"tolerations": [{"key": 1}]});
        let at = At::new(&spec, FieldPath::root("spec"));
        assert_eq!(
            Toleration::read_all(&at).unwrap_err().to_string(),
            "spec.tolerations[0].key: expected a string"
        );
        let spec = json!({"tolerations": [{"operator": "Gt"}]});
        let at = At::new(&spec, FieldPath::root("spec"));
        assert!(Toleration::read_all(&at).is_err());
    }

    #[test]
    fn taint_validation_and_display() {
        assert_eq!(
            Taint::new(String::new(), "x".into(), None)
                .unwrap_err()
                .to_string(),
            "key: must not be empty"
        );
        assert_eq!(
            serde_json::from_value::<Effect>(json!("Sometimes"))
                .unwrap_err()
                .to_string(),
            "\"Sometimes\" is not one of NoSchedule, PreferNoSchedule, NoExecute"
        );
        assert_eq!(
            serde_json::from_value::<Effect>(json!("NoExecute")).unwrap(),
            Effect::NoExecute
        );
        assert_eq!(
            taint(Some("NoSchedule")).to_string(),
            "dedicated=tenantA:NoSchedule"
        );
        assert_eq!(taint(None).to_string(), "dedicated=tenantA");
    }
}
