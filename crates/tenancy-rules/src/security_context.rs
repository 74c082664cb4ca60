//! Security contexts of a pod spec: the Pod's `securityContext`, each container's, and the
//! *effective* value of a field (the container's, else the Pod's), read as raw JSON with
//! paths so that fields newer than any typed model (`appArmorProfile`, `hostUsers`) are never
//! dropped. Seccomp and AppArmor profiles are rendered in annotation syntax
//! (`runtime/default`, `localhost/<path>`, `unconfined`).

use serde_json::Value;

use policy_admission::pod::{Container, PodView};
use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;

/// Pod annotation holding the Pod's seccomp profile (deprecated, still honoured).
pub const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
/// Prefix of the per-container seccomp annotation (`<prefix><container name>`).
pub const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str =
    "container.seccomp.security.alpha.kubernetes.io/";
/// Prefix of the per-container AppArmor annotation (`<prefix><container name>`).
pub const APPARMOR_CONTAINER_ANNOTATION_PREFIX: &str =
    "container.apparmor.security.beta.kubernetes.io/";

/// Where an effective value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The container's own `securityContext`.
    Container,
    /// The Pod's `securityContext`, inherited by the container.
    Pod,
}

/// A field value as it applies to one container, with the path where it is written.
#[derive(Clone, Debug)]
pub struct Effective<'a, T> {
    /// The value.
    pub value: T,
    /// Its path (`spec.containers[0].securityContext.runAsUser` or `spec.securityContext.runAsUser`).
    pub path: FieldPath,
    /// Whether it is the container's own value or the Pod's.
    pub source: Source,
    /// The raw JSON.
    pub raw: &'a Value,
}

/// The Pod's `securityContext` (`None` when absent or `null`).
pub fn pod_context<'a>(spec: &At<'a>) -> Result<Option<At<'a>>, PolicyError> {
    spec.get_object("securityContext")
}

/// A container's `securityContext` (`None` when absent or `null`).
pub fn container_context<'a>(container: &Container<'a>) -> Result<Option<At<'a>>, PolicyError> {
    container.node.get_object("securityContext")
}

/// The effective raw field `name`: the container's if set, else the Pod's.
pub fn effective<'a>(
    container: Option<&At<'a>>,
    pod: Option<&At<'a>>,
    name: &str,
) -> Result<Option<Effective<'a, &'a Value>>, PolicyError> {
    for (ctx, source) in [(container, Source::Container), (pod, Source::Pod)] {
        if let Some(ctx) = ctx
            && let Some(at) = ctx.get(name)?
        {
            return Ok(Some(Effective {
                value: at.value,
                path: at.path,
                source,
                raw: at.value,
            }));
        }
    }
    Ok(None)
}

/// The effective integer field `name` (`runAsUser`, `runAsGroup`); wrong types are malformed.
pub fn effective_i64<'a>(
    container: Option<&At<'a>>,
    pod: Option<&At<'a>>,
    name: &str,
) -> Result<Option<Effective<'a, i64>>, PolicyError> {
    match effective(container, pod, name)? {
        None => Ok(None),
        Some(e) => match e.value.as_i64() {
            Some(v) => Ok(Some(Effective {
                value: v,
                path: e.path,
                source: e.source,
                raw: e.raw,
            })),
            None => Err(PolicyError::malformed(&e.path, "expected an integer")),
        },
    }
}

/// The effective boolean field `name` (`runAsNonRoot`); wrong types are malformed.
pub fn effective_bool<'a>(
    container: Option<&At<'a>>,
    pod: Option<&At<'a>>,
    name: &str,
) -> Result<Option<Effective<'a, bool>>, PolicyError> {
    match effective(container, pod, name)? {
        None => Ok(None),
        Some(e) => match e.value.as_bool() {
            Some(v) => Ok(Some(Effective {
                value: v,
                path: e.path,
                source: e.source,
                raw: e.raw,
            })),
            None => Err(PolicyError::malformed(&e.path, "expected a boolean")),
        },
    }
}

/// A `seccompProfile` / `appArmorProfile` object in annotation syntax: `RuntimeDefault` →
/// `runtime/default`, `Unconfined` → `unconfined`, `Localhost` + path → `localhost/<path>`;
/// another type is returned as written.
pub fn profile_field_syntax(profile: &At<'_>) -> Result<String, PolicyError> {
    let ty = profile.get_str("type")?.unwrap_or("");
    Ok(match ty {
        "RuntimeDefault" => "runtime/default".to_owned(),
        "Unconfined" => "unconfined".to_owned(),
        "Localhost" => format!(
            "localhost/{}",
            profile.get_str("localhostProfile")?.unwrap_or("")
        ),
        other => other.to_owned(),
    })
}

/// The field object (`{type, localhostProfile}`) for a profile in annotation syntax; `None`
/// for a value that has no field form.
pub fn profile_field_from_syntax(syntax: &str) -> Option<Value> {
    match syntax {
        "runtime/default" | "docker/default" => Some(serde_json::json!({"type": "RuntimeDefault"})),
        "unconfined" => Some(serde_json::json!({"type": "Unconfined"})),
        s => s
            .strip_prefix("localhost/")
            .filter(|p| !p.is_empty())
            .map(|p| serde_json::json!({"type": "Localhost", "localhostProfile": p})),
    }
}

/// A profile as it applies somewhere, in annotation syntax, with its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileRef {
    /// The profile (`runtime/default`, `localhost/x`, `unconfined`, ...).
    pub syntax: String,
    /// Where it is written (annotation key path or field path).
    pub path: FieldPath,
}

/// The Pod's own seccomp profile: annotation `seccomp.security.alpha.kubernetes.io/pod`,
/// else `spec.securityContext.seccompProfile`.
pub fn pod_seccomp(pod: &PodView<'_>) -> Result<Option<ProfileRef>, PolicyError> {
    if let Some(meta) = &pod.metadata {
        for (k, v) in meta.get_string_map("annotations")? {
            if k == SECCOMP_POD_ANNOTATION {
                return Ok(Some(ProfileRef {
                    syntax: v.to_owned(),
                    path: meta.path.field("annotations").key(k),
                }));
            }
        }
    }
    field_profile(pod_context(&pod.spec)?.as_ref(), "seccompProfile")
}

/// A container's own seccomp profile (annotation, else its field); `None` when it inherits
/// the Pod's.
pub fn container_seccomp(
    pod: &PodView<'_>,
    container: &Container<'_>,
) -> Result<Option<ProfileRef>, PolicyError> {
    if let Some(found) = container_annotation(pod, container, SECCOMP_CONTAINER_ANNOTATION_PREFIX)?
    {
        return Ok(Some(found));
    }
    field_profile(container_context(container)?.as_ref(), "seccompProfile")
}

/// A container's own AppArmor profile (annotation, else its `appArmorProfile` field); `None`
/// when it inherits the Pod's.
pub fn container_apparmor(
    pod: &PodView<'_>,
    container: &Container<'_>,
) -> Result<Option<ProfileRef>, PolicyError> {
    if let Some(found) = container_annotation(pod, container, APPARMOR_CONTAINER_ANNOTATION_PREFIX)?
    {
        return Ok(Some(found));
    }
    field_profile(container_context(container)?.as_ref(), "appArmorProfile")
}

/// The Pod's `spec.securityContext.appArmorProfile`, in annotation syntax.
pub fn pod_apparmor(pod: &PodView<'_>) -> Result<Option<ProfileRef>, PolicyError> {
    field_profile(pod_context(&pod.spec)?.as_ref(), "appArmorProfile")
}

fn field_profile(ctx: Option<&At<'_>>, field: &str) -> Result<Option<ProfileRef>, PolicyError> {
    let Some(ctx) = ctx else { return Ok(None) };
    let Some(profile) = ctx.get_object(field)? else {
        return Ok(None);
    };
    Ok(Some(ProfileRef {
        syntax: profile_field_syntax(&profile)?,
        path: profile.path.field("type"),
    }))
}

/// The Pod annotation `<prefix><container name>` (a per-container profile annotation).
fn container_annotation(
    pod: &PodView<'_>,
    container: &Container<'_>,
    prefix: &str,
) -> Result<Option<ProfileRef>, PolicyError> {
    let (Some(meta), Some(name)) = (&pod.metadata, container.node.get_str("name")?) else {
        return Ok(None);
    };
    let Some(annotations) = meta.get_object("annotations")? else {
        return Ok(None);
    };
    // one map lookup per container, never a scan of every annotation
    let key = format!("{prefix}{name}");
    let path = annotations.path.key(&key);
    match annotations.value.get(&key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(syntax)) => Ok(Some(ProfileRef {
            syntax: syntax.clone(),
            path,
        })),
        Some(_) => Err(PolicyError::malformed(&path, "expected a string")),
    }
}

/// Whether the Pod declares `spec.os.name: windows`.
pub fn is_windows(spec: &At<'_>) -> Result<bool, PolicyError> {
    Ok(match spec.get_object("os")? {
        Some(os) => os.get_str("name")? == Some("windows"),
        None => false,
    })
}

/// Whether the Pod runs in a user namespace (`spec.hostUsers: false`).
pub fn in_user_namespace(spec: &At<'_>) -> Result<bool, PolicyError> {
    Ok(spec.get_bool("hostUsers")? == Some(false))
}

/// The volume source types of a volume: every non-null field other than `name`, in key
/// order. A volume has one source, but an object can carry several (the API server refuses
/// it only after admission), and each is judged: a policy reading only one would let
/// `{emptyDir: {}, hostPath: {...}}` pass as `emptyDir`. A volume without a source is an
/// `emptyDir` (the API server's default).
pub fn volume_sources<'a>(volume: &At<'a>) -> Result<Vec<&'a str>, PolicyError> {
    let obj = volume.object()?;
    let sources: Vec<&str> = obj
        .iter()
        .filter(|(k, v)| k.as_str() != "name" && !v.is_null())
        .map(|(k, _)| k.as_str())
        .collect();
    Ok(if sources.is_empty() {
        vec!["emptyDir"]
    } else {
        sources
    })
}

/// Checks the JSON types of every security-relevant field of a pod spec (Pod and container
/// security contexts, capabilities, host ports, volume mounts, volumes), so that a malformed
/// object is rejected (400, naming the field) whatever subset of fields a rule happens to
/// read.
pub fn check_shape(pod: &PodView<'_>) -> Result<(), PolicyError> {
    let spec = &pod.spec;
    for flag in ["hostNetwork", "hostPID", "hostIPC", "hostUsers"] {
        spec.get_bool(flag)?;
    }
    spec.get_str("runtimeClassName")?;
    spec.get_str("serviceAccountName")?;
    if let Some(meta) = &pod.metadata {
        meta.get_string_map("annotations")?;
    }
    if let Some(ctx) = pod_context(spec)? {
        check_pod_context_shape(&ctx)?;
    }
    for v in spec.get_list("volumes")? {
        v.get_str("name")?;
        volume_sources(&v)?;
    }
    for c in pod.containers()? {
        check_container_shape(&c)?;
    }
    Ok(())
}

/// The Pod security context: the common fields, `fsGroup`, `supplementalGroups`, sysctls.
fn check_pod_context_shape(ctx: &At<'_>) -> Result<(), PolicyError> {
    check_context_shape(ctx)?;
    ctx.get_i64("fsGroup")?;
    for g in ctx.get_list("supplementalGroups")? {
        if !g.value.is_i64() {
            return Err(PolicyError::malformed(&g.path, "expected an integer"));
        }
    }
    for s in ctx.get_list("sysctls")? {
        s.get_str("name")?;
    }
    Ok(())
}

/// One container: name, host ports, volume mounts and its security context.
fn check_container_shape(c: &Container<'_>) -> Result<(), PolicyError> {
    c.node.get_str("name")?;
    for port in c.node.get_list("ports")? {
        port.get_i64("hostPort")?;
    }
    for m in c.node.get_list("volumeMounts")? {
        m.get_str("name")?;
        m.get_bool("readOnly")?;
    }
    if let Some(ctx) = container_context(c)? {
        check_context_shape(&ctx)?;
        for f in [
            "privileged",
            "allowPrivilegeEscalation",
            "readOnlyRootFilesystem",
        ] {
            ctx.get_bool(f)?;
        }
        ctx.get_str("procMount")?;
        if let Some(caps) = ctx.get_object("capabilities")? {
            caps.get_str_list("add")?;
            caps.get_str_list("drop")?;
        }
    }
    Ok(())
}

/// The fields common to Pod and container security contexts: ids, SELinux, seccomp and
/// AppArmor profiles, Windows host process.
fn check_context_shape(ctx: &At<'_>) -> Result<(), PolicyError> {
    ctx.get_i64("runAsUser")?;
    ctx.get_i64("runAsGroup")?;
    ctx.get_bool("runAsNonRoot")?;
    if let Some(se) = ctx.get_object("seLinuxOptions")? {
        for f in ["user", "role", "type", "level"] {
            se.get_str(f)?;
        }
    }
    check_profile_shape(ctx, "seccompProfile")?;
    check_profile_shape(ctx, "appArmorProfile")?;
    if let Some(w) = ctx.get_object("windowsOptions")? {
        w.get_bool("hostProcess")?;
    }
    Ok(())
}

/// A seccomp or AppArmor profile object (`name`): `type` and `localhostProfile` strings.
fn check_profile_shape(ctx: &At<'_>, name: &str) -> Result<(), PolicyError> {
    if let Some(p) = ctx.get_object(name)? {
        p.get_str("type")?;
        p.get_str("localhostProfile")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::pod::PodKind;
    use serde_json::json;

    #[test]
    fn effective_values_prefer_the_container() {
        let obj = json!({"spec": {"securityContext": {"runAsUser": 5, "runAsNonRoot": true},
            "containers": [{"name": "a", "securityContext": {"runAsUser": 0}}, {"name": "b"}]}});
        let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
        let pod = pod_context(&view.spec).unwrap();
        let cs = view.containers().unwrap();
        let a = container_context(&cs[0]).unwrap();
        let e = effective_i64(a.as_ref(), pod.as_ref(), "runAsUser")
            .unwrap()
            .unwrap();
        assert_eq!((e.value, e.source), (0, Source::Container));
        assert_eq!(
            e.path.to_string(),
            "spec.containers[0].securityContext.runAsUser"
        );
        let b = container_context(&cs[1]).unwrap();
        let e = effective_i64(b.as_ref(), pod.as_ref(), "runAsUser")
            .unwrap()
            .unwrap();
        assert_eq!((e.value, e.source), (5, Source::Pod));
        assert!(
            effective_bool(b.as_ref(), pod.as_ref(), "runAsNonRoot")
                .unwrap()
                .unwrap()
                .value
        );
        assert!(
            effective_i64(b.as_ref(), None, "runAsUser")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn wrong_types_are_malformed() {
        let obj = json!({"spec": {"securityContext": {"runAsUser": "0"}, "containers": []}});
        let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
        let pod = pod_context(&view.spec).unwrap();
        let err = effective_i64(None, pod.as_ref(), "runAsUser").unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.securityContext.runAsUser: expected an integer"
        );
    }

    #[test]
    fn seccomp_annotation_wins_over_field() {
        let obj = json!({"metadata": {"annotations": {
                "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                "container.seccomp.security.alpha.kubernetes.io/a": "localhost/x"}},
            "spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}}, {"name": "c"}]}});
        let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
        assert_eq!(pod_seccomp(&view).unwrap().unwrap().syntax, "unconfined");
        let cs = view.containers().unwrap();
        let a = container_seccomp(&view, &cs[0]).unwrap().unwrap();
        assert_eq!(a.syntax, "localhost/x");
        assert_eq!(
            a.path.to_string(),
            r#"metadata.annotations["container.seccomp.security.alpha.kubernetes.io/a"]"#
        );
        let b = container_seccomp(&view, &cs[1]).unwrap().unwrap();
        assert_eq!(b.syntax, "localhost/p.json");
        assert_eq!(
            b.path.to_string(),
            "spec.containers[1].securityContext.seccompProfile.type"
        );
        assert!(container_seccomp(&view, &cs[2]).unwrap().is_none());
    }

    #[test]
    fn apparmor_and_field_translation() {
        let obj = json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "runtime/default"}},
            "spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}, "containers": [{"name": "a"}, {"name": "b"}]}});
        let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
        let cs = view.containers().unwrap();
        assert_eq!(
            container_apparmor(&view, &cs[0]).unwrap().unwrap().syntax,
            "runtime/default"
        );
        assert!(container_apparmor(&view, &cs[1]).unwrap().is_none());
        assert_eq!(pod_apparmor(&view).unwrap().unwrap().syntax, "unconfined");
        assert_eq!(
            profile_field_from_syntax("localhost/p"),
            Some(json!({"type": "Localhost", "localhostProfile": "p"}))
        );
        assert_eq!(
            profile_field_from_syntax("docker/default"),
            Some(json!({"type": "RuntimeDefault"}))
        );
        assert_eq!(profile_field_from_syntax("localhost/"), None);
    }

    #[test]
    fn volume_types_and_pod_flags() {
        let sources = |v: Value| {
            volume_sources(&At::new(&v, FieldPath::empty()))
                .unwrap()
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(sources(json!({"name": "x"})), ["emptyDir"]);
        assert_eq!(sources(json!({"name": "x", "cephfs": {}})), ["cephfs"]);
        assert_eq!(
            sources(json!({"name": "x", "emptyDir": {}, "hostPath": {"path": "/"}, "nfs": null})),
            ["emptyDir", "hostPath"]
        );
        let s = json!({"os": {"name": "windows"}, "hostUsers": false});
        let at = At::new(&s, FieldPath::root("spec"));
        assert!(is_windows(&at).unwrap());
        assert!(in_user_namespace(&at).unwrap());
    }

    #[test]
    fn shape_errors_name_the_field() {
        let bad = [
            (
                json!({"spec": {"containers": [{"name": "a", "securityContext": {"runAsUser": "0"}}]}}),
                "spec.containers[0].securityContext.runAsUser: expected an integer",
            ),
            (
                json!({"spec": {"securityContext": {"supplementalGroups": [1, "2"]}, "containers": []}}),
                "spec.securityContext.supplementalGroups[1]: expected an integer",
            ),
            (
                json!({"spec": {"containers": [{"name": "a", "securityContext": {"capabilities": {"drop": "ALL"}}}]}}),
                "spec.containers[0].securityContext.capabilities.drop: expected a list",
            ),
            (
                json!({"spec": {"hostNetwork": "true", "containers": []}}),
                "spec.hostNetwork: expected a boolean",
            ),
            (
                json!({"spec": {"containers": [{"name": "a", "volumeMounts": [{"name": "v", "readOnly": "yes"}]}]}}),
                "spec.containers[0].volumeMounts[0].readOnly: expected a boolean",
            ),
        ];
        for (obj, msg) in bad {
            let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
            assert_eq!(check_shape(&view).unwrap_err().to_string(), msg);
        }
        let ok = json!({"spec": {"securityContext": {"runAsUser": 1, "sysctls": [{"name": "a", "value": "1"}]}, "containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["X"]}}}]}});
        assert!(check_shape(&PodView::read(&ok, PodKind::Pod).unwrap().unwrap()).is_ok());
    }
}
