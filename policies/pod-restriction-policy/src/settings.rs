//! Settings of pod-restriction-policy (SPEC 3.21): `mode`, `restrictions[]`,
//! `customResources[]`, `onLookupError`.

use std::collections::HashSet;

use policy_core::cluster::OnLookupError;
use policy_core::matcher::OneOrMany;
use policy_core::pod::PodKind;
use policy_core::request::AdmissionRequest;
use policy_core::settings::{Raw, is_reread};
use policy_core::{Mode, SettingsError};
use serde::Deserialize;

use crate::binding::{Binding, RawBinding};
use crate::fields::{RawRestrictionSpec, RestrictionSpec};
use crate::jsonpath::JsonPath;

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRestriction {
    name: String,
    binding: Option<RawBinding>,
    #[serde(default)]
    spec: RawRestrictionSpec,
}

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

impl Settings {
    /// Decodes and validates raw settings; refusals name the settings path.
    pub fn parse<'a>(raw: impl Into<Raw<'a>>) -> Result<Self, SettingsError> {
        policy_core::settings::parse::<RawSettings, Self>(raw)
    }

    /// The registered custom resource a request is for, if any.
    pub fn custom_resource(&self, request: &AdmissionRequest) -> Option<&CustomResource> {
        self.custom_resources.iter().find(|cr| {
            cr.group == request.kind.group
                && cr.version == request.kind.version
                && cr.kind == request.kind.kind
        })
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let Some(raw_restrictions) = raw.restrictions else {
            return Err(SettingsError::new(
                "restrictions",
                "required: at least one restriction",
            ));
        };
        if raw_restrictions.is_empty() {
            return Err(SettingsError::new(
                "restrictions",
                "must contain at least one restriction",
            ));
        }
        let mut restrictions: Vec<NamedRestriction> = Vec::with_capacity(raw_restrictions.len());
        // Names seen so far (a duplicate cannot change a verdict: not checked on re-read).
        let mut names: HashSet<String> = HashSet::new();
        for (i, r) in raw_restrictions.into_iter().enumerate() {
            let at = format!("restrictions[{i}]");
            if r.name.is_empty() {
                return Err(SettingsError::new(
                    format!("{at}.name"),
                    "must not be empty",
                ));
            }
            if !is_reread() && !names.insert(r.name.clone()) {
                return Err(SettingsError::new(
                    format!("{at}.name"),
                    format!("duplicate restriction name {:?}", r.name),
                ));
            }
            let binding =
                Binding::build(r.binding).map_err(|e| e.under(&format!("{at}.binding")))?;
            let spec =
                RestrictionSpec::build(r.spec).map_err(|e| e.under(&format!("{at}.spec")))?;
            restrictions.push(NamedRestriction {
                name: r.name,
                binding,
                spec,
            });
        }
        let mut custom_resources: Vec<CustomResource> = Vec::new();
        for (i, cr) in raw.custom_resources.into_iter().enumerate() {
            let at = format!("customResources[{i}]");
            let (group, version) = match cr.api_version.split_once('/') {
                Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => (g, v),
                _ => {
                    return Err(SettingsError::new(
                        format!("{at}.apiVersion"),
                        format!(
                            "{:?} must be <group>/<version>: custom resources always have a group",
                            cr.api_version
                        ),
                    ));
                }
            };
            if cr.kind.is_empty() {
                return Err(SettingsError::new(
                    format!("{at}.kind"),
                    "must not be empty",
                ));
            }
            if PodKind::from_gvk(group, version, &cr.kind).is_some() {
                return Err(SettingsError::new(
                    format!("{at}.kind"),
                    format!(
                        "{} {} is a built-in pod-bearing kind, handled already",
                        cr.api_version, cr.kind
                    ),
                ));
            }
            if custom_resources
                .iter()
                .any(|o| o.group == group && o.version == version && o.kind == cr.kind)
            {
                return Err(SettingsError::new(
                    format!("{at}.kind"),
                    format!("duplicate custom resource {} {}", cr.api_version, cr.kind),
                ));
            }
            let texts = cr.pod_template_paths.into_vec();
            if texts.is_empty() {
                return Err(SettingsError::new(
                    format!("{at}.podTemplatePaths"),
                    "must contain at least one JSONPath",
                ));
            }
            let paths = texts
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    JsonPath::parse(p)
                        .map_err(|e| SettingsError::new(format!("{at}.podTemplatePaths[{j}]"), e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            custom_resources.push(CustomResource {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: cr.kind,
                paths,
            });
        }
        Ok(Settings {
            mode: raw.mode,
            restrictions,
            custom_resources,
            on_lookup_error: raw.on_lookup_error,
        })
    }
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
