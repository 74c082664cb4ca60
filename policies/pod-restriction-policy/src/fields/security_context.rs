//! Container SecurityContext restrictions (README "SecurityContext"): `capabilities`, the
//! boolean fields, `seLinuxOptions`, `runAsUser`/`runAsGroup` and `seccompProfileType`,
//! the effective ones read from the container, else from the Pod.

use policy_admission::Violation;
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde::Deserialize;
use serde_json::Value;
use tenancy_rules::restriction::{
    BoolRestriction, NumericRestriction, PointerRestriction, RawBool, RawNumeric, RawString,
    RawStringList, Restriction, StringListRestriction, StringRestriction,
};
use tenancy_rules::security_context::effective;

use super::{check_field, field, named, opt, pointer};

/// SecurityContext restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSecurityContext {
    /// `capabilities`.
    pub capabilities: Option<Box<RawCapabilities>>,
    /// `privileged`.
    pub privileged: Option<RawBool>,
    /// Effective `runAsNonRoot`.
    pub run_as_non_root: Option<RawBool>,
    /// `readOnlyRootFilesystem`.
    pub read_only_root_filesystem: Option<RawBool>,
    /// `allowPrivilegeEscalation`.
    pub allow_privilege_escalation: Option<RawBool>,
    /// Effective `seLinuxOptions`.
    #[serde(rename = "seLinuxOptions")]
    pub se_linux_options: Option<Box<RawSeLinux>>,
    /// Effective `runAsUser`.
    pub run_as_user: Option<RawNumeric>,
    /// Effective `runAsGroup`.
    pub run_as_group: Option<RawNumeric>,
    /// Effective `seccompProfile.type`.
    pub seccomp_profile_type: Option<RawString>,
}

/// `capabilities`: pointer + `add`, `drop`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawCapabilities {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// `capabilities.add`.
    pub add: Option<RawStringList>,
    /// `capabilities.drop`.
    pub drop: Option<RawStringList>,
}

/// `seLinuxOptions`: pointer + `user`, `role`, `type`, `level`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSeLinux {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// `user`.
    pub user: Option<RawString>,
    /// `role`.
    pub role: Option<RawString>,
    /// `type`.
    #[serde(rename = "type")]
    pub type_: Option<RawString>,
    /// `level`.
    pub level: Option<RawString>,
}

/// SecurityContext restriction of a container.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecurityContextRestriction {
    capabilities: Option<CapabilitiesRestriction>,
    /// Boolean fields; `runAsNonRoot` is judged by its effective value.
    bools: Vec<(&'static str, BoolRestriction)>,
    se_linux: Option<SeLinuxRestriction>,
    numbers: Vec<(&'static str, NumericRestriction)>,
    seccomp_profile_type: Option<StringRestriction>,
}

/// Fields judged by their effective value (container, else Pod).
const EFFECTIVE: [&str; 4] = ["runAsNonRoot", "runAsUser", "runAsGroup", "seLinuxOptions"];
// (`seccompProfile` is the fifth, read through its `type`: `Contexts::seccomp_profile`.)

impl TryFrom<RawSecurityContext> for SecurityContextRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawSecurityContext) -> Result<Self, SettingsError> {
        Ok(SecurityContextRestriction {
            capabilities: opt(
                raw.capabilities.map(|b| *b),
                "capabilities",
                CapabilitiesRestriction::try_from,
            )?,
            bools: named(
                vec![
                    ("privileged", raw.privileged),
                    ("runAsNonRoot", raw.run_as_non_root),
                    ("readOnlyRootFilesystem", raw.read_only_root_filesystem),
                    ("allowPrivilegeEscalation", raw.allow_privilege_escalation),
                ],
                BoolRestriction::build,
            )?,
            se_linux: opt(
                raw.se_linux_options.map(|b| *b),
                "seLinuxOptions",
                SeLinuxRestriction::try_from,
            )?,
            numbers: named(
                vec![
                    ("runAsUser", raw.run_as_user),
                    ("runAsGroup", raw.run_as_group),
                ],
                NumericRestriction::build,
            )?,
            seccomp_profile_type: opt(
                raw.seccomp_profile_type,
                "seccompProfileType",
                StringRestriction::build,
            )?,
        })
    }
}

impl SecurityContextRestriction {
    /// Judges the security settings of container `c` in a Pod whose security context is
    /// `pod_context`; effective values are reported where they are written (README
    /// "SecurityContext").
    pub(crate) fn check(
        &self,
        c: &At<'_>,
        pod_context: Option<&At<'_>>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let contexts = Contexts {
            own: c.get_object("securityContext")?,
            pod: pod_context,
            base: c.path.field("securityContext"),
        };
        if let Some(r) = &self.capabilities {
            let (value, path) = contexts.value_of("capabilities")?;
            r.check(value, &path, out)?;
        }
        for (name, r) in &self.bools {
            let (value, path) = contexts.value_of(name)?;
            r.check(value, &path, out)?;
        }
        if let Some(r) = &self.se_linux {
            let (value, path) = contexts.value_of("seLinuxOptions")?;
            r.check(value, &path, out)?;
        }
        for (name, r) in &self.numbers {
            let (value, path) = contexts.value_of(name)?;
            r.check(value, &path, out)?;
        }
        if let Some(r) = &self.seccomp_profile_type {
            let (profile, path) = contexts.seccomp_profile()?;
            check_field(Some(r), profile.as_ref(), &path, "type", out)?;
        }
        Ok(())
    }
}

/// Where a container's security settings are read: its own `securityContext`, else the
/// Pod's for the effective fields.
struct Contexts<'a, 'p> {
    /// The container's `securityContext`.
    own: Option<At<'a>>,
    /// The Pod's `securityContext`.
    pod: Option<&'p At<'a>>,
    /// The path of the container's `securityContext`.
    base: FieldPath,
}

impl<'a> Contexts<'a, '_> {
    /// The value of `name` as it applies to the container, with the path where it is
    /// written (the container's path when it is nil).
    fn value_of(&self, name: &str) -> Result<(Option<&'a Value>, FieldPath), PolicyError> {
        if !EFFECTIVE.contains(&name) {
            return Ok(field(self.own.as_ref(), &self.base, name));
        }
        Ok(match effective(self.own.as_ref(), self.pod, name)? {
            Some(e) => (Some(e.value), e.path),
            None => (None, self.base.field(name)),
        })
    }

    /// The effective `seccompProfile` (an object, else malformed) and its path.
    fn seccomp_profile(&self) -> Result<(Option<At<'a>>, FieldPath), PolicyError> {
        let (profile, path) = match effective(self.own.as_ref(), self.pod, "seccompProfile")? {
            Some(e) => (Some(At::new(e.value, e.path.clone())), e.path),
            None => (None, self.base.field("seccompProfile")),
        };
        if let Some(p) = &profile {
            p.object()?;
        }
        Ok((profile, path))
    }
}

/// `capabilities`: pointer + `add`/`drop` lists.
#[derive(Debug, Clone, Default)]
struct CapabilitiesRestriction {
    pointer: PointerRestriction,
    add: Option<StringListRestriction>,
    drop: Option<StringListRestriction>,
}

impl TryFrom<RawCapabilities> for CapabilitiesRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawCapabilities) -> Result<Self, SettingsError> {
        Ok(CapabilitiesRestriction {
            pointer: PointerRestriction::build(pointer(
                raw.forbid_nil,
                raw.require_nil,
                raw.allow_nil,
            ))?,
            add: opt(raw.add, "add", StringListRestriction::build)?,
            drop: opt(raw.drop, "drop", StringListRestriction::build)?,
        })
    }
}

impl Restriction for CapabilitiesRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.pointer.check(value, path, out)?;
        let at = value.map(|v| At::new(v, path.clone()));
        if let Some(a) = &at {
            a.object()?;
        }
        check_field(self.add.as_ref(), at.as_ref(), path, "add", out)?;
        check_field(self.drop.as_ref(), at.as_ref(), path, "drop", out)
    }
}

/// `seLinuxOptions`: pointer + four strings.
#[derive(Debug, Clone, Default)]
struct SeLinuxRestriction {
    pointer: PointerRestriction,
    parts: Vec<(&'static str, StringRestriction)>,
}

impl TryFrom<RawSeLinux> for SeLinuxRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawSeLinux) -> Result<Self, SettingsError> {
        Ok(SeLinuxRestriction {
            pointer: PointerRestriction::build(pointer(
                raw.forbid_nil,
                raw.require_nil,
                raw.allow_nil,
            ))?,
            parts: named(
                vec![
                    ("user", raw.user),
                    ("role", raw.role),
                    ("type", raw.type_),
                    ("level", raw.level),
                ],
                StringRestriction::build,
            )?,
        })
    }
}

impl Restriction for SeLinuxRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.pointer.check(value, path, out)?;
        let at = value.map(|v| At::new(v, path.clone()));
        if let Some(a) = &at {
            a.object()?;
        }
        for (name, r) in &self.parts {
            check_field(Some(r), at.as_ref(), path, name, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{refusal, violations};
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"allowPrivilegeEscalation": {"forbidNil": true, "require": false}}}}}),
        json!({"spec": {"containers": [{"image": "nginx"}, {"image": "b", "securityContext": {"allowPrivilegeEscalation": true}}]}}),
        &["spec.containers[0].securityContext.allowPrivilegeEscalation: nil, required false",
          "spec.containers[1].securityContext.allowPrivilegeEscalation: true, required false"]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"runAsUser": {"forbidNil": true, "ranges": [{"min": 1}]}}}}}),
        json!({"spec": {"securityContext": {"runAsUser": 1000}, "containers": [{"image": "a"}, {"image": "b"}]}}),
        &[]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"runAsUser": {"ranges": [{"min": 1}]}}}}}),
        json!({"spec": {"securityContext": {"runAsUser": 0}, "containers": [{"image": "a"}, {"image": "b"}]}}),
        &["spec.securityContext.runAsUser: 0 is outside range [1-]"]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"capabilities": {"add": {"requireEmpty": true}, "drop": {"requiredValues": ["ALL"]}}}}}}),
        json!({"spec": {"containers": [{"image": "a"}, {"image": "b", "securityContext": {"capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}}}]}}),
        &[r#"spec.containers[0].securityContext.capabilities.drop: value "ALL" is required"#,
          r#"spec.containers[1].securityContext.capabilities.add: ["NET_ADMIN"], an empty value is required"#]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"seccompProfileType": {"whitelist": ["RuntimeDefault"]}, "seLinuxOptions": {"type": {"blacklist": ["spc_t"]}}}}}}),
        json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}, "seLinuxOptions": {"type": "spc_t"}}, "containers": [{"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}, {}]}}),
        &[r#"spec.securityContext.seLinuxOptions.type: "spc_t" is in blacklist [spc_t]"#,
          r#"spec.securityContext.seccompProfile.type: "Unconfined" is not in whitelist [RuntimeDefault]"#]
    )]
    fn checks(#[case] settings: Value, #[case] pod: Value, #[case] expected: &[&str]) {
        assert_eq!(violations(settings, pod), expected);
    }

    #[rstest]
    #[case(json!({"spec": {"containers": [{}, {"securityContext": {"runAsUser": {"ranges": [{"min": 5, "max": 1}]}}}]}}), "spec.containers[1].securityContext.runAsUser.ranges[0]: min 5 is greater than max 1")]
    #[case(json!({"spec": {"containers": {"securityContext": {"seLinuxOptions": {"allowNil": true, "forbidNil": true}}}}}), "spec.containers.securityContext.seLinuxOptions.allowNil: allowNil: true contradicts forbidNil: true")]
    fn refusals_name_the_setting(#[case] settings: Value, #[case] message: &str) {
        let err = refusal(settings);
        assert!(err.starts_with(message), "{err}");
    }
}
