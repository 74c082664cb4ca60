//! Minimal mutations of the request object (`docs/semantics.md#mutations`): change only the named fields of
//! a `serde_json::Value`, creating the maps on the way, never re-building the object.
//!
//! ```
//! use policy_admission::mutation::set;
//! use serde_json::json;
//! let mut pod = json!({"spec": {"containers": []}, "status": {}});
//! set(&mut pod, &["spec", "nodeSelector"], "pool", json!("renewable")).unwrap();
//! assert_eq!(pod["spec"]["nodeSelector"]["pool"], "renewable");
//! assert!(pod.get("status").is_some());
//! ```

use serde_json::{Map, Value};

use policy_decode::error::PolicyError;
use policy_decode::path::FieldPath;

/// The map at `path` inside `root`, creating missing (or `null`) maps on the way. A
/// segment holding something else than a map is a malformed object (400).
pub fn object_at<'a>(
    root: &'a mut Value,
    path: &[&str],
) -> Result<&'a mut Map<String, Value>, PolicyError> {
    // The message path is built only for an error: a mutation walks this once per edit.
    let at = |walked: usize| keys_path(path.get(..walked).unwrap_or(path));
    let mut current = root;
    for (walked, segment) in path.iter().enumerate() {
        let map = current
            .as_object_mut()
            .ok_or_else(|| PolicyError::malformed(&at(walked), "expected an object"))?;
        current = map_slot(map, segment)
            .ok_or_else(|| PolicyError::malformed(&at(walked + 1), "missing"))?;
    }
    current
        .as_object_mut()
        .ok_or_else(|| PolicyError::malformed(&at(path.len()), "expected an object"))
}

/// The message path of the map keys `path` (`spec.nodeSelector`).
fn keys_path(path: &[&str]) -> FieldPath {
    path.iter().fold(FieldPath::empty(), |at, s| at.field(s))
}

/// The entry `key` of `map`, made an empty map when missing or `null` (`None` only if the
/// map loses an entry it was just given). The key is copied only when the entry is created.
fn map_slot<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), Value::Null);
    }
    let slot = map.get_mut(key)?;
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    Some(slot)
}

/// Sets `key` of the map at `path` to `value`.
pub fn set(root: &mut Value, path: &[&str], key: &str, value: Value) -> Result<(), PolicyError> {
    object_at(root, path)?.insert(key.to_owned(), value);
    Ok(())
}

/// Appends `value` to the list `key` of the map at `path` (the list is created if absent).
pub fn push(root: &mut Value, path: &[&str], key: &str, value: Value) -> Result<(), PolicyError> {
    let map = object_at(root, path)?;
    let slot = map.entry(key.to_owned()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    match slot.as_array_mut() {
        Some(list) => {
            list.push(value);
            Ok(())
        }
        None => Err(PolicyError::malformed(
            &keys_path(path).field(key),
            "expected a list",
        )),
    }
}

/// One step of a path into the request's object: a map key or a list index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The map entry of that name (created as an empty map when missing).
    Key(&'static str),
    /// The list element at that index (which must exist).
    Index(usize),
}

/// Sets `key` of the map reached by `steps` to `value`. Missing (or `null`) map entries on
/// the way are created; a missing list element, or a step into something that is not a map
/// or list, is a malformed object (400). Used to edit one container (`spec.containers[2]`)
/// without re-building the object.
pub fn set_in(
    root: &mut Value,
    steps: &[Step],
    key: &str,
    value: Value,
) -> Result<(), PolicyError> {
    // The message path is built only for an error (see `object_at`).
    let at = |walked: usize| {
        steps
            .iter()
            .take(walked)
            .fold(FieldPath::empty(), |at, step| match step {
                Step::Key(name) => at.field(name),
                Step::Index(i) => at.index(*i),
            })
    };
    let mut current = root;
    for (walked, step) in steps.iter().enumerate() {
        current = match step {
            Step::Key(name) => {
                let map = current
                    .as_object_mut()
                    .ok_or_else(|| PolicyError::malformed(&at(walked), "expected an object"))?;
                map_slot(map, name)
                    .ok_or_else(|| PolicyError::malformed(&at(walked + 1), "missing"))?
            }
            Step::Index(i) => {
                let list = current
                    .as_array_mut()
                    .ok_or_else(|| PolicyError::malformed(&at(walked), "expected a list"))?;
                list.get_mut(*i)
                    .ok_or_else(|| PolicyError::malformed(&at(walked + 1), "missing"))?
            }
        };
    }
    current
        .as_object_mut()
        .ok_or_else(|| PolicyError::malformed(&at(steps.len()), "expected an object"))?
        .insert(key.to_owned(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn creates_maps_and_keeps_unknown_fields() {
        let mut v = json!({"spec": {"x": 1, "nodeSelector": null}, "extra": true});
        set(&mut v, &["spec", "nodeSelector"], "a", json!("b")).unwrap();
        assert_eq!(
            v,
            json!({"spec": {"x": 1, "nodeSelector": {"a": "b"}}, "extra": true})
        );
        push(&mut v, &["spec"], "tolerations", json!({"key": "k"})).unwrap();
        push(&mut v, &["spec"], "tolerations", json!({"key": "l"})).unwrap();
        assert_eq!(
            v["spec"]["tolerations"],
            json!([{"key": "k"}, {"key": "l"}])
        );
    }

    #[test]
    fn set_in_walks_lists_and_creates_maps() {
        let mut v =
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "resources": null}]}});
        let steps = [
            Step::Key("spec"),
            Step::Key("containers"),
            Step::Index(1),
            Step::Key("resources"),
            Step::Key("limits"),
        ];
        set_in(&mut v, &steps, "cpu", json!("200m")).unwrap();
        assert_eq!(
            v["spec"]["containers"][1]["resources"],
            json!({"limits": {"cpu": "200m"}})
        );
        assert_eq!(v["spec"]["containers"][0], json!({"name": "a"}));
        let e = set_in(
            &mut v,
            &[Step::Key("spec"), Step::Key("containers"), Step::Index(5)],
            "x",
            json!(1),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "spec.containers[5]: missing");
        let e = set_in(&mut v, &[Step::Key("spec"), Step::Index(0)], "x", json!(1)).unwrap_err();
        assert_eq!(e.to_string(), "spec: expected a list");
    }

    #[test]
    fn wrong_types_are_malformed() {
        let mut v = json!({"spec": "text"});
        let e = set(&mut v, &["spec", "nodeSelector"], "a", json!("b")).unwrap_err();
        assert_eq!(e.to_string(), "spec: expected an object");
        let mut v = json!({"spec": {"tolerations": {}}});
        let e = push(&mut v, &["spec"], "tolerations", json!(1)).unwrap_err();
        assert_eq!(e.to_string(), "spec.tolerations: expected a list");
    }
}
