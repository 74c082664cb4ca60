//! Settings of pod-restriction-policy (README "Settings"; shared conventions in
//! `docs/semantics.md#settings`): `mode`, `restrictions[]`, `customResources[]`,
//! `onLookupError`.

use std::collections::HashSet;

use policy_admission::Mode;
use policy_admission::cluster::OnLookupError;
use policy_admission::pod::PodKind;
use policy_admission::request::AdmissionRequest;
use policy_decode::SettingsError;
use policy_decode::matcher::OneOrMany;
use policy_decode::settings::is_reread;
use serde::Deserialize;

use crate::binding::{Binding, RawBinding};
use crate::fields::{RawRestrictionSpec, RestrictionSpec};
use crate::jsonpath::JsonPath;
use policy_decode::settings::Validated;

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    mode: Mode,
    restrictions: Option<Vec<RawRestriction>>,
    #[serde(default)]
    custom_resources: Vec<RawCustomResource>,
    #[serde(default)]
    on_lookup_error: OnLookupError,
}

/// `restrictions[]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRestriction {
    name: String,
    binding: Option<RawBinding>,
    #[serde(default)]
    spec: RawRestrictionSpec,
}

/// `customResources[]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCustomResource {
    api_version: String,
    kind: String,
    #[serde(alias = "podTemplatePath")]
    pod_template_paths: OneOrMany,
}

/// One named, bound restriction.
#[derive(Debug, Clone)]
pub struct NamedRestriction {
    /// Its unique name (used in messages).
    pub name: String,
    /// Where and how it applies.
    pub binding: Binding,
    /// The field restrictions.
    pub spec: RestrictionSpec,
}

/// A registered custom resource holding pod templates.
#[derive(Debug, Clone)]
pub struct CustomResource {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Where its pod templates are.
    pub paths: Vec<JsonPath>,
}

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `enforce` (violations reject) or `warn`.
    pub mode: Mode,
    /// The restrictions, in settings order.
    pub restrictions: Vec<NamedRestriction>,
    /// Registered custom resources.
    pub custom_resources: Vec<CustomResource>,
    /// What a failed Namespace lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl Settings {
    /// The registered custom resource a request is for, if any.
    pub fn custom_resource(&self, request: &AdmissionRequest) -> Option<&CustomResource> {
        let kind = &request.kind;
        self.custom_resources
            .iter()
            .find(|cr| cr.is(&kind.group, &kind.version, &kind.kind))
    }
}

impl CustomResource {
    /// Whether this is the custom resource `group`/`version` `kind`.
    pub fn is(&self, group: &str, version: &str, kind: &str) -> bool {
        self.group == group && self.version == version && self.kind == kind
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    /// Validates every restriction and custom resource; refusals name the settings path.
    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        Ok(Settings {
            mode: raw.mode,
            restrictions: restrictions(raw.restrictions)?,
            custom_resources: custom_resources(raw.custom_resources)?,
            on_lookup_error: raw.on_lookup_error,
        })
    }
}

/// `restrictions`: required, non-empty, names unique (a duplicate cannot change a verdict:
/// not checked again when policy-server re-reads validated settings).
fn restrictions(raw: Option<Vec<RawRestriction>>) -> Result<Vec<NamedRestriction>, SettingsError> {
    let Some(raw) = raw else {
        return Err(SettingsError::new(
            "restrictions",
            "required: at least one restriction",
        ));
    };
    if raw.is_empty() {
        return Err(SettingsError::new(
            "restrictions",
            "must contain at least one restriction",
        ));
    }
    let mut restrictions: Vec<NamedRestriction> = Vec::with_capacity(raw.len());
    let mut names: HashSet<String> = HashSet::new();
    for (i, r) in raw.into_iter().enumerate() {
        let at = format!("restrictions[{i}]");
        if !r.name.is_empty() && !is_reread() && !names.insert(r.name.clone()) {
            return Err(SettingsError::new(
                format!("{at}.name"),
                format!("duplicate restriction name {:?}", r.name),
            ));
        }
        restrictions.push(NamedRestriction::try_from(r).map_err(|e| e.under(&at))?);
    }
    Ok(restrictions)
}

impl TryFrom<RawRestriction> for NamedRestriction {
    type Error = SettingsError;

    /// Validates one restriction: a non-empty name, its binding (absent = Drop in every
    /// namespace) and its field restrictions.
    fn try_from(raw: RawRestriction) -> Result<Self, SettingsError> {
        if raw.name.is_empty() {
            return Err(SettingsError::new("name", "must not be empty"));
        }
        let binding = match raw.binding {
            Some(b) => Binding::try_from(b).map_err(|e| e.under("binding"))?,
            None => Binding::default(),
        };
        let spec = RestrictionSpec::try_from(raw.spec).map_err(|e| e.under("spec"))?;
        Ok(NamedRestriction {
            name: raw.name,
            binding,
            spec,
        })
    }
}

/// `customResources`: each valid, none registered twice.
fn custom_resources(raw: Vec<RawCustomResource>) -> Result<Vec<CustomResource>, SettingsError> {
    let mut custom_resources: Vec<CustomResource> = Vec::with_capacity(raw.len());
    for (i, raw) in raw.into_iter().enumerate() {
        let at = format!("customResources[{i}]");
        // Only a valid apiVersion and kind can equal a registered one: checked first.
        let registered = |o: &CustomResource| {
            raw.api_version
                .split_once('/')
                .is_some_and(|(g, v)| o.is(g, v, &raw.kind))
        };
        if custom_resources.iter().any(registered) {
            return Err(SettingsError::new(
                format!("{at}.kind"),
                format!("duplicate custom resource {} {}", raw.api_version, raw.kind),
            ));
        }
        custom_resources.push(CustomResource::try_from(raw).map_err(|e| e.under(&at))?);
    }
    Ok(custom_resources)
}

impl TryFrom<RawCustomResource> for CustomResource {
    type Error = SettingsError;

    /// Validates one custom resource: a `<group>/<version>`, a kind that is not a built-in
    /// pod-bearing kind, and at least one JSONPath of the supported subset.
    fn try_from(raw: RawCustomResource) -> Result<Self, SettingsError> {
        let (group, version) = match raw.api_version.split_once('/') {
            Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => (g, v),
            _ => {
                return Err(SettingsError::new(
                    "apiVersion",
                    format!(
                        "{:?} must be <group>/<version>: custom resources always have a group",
                        raw.api_version
                    ),
                ));
            }
        };
        if raw.kind.is_empty() {
            return Err(SettingsError::new("kind", "must not be empty"));
        }
        if PodKind::from_gvk(group, version, &raw.kind).is_some() {
            return Err(SettingsError::new(
                "kind",
                format!(
                    "{} {} is a built-in pod-bearing kind, handled already",
                    raw.api_version, raw.kind
                ),
            ));
        }
        Ok(CustomResource {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: raw.kind,
            paths: pod_template_paths(raw.pod_template_paths)?,
        })
    }
}

/// `podTemplatePaths`: at least one, each parsed (README "Custom resources").
fn pod_template_paths(raw: OneOrMany) -> Result<Vec<JsonPath>, SettingsError> {
    let texts = raw.into_vec();
    if texts.is_empty() {
        return Err(SettingsError::new(
            "podTemplatePaths",
            "must contain at least one JSONPath",
        ));
    }
    texts
        .iter()
        .enumerate()
        .map(|(j, p)| {
            JsonPath::parse(p).map_err(|e| SettingsError::new(format!("podTemplatePaths[{j}]"), e))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[test]
    fn parses_the_proposal_examples() {
        let s = Settings::parse(&json!({
            "restrictions": [
                {"name": "restricted", "spec": {"spec": {"containers": [{"securityContext": {"privileged": {"require": false}}}]}}},
                {"name": "kube-system", "binding": {"mode": "Allow", "namespaces": ["kube-system"]},
                 "spec": {"metadata": {"labels": {"requireKeys": ["k8s-app"]}}}}
            ],
            "customResources": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "podTemplatePath": "$.spec.template"}]
        }))
        .unwrap();
        assert_eq!(s.restrictions.len(), 2);
        assert_eq!(s.mode, Mode::Enforce);
        assert_eq!(s.custom_resources[0].paths.len(), 1);
    }

    #[rstest]
    #[case(json!({}), "restrictions: required")]
    #[case(json!({"restrictions": []}), "restrictions: must contain at least one")]
    #[case(json!({"restrictions": [{"name": "a"}, {"name": "a"}]}), "restrictions[1].name: duplicate restriction name \"a\"")]
    #[case(json!({"restrictions": [{"name": ""}]}), "restrictions[0].name: must not be empty")]
    #[case(json!({"restrictions": [{"name": "a", "binding": {"namespaceSelector": {}}}]}), "restrictions[0].binding.namespaceSelector: an empty selector")]
    #[case(json!({"restrictions": [{"name": "a", "spec": {"spec": {"restartPolicy": {"regex": "["}}}}]}), "restrictions[0].spec.spec.restartPolicy.regex: invalid regex")]
    #[case(json!({"restrictions": [{"name": "a", "spec": {"spec": {"activeDeadlineSeconds": {"ranges": [{"min": 10, "max": 1}]}}}}]}), "restrictions[0].spec.spec.activeDeadlineSeconds.ranges[0]: min 10 is greater than max 1")]
    #[case(json!({"restrictions": [{"name": "a", "spec": {"spec": {"restartPolcy": {}}}}]}), "restrictions[0].spec.spec.restartPolcy: unknown field `restartPolcy`")]
    #[case(json!({"restrictions": [{"name": "a"}], "customResources": [{"apiVersion": "v1", "kind": "X", "podTemplatePaths": ["$.spec"]}]}), "customResources[0].apiVersion: \"v1\" must be <group>/<version>")]
    #[case(json!({"restrictions": [{"name": "a"}], "customResources": [{"apiVersion": "a.io/v1", "kind": "X", "podTemplatePaths": ["$.spec", "$..x"]}]}), "customResources[0].podTemplatePaths[1]: \"$..x\"")]
    #[case(json!({"restrictions": [{"name": "a"}], "customResources": [{"apiVersion": "a.io/v1", "kind": "X", "podTemplatePaths": []}]}), "customResources[0].podTemplatePaths: must contain at least one")]
    #[case(json!({"restrictions": [{"name": "a"}], "customResources": [{"apiVersion": "apps/v1", "kind": "Deployment", "podTemplatePaths": "$.spec.template"}]}), "customResources[0].kind: apps/v1 Deployment is a built-in")]
    #[case(json!({"restrictions": [{"name": "a"}], "mode": "audit"}), "mode: unknown variant `audit`")]
    fn refusals(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }
}
