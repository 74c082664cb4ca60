//! PSP validation of a pod spec against a resolved profile: every field of the spec, every
//! container list, all violations with their paths, in document order (Pod-level fields,
//! volumes, then containers). One function per rule, named after it: `pod` holds the
//! Pod-level rules, `volumes` the volume rules, `container` the container rules.

mod container;
mod pod;
mod volumes;

use policy_admission::Violation;
use policy_admission::pod::{LazyMounts, PodView};
use policy_decode::PolicyError;
use policy_decode::json::At;
use policy_decode::names::NameList;
use policy_decode::path::FieldPath;
use tenancy_rules::security_context::{ProfileRef, pod_apparmor, pod_context, pod_seccomp};

use super::{Resolved, ResolvedIds};
use crate::spec::SeLinuxOptions;

/// The violations found so far, in document order.
struct Out(Vec<Violation>);

impl Out {
    /// Records a violation at `path`.
    fn push(&mut self, path: &FieldPath, problem: String) {
        self.0.push(Violation {
            path: path.clone(),
            problem,
        });
    }
}

/// A value quoted for messages.
fn q(s: &str) -> String {
    format!("{s:?}")
}

/// A settings list for messages: `[a, b]` (long lists shortened, see
/// [`policy_decode::message`]), or `none`.
fn list<T: std::fmt::Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    let total = items.len();
    counted_list(items, total)
}

/// [`list`] of `total` items from any iterator (two lists chained).
fn counted_list<T: std::fmt::Display>(items: impl Iterator<Item = T>, total: usize) -> String {
    if total == 0 {
        "none".to_owned()
    } else {
        format!("[{}]", policy_decode::message::join_counted(items, total))
    }
}

/// Validates the pod spec of `view` against `r` and returns every violation.
pub fn check(r: &Resolved<'_>, view: &PodView<'_>) -> Result<Vec<Violation>, PolicyError> {
    let spec = r.spec;
    let mut out = Out(Vec::new());
    let pod = &view.spec;
    pod::check_host_namespaces(spec, pod, &mut out)?;
    let containers = view.containers()?;
    let pod_sc = pod_context(pod)?;
    if let Some(sc) = &pod_sc {
        pod::pod_level_ids(r, sc, &containers, &mut out)?;
        pod::check_sysctls(spec, sc, &mut out)?;
    }
    pod::check_fs_group_set(r, pod, pod_sc.as_ref(), &mut out)?;
    pod::check_supplemental_groups_set(r, pod, pod_sc.as_ref(), &mut out)?;
    check_seccomp(
        &spec.allowed_seccomp_profiles,
        pod_seccomp(view)?.as_ref(),
        &pod.path.field("securityContext").field("seccompProfile"),
        &mut out,
    );
    // The Pod's AppArmor profile is judged only in the containers that inherit it.
    let pod_aa = pod_apparmor(view)?;
    pod::check_runtime_class(spec, pod, &mut out)?;
    // The mounts of a volume are looked up by name, read once when first needed.
    let mut mounts = LazyMounts::default();
    for vol in pod.get_list("volumes")? {
        volumes::check_volume(r, &vol, &containers, &mut mounts, &mut out)?;
    }
    for c in &containers {
        container::check_container(r, view, c, pod_sc.as_ref(), pod_aa.as_ref(), &mut out)?;
    }
    Ok(out.0)
}

/// `field`'s id `v` must be inside the resolved ranges.
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

/// `seLinux: MustRunAs`: the options found equal the profile's (absent fields are `""`).
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

/// A seccomp profile in canonical syntax (`docker/default` is `runtime/default`).
fn canonical(p: &str) -> &str {
    if p == "docker/default" {
        "runtime/default"
    } else {
        p
    }
}

/// `allowedSeccompProfiles`: a set profile listed (or `*`); an unset one only with `""` or
/// no list.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{PspSpec, RawSpec};
    use crate::strategy::NamespaceIds;
    use policy_admission::pod::PodKind;
    use serde_json::{Value, json};

    fn spec(extra: Value) -> PspSpec {
        let mut raw = json!({"runAsUser": {"rule": "RunAsAny"}, "seLinux": {"rule": "RunAsAny"},
            "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}});
        for (k, v) in extra.as_object().unwrap() {
            raw[k] = v.clone();
        }
        PspSpec::try_from(policy_decode::settings::decode::<RawSpec>(&raw).unwrap()).unwrap()
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
    fn apparmor_is_judged_per_container() {
        let s = spec(json!({"allowedAppArmorProfiles": ["runtime/default", "localhost/x"]}));
        let unconfined = json!({"type": "Unconfined"});
        let rd = json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}});
        // Every container (init, regular) overrides the Pod profile: nothing inherits it.
        let overridden = json!({"spec": {"securityContext": {"appArmorProfile": unconfined},
            "initContainers": [{"name": "i", "securityContext": rd["securityContext"]}],
            "containers": [{"name": "a", "securityContext": rd["securityContext"]}]}});
        assert!(run(&s, overridden).is_empty());
        // Overrides by annotation count the same.
        let annotated = json!({"metadata": {"annotations": {
                "container.apparmor.security.beta.kubernetes.io/i": "localhost/x",
                "container.apparmor.security.beta.kubernetes.io/a": "runtime/default"}},
            "spec": {"securityContext": {"appArmorProfile": unconfined},
            "initContainers": [{"name": "i"}], "containers": [{"name": "a"}]}});
        assert!(run(&s, annotated).is_empty());
        // A container inheriting it is refused at its own path, naming the Pod field.
        let inheriting = json!({"spec": {"securityContext": {"appArmorProfile": unconfined},
            "containers": [{"name": "a", "securityContext": rd["securityContext"]}, {"name": "b"}],
            "ephemeralContainers": [{"name": "d"}]}});
        assert_eq!(
            run(&s, inheriting),
            [
                "spec.containers[1].securityContext.appArmorProfile: \"unconfined\" inherited from spec.securityContext.appArmorProfile.type is not an allowed AppArmor profile; allowed: [runtime/default, localhost/x]",
                "spec.ephemeralContainers[0].securityContext.appArmorProfile: \"unconfined\" inherited from spec.securityContext.appArmorProfile.type is not an allowed AppArmor profile; allowed: [runtime/default, localhost/x]"
            ]
        );
        // An allowed Pod profile covers the containers without one; no containers, no check.
        let allowed_pod = json!({"spec": {"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}},
            "containers": [{"name": "a"}]}});
        assert!(run(&s, allowed_pod).is_empty());
        let empty =
            json!({"spec": {"securityContext": {"appArmorProfile": unconfined}, "containers": []}});
        assert!(run(&s, empty).is_empty());
    }

    #[test]
    fn pod_selinux_counts_only_where_inherited() {
        let s =
            spec(json!({"seLinux": {"rule": "MustRunAs", "seLinuxOptions": {"level": "s0:c1"}}}));
        let own = json!({"seLinuxOptions": {"level": "s0:c1"}});
        let overridden = json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}},
            "initContainers": [{"name": "i", "securityContext": own}],
            "containers": [{"name": "a", "securityContext": own}]}});
        assert!(run(&s, overridden).is_empty());
        let inherited = json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}},
            "containers": [{"name": "a", "securityContext": own}, {"name": "b"}]}});
        assert_eq!(
            run(&s, inherited),
            [
                "spec.securityContext.seLinuxOptions: \"::spc_t:\" is not allowed; seLinuxOptions must be \":::s0:c1\""
            ]
        );
    }

    #[test]
    fn pod_seccomp_is_judged_even_when_overridden() {
        // README: the Pod profile and each container profile must be listed.
        let s = spec(json!({"allowedSeccompProfiles": ["runtime/default"]}));
        let pod = json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}]}});
        assert_eq!(
            run(&s, pod),
            [
                "spec.securityContext.seccompProfile.type: \"unconfined\" is not an allowed seccomp profile; allowed: [runtime/default]"
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
