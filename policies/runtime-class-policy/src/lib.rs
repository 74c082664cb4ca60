//! runtime-class-policy: Pods and pod templates may name only allowed RuntimeClasses; a Pod
//! without class gets the tenant default with the class's overhead and scheduling, as the
//! built-in RuntimeClass plugin would have written them (README rules 1–3).

use kube_values::quantity::Quantity;
use kube_values::toleration::Toleration;
use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::json::{At, canonical_text};
use policy_decode::{FieldPath, PolicyError};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use tenancy_rules::class::{ClassKind, ClassPolicySettings, DefaultClass, named_in, record};

/// The policy's settings: a class allow-list and `onLookupError`.
pub type Settings = ClassPolicySettings;

/// The policy.
pub struct RuntimeClassPolicy;

fn runtime_class() -> ClassKind {
    ClassKind::new("node.k8s.io/v1", "RuntimeClass")
}

impl Policy for RuntimeClassPolicy {
    const NAME: &'static str = "runtime-class-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(pod) = pod_target(request, Self::NAME, PodTarget::CreateOnly)? else {
            return Ok(Verdict::accept());
        };
        let kind = runtime_class();
        let (path, name) = named_in(&pod.spec, "runtimeClassName")?;
        let on_error = settings.on_lookup_error;
        let mut verdict = Verdict::accept();
        // Rule 3: a named class is judged (the selector only when configured).
        if let Some(name) = name {
            record(
                settings.classes.judge(&kind, name, lookups),
                &path,
                on_error,
                &mut verdict,
            )?;
            return Ok(verdict);
        }
        // Rule 2 (and templates: never mutated, an absent class is accepted).
        let Some(default) = settings.classes.default() else {
            return Ok(verdict);
        };
        if pod.kind.is_template() {
            return Ok(verdict);
        }
        // Rule 1: write the default with what the RuntimeClass plugin would have added
        // (edits of the request's object, applied only if no violation is found).
        let writer = DefaultClass {
            kind: &kind,
            name: default,
            field: "runtimeClassName",
        };
        writer.write(
            &path,
            on_error,
            lookups,
            &mut verdict,
            |class| class.read(Brings::read),
            |brings, verdict| apply_class(&pod.spec, default, &brings, verdict),
        )?;
        Ok(verdict)
    }
}

/// Class tolerations compared one by one with the Pod's; more are looked up in a set.
const FEW_TOLERATIONS: usize = 4;

/// What a RuntimeClass brings to a Pod, read strictly from the class object (a field of the
/// wrong shape is a failed lookup, `docs/semantics.md#lookups`): `overhead.podFixed` (every
/// value a quantity), `scheduling.nodeSelector` (a map of strings) and
/// `scheduling.tolerations` (each a toleration).
struct Brings {
    overhead: Option<Value>,
    node_selector: Vec<(String, String)>,
    tolerations: Vec<Value>,
}

impl Brings {
    fn read(class: At<'_>) -> Result<Self, PolicyError> {
        let overhead = match class.get_object("overhead")? {
            Some(o) => o.get_object("podFixed")?,
            None => None,
        };
        if let Some(o) = &overhead {
            for (key, value) in o.object()? {
                Quantity::from_at(&At::new(value, o.path.key(key)))?;
            }
        }
        let mut brings = Brings {
            overhead: overhead.map(|o| o.value.clone()),
            node_selector: Vec::new(),
            tolerations: Vec::new(),
        };
        if let Some(scheduling) = class.get_object("scheduling")? {
            Toleration::read_all(&scheduling)?;
            for toleration in scheduling.get_list("tolerations")? {
                toleration.get_i64("tolerationSeconds")?;
                brings.tolerations.push(toleration.value.clone());
            }
            brings.node_selector = scheduling
                .get_string_map("nodeSelector")?
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        }
        Ok(brings)
    }
}

/// Copies the class's `overhead.podFixed`, merges `scheduling.nodeSelector` and appends the
/// missing `scheduling.tolerations`; conflicts become violations.
fn apply_class(
    spec: &At<'_>,
    name: &str,
    brings: &Brings,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let overhead = brings
        .overhead
        .as_ref()
        .map(|o| At::new(o, FieldPath::root("overhead").field("podFixed")));
    apply_overhead(spec, name, overhead.as_ref(), verdict)?;
    apply_node_selector(spec, name, &brings.node_selector, verdict)?;
    append_tolerations(spec, &brings.tolerations, verdict)
}

/// README rule 1, overhead: the class's `overhead.podFixed` is copied into a Pod without
/// overhead; a Pod's own overhead must equal it (quantities compared by value).
fn apply_overhead(
    spec: &At<'_>,
    name: &str,
    class_overhead: Option<&At<'_>>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let pod_overhead = spec.get_object("overhead")?;
    let overhead_path = spec.path.field("overhead");
    match (class_overhead, pod_overhead) {
        (Some(c), None) => verdict.edit_set(&["spec"], "overhead", c.value.clone()),
        (Some(c), Some(p)) => {
            if !same_quantities(c, &p)? {
                verdict.violation(
                    &overhead_path,
                    format!(
                        "{} differs from RuntimeClass {name:?} overhead.podFixed {}",
                        describe_map(&p)?,
                        describe_map(c)?
                    ),
                );
            }
        }
        (None, Some(p)) => verdict.violation(
            &overhead_path,
            format!(
                "{} is set, but RuntimeClass {name:?} defines no overhead.podFixed",
                describe_map(&p)?
            ),
        ),
        (None, None) => {}
    }
    Ok(())
}

/// README rule 1, node selector: each pair of the class's `scheduling.nodeSelector` is added
/// when the Pod lacks the key; a different value is a conflict.
fn apply_node_selector(
    spec: &At<'_>,
    name: &str,
    class_selector: &[(String, String)],
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    // Validated as a string map, then looked up in the Pod's own map (no scan per key).
    spec.get_string_map("nodeSelector")?;
    let pod_selector = spec
        .get_object("nodeSelector")?
        .and_then(|m| m.value.as_object());
    let selector_path = spec.path.field("nodeSelector");
    for (key, value) in class_selector {
        match pod_selector
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
        {
            Some(found) if found == value.as_str() => {}
            Some(found) => verdict.violation(
                &selector_path.key(key),
                format!("{found:?} conflicts with RuntimeClass {name:?} scheduling.nodeSelector {key}={value}"),
            ),
            None => verdict.edit_set(&["spec", "nodeSelector"], key, json!(value)),
        }
    }
    Ok(())
}

/// README rule 1, tolerations: the class's `scheduling.tolerations` not already present in
/// the Pod (deep equality) are appended, each once.
fn append_tolerations(
    spec: &At<'_>,
    class_tolerations: &[Value],
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    if class_tolerations.is_empty() {
        return Ok(());
    }
    // A few class tolerations are compared with the Pod's; more are looked up in a set of
    // the Pod's (each by a text equal for equal JSON values), read once.
    let pod_tolerations = spec.get_list("tolerations")?;
    if class_tolerations.len() <= FEW_TOLERATIONS {
        let mut added: Vec<&Value> = Vec::new();
        for toleration in class_tolerations {
            let present = pod_tolerations.iter().any(|t| t.value == toleration)
                || added.contains(&toleration);
            if !present {
                added.push(toleration);
                verdict.edit_push(&["spec"], "tolerations", toleration.clone());
            }
        }
        return Ok(());
    }
    let mut present: HashSet<String> = pod_tolerations
        .iter()
        .map(|t| canonical_text(t.value))
        .collect();
    for toleration in class_tolerations {
        if present.insert(canonical_text(toleration)) {
            verdict.edit_push(&["spec"], "tolerations", toleration.clone());
        }
    }
    Ok(())
}

fn quantities(map: &At<'_>) -> Result<Map<String, Value>, PolicyError> {
    Ok(map.object()?.clone())
}

/// Whether two resource maps hold the same resources with equal quantities.
fn same_quantities(a: &At<'_>, b: &At<'_>) -> Result<bool, PolicyError> {
    let (a_map, b_map) = (quantities(a)?, quantities(b)?);
    if a_map.len() != b_map.len() {
        return Ok(false);
    }
    for (key, av) in &a_map {
        let Some(bv) = b_map.get(key) else {
            return Ok(false);
        };
        let qa = Quantity::from_at(&At::new(av, a.path.key(key)))?;
        let qb = Quantity::from_at(&At::new(bv, b.path.key(key)))?;
        if qa.nanos() != qb.nanos() {
            return Ok(false);
        }
    }
    Ok(true)
}

fn describe_map(map: &At<'_>) -> Result<String, PolicyError> {
    let parts: Vec<String> = map
        .object()?
        .iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) => format!("{k}={s}"),
            None => format!("{k}={v}"),
        })
        .collect();
    Ok(format!("{{{}}}", parts.join(", ")))
}

policy_admission::export_policy!(RuntimeClassPolicy);

policy_admission::robustness_tests!(
    RuntimeClassPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"allowed": ["runc"], "allowedRegex": "kata-.*", "selector": {"matchLabels": {"sandbox": "true"}}, "default": "gvisor"}),
        strings: &[
            "gvisor",
            "runc",
            "kata",
            "sandbox",
            "overhead",
            "podFixed",
            "scheduling",
            "runtimeClassName",
            "nodeSelector",
            "tolerations"
        ],
        reads: &["node.k8s.io/v1/RuntimeClass"],
        mutating: true,
        cluster: vec![
            serde_json::json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor", "labels": {"sandbox": "true"}},
                "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m"}},
                "scheduling": {"nodeSelector": {"sandbox": "gvisor"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]}}),
            serde_json::json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "runc"}, "handler": "runc"}),
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};

    fn gvisor() -> Value {
        json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "gvisor", "labels": {"sandbox": "true"}}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            "scheduling": {"nodeSelector": {"runtime": "gvisor"},
                "tolerations": [{"key": "runtime", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"}]}})
    }

    fn run(spec: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE", "userInfo": {"username": "alice"},
                "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}},
            "settings": {"default": "gvisor"}
        });
        evaluate::<RuntimeClassPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::new(vec![gvisor()]),
        )
    }

    #[test]
    fn default_brings_overhead_and_scheduling() {
        let r = run(json!({"containers": []}));
        assert!(r.accepted, "{:?}", r.message);
        let spec = &r.mutated_object.unwrap()["spec"];
        assert_eq!(spec["runtimeClassName"], "gvisor");
        assert_eq!(spec["overhead"], json!({"cpu": "250m", "memory": "120Mi"}));
        assert_eq!(spec["nodeSelector"], json!({"runtime": "gvisor"}));
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn equal_overhead_in_other_units_is_fine() {
        let r = run(json!({"containers": [], "overhead": {"cpu": "0.25", "memory": "120Mi"}}));
        assert!(r.accepted, "{:?}", r.message);
        let r = run(json!({"containers": [], "overhead": {"cpu": "100m"}}));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.overhead: {cpu=100m} differs from RuntimeClass \"gvisor\" overhead.podFixed {cpu=250m, memory=120Mi}"
            )
        );
    }

    #[test]
    fn conflicts_are_reported_together() {
        let r = run(json!({"containers": [], "nodeSelector": {"runtime": "kata"}}));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.nodeSelector[\"runtime\"]: \"kata\" conflicts with RuntimeClass \"gvisor\" scheduling.nodeSelector runtime=gvisor"
            )
        );
    }

    #[test]
    fn class_tolerations_are_appended_once_unless_present() {
        let t = |key: &str| json!({"key": key, "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"});
        // few class tolerations (compared one by one) and many (looked up in a set)
        let few = vec![t("runtime"), t("sandbox"), t("sandbox")];
        let many = vec![
            t("runtime"),
            t("sandbox"),
            t("sandbox"),
            t("a"),
            t("b"),
            t("a"),
            t("other"),
        ];
        for (class_tolerations, expected) in [
            (few, vec!["runtime", "other", "sandbox"]),
            // the class's Equal toleration of "other" differs from the Pod's Exists one
            (many, vec!["runtime", "other", "sandbox", "a", "b", "other"]),
        ] {
            let mut class = gvisor();
            class["scheduling"]["tolerations"] = json!(class_tolerations);
            let payload = json!({
                "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE", "userInfo": {"username": "alice"},
                    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
                        "containers": [],
                        // the class's first toleration with its keys in another order; an
                        // Exists toleration of "other" (not equal to the class's Equal one)
                        "tolerations": [{"effect": "NoSchedule", "value": "gvisor", "operator": "Equal", "key": "runtime"},
                            {"key": "other", "operator": "Exists"}]}}},
                "settings": {"default": "gvisor"}
            });
            let r = evaluate::<RuntimeClassPolicy>(
                &serde_json::to_vec(&payload).unwrap(),
                &mut Objects::new(vec![class]),
            );
            assert!(r.accepted, "{:?}", r.message);
            let spec = &r.mutated_object.unwrap()["spec"];
            let keys: Vec<&str> = spec["tolerations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["key"].as_str().unwrap())
                .collect();
            assert_eq!(keys, expected);
        }
    }
}
