//! A Pod's resource values: container requests and limits read strictly, and Pod totals by
//! Kubernetes' effective-request rule (regular containers and sidecars summed, raised to the
//! largest ordinary init container plus the sidecars started before it; overhead and
//! ephemeral containers excluded). Shared by limit-range and resource-ratio checks.

use serde_json::{Map, Value};

use kube_values::quantity::Quantity;
use policy_admission::pod::{ContainerList, PodView};
use policy_decode::error::PolicyError;
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
    mut f: impl FnMut(ContainerList, usize, &'a Map<String, Value>, Role) -> Result<(), PolicyError>,
) -> Result<(), PolicyError> {
    let spec = &view.spec.path;
    for list in [ContainerList::Init, ContainerList::Regular] {
        let Some(items) = view.spec.get(list.field())? else {
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
    let mut totals: Vec<Total> = vec![Total::default(); names.len()];
    let spec = &view.spec.path;
    each_counted_container(view, |list, index, map, role| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::pod::PodKind;
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
}
