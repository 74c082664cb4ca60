//! PSP defaulting: fills unset security-context fields of a pod spec the way the
//! PodSecurityPolicy admission plugin did, changing only those fields (minimal and
//! idempotent). Ephemeral containers are never defaulted.

use std::collections::HashSet;

use policy_admission::mutation;
use policy_admission::pod::{PodKind, PodView};
use policy_decode::PolicyError;
use policy_decode::json::At;
use serde_json::{Value, json};
use tenancy_rules::security_context::{
    container_apparmor, effective, effective_bool, effective_i64, pod_apparmor, pod_context,
    pod_seccomp, profile_field_from_syntax,
};

use super::Resolved;
use crate::spec::{IdRule, SeLinux};

/// One field to write: the JSON pointer of the object that holds `securityContext` (or the
/// pod spec itself), the map path below it, the key and the value.
struct Write {
    pointer: String,
    path: &'static [&'static str],
    key: &'static str,
    value: Value,
}

/// The JSON pointer of the pod spec of `kind`.
fn spec_pointer(kind: PodKind) -> String {
    let mut p = String::new();
    for seg in kind.template_path() {
        p.push('/');
        p.push_str(seg);
    }
    p.push_str("/spec");
    p
}

/// The profile's defaults for `object` (a Pod or a workload whose template is defaulted as
/// if it were a Pod), read without copying it; empty when nothing would change.
pub fn defaults(r: &Resolved<'_>, object: &Value, kind: PodKind) -> Result<Defaults, PolicyError> {
    let writes = match PodView::read(object, kind)? {
        Some(view) => plan(r, &view, &spec_pointer(kind))?,
        None => Vec::new(),
    };
    Ok(Defaults(writes))
}

/// The fields a profile's defaults write (see [`defaults`]).
pub struct Defaults(Vec<Write>);

impl Defaults {
    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Writes the defaults into `object` (the object they were computed for).
    pub fn write(self, object: &mut Value) -> Result<(), PolicyError> {
        for w in self.0 {
            if let Some(target) = object.pointer_mut(&w.pointer) {
                mutation::set(target, w.path, w.key, w.value)?;
            }
        }
        Ok(())
    }
}

/// Applies the profile's defaults to `object` (a Pod or a workload whose template is
/// defaulted as if it were a Pod). Returns whether anything changed.
pub fn apply(r: &Resolved<'_>, object: &mut Value, kind: PodKind) -> Result<bool, PolicyError> {
    let planned = defaults(r, object, kind)?;
    let changed = !planned.is_empty();
    planned.write(object)?;
    Ok(changed)
}

/// Every default the profile writes into the pod spec at `spec_ptr`: containers first (in
/// document order), then the Pod-level fields.
fn plan(r: &Resolved<'_>, view: &PodView<'_>, spec_ptr: &str) -> Result<Vec<Write>, PolicyError> {
    let mut out = Vec::new();
    let pod_sc = pod_context(&view.spec)?;
    for field in ["initContainers", "containers"] {
        for (i, c) in view.spec.get_list(field)?.into_iter().enumerate() {
            let pointer = format!("{spec_ptr}/{field}/{i}");
            let sc = c.get_object("securityContext")?;
            plan_container(r, sc.as_ref(), pod_sc.as_ref(), &pointer, &mut out)?;
        }
    }
    let pod = PodWrites {
        pointer: spec_ptr,
        out: &mut out,
    };
    plan_pod(r, view, pod_sc.as_ref(), pod)?;
    Ok(out)
}

/// Where the Pod-level defaults are written.
struct PodWrites<'p> {
    /// The pod spec's JSON pointer.
    pointer: &'p str,
    /// The writes planned so far.
    out: &'p mut Vec<Write>,
}

impl PodWrites<'_> {
    /// Plans `securityContext.<key> = value` on the pod spec.
    fn security_context(&mut self, key: &'static str, value: Value) {
        self.out.push(Write {
            pointer: self.pointer.to_owned(),
            path: &["securityContext"],
            key,
            value,
        });
    }
}

/// The Pod-level defaults, in this order: `fsGroup`, `supplementalGroups`, seccomp,
/// AppArmor, runtime class.
fn plan_pod(
    r: &Resolved<'_>,
    view: &PodView<'_>,
    pod_sc: Option<&At<'_>>,
    mut pod: PodWrites<'_>,
) -> Result<(), PolicyError> {
    default_fs_group(r, pod_sc, &mut pod)?;
    default_supplemental_groups(r, pod_sc, &mut pod)?;
    default_seccomp_profile(r, view, &mut pod)?;
    default_app_armor_profile(r, view, &mut pod)?;
    default_runtime_class(r, view, &mut pod)
}

/// `fsGroup: MustRunAs`: an unset `fsGroup` becomes the first range's min.
fn default_fs_group(
    r: &Resolved<'_>,
    pod_sc: Option<&At<'_>>,
    pod: &mut PodWrites<'_>,
) -> Result<(), PolicyError> {
    if r.fs_group.rule == IdRule::MustRunAs
        && pod_sc
            .map(|s| s.get("fsGroup"))
            .transpose()?
            .flatten()
            .is_none()
        && let Some(min) = r.fs_group.ranges.first_min()
    {
        pod.security_context("fsGroup", json!(min));
    }
    Ok(())
}

/// `supplementalGroups: MustRunAs`: absent or empty groups become `[first min]`.
fn default_supplemental_groups(
    r: &Resolved<'_>,
    pod_sc: Option<&At<'_>>,
    pod: &mut PodWrites<'_>,
) -> Result<(), PolicyError> {
    if r.supplemental_groups.rule == IdRule::MustRunAs
        && let Some(min) = r.supplemental_groups.ranges.first_min()
    {
        let empty = match pod_sc {
            Some(s) => s.get_list("supplementalGroups")?.is_empty(),
            None => true,
        };
        if empty {
            pod.security_context("supplementalGroups", json!([min]));
        }
    }
    Ok(())
}

/// `defaultSeccompProfile`: written as the Pod profile when the Pod has none.
fn default_seccomp_profile(
    r: &Resolved<'_>,
    view: &PodView<'_>,
    pod: &mut PodWrites<'_>,
) -> Result<(), PolicyError> {
    if let Some(default) = &r.spec.default_seccomp_profile
        && pod_seccomp(view)?.is_none()
        && let Some(field) = profile_field_from_syntax(default)
    {
        pod.security_context("seccompProfile", field);
    }
    Ok(())
}

/// `defaultAppArmorProfile`: the Pod field is set when the Pod has none and some
/// (non-ephemeral) container has no profile of its own.
fn default_app_armor_profile(
    r: &Resolved<'_>,
    view: &PodView<'_>,
    pod: &mut PodWrites<'_>,
) -> Result<(), PolicyError> {
    if let Some(default) = &r.spec.default_app_armor_profile
        && pod_apparmor(view)?.is_none()
        && let Some(field) = profile_field_from_syntax(default)
    {
        let mut some_without = false;
        for c in view.containers()? {
            if c.list != policy_admission::pod::ContainerList::Ephemeral
                && container_apparmor(view, &c)?.is_none()
            {
                some_without = true;
            }
        }
        if some_without {
            pod.security_context("appArmorProfile", field);
        }
    }
    Ok(())
}

/// `runtimeClass.defaultRuntimeClassName`: written when the Pod names no runtime class.
fn default_runtime_class(
    r: &Resolved<'_>,
    view: &PodView<'_>,
    pod: &mut PodWrites<'_>,
) -> Result<(), PolicyError> {
    if let Some(rc) = &r.spec.runtime_class
        && let Some(default) = &rc.default
        && view
            .spec
            .get_str("runtimeClassName")?
            .unwrap_or("")
            .is_empty()
    {
        pod.out.push(Write {
            pointer: pod.pointer.to_owned(),
            path: &[],
            key: "runtimeClassName",
            value: json!(default),
        });
    }
    Ok(())
}

/// One container's security context (own values `sc`, the Pod's `pod_sc`) and where its
/// defaults are written.
struct ContainerWrites<'c, 'p, 'a> {
    sc: Option<&'c At<'a>>,
    pod_sc: Option<&'p At<'a>>,
    pointer: &'c str,
    out: &'c mut Vec<Write>,
}

impl ContainerWrites<'_, '_, '_> {
    /// Plans `securityContext.<key> = value` on the container.
    fn security_context(&mut self, key: &'static str, value: Value) {
        self.out.push(Write {
            pointer: self.pointer.to_owned(),
            path: &["securityContext"],
            key,
            value,
        });
    }

    /// The container's own boolean `name`.
    fn own_bool(&self, name: &str) -> Result<Option<bool>, PolicyError> {
        match self.sc {
            Some(sc) => sc.get_bool(name),
            None => Ok(None),
        }
    }
}

/// The container defaults, in this order: `runAsUser`, `runAsGroup`, `seLinuxOptions`,
/// capabilities, `allowPrivilegeEscalation`, `readOnlyRootFilesystem`.
fn plan_container<'a>(
    r: &Resolved<'_>,
    sc: Option<&At<'a>>,
    pod_sc: Option<&At<'a>>,
    pointer: &str,
    out: &mut Vec<Write>,
) -> Result<(), PolicyError> {
    let mut c = ContainerWrites {
        sc,
        pod_sc,
        pointer,
        out,
    };
    default_run_as_user(r, &mut c)?;
    default_run_as_group(r, &mut c)?;
    default_se_linux(r, &mut c)?;
    default_capabilities(r, &mut c)?;
    default_privilege_escalation(r, &mut c)?;
    default_read_only_root_filesystem(r, &mut c)
}

/// `runAsUser`: `MustRunAs` sets the first range's min, `MustRunAsNonRoot` sets
/// `runAsNonRoot: true`, when no effective value is set.
fn default_run_as_user(
    r: &Resolved<'_>,
    c: &mut ContainerWrites<'_, '_, '_>,
) -> Result<(), PolicyError> {
    match r.run_as_user.rule {
        IdRule::MustRunAs => {
            if effective_i64(c.sc, c.pod_sc, "runAsUser")?.is_none()
                && let Some(min) = r.run_as_user.ranges.first_min()
            {
                c.security_context("runAsUser", json!(min));
            }
        }
        IdRule::MustRunAsNonRoot => {
            if effective_bool(c.sc, c.pod_sc, "runAsNonRoot")?.is_none()
                && effective_i64(c.sc, c.pod_sc, "runAsUser")?.is_none()
            {
                c.security_context("runAsNonRoot", json!(true));
            }
        }
        IdRule::MayRunAs | IdRule::RunAsAny => {}
    }
    Ok(())
}

/// `runAsGroup: MustRunAs`: an unset effective group becomes the first range's min.
fn default_run_as_group(
    r: &Resolved<'_>,
    c: &mut ContainerWrites<'_, '_, '_>,
) -> Result<(), PolicyError> {
    if r.run_as_group.rule == IdRule::MustRunAs
        && effective_i64(c.sc, c.pod_sc, "runAsGroup")?.is_none()
        && let Some(min) = r.run_as_group.ranges.first_min()
    {
        c.security_context("runAsGroup", json!(min));
    }
    Ok(())
}

/// `seLinux: MustRunAs`: unset effective options become the profile's.
fn default_se_linux(
    r: &Resolved<'_>,
    c: &mut ContainerWrites<'_, '_, '_>,
) -> Result<(), PolicyError> {
    if let SeLinux::MustRunAs(opts) = &r.spec.se_linux
        && effective(c.sc, c.pod_sc, "seLinuxOptions")?.is_none()
    {
        c.security_context("seLinuxOptions", opts.to_json());
    }
    Ok(())
}

/// `defaultAddCapabilities` not dropped are added; missing `requiredDropCapabilities` are
/// dropped.
fn default_capabilities(
    r: &Resolved<'_>,
    c: &mut ContainerWrites<'_, '_, '_>,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    let caps = match c.sc {
        Some(sc) => sc.get_object("capabilities")?,
        None => None,
    };
    let (adds, drops) = match &caps {
        Some(caps) => (caps.get_str_list("add")?, caps.get_str_list("drop")?),
        None => (Vec::new(), Vec::new()),
    };
    // Sets of what the container has: one pass over its lists and over the settings'.
    let dropped: HashSet<&str> = drops.iter().copied().collect();
    let mut present: HashSet<&str> = adds.iter().copied().collect();
    let mut new_add: Vec<String> = adds.iter().map(|s| (*s).to_owned()).collect();
    for d in spec.default_add_capabilities.iter() {
        if !dropped.contains(d) && present.insert(d) {
            new_add.push(d.to_owned());
        }
    }
    if new_add.len() != adds.len() {
        c.out.push(capabilities_write(c.pointer, "add", new_add));
    }
    let mut present = dropped;
    let mut new_drop: Vec<String> = drops.iter().map(|s| (*s).to_owned()).collect();
    for d in spec.required_drop_capabilities.iter() {
        if present.insert(d) {
            new_drop.push(d.to_owned());
        }
    }
    if new_drop.len() != drops.len() {
        c.out.push(capabilities_write(c.pointer, "drop", new_drop));
    }
    Ok(())
}

/// Plans `securityContext.capabilities.<key> = list` on the container at `pointer`.
fn capabilities_write(pointer: &str, key: &'static str, list: Vec<String>) -> Write {
    Write {
        pointer: pointer.to_owned(),
        path: &["securityContext", "capabilities"],
        key,
        value: json!(list),
    }
}

/// `allowPrivilegeEscalation` unset: `defaultAllowPrivilegeEscalation`, else `false` when
/// escalation is not allowed.
fn default_privilege_escalation(
    r: &Resolved<'_>,
    c: &mut ContainerWrites<'_, '_, '_>,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    if c.own_bool("allowPrivilegeEscalation")?.is_none() {
        let default = spec
            .default_allow_privilege_escalation
            .or((!spec.allow_privilege_escalation).then_some(false));
        if let Some(d) = default {
            c.security_context("allowPrivilegeEscalation", json!(d));
        }
    }
    Ok(())
}

/// `readOnlyRootFilesystem` required: unset becomes `true`.
fn default_read_only_root_filesystem(
    r: &Resolved<'_>,
    c: &mut ContainerWrites<'_, '_, '_>,
) -> Result<(), PolicyError> {
    if r.spec.read_only_root_filesystem && c.own_bool("readOnlyRootFilesystem")?.is_none() {
        c.security_context("readOnlyRootFilesystem", json!(true));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{PspSpec, RawSpec};
    use crate::strategy::NamespaceIds;

    fn spec(raw: Value) -> PspSpec {
        PspSpec::try_from(policy_decode::settings::decode::<RawSpec>(&raw).unwrap()).unwrap()
    }

    fn tool() -> PspSpec {
        spec(json!({
            "allowPrivilegeEscalation": false,
            "runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 52000, "max": 52000}]},
            "runAsGroup": {"rule": "MustRunAs", "ranges": [{"min": 52000, "max": 52000}]},
            "fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 52000, "max": 52000}]},
            "supplementalGroups": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]},
            "seLinux": {"rule": "RunAsAny"},
            "allowedSeccompProfiles": ["runtime/default"], "defaultSeccompProfile": "runtime/default"}))
    }

    #[test]
    fn defaults_a_bare_pod_like_psp() {
        let s = tool();
        let r = Resolved::resolve(&s, &NamespaceIds::NotRead).unwrap();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x"}], "extra": 1}});
        assert!(apply(&r, &mut pod, PodKind::Pod).unwrap());
        assert_eq!(
            pod,
            json!({"metadata": {"name": "p"}, "spec": {"extra": 1,
                "containers": [{"name": "a", "image": "x", "securityContext": {"runAsUser": 52000, "runAsGroup": 52000, "allowPrivilegeEscalation": false}}],
                "securityContext": {"fsGroup": 52000, "supplementalGroups": [1], "seccompProfile": {"type": "RuntimeDefault"}}}})
        );
        // idempotent
        let again = pod.clone();
        assert!(!apply(&r, &mut pod, PodKind::Pod).unwrap());
        assert_eq!(pod, again);
    }

    #[test]
    fn pod_level_values_are_effective_and_not_copied() {
        let s = tool();
        let r = Resolved::resolve(&s, &NamespaceIds::NotRead).unwrap();
        let mut pod = json!({"spec": {"securityContext": {"runAsUser": 52000, "runAsGroup": 52000, "fsGroup": 52000, "supplementalGroups": [5],
            "seccompProfile": {"type": "Localhost", "localhostProfile": "x"}},
            "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": true, "privileged": false}}]}});
        let before = pod.clone();
        assert!(!apply(&r, &mut pod, PodKind::Pod).unwrap());
        assert_eq!(pod, before);
    }

    #[test]
    fn apparmor_default_only_where_a_container_would_have_none() {
        let s = spec(
            json!({"runAsUser": {"rule": "RunAsAny"}, "seLinux": {"rule": "RunAsAny"},
            "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"},
            "allowedAppArmorProfiles": ["runtime/default"], "defaultAppArmorProfile": "runtime/default"}),
        );
        let r = Resolved::resolve(&s, &NamespaceIds::NotRead).unwrap();
        let rd = json!({"appArmorProfile": {"type": "RuntimeDefault"}});
        // Every container has its own profile (field or annotation): nothing is written.
        let mut all_own = json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/i": "runtime/default"}},
            "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a", "securityContext": rd}],
            "ephemeralContainers": [{"name": "d"}]}});
        assert!(!apply(&r, &mut all_own, PodKind::Pod).unwrap());
        // The Pod already has a profile (even a disallowed one): nothing is written.
        let mut pod_set = json!({"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a"}]}});
        assert!(!apply(&r, &mut pod_set, PodKind::Pod).unwrap());
        // One container without a profile: the Pod field is written once, then left alone.
        let mut one_without =
            json!({"spec": {"containers": [{"name": "a", "securityContext": rd}, {"name": "b"}]}});
        assert!(apply(&r, &mut one_without, PodKind::Pod).unwrap());
        assert_eq!(
            one_without["spec"]["securityContext"],
            json!({"appArmorProfile": {"type": "RuntimeDefault"}})
        );
        assert!(!apply(&r, &mut one_without, PodKind::Pod).unwrap());
    }

    #[test]
    fn capabilities_and_other_container_defaults() {
        let s = spec(
            json!({"runAsUser": {"rule": "MustRunAsNonRoot"}, "seLinux": {"rule": "MustRunAs", "seLinuxOptions": {"level": "s0:c1"}},
            "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"},
            "defaultAddCapabilities": ["CHOWN", "KILL"], "requiredDropCapabilities": ["NET_RAW"],
            "defaultAllowPrivilegeEscalation": true, "readOnlyRootFilesystem": true,
            "runtimeClass": {"allowedRuntimeClassNames": ["gvisor"], "defaultRuntimeClassName": "gvisor"}}),
        );
        let r = Resolved::resolve(&s, &NamespaceIds::NotRead).unwrap();
        let mut dep = json!({"spec": {"template": {"spec": {"initContainers": [{"name": "i", "securityContext": {"capabilities": {"drop": ["KILL"]}}}],
            "containers": [{"name": "a", "securityContext": {"runAsUser": 1000}}]}}}});
        assert!(apply(&r, &mut dep, PodKind::Deployment).unwrap());
        let t = &dep["spec"]["template"]["spec"];
        assert_eq!(
            t["initContainers"][0]["securityContext"],
            json!({"capabilities": {"drop": ["KILL", "NET_RAW"], "add": ["CHOWN"]},
            "runAsNonRoot": true, "seLinuxOptions": {"level": "s0:c1"}, "allowPrivilegeEscalation": true, "readOnlyRootFilesystem": true})
        );
        assert_eq!(t["containers"][0]["securityContext"]["runAsUser"], 1000);
        assert!(
            t["containers"][0]["securityContext"]
                .get("runAsNonRoot")
                .is_none()
        );
        assert_eq!(t["runtimeClassName"], "gvisor");
    }
}
