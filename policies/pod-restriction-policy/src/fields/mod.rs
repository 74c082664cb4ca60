//! The field restrictions of a PodRestriction (README "Field restrictions"): settings that
//! mirror the Pod's structure, built on the core's primitives, and their evaluation against
//! one pod template. One module per part of the Pod:
//!
//! * [`metadata`]: ObjectMeta (`name`, `labels`, `annotations`);
//! * [`pod_spec`]: the PodSpec's own fields and its three container lists;
//! * [`pod_security_context`]: the host namespaces and `spec.securityContext`;
//! * [`containers`]: a container's `name`, `image` and effective `imagePullPolicy`;
//! * [`image`]: the parts of an image reference (containers and image volumes);
//! * [`security_context`]: a container's (effective) `securityContext`;
//! * [`volumes`]: `volumes[]` and the mounts of each volume.
//!
//! Every field is unrestricted when its setting is absent. Violations are collected, not
//! returned early, so one rejection lists them all.

pub mod containers;
pub mod image;
pub mod metadata;
pub mod pod_security_context;
pub mod pod_spec;
pub mod security_context;
pub mod volumes;

use policy_admission::Violation;
use policy_admission::verdict::distinct;
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde::Deserialize;
use serde_json::Value;
use tenancy_rules::restriction::{RawPointer, Restriction};

use self::metadata::{ObjectMetaRestriction, RawObjectMeta};
use self::pod_spec::{PodSpecRestriction, RawPodSpec};

// ---------------------------------------------------------------------------------------
// The judged object
// ---------------------------------------------------------------------------------------

/// One pod template (or a Pod's own metadata and spec) with its message paths.
#[derive(Clone, Debug)]
pub struct Template<'a> {
    /// The pod metadata, if present.
    pub metadata: Option<At<'a>>,
    /// Where the metadata is (or would be).
    pub metadata_path: FieldPath,
    /// The pod spec.
    pub spec: At<'a>,
    /// Whether this is a template (its `name` is nil, README rule 12).
    pub is_template: bool,
}

impl<'a> Template<'a> {
    /// Reads a `{metadata, spec}` template found at `path` (custom resources); a non-object
    /// or a template without `spec` is malformed (400).
    pub fn read(value: &'a Value, path: FieldPath) -> Result<Template<'a>, PolicyError> {
        let at = At::new(value, path);
        at.object()?;
        let metadata = at.get_object("metadata")?;
        let spec = at
            .get_object("spec")?
            .ok_or_else(|| PolicyError::malformed(&at.path.field("spec"), "missing"))?;
        Ok(Template {
            metadata,
            metadata_path: at.path.field("metadata"),
            spec,
            is_template: true,
        })
    }
}

// ---------------------------------------------------------------------------------------
// The restriction of a whole template
// ---------------------------------------------------------------------------------------

/// `restrictions[].spec`: `{metadata, spec}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawRestrictionSpec {
    /// ObjectMeta restriction.
    pub metadata: Option<Box<RawObjectMeta>>,
    /// PodSpec restriction.
    pub spec: Option<Box<RawPodSpec>>,
}

/// A validated `{metadata, spec}` restriction.
#[derive(Debug, Clone, Default)]
pub struct RestrictionSpec {
    metadata: ObjectMetaRestriction,
    spec: PodSpecRestriction,
}

impl TryFrom<RawRestrictionSpec> for RestrictionSpec {
    type Error = SettingsError;

    /// Validates the settings; errors name the settings path below `spec`.
    fn try_from(raw: RawRestrictionSpec) -> Result<RestrictionSpec, SettingsError> {
        Ok(RestrictionSpec {
            metadata: opt(
                raw.metadata.map(|b| *b),
                "metadata",
                ObjectMetaRestriction::try_from,
            )?
            .unwrap_or_default(),
            spec: opt(raw.spec.map(|b| *b), "spec", PodSpecRestriction::try_from)?
                .unwrap_or_default(),
        })
    }
}

impl RestrictionSpec {
    /// Judges one template, appending its violations, each once (one hash set: a 1 MiB
    /// object can break a rule thousands of times).
    pub fn check(&self, t: &Template<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        let mut found = Vec::new();
        self.metadata.check(t, &mut found)?;
        self.spec.check(&t.spec, &mut found)?;
        out.extend(distinct(found));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Helpers shared by the parts
// ---------------------------------------------------------------------------------------

/// The value of field `name` of `at` (absent when `at` is absent) and its path.
pub(crate) fn field<'a>(
    at: Option<&At<'a>>,
    base: &FieldPath,
    name: &str,
) -> (Option<&'a Value>, FieldPath) {
    let value = at.and_then(|a| a.value.get(name)).filter(|v| !v.is_null());
    (value, base.field(name))
}

/// Runs `r` (when set) on field `name` of `at`.
pub(crate) fn check_field(
    r: Option<&impl Restriction>,
    at: Option<&At<'_>>,
    base: &FieldPath,
    name: &str,
    out: &mut Vec<Violation>,
) -> Result<(), PolicyError> {
    if let Some(r) = r {
        let (value, path) = field(at, base, name);
        r.check(value, &path, out)?;
    }
    Ok(())
}

/// Runs a typed check into a scratch list and prefixes every problem with `label`.
pub(crate) fn labelled(
    label: &str,
    out: &mut Vec<Violation>,
    check: impl FnOnce(&mut Vec<Violation>),
) {
    let mut scratch = Vec::new();
    check(&mut scratch);
    out.extend(scratch.into_iter().map(|v| Violation {
        path: v.path,
        problem: format!("{label} {}", v.problem),
    }));
}

/// Builds an optional setting, placing errors below `name`.
pub(crate) fn opt<R, T>(
    raw: Option<R>,
    name: &str,
    build: impl FnOnce(R) -> Result<T, SettingsError>,
) -> Result<Option<T>, SettingsError> {
    raw.map(build).transpose().map_err(|e| e.under(name))
}

/// Builds a list of optional named settings, placing errors below each name.
pub(crate) fn named<R, T>(
    raw: Vec<(&'static str, Option<R>)>,
    build: impl Fn(R) -> Result<T, SettingsError>,
) -> Result<Vec<(&'static str, T)>, SettingsError> {
    raw.into_iter()
        .filter_map(|(name, r)| r.map(|r| (name, r)))
        .map(|(name, r)| build(r).map(|t| (name, t)).map_err(|e| e.under(name)))
        .collect()
}

/// The pointer settings (`forbidNil`, `requireNil`, `allowNil`) of an object restriction.
pub(crate) fn pointer(
    forbid_nil: Option<bool>,
    require_nil: Option<bool>,
    allow_nil: Option<bool>,
) -> RawPointer {
    RawPointer {
        forbid_nil,
        require_nil,
        allow_nil,
    }
}

/// What the tests of every part share: settings in, violations or refusal out.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Validates `restrictions[].spec` settings written as JSON.
    pub(crate) fn spec(settings: Value) -> RestrictionSpec {
        let raw: RawRestrictionSpec = serde_json::from_value(settings).unwrap();
        RestrictionSpec::try_from(raw).unwrap()
    }

    /// The violations of `settings` on `pod`, judged as a Pod (not a template).
    pub(crate) fn violations(settings: Value, pod: Value) -> Vec<String> {
        let r = spec(settings);
        let t = Template::read(&pod, FieldPath::empty()).unwrap();
        let t = Template {
            is_template: false,
            ..t
        };
        let mut out = Vec::new();
        r.check(&t, &mut out).unwrap();
        out.into_iter().map(|v| v.to_string()).collect()
    }

    /// Why `settings` are refused.
    pub(crate) fn refusal(settings: Value) -> String {
        let raw: RawRestrictionSpec = serde_json::from_value(settings).unwrap();
        RestrictionSpec::try_from(raw).unwrap_err().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::violations;
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_settings_restrict_nothing() {
        let pod = json!({"spec": {"containers": [{"image": "nginx", "securityContext": {"privileged": true}}]}});
        assert!(violations(json!({}), pod).is_empty());
    }

    #[test]
    fn malformed_values_are_errors() {
        let r = testing::spec(
            json!({"spec": {"containers": {"securityContext": {"privileged": {"require": false}}}}}),
        );
        let obj = json!({"spec": {"containers": [{"securityContext": {"privileged": "yes"}}]}});
        let t = Template::read(&obj, FieldPath::empty()).unwrap();
        let err = r.check(&t, &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].securityContext.privileged: expected a boolean"
        );
        assert!(Template::read(&json!({"metadata": {}}), FieldPath::root("x")).is_err());
    }
}
