//! Settings of protected-objects-policy (README "Settings").

use std::collections::{HashMap, HashSet};

use kube_values::selector::{LabelSelector, RawLabelSelector, RawRequirement};
use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::names::NameList;
use policy_decode::settings::Validated;
use policy_decode::settings::{is_reread, no_duplicate_names};
use serde::Deserialize;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
use tenancy_rules::organization::check_key;

/// The default management marker label: objects carrying it are managed.
pub const DEFAULT_MARKER: &str = "tenancy-policies.io/managed";

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    resources: Option<Vec<RawResources>>,
    #[serde(default)]
    managed_selector: Option<RawLabelSelector>,
    #[serde(default)]
    managed_annotations: Option<NameList>,
    #[serde(default)]
    managed_names: Option<Vec<RawManagedNames>>,
    #[serde(default)]
    exempt_principals: RawExemptPrincipals,
    #[serde(default)]
    allow_delete_when_namespace_terminating: Option<bool>,
    #[serde(default)]
    on_lookup_error: OnLookupError,
}

/// `resources[i]`: plural resources of one API group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawResources {
    api_group: String,
    resources: Vec<String>,
}

/// `managedNames[i]`: names that make objects of one resource managed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawManagedNames {
    api_group: String,
    resource: String,
    names: NameList,
}

/// A protected resource: API group and plural resource name.
pub type Resource = (String, String);

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The protected resources; requests for any other are accepted untouched.
    pub resources: HashSet<Resource>,
    /// Objects whose labels match are managed.
    pub managed_selector: LabelSelector,
    /// Objects carrying any of these annotations are managed.
    pub managed_annotations: NameList,
    /// Managed names, per protected resource.
    pub managed_names: HashMap<Resource, NameList>,
    /// The label keys `managedSelector` names: nobody but exempt principals may add, change
    /// or remove them.
    pub marker_labels: NameList,
    /// Who is exempt.
    pub exempt_principals: ExemptPrincipals,
    /// Whether managed objects of a terminating (or deleted) namespace may be deleted.
    pub allow_delete_when_namespace_terminating: bool,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

/// The default protected resources.
fn default_resources() -> Vec<RawResources> {
    let group = |g: &str, rs: &[&str]| RawResources {
        api_group: g.to_owned(),
        resources: rs.iter().map(|r| (*r).to_owned()).collect(),
    };
    vec![
        group("networking.k8s.io", &["networkpolicies"]),
        group("", &["limitranges", "resourcequotas"]),
        group("rbac.authorization.k8s.io", &["rolebindings"]),
    ]
}

/// Whether `s` can be a plural resource name (lower-case DNS label characters).
fn is_resource_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

fn resources(raw: Vec<RawResources>) -> Result<HashSet<Resource>, SettingsError> {
    if raw.is_empty() {
        return Err(SettingsError::new(
            "resources",
            "must not be empty (omit it for the default resources)",
        ));
    }
    let mut set = HashSet::new();
    for (i, entry) in raw.into_iter().enumerate() {
        if entry.resources.is_empty() {
            return Err(SettingsError::new(
                format!("resources[{i}].resources"),
                "must not be empty",
            ));
        }
        for (j, resource) in entry.resources.into_iter().enumerate() {
            let path = format!("resources[{i}].resources[{j}]");
            if !is_reread() && !is_resource_name(&resource) {
                return Err(SettingsError::new(
                    path,
                    format!("{resource:?} is not a plural resource name (e.g. networkpolicies)"),
                ));
            }
            let key = (entry.api_group.clone(), resource);
            if !set.insert(key) && !is_reread() {
                return Err(SettingsError::new(path, "listed twice"));
            }
        }
    }
    Ok(set)
}

fn managed_names(
    raw: Vec<RawManagedNames>,
    resources: &HashSet<Resource>,
) -> Result<HashMap<Resource, NameList>, SettingsError> {
    let mut map = HashMap::new();
    for (i, entry) in raw.into_iter().enumerate() {
        let key = (entry.api_group, entry.resource);
        if !is_reread() {
            if !resources.contains(&key) {
                return Err(SettingsError::new(
                    format!("managedNames[{i}].resource"),
                    format!(
                        "{:?} of API group {:?} is not among the protected resources",
                        key.1, key.0
                    ),
                ));
            }
            no_duplicate_names(&format!("managedNames[{i}].names"), &entry.names)?;
            if entry.names.iter().any(str::is_empty) {
                return Err(SettingsError::new(
                    format!("managedNames[{i}].names"),
                    "names must not be empty",
                ));
            }
        }
        if map.insert(key, entry.names).is_some() && !is_reread() {
            return Err(SettingsError::new(
                format!("managedNames[{i}]"),
                "this resource already has a managedNames entry",
            ));
        }
    }
    Ok(map)
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let resources = resources(raw.resources.unwrap_or_else(default_resources))?;
        let selector = raw.managed_selector.unwrap_or_else(|| RawLabelSelector {
            match_labels: None,
            match_expressions: Some(vec![RawRequirement {
                key: DEFAULT_MARKER.to_owned(),
                operator: "Exists".to_owned(),
                values: None,
            }]),
        });
        let managed_selector =
            LabelSelector::build(&selector).map_err(|e| e.under("managedSelector"))?;
        let managed_annotations = raw.managed_annotations.unwrap_or_default();
        if !is_reread() {
            for (i, key) in managed_annotations.iter().enumerate() {
                check_key(&format!("managedAnnotations[{i}]"), key)?;
            }
            no_duplicate_names("managedAnnotations", &managed_annotations)?;
        }
        let marker_labels: Vec<String> = managed_selector.keys().map(str::to_owned).collect();
        Ok(Settings {
            managed_names: managed_names(raw.managed_names.unwrap_or_default(), &resources)?,
            resources,
            managed_selector,
            managed_annotations,
            marker_labels: marker_labels.into(),
            exempt_principals: ExemptPrincipals::build(raw.exempt_principals)
                .map_err(|e| e.under("exemptPrincipals"))?,
            allow_delete_when_namespace_terminating: raw
                .allow_delete_when_namespace_terminating
                .unwrap_or(true),
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
    #[case(json!({"resources": []}), "resources: must not be empty")]
    #[case(json!({"resources": [{"apiGroup": "", "resources": []}]}), "resources[0].resources: must not be empty")]
    #[case(json!({"resources": [{"apiGroup": "", "resources": ["LimitRanges"]}]}), "resources[0].resources[0]: \"LimitRanges\" is not a plural resource name")]
    #[case(json!({"resources": [{"apiGroup": "", "resources": ["limitranges", "limitranges"]}]}), "resources[0].resources[1]: listed twice")]
    #[case(json!({"resources": [{"group": "", "resources": ["x"]}]}), "resources[0].group: unknown field `group`")]
    #[case(json!({"managedSelector": {}}), "managedSelector: an empty selector is ambiguous")]
    #[case(json!({"managedSelector": {"matchLabels": {"bad key": "x"}}}), "managedSelector.matchLabels")]
    #[case(json!({"managedAnnotations": ["a", "a"]}), "managedAnnotations[1]: duplicate entry \"a\"")]
    #[case(json!({"managedAnnotations": ["bad key"]}), "managedAnnotations[0]: \"bad key\" is not a valid")]
    #[case(json!({"managedNames": [{"apiGroup": "", "resource": "configmaps", "names": ["x"]}]}), "managedNames[0].resource: \"configmaps\" of API group \"\" is not among the protected resources")]
    #[case(json!({"managedNames": [{"apiGroup": "", "resource": "limitranges", "names": [""]}]}), "managedNames[0].names: names must not be empty")]
    #[case(json!({"managedNames": [{"apiGroup": "", "resource": "limitranges", "names": ["a"]}, {"apiGroup": "", "resource": "limitranges", "names": ["b"]}]}), "managedNames[1]: this resource already has")]
    #[case(json!({"allowDeleteWhenNamespaceTerminating": "yes"}), "allowDeleteWhenNamespaceTerminating: invalid type: string")]
    #[case(json!({"exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"onLookupError": "skip"}), "onLookupError: unknown variant `skip`")]
    #[case(json!({"protected": []}), "protected: unknown field `protected`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = settings(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = settings(&json!({})).unwrap();
        assert_eq!(s.resources.len(), 4);
        assert!(s.resources.contains(&("".into(), "resourcequotas".into())));
        assert_eq!(s.marker_labels.iter().collect::<Vec<_>>(), [DEFAULT_MARKER]);
        assert!(s.allow_delete_when_namespace_terminating);
        assert!(s.managed_names.is_empty() && s.managed_annotations.is_empty());
    }
}
