//! Rules on each container (init, regular and ephemeral): its security context, added and
//! dropped capabilities, host ports, and its seccomp and AppArmor profiles.

use std::collections::HashSet;

use policy_admission::pod::{Container, PodView};
use policy_decode::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;
use tenancy_rules::security_context::{
    ProfileRef, container_apparmor, container_context, container_seccomp,
};

use super::{Out, check_seccomp, check_selinux, counted_list, in_ranges, list, q};
use crate::spec::{IdRule, PspSpec, SeLinux};
use crate::strategy::{Ranges, Resolved};

/// A container's own security context, its path, and the Pod's (for inherited values).
struct Context<'c, 'p, 'a> {
    own: Option<At<'c>>,
    path: FieldPath,
    pod: Option<&'p At<'a>>,
}

impl Context<'_, '_, '_> {
    /// The container's own boolean `name`.
    fn own_bool(&self, name: &str) -> Result<Option<bool>, PolicyError> {
        match &self.own {
            Some(sc) => sc.get_bool(name),
            None => Ok(None),
        }
    }

    /// The container's own integer `name`.
    fn own_i64(&self, name: &str) -> Result<Option<i64>, PolicyError> {
        match &self.own {
            Some(sc) => sc.get_i64(name),
            None => Ok(None),
        }
    }

    /// Whether the Pod security context sets `name` (the container inherits it).
    fn pod_has(&self, name: &str) -> bool {
        self.pod.is_some_and(|s| s.has(name))
    }
}

/// Judges one container against every container rule, in document order of the rules.
pub(super) fn check_container(
    r: &Resolved<'_>,
    view: &PodView<'_>,
    c: &Container<'_>,
    pod_sc: Option<&At<'_>>,
    pod_apparmor: Option<&ProfileRef>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    let ctx = Context {
        own: container_context(c)?,
        path: c.node.path.field("securityContext"),
        pod: pod_sc,
    };
    check_privileged(spec, &ctx, out)?;
    check_capabilities(spec, &ctx, out)?;
    check_host_ports(spec, c, out)?;
    check_run_as_user(r, &ctx, out)?;
    check_run_as_group(r, &ctx, out)?;
    check_se_linux(spec, &ctx, out)?;
    check_privilege_escalation(spec, &ctx, out)?;
    check_read_only_root_filesystem(spec, &ctx, out)?;
    check_proc_mount(spec, &ctx, out)?;
    // The container's own seccomp profile; an inherited one was judged on the Pod.
    if let Some(p) = container_seccomp(view, c)? {
        check_seccomp(&spec.allowed_seccomp_profiles, Some(&p), &ctx.path, out);
    }
    check_container_apparmor(spec, view, c, &ctx, pod_apparmor, out)
}

/// `privileged`: a privileged container only where the profile allows it.
fn check_privileged(
    spec: &PspSpec,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if !spec.privileged && ctx.own_bool("privileged")? == Some(true) {
        out.push(
            &ctx.path.field("privileged"),
            "true is not allowed; privileged containers are not allowed".into(),
        );
    }
    Ok(())
}

/// `allowedCapabilities`, `defaultAddCapabilities` and `requiredDropCapabilities`: added
/// capabilities allowed, required drops dropped.
fn check_capabilities(
    spec: &PspSpec,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let caps = match &ctx.own {
        Some(sc) => sc.get_object("capabilities")?,
        None => None,
    };
    let (adds, drops) = match &caps {
        Some(caps) => (caps.get_list("add")?, caps.get_str_list("drop")?),
        None => (Vec::new(), Vec::new()),
    };
    check_added_capabilities(spec, &adds, out)?;
    check_required_drops(spec, &drops, &ctx.path, out);
    Ok(())
}

/// Every added capability is allowed (`*`) or listed in `allowedCapabilities` or
/// `defaultAddCapabilities`.
fn check_added_capabilities(
    spec: &PspSpec,
    adds: &[At<'_>],
    out: &mut Out,
) -> Result<(), PolicyError> {
    let any_cap = spec.allowed_capabilities.contains("*");
    for add in adds {
        let name = add
            .value
            .as_str()
            .ok_or_else(|| PolicyError::malformed(&add.path, "expected a string"))?;
        if !any_cap
            && !spec.allowed_capabilities.contains(name)
            && !spec.default_add_capabilities.contains(name)
        {
            let (defaults, allowed) = (&spec.default_add_capabilities, &spec.allowed_capabilities);
            out.push(
                &add.path,
                format!(
                    "{} is not an allowed capability; allowed: {}",
                    q(name),
                    counted_list(
                        defaults.iter().chain(allowed.iter()),
                        defaults.len() + allowed.len()
                    )
                ),
            );
        }
    }
    Ok(())
}

/// Every `requiredDropCapabilities` entry is literally in `drop` (even with
/// `allowedCapabilities: ['*']`).
fn check_required_drops(spec: &PspSpec, drops: &[&str], sc_path: &FieldPath, out: &mut Out) {
    let dropped: HashSet<&str> = drops.iter().copied().collect();
    for req in spec.required_drop_capabilities.iter() {
        if !dropped.contains(req) {
            out.push(
                &sc_path.field("capabilities").field("drop"),
                format!(
                    "{} does not drop {}; required drops: {}",
                    list(drops.iter().map(|d| q(d))),
                    q(req),
                    list(spec.required_drop_capabilities.iter())
                ),
            );
        }
    }
}

/// `hostPorts`: every `hostPort` > 0 inside an allowed range.
fn check_host_ports(spec: &PspSpec, c: &Container<'_>, out: &mut Out) -> Result<(), PolicyError> {
    for port in c.node.get_list("ports")? {
        if let Some(hp) = port.get_i64("hostPort")?
            && hp > 0
            && !spec.host_ports.contains(i128::from(hp))
        {
            let ranges = spec
                .host_ports
                .items()
                .iter()
                .map(|(a, b)| format!("{a}-{b}"));
            out.push(
                &port.path.field("hostPort"),
                format!(
                    "{hp} is not in the allowed host port ranges {}",
                    list(ranges)
                ),
            );
        }
    }
    Ok(())
}

/// `runAsUser`: `MustRunAs` needs an id in range (here or on the Pod); `MustRunAsNonRoot`
/// refuses root and needs `runAsNonRoot: true` or a non-zero id (here or on the Pod).
fn check_run_as_user(
    r: &Resolved<'_>,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    match r.run_as_user.rule {
        IdRule::MustRunAs => match ctx.own_i64("runAsUser")? {
            Some(uid) => in_ranges(
                &r.run_as_user,
                "runAsUser",
                uid,
                &ctx.path.field("runAsUser"),
                out,
            ),
            None if ctx.pod_has("runAsUser") => {}
            None if r.run_as_user.ranges == Ranges::Skipped => {}
            None => out.push(
                &ctx.path.field("runAsUser"),
                format!(
                    "nil; runAsUser must be set within {}",
                    r.run_as_user.ranges.describe()
                ),
            ),
        },
        IdRule::MustRunAsNonRoot => check_non_root(ctx, out)?,
        IdRule::MayRunAs | IdRule::RunAsAny => {}
    }
    Ok(())
}

/// `runAsUser: MustRunAsNonRoot` on the container's own values.
fn check_non_root(ctx: &Context<'_, '_, '_>, out: &mut Out) -> Result<(), PolicyError> {
    if ctx.own_bool("runAsNonRoot")? == Some(false) {
        out.push(
            &ctx.path.field("runAsNonRoot"),
            "false is not allowed; containers must run as non-root".into(),
        );
    }
    if ctx.own_i64("runAsUser")? == Some(0) {
        out.push(
            &ctx.path.field("runAsUser"),
            "0 is not allowed; containers must run as non-root".into(),
        );
    }
    if ctx.own_bool("runAsNonRoot")?.is_none()
        && ctx.own_i64("runAsUser")?.is_none()
        && !ctx.pod_has("runAsNonRoot")
        && !ctx.pod_has("runAsUser")
    {
        out.push(
            &ctx.path.field("runAsNonRoot"),
            "nil; runAsNonRoot: true or a non-zero runAsUser is required".into(),
        );
    }
    Ok(())
}

/// `runAsGroup`: a set id in range; `MustRunAs` needs one (here or on the Pod).
fn check_run_as_group(
    r: &Resolved<'_>,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    match (r.run_as_group.rule, ctx.own_i64("runAsGroup")?) {
        (IdRule::MustRunAs | IdRule::MayRunAs, Some(gid)) => in_ranges(
            &r.run_as_group,
            "runAsGroup",
            gid,
            &ctx.path.field("runAsGroup"),
            out,
        ),
        (IdRule::MustRunAs, None)
            if !ctx.pod_has("runAsGroup") && r.run_as_group.ranges != Ranges::Skipped =>
        {
            out.push(
                &ctx.path.field("runAsGroup"),
                format!(
                    "nil; runAsGroup must be set within {}",
                    r.run_as_group.ranges.describe()
                ),
            )
        }
        _ => {}
    }
    Ok(())
}

/// `seLinux: MustRunAs`: the effective `seLinuxOptions` equal the profile's.
fn check_se_linux(
    spec: &PspSpec,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if let SeLinux::MustRunAs(opts) = &spec.se_linux {
        match &ctx.own {
            Some(s) if s.has("seLinuxOptions") => {
                if let Some(se) = s.get_object("seLinuxOptions")? {
                    check_selinux(opts, &se, out)?;
                }
            }
            _ if ctx.pod_has("seLinuxOptions") => {}
            _ => out.push(
                &ctx.path.field("seLinuxOptions"),
                format!("nil; seLinuxOptions must be {}", q(&opts.describe())),
            ),
        }
    }
    Ok(())
}

/// `allowPrivilegeEscalation: false`: every container explicitly `false`.
fn check_privilege_escalation(
    spec: &PspSpec,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if !spec.allow_privilege_escalation {
        match ctx.own_bool("allowPrivilegeEscalation")? {
            Some(false) => {}
            found => out.push(
                &ctx.path.field("allowPrivilegeEscalation"),
                format!(
                    "{} is not allowed; allowPrivilegeEscalation must be false",
                    found.map_or("nil".into(), |b| b.to_string())
                ),
            ),
        }
    }
    Ok(())
}

/// `readOnlyRootFilesystem`: every container `true` when required.
fn check_read_only_root_filesystem(
    spec: &PspSpec,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if spec.read_only_root_filesystem && ctx.own_bool("readOnlyRootFilesystem")? != Some(true) {
        let found = ctx
            .own_bool("readOnlyRootFilesystem")?
            .map_or("nil".into(), |b| b.to_string());
        out.push(
            &ctx.path.field("readOnlyRootFilesystem"),
            format!("{found} is not allowed; the root filesystem must be read-only"),
        );
    }
    Ok(())
}

/// `allowedProcMountTypes`: the effective `procMount` (unset = `Default`) listed.
fn check_proc_mount(
    spec: &PspSpec,
    ctx: &Context<'_, '_, '_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let pm = match &ctx.own {
        Some(s) => s.get_str("procMount")?,
        None => None,
    };
    let pm_value = pm.unwrap_or("Default");
    if !spec.allowed_proc_mount_types.iter().any(|t| t == pm_value) {
        out.push(
            &ctx.path.field("procMount"),
            format!(
                "{} is not an allowed procMount type; allowed: {}",
                q(pm_value),
                list(spec.allowed_proc_mount_types.iter())
            ),
        );
    }
    Ok(())
}

/// `allowedAppArmorProfiles`: the container's profile — its annotation, else its own field,
/// else the Pod's field — listed; unset refused. A disallowed inherited profile is reported at
/// this container's `appArmorProfile` (where an override would go), naming the Pod field it
/// comes from: the Pod field applies only through the containers that inherit it.
fn check_container_apparmor(
    spec: &PspSpec,
    view: &PodView<'_>,
    c: &Container<'_>,
    ctx: &Context<'_, '_, '_>,
    pod_apparmor: Option<&ProfileRef>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let allowed = &spec.allowed_app_armor_profiles;
    if allowed.is_empty() {
        return Ok(());
    }
    let own = container_apparmor(view, c)?;
    let (found, path) = match (&own, pod_apparmor) {
        (Some(p), _) => (q(&p.syntax), p.path.clone()),
        (None, Some(p)) => (
            format!("{} inherited from {}", q(&p.syntax), p.path),
            ctx.path.field("appArmorProfile"),
        ),
        (None, None) => ("nil".to_owned(), ctx.path.field("appArmorProfile")),
    };
    let listed = own
        .as_ref()
        .or(pod_apparmor)
        .is_some_and(|p| allowed.contains(&p.syntax));
    if !listed {
        out.push(
            &path,
            format!(
                "{found} is not an allowed AppArmor profile; allowed: {}",
                list(allowed.iter())
            ),
        );
    }
    Ok(())
}
