//! A Pod's resource values: container requests and limits read strictly, Pod totals by
//! Kubernetes' effective-request rule (regular containers and sidecars summed, raised to the
//! largest ordinary init container plus the sidecars started before it; overhead and
//! ephemeral containers excluded), and the Pod's QoS class ([`qos_class`]). Shared by
//! limit-range, resource-ratio and pod-restriction checks.

use std::fmt;

use serde_json::{Map, Value};

use kube_values::quantity::Quantity;
use policy_admission::pod::{ContainerList, PodView};
use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;

/// A container's part in the Pod totals (Kubernetes effective-request rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A regular container: added to the running sum.
    Regular,
    /// An init container with `restartPolicy: Always`: added to the sum and to the sidecars
    /// started so far.
    Sidecar,
    /// An ordinary init container: its value plus the sidecars started before it.
    Init,
}

/// One total of one resource (request or limit).
#[derive(Clone, Debug, Default)]
pub struct Total {
    /// Regular containers and sidecars.
    sum: Option<Quantity>,
    /// Sidecars started so far.
    sidecars: Option<Quantity>,
    /// The largest ordinary init container plus the sidecars started before it.
    init: Option<Quantity>,
}

/// `a + b`, absent when both are; saturated instead of overflowing (values are
/// non-negative, so a saturated total still exceeds every max).
fn plus(a: Option<&Quantity>, b: Option<&Quantity>) -> Option<Quantity> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(
            x.checked_add(y)
                .unwrap_or_else(|| Quantity::from_nanos(i128::MAX)),
        ),
    }
}

impl Total {
    /// Adds a container's value by its role.
    pub fn add(&mut self, role: Role, value: Option<&Quantity>) {
        match role {
            Role::Regular => self.sum = plus(self.sum.as_ref(), value),
            Role::Sidecar => {
                self.sum = plus(self.sum.as_ref(), value);
                self.sidecars = plus(self.sidecars.as_ref(), value);
            }
            Role::Init => {
                let candidate = plus(value, self.sidecars.as_ref());
                if let Some(c) = candidate
                    && self.init.as_ref().is_none_or(|i| c > *i)
                {
                    self.init = Some(c);
                }
            }
        }
    }

    /// The Pod value: the sum, raised to the largest init value.
    pub fn value(&self) -> Option<&Quantity> {
        match (&self.sum, &self.init) {
            (Some(s), Some(i)) if i > s => Some(i),
            (Some(s), _) => Some(s),
            (None, i) => i.as_ref(),
        }
    }
}

/// Reads resource `name` of the map `map` (`resources.limits`, whose path `at` gives); a
/// value that is no quantity, or a negative one, is malformed (400). Paths are built only
/// for a refusal: a 1 MiB Pod has thousands of containers.
pub fn read_value(
    map: Option<&Map<String, Value>>,
    name: &str,
    at: &dyn Fn() -> FieldPath,
) -> Result<Option<Quantity>, PolicyError> {
    let Some(value) = map.and_then(|m| m.get(name)).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    // the canonical spellings are read without allocating (a 1 MiB Pod has thousands)
    if let Value::String(text) = value
        && let Some(q) = kube_values::quantity::spelling::quantity(text)
    {
        return Ok(Some(q));
    }
    let path = || value_path_of(&at(), name);
    let q =
        Quantity::from_json(value).map_err(|e| PolicyError::malformed(&path(), e.to_string()))?;
    if q.is_negative() {
        return Err(PolicyError::malformed(
            &path(),
            format!("{:?} must not be negative", q.to_string()),
        ));
    }
    Ok(Some(q))
}

/// `map.name`, or `map["name"]` for names with other characters.
fn value_path_of(map: &FieldPath, name: &str) -> FieldPath {
    match name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        true => map.field(name),
        false => map.key(name),
    }
}

/// Object field `name` of `map` (`None` when absent or `null`); another type is malformed at
/// the path `at` gives plus `name`.
pub fn object_field<'a>(
    map: &'a Map<String, Value>,
    name: &str,
    at: &dyn Fn() -> FieldPath,
) -> Result<Option<&'a Map<String, Value>>, PolicyError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(PolicyError::malformed(
            &at().field(name),
            "expected an object",
        )),
    }
}

/// The role of a container of `list`: an init container with `restartPolicy: Always` is a
/// sidecar.
fn role(
    list: ContainerList,
    container: &Map<String, Value>,
    at: &dyn Fn() -> FieldPath,
) -> Result<Role, PolicyError> {
    if list != ContainerList::Init {
        return Ok(Role::Regular);
    }
    match container.get("restartPolicy") {
        None | Some(Value::Null) => Ok(Role::Init),
        Some(Value::String(p)) if p == "Always" => Ok(Role::Sidecar),
        Some(Value::String(_)) => Ok(Role::Init),
        Some(_) => Err(PolicyError::malformed(
            &at().field("restartPolicy"),
            "expected a string",
        )),
    }
}

/// Calls `f` with each init and regular container of `view` (the containers Pod totals
/// count; ephemeral containers never do), in order, with its list, index and role. A list
/// that is not a list, or a container that is not an object, is malformed (400 naming it).
pub fn each_counted_container<'a>(
    view: &PodView<'a>,
    f: impl FnMut(ContainerList, usize, &'a Map<String, Value>, Role) -> Result<(), PolicyError>,
) -> Result<(), PolicyError> {
    each_counted_container_of(&view.spec, f)
}

/// [`each_counted_container`] over a pod spec read elsewhere (custom resources' templates).
pub fn each_counted_container_of<'a>(
    pod_spec: &At<'a>,
    mut f: impl FnMut(ContainerList, usize, &'a Map<String, Value>, Role) -> Result<(), PolicyError>,
) -> Result<(), PolicyError> {
    let spec = &pod_spec.path;
    for list in [ContainerList::Init, ContainerList::Regular] {
        let Some(items) = pod_spec.get(list.field())? else {
            continue;
        };
        let items = items
            .value
            .as_array()
            .ok_or_else(|| PolicyError::malformed(&items.path, "expected a list"))?;
        for (index, value) in items.iter().enumerate() {
            let at = || spec.field(list.field()).index(index);
            let map = value
                .as_object()
                .ok_or_else(|| PolicyError::malformed(&at(), "expected an object"))?;
            f(list, index, map, role(list, map, &at)?)?;
        }
    }
    Ok(())
}

/// The Pod's effective request of each resource of `names` (in that order; `None` when no
/// container requests it). With `limits_as_requests`, a container's limit counts as its
/// missing request, as the API server defaults Pods (templates have not been defaulted yet).
pub fn pod_requests(
    view: &PodView<'_>,
    names: &[&str],
    limits_as_requests: bool,
) -> Result<Vec<Option<Quantity>>, PolicyError> {
    spec_requests(&view.spec, names, limits_as_requests)
}

/// [`pod_requests`] of a pod spec.
fn spec_requests(
    pod_spec: &At<'_>,
    names: &[&str],
    limits_as_requests: bool,
) -> Result<Vec<Option<Quantity>>, PolicyError> {
    let mut totals: Vec<Total> = vec![Total::default(); names.len()];
    let spec = &pod_spec.path;
    each_counted_container_of(pod_spec, |list, index, map, role| {
        let at = || spec.field(list.field()).index(index);
        let base = || at().field("resources");
        let (limits, requests) = match object_field(map, "resources", &at)? {
            Some(r) => (
                object_field(r, "limits", &base)?,
                object_field(r, "requests", &base)?,
            ),
            None => (None, None),
        };
        for (name, total) in names.iter().zip(totals.iter_mut()) {
            let mut request = read_value(requests, name, &|| base().field("requests"))?;
            if request.is_none() && limits_as_requests {
                request = read_value(limits, name, &|| base().field("limits"))?;
            }
            total.add(role, request.as_ref());
        }
        Ok(())
    })?;
    Ok(totals.iter().map(|t| t.value().cloned()).collect())
}

// ---------------------------------------------------------------------------------------
// QoS class
// ---------------------------------------------------------------------------------------

/// A Pod's quality-of-service class (`status.qosClass`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosClass {
    /// cpu and memory limits equal to the requests, for every counted container (or the Pod).
    Guaranteed,
    /// Anything between.
    Burstable,
    /// No cpu or memory request or limit anywhere.
    BestEffort,
}

impl QosClass {
    /// The API value: `Guaranteed`, `Burstable`, `BestEffort`.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

impl fmt::Display for QosClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The resources a QoS class is computed from.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// The class of one set of requests and limits (cpu, memory), already defaulted: each
/// resource is best-effort when its request and limit are both zero or absent, guaranteed
/// when they are equal and non-zero, and the set is burstable when a request differs from
/// its limit or the two resources disagree.
fn requirements_class(requests: &[Option<Quantity>], limits: &[Option<Quantity>]) -> QosClass {
    let zero = Quantity::zero();
    let mut class = None;
    for i in 0..QOS_RESOURCES.len() {
        let request = requests.get(i).and_then(Option::as_ref).unwrap_or(&zero);
        let limit = limits.get(i).and_then(Option::as_ref).unwrap_or(&zero);
        if request != limit {
            return QosClass::Burstable;
        }
        let this = match request.is_zero() {
            true => QosClass::BestEffort,
            false => QosClass::Guaranteed,
        };
        match class {
            None => class = Some(this),
            Some(c) if c != this => return QosClass::Burstable,
            Some(_) => {}
        }
    }
    class.unwrap_or(QosClass::BestEffort)
}

/// The cpu and memory values of a `requests` or `limits` map at `at`.
fn qos_values(
    map: Option<&Map<String, Value>>,
    at: &dyn Fn() -> FieldPath,
) -> Result<[Option<Quantity>; 2], PolicyError> {
    let [cpu, memory] = QOS_RESOURCES;
    Ok([read_value(map, cpu, at)?, read_value(map, memory, at)?])
}

/// The `requests` and `limits` maps of a `resources` object.
type Maps<'a> = (
    Option<&'a Map<String, Value>>,
    Option<&'a Map<String, Value>>,
);

/// The `requests` and `limits` of `resources` (at `at`), each malformed (400) when not an
/// object.
fn requirement_maps<'a>(
    resources: &'a Map<String, Value>,
    at: &dyn Fn() -> FieldPath,
) -> Result<Maps<'a>, PolicyError> {
    Ok((
        object_field(resources, "requests", at)?,
        object_field(resources, "limits", at)?,
    ))
}

/// The QoS class of a pod spec, computed as Kubernetes does (`pkg/apis/core/helper/qos`,
/// `ComputePodQOS`) on the Pod the API server would store (`docs/semantics.md#pod-bearing-kinds`:
/// templates are judged as the Pods made from them):
///
/// * requests are first defaulted as the API server defaults Pods: a container's missing
///   request is its limit; with pod-level limits, a missing pod-level request is the
///   containers' effective request of that resource, else the pod-level limit;
/// * a pod-level `spec.resources` (PodLevelResources, Kubernetes 1.32+), when present,
///   alone decides;
/// * otherwise every init container (sidecars included) and regular container is classed
///   on its own (ephemeral containers never count): all best-effort is `BestEffort`, all
///   guaranteed is `Guaranteed`, anything else `Burstable`.
///
/// Only `cpu` and `memory` count; quantities compare by value (`1` equals `1000m`). A
/// malformed or negative quantity, or a `resources`, `requests` or `limits` that is not an
/// object, is a 400 naming it.
pub fn qos_class(pod_spec: &At<'_>) -> Result<QosClass, PolicyError> {
    let spec_map = pod_spec.object()?;
    let spec = &pod_spec.path;
    if let Some(resources) = object_field(spec_map, "resources", &|| spec.clone())? {
        return pod_level_class(pod_spec, resources);
    }
    let mut class = None;
    each_counted_container_of(pod_spec, |list, index, map, _| {
        let at = || spec.field(list.field()).index(index);
        let base = || at().field("resources");
        let (requests, limits) = match object_field(map, "resources", &at)? {
            Some(r) => requirement_maps(r, &base)?,
            None => (None, None),
        };
        let limits = qos_values(limits, &|| base().field("limits"))?;
        let mut requests = qos_values(requests, &|| base().field("requests"))?;
        for (request, limit) in requests.iter_mut().zip(&limits) {
            if request.is_none() {
                request.clone_from(limit);
            }
        }
        let this = requirements_class(&requests, &limits);
        class = match class {
            None => Some(this),
            Some(c) if c == this => Some(c),
            Some(_) => Some(QosClass::Burstable),
        };
        Ok(())
    })?;
    Ok(class.unwrap_or(QosClass::BestEffort))
}

/// The class of a Pod with pod-level `spec.resources`, after the API server's defaulting of
/// the pod-level requests (only when pod-level limits are set).
fn pod_level_class(
    pod_spec: &At<'_>,
    resources: &Map<String, Value>,
) -> Result<QosClass, PolicyError> {
    let base = || pod_spec.path.field("resources");
    let (requests, limits) = requirement_maps(resources, &base)?;
    let limit_values = qos_values(limits, &|| base().field("limits"))?;
    let mut request_values = qos_values(requests, &|| base().field("requests"))?;
    if limits.is_some_and(|l| !l.is_empty()) && request_values.iter().any(Option::is_none) {
        let containers = spec_requests(pod_spec, &QOS_RESOURCES, true)?;
        for ((request, limit), from_containers) in
            request_values.iter_mut().zip(&limit_values).zip(containers)
        {
            if request.is_none() {
                *request = from_containers.or_else(|| limit.clone());
            }
        }
    }
    Ok(requirements_class(&request_values, &limit_values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::pod::PodKind;
    use proptest::prelude::*;
    use serde_json::json;

    fn requests(object: Value, copy: bool) -> Vec<Option<String>> {
        let kind = match object.pointer("/spec/template") {
            Some(_) => PodKind::Deployment,
            None => PodKind::Pod,
        };
        let view = PodView::read(&object, kind).unwrap().unwrap();
        pod_requests(&view, &["cpu", "memory"], copy)
            .unwrap()
            .into_iter()
            .map(|q| q.map(|q| q.to_string()))
            .collect()
    }

    #[test]
    fn effective_requests_sum_containers_and_raise_to_init_plus_earlier_sidecars() {
        let pod = json!({"spec": {
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m", "memory": "1Gi"}}},
                {"name": "i", "resources": {"requests": {"cpu": "800m"}}}
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "200m", "memory": "1Gi"}}}],
            "ephemeralContainers": [{"name": "e", "resources": {"requests": {"cpu": "9"}}}]}});
        assert_eq!(
            requests(pod, false),
            vec![Some("1100m".into()), Some("2Gi".into())]
        );
    }

    #[test]
    fn limits_count_as_missing_requests_only_when_asked() {
        let template = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "2Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}}
        ]}}}});
        assert_eq!(
            requests(template.clone(), true),
            vec![Some("2500m".into()), Some("2Gi".into())]
        );
        assert_eq!(requests(template, false), vec![Some("500m".into()), None]);
        assert_eq!(
            requests(json!({"spec": {"containers": []}}), true),
            vec![None, None]
        );
    }

    #[test]
    fn malformed_values_are_400_with_their_path() {
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "lots"}}}]}});
        let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
        let e = pod_requests(&view, &["memory"], true).unwrap_err();
        assert!(
            e.to_string()
                .contains("spec.containers[0].resources.requests.memory"),
            "{e}"
        );
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "-1"}}}]}});
        let view = PodView::read(&pod, PodKind::Pod).unwrap().unwrap();
        assert!(pod_requests(&view, &["cpu"], true).is_err());
    }

    // ----- QoS class -----

    /// One container's cpu request, memory request, cpu limit, memory limit.
    type Spec4 = (Option<i64>, Option<i64>, Option<i64>, Option<i64>);

    fn qos(spec: Value) -> QosClass {
        qos_class(&At::new(&spec, FieldPath::root("spec"))).unwrap()
    }

    fn res(requests: Value, limits: Value) -> Value {
        json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
    }

    #[rstest::rstest]
    // no resources anywhere
    #[case(json!({"containers": [{"name": "a"}]}), QosClass::BestEffort)]
    #[case(json!({"containers": []}), QosClass::BestEffort)]
    #[case(json!({"containers": [{"name": "a", "resources": {}}]}), QosClass::BestEffort)]
    // only resources QoS ignores
    #[case(json!({"containers": [res(json!({"ephemeral-storage": "1Gi"}), json!({"nvidia.com/gpu": 1}))]}), QosClass::BestEffort)]
    // zero values are no values
    #[case(json!({"containers": [res(json!({"cpu": "0"}), json!({"memory": 0}))]}), QosClass::BestEffort)]
    // equal requests and limits
    #[case(json!({"containers": [res(json!({"cpu": "1", "memory": "1Gi"}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::Guaranteed)]
    // the same quantities spelled differently
    #[case(json!({"containers": [res(json!({"cpu": "1000m", "memory": "1073741824"}), json!({"cpu": 1, "memory": "1Gi"}))]}), QosClass::Guaranteed)]
    #[case(json!({"containers": [res(json!({"cpu": "0.5", "memory": "1e3"}), json!({"cpu": "500m", "memory": "1k"}))]}), QosClass::Guaranteed)]
    // limits only: requests defaulted from them
    #[case(json!({"containers": [res(json!(null), json!({"cpu": "2", "memory": "2Gi"}))]}), QosClass::Guaranteed)]
    #[case(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "2", "memory": "2Gi"}}}]}), QosClass::Guaranteed)]
    // limits of one resource only
    #[case(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]}), QosClass::Burstable)]
    // requests only
    #[case(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}), QosClass::Burstable)]
    #[case(json!({"containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}]}), QosClass::Burstable)]
    // a request below its limit; an explicit zero request is not defaulted
    #[case(json!({"containers": [res(json!({"cpu": "500m", "memory": "1Gi"}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::Burstable)]
    #[case(json!({"containers": [res(json!({"cpu": "0", "memory": "1Gi"}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::Burstable)]
    // one guaranteed and one best-effort container
    #[case(json!({"containers": [res(json!({"cpu": "1", "memory": "1Gi"}), json!({"cpu": "1", "memory": "1Gi"})), {"name": "b"}]}), QosClass::Burstable)]
    // init containers count, sidecars too
    #[case(json!({"initContainers": [{"name": "i"}], "containers": [res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::Burstable)]
    #[case(json!({"initContainers": [res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))], "containers": [res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::Guaranteed)]
    #[case(json!({"initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}], "containers": [{"name": "a"}]}), QosClass::Burstable)]
    #[case(json!({"initContainers": [res(json!({"cpu": "1"}), json!({}))], "containers": [{"name": "a"}]}), QosClass::Burstable)]
    // ephemeral containers never count
    #[case(json!({"containers": [{"name": "a"}], "ephemeralContainers": [res(json!({"cpu": "1"}), json!({}))]}), QosClass::BestEffort)]
    #[case(json!({"containers": [res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))], "ephemeralContainers": [{"name": "e"}]}), QosClass::Guaranteed)]
    // pod-level resources decide, whatever the containers say
    #[case(json!({"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}, "containers": [{"name": "a"}]}), QosClass::Guaranteed)]
    #[case(json!({"resources": {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2000m", "memory": "2Gi"}}, "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}), QosClass::Guaranteed)]
    #[case(json!({"resources": {"requests": {"cpu": "1"}}, "containers": [res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::Burstable)]
    #[case(json!({"resources": {}, "containers": [res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))]}), QosClass::BestEffort)]
    // a missing pod-level request is the containers' effective request, else the limit
    #[case(json!({"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}, "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}), QosClass::Burstable)]
    #[case(json!({"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}, "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}, {"name": "b", "resources": {"limits": {"cpu": "1"}}}]}), QosClass::Guaranteed)]
    #[case(json!({"resources": {"limits": {"memory": "2Gi"}}, "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}), QosClass::Burstable)]
    fn qos_classes(#[case] spec: Value, #[case] expected: QosClass) {
        assert_eq!(qos(spec), expected);
    }

    #[rstest::rstest]
    #[case(json!({"containers": [res(json!({"cpu": "lots"}), json!({}))]}), "spec.containers[0].resources.requests.cpu")]
    #[case(json!({"initContainers": [res(json!({}), json!({"memory": "-1Gi"}))]}), "spec.initContainers[0].resources.limits.memory: \"-1Gi\" must not be negative")]
    #[case(json!({"containers": [{"name": "a", "resources": {"limits": ["cpu"]}}]}), "spec.containers[0].resources.limits: expected an object")]
    #[case(json!({"containers": [{"name": "a", "resources": "big"}]}), "spec.containers[0].resources: expected an object")]
    #[case(json!({"resources": {"requests": {"cpu": true}}, "containers": []}), "spec.resources.requests.cpu")]
    #[case(json!({"resources": 3, "containers": []}), "spec.resources: expected an object")]
    #[case(json!({"containers": {"name": "a"}}), "spec.containers: expected a list")]
    #[case(json!({"containers": ["a"]}), "spec.containers[0]: expected an object")]
    fn qos_of_malformed_resources_is_400(#[case] spec: Value, #[case] message: &str) {
        let err = qos_class(&At::new(&spec, FieldPath::root("spec"))).unwrap_err();
        assert!(err.to_string().starts_with(message), "{err}");
    }

    #[test]
    fn qos_names_are_the_api_values() {
        assert_eq!(QosClass::Guaranteed.to_string(), "Guaranteed");
        assert_eq!(QosClass::Burstable.as_str(), "Burstable");
        assert_eq!(QosClass::BestEffort.to_string(), "BestEffort");
    }

    /// The class as Kubernetes computed it before 1.33 (sums over all containers: every
    /// container needs positive cpu and memory limits, the summed positive requests must
    /// equal the summed positive limits), on containers already defaulted: an independent
    /// statement of the same rule when requests never exceed limits, as validation requires.
    fn summed_class(containers: &[Spec4]) -> QosClass {
        let mut req = [0i64; 2];
        let mut lim = [0i64; 2];
        let mut req_set = [false; 2];
        let mut lim_set = [false; 2];
        let mut guaranteed = true;
        for &(rc, rm, lc, lm) in containers {
            let requests = [rc.or(lc), rm.or(lm)];
            let limits = [lc, lm];
            for i in 0..2 {
                if let Some(r) = requests[i].filter(|r| *r > 0) {
                    req[i] += r;
                    req_set[i] = true;
                }
                if let Some(l) = limits[i].filter(|l| *l > 0) {
                    lim[i] += l;
                    lim_set[i] = true;
                }
            }
            if !limits.iter().all(|l| l.is_some_and(|l| l > 0)) {
                guaranteed = false;
            }
        }
        if !req_set.iter().any(|s| *s) && !lim_set.iter().any(|s| *s) {
            return QosClass::BestEffort;
        }
        let same = (0..2).all(|i| req_set[i] == lim_set[i] && (!req_set[i] || req[i] == lim[i]));
        match guaranteed && same {
            true => QosClass::Guaranteed,
            false => QosClass::Burstable,
        }
    }

    /// One container's resources: requests at most the limits (API validation).
    fn container_resources() -> impl Strategy<Value = Spec4> {
        let pair = (proptest::option::of(0i64..3), proptest::option::of(0i64..3)).prop_map(
            |(r, l)| match (r, l) {
                (Some(r), Some(l)) if r > l => (Some(l), Some(r)),
                other => other,
            },
        );
        (pair.clone(), pair).prop_map(|((rc, lc), (rm, lm))| (rc, rm, lc, lm))
    }

    /// The container as JSON, cpu in millicores or cores and memory in bytes or `k`, as
    /// `spell` says.
    fn container_json(i: usize, c: &Spec4, spell: bool) -> Value {
        let cpu = |n: i64| {
            if spell {
                json!(format!("{}m", n * 1000))
            } else {
                json!(n)
            }
        };
        let mem = |n: i64| {
            if spell {
                json!(format!("{n}k"))
            } else {
                json!(format!("{}", n * 1000))
            }
        };
        let mut requests = Map::new();
        let mut limits = Map::new();
        if let Some(v) = c.0 {
            requests.insert("cpu".into(), cpu(v));
        }
        if let Some(v) = c.1 {
            requests.insert("memory".into(), mem(v));
        }
        if let Some(v) = c.2 {
            limits.insert("cpu".into(), cpu(v));
        }
        if let Some(v) = c.3 {
            limits.insert("memory".into(), mem(v));
        }
        json!({"name": format!("c{i}"), "resources": {"requests": requests, "limits": limits}})
    }

    proptest! {
        #[test]
        fn per_container_classes_agree_with_the_summed_rule(
            init in proptest::collection::vec(container_resources(), 0..3),
            regular in proptest::collection::vec(container_resources(), 1..4),
            spell in any::<bool>(),
        ) {
            let spec = json!({
                "initContainers": init.iter().enumerate().map(|(i, c)| container_json(i, c, spell)).collect::<Vec<_>>(),
                "containers": regular.iter().enumerate().map(|(i, c)| container_json(i, c, !spell)).collect::<Vec<_>>(),
            });
            let all = [init.as_slice(), regular.as_slice()].concat();
            prop_assert_eq!(qos(spec), summed_class(&all));
        }

        #[test]
        fn ephemeral_containers_never_change_the_class(
            regular in proptest::collection::vec(container_resources(), 1..4),
            ephemeral in container_resources(),
        ) {
            let containers: Vec<Value> = regular.iter().enumerate().map(|(i, c)| container_json(i, c, false)).collect();
            let without = json!({"containers": containers.clone()});
            let with = json!({"containers": containers, "ephemeralContainers": [container_json(9, &ephemeral, true)]});
            prop_assert_eq!(qos(without), qos(with));
        }
    }
}
