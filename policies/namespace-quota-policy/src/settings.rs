//! Settings of namespace-quota-policy: the organization label, the default quota, overrides
//! from the settings and from ConfigMaps, the tenants' owners, where a user's default
//! organization is read (opt-in), `exemptPrincipals` and `onLookupError`.

use std::collections::BTreeMap;
use std::fmt;

use kube_values::labels::{is_dns_subdomain, is_label_value};
use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::Validated;
use policy_decode::settings::{converted, is_reread};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
use tenancy_rules::organization::{DEFAULT_LABEL, DefaultOrganization, check_key};
use tenancy_rules::ownership::{Owners, PrefixField, RawOwners};

/// The default quota: 25 namespaces per organization (APPUiO production).
pub const DEFAULT_QUOTA: u64 = 25;

/// A number of namespaces: a non-negative integer (`-1`, `2.5` and `"3"` are refused with
/// the value found).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quota(pub u64);

impl Quota {
    /// Reads a JSON value as a quota; the problem otherwise.
    fn from_value(value: &Value) -> Result<Quota, SettingsError> {
        value
            .as_u64()
            .map(Quota)
            .ok_or_else(|| SettingsError::new("", format!("{value} is not a non-negative integer")))
    }
}

impl<'de> Deserialize<'de> for Quota {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        converted(Quota::from_value(&value))
    }
}

/// `overrides`: organization → quota. Keys must be label values (an organization is named
/// by a label value), non-empty; errors name the entry (`overrides["acme"]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides(pub BTreeMap<String, Quota>);

impl<'de> Deserialize<'de> for Overrides {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OverridesVisitor;
        impl<'de> Visitor<'de> for OverridesVisitor {
            type Value = Overrides;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of organization to quota")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Overrides, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(org) = map.next_key::<String>()? {
                    let value: Value = map.next_value()?;
                    let entry = || SettingsError::new(format!("[{org:?}]"), "");
                    if org.is_empty() || (!is_reread() && !is_label_value(&org)) {
                        let problem =
                            format!("{org:?} is not a valid organization (a label value)");
                        return converted(Err(SettingsError { problem, ..entry() }));
                    }
                    let quota = Quota::from_value(&value).map_err(|e| SettingsError {
                        problem: e.problem,
                        ..entry()
                    });
                    out.insert(org, converted(quota)?);
                }
                Ok(Overrides(out))
            }
        }
        deserializer.deserialize_map(OverridesVisitor)
    }
}

/// `overrideConfigMap` as written.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawOverrideConfigMap {
    namespace: String,
    name_prefix: String,
    key: String,
}

/// Where an organization's quota may be read from a ConfigMap: `data[key]` of ConfigMap
/// `<namePrefix><org>` in `namespace` (README rule 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverrideConfigMap {
    /// The ConfigMaps' namespace.
    pub namespace: String,
    /// The prefix of a ConfigMap's name, before the organization.
    pub name_prefix: String,
    /// The data key holding the quota.
    pub key: String,
}

impl OverrideConfigMap {
    /// Validates the three fields (paths relative to `overrideConfigMap`).
    fn build(raw: RawOverrideConfigMap) -> Result<Self, SettingsError> {
        let RawOverrideConfigMap {
            namespace,
            name_prefix,
            key,
        } = raw;
        if namespace.is_empty() {
            return Err(SettingsError::new("namespace", "must not be empty"));
        }
        if key.is_empty() {
            return Err(SettingsError::new("key", "must not be empty"));
        }
        if !is_reread() {
            if namespace.len() > 63 || namespace.contains('.') || !is_dns_subdomain(&namespace) {
                return Err(SettingsError::new(
                    "namespace",
                    format!("{namespace:?} is not a valid namespace name"),
                ));
            }
            // A prefix is valid when some name continues it: `<prefix>a` is a ConfigMap name.
            if !is_dns_subdomain(&format!("{name_prefix}a")) {
                return Err(SettingsError::new(
                    "namePrefix",
                    format!(
                        "{name_prefix:?} cannot start a ConfigMap name (lower-case alphanumerics, '-' and '.')"
                    ),
                ));
            }
            let key_chars = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
            if key.len() > 253 || !key.chars().all(key_chars) {
                return Err(SettingsError::new(
                    "key",
                    format!(
                        "{key:?} is not a valid ConfigMap key (alphanumerics, '-', '_' and '.')"
                    ),
                ));
            }
        }
        Ok(OverrideConfigMap {
            namespace,
            name_prefix,
            key,
        })
    }

    /// The name of `org`'s ConfigMap, or `None` when `<namePrefix><org>` cannot be a
    /// ConfigMap name (no such ConfigMap can exist).
    pub fn name_for(&self, org: &str) -> Option<String> {
        let name = format!("{}{org}", self.name_prefix);
        is_dns_subdomain(&name).then_some(name)
    }
}

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    organization_label: Option<String>,
    default_quota: Option<Quota>,
    overrides: Option<Overrides>,
    override_config_map: Option<RawOverrideConfigMap>,
    user_default_organization_annotation: Option<String>,
    owners: Option<RawOwners>,
    exempt_principals: Option<RawExemptPrincipals>,
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The Namespace label naming the organization.
    pub organization_label: String,
    /// Namespaces per organization without override.
    pub default_quota: Quota,
    /// Per-organization quotas.
    pub overrides: Overrides,
    /// Quotas read from ConfigMaps (first choice when set).
    pub override_config_map: Option<OverrideConfigMap>,
    /// Where a requester's default organization is read (the OpenShift `User`); `None`: the
    /// `User` is never read.
    pub default_organization: Option<DefaultOrganization>,
    /// Who owns which tenant: an unlabelled Namespace counts against its requester's only
    /// tenant (README rule 1).
    pub owners: Owners,
    /// Who is never refused.
    pub exempt: ExemptPrincipals,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl Settings {
    /// The quota of `org` from the settings alone (README rule 2, after the ConfigMap).
    pub fn quota_of(&self, org: &str) -> Quota {
        self.overrides
            .0
            .get(org)
            .copied()
            .unwrap_or(self.default_quota)
    }
}

/// A label or annotation key setting: non-empty and valid.
fn key_setting(path: &str, raw: Option<String>, default: &str) -> Result<String, SettingsError> {
    let Some(key) = raw else {
        return Ok(default.to_owned());
    };
    if key.is_empty() {
        return Err(SettingsError::new(path, "must not be empty"));
    }
    if !is_reread() {
        check_key(path, &key)?;
    }
    Ok(key)
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let organization_label =
            key_setting("organizationLabel", raw.organization_label, DEFAULT_LABEL)?;
        let default_organization = raw
            .user_default_organization_annotation
            .map(|a| {
                key_setting("userDefaultOrganizationAnnotation", Some(a), "")
                    .map(|a| DefaultOrganization::openshift_user(&a))
            })
            .transpose()?;
        let owners = Owners::build(raw.owners.unwrap_or_default(), PrefixField::Refused)
            .map_err(|e| e.under("owners"))?;
        let override_config_map = raw
            .override_config_map
            .map(|c| OverrideConfigMap::build(c).map_err(|e| e.under("overrideConfigMap")))
            .transpose()?;
        let exempt = ExemptPrincipals::build(raw.exempt_principals.unwrap_or_default())
            .map_err(|e| e.under("exemptPrincipals"))?;
        Ok(Settings {
            organization_label,
            default_quota: raw.default_quota.unwrap_or(Quota(DEFAULT_QUOTA)),
            overrides: raw.overrides.unwrap_or_default(),
            override_config_map,
            default_organization,
            owners,
            exempt,
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};
    use tenancy_rules::organization::DEFAULT_ANNOTATION;

    #[rstest]
    #[case(json!({"defaultQuota": -1}), "defaultQuota: -1 is not a non-negative integer")]
    #[case(json!({"defaultQuota": 2.5}), "defaultQuota: 2.5 is not a non-negative integer")]
    #[case(json!({"defaultQuota": "25"}), "defaultQuota: \"25\" is not a non-negative integer")]
    #[case(json!({"overrides": {"acme": -3}}), "overrides[\"acme\"]: -3 is not a non-negative integer")]
    #[case(json!({"overrides": {"acme": "ten"}}), "overrides[\"acme\"]: \"ten\" is not a non-negative integer")]
    #[case(json!({"overrides": {"": 3}}), "overrides[\"\"]: \"\" is not a valid organization (a label value)")]
    #[case(json!({"overrides": {"a b": 3}}), "overrides[\"a b\"]: \"a b\" is not a valid organization (a label value)")]
    #[case(json!({"overrides": [1]}), "overrides: invalid type: sequence, expected a map of organization to quota")]
    #[case(json!({"organizationLabel": ""}), "organizationLabel: must not be empty")]
    #[case(json!({"organizationLabel": "bad key"}), "organizationLabel: \"bad key\" is not a valid label or annotation key")]
    #[case(json!({"userDefaultOrganizationAnnotation": ""}), "userDefaultOrganizationAnnotation: must not be empty")]
    #[case(json!({"userDefaultOrganizationAnnotation": "a/b/c"}), "userDefaultOrganizationAnnotation: \"a/b/c\" is not a valid label or annotation key")]
    #[case(json!({"overrideConfigMap": {"namespace": "appuio-cloud", "namePrefix": "override-"}}), "overrideConfigMap: missing field `key`")]
    #[case(json!({"overrideConfigMap": {"namespace": "", "namePrefix": "o-", "key": "k"}}), "overrideConfigMap.namespace: must not be empty")]
    #[case(json!({"overrideConfigMap": {"namespace": "Appuio", "namePrefix": "o-", "key": "k"}}), "overrideConfigMap.namespace: \"Appuio\" is not a valid namespace name")]
    #[case(json!({"overrideConfigMap": {"namespace": "a.b", "namePrefix": "o-", "key": "k"}}), "overrideConfigMap.namespace: \"a.b\" is not a valid namespace name")]
    #[case(json!({"overrideConfigMap": {"namespace": "a", "namePrefix": "Override-", "key": "k"}}), "overrideConfigMap.namePrefix: \"Override-\" cannot start a ConfigMap name")]
    #[case(json!({"overrideConfigMap": {"namespace": "a", "namePrefix": "-o", "key": "k"}}), "overrideConfigMap.namePrefix: \"-o\" cannot start a ConfigMap name")]
    #[case(json!({"overrideConfigMap": {"namespace": "a", "namePrefix": "o-", "key": ""}}), "overrideConfigMap.key: must not be empty")]
    #[case(json!({"overrideConfigMap": {"namespace": "a", "namePrefix": "o-", "key": "a/b"}}), "overrideConfigMap.key: \"a/b\" is not a valid ConfigMap key")]
    #[case(json!({"overrideConfigMap": {"namespace": "a", "namePrefix": "o-", "key": "k", "name": "x"}}), "overrideConfigMap.name: unknown field `name`")]
    #[case(json!({"exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"exemptPrincipals": {"roles": ["x"]}}), "exemptPrincipals.roles: unknown field `roles`")]
    #[case(json!({"onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"quota": 3}), "quota: unknown field `quota`")]
    #[case(json!({"owners": [{"tenant": "solar", "users": ["a"]}, {"tenant": "solar", "users": ["b"]}]}), "owners[1].tenant: duplicate tenant \"solar\" (already at owners[0])")]
    #[case(json!({"owners": [{"tenant": "solar"}]}), "owners[0]: tenant \"solar\" lists no users, groups nor serviceAccounts")]
    #[case(json!({"owners": [{"tenant": "solar", "users": ["a"], "forceTenantPrefix": true}]}), "owners[0].forceTenantPrefix: unknown field `forceTenantPrefix`")]
    #[case(json!({"owners": null}), "owners: invalid type: null")]
    #[case(json!({"owners": "solar"}), "owners: invalid type: string")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({})).unwrap();
        assert_eq!(s.organization_label, DEFAULT_LABEL);
        assert_eq!(s.default_quota, Quota(25));
        assert!(s.overrides.0.is_empty() && s.override_config_map.is_none());
        assert_eq!(s.default_organization, None);
        assert!(s.owners.is_empty());
        assert!(s.exempt.is_empty());
        assert_eq!(s.on_lookup_error, OnLookupError::Reject);
        assert_eq!(s, Settings::parse(&Value::Null).unwrap());
    }

    #[test]
    fn the_documented_example_is_valid() {
        let s = Settings::parse(&json!({
            "defaultQuota": 25,
            "overrides": {"acme": 40, "beta": 0},
            "overrideConfigMap": {"namespace": "appuio-cloud", "namePrefix": "override-", "key": "namespaceQuota"},
            "exemptPrincipals": {"clusterRoles": ["cluster-admin"]}
        }))
        .unwrap();
        assert_eq!(s.quota_of("acme"), Quota(40));
        assert_eq!(s.quota_of("beta"), Quota(0));
        assert_eq!(s.quota_of("gamma"), Quota(25));
        let cm = s.override_config_map.unwrap();
        assert_eq!(cm.name_for("acme").as_deref(), Some("override-acme"));
        assert_eq!(cm.name_for("Acme"), None);
        let s = Settings::parse(&json!({
            "overrideConfigMap": {"namespace": "quotas", "namePrefix": "", "key": "namespaceQuota"}
        }))
        .unwrap();
        assert_eq!(
            s.override_config_map.unwrap().name_for("acme").as_deref(),
            Some("acme")
        );
    }

    #[test]
    fn defaults_written_out_are_accepted() {
        let s = Settings::parse(&json!({
            "organizationLabel": DEFAULT_LABEL, "defaultQuota": 25, "overrides": {},
            "exemptPrincipals": {}, "onLookupError": "reject", "owners": []
        }))
        .unwrap();
        assert_eq!(s, Settings::parse(&json!({})).unwrap());
        let s = Settings::parse(&json!({"userDefaultOrganizationAnnotation": DEFAULT_ANNOTATION}))
            .unwrap();
        assert_eq!(
            s.default_organization,
            Some(DefaultOrganization::openshift_user(DEFAULT_ANNOTATION))
        );
    }
}
