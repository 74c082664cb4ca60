//! A request through a tenant's bindings, routed and ordered as the API server does.
//!
//! Bindings whose rules and namespaceSelector match the request see it. Mutating ones run
//! first, one at a time in name order, each on the object the previous one produced; a
//! refusal ends the request there. Then every validating binding judges the final object.

use policy_host::{ClusterObjects, Evaluation, Recorder, SharedCallbacks, shared};
use serde_json::{Value, json};

use crate::binding::Binding;
use crate::catalogue::Policy;
use crate::error::{Error, Result};
use crate::hosts::Hosts;

/// One binding's answer to the request as it saw it.
#[derive(Debug, Clone)]
pub struct Step {
    /// The binding's name.
    pub binding: String,
    /// Its policy.
    pub policy: &'static Policy,
    /// The request as this binding received it (the object mutated by earlier bindings).
    pub request: Value,
    /// Its settings.
    pub settings: Value,
    /// The answer.
    pub evaluation: Evaluation,
    /// The cluster reads it made, as a kwctl replay session (`[]` for none).
    pub session: String,
    /// The binding is in `monitor` mode: its verdict is logged, the request admitted
    /// unchanged.
    pub monitor: bool,
}

/// Every binding's answer, in the order they ran.
#[derive(Debug, Clone, Default)]
pub struct Admission {
    /// The answers.
    pub steps: Vec<Step>,
}

impl Admission {
    /// Whether the API server admits the request: every binding that saw it, and is not in
    /// `monitor` mode, allowed it.
    pub fn allowed(&self) -> bool {
        self.steps
            .iter()
            .all(|s| s.monitor || s.evaluation.response.allowed)
    }
}

/// Whether `request` is about a Namespace itself (not a subresource, not its deletion): the
/// API server then matches namespaceSelectors against the Namespace in the request.
fn is_namespace_write(request: &Value) -> bool {
    let field = |p: &str| {
        request
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    field("/resource/group").is_empty()
        && field("/resource/resource") == "namespaces"
        && field("/subResource").is_empty()
        && field("/operation") != "DELETE"
}

/// The Namespace a binding's namespaceSelector is matched against: the Namespace in the
/// request when one is created or updated (with the name label the API server sets), else
/// the one named by the request (`request.namespace`, else the object's), unlabelled when
/// the cluster has none of that name; `None` for other cluster-scoped requests.
fn namespace_of(request: &Value, cluster: &ClusterObjects) -> Option<Value> {
    if is_namespace_write(request) {
        let mut namespace = request.get("object").cloned().unwrap_or_else(|| json!({}));
        let name = namespace
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .or_else(|| request.get("name").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        if let Some(meta) = namespace.get_mut("metadata").and_then(Value::as_object_mut) {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        return Some(namespace);
    }
    let name = [
        "/namespace",
        "/object/metadata/namespace",
        "/oldObject/metadata/namespace",
    ]
    .iter()
    .filter_map(|p| request.pointer(p).and_then(Value::as_str))
    .find(|n| !n.is_empty())?;
    let found = cluster.objects().iter().find(|o| {
        o.get("kind").and_then(Value::as_str) == Some("Namespace")
            && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
    });
    Some(
        found
            .cloned()
            .unwrap_or_else(|| json!({"metadata": {"name": name}})),
    )
}

/// Judges `request` with every binding the API server would send it to. Each binding is
/// matched when its turn comes, against the request as mutated so far (a Namespace labelled
/// by an earlier binding is routed by that label).
pub fn admit(
    bindings: &[Binding],
    request: &Value,
    cluster: &ClusterObjects,
    hosts: &mut Hosts,
) -> Result<Admission> {
    let mut ordered: Vec<&Binding> = bindings.iter().collect();
    ordered.sort_by(|a, b| a.name.cmp(&b.name));
    // one copy of the objects for every binding; each step records its own reads
    let objects: SharedCallbacks = shared(cluster.clone());
    let mut current = request.clone();
    let mut admission = Admission::default();
    for binding in ordered.iter().filter(|b| b.mutating) {
        if !binding.applies(&current, namespace_of(&current, cluster).as_ref()) {
            continue;
        }
        let step = evaluate(binding, &current, &objects, hosts)?;
        if step.monitor {
            admission.steps.push(step);
            continue;
        }
        let allowed = step.evaluation.response.allowed;
        if allowed
            && let Some(object) = &step.evaluation.mutated_object
            && let Some(slot) = current.get_mut("object")
        {
            *slot = object.clone();
        }
        admission.steps.push(step);
        if !allowed {
            return Ok(admission);
        }
    }
    let namespace = namespace_of(&current, cluster);
    for binding in ordered.iter().filter(|b| !b.mutating) {
        if binding.applies(&current, namespace.as_ref()) {
            admission
                .steps
                .push(evaluate(binding, &current, &objects, hosts)?);
        }
    }
    Ok(admission)
}

fn evaluate(
    binding: &Binding,
    request: &Value,
    objects: &SharedCallbacks,
    hosts: &mut Hosts,
) -> Result<Step> {
    let recorder = shared(Recorder::new(objects.clone()));
    let callbacks: SharedCallbacks = recorder.clone();
    let evaluation = hosts
        .host(binding.policy)?
        .validate(request, &binding.settings, callbacks)?;
    let session = recorder
        .lock()
        .map_err(|_| Error::Invalid("cluster recorder poisoned".into()))?
        .session_yaml()?;
    Ok(Step {
        binding: binding.name.clone(),
        policy: binding.policy,
        request: request.clone(),
        settings: binding.settings.clone(),
        evaluation,
        session,
        monitor: binding.monitor,
    })
}

/// One line per step: the binding, what it did (admitted, mutated, refused, warned) and why.
pub fn describe(admission: &Admission) -> Vec<String> {
    let width = admission
        .steps
        .iter()
        .map(|s| s.binding.len())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = admission
        .steps
        .iter()
        .map(|step| {
            let response = &step.evaluation.response;
            let what = if !response.allowed {
                format!(
                    "refused ({}): {}",
                    response.code().unwrap_or(0),
                    response.message().unwrap_or_default()
                )
            } else if let Some(patch) = &step.evaluation.patch {
                format!(
                    "mutated: {}",
                    serde_json::to_string(patch).unwrap_or_default()
                )
            } else {
                "admitted".to_owned()
            };
            let warnings = response
                .warnings
                .iter()
                .flatten()
                .map(|w| format!("; warning: {w}"))
                .collect::<String>();
            let monitor = if step.monitor {
                " (monitor mode: logged, the request goes on unchanged)"
            } else {
                ""
            };
            format!("  {:width$}  {what}{warnings}{monitor}", step.binding)
        })
        .collect();
    if admission.steps.is_empty() {
        lines.push("  no binding of these applies".to_owned());
    }
    lines.push(format!(
        "  => {}",
        if admission.allowed() {
            "admitted"
        } else {
            "refused"
        }
    ));
    lines
}
