//! Settings of namespace-metadata-policy (README "Settings").

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::matcher::{FullMatch, PatternList, regexes};
use policy_decode::names::NameList;
use policy_decode::settings::Validated;
use policy_decode::settings::no_duplicate_names;
use serde::Deserialize;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
use tenancy_rules::forbidden::{ForbiddenKeys, RawForbiddenKeys};
use tenancy_rules::organization::check_key;

/// The default `reservedNames`.
pub const DEFAULT_RESERVED: [&str; 4] = ["default", "kube-.*", "openshift", "openshift-.*"];

/// The default `allowedAnnotations`: `kubectl apply` writes it.
pub const DEFAULT_ALLOWED_ANNOTATIONS: [&str; 1] =
    ["kubectl\\.kubernetes\\.io/last-applied-configuration"];

/// The default `protectedLabels`: the Capsule tenant label.
pub const DEFAULT_PROTECTED_LABELS: [&str; 1] = ["capsule.clastix.io/tenant"];

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    reserved_names: Option<Vec<String>>,
    #[serde(default)]
    allowed_labels: Option<Vec<String>>,
    #[serde(default)]
    allowed_annotations: Option<Vec<String>>,
    #[serde(default)]
    protected_labels: Option<NameList>,
    #[serde(default)]
    protected_annotations: Option<NameList>,
    #[serde(default)]
    forbidden_labels: Option<RawForbiddenKeys>,
    #[serde(default)]
    forbidden_annotations: Option<RawForbiddenKeys>,
    #[serde(default)]
    protect_owner_references: Option<bool>,
    #[serde(default)]
    exempt_principals: RawExemptPrincipals,
    #[serde(default)]
    on_lookup_error: OnLookupError,
}

/// What may change in one metadata map (labels or annotations): keys matching an allowed
/// pattern, unless protected; forbidden keys may not be added or given a new value.
#[derive(Clone, Debug)]
pub struct KeyRules {
    /// Full-match regexes over the keys non-exempt principals may add, change or remove.
    pub allowed: PatternList,
    /// Keys nobody but exempt principals may add, change or remove.
    pub protected: NameList,
    /// Keys (exact or full-match regexes) nobody but exempt principals may add or give a new
    /// value, even when allowed (README rule 4).
    pub forbidden: ForbiddenKeys,
}

impl KeyRules {
    fn build(
        field: &str,
        allowed: Vec<String>,
        protected_field: &str,
        protected: NameList,
        forbidden: ForbiddenKeys,
    ) -> Result<Self, SettingsError> {
        let allowed = PatternList::new(regexes(field, allowed)?);
        if !policy_decode::settings::is_reread() {
            for (i, key) in protected.iter().enumerate() {
                check_key(&format!("{protected_field}[{i}]"), key)?;
            }
            no_duplicate_names(protected_field, &protected)?;
            if let Some(i) = protected
                .iter()
                .position(|k| k == crate::METADATA_NAME_LABEL)
            {
                return Err(SettingsError::new(
                    format!("{protected_field}[{i}]"),
                    "kubernetes.io/metadata.name cannot be protected: the API server sets it on every Namespace",
                ));
            }
        }
        Ok(KeyRules {
            allowed,
            protected,
            forbidden,
        })
    }

    /// The allowed patterns as written, for messages.
    pub fn patterns(&self) -> impl ExactSizeIterator<Item = &str> {
        self.allowed.patterns()
    }
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Full-match regexes over names non-exempt principals may not create, change or delete.
    pub reserved_names: Vec<FullMatch>,
    /// Label rules.
    pub labels: KeyRules,
    /// Annotation rules.
    pub annotations: KeyRules,
    /// Whether `metadata.ownerReferences` may not be set or changed.
    pub protect_owner_references: bool,
    /// Who is exempt.
    pub exempt_principals: ExemptPrincipals,
    /// What a failed ClusterRoleBinding read does.
    pub on_lookup_error: OnLookupError,
}

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let reserved = raw
            .reserved_names
            .unwrap_or_else(|| owned(&DEFAULT_RESERVED));
        let labels = KeyRules::build(
            "allowedLabels",
            raw.allowed_labels.unwrap_or_default(),
            "protectedLabels",
            raw.protected_labels
                .unwrap_or_else(|| DEFAULT_PROTECTED_LABELS.into()),
            ForbiddenKeys::build_optional(raw.forbidden_labels, "forbiddenLabels", "label")?,
        )?;
        let annotations = KeyRules::build(
            "allowedAnnotations",
            raw.allowed_annotations
                .unwrap_or_else(|| owned(&DEFAULT_ALLOWED_ANNOTATIONS)),
            "protectedAnnotations",
            raw.protected_annotations.unwrap_or_default(),
            ForbiddenKeys::build_optional(
                raw.forbidden_annotations,
                "forbiddenAnnotations",
                "annotation",
            )?,
        )?;
        Ok(Settings {
            reserved_names: regexes("reservedNames", &reserved)?,
            labels,
            annotations,
            protect_owner_references: raw.protect_owner_references.unwrap_or(true),
            exempt_principals: ExemptPrincipals::build(raw.exempt_principals)
                .map_err(|e| e.under("exemptPrincipals"))?,
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
    #[case(json!({"reservedNames": ["kube-("]}), "reservedNames[0]: invalid regex \"kube-(\"")]
    #[case(json!({"reservedNames": "kube-.*"}), "reservedNames: invalid type: string")]
    #[case(json!({"reservedNames": null}), "reservedNames: invalid type: null")]
    #[case(json!({"allowedLabels": ["a)|(b"]}), "allowedLabels[0]: invalid regex \"a)|(b\"")]
    #[case(json!({"allowedAnnotations": [1]}), "allowedAnnotations[0]: invalid type: integer")]
    #[case(json!({"protectedLabels": ["bad key"]}), "protectedLabels[0]: \"bad key\" is not a valid label or annotation key")]
    #[case(json!({"protectedAnnotations": ["a", "a"]}), "protectedAnnotations[1]: duplicate entry \"a\"")]
    #[case(json!({"protectedLabels": ["kubernetes.io/metadata.name"]}), "protectedLabels[0]: kubernetes.io/metadata.name cannot be protected")]
    #[case(json!({"protectOwnerReferences": "yes"}), "protectOwnerReferences: invalid type: string")]
    #[case(json!({"exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"exemptPrincipals": {"serviceAccounts": ["*:x"]}}), "exemptPrincipals.serviceAccounts[0]: ")]
    #[case(json!({"exemptPrincipals": {"roles": ["x"]}}), "exemptPrincipals.roles: unknown field `roles`")]
    #[case(json!({"onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"allowLabels": []}), "allowLabels: unknown field `allowLabels`")]
    #[case(json!({"forbiddenLabels": {}}), "forbiddenLabels: give denied or deniedRegex (omit forbiddenLabels to forbid no label key)")]
    #[case(json!({"forbiddenLabels": null}), "forbiddenLabels: invalid type: null")]
    #[case(json!({"forbiddenLabels": {"denied": ["bad key"]}}), "forbiddenLabels.denied[0]: \"bad key\" is not a valid label key")]
    #[case(json!({"forbiddenLabels": {"deniedRegex": ["ok", "a)|(b"]}}), "forbiddenLabels.deniedRegex[1]: invalid regex \"a)|(b\"")]
    #[case(json!({"forbiddenAnnotations": {"denied": ["a", "a"]}}), "forbiddenAnnotations.denied[1]: duplicate entry \"a\"")]
    #[case(json!({"forbiddenAnnotations": {"allowed": ["a"]}}), "forbiddenAnnotations.allowed: unknown field `allowed`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = settings(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = settings(&json!({})).unwrap();
        let reserved: Vec<_> = s.reserved_names.iter().map(FullMatch::pattern).collect();
        assert_eq!(reserved, DEFAULT_RESERVED);
        assert!(s.labels.allowed.is_empty());
        assert!(s.labels.protected.contains("capsule.clastix.io/tenant"));
        assert_eq!(s.annotations.patterns().count(), 1);
        assert!(s.protect_owner_references);
        assert!(s.exempt_principals.is_empty());
        let s = settings(&json!({"reservedNames": [], "protectOwnerReferences": false})).unwrap();
        assert!(s.reserved_names.is_empty() && !s.protect_owner_references);
        assert!(s.labels.forbidden.is_empty() && s.annotations.forbidden.is_empty());
    }

    /// A per-tenant binding carrying only the forbidden lists (README "A per-tenant binding").
    #[test]
    fn a_binding_of_forbidden_keys_only_is_accepted() {
        let s = settings(&json!({"reservedNames": [], "allowedLabels": [".*"], "allowedAnnotations": [".*"],
            "protectedLabels": [], "forbiddenLabels": {"denied": ["foo.acme.net/x"], "deniedRegex": [".*\\.acme\\.net/.*"]},
            "forbiddenAnnotations": {"deniedRegex": "x/.*"}}))
        .unwrap();
        assert!(s.reserved_names.is_empty() && s.labels.protected.is_empty());
        assert!(
            s.labels.forbidden.forbids("foo.acme.net/x")
                && s.labels.forbidden.forbids("a.acme.net/b")
        );
        assert!(!s.labels.forbidden.forbids("acme.net/b"));
        assert!(s.annotations.forbidden.forbids("x/y") && !s.labels.forbidden.forbids("x/y"));
    }
}
