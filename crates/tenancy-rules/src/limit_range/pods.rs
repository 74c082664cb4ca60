//! Containers and Pod totals (README rules 1–3 and 5): defaults written into a Pod being
//! created, simulated in templates, left out on resize; Container bounds per init and
//! regular container; Pod bounds on the effective totals.

use serde_json::{Map, Value};

use kube_values::quantity::Quantity;
use policy_admission::mutation::Step;
use policy_admission::pod::{ContainerList, PodView};
use policy_admission::verdict::Verdict;
use policy_decode::error::PolicyError;
use policy_decode::path::FieldPath;

use super::bounds::{Observed, Side, Subject, check};
use super::items::{LimitRanges, Resource};
use crate::pod_resources::{Role, Total, each_counted_container, object_field, read_value};

/// How a pod spec is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// A Pod being created: missing values get the defaults (written), then bounds.
    Create,
    /// A workload's template: the API server's limit → request copy and the defaults are
    /// simulated, then bounds; nothing is written.
    Template,
    /// `pods/resize`: bounds of the values as they are, no defaults.
    Resize,
}

/// The totals of one resource.
#[derive(Clone, Debug, Default)]
struct Totals {
    requests: Total,
    limits: Total,
}

/// Judges the pod spec of `view` (README rules 1–3, 5); defaults of a Pod being created
/// are recorded as edits of the request's object.
pub fn judge(
    view: &PodView<'_>,
    ranges: &LimitRanges,
    stage: Stage,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let mut totals: Vec<Totals> = vec![Totals::default(); ranges.resources.len()];
    let spec = &view.spec.path;
    each_counted_container(view, |list, index, map, role| {
        let c = ContainerAt { list, index, spec };
        container(&c, map, ranges, stage, role, &mut totals, verdict)
    })?;
    if ranges.bounds_pods() {
        for (resource, t) in ranges.resources.iter().zip(&totals) {
            if resource.pod.is_empty() {
                continue;
            }
            let observed = Observed {
                request: t.requests.value(),
                limit: t.limits.value(),
            };
            let subject = Subject::Pod { spec };
            check(
                &resource.pod,
                observed,
                subject,
                &resource.name,
                true,
                verdict,
            );
        }
    }
    Ok(())
}

/// A container by where it is (its path is built only when needed).
struct ContainerAt<'a> {
    list: ContainerList,
    index: usize,
    spec: &'a FieldPath,
}

impl ContainerAt<'_> {
    /// `spec.containers[2]`.
    fn path(&self) -> FieldPath {
        self.spec.field(self.list.field()).index(self.index)
    }

    /// The steps to `spec.<list>[index].resources.<map>` in a Pod.
    fn steps(&self, map: &'static str) -> Vec<Step> {
        vec![
            Step::Key("spec"),
            Step::Key(self.list.field()),
            Step::Index(self.index),
            Step::Key("resources"),
            Step::Key(map),
        ]
    }
}

/// One container: its values of every resource the settings name, defaulted as `stage`
/// says, judged by the Container bounds and added to the Pod totals.
fn container(
    c: &ContainerAt<'_>,
    node: &Map<String, Value>,
    ranges: &LimitRanges,
    stage: Stage,
    role: Role,
    totals: &mut [Totals],
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let base = || c.path().field("resources");
    let resources = object_field(node, "resources", &|| c.path())?;
    let (limits, requests) = match resources {
        Some(r) => (
            object_field(r, "limits", &base)?,
            object_field(r, "requests", &base)?,
        ),
        None => (None, None),
    };
    let limits_at = || base().field("limits");
    let requests_at = || base().field("requests");
    for (resource, total) in ranges.resources.iter().zip(totals.iter_mut()) {
        let mut limit = read_value(limits, &resource.name, &limits_at)?;
        let mut request = read_value(requests, &resource.name, &requests_at)?;
        if stage == Stage::Template && request.is_none() {
            // The API server copies limits into missing requests of Pods, not of templates.
            request = limit.clone();
        }
        if stage != Stage::Resize {
            default_value(c, resource, Side::Limit, &mut limit, stage, verdict);
            default_value(c, resource, Side::Request, &mut request, stage, verdict);
        }
        if !resource.container.is_empty() {
            let observed = Observed {
                request: request.as_ref(),
                limit: limit.as_ref(),
            };
            let subject = Subject::Object {
                base: &base,
                per: "Container",
            };
            check(
                &resource.container,
                observed,
                subject,
                &resource.name,
                true,
                verdict,
            );
        }
        if !resource.pod.is_empty() {
            total.requests.add(role, request.as_ref());
            total.limits.add(role, limit.as_ref());
        }
    }
    Ok(())
}

/// README rule 1: a missing value gets the default of its side (written into a Pod being
/// created, as given in the settings).
fn default_value(
    c: &ContainerAt<'_>,
    resource: &Resource,
    side: Side,
    value: &mut Option<Quantity>,
    stage: Stage,
    verdict: &mut Verdict,
) {
    if value.is_some() {
        return;
    }
    let (default, map) = match side {
        Side::Limit => (&resource.default, "limits"),
        Side::Request => (&resource.default_request, "requests"),
    };
    let Some(default) = default else { return };
    if stage == Stage::Create {
        let text = Value::String(default.to_string());
        verdict.edit_set_in(c.steps(map), &resource.name, text);
    }
    *value = Some(default.clone());
}

/// The path of a container value, for tests and messages.
#[cfg(test)]
pub(super) fn path_of(container: &str, side: Side, name: &str) -> String {
    super::bounds::value_path(
        &policy_decode::path::FieldPath::dotted(container),
        side,
        name,
    )
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::pod::PodKind;
    use policy_decode::settings::Validated;
    use serde_json::json;

    fn seed() -> LimitRanges {
        LimitRanges::parse(&json!({"items": [
            {"limits": [{"type": "Pod", "min": {"cpu": "50m", "memory": "5Mi"}, "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "10Mi"},
                "default": {"cpu": "200m", "memory": "100Mi"}, "min": {"cpu": "50m", "memory": "5Mi"},
                "max": {"cpu": "1", "memory": "1Gi"}}]}
        ]}))
        .unwrap()
    }

    fn run(object: Value, ranges: &LimitRanges, stage: Stage) -> (Verdict, Value) {
        let kind = if object.pointer("/spec/template").is_some() {
            PodKind::Deployment
        } else {
            PodKind::Pod
        };
        let view = PodView::read(&object, kind).unwrap().unwrap();
        let mut v = Verdict::accept();
        judge(&view, ranges, stage, &mut v).unwrap();
        let response = v
            .clone()
            .into_response_for(policy_admission::Mode::Enforce, object.clone())
            .unwrap();
        (v, response.mutated_object.unwrap_or(Value::Null))
    }

    #[test]
    fn pods_get_defaults_and_their_output_is_accepted_unchanged() {
        let pod = json!({"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "300m"}, "requests": {"cpu": "300m"}}}]}});
        let (v, mutated) = run(pod, &seed(), Stage::Create);
        assert!(v.is_clean(), "{}", v.message());
        assert_eq!(
            mutated["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "200m", "memory": "100Mi"}, "requests": {"cpu": "100m", "memory": "10Mi"}})
        );
        assert_eq!(
            mutated["spec"]["initContainers"][0]["resources"],
            json!({"limits": {"cpu": "300m", "memory": "100Mi"}, "requests": {"cpu": "300m", "memory": "10Mi"}})
        );
        let (v, again) = run(mutated, &seed(), Stage::Create);
        assert!(v.is_clean() && !v.has_edits());
        assert_eq!(again, Value::Null);
    }

    #[test]
    fn pod_totals_follow_the_effective_request_rule() {
        // sidecar 300m, then init 800m (+300m = 1100m), regular 200m: sum 500m, init 1100m.
        let pod = json!({"spec": {
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "resources": {"limits": {"cpu": "300m"}, "requests": {"cpu": "300m"}}},
                {"name": "i", "resources": {"limits": {"cpu": "800m"}, "requests": {"cpu": "800m"}}}
            ],
            "containers": [{"name": "a", "resources": {"limits": {"cpu": "200m"}, "requests": {"cpu": "200m"}}}]}});
        let (v, _) = run(pod, &seed(), Stage::Create);
        assert_eq!(
            v.message(),
            "spec: total cpu limit 1100m exceeds the maximum 1 per Pod"
        );
        // the same init container before the sidecar: 800m < 300m + 200m + ...
        let pod = json!({"spec": {
            "initContainers": [
                {"name": "i", "resources": {"limits": {"cpu": "800m"}, "requests": {"cpu": "800m"}}},
                {"name": "s", "restartPolicy": "Always", "resources": {"limits": {"cpu": "300m"}, "requests": {"cpu": "300m"}}}
            ],
            "containers": [{"name": "a", "resources": {"limits": {"cpu": "200m"}, "requests": {"cpu": "200m"}}}]}});
        let (v, _) = run(pod, &seed(), Stage::Create);
        assert!(v.is_clean(), "{}", v.message());
    }

    #[test]
    fn templates_simulate_the_limit_copy_and_are_not_mutated() {
        let deployment = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2"}}}]}}}});
        let (v, _) = run(deployment, &seed(), Stage::Template);
        assert!(!v.has_edits());
        assert_eq!(
            v.message(),
            "spec.template.spec.containers[0].resources.limits.cpu: \"2\" exceeds the maximum 1 per Container; \
             spec.template.spec: total cpu limit 2 exceeds the maximum 1 per Pod"
        );
    }

    #[test]
    fn resize_has_no_defaults() {
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "100m"}}}]}});
        let (v, _) = run(pod, &seed(), Stage::Resize);
        assert!(!v.has_edits());
        assert_eq!(
            v.message(),
            "spec.containers[0].resources.limits.cpu: \"2\" exceeds the maximum 1 per Container; \
             spec.containers[0].resources.requests.memory: no request is specified, but the minimum per Container is 5Mi; \
             spec.containers[0].resources.limits.memory: no limit is specified, but the maximum per Container is 1Gi; \
             spec: total cpu limit 2 exceeds the maximum 1 per Pod; \
             spec: no memory request is specified in any container, but the minimum per Pod is 5Mi; \
             spec: no memory limit is specified in any container, but the maximum per Pod is 1Gi"
        );
    }

    #[test]
    fn malformed_and_negative_values_are_400() {
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]}});
        let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
        let err = judge(&view, &seed(), Stage::Create, &mut Verdict::accept()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].resources.limits.cpu: \"lots\" is not a quantity: expected a number"
        );
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "-1"}}}]}});
        let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
        let err = judge(&view, &seed(), Stage::Create, &mut Verdict::accept()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].resources.requests.memory: \"-1\" must not be negative"
        );
        let pod =
            json!({"spec": {"containers": [{"name": "a", "resources": {"limits": ["cpu"]}}]}});
        let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
        let err = judge(&view, &seed(), Stage::Create, &mut Verdict::accept()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].resources.limits: expected an object"
        );
        assert_eq!(
            path_of(
                "spec.containers[0].resources",
                Side::Limit,
                "example.com/gpu"
            ),
            "spec.containers[0].resources.limits[\"example.com/gpu\"]"
        );
    }

    #[test]
    fn ephemeral_containers_are_neither_defaulted_nor_counted() {
        let pod = json!({"spec": {"containers": [{"name": "a"}], "ephemeralContainers": [{"name": "debug"}]}});
        let (v, mutated) = run(pod, &seed(), Stage::Create);
        assert!(v.is_clean());
        assert_eq!(
            mutated["spec"]["ephemeralContainers"][0],
            json!({"name": "debug"})
        );
    }
}
