//! Settings of ingress-policy: allowed hostnames, wildcard and default-backend switches,
//! the collision scope, the allowed IngressClasses and `onLookupError`.

use kube_values::hostname::{
    HostnameAllowList, HostnameDenyList, RawHostnameAllowList, RawHostnameDenyList,
};
use kube_values::labels::is_label_key;
use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::Validated;
use policy_decode::settings::{ExactName, exact_name, is_reread};
use serde::Deserialize;
use tenancy_rules::class::{ClassAllowList, RawClassAllowList};

/// The default Namespace label naming a tenant (`docs/semantics.md#tenants`).
pub const DEFAULT_TENANT_LABEL: &str = "capsule.clastix.io/tenant";

/// Where a (host, path) must be unique (README rule 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CollisionScope {
    /// Every namespace of the cluster, tenant or not.
    Cluster,
    /// The namespaces of this namespace's tenant (or this namespace, without tenant).
    Tenant,
    /// This namespace.
    Namespace,
    /// No collision check.
    #[default]
    Disabled,
}

impl ExactName for CollisionScope {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("Cluster", CollisionScope::Cluster),
        ("Tenant", CollisionScope::Tenant),
        ("Namespace", CollisionScope::Namespace),
        ("Disabled", CollisionScope::Disabled),
    ];
}

impl<'de> Deserialize<'de> for CollisionScope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        exact_name(deserializer)
    }
}

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    allowed_hostnames: Option<RawHostnameAllowList>,
    denied_hostnames: Option<RawHostnameDenyList>,
    allow_wildcard_hostnames: Option<bool>,
    allow_default_backend_only: Option<bool>,
    hostname_collision_scope: Option<CollisionScope>,
    tenant_label: Option<String>,
    allowed_classes: Option<RawClassAllowList>,
    replace_cluster_default: Option<bool>,
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Hostnames the tenant may publish (`None`: any).
    pub allowed_hostnames: Option<HostnameAllowList>,
    /// Hostnames the tenant may not publish, even when allowed (`None`: none).
    pub denied_hostnames: Option<HostnameDenyList>,
    /// Hosts starting with `*` are allowed (still judged by `allowed_hostnames`).
    pub allow_wildcard_hostnames: bool,
    /// An Ingress with only a default backend is allowed although hostnames are restricted.
    pub allow_default_backend_only: bool,
    /// Where (host, path) must be unique.
    pub hostname_collision_scope: CollisionScope,
    /// The Namespace label naming the tenant.
    pub tenant_label: String,
    /// Allowed IngressClasses and the tenant default (`None`: any class).
    pub allowed_classes: Option<ClassAllowList>,
    /// A class injected from the cluster default counts as none.
    pub replace_cluster_default: bool,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

/// The tenant label: a label key; another than the default only where a scope reads it.
fn tenant_label(raw: Option<String>, scope: CollisionScope) -> Result<String, SettingsError> {
    let Some(label) = raw else {
        return Ok(DEFAULT_TENANT_LABEL.to_owned());
    };
    if label != DEFAULT_TENANT_LABEL
        && !matches!(scope, CollisionScope::Tenant | CollisionScope::Cluster)
    {
        return Err(SettingsError::new(
            "tenantLabel",
            "has no effect unless hostnameCollisionScope is Tenant or Cluster",
        ));
    }
    if label.is_empty() {
        return Err(SettingsError::new("tenantLabel", "must not be empty"));
    }
    if !is_reread() && !is_label_key(&label) {
        return Err(SettingsError::new(
            "tenantLabel",
            format!("{label:?} is not a valid label key"),
        ));
    }
    Ok(label)
}

/// Refuses a switch turned from its default where the setting it modifies is absent: it
/// would silently do nothing. (Defaults written out, as settings forms do, are accepted.)
fn no_dangling(raw: &RawSettings) -> Result<(), SettingsError> {
    if raw.allow_default_backend_only == Some(true) && raw.allowed_hostnames.is_none() {
        return Err(SettingsError::new(
            "allowDefaultBackendOnly",
            "has no effect without allowedHostnames (any Ingress is allowed then)",
        ));
    }
    let has_default = raw
        .allowed_classes
        .as_ref()
        .is_some_and(|c| c.default.is_some());
    if raw.replace_cluster_default == Some(false) && !has_default {
        return Err(SettingsError::new(
            "replaceClusterDefault",
            "has no effect without allowedClasses.default",
        ));
    }
    Ok(())
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        no_dangling(&raw)?;
        let scope = raw.hostname_collision_scope.unwrap_or_default();
        let allowed_hostnames = match raw.allowed_hostnames {
            Some(h) => Some(HostnameAllowList::build(h).map_err(|e| e.under("allowedHostnames"))?),
            None => None,
        };
        let denied_hostnames = match raw.denied_hostnames {
            Some(h) => Some(HostnameDenyList::build(h).map_err(|e| e.under("deniedHostnames"))?),
            None => None,
        };
        let allowed_classes = match raw.allowed_classes {
            Some(c) => Some(ClassAllowList::build(c, true).map_err(|e| e.under("allowedClasses"))?),
            None => None,
        };
        Ok(Settings {
            allowed_hostnames,
            denied_hostnames,
            allow_wildcard_hostnames: raw.allow_wildcard_hostnames.unwrap_or(false),
            allow_default_backend_only: raw.allow_default_backend_only.unwrap_or(false),
            hostname_collision_scope: scope,
            tenant_label: tenant_label(raw.tenant_label, scope)?,
            allowed_classes,
            replace_cluster_default: raw.replace_cluster_default.unwrap_or(true),
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({"allowedHostnames": {}}), "allowedHostnames: the hostname allow-list needs allowed or allowedRegex")]
    #[case(json!({"allowedHostnames": {"allowed": ["Solar.acme.com"]}}), "allowedHostnames.allowed[0]: \"Solar.acme.com\" is not a valid hostname: write it in lower case")]
    #[case(json!({"allowedHostnames": {"allowed": ["a.com", "a.com"]}}), "allowedHostnames.allowed[1]: duplicate entry \"a.com\"")]
    #[case(json!({"allowedHostnames": {"allowedRegex": "("}}), "allowedHostnames.allowedRegex: invalid regex \"(\"")]
    #[case(json!({"allowedHostnames": {"allowed": ["a.com"], "x": 1}}), "allowedHostnames.x: unknown field `x`")]
    #[case(json!({"deniedHostnames": {}}), "deniedHostnames: the hostname deny-list needs denied or deniedRegex")]
    #[case(json!({"deniedHostnames": null}), "deniedHostnames: invalid type: null")]
    #[case(json!({"deniedHostnames": {"denied": ["Admin.acme.com"]}}), "deniedHostnames.denied[0]: \"Admin.acme.com\" is not a valid hostname: write it in lower case")]
    #[case(json!({"deniedHostnames": {"denied": ["a.com", "a.com"]}}), "deniedHostnames.denied[1]: duplicate entry \"a.com\"")]
    #[case(json!({"deniedHostnames": {"deniedRegex": ["x", "("]}}), "deniedHostnames.deniedRegex[1]: invalid regex \"(\"")]
    #[case(json!({"deniedHostnames": {"allowed": []}}), "deniedHostnames.allowed: unknown field `allowed`")]
    #[case(json!({"hostnameCollisionScope": "tenant"}), "hostnameCollisionScope: \"tenant\" is not one of Cluster, Tenant, Namespace, Disabled")]
    #[case(json!({"hostnameCollisionScope": "Tenant", "tenantLabel": ""}), "tenantLabel: must not be empty")]
    #[case(json!({"hostnameCollisionScope": "Tenant", "tenantLabel": "a b"}), "tenantLabel: \"a b\" is not a valid label key")]
    #[case(json!({"tenantLabel": "tenant"}), "tenantLabel: has no effect unless hostnameCollisionScope is Tenant or Cluster")]
    #[case(json!({"allowDefaultBackendOnly": true}), "allowDefaultBackendOnly: has no effect without allowedHostnames")]
    #[case(json!({"replaceClusterDefault": false, "allowedClasses": {"allowed": ["a"]}}), "replaceClusterDefault: has no effect without allowedClasses.default")]
    #[case(json!({"allowedClasses": {}}), "allowedClasses: the class allow-list needs at least one of")]
    #[case(json!({"allowedClasses": {"default": ""}}), "allowedClasses.default: must not be empty")]
    #[case(json!({"allowWildcardHostnames": "yes"}), "allowWildcardHostnames: invalid type")]
    #[case(json!({"onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"allowedHostname": {}}), "allowedHostname: unknown field `allowedHostname`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults_written_out_are_accepted() {
        let s = Settings::parse(&json!({
            "allowWildcardHostnames": false, "allowDefaultBackendOnly": false,
            "hostnameCollisionScope": "Disabled", "tenantLabel": DEFAULT_TENANT_LABEL,
            "replaceClusterDefault": true, "onLookupError": "reject"
        }))
        .unwrap();
        assert_eq!(s, Settings::parse(&json!({})).unwrap());
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({})).unwrap();
        assert_eq!(s.hostname_collision_scope, CollisionScope::Disabled);
        assert_eq!(s.tenant_label, DEFAULT_TENANT_LABEL);
        assert!(!s.allow_wildcard_hostnames && !s.allow_default_backend_only);
        assert!(s.replace_cluster_default);
        assert!(s.allowed_hostnames.is_none() && s.allowed_classes.is_none());
        assert!(s.denied_hostnames.is_none());
        assert_eq!(s.on_lookup_error, OnLookupError::Reject);
    }

    #[test]
    fn the_documented_example_is_valid() {
        let s = Settings::parse(&json!({
            "allowedHostnames": {"allowed": ["solar.acmecorp.com"], "allowedRegex": ["[a-z0-9-]+\\.solar\\.acmecorp\\.com"]},
            "hostnameCollisionScope": "Tenant",
            "allowedClasses": {"selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"}
        }))
        .unwrap();
        assert_eq!(s.hostname_collision_scope, CollisionScope::Tenant);
        assert!(
            s.allowed_hostnames
                .unwrap()
                .allows("web.solar.acmecorp.com")
        );
        let s =
            Settings::parse(&json!({"hostnameCollisionScope": "Cluster", "tenantLabel": "tenant"}))
                .unwrap();
        assert_eq!(s.tenant_label, "tenant");
    }
}
