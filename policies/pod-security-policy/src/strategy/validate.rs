//! PSP validation of a pod spec against a resolved profile: every field of the spec, every
//! container list, all violations with their paths, in document order (Pod-level fields,
//! volumes, then containers).

use std::collections::HashSet;

use policy_core::json::At;
use policy_core::names::NameList;
use policy_core::path::FieldPath;
use policy_core::pod::{Container, LazyMounts, PodView};
use policy_core::security_context::{
    ProfileRef, container_apparmor, container_context, container_seccomp, pod_apparmor,
    pod_context, pod_seccomp, volume_sources,
};
use policy_core::{PolicyError, Violation};

use super::{Ranges, Resolved, ResolvedIds};
use crate::spec::{IdRule, SAFE_SYSCTLS, SeLinux, SeLinuxOptions, volume_type_name};

struct Out(Vec<Violation>);

impl Out {
    fn push(&mut self, path: &FieldPath, problem: String) {
        self.0.push(Violation {
            path: path.clone(),
            problem,
        });
    }
}

fn q(s: &str) -> String {
    format!("{s:?}")
}

/// A settings list for messages: `[a, b]` (long lists shortened, see
/// [`policy_core::message`]), or `none`.
fn list<T: std::fmt::Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    let total = items.len();
    counted_list(items, total)
}

/// [`list`] of `total` items from any iterator (two lists chained).
fn counted_list<T: std::fmt::Display>(items: impl Iterator<Item = T>, total: usize) -> String {
    if total == 0 {
        "none".to_owned()
    } else {
        format!("[{}]", policy_core::message::join_counted(items, total))
    }
}

/// Validates the pod spec of `view` against `r` and returns every violation.
pub fn check(r: &Resolved<'_>, view: &PodView<'_>) -> Result<Vec<Violation>, PolicyError> {
    let spec = r.spec;
    let mut out = Out(Vec::new());
    let pod = &view.spec;

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

    // Pod security context
    let containers = view.containers()?;
    let pod_sc = pod_context(pod)?;
    if let Some(sc) = &pod_sc {
        pod_level_ids(r, sc, &containers, &mut out)?;
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
    }
    let fs_missing = pod_sc
        .as_ref()
        .map(|s| s.get("fsGroup"))
        .transpose()?
        .flatten()
        .is_none();
    if r.fs_group.rule == IdRule::MustRunAs && fs_missing && r.fs_group.ranges != Ranges::Skipped {
        out.push(
            &pod.path.field("securityContext").field("fsGroup"),
            format!(
                "nil; fsGroup must be set within {}",
                r.fs_group.ranges.describe()
            ),
        );
    }
    let supp_missing = match &pod_sc {
        Some(s) => s.get_list("supplementalGroups")?.is_empty(),
        None => true,
    };
    if r.supplemental_groups.rule == IdRule::MustRunAs
        && supp_missing
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

    // seccomp (Pod)
    let pod_profile = pod_seccomp(view)?;
    check_seccomp(
        &spec.allowed_seccomp_profiles,
        pod_profile.as_ref(),
        &pod.path.field("securityContext").field("seccompProfile"),
        &mut out,
    );
    // AppArmor (Pod field)
    let pod_aa = pod_apparmor(view)?;
    if !spec.allowed_app_armor_profiles.is_empty()
        && let Some(p) = &pod_aa
        && !spec.allowed_app_armor_profiles.contains(&p.syntax)
    {
        out.push(
            &p.path,
            format!(
                "{} is not an allowed AppArmor profile; allowed: {}",
                q(&p.syntax),
                list(spec.allowed_app_armor_profiles.iter())
            ),
        );
    }
    // runtime class
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

    // volumes (the mounts of a volume are looked up by name, read once when first needed)
    let mut mounts = LazyMounts::default();
    for vol in pod.get_list("volumes")? {
        check_volume(r, &vol, &containers, &mut mounts, &mut out)?;
    }

    for c in &containers {
        check_container(r, view, c, pod_sc.as_ref(), pod_aa.is_some(), &mut out)?;
    }
    Ok(out.0)
}

fn in_ranges(ids: &ResolvedIds, field: &str, v: i64, path: &FieldPath, out: &mut Out) {
    if !ids.ranges.contains(v) {
        out.push(
            path,
            format!(
                "{v} is not in the allowed ranges {} of {field}",
                ids.ranges.describe()
            ),
        );
    }
}

/// Whether some container inherits the Pod-level field `name` (does not set its own): a
/// Pod-level `runAsUser`, `runAsGroup` or `runAsNonRoot` matters only through the containers
/// it applies to (PSP validated the effective values per container).
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

fn pod_level_ids(
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
    if let Some(fs) = sc.get_i64("fsGroup")?
        && matches!(r.fs_group.rule, IdRule::MustRunAs | IdRule::MayRunAs)
    {
        in_ranges(&r.fs_group, "fsGroup", fs, &sc.path.field("fsGroup"), out);
    }
    if matches!(
        r.supplemental_groups.rule,
        IdRule::MustRunAs | IdRule::MayRunAs
    ) {
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
    }
    if let SeLinux::MustRunAs(opts) = &r.spec.se_linux
        && let Some(se) = sc.get_object("seLinuxOptions")?
    {
        check_selinux(opts, &se, out)?;
    }
    Ok(())
}

fn check_selinux(opts: &SeLinuxOptions, se: &At<'_>, out: &mut Out) -> Result<(), PolicyError> {
    let found = SeLinuxOptions {
        user: se.get_str("user")?.unwrap_or("").to_owned(),
        role: se.get_str("role")?.unwrap_or("").to_owned(),
        type_: se.get_str("type")?.unwrap_or("").to_owned(),
        level: se.get_str("level")?.unwrap_or("").to_owned(),
    };
    if &found != opts {
        out.push(
            &se.path,
            format!(
                "{} is not allowed; seLinuxOptions must be {}",
                q(&found.describe()),
                q(&opts.describe())
            ),
        );
    }
    Ok(())
}

fn canonical(p: &str) -> &str {
    if p == "docker/default" {
        "runtime/default"
    } else {
        p
    }
}

fn check_seccomp(
    allowed: &NameList,
    profile: Option<&ProfileRef>,
    unset_path: &FieldPath,
    out: &mut Out,
) {
    if allowed.contains("*") {
        return;
    }
    match profile {
        None if allowed.is_empty() || allowed.contains("") => {}
        None => out.push(
            unset_path,
            format!(
                "nil is not an allowed seccomp profile; allowed: {}",
                list(allowed.iter())
            ),
        ),
        Some(p) if allowed.contains(canonical(&p.syntax)) => {}
        Some(p) => out.push(
            &p.path,
            format!(
                "{} is not an allowed seccomp profile; allowed: {}",
                q(&p.syntax),
                list(allowed.iter())
            ),
        ),
    }
}

/// A projected volume made only of the sources the ServiceAccount admission plugin injects
/// (token, `kube-root-ca.crt`, namespace via the downward API).
fn is_service_account_token_projection(projected: &At<'_>) -> Result<bool, PolicyError> {
    let sources = projected.get_list("sources")?;
    if sources.is_empty() {
        return Ok(false);
    }
    for s in sources {
        let ok = if s.get("serviceAccountToken")?.is_some() {
            true
        } else if let Some(cm) = s.get_object("configMap")? {
            cm.get_str("name")? == Some("kube-root-ca.crt")
        } else if let Some(d) = s.get_object("downwardAPI")? {
            let mut all = true;
            for item in d.get_list("items")? {
                let fp = match item.get_object("fieldRef")? {
                    Some(f) => f.get_str("fieldPath")?,
                    None => None,
                };
                all &= fp == Some("metadata.namespace");
            }
            all
        } else {
            false
        };
        let keys = s
            .object()?
            .keys()
            .filter(|k| !s.value[k.as_str()].is_null())
            .count();
        if !ok || keys != 1 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Judges every source of a volume (see [`volume_sources`]).
fn check_volume<'a>(
    r: &Resolved<'_>,
    vol: &At<'a>,
    containers: &[Container<'a>],
    mounts: &mut LazyMounts<'a>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    for field in volume_sources(vol)? {
        check_volume_source(r, vol, field, containers, mounts, out)?;
    }
    Ok(())
}

/// Judges one source (`field`) of a volume: its type against `volumes`, and the host path,
/// flexVolume driver or CSI driver it names.
fn check_volume_source<'a>(
    r: &Resolved<'_>,
    vol: &At<'a>,
    field: &str,
    containers: &[Container<'a>],
    mounts: &mut LazyMounts<'a>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    let ty = volume_type_name(field);
    let any = spec.volumes.iter().any(|v| v == "*");
    let listed = any || spec.volumes.iter().any(|v| v == ty);
    if !listed {
        let sa_token = ty == "projected"
            && spec.volumes.iter().any(|v| v == "secret")
            && match vol.get_object("projected")? {
                Some(p) => is_service_account_token_projection(&p)?,
                None => false,
            };
        if !sa_token {
            out.push(
                &vol.path.field(field),
                format!(
                    "{} is not an allowed volume type; allowed: {}",
                    q(ty),
                    list(spec.volumes.iter())
                ),
            );
        }
    }
    match ty {
        "hostPath" if !spec.allowed_host_paths.is_empty() => {
            let Some(hp) = vol.get_object("hostPath")? else {
                return Ok(());
            };
            let path_at = hp.path.field("path");
            let path = hp.get_str("path")?.unwrap_or("");
            let matching = spec.allowed_host_paths.matching(path);
            if matching.is_empty() {
                out.push(
                    &path_at,
                    format!(
                        "{} is not under an allowed path prefix; allowed: {}",
                        q(path),
                        list(spec.allowed_host_paths.prefixes().iter())
                    ),
                );
            } else if matching.iter().all(|read_only| *read_only) {
                let name = vol.get_str("name")?.unwrap_or("");
                for m in mounts.get(containers)?.by_name(name) {
                    if m.get_bool("readOnly")? != Some(true) {
                        out.push(
                            &path_at,
                            format!("{} must be mounted read-only by {}", q(path), m.path),
                        );
                    }
                }
            }
        }
        "flexVolume" if !spec.allowed_flex_volumes.is_empty() => {
            if let Some(fv) = vol.get_object("flexVolume")? {
                let driver = fv.get_str("driver")?.unwrap_or("");
                if !spec.allowed_flex_volumes.contains(driver) {
                    out.push(
                        &fv.path.field("driver"),
                        format!(
                            "{} is not an allowed flexVolume driver; allowed: {}",
                            q(driver),
                            list(spec.allowed_flex_volumes.iter())
                        ),
                    );
                }
            }
        }
        "csi" if !spec.allowed_csi_drivers.is_empty() => {
            if let Some(csi) = vol.get_object("csi")? {
                let driver = csi.get_str("driver")?.unwrap_or("");
                if !spec.allowed_csi_drivers.contains(driver) {
                    out.push(
                        &csi.path.field("driver"),
                        format!(
                            "{} is not an allowed CSI driver; allowed: {}",
                            q(driver),
                            list(spec.allowed_csi_drivers.iter())
                        ),
                    );
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_container(
    r: &Resolved<'_>,
    view: &PodView<'_>,
    c: &Container<'_>,
    pod_sc: Option<&At<'_>>,
    pod_has_apparmor: bool,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    let sc = container_context(c)?;
    let sc_path = c.node.path.field("securityContext");
    let own_bool = |name: &str| -> Result<Option<bool>, PolicyError> {
        match &sc {
            Some(sc) => sc.get_bool(name),
            None => Ok(None),
        }
    };
    let own_i64 = |name: &str| -> Result<Option<i64>, PolicyError> {
        match &sc {
            Some(sc) => sc.get_i64(name),
            None => Ok(None),
        }
    };
    let pod_has = |name: &str| pod_sc.is_some_and(|s| s.has(name));

    if !spec.privileged && own_bool("privileged")? == Some(true) {
        out.push(
            &sc_path.field("privileged"),
            "true is not allowed; privileged containers are not allowed".into(),
        );
    }

    // capabilities
    let caps = match &sc {
        Some(sc) => sc.get_object("capabilities")?,
        None => None,
    };
    let (adds, drops) = match &caps {
        Some(caps) => (caps.get_list("add")?, caps.get_str_list("drop")?),
        None => (Vec::new(), Vec::new()),
    };
    let any_cap = spec.allowed_capabilities.contains("*");
    for add in &adds {
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

    // host ports
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

    // runAsUser
    match r.run_as_user.rule {
        IdRule::MustRunAs => match own_i64("runAsUser")? {
            Some(uid) => in_ranges(
                &r.run_as_user,
                "runAsUser",
                uid,
                &sc_path.field("runAsUser"),
                out,
            ),
            None if pod_has("runAsUser") => {}
            None if r.run_as_user.ranges == Ranges::Skipped => {}
            None => out.push(
                &sc_path.field("runAsUser"),
                format!(
                    "nil; runAsUser must be set within {}",
                    r.run_as_user.ranges.describe()
                ),
            ),
        },
        IdRule::MustRunAsNonRoot => {
            if own_bool("runAsNonRoot")? == Some(false) {
                out.push(
                    &sc_path.field("runAsNonRoot"),
                    "false is not allowed; containers must run as non-root".into(),
                );
            }
            if own_i64("runAsUser")? == Some(0) {
                out.push(
                    &sc_path.field("runAsUser"),
                    "0 is not allowed; containers must run as non-root".into(),
                );
            }
            if own_bool("runAsNonRoot")?.is_none()
                && own_i64("runAsUser")?.is_none()
                && !pod_has("runAsNonRoot")
                && !pod_has("runAsUser")
            {
                out.push(
                    &sc_path.field("runAsNonRoot"),
                    "nil; runAsNonRoot: true or a non-zero runAsUser is required".into(),
                );
            }
        }
        IdRule::MayRunAs | IdRule::RunAsAny => {}
    }
    // runAsGroup
    match (r.run_as_group.rule, own_i64("runAsGroup")?) {
        (IdRule::MustRunAs | IdRule::MayRunAs, Some(gid)) => in_ranges(
            &r.run_as_group,
            "runAsGroup",
            gid,
            &sc_path.field("runAsGroup"),
            out,
        ),
        (IdRule::MustRunAs, None)
            if !pod_has("runAsGroup") && r.run_as_group.ranges != Ranges::Skipped =>
        {
            out.push(
                &sc_path.field("runAsGroup"),
                format!(
                    "nil; runAsGroup must be set within {}",
                    r.run_as_group.ranges.describe()
                ),
            )
        }
        _ => {}
    }
    // seLinux
    if let SeLinux::MustRunAs(opts) = &spec.se_linux {
        match &sc {
            Some(s) if s.has("seLinuxOptions") => {
                if let Some(se) = s.get_object("seLinuxOptions")? {
                    check_selinux(opts, &se, out)?;
                }
            }
            _ if pod_has("seLinuxOptions") => {}
            _ => out.push(
                &sc_path.field("seLinuxOptions"),
                format!("nil; seLinuxOptions must be {}", q(&opts.describe())),
            ),
        }
    }
    // allowPrivilegeEscalation
    if !spec.allow_privilege_escalation {
        match own_bool("allowPrivilegeEscalation")? {
            Some(false) => {}
            found => out.push(
                &sc_path.field("allowPrivilegeEscalation"),
                format!(
                    "{} is not allowed; allowPrivilegeEscalation must be false",
                    found.map_or("nil".into(), |b| b.to_string())
                ),
            ),
        }
    }
    // readOnlyRootFilesystem
    if spec.read_only_root_filesystem && own_bool("readOnlyRootFilesystem")? != Some(true) {
        let found = own_bool("readOnlyRootFilesystem")?.map_or("nil".into(), |b| b.to_string());
        out.push(
            &sc_path.field("readOnlyRootFilesystem"),
            format!("{found} is not allowed; the root filesystem must be read-only"),
        );
    }
    // procMount
    let pm = match &sc {
        Some(s) => s.get_str("procMount")?,
        None => None,
    };
    let pm_value = pm.unwrap_or("Default");
    if !spec.allowed_proc_mount_types.iter().any(|t| t == pm_value) {
        out.push(
            &sc_path.field("procMount"),
            format!(
                "{} is not an allowed procMount type; allowed: {}",
                q(pm_value),
                list(spec.allowed_proc_mount_types.iter())
            ),
        );
    }
    // seccomp (container's own profile; an inherited one was judged on the Pod)
    if let Some(p) = container_seccomp(view, c)? {
        check_seccomp(&spec.allowed_seccomp_profiles, Some(&p), &sc_path, out);
    }
    // AppArmor
    if !spec.allowed_app_armor_profiles.is_empty() {
        match container_apparmor(view, c)? {
            Some(p) if !spec.allowed_app_armor_profiles.contains(&p.syntax) => out.push(
                &p.path,
                format!(
                    "{} is not an allowed AppArmor profile; allowed: {}",
                    q(&p.syntax),
                    list(spec.allowed_app_armor_profiles.iter())
                ),
            ),
            Some(_) => {}
            None if pod_has_apparmor => {}
            None => out.push(
                &sc_path.field("appArmorProfile"),
                format!(
                    "nil is not an allowed AppArmor profile; allowed: {}",
                    list(spec.allowed_app_armor_profiles.iter())
                ),
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PspSpec;
    use crate::strategy::NamespaceIds;
    use policy_core::pod::PodKind;
    use serde_json::{Value, json};

    fn spec(extra: Value) -> PspSpec {
        let mut raw = json!({"runAsUser": {"rule": "RunAsAny"}, "seLinux": {"rule": "RunAsAny"},
            "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}});
        for (k, v) in extra.as_object().unwrap() {
            raw[k] = v.clone();
        }
        PspSpec::build(policy_core::settings::decode(&raw).unwrap()).unwrap()
    }

    fn run(s: &PspSpec, pod: Value) -> Vec<String> {
        let r = Resolved::resolve(s, &NamespaceIds::NotRead).unwrap();
        let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
        check(&r, &view)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn host_paths_prefix_and_read_only() {
        let s = spec(json!({"volumes": ["hostPath"], "allowedHostPaths": [
            {"pathPrefix": "/data/project"}, {"pathPrefix": "/public/dumps", "readOnly": true}, {"pathPrefix": "/etc/ldap.yaml", "readOnly": true}]}));
        let pod = |path: &str, ro: bool| {
            json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": path}}],
            "containers": [{"name": "a", "volumeMounts": [{"name": "x", "mountPath": "/x"}, {"name": "h", "mountPath": "/h", "readOnly": ro}]}]}})
        };
        assert!(run(&s, pod("/data/project/foo", false)).is_empty());
        assert_eq!(
            run(&s, pod("/data/projectx", false)),
            [
                "spec.volumes[0].hostPath.path: \"/data/projectx\" is not under an allowed path prefix; allowed: [/data/project, /public/dumps, /etc/ldap.yaml]"
            ]
        );
        assert_eq!(
            run(&s, pod("/public/dumps/x", false)),
            [
                "spec.volumes[0].hostPath.path: \"/public/dumps/x\" must be mounted read-only by spec.containers[0].volumeMounts[1]"
            ]
        );
        assert!(run(&s, pod("/public/dumps/x", true)).is_empty());
        assert!(run(&s, pod("/etc/ldap.yaml/", true)).is_empty());
    }

    #[test]
    fn volumes_and_service_account_projection() {
        let s = spec(json!({"volumes": ["secret", "configMap"]}));
        let sa = json!({"sources": [{"serviceAccountToken": {"path": "token"}}, {"configMap": {"name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]});
        let pod = json!({"spec": {"volumes": [{"name": "t", "projected": sa}, {"name": "e"}, {"name": "c", "cephfs": {}}], "containers": []}});
        assert_eq!(
            run(&s, pod),
            [
                "spec.volumes[1].emptyDir: \"emptyDir\" is not an allowed volume type; allowed: [secret, configMap]",
                "spec.volumes[2].cephfs: \"cephFS\" is not an allowed volume type; allowed: [secret, configMap]"
            ]
        );
        let other = json!({"spec": {"volumes": [{"name": "t", "projected": {"sources": [{"secret": {"name": "x"}}]}}], "containers": []}});
        assert_eq!(run(&s, other).len(), 1);
        let any = spec(json!({"volumes": ["*"]}));
        assert!(
            run(
                &any,
                json!({"spec": {"volumes": [{"name": "n", "nfs": {}}], "containers": []}})
            )
            .is_empty()
        );
    }

    #[test]
    fn capabilities_required_drop_even_with_star() {
        let s =
            spec(json!({"allowedCapabilities": ["*"], "requiredDropCapabilities": ["NET_RAW"]}));
        let pod = json!({"spec": {"containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"], "drop": ["CAP_NET_RAW"]}}}]}});
        assert_eq!(
            run(&s, pod),
            [
                "spec.containers[0].securityContext.capabilities.drop: [\"CAP_NET_RAW\"] does not drop \"NET_RAW\"; required drops: [NET_RAW]"
            ]
        );
        let s = spec(json!({"allowedCapabilities": ["CHOWN"], "defaultAddCapabilities": ["KILL"]}));
        let pod = json!({"spec": {"containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["KILL", "CHOWN", "NET_RAW"]}}}]}});
        assert_eq!(
            run(&s, pod),
            [
                "spec.containers[0].securityContext.capabilities.add[2]: \"NET_RAW\" is not an allowed capability; allowed: [KILL, CHOWN]"
            ]
        );
    }

    #[test]
    fn ids_ranges_and_effective_values() {
        let s = spec(
            json!({"runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 52000, "max": 52000}]},
            "fsGroup": {"rule": "MayRunAs", "ranges": [{"min": 1, "max": 10}]},
            "supplementalGroups": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]}}),
        );
        let pod = json!({"spec": {"securityContext": {"runAsUser": 52000, "fsGroup": 52001, "supplementalGroups": [0]},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {"runAsUser": 0}}]}});
        assert_eq!(
            run(&s, pod),
            [
                "spec.securityContext.fsGroup: 52001 is not in the allowed ranges [1-10] of fsGroup",
                "spec.securityContext.supplementalGroups[0]: 0 is not in the allowed ranges [1-65535] of supplementalGroups",
                "spec.containers[1].securityContext.runAsUser: 0 is not in the allowed ranges [52000-52000] of runAsUser"
            ]
        );
    }

    #[test]
    fn pod_level_ids_count_only_where_inherited() {
        let s = spec(
            json!({"runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 52000, "max": 52000}]},
            "runAsGroup": {"rule": "MustRunAs", "ranges": [{"min": 52000, "max": 52000}]}}),
        );
        // Every container overrides the Pod-level ids: the Pod values apply to nothing.
        let overridden = json!({"spec": {"securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "containers": [{"name": "a", "securityContext": {"runAsUser": 52000, "runAsGroup": 52000}}]}});
        assert!(run(&s, overridden).is_empty());
        // One container inherits them: reported once, at the Pod path.
        let inherited = json!({"spec": {"securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "containers": [{"name": "a", "securityContext": {"runAsUser": 52000, "runAsGroup": 52000}}, {"name": "b"}]}});
        assert_eq!(
            run(&s, inherited),
            [
                "spec.securityContext.runAsUser: 0 is not in the allowed ranges [52000-52000] of runAsUser",
                "spec.securityContext.runAsGroup: 0 is not in the allowed ranges [52000-52000] of runAsGroup"
            ]
        );
        let non_root = spec(json!({"runAsUser": {"rule": "MustRunAsNonRoot"}}));
        let overridden = json!({"spec": {"securityContext": {"runAsNonRoot": false, "runAsUser": 0},
            "containers": [{"name": "a", "securityContext": {"runAsNonRoot": true, "runAsUser": 1000}}]}});
        assert!(run(&non_root, overridden).is_empty());
        let inherited = json!({"spec": {"securityContext": {"runAsNonRoot": false},
            "containers": [{"name": "a", "securityContext": {"runAsUser": 1000}}]}});
        assert_eq!(
            run(&non_root, inherited),
            [
                "spec.securityContext.runAsNonRoot: false is not allowed; containers must run as non-root"
            ]
        );
    }

    #[test]
    fn seccomp_lists() {
        let s = spec(json!({"allowedSeccompProfiles": ["runtime/default"]}));
        let none = json!({"spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            run(&s, none.clone()),
            [
                "spec.securityContext.seccompProfile: nil is not an allowed seccomp profile; allowed: [runtime/default]"
            ]
        );
        let docker = json!({"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "docker/default"}}, "spec": {"containers": [{"name": "a"}]}});
        assert!(run(&s, docker).is_empty());
        let no_list = spec(json!({}));
        assert!(run(&no_list, none).is_empty());
        let set = json!({"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": [{"name": "a"}]}});
        assert_eq!(
            run(&no_list, set),
            [
                "spec.securityContext.seccompProfile.type: \"runtime/default\" is not an allowed seccomp profile; allowed: none"
            ]
        );
    }
}
