//! PSP defaulting: fills unset security-context fields of a pod spec the way the
//! PodSecurityPolicy admission plugin did, changing only those fields (minimal and
//! idempotent). Ephemeral containers are never defaulted.

use std::collections::HashSet;

use policy_core::PolicyError;
use policy_core::json::At;
use policy_core::mutation;
use policy_core::pod::{PodKind, PodView};
use policy_core::security_context::{
    container_apparmor, effective, effective_bool, effective_i64, pod_apparmor, pod_context,
    pod_seccomp, profile_field_from_syntax,
};
use serde_json::{Value, json};

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

fn plan(r: &Resolved<'_>, view: &PodView<'_>, spec_ptr: &str) -> Result<Vec<Write>, PolicyError> {
    let spec = r.spec;
    let mut out = Vec::new();
    let pod_sc = pod_context(&view.spec)?;
    let pod_write = |key: &'static str, value: Value| Write {
        pointer: spec_ptr.to_owned(),
        path: &["securityContext"],
        key,
        value,
    };

    for field in ["initContainers", "containers"] {
        for (i, c) in view.spec.get_list(field)?.into_iter().enumerate() {
            let pointer = format!("{spec_ptr}/{field}/{i}");
            let sc = c.get_object("securityContext")?;
            plan_container(r, sc.as_ref(), pod_sc.as_ref(), &pointer, &mut out)?;
        }
    }

    // fsGroup
    if r.fs_group.rule == IdRule::MustRunAs
        && pod_sc
            .as_ref()
            .map(|s| s.get("fsGroup"))
            .transpose()?
            .flatten()
            .is_none()
        && let Some(min) = r.fs_group.ranges.first_min()
    {
        out.push(pod_write("fsGroup", json!(min)));
    }
    // supplementalGroups
    if r.supplemental_groups.rule == IdRule::MustRunAs
        && let Some(min) = r.supplemental_groups.ranges.first_min()
    {
        let empty = match &pod_sc {
            Some(s) => s.get_list("supplementalGroups")?.is_empty(),
            None => true,
        };
        if empty {
            out.push(pod_write("supplementalGroups", json!([min])));
        }
    }
    // seccomp
    if let Some(default) = &spec.default_seccomp_profile
        && pod_seccomp(view)?.is_none()
        && let Some(field) = profile_field_from_syntax(default)
    {
        out.push(pod_write("seccompProfile", field));
    }
    // AppArmor: the Pod field is set when some container has no profile of its own.
    if let Some(default) = &spec.default_app_armor_profile
        && pod_apparmor(view)?.is_none()
        && let Some(field) = profile_field_from_syntax(default)
    {
        let mut some_without = false;
        for c in view.containers()? {
            if c.list != policy_core::pod::ContainerList::Ephemeral
                && container_apparmor(view, &c)?.is_none()
            {
                some_without = true;
            }
        }
        if some_without {
            out.push(pod_write("appArmorProfile", field));
        }
    }
    // runtime class
    if let Some(rc) = &spec.runtime_class
        && let Some(default) = &rc.default
        && view
            .spec
            .get_str("runtimeClassName")?
            .unwrap_or("")
            .is_empty()
    {
        out.push(Write {
            pointer: spec_ptr.to_owned(),
            path: &[],
            key: "runtimeClassName",
            value: json!(default),
        });
    }
    Ok(out)
}

fn plan_container(
    r: &Resolved<'_>,
    sc: Option<&At<'_>>,
    pod_sc: Option<&At<'_>>,
    pointer: &str,
    out: &mut Vec<Write>,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    let write = |key: &'static str, value: Value| Write {
        pointer: pointer.to_owned(),
        path: &["securityContext"],
        key,
        value,
    };
    // runAsUser
    match r.run_as_user.rule {
        IdRule::MustRunAs => {
            if effective_i64(sc, pod_sc, "runAsUser")?.is_none()
                && let Some(min) = r.run_as_user.ranges.first_min()
            {
                out.push(write("runAsUser", json!(min)));
            }
        }
        IdRule::MustRunAsNonRoot => {
            if effective_bool(sc, pod_sc, "runAsNonRoot")?.is_none()
                && effective_i64(sc, pod_sc, "runAsUser")?.is_none()
            {
                out.push(write("runAsNonRoot", json!(true)));
            }
        }
        IdRule::MayRunAs | IdRule::RunAsAny => {}
    }
    // runAsGroup
    if r.run_as_group.rule == IdRule::MustRunAs
        && effective_i64(sc, pod_sc, "runAsGroup")?.is_none()
        && let Some(min) = r.run_as_group.ranges.first_min()
    {
        out.push(write("runAsGroup", json!(min)));
    }
    // seLinux
    if let SeLinux::MustRunAs(opts) = &spec.se_linux
        && effective(sc, pod_sc, "seLinuxOptions")?.is_none()
    {
        out.push(write("seLinuxOptions", opts.to_json()));
    }
    // capabilities
    let caps = match sc {
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
        out.push(Write {
            pointer: pointer.to_owned(),
            path: &["securityContext", "capabilities"],
            key: "add",
            value: json!(new_add),
        });
    }
    let mut present = dropped;
    let mut new_drop: Vec<String> = drops.iter().map(|s| (*s).to_owned()).collect();
    for d in spec.required_drop_capabilities.iter() {
        if present.insert(d) {
            new_drop.push(d.to_owned());
        }
    }
    if new_drop.len() != drops.len() {
        out.push(Write {
            pointer: pointer.to_owned(),
            path: &["securityContext", "capabilities"],
            key: "drop",
            value: json!(new_drop),
        });
    }
    // allowPrivilegeEscalation
    let own_ape = match sc {
        Some(sc) => sc.get_bool("allowPrivilegeEscalation")?,
        None => None,
    };
    if own_ape.is_none() {
        let default = spec
            .default_allow_privilege_escalation
            .or((!spec.allow_privilege_escalation).then_some(false));
        if let Some(d) = default {
            out.push(write("allowPrivilegeEscalation", json!(d)));
        }
    }
    // readOnlyRootFilesystem
    if spec.read_only_root_filesystem {
        let own = match sc {
            Some(sc) => sc.get_bool("readOnlyRootFilesystem")?,
            None => None,
        };
        if own.is_none() {
            out.push(write("readOnlyRootFilesystem", json!(true)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PspSpec;
    use crate::strategy::NamespaceIds;

    fn spec(raw: Value) -> PspSpec {
        PspSpec::build(policy_core::settings::decode(&raw).unwrap()).unwrap()
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
