//! Settings of tenant-cordon-policy (README "Settings").

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::{Validated, is_reread};
use serde::Deserialize;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    exempt_principals: RawExemptPrincipals,
    #[serde(default)]
    exempt_platform: Option<bool>,
    #[serde(default)]
    on_lookup_error: OnLookupError,
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The cordoned tenant, named in the message (the binding's `namespaceSelector` selects
    /// its namespaces).
    pub tenant: String,
    /// Who may still write.
    pub exempt_principals: ExemptPrincipals,
    /// Whether the platform's own identities may still write (README rule 2).
    pub exempt_platform: bool,
    /// What a failed ClusterRoleBinding read does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let Some(tenant) = raw.tenant else {
            return Err(SettingsError::new(
                "tenant",
                "missing: name the cordoned tenant (the value of its tenant label)",
            ));
        };
        if !is_reread() {
            if tenant.is_empty() {
                return Err(SettingsError::new("tenant", "must not be empty"));
            }
            if !kube_values::labels::is_label_value(&tenant) {
                return Err(SettingsError::new(
                    "tenant",
                    format!(
                        "{tenant:?} is not a valid label value: the tenant label's value names the tenant"
                    ),
                ));
            }
        }
        Ok(Settings {
            tenant,
            exempt_principals: ExemptPrincipals::build(raw.exempt_principals)
                .map_err(|e| e.under("exemptPrincipals"))?,
            exempt_platform: raw.exempt_platform.unwrap_or(true),
            on_lookup_error: raw.on_lookup_error,
        })
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
    #[case(json!({}), "tenant: missing: name the cordoned tenant")]
    #[case(Value::Null, "tenant: missing: name the cordoned tenant")]
    #[case(json!({"tenant": ""}), "tenant: must not be empty")]
    #[case(json!({"tenant": null}), "tenant: invalid type: null")]
    #[case(json!({"tenant": 7}), "tenant: invalid type: integer")]
    #[case(json!({"tenant": "solar tenant"}), "tenant: \"solar tenant\" is not a valid label value")]
    #[case(json!({"tenant": "solar", "exemptPlatform": "yes"}), "exemptPlatform: invalid type: string")]
    #[case(json!({"tenant": "solar", "exemptPlatform": null}), "exemptPlatform: invalid type: null")]
    #[case(json!({"tenant": "solar", "exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"tenant": "solar", "exemptPrincipals": {"serviceAccounts": ["*:admin"]}}), "exemptPrincipals.serviceAccounts[0]: ")]
    #[case(json!({"tenant": "solar", "exemptPrincipals": {"roles": ["x"]}}), "exemptPrincipals.roles: unknown field `roles`")]
    #[case(json!({"tenant": "solar", "exemptPrincipals": null}), "exemptPrincipals: invalid type: null")]
    #[case(json!({"tenant": "solar", "onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"tenant": "solar", "cordoned": true}), "cordoned: unknown field `cordoned`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = settings(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = settings(&json!({"tenant": "solar"})).unwrap();
        assert_eq!(s.tenant, "solar");
        assert!(s.exempt_platform);
        assert!(s.exempt_principals.is_empty());
        assert_eq!(s.on_lookup_error, OnLookupError::Reject);
        let s = settings(&json!({"tenant": "solar", "exemptPlatform": false})).unwrap();
        assert!(!s.exempt_platform);
    }
}
