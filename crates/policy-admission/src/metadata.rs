//! Object metadata a request changes: label and annotation keys added, changed or removed,
//! and `ownerReferences` (`docs/semantics.md#metadata`).

use serde_json::{Map, Value};

use crate::cluster::{GetRequest, Lookups};
use policy_decode::error::PolicyError;
use policy_decode::json::At;

/// A string map of `metadata` (`labels` or `annotations`) of one object: absent or `null`
/// is empty; any other non-map is malformed (400 naming the path).
pub fn string_map<'a>(
    object: Option<&At<'a>>,
    map: &str,
) -> Result<Option<&'a Map<String, Value>>, PolicyError> {
    match object {
        Some(object) => object.get_metadata_map(map),
        None => Ok(None),
    }
}

/// The keys of `new` that are absent from `old` or hold another value, in `new`'s order,
/// then the keys of `old` that `new` lacks (removals), in `old`'s order. Each key is looked
/// up once in the other map: linear in both.
///
/// ```
/// use policy_admission::metadata::changed_keys;
/// use serde_json::json;
/// let old = json!({"keep": "1", "change": "a", "drop": "x"});
/// let new = json!({"add": "n", "keep": "1", "change": "b"});
/// assert_eq!(changed_keys(old.as_object(), new.as_object()), ["add", "change", "drop"]);
/// assert_eq!(changed_keys(None, new.as_object()), ["add", "keep", "change"]);
/// ```
pub fn changed_keys<'a>(
    old: Option<&'a Map<String, Value>>,
    new: Option<&'a Map<String, Value>>,
) -> Vec<&'a str> {
    let mut changed = Vec::new();
    for (key, value) in new.into_iter().flatten() {
        if old.and_then(|o| o.get(key)) != Some(value) {
            changed.push(key.as_str());
        }
    }
    for key in old.into_iter().flat_map(Map::keys) {
        if !new.is_some_and(|n| n.contains_key(key)) {
            changed.push(key.as_str());
        }
    }
    changed
}

/// The annotation `key` of Namespace `namespace`, read from the cluster
/// (`docs/semantics.md#lookups`): `None` when the Namespace is not found or lacks it.
/// Annotations that are not a map of strings are an answer of the wrong shape: a failed
/// lookup, never an absent annotation ([`crate::cluster::Found`]).
pub fn namespace_annotation<'l>(
    namespace: &str,
    key: &str,
    lookups: &'l mut Lookups<'_>,
) -> Result<Option<&'l str>, PolicyError> {
    match lookups.get(&GetRequest::cluster_scoped("v1", "Namespace", namespace))? {
        Some(found) => found.annotation(key),
        None => Ok(None),
    }
}

/// The `metadata.ownerReferences` of an object: absent or `null` is none; any other
/// non-list is malformed (400 naming the path).
pub fn owner_references<'a>(object: Option<&At<'a>>) -> Result<&'a [Value], PolicyError> {
    let Some(metadata) = object
        .map(|o| o.get_object("metadata"))
        .transpose()?
        .flatten()
    else {
        return Ok(&[]);
    };
    match metadata.get("ownerReferences")? {
        None => Ok(&[]),
        Some(at) => at
            .value
            .as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| PolicyError::malformed(&at.path, "expected a list")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::path::FieldPath;
    use proptest::prelude::*;
    use serde_json::json;

    fn at(value: &Value) -> At<'_> {
        At::new(value, FieldPath::empty())
    }

    #[test]
    fn maps_are_read_strictly() {
        let o = json!({"metadata": {"labels": {"a": "1"}, "annotations": null}});
        assert_eq!(
            string_map(Some(&at(&o)), "labels").unwrap().map(Map::len),
            Some(1)
        );
        assert!(string_map(Some(&at(&o)), "annotations").unwrap().is_none());
        assert!(string_map(None, "labels").unwrap().is_none());
        let o = json!({"metadata": {"labels": {"a": 1}}});
        assert_eq!(
            string_map(Some(&at(&o)), "labels").unwrap_err().to_string(),
            "metadata.labels[\"a\"]: expected a string"
        );
        let o = json!({"metadata": {"labels": []}});
        assert_eq!(string_map(Some(&at(&o)), "labels").unwrap_err().code(), 400);
    }

    #[test]
    fn owner_references_are_read_strictly() {
        let o = json!({"metadata": {"ownerReferences": [{"uid": "1"}]}});
        assert_eq!(owner_references(Some(&at(&o))).unwrap().len(), 1);
        let o = json!({"metadata": {}});
        assert!(owner_references(Some(&at(&o))).unwrap().is_empty());
        let o = json!({"metadata": {"ownerReferences": {}}});
        assert_eq!(
            owner_references(Some(&at(&o))).unwrap_err().to_string(),
            "metadata.ownerReferences: expected a list"
        );
    }

    proptest! {
        /// A key is changed exactly when the two maps disagree on it, and is listed once.
        #[test]
        fn changed_keys_are_the_disagreements(
            old in proptest::collection::btree_map("[a-d]", "[xy]", 0..4),
            new in proptest::collection::btree_map("[a-d]", "[xy]", 0..4),
        ) {
            let to_map = |m: &std::collections::BTreeMap<String, String>| {
                m.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect::<Map<_, _>>()
            };
            let (o, n) = (to_map(&old), to_map(&new));
            let changed = changed_keys(Some(&o), Some(&n));
            for key in ["a", "b", "c", "d"] {
                let differs = old.get(key) != new.get(key);
                prop_assert_eq!(changed.iter().filter(|k| **k == key).count(), usize::from(differs));
            }
        }
    }
}
