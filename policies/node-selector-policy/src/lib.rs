//! node-selector-policy: Pods carry the tenant's required node selector (merged on CREATE,
//! conflicts rejected), get default pairs with a per-namespace annotation override, and may
//! be kept from pinning themselves to nodes with `spec.nodeName` (README rules 1–7).

pub mod settings;

use std::collections::HashSet;

use policy_admission::Verdict;
use policy_admission::cluster::{GetRequest, HostCapabilities, Lookups};
use policy_admission::pod::PodView;
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::names::NameMap;
use policy_decode::{FieldPath, PolicyError};
use serde_json::{Value, json};
use tenancy_rules::class::skip_on_lookup_error;
use tenancy_rules::node_defaults::namespace_default;

pub use settings::{DefaultMode, Settings};

/// The policy.
pub struct NodeSelectorPolicy;

impl Policy for NodeSelectorPolicy {
    const NAME: &'static str = "node-selector-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(pod) = pod_target(request, Self::NAME, PodTarget::CreateAndUpdate)? else {
            return Ok(Verdict::accept());
        };
        let mut verdict = Verdict::accept();
        if pod.kind.is_template() {
            // Templates: conflicts with the required pairs and nodeName pinning; never mutated.
            let selector = pod.spec.get_string_map("nodeSelector")?;
            required_conflicts(&pod, &selector, settings, &mut verdict);
            forbid_node_name(&pod, request, settings, &mut verdict)?;
            return Ok(verdict);
        }
        if request.operation == Operation::Update {
            pod_update(request, &pod, settings, &mut verdict)?;
            return Ok(verdict);
        }
        pod_create(request, &pod, settings, lookups, &mut verdict)?;
        Ok(verdict)
    }
}

fn selector_path(pod: &PodView<'_>) -> FieldPath {
    pod.spec.path.field("nodeSelector")
}

/// Rule 1, conflicts only: a Pod value different from a required pair.
fn required_conflicts(
    pod: &PodView<'_>,
    selector: &[(&str, &str)],
    settings: &Settings,
    verdict: &mut Verdict,
) {
    for (key, value) in selector {
        if let Some(required) = settings.required_node_selector.get(key)
            && required != *value
        {
            verdict.violation(
                &selector_path(pod).key(key),
                format!("{value:?} conflicts with the required node selector {key}={required}"),
            );
        }
    }
}

/// Rule 4: `spec.nodeName` pinning, unless the requester is a node (mirror Pods) or this is
/// the audit of an existing Pod, which the scheduler placed (rule 7). Returns the node name
/// when it is set and allowed.
fn forbid_node_name<'a>(
    pod: &PodView<'a>,
    request: &AdmissionRequest,
    settings: &Settings,
    verdict: &mut Verdict,
) -> Result<Option<&'a str>, PolicyError> {
    let Some(node) = pod.spec.get_str("nodeName")?.filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    let scheduled = request.is_audit() && !pod.kind.is_template();
    if settings.forbid_node_name && !scheduled && !request.user_info.groups.contains("system:nodes")
    {
        verdict.violation(
            &pod.spec.path.field("nodeName"),
            format!("{node:?} pins the Pod to a node; spec.nodeName is not allowed here (let the scheduler place Pods)"),
        );
        return Ok(None);
    }
    Ok(Some(node))
}

/// Pod CREATE: rules 1–5 — required pairs merged (conflicts refused), defaults added,
/// `spec.nodeName` pinning judged; the pairs are written only when nothing is violated.
fn pod_create(
    request: &AdmissionRequest,
    pod: &PodView<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let submitted = pod.spec.get_string_map("nodeSelector")?;
    // Rule 1: required pairs.
    required_conflicts(pod, &submitted, settings, verdict);
    // Rules 2 and 3: defaults never override the Pod's or the required values.
    let wanted = match settings.default_mode {
        DefaultMode::MissingKeys => true,
        DefaultMode::WhenEmpty => submitted.is_empty(),
    };
    let defaults = match wanted {
        true => defaults(request, settings, lookups, verdict)?,
        false => None,
    };
    let mut present: HashSet<&str> = submitted.iter().map(|(k, _)| *k).collect();
    let mut added: Vec<(&str, &str)> = Vec::new();
    let required = settings.required_node_selector.iter();
    for (key, value) in required.chain(defaults.iter().flat_map(NameMap::iter)) {
        if present.insert(key) {
            added.push((key, value));
        }
    }
    // Rules 4 and 5: nodeName pinning bypasses the scheduler; check the Node.
    if let Some(node) = forbid_node_name(pod, request, settings, verdict)?
        && !settings.required_node_selector.is_empty()
    {
        node_has_required_labels(pod, node, settings, lookups, verdict)?;
    }
    if verdict.is_clean() && !added.is_empty() {
        for (key, value) in added {
            verdict.edit_set(&["spec", "nodeSelector"], key, json!(value));
        }
    }
    Ok(())
}

/// Rule 5: a Pod pinned with `spec.nodeName` while required pairs are configured — the Node
/// must exist and carry every required pair as a label.
fn node_has_required_labels(
    pod: &PodView<'_>,
    node: &str,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let path = pod.spec.path.field("nodeName");
    let request = GetRequest::cluster_scoped("v1", "Node", node);
    let checked = lookups.read(&request, |found| {
        let labels = found.labels()?;
        for (key, value) in settings.required_node_selector.iter() {
            let label = labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            if label != Some(value) {
                let has = match label {
                    Some(l) => format!("{key}={l}"),
                    None => format!("no {key} label"),
                };
                verdict.violation(
                    &path,
                    format!(
                        "Node {node:?} lacks the required node selector {key}={value} (it has {has})"
                    ),
                );
            }
        }
        Ok(())
    });
    match checked {
        Err(e) => return skip_on_lookup_error(e, &path, settings.on_lookup_error, verdict),
        Ok(None) => verdict.violation(&path, format!("Node {node:?} does not exist")),
        Ok(Some(())) => {}
    }
    Ok(())
}

/// The default pairs (core `node_defaults::namespace_default`); `None` when the rule is
/// skipped.
fn defaults(
    request: &AdmissionRequest,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<Option<NameMap>, PolicyError> {
    namespace_default(
        request,
        &settings.default_node_selector,
        settings.default_node_selector_annotation.as_deref(),
        settings.on_lookup_error,
        lookups,
        verdict,
    )
}

/// Pod UPDATE (scheduling-gated Pods may add nodeSelector entries): added or changed entries
/// must not conflict with the required pairs; nothing is mutated.
fn pod_update(
    request: &AdmissionRequest,
    pod: &PodView<'_>,
    settings: &Settings,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let old = request.old_object()?;
    // The old pairs are looked up in the old object's map: one pass over each selector.
    let old_selector = match old.get_object("spec")? {
        Some(spec) => {
            spec.get_string_map("nodeSelector")?;
            spec.get_object("nodeSelector")?
                .and_then(|m| m.value.as_object())
        }
        None => None,
    };
    let new_selector = pod.spec.get_string_map("nodeSelector")?;
    let changed: Vec<(&str, &str)> = new_selector
        .into_iter()
        .filter(|(k, v)| old_selector.and_then(|m| m.get(*k)).and_then(Value::as_str) != Some(*v))
        .collect();
    required_conflicts(pod, &changed, settings, verdict);
    Ok(())
}

policy_admission::export_policy!(NodeSelectorPolicy);

policy_admission::robustness_tests!(
    NodeSelectorPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"requiredNodeSelector": {"pool": "renewable"},
            "defaultNodeSelector": {"appuio.io/node-class": "flex"},
            "defaultNodeSelectorAnnotation": "appuio.io/default-node-selector"}),
        strings: &[
            "pool",
            "renewable",
            "appuio.io/node-class",
            "flex",
            "nodeName",
            "nodeSelector",
            "system:nodes"
        ],
        reads: &["v1/Namespace", "v1/Node"],
        mutating: true,
        cluster: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
                "annotations": {"appuio.io/default-node-selector": "zone=a"}}}),
            serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"pool": "renewable"}}}),
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};

    fn run(spec: Value, settings: Value, objects: Vec<Value>) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
                "namespace": "solar-dev", "userInfo": {"username": "alice"},
                "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}},
            "settings": settings
        });
        evaluate::<NodeSelectorPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::new(objects),
        )
    }

    /// README rule 7: in an audit the scheduler's nodeName is judged by its Node, not refused.
    #[test]
    fn an_audited_pod_is_judged_by_the_node_it_runs_on() {
        let audit = |labels: Value| {
            let payload = json!({
                "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
                    "namespace": "solar-dev", "userInfo": {},
                    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"nodeName": "worker01", "nodeSelector": {"pool": "renewable"}}}},
                "settings": {"requiredNodeSelector": {"pool": "renewable"}, "forbidNodeName": true}
            });
            let node = json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": "worker01", "labels": labels}});
            evaluate::<NodeSelectorPolicy>(
                &serde_json::to_vec(&payload).unwrap(),
                &mut Objects::new(vec![node]),
            )
        };
        assert!(audit(json!({"pool": "renewable"})).accepted);
        let r = audit(json!({"pool": "shared"}));
        assert!(!r.accepted);
        assert!(
            r.message
                .unwrap()
                .contains("lacks the required node selector")
        );
        let created = run(
            json!({"nodeName": "worker01", "nodeSelector": {"pool": "renewable"}}),
            json!({"requiredNodeSelector": {"pool": "renewable"}, "forbidNodeName": true}),
            vec![],
        );
        assert!(created.message.unwrap().contains("pins the Pod to a node"));
    }

    /// Found by `make fuzz`: a DELETE is accepted before the settings are read, even settings
    /// `validate_settings` refuses (which policy-server never hands over).
    #[test]
    fn delete_with_refused_settings_keeps_the_contract() {
        let payload = r#"{"request": {"kind": {"group": "", "kind": "Pod", "version": "v1"}, "namespace": "solar-dev", "operation": "DELETE", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app", "namespace": "solar-dev"}, "spec": {"nodeName": "worker01"}}}, "settings": {"defaultNodeSelector": {"appuio.io/node-cl@ass": "flex"}, "forbidNodeName": true, "requiredNodeSelector": {"pool": "renewable"}}}"#;
        policy_admission::testing::check_payload::<NodeSelectorPolicy>(payload.as_bytes()).unwrap();
        let r = evaluate::<NodeSelectorPolicy>(payload.as_bytes(), &mut Objects::default());
        assert!(r.accepted && r.code.is_none() && r.mutated_object.is_none());
    }

    /// Found by `make fuzz`: a label value `validate_settings` refuses is not checked again by
    /// `validate` (policy-server never hands such settings over); the request is judged.
    #[test]
    fn settings_refused_only_by_a_syntax_check_are_judged() {
        let payload = r#"{"request": {"kind": {"group": "", "kind": "Pod", "version": "v1"}, "namespace": "solar-dev", "operation": "CREATE", "userInfo": {"username": "alice"}, "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app", "namespace": "solar-dev"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}, "settings": {"defaultMode": "whenEmpty", "defaultNodeSelector": {"appuio.io/node-class": "flex"}, "requiredNodeSelector": {"pool": "re(ewable"}}}"#;
        policy_admission::testing::check_payload::<NodeSelectorPolicy>(payload.as_bytes()).unwrap();
    }

    fn ns(annotation: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "solar-dev",
            "annotations": {"appuio.io/default-node-selector": annotation}}})
    }

    fn settings() -> Value {
        json!({"requiredNodeSelector": {"pool": "renewable"},
            "defaultNodeSelector": {"appuio.io/node-class": "flex"},
            "defaultNodeSelectorAnnotation": "appuio.io/default-node-selector"})
    }

    #[test]
    fn required_and_defaults_are_merged() {
        let r = run(json!({"containers": []}), settings(), vec![ns("")]);
        assert!(r.accepted, "{:?}", r.message);
        assert_eq!(
            r.mutated_object.unwrap()["spec"]["nodeSelector"],
            json!({"pool": "renewable", "appuio.io/node-class": "flex"})
        );
    }

    #[test]
    fn annotation_replaces_defaults() {
        let r = run(
            json!({"containers": [], "nodeSelector": {"appuio.io/node-class": "flex"}}),
            settings(),
            vec![ns("appuio.io/node-class=plus, zone=a")],
        );
        assert_eq!(
            r.mutated_object.unwrap()["spec"]["nodeSelector"],
            json!({"appuio.io/node-class": "flex", "pool": "renewable", "zone": "a"})
        );
        let r = run(json!({"containers": []}), settings(), vec![ns("bad")]);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "namespace \"solar-dev\" annotation appuio.io/default-node-selector: invalid selector \"bad\" (expected key=value[,key=value]): element [0] \"bad\" has no \"=\""
            )
        );
    }

    #[test]
    fn conflicts_are_rejected() {
        let r = run(
            json!({"containers": [], "nodeSelector": {"pool": "shared"}}),
            settings(),
            vec![ns("")],
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.nodeSelector[\"pool\"]: \"shared\" conflicts with the required node selector pool=renewable"
            )
        );
    }

    #[test]
    fn update_judges_only_new_or_changed_pairs() {
        let update = |old: Value, new: Value| {
            let pod = |sel: Value| {
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [], "schedulingGates": [{"name": "g"}], "nodeSelector": sel}})
            };
            let payload = json!({
                "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "UPDATE",
                    "namespace": "solar-dev", "userInfo": {"username": "alice"},
                    "object": pod(new), "oldObject": pod(old)},
                "settings": {"requiredNodeSelector": {"pool": "renewable", "zone": "a"}}
            });
            evaluate::<NodeSelectorPolicy>(
                &serde_json::to_vec(&payload).unwrap(),
                &mut Objects::default(),
            )
        };
        // an old conflict left alone is not judged again
        let r = update(
            json!({"pool": "shared"}),
            json!({"pool": "shared", "x": "1"}),
        );
        assert!(r.accepted, "{:?}", r.message);
        // changed and added conflicting pairs are, in document order
        let r = update(
            json!({"pool": "shared", "zone": "a"}),
            json!({"zone": "b", "pool": "other", "x": "1"}),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.nodeSelector[\"zone\"]: \"b\" conflicts with the required node selector zone=a; \
                 spec.nodeSelector[\"pool\"]: \"other\" conflicts with the required node selector pool=renewable"
            )
        );
        // a malformed old selector is still refused
        let r = update(json!({"pool": 1}), json!({"pool": "renewable"}));
        assert_eq!(r.code, Some(400), "{:?}", r.message);
    }
}
