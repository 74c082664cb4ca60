//! The Pod Security Standards (latest version), check by check, as Pod Security Admission
//! applies them: `privileged` admits everything, `baseline` forbids known privilege
//! escalations, `restricted` adds the hardening best practices. Every violation names the
//! path, the value found, the Pod Security Admission reason and what is allowed.
//!
//! ```
//! use policy_admission::pod::{PodKind, PodView};
//! use tenancy_rules::pss::{Level, check};
//! use serde_json::json;
//! let pod = json!({"spec": {"hostNetwork": true, "containers": [{"name": "a", "image": "x"}]}});
//! let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
//! let v = check(Level::Baseline, &view).unwrap();
//! assert_eq!(v[0].to_string(), "spec.hostNetwork: true violates baseline (host namespaces); allowed: false or unset");
//! assert!(check(Level::Privileged, &view).unwrap().is_empty());
//! ```

use serde_json::Value;

use crate::security_context::{
    APPARMOR_CONTAINER_ANNOTATION_PREFIX, container_context, in_user_namespace, is_windows,
    pod_context, volume_sources,
};
use policy_admission::pod::{Container, PodView};
use policy_admission::verdict::Violation;
use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Unrestricted.
    Privileged,
    /// Minimally restrictive: prevents known privilege escalations.
    Baseline,
    /// Heavily restricted: current Pod hardening best practices.
    Restricted,
}

impl Level {
    /// The level's name (`baseline`).
    pub fn name(&self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// Parses `privileged`, `baseline` or `restricted`.
    pub fn parse(s: &str) -> Option<Level> {
        policy_decode::settings::ExactName::from_name(s)
    }
}

impl policy_decode::settings::ExactName for Level {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("privileged", Level::Privileged),
        ("baseline", Level::Baseline),
        ("restricted", Level::Restricted),
    ];
}

/// Settings name a level exactly (`"strict" is not one of privileged, baseline, restricted`).
impl<'de> serde::Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        policy_decode::settings::exact_name(deserializer)
    }
}

/// Capabilities `baseline` allows containers to add.
pub const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls `baseline` allows.
pub const BASELINE_SYSCTLS: [&str; 14] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
];

/// SELinux types `baseline` allows (`""` = unset).
pub const BASELINE_SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Volume types `restricted` allows.
pub const RESTRICTED_VOLUME_TYPES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// One run of the checks of a level on one pod spec: what every check needs, and the
/// violations found so far (in document order).
struct Checker<'a, 'v> {
    level: Level,
    pod: &'a PodView<'v>,
    /// Whether the level is `restricted`.
    restricted: bool,
    /// Whether the Pod declares `spec.os.name: windows`.
    windows: bool,
    /// Whether the Pod runs in a user namespace (`hostUsers: false`).
    userns: bool,
    /// Whether the Pod sets an allowed seccomp profile type (restricted), which its
    /// containers inherit.
    pod_seccomp_ok: bool,
    /// Whether the Pod sets `runAsNonRoot: true` (restricted), which its containers inherit.
    pod_non_root: bool,
    out: Vec<Violation>,
}

impl Checker<'_, '_> {
    /// Records that `found` at `path` violates the level for `reason`.
    fn fail(&mut self, path: &FieldPath, found: String, reason: &str, allowed: &str) {
        self.out.push(Violation {
            path: path.clone(),
            problem: format!(
                "{found} violates {} ({reason}); allowed: {allowed}",
                self.level.name()
            ),
        });
    }
}

/// A string quoted for messages.
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// A JSON value for messages (strings quoted).
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => quoted(s),
        other => other.to_string(),
    }
}

/// `nil` for an empty (or absent) value, else the value quoted.
fn quoted_or_nil(s: &str) -> String {
    if s.is_empty() {
        "nil".to_owned()
    } else {
        quoted(s)
    }
}

/// Runs every check of `level` on the pod spec, all container lists included, and returns
/// the violations in document order (Pod-level checks, then containers in walking order).
pub fn check(level: Level, pod: &PodView<'_>) -> Result<Vec<Violation>, PolicyError> {
    if level == Level::Privileged {
        return Ok(Vec::new());
    }
    let spec = &pod.spec;
    let mut c = Checker {
        level,
        pod,
        restricted: level == Level::Restricted,
        windows: is_windows(spec)?,
        userns: in_user_namespace(spec)?,
        pod_seccomp_ok: false,
        pod_non_root: false,
        out: Vec::new(),
    };
    check_host_namespaces(&mut c)?;
    check_apparmor_annotations(&mut c)?;
    check_volume_types(&mut c)?;
    if let Some(ctx) = pod_context(spec)? {
        check_pod_context(&mut c, &ctx)?;
    }
    for container in pod.containers()? {
        check_container(&mut c, &container)?;
    }
    Ok(c.out)
}

/// Host namespaces (baseline): `hostNetwork`, `hostPID`, `hostIPC` false or unset.
fn check_host_namespaces(c: &mut Checker<'_, '_>) -> Result<(), PolicyError> {
    let spec = &c.pod.spec;
    for flag in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec.get_bool(flag)? == Some(true) {
            let path = spec.path.field(flag);
            c.fail(&path, "true".into(), "host namespaces", "false or unset");
        }
    }
    Ok(())
}

/// AppArmor (baseline), annotation form: container profiles unset, `runtime/default` or
/// `localhost/<profile>`.
fn check_apparmor_annotations(c: &mut Checker<'_, '_>) -> Result<(), PolicyError> {
    let Some(meta) = &c.pod.metadata else {
        return Ok(());
    };
    for (k, v) in meta.get_string_map("annotations")? {
        if k.starts_with(APPARMOR_CONTAINER_ANNOTATION_PREFIX)
            && !(v.is_empty() || v == "runtime/default" || v.starts_with("localhost/"))
        {
            c.fail(
                &meta.path.field("annotations").key(k),
                quoted(v),
                "forbidden AppArmor profile",
                "\"\", runtime/default, localhost/<profile>",
            );
        }
    }
    Ok(())
}

/// Volumes: no `hostPath` (baseline); only the restricted volume types (restricted).
fn check_volume_types(c: &mut Checker<'_, '_>) -> Result<(), PolicyError> {
    for vol in c.pod.spec.get_list("volumes")? {
        for ty in volume_sources(&vol)? {
            if c.restricted {
                if !RESTRICTED_VOLUME_TYPES.contains(&ty) {
                    c.fail(
                        &vol.path.field(ty),
                        quoted(ty),
                        "restricted volume types",
                        &RESTRICTED_VOLUME_TYPES.join(", "),
                    );
                }
            } else if ty == "hostPath" {
                c.fail(
                    &vol.path.field(ty),
                    quoted(ty),
                    "hostPath volumes",
                    "no hostPath volumes",
                );
            }
        }
    }
    Ok(())
}

/// The Pod security context: the common checks, `runAsNonRoot` (restricted), sysctls; and
/// what its containers inherit (seccomp profile, `runAsNonRoot: true`).
fn check_pod_context(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    check_context_common(c, ctx)?;
    if c.restricted && !c.userns {
        match ctx.get_bool("runAsNonRoot")? {
            Some(false) => c.fail(
                &ctx.path.field("runAsNonRoot"),
                "false".into(),
                "runAsNonRoot != true",
                "true",
            ),
            Some(true) => c.pod_non_root = true,
            None => {}
        }
    }
    if c.restricted
        && let Some(p) = ctx.get_object("seccompProfile")?
    {
        c.pod_seccomp_ok = matches!(p.get_str("type")?, Some("RuntimeDefault" | "Localhost"));
    }
    check_sysctls(c, ctx)
}

/// Sysctls (baseline): only the safe set.
fn check_sysctls(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    for sysctl in ctx.get_list("sysctls")? {
        let name = sysctl.get_str("name")?.unwrap_or("");
        if !BASELINE_SYSCTLS.contains(&name) {
            c.fail(
                &sysctl.path.field("name"),
                quoted(name),
                "forbidden sysctls",
                &BASELINE_SYSCTLS.join(", "),
            );
        }
    }
    Ok(())
}

/// Checks shared by the Pod's and the containers' security contexts: SELinux, seccomp
/// (baseline form), AppArmor field, Windows host process and runAsUser (restricted).
fn check_context_common(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    check_se_linux_options(c, ctx)?;
    check_seccomp_type(c, ctx)?;
    check_apparmor_type(c, ctx)?;
    check_host_process(c, ctx)?;
    check_run_as_root(c, ctx)
}

/// SELinux (baseline): an allowed type, no user or role.
fn check_se_linux_options(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    let Some(se) = ctx.get_object("seLinuxOptions")? else {
        return Ok(());
    };
    let ty = se.get_str("type")?.unwrap_or("");
    if !BASELINE_SELINUX_TYPES.contains(&ty) {
        c.fail(
            &se.path.field("type"),
            quoted(ty),
            "seLinuxOptions",
            "container_t, container_init_t, container_kvm_t, container_engine_t or unset",
        );
    }
    for field in ["user", "role"] {
        if let Some(v) = se.get_str(field)?
            && !v.is_empty()
        {
            c.fail(&se.path.field(field), quoted(v), "seLinuxOptions", "unset");
        }
    }
    Ok(())
}

/// Seccomp profile type: not `Unconfined` (baseline); `RuntimeDefault` or `Localhost`
/// (restricted, except on Windows). A profile present without `type` has the empty type, as
/// Pod Security Admission reads it: not Unconfined (baseline passes), not
/// RuntimeDefault/Localhost (restricted fails).
fn check_seccomp_type(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    let Some(p) = ctx.get_object("seccompProfile")? else {
        return Ok(());
    };
    let (restricted, windows) = (c.restricted, c.windows);
    let ty = p.get_str("type")?.unwrap_or("");
    let found = quoted_or_nil(ty);
    if ty == "Unconfined" {
        let allowed = if restricted {
            "RuntimeDefault, Localhost"
        } else {
            "anything but Unconfined"
        };
        if !(restricted && windows) {
            c.fail(&p.path.field("type"), found, "seccompProfile", allowed);
        }
    } else if restricted && !windows && !matches!(ty, "RuntimeDefault" | "Localhost") {
        c.fail(
            &p.path.field("type"),
            found,
            "seccompProfile",
            "RuntimeDefault, Localhost",
        );
    }
    Ok(())
}

/// AppArmor (baseline), field form: `RuntimeDefault` or `Localhost`; a profile without
/// `type` is not an allowed profile.
fn check_apparmor_type(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    if let Some(p) = ctx.get_object("appArmorProfile")? {
        let ty = p.get_str("type")?.unwrap_or("");
        if !matches!(ty, "RuntimeDefault" | "Localhost") {
            c.fail(
                &p.path.field("type"),
                quoted_or_nil(ty),
                "forbidden AppArmor profile",
                "RuntimeDefault, Localhost",
            );
        }
    }
    Ok(())
}

/// HostProcess (baseline): `windowsOptions.hostProcess` false or unset.
fn check_host_process(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    if let Some(w) = ctx.get_object("windowsOptions")?
        && w.get_bool("hostProcess")? == Some(true)
    {
        c.fail(
            &w.path.field("hostProcess"),
            "true".into(),
            "hostProcess",
            "false or unset",
        );
    }
    Ok(())
}

/// `runAsUser` (restricted, outside a user namespace): not 0.
fn check_run_as_root(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    if c.restricted
        && !c.userns
        && let Some(uid) = ctx.get("runAsUser")?
        && uid.value.as_i64() == Some(0)
    {
        c.fail(&uid.path, "0".into(), "runAsUser=0", "non-zero or unset");
    }
    Ok(())
}

/// Every check of one container, in this order: privileged, the common security-context
/// checks, procMount, capabilities, allowPrivilegeEscalation, runAsNonRoot, seccomp, host
/// ports, probe and lifecycle hosts.
fn check_container(c: &mut Checker<'_, '_>, container: &Container<'_>) -> Result<(), PolicyError> {
    let ctx = container_context(container)?;
    let sc_path = container.node.path.field("securityContext");
    if let Some(ctx) = &ctx {
        check_privileged(c, ctx)?;
        check_context_common(c, ctx)?;
        check_proc_mount(c, ctx)?;
    }
    check_capabilities(c, ctx.as_ref(), &sc_path)?;
    check_privilege_escalation(c, ctx.as_ref(), &sc_path)?;
    check_run_as_non_root(c, ctx.as_ref(), &sc_path)?;
    check_seccomp_set(c, ctx.as_ref(), &sc_path)?;
    check_host_ports(c, container)?;
    check_probe_hosts(c, container)
}

/// Privileged containers (baseline): `privileged` false or unset.
fn check_privileged(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    if ctx.get_bool("privileged")? == Some(true) {
        c.fail(
            &ctx.path.field("privileged"),
            "true".into(),
            "privileged",
            "false or unset",
        );
    }
    Ok(())
}

/// `procMount` (baseline): `Default`, any value in a user namespace; restricted: `Default`.
fn check_proc_mount(c: &mut Checker<'_, '_>, ctx: &At<'_>) -> Result<(), PolicyError> {
    if let Some(pm) = ctx.get_str("procMount")?
        && pm != "Default"
        && (c.restricted || !c.userns)
    {
        let allowed = if c.restricted {
            "Default"
        } else {
            "Default (any value with hostUsers: false)"
        };
        c.fail(
            &ctx.path.field("procMount"),
            quoted(pm),
            "procMount",
            allowed,
        );
    }
    Ok(())
}

/// Capabilities: added ones from the baseline set (baseline) or only `NET_BIND_SERVICE`,
/// and `ALL` dropped (restricted, except on Windows).
fn check_capabilities(
    c: &mut Checker<'_, '_>,
    ctx: Option<&At<'_>>,
    sc_path: &FieldPath,
) -> Result<(), PolicyError> {
    let caps = match ctx {
        Some(ctx) => ctx.get_object("capabilities")?,
        None => None,
    };
    let (adds, drops) = match &caps {
        Some(caps) => (caps.get_list("add")?, caps.get_str_list("drop")?),
        None => (Vec::new(), Vec::new()),
    };
    check_added_capabilities(c, &adds)?;
    if c.restricted && !c.windows && !drops.contains(&"ALL") {
        let path = sc_path.field("capabilities").field("drop");
        let found = if drops.is_empty() {
            "nil".to_owned()
        } else {
            format!(
                "[{}]",
                drops
                    .iter()
                    .map(|d| quoted(d))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        c.fail(
            &path,
            found,
            "unrestricted capabilities",
            "a list containing \"ALL\"",
        );
    }
    Ok(())
}

/// Added capabilities: the baseline set (baseline), only `NET_BIND_SERVICE` (restricted,
/// except on Windows).
fn check_added_capabilities(c: &mut Checker<'_, '_>, adds: &[At<'_>]) -> Result<(), PolicyError> {
    for add in adds {
        let name = add
            .value
            .as_str()
            .ok_or_else(|| PolicyError::malformed(&add.path, "expected a string"))?;
        if c.restricted && !c.windows {
            if name != "NET_BIND_SERVICE" {
                c.fail(
                    &add.path,
                    quoted(name),
                    "unrestricted capabilities",
                    "NET_BIND_SERVICE",
                );
            }
        } else if !BASELINE_CAPABILITIES.contains(&name) {
            c.fail(
                &add.path,
                quoted(name),
                "non-default capabilities",
                &BASELINE_CAPABILITIES.join(", "),
            );
        }
    }
    Ok(())
}

/// Privilege escalation (restricted, except on Windows): `allowPrivilegeEscalation: false`.
fn check_privilege_escalation(
    c: &mut Checker<'_, '_>,
    ctx: Option<&At<'_>>,
    sc_path: &FieldPath,
) -> Result<(), PolicyError> {
    if !c.restricted || c.windows {
        return Ok(());
    }
    let ape = match ctx {
        Some(ctx) => ctx.get("allowPrivilegeEscalation")?,
        None => None,
    };
    if ape.as_ref().map(|a| a.value) != Some(&Value::Bool(false)) {
        let found = ape.as_ref().map_or("nil".to_owned(), |a| render(a.value));
        c.fail(
            &sc_path.field("allowPrivilegeEscalation"),
            found,
            "allowPrivilegeEscalation != false",
            "false",
        );
    }
    Ok(())
}

/// Running as non-root (restricted, outside a user namespace): `runAsNonRoot: true` here or
/// on the Pod, never an explicit `false`.
fn check_run_as_non_root(
    c: &mut Checker<'_, '_>,
    ctx: Option<&At<'_>>,
    sc_path: &FieldPath,
) -> Result<(), PolicyError> {
    if !c.restricted || c.userns {
        return Ok(());
    }
    if !c.pod_non_root {
        let own = match ctx {
            Some(ctx) => ctx.get_bool("runAsNonRoot")?,
            None => None,
        };
        // An explicit false is reported by the container's own value; unset fails only
        // when the Pod does not set true.
        if own != Some(true) {
            let found = own.map_or("nil".to_owned(), |b| b.to_string());
            c.fail(
                &sc_path.field("runAsNonRoot"),
                found,
                "runAsNonRoot != true",
                "true (here or on the Pod)",
            );
        }
    } else if let Some(ctx) = ctx
        && ctx.get_bool("runAsNonRoot")? == Some(false)
    {
        c.fail(
            &ctx.path.field("runAsNonRoot"),
            "false".into(),
            "runAsNonRoot != true",
            "true or unset",
        );
    }
    Ok(())
}

/// Seccomp (restricted, except on Windows): a profile here or on the Pod. A profile that is
/// set, with a wrong or missing type, is reported by the common check; only a missing
/// profile is reported here.
fn check_seccomp_set(
    c: &mut Checker<'_, '_>,
    ctx: Option<&At<'_>>,
    sc_path: &FieldPath,
) -> Result<(), PolicyError> {
    if !c.restricted || c.windows || c.pod_seccomp_ok {
        return Ok(());
    }
    let own = match ctx {
        Some(ctx) => ctx.get_object("seccompProfile")?,
        None => None,
    };
    if own.is_none() {
        c.fail(
            &sc_path.field("seccompProfile"),
            "nil".into(),
            "seccompProfile",
            "type RuntimeDefault or Localhost here or on the Pod",
        );
    }
    Ok(())
}

/// Host ports (baseline): `hostPort` 0 or unset.
fn check_host_ports(c: &mut Checker<'_, '_>, container: &Container<'_>) -> Result<(), PolicyError> {
    for port in container.node.get_list("ports")? {
        if let Some(hp) = port.get_i64("hostPort")?
            && hp != 0
        {
            c.fail(
                &port.path.field("hostPort"),
                hp.to_string(),
                "hostPort",
                "0 or unset",
            );
        }
    }
    Ok(())
}

/// Probe and lifecycle hosts (baseline): `httpGet.host` and `tcpSocket.host` unset in every
/// probe and lifecycle hook.
fn check_probe_hosts(
    c: &mut Checker<'_, '_>,
    container: &Container<'_>,
) -> Result<(), PolicyError> {
    let node = &container.node;
    let mut handlers = Vec::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = node.get_object(probe)? {
            handlers.push(p);
        }
    }
    if let Some(lc) = node.get_object("lifecycle")? {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lc.get_object(hook)? {
                handlers.push(h);
            }
        }
    }
    for h in handlers {
        for action in ["httpGet", "tcpSocket"] {
            if let Some(a) = h.get_object(action)?
                && let Some(host) = a.get_str("host")?
                && !host.is_empty()
            {
                c.fail(
                    &a.path.field("host"),
                    quoted(host),
                    "probe or lifecycle host",
                    "unset",
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::pod::PodKind;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn restricted_pod() -> Value {
        json!({"spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a", "image": "x", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
    }

    fn run(level: Level, pod: &Value) -> Vec<String> {
        let view = PodView::read(pod, PodKind::Pod).unwrap().unwrap();
        check(level, &view)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn with(patch: Value) -> Value {
        let mut pod = restricted_pod();
        json_patch_merge(&mut pod, &patch);
        pod
    }

    fn json_patch_merge(target: &mut Value, patch: &Value) {
        if let (Some(t), Some(p)) = (target.as_object_mut(), patch.as_object()) {
            for (k, v) in p {
                if v.is_object() && t.get(k).is_some_and(Value::is_object) {
                    json_patch_merge(t.get_mut(k).unwrap(), v);
                } else {
                    t.insert(k.clone(), v.clone());
                }
            }
        }
    }

    #[test]
    fn present_but_empty_security_objects_are_judged_as_missing_values() {
        // seccompProfile without type: baseline passes (not Unconfined), restricted fails.
        let pod = json!({"spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {}},
            "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]}, "seccompProfile": {}}}]}});
        assert!(run(Level::Baseline, &pod).is_empty());
        assert_eq!(
            run(Level::Restricted, &pod),
            [
                "spec.securityContext.seccompProfile.type: nil violates restricted (seccompProfile); allowed: RuntimeDefault, Localhost",
                "spec.containers[0].securityContext.seccompProfile.type: nil violates restricted (seccompProfile); allowed: RuntimeDefault, Localhost"
            ]
        );
        // appArmorProfile without type is not an allowed profile, at every level.
        let pod = with(
            json!({"spec": {"containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]}, "appArmorProfile": {}}}]}}),
        );
        for level in [Level::Baseline, Level::Restricted] {
            assert_eq!(
                run(level, &pod),
                [format!(
                    "spec.containers[0].securityContext.appArmorProfile.type: nil violates {} (forbidden AppArmor profile); allowed: RuntimeDefault, Localhost",
                    level.name()
                )]
            );
        }
        // capabilities without drop: restricted requires drop ALL.
        let pod = with(
            json!({"spec": {"containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {}}}]}}),
        );
        assert_eq!(
            run(Level::Restricted, &pod),
            [
                "spec.containers[0].securityContext.capabilities.drop: nil violates restricted (unrestricted capabilities); allowed: a list containing \"ALL\""
            ]
        );
        // seLinuxOptions without fields is "unset": allowed.
        let pod = with(json!({"spec": {"securityContext": {"seLinuxOptions": {}}}}));
        assert!(run(Level::Restricted, &pod).is_empty());
    }

    #[test]
    fn every_source_of_a_volume_is_judged() {
        let pod = with(
            json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/"}}]}}),
        );
        assert_eq!(
            run(Level::Baseline, &pod),
            [
                "spec.volumes[0].hostPath: \"hostPath\" violates baseline (hostPath volumes); allowed: no hostPath volumes"
            ]
        );
        assert_eq!(run(Level::Restricted, &pod).len(), 1);
    }

    #[test]
    fn compliant_pod_passes_every_level() {
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert!(run(level, &restricted_pod()).is_empty(), "{level:?}");
        }
        let minimal = json!({"spec": {"containers": [{"name": "a"}]}});
        assert!(run(Level::Baseline, &minimal).is_empty());
        assert_eq!(run(Level::Restricted, &minimal).len(), 4);
    }

    #[rstest]
    #[case(json!({"spec": {"hostPID": true}}), "host namespaces")]
    #[case(json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}), "restricted volume types")]
    #[case(json!({"spec": {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]}}), "restricted volume types")]
    #[case(json!({"spec": {"securityContext": {"runAsUser": 0}}}), "runAsUser=0")]
    #[case(json!({"spec": {"securityContext": {"runAsNonRoot": false}}}), "runAsNonRoot != true")]
    #[case(json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}}), "seccompProfile")]
    #[case(json!({"spec": {"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1"}]}}}), "forbidden sysctls")]
    #[case(json!({"spec": {"securityContext": {"seLinuxOptions": {"user": "system_u"}}}}), "seLinuxOptions")]
    #[case(json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}}}), "forbidden AppArmor profile")]
    #[case(json!({"spec": {"securityContext": {"windowsOptions": {"hostProcess": true}}}}), "hostProcess")]
    fn restricted_pod_level_failures(#[case] patch: Value, #[case] reason: &str) {
        let msgs = run(Level::Restricted, &with(patch));
        assert!(!msgs.is_empty());
        assert!(
            msgs.iter().all(|m| m.contains(&format!("({reason})"))),
            "{msgs:?}"
        );
    }

    fn container_with(sc: Value) -> Value {
        let mut pod = restricted_pod();
        let c = &mut pod["spec"]["containers"][0]["securityContext"];
        json_patch_merge(c, &sc);
        pod
    }

    #[rstest]
    #[case(json!({"privileged": true}), "privileged")]
    #[case(json!({"capabilities": {"add": ["NET_RAW"], "drop": ["ALL"]}}), "unrestricted capabilities")]
    #[case(json!({"capabilities": {"drop": ["all"]}}), "unrestricted capabilities")]
    #[case(json!({"allowPrivilegeEscalation": true}), "allowPrivilegeEscalation != false")]
    #[case(json!({"runAsNonRoot": false}), "runAsNonRoot != true")]
    #[case(json!({"procMount": "Unmasked"}), "procMount")]
    #[case(json!({"seccompProfile": {"type": "Unconfined"}}), "seccompProfile")]
    #[case(json!({"appArmorProfile": {"type": "Unconfined"}}), "forbidden AppArmor profile")]
    #[case(json!({"seLinuxOptions": {"type": "spc_t"}}), "seLinuxOptions")]
    #[case(json!({"runAsUser": 0}), "runAsUser=0")]
    fn restricted_container_failures(#[case] sc: Value, #[case] reason: &str) {
        let msgs = run(Level::Restricted, &container_with(sc));
        assert_eq!(msgs.len(), 1, "{msgs:?}");
        assert!(msgs[0].starts_with("spec.containers[0]"), "{msgs:?}");
        assert!(msgs[0].contains(&format!("({reason})")), "{msgs:?}");
    }

    #[test]
    fn baseline_specifics() {
        let base = |patch: Value| {
            let mut pod = json!({"spec": {"containers": [{"name": "a"}]}});
            json_patch_merge(&mut pod, &patch);
            run(Level::Baseline, &pod)
        };
        assert!(
            base(
                json!({"spec": {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem"}]}}})
            )
            .is_empty()
        );
        assert!(base(json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}})).is_empty());
        assert_eq!(
            base(json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}})).len(),
            1
        );
        assert!(base(json!({"spec": {"volumes": [{"name": "n", "nfs": {}}]}})).is_empty());
        // procMount is free in a user namespace under baseline, not under restricted
        let userns = json!({"spec": {"hostUsers": false, "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked"}}]}});
        assert!(run(Level::Baseline, &userns).is_empty());
        let probe = json!({"spec": {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"host": "evil", "port": 80}},
            "lifecycle": {"preStop": {"tcpSocket": {"host": "x", "port": 1}}}, "ports": [{"containerPort": 80, "hostPort": 8080}]}]}});
        let msgs = run(Level::Baseline, &probe);
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(msgs[0].starts_with(
            "spec.containers[0].ports[0].hostPort: 8080 violates baseline (hostPort)"
        ));
        assert!(msgs[1].starts_with("spec.containers[0].livenessProbe.httpGet.host: \"evil\""));
    }

    #[test]
    fn user_namespaces_relax_restricted_identity_checks() {
        let pod = with(
            json!({"spec": {"hostUsers": false, "securityContext": {"runAsNonRoot": null, "runAsUser": 0}}}),
        );
        assert!(
            run(Level::Restricted, &pod).is_empty(),
            "{:?}",
            run(Level::Restricted, &pod)
        );
        let pod = json!({"spec": {"hostUsers": false, "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "procMount": "Unmasked"}}]}});
        assert_eq!(run(Level::Restricted, &pod).len(), 1);
    }

    #[test]
    fn windows_pods_are_exempt_from_linux_only_checks() {
        let pod = json!({"spec": {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true}, "containers": [{"name": "a"}]}});
        assert!(
            run(Level::Restricted, &pod).is_empty(),
            "{:?}",
            run(Level::Restricted, &pod)
        );
    }

    #[test]
    fn every_container_list_is_checked() {
        let pod = json!({"spec": {"initContainers": [{"name": "i", "securityContext": {"privileged": true}}],
            "ephemeralContainers": [{"name": "e", "securityContext": {"privileged": true}}], "containers": [{"name": "a"}]}});
        let msgs = run(Level::Baseline, &pod);
        assert_eq!(msgs.len(), 2);
        assert!(msgs[0].starts_with("spec.initContainers[0].securityContext.privileged"));
        assert!(msgs[1].starts_with("spec.ephemeralContainers[0].securityContext.privileged"));
    }
}
