//! pod-restriction-policy: the PodRestrictions design (README) — restrictions mirroring
//! the Pod's structure, bound to namespaces with Accept and Drop modes, judged on Pods, on
//! every built-in pod template and on registered custom resources.

pub mod binding;
pub mod combine;
pub mod fields;
pub mod jsonpath;
pub mod settings;

use std::collections::HashSet;

use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::pod::{PodKind, PodView, pod_spec_changed};
use policy_admission::policy::{Policy, unsupported_kind};
use policy_admission::request::{AdmissionRequest, Operation};
use policy_admission::{Mode, Verdict};
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError};
use serde_json::Value;

use crate::fields::Template;
pub use settings::Settings;

/// The policy.
pub struct PodRestrictionPolicy;

impl Policy for PodRestrictionPolicy {
    const NAME: &'static str = "pod-restriction-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn mode(settings: &Settings) -> Mode {
        settings.mode
    }

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let templates = match PodKind::of_request(request) {
            Some(kind) => pod_template(request, kind)?,
            None => {
                let cr = settings
                    .custom_resource(request)
                    .ok_or_else(|| unsupported_kind(Self::NAME, request))?;
                custom_resource_templates(request, cr)?
            }
        };
        if templates.is_empty() {
            return Ok(Verdict::accept());
        }
        combine::judge(settings, &templates, request.object_namespace()?, lookups)
    }
}

/// The template of a Pod or built-in workload (README rule 1); none when an UPDATE changed
/// no field the restrictions read (README rule 2) or the object holds no pod spec.
fn pod_template(
    request: &AdmissionRequest,
    kind: PodKind,
) -> Result<Vec<Template<'_>>, PolicyError> {
    let object = request.object()?;
    if request.operation == Operation::Update
        && !pod_fields_changed(request.old_object()?.value, object.value, kind)
    {
        return Ok(Vec::new());
    }
    Ok(PodView::read(object.value, kind)?
        .map(|view| template_of(&view))
        .into_iter()
        .collect())
}

/// Every pod template of a registered custom resource (README "Custom resources"); none
/// when an UPDATE left every resolved template as it was (README rule 2).
fn custom_resource_templates<'r>(
    request: &'r AdmissionRequest,
    cr: &settings::CustomResource,
) -> Result<Vec<Template<'r>>, PolicyError> {
    let object = request.object()?;
    let resolved = resolve(cr, object.value);
    if request.operation == Operation::Update {
        let old = request.old_object()?;
        let before: Vec<&Value> = resolve(cr, old.value).into_iter().map(|(_, v)| v).collect();
        let after: Vec<&Value> = resolved.iter().map(|(_, v)| *v).collect();
        if before == after {
            return Ok(Vec::new());
        }
    }
    resolved
        .into_iter()
        .map(|(path, value)| Template::read(value, path))
        .collect()
}

/// The template (or Pod metadata and spec) of a pod-bearing object.
fn template_of<'a>(view: &PodView<'a>) -> Template<'a> {
    let base = view
        .kind
        .template_path()
        .iter()
        .fold(FieldPath::empty(), |p, s| p.field(s));
    Template {
        metadata: view.metadata.clone(),
        metadata_path: base.field("metadata"),
        spec: At::new(view.spec.value, view.spec.path.clone()),
        is_template: view.kind.is_template(),
    }
}

/// Every pod template of a custom resource, in document order, de-duplicated by location
/// (two paths resolving to the same template judge it once).
fn resolve<'a>(cr: &settings::CustomResource, object: &'a Value) -> Vec<(FieldPath, &'a Value)> {
    let mut out: Vec<(FieldPath, &'a Value)> = Vec::new();
    let mut seen: HashSet<FieldPath> = HashSet::new();
    for path in &cr.paths {
        for (p, v) in path.resolve(object) {
            if seen.insert(p.clone()) {
                out.push((p, v));
            }
        }
    }
    out
}

/// Whether a field the restrictions read changed (README rule 2,
/// `docs/semantics.md#create-and-update`): for Pods the metadata name, labels, annotations
/// or the spec (bookkeeping never re-triggers); for workloads the pod template.
fn pod_fields_changed(old: &Value, new: &Value, kind: PodKind) -> bool {
    if kind.is_template() {
        return pod_spec_changed(old, new, kind);
    }
    // Compared in place: no copy of either (possibly large) spec.
    fn read<'v>(v: &'v Value, a: &str, b: Option<&str>) -> Option<&'v Value> {
        let x = v.get(a)?;
        match b {
            Some(b) => x.get(b),
            None => Some(x),
        }
    }
    ["name", "labels", "annotations"]
        .iter()
        .any(|f| read(old, "metadata", Some(f)) != read(new, "metadata", Some(f)))
        || read(old, "spec", None) != read(new, "spec", None)
}

policy_admission::export_policy!(PodRestrictionPolicy);

policy_admission::robustness_tests!(
    PodRestrictionPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"restrictions": [
            {"name": "restricted", "binding": {"namespaces": ["team-*"]}, "spec": {
                "metadata": {"labels": {"keyBlacklist": ["owner"]}, "name": {"regex": "a.*"}},
                "spec": {
                    "containers": [{"image": [{"registry": {"whitelist": ["docker.io"]}}, {"tag": {"forbidNil": true}}],
                        "imagePullPolicy": {"whitelist": ["Always"]},
                        "securityContext": {"privileged": {"require": false}, "runAsUser": {"ranges": [{"min": 1}]},
                            "capabilities": {"drop": {"requiredValues": ["ALL"]}}, "seccompProfileType": {"forbidNil": true},
                            "seLinuxOptions": {"type": {"blacklist": ["spc_t"]}}}}],
                    "securityContext": {"supplementalGroups": {"ranges": [{"min": 1}]}, "hostNetwork": {"require": false}},
                    "volumes": [{"volumeType": {"whitelist": ["emptyDir"]}}, {"hostPath": {"path": {"whitelist": ["/data"]}},
                        "mount": {"readOnly": {"require": true}}}]}}},
            {"name": "system", "binding": {"mode": "Accept", "namespaces": ["kube-*"]},
             "spec": {"metadata": {"labels": {"requiredKeys": ["k8s-app"]}}}},
            {"name": "selected", "binding": {"namespaceSelector": {"matchLabels": {"tier": "tenant"}}},
             "spec": {"spec": {"containers": [{"securityContext": {"privileged": {"require": false}}}]}}}
        ], "customResources": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "podTemplatePaths": ["$.spec.template", "$.spec.versions[*]['template']"]}]}),
        kinds: &[
            ("", "v1", "Pod"),
            ("apps", "v1", "Deployment"),
            ("batch", "v1", "CronJob"),
            ("", "v1", "ReplicationController"),
            ("argoproj.io", "v1alpha1", "Rollout"),
        ],
        subresources: &["ephemeralcontainers"],
        strings: &[
            "nginx",
            "gcr.io/x:1",
            "/data/../etc",
            "ALL",
            "RuntimeDefault",
            "spc_t",
            "k8s-app",
            "owner",
            "tier",
            "securityContext",
            "privileged",
            "image",
            "imagePullPolicy",
            "labels",
            "volumes",
            "hostPath",
            "runAsUser",
            "supplementalGroups",
            "template",
            "versions"
        ],
        reads: &["v1/Namespace"],
        objects: vec![
            serde_json::json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "r"},
            "spec": {"template": {"metadata": {"labels": {"app": "r"}}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}},
                "versions": [{"template": {"spec": {"containers": [{"name": "b", "image": "gcr.io/x:1"}]}}}]}})
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system",
            "labels": {"tier": "tenant"}}})
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::json;

    fn run(
        kind: Value,
        operation: &str,
        object: Value,
        old: Value,
        settings: Value,
    ) -> ValidationResponse {
        let payload = json!({
            "request": {"uid": "1", "kind": kind, "operation": operation, "userInfo": {"username": "alice"}, "namespace": "team-a",
                "object": object, "oldObject": old},
            "settings": settings
        });
        evaluate::<PodRestrictionPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    fn no_privileged() -> Value {
        json!({"restrictions": [{"name": "restricted", "spec": {"spec": {"containers": {"securityContext": {"privileged": {"require": false}}}}}}],
            "customResources": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "podTemplatePaths": ["$.spec.template"]}]})
    }

    fn privileged_spec() -> Value {
        json!({"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]})
    }

    #[test]
    fn pods_workloads_and_custom_resources() {
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        let r = run(
            pod.clone(),
            "CREATE",
            json!({"metadata": {"name": "p"}, "spec": privileged_spec()}),
            Value::Null,
            no_privileged(),
        );
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "restriction \"restricted\" (Drop): spec.containers[0].securityContext.privileged: true, required false"
            )
        );
        let rollout = json!({"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout"});
        let r = run(
            rollout,
            "CREATE",
            json!({"spec": {"template": {"spec": privileged_spec()}}}),
            Value::Null,
            no_privileged(),
        );
        assert!(
            r.message
                .unwrap()
                .contains("spec.template.spec.containers[0].securityContext.privileged")
        );
        let other = json!({"group": "argoproj.io", "version": "v1alpha1", "kind": "Workflow"});
        let r = run(other, "CREATE", json!({}), Value::Null, no_privileged());
        assert_eq!(r.code, Some(400));
        assert_eq!(
            r.message.as_deref(),
            Some("pod-restriction-policy does not handle argoproj.io/v1alpha1 Workflow")
        );
    }

    #[test]
    fn updates_are_judged_only_when_read_fields_change() {
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        let old = json!({"metadata": {"name": "p"}, "spec": privileged_spec()});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["x"]);
        assert!(
            run(
                pod.clone(),
                "UPDATE",
                new.clone(),
                old.clone(),
                no_privileged()
            )
            .accepted
        );
        new["metadata"]["labels"] = json!({"a": "b"});
        assert!(!run(pod, "UPDATE", new, old, no_privileged()).accepted);
    }

    #[test]
    fn warn_mode_accepts_with_warnings() {
        let mut s = no_privileged();
        s["mode"] = json!("warn");
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        let r = run(
            pod,
            "CREATE",
            json!({"spec": privileged_spec()}),
            Value::Null,
            s,
        );
        assert!(r.accepted);
        assert_eq!(r.warnings.unwrap().len(), 1);
    }
}

#[cfg(test)]
mod jsonpath_robustness {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary JSONPath text never panics the parser, nor resolving what it parsed.
        #[test]
        fn arbitrary_jsonpaths_never_panic(
            text in "[$.\\[\\]'\"*a-z0-9?@ -]{0,20}",
            doc in policy_admission::testing::arb_json(policy_admission::testing::POD_KEYS, &["x"]),
        ) {
            if let Ok(p) = crate::jsonpath::JsonPath::parse(&text) {
                let _ = p.resolve(&doc);
            }
        }
    }
}
