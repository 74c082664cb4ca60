//! Settings of image-pull-policy (README "Settings").

use kube_values::pull_policy::{PullPolicies, PullPolicy};
use policy_decode::SettingsError;
use policy_decode::settings::Validated;
use serde::Deserialize;

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    allowed: Option<Vec<String>>,
    #[serde(default)]
    mutate: Option<String>,
}

/// Validated settings: what is judged, and whether `Always` is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The allowed effective pull policies (README rule 3); with `mutate` and no `allowed`,
    /// `[Always]`.
    pub allowed: PullPolicies,
    /// Whether Pods get `Always` written (README rule 4).
    pub mutate: bool,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let mutate = match raw.mutate.as_deref() {
            None => false,
            Some(m) if PullPolicy::canonical(m) == Some(PullPolicy::Always) => true,
            Some(m) => {
                return Err(SettingsError::new(
                    "mutate",
                    format!("{m:?} cannot be written; the only value is Always"),
                ));
            }
        };
        let allowed = match raw.allowed {
            Some(list) => PullPolicies::parse("allowed", &list)?,
            None if mutate => PullPolicies::parse("allowed", &["Always".to_owned()])?,
            None => {
                return Err(SettingsError::new(
                    "",
                    "give allowed, mutate or both (e.g. allowed: [Always])",
                ));
            }
        };
        if mutate && !allowed.contains(PullPolicy::Always) {
            return Err(SettingsError::new(
                "allowed",
                format!(
                    "{allowed} lacks Always, which mutate: Always writes; add Always or drop mutate"
                ),
            ));
        }
        Ok(Settings { allowed, mutate })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::settings::parse;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn settings(raw: &Value) -> Result<Settings, SettingsError> {
        parse::<RawSettings, Settings>(raw)
    }

    #[rstest]
    #[case(json!({}), "give allowed, mutate or both")]
    #[case(json!(null), "give allowed, mutate or both")]
    #[case(json!({"allowed": []}), "allowed: must not be empty")]
    #[case(json!({"allowed": null}), "allowed: invalid type: null")]
    #[case(json!({"allowed": "Always"}), "allowed: invalid type: string")]
    #[case(json!({"allowed": ["Always", "Sometimes"]}), "allowed[1]: \"Sometimes\" is not a pull policy")]
    #[case(json!({"allowed": ["Always", "always"]}), "allowed[1]: Always is listed twice")]
    #[case(json!({"mutate": "IfNotPresent"}), "mutate: \"IfNotPresent\" cannot be written")]
    #[case(json!({"mutate": true}), "mutate: invalid type: boolean")]
    #[case(json!({"mutate": "Always", "allowed": ["IfNotPresent"]}), "allowed: [IfNotPresent] lacks Always")]
    #[case(json!({"allow": ["Always"]}), "allow: unknown field `allow`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = settings(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn canonicalised_once() {
        let s = settings(&json!({"allowed": ["always", "IFNOTPRESENT"]})).unwrap();
        assert_eq!(s.allowed.to_string(), "[Always, IfNotPresent]");
        assert!(!s.mutate);
        let s = settings(&json!({"mutate": "always"})).unwrap();
        assert!(s.mutate);
        assert_eq!(s.allowed.to_string(), "[Always]");
        let s = settings(&json!({"mutate": "Always", "allowed": ["Never", "Always"]})).unwrap();
        assert_eq!(s.allowed.to_string(), "[Never, Always]");
    }
}
