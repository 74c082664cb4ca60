//! Rules on Pod-level fields: host namespaces, the Pod security context (ids, sysctls,
//! SELinux) and the runtime class. The Pod's seccomp profile is judged in `super`; its
//! AppArmor profile only in the containers that inherit it.

use policy_admission::pod::Container;
use policy_decode::PolicyError;
use policy_decode::json::At;
use tenancy_rules::security_context::container_context;

use super::{Out, check_selinux, in_ranges, list, q};
use crate::spec::{IdRule, PspSpec, SAFE_SYSCTLS, SeLinux};
use crate::strategy::{Ranges, Resolved};

/// `hostNetwork`, `hostPID`, `hostIPC`: true only where the profile allows it.
pub(super) fn check_host_namespaces(
    spec: &PspSpec,
    pod: &At<'_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    for (flag, allowed) in [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ] {
        if !allowed && pod.get_bool(flag)? == Some(true) {
            out.push(
                &pod.path.field(flag),
                format!("true is not allowed; {flag} must be false or unset"),
            );
        }
    }
    Ok(())
}

/// `forbiddenSysctls` refuse a sysctl (safe ones included); any other must be safe or in
/// `allowedUnsafeSysctls`.
pub(super) fn check_sysctls(spec: &PspSpec, sc: &At<'_>, out: &mut Out) -> Result<(), PolicyError> {
    for sysctl in sc.get_list("sysctls")? {
        let name = sysctl.get_str("name")?.unwrap_or("");
        let path = sysctl.path.field("name");
        if spec.forbidden_sysctls.matches(name) {
            out.push(
                &path,
                format!(
                    "{} is a forbidden sysctl; forbidden: {}",
                    q(name),
                    list(spec.forbidden_sysctls.written().iter())
                ),
            );
        } else if !SAFE_SYSCTLS.contains(&name) && !spec.allowed_unsafe_sysctls.matches(name) {
            out.push(
                &path,
                format!(
                    "{} is not allowed; allowed: safe sysctls and allowedUnsafeSysctls {}",
                    q(name),
                    list(spec.allowed_unsafe_sysctls.written().iter())
                ),
            );
        }
    }
    Ok(())
}

/// `fsGroup: MustRunAs`: the Pod must set `fsGroup` (its range is checked with the Pod ids).
pub(super) fn check_fs_group_set(
    r: &Resolved<'_>,
    pod: &At<'_>,
    pod_sc: Option<&At<'_>>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let missing = pod_sc
        .map(|s| s.get("fsGroup"))
        .transpose()?
        .flatten()
        .is_none();
    if r.fs_group.rule == IdRule::MustRunAs && missing && r.fs_group.ranges != Ranges::Skipped {
        out.push(
            &pod.path.field("securityContext").field("fsGroup"),
            format!(
                "nil; fsGroup must be set within {}",
                r.fs_group.ranges.describe()
            ),
        );
    }
    Ok(())
}

/// `supplementalGroups: MustRunAs`: the Pod must list at least one group.
pub(super) fn check_supplemental_groups_set(
    r: &Resolved<'_>,
    pod: &At<'_>,
    pod_sc: Option<&At<'_>>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let missing = match pod_sc {
        Some(s) => s.get_list("supplementalGroups")?.is_empty(),
        None => true,
    };
    if r.supplemental_groups.rule == IdRule::MustRunAs
        && missing
        && r.supplemental_groups.ranges != Ranges::Skipped
    {
        out.push(
            &pod.path
                .field("securityContext")
                .field("supplementalGroups"),
            format!(
                "nil; at least one supplemental group within {} is required",
                r.supplemental_groups.ranges.describe()
            ),
        );
    }
    Ok(())
}

/// `runtimeClass`: a set `runtimeClassName` must be allowed.
pub(super) fn check_runtime_class(
    spec: &PspSpec,
    pod: &At<'_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if let Some(rc) = &spec.runtime_class
        && let Some(name) = pod.get_str("runtimeClassName")?
        && !name.is_empty()
        && !rc.allowed.iter().any(|a| a == "*" || a == name)
    {
        out.push(
            &pod.path.field("runtimeClassName"),
            format!(
                "{} is not an allowed RuntimeClass; allowed: {}",
                q(name),
                list(rc.allowed.iter())
            ),
        );
    }
    Ok(())
}

/// Whether some container inherits the Pod-level field `name` (does not set its own): a
/// Pod-level `runAsUser`, `runAsGroup`, `runAsNonRoot` or `seLinuxOptions` matters only
/// through the containers it applies to (PSP validated the effective values per container).
fn inherited(containers: &[Container<'_>], name: &str) -> Result<bool, PolicyError> {
    for c in containers {
        let own = match container_context(c)? {
            Some(sc) => sc.has(name),
            None => false,
        };
        if !own {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The ids of the Pod security context: `runAsUser`, `runAsNonRoot`, `runAsGroup` and
/// `seLinuxOptions` where some container inherits them, `fsGroup` and `supplementalGroups`.
pub(super) fn pod_level_ids(
    r: &Resolved<'_>,
    sc: &At<'_>,
    containers: &[Container<'_>],
    out: &mut Out,
) -> Result<(), PolicyError> {
    check_pod_run_as_user(r, sc, containers, out)?;
    check_pod_run_as_group(r, sc, containers, out)?;
    check_pod_fs_group(r, sc, out)?;
    check_pod_supplemental_groups(r, sc, out)?;
    if let SeLinux::MustRunAs(opts) = &r.spec.se_linux
        && let Some(se) = sc.get_object("seLinuxOptions")?
        && inherited(containers, "seLinuxOptions")?
    {
        check_selinux(opts, &se, out)?;
    }
    Ok(())
}

/// `runAsUser` of the Pod, where inherited: in range (`MustRunAs`), not root and no
/// `runAsNonRoot: false` (`MustRunAsNonRoot`).
fn check_pod_run_as_user(
    r: &Resolved<'_>,
    sc: &At<'_>,
    containers: &[Container<'_>],
    out: &mut Out,
) -> Result<(), PolicyError> {
    let uid = match sc.get_i64("runAsUser")? {
        Some(uid) if inherited(containers, "runAsUser")? => Some(uid),
        _ => None,
    };
    if let Some(uid) = uid {
        let path = sc.path.field("runAsUser");
        match r.run_as_user.rule {
            IdRule::MustRunAs => in_ranges(&r.run_as_user, "runAsUser", uid, &path, out),
            IdRule::MustRunAsNonRoot if uid == 0 => out.push(
                &path,
                "0 is not allowed; containers must run as non-root".into(),
            ),
            _ => {}
        }
    }
    if r.run_as_user.rule == IdRule::MustRunAsNonRoot
        && sc.get_bool("runAsNonRoot")? == Some(false)
        && inherited(containers, "runAsNonRoot")?
    {
        out.push(
            &sc.path.field("runAsNonRoot"),
            "false is not allowed; containers must run as non-root".into(),
        );
    }
    Ok(())
}

/// `runAsGroup` of the Pod, where inherited: in range (`MustRunAs`, `MayRunAs`).
fn check_pod_run_as_group(
    r: &Resolved<'_>,
    sc: &At<'_>,
    containers: &[Container<'_>],
    out: &mut Out,
) -> Result<(), PolicyError> {
    if let Some(gid) = sc.get_i64("runAsGroup")?
        && matches!(r.run_as_group.rule, IdRule::MustRunAs | IdRule::MayRunAs)
        && inherited(containers, "runAsGroup")?
    {
        in_ranges(
            &r.run_as_group,
            "runAsGroup",
            gid,
            &sc.path.field("runAsGroup"),
            out,
        );
    }
    Ok(())
}

/// `fsGroup`: a set group in range (`MustRunAs`, `MayRunAs`).
fn check_pod_fs_group(r: &Resolved<'_>, sc: &At<'_>, out: &mut Out) -> Result<(), PolicyError> {
    if let Some(fs) = sc.get_i64("fsGroup")?
        && matches!(r.fs_group.rule, IdRule::MustRunAs | IdRule::MayRunAs)
    {
        in_ranges(&r.fs_group, "fsGroup", fs, &sc.path.field("fsGroup"), out);
    }
    Ok(())
}

/// `supplementalGroups`: every listed group in range (`MustRunAs`, `MayRunAs`).
fn check_pod_supplemental_groups(
    r: &Resolved<'_>,
    sc: &At<'_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if !matches!(
        r.supplemental_groups.rule,
        IdRule::MustRunAs | IdRule::MayRunAs
    ) {
        return Ok(());
    }
    for g in sc.get_list("supplementalGroups")? {
        let v = g
            .value
            .as_i64()
            .ok_or_else(|| PolicyError::malformed(&g.path, "expected an integer"))?;
        in_ranges(
            &r.supplemental_groups,
            "supplementalGroups",
            v,
            &g.path,
            out,
        );
    }
    Ok(())
}
