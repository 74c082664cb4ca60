//! PodSecurityContext restrictions (README "PodSecurityContext"): the host namespaces kept in
//! the pod spec itself, and `supplementalGroups`, `fsGroup` and `seccompProfile.type` of
//! `spec.securityContext`.

use policy_admission::Violation;
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde::Deserialize;
use tenancy_rules::restriction::{
    BoolRestriction, NumericRestriction, RawBool, RawNumeric, RawString, Restriction,
    StringRestriction,
};

use super::{check_field, named, opt};

/// PodSecurityContext restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPodSecurityContext {
    /// `spec.hostNetwork`.
    pub host_network: Option<RawBool>,
    /// `spec.hostPID`.
    #[serde(rename = "hostPID", alias = "hostPid")]
    pub host_pid: Option<RawBool>,
    /// `spec.hostIPC`.
    #[serde(rename = "hostIPC", alias = "hostIpc")]
    pub host_ipc: Option<RawBool>,
    /// `spec.shareProcessNamespace`.
    pub share_process_namespace: Option<RawBool>,
    /// Each element of `spec.securityContext.supplementalGroups`.
    pub supplemental_groups: Option<RawNumeric>,
    /// `spec.securityContext.fsGroup`.
    pub fs_group: Option<RawNumeric>,
    /// `spec.securityContext.seccompProfile.type`.
    pub seccomp_profile_type: Option<RawString>,
}

/// PodSecurityContext restriction (fields of the pod spec and of `spec.securityContext`).
#[derive(Debug, Clone, Default)]
pub(crate) struct PodSecurityContextRestriction {
    /// Booleans kept by Kubernetes in the pod spec itself.
    host: Vec<(&'static str, BoolRestriction)>,
    supplemental_groups: Option<NumericRestriction>,
    fs_group: Option<NumericRestriction>,
    seccomp_profile_type: Option<StringRestriction>,
}

impl TryFrom<RawPodSecurityContext> for PodSecurityContextRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawPodSecurityContext) -> Result<Self, SettingsError> {
        Ok(PodSecurityContextRestriction {
            host: named(
                vec![
                    ("hostNetwork", raw.host_network),
                    ("hostPID", raw.host_pid),
                    ("hostIPC", raw.host_ipc),
                    ("shareProcessNamespace", raw.share_process_namespace),
                ],
                BoolRestriction::build,
            )?,
            supplemental_groups: opt(
                raw.supplemental_groups,
                "supplementalGroups",
                NumericRestriction::build,
            )?,
            fs_group: opt(raw.fs_group, "fsGroup", NumericRestriction::build)?,
            seccomp_profile_type: opt(
                raw.seccomp_profile_type,
                "seccompProfileType",
                StringRestriction::build,
            )?,
        })
    }
}

impl PodSecurityContextRestriction {
    /// Judges the host namespaces and the Pod's security context of one pod spec.
    pub(crate) fn check(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        for (name, r) in &self.host {
            check_field(Some(r), Some(spec), &spec.path, name, out)?;
        }
        let ctx = spec.get_object("securityContext")?;
        let base = spec.path.field("securityContext");
        self.check_supplemental_groups(ctx.as_ref(), &base, out)?;
        check_field(self.fs_group.as_ref(), ctx.as_ref(), &base, "fsGroup", out)?;
        self.check_seccomp_profile_type(ctx.as_ref(), &base, out)
    }

    /// `supplementalGroups`: each element; an absent or empty list is judged as nil
    /// (README rule 9).
    fn check_supplemental_groups(
        &self,
        ctx: Option<&At<'_>>,
        base: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let Some(r) = &self.supplemental_groups else {
            return Ok(());
        };
        let groups = match ctx {
            Some(c) => c.get_list("supplementalGroups")?,
            None => Vec::new(),
        };
        if groups.is_empty() {
            r.check(None, &base.field("supplementalGroups"), out)?;
        }
        for g in groups {
            r.check(Some(g.value), &g.path, out)?;
        }
        Ok(())
    }

    /// `seccompProfileType`: the Pod's `seccompProfile.type`.
    fn check_seccomp_profile_type(
        &self,
        ctx: Option<&At<'_>>,
        base: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let Some(r) = &self.seccomp_profile_type else {
            return Ok(());
        };
        let profile = match ctx {
            Some(c) => c.get_object("seccompProfile")?,
            None => None,
        };
        check_field(
            Some(r),
            profile.as_ref(),
            &base.field("seccompProfile"),
            "type",
            out,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{refusal, violations};
    use serde_json::json;

    #[test]
    fn host_namespaces_groups_and_seccomp() {
        assert_eq!(
            violations(
                json!({"spec": {"securityContext": {"hostPID": {"require": false}, "supplementalGroups": {"ranges": [{"min": 1}]}, "seccompProfileType": {"forbidNil": true}}}}),
                json!({"spec": {"hostPID": true, "securityContext": {"supplementalGroups": [5, 0]}}}),
            ),
            [
                "spec.hostPID: true, required false",
                "spec.securityContext.supplementalGroups[1]: 0 is outside range [1-]",
                "spec.securityContext.seccompProfile.type: nil, a value is required"
            ]
        );
    }

    #[test]
    fn refusals_name_the_setting() {
        let err = refusal(
            json!({"spec": {"securityContext": {"hostNetwork": {"forbidNil": true, "requireNil": true}}}}),
        );
        assert!(
            err.starts_with(
                "spec.securityContext.hostNetwork.requireNil: cannot be combined with forbidNil"
            ),
            "{err}"
        );
    }
}
