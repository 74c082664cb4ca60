//! Minimal mutations of the request object (`docs/semantics.md#mutations`): change only the named fields of
//! a `serde_json::Value`, creating the maps on the way, never re-building the object.
//!
//! ```
//! use policy_core::mutation::set;
//! use serde_json::json;
//! let mut pod = json!({"spec": {"containers": []}, "status": {}});
//! set(&mut pod, &["spec", "nodeSelector"], "pool", json!("renewable")).unwrap();
//! assert_eq!(pod["spec"]["nodeSelector"]["pool"], "renewable");
//! assert!(pod.get("status").is_some());
//! ```

use serde_json::{Map, Value};

use crate::error::PolicyError;
use crate::path::FieldPath;

/// The map at `path` inside `root`, creating missing (or `null`) maps on the way. A
/// segment holding something else than a map is a malformed object (400).
pub fn object_at<'a>(
    root: &'a mut Value,
    path: &[&str],
) -> Result<&'a mut Map<String, Value>, PolicyError> {
    let mut current = root;
    let mut at = FieldPath::empty();
    for segment in path {
        let map = current
            .as_object_mut()
            .ok_or_else(|| PolicyError::malformed(&at, "expected an object"))?;
        at = at.field(segment);
        let slot = map.entry((*segment).to_owned()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = Value::Object(Map::new());
        }
        current = slot;
    }
    current
        .as_object_mut()
        .ok_or_else(|| PolicyError::malformed(&at, "expected an object"))
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
        None => {
            let mut p = FieldPath::empty();
            for s in path {
                p = p.field(s);
            }
            Err(PolicyError::malformed(&p.field(key), "expected a list"))
        }
    }
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
    fn wrong_types_are_malformed() {
        let mut v = json!({"spec": "text"});
        let e = set(&mut v, &["spec", "nodeSelector"], "a", json!("b")).unwrap_err();
        assert_eq!(e.to_string(), "spec: expected an object");
        let mut v = json!({"spec": {"tolerations": {}}});
        let e = push(&mut v, &["spec"], "tolerations", json!(1)).unwrap_err();
        assert_eq!(e.to_string(), "spec.tolerations: expected a list");
    }
}
