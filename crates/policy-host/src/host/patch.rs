//! The JSON Patch from a request's object to the object a policy returns: exactly the
//! operations `json_patch::diff` makes, found without walking what the two objects share.
//!
//! `json_patch::diff` visits every member of both documents and names each one it passes,
//! so a mutation that writes one field of a 1 MiB object pays for the whole object. Here
//! an object's members and an array's items that are equal are skipped; where they differ
//! the walk goes on, and `json_patch::diff` itself answers for the pairs it cannot go into
//! (scalars, values of different types, arrays of different lengths), its operations placed
//! under the pair's path. Members are visited in `json_patch::diff`'s order (the new
//! object's members in order, then the old object's members it lacks), so the patch is the
//! same, operation for operation.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation};
use serde_json::{Map, Value};

/// The JSON Patch that turns `left` into `right`, equal to `json_patch::diff(left, right)`.
pub fn diff(left: &Value, right: &Value) -> Patch {
    let mut patch = Patch(Vec::new());
    walk(left, right, &mut PointerBuf::new(), &mut patch);
    patch
}

fn walk(left: &Value, right: &Value, at: &mut PointerBuf, patch: &mut Patch) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => walk_object(l, r, at, patch),
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (index, (l, r)) in l.iter().zip(r).enumerate() {
                if !same(l, r) {
                    at.push_back(index);
                    walk(l, r, at, patch);
                    at.pop_back();
                }
            }
        }
        _ => {
            for op in json_patch::diff(left, right).0 {
                patch.0.push(placed_under(at, op));
            }
        }
    }
}

fn walk_object(
    left: &Map<String, Value>,
    right: &Map<String, Value>,
    at: &mut PointerBuf,
    patch: &mut Patch,
) {
    for (key, r) in right {
        match left.get(key) {
            Some(l) if same(l, r) => {}
            Some(l) => {
                at.push_back(key);
                walk(l, r, at, patch);
                at.pop_back();
            }
            None => {
                at.push_back(key);
                patch.0.push(PatchOperation::Add(AddOperation {
                    path: at.clone(),
                    value: r.clone(),
                }));
                at.pop_back();
            }
        }
    }
    for key in left.keys() {
        if !right.contains_key(key) {
            at.push_back(key);
            patch
                .0
                .push(PatchOperation::Remove(RemoveOperation { path: at.clone() }));
            at.pop_back();
        }
    }
}

/// Whether `a` equals `b`, comparing objects member by member in order first (both objects
/// are in canonical key order when the host diffs them), and by key when the orders differ.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && (a
                    .iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
                    || a == b)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

/// `op` with its paths placed under `at`.
fn placed_under(at: &PointerBuf, op: PatchOperation) -> PatchOperation {
    if at.is_root() {
        return op;
    }
    match op {
        PatchOperation::Add(mut o) => {
            o.path = at.concat(&o.path);
            PatchOperation::Add(o)
        }
        PatchOperation::Remove(mut o) => {
            o.path = at.concat(&o.path);
            PatchOperation::Remove(o)
        }
        PatchOperation::Replace(mut o) => {
            o.path = at.concat(&o.path);
            PatchOperation::Replace(o)
        }
        PatchOperation::Move(mut o) => {
            o.from = at.concat(&o.from);
            o.path = at.concat(&o.path);
            PatchOperation::Move(o)
        }
        PatchOperation::Copy(mut o) => {
            o.from = at.concat(&o.from);
            o.path = at.concat(&o.path);
            PatchOperation::Copy(o)
        }
        PatchOperation::Test(mut o) => {
            o.path = at.concat(&o.path);
            PatchOperation::Test(o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn agrees(left: &Value, right: &Value) {
        assert_eq!(
            diff(left, right),
            json_patch::diff(left, right),
            "{left} -> {right}"
        );
    }

    #[test]
    fn one_field_written_deep_in_a_large_object_is_one_operation() {
        let containers: Vec<Value> = (0..1000)
            .map(|i| json!({"name": format!("c-{i}"), "image": "nginx"}))
            .collect();
        let left = json!({"metadata": {"name": "p"}, "spec": {"containers": containers}});
        let mut right = left.clone();
        right["spec"]["containers"][500]["imagePullPolicy"] = json!("Always");
        let patch = diff(&left, &right);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/spec/containers/500/imagePullPolicy", "value": "Always"}])
        );
        agrees(&left, &right);
    }

    #[test]
    fn equal_documents_make_no_operation() {
        let doc = json!({"a": [1, {"b": null}], "c": "d"});
        assert!(diff(&doc, &doc).0.is_empty());
    }

    #[test]
    fn agrees_with_json_patch_on_every_kind_of_change() {
        let cases = [
            (json!({"a": 1}), json!({"a": 2})),
            (json!({"a": 1}), json!({"b": 1})),
            (json!({"a": 1, "b": 2}), json!({"b": 2})),
            (json!({"a": [1, 2, 3]}), json!({"a": [1, 3]})),
            (json!({"a": [1]}), json!({"a": [1, 2, 3]})),
            (
                json!({"a": [{"x": 1}, {"y": 2}]}),
                json!({"a": [{"x": 1}, {"y": 3, "z": 4}]}),
            ),
            (json!({"a": {"b": 1}}), json!({"a": [1]})),
            (json!({"a/b": {"~c": 1}}), json!({"a/b": {"~c": 2}})),
            (json!({"": 1}), json!({"": 2})),
            (json!({"b": 1, "a": 2}), json!({"a": 2, "b": 3})),
            (json!(null), json!({"a": 1})),
            (json!([1, 2]), json!([2, 1])),
            (json!(1), json!(1.0)),
        ];
        for (left, right) in &cases {
            agrees(left, right);
        }
    }

    fn document() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0i64..4).prop_map(Value::from),
            "[ab/~]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[abc]{1}", inner), 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn agrees_with_json_patch_on_any_pair(left in document(), right in document()) {
            prop_assert_eq!(diff(&left, &right), json_patch::diff(&left, &right));
        }

        #[test]
        fn agrees_with_json_patch_on_a_document_and_its_edit(
            left in document(),
            right in document(),
            key in "[abc]{1}",
        ) {
            let mut edited = left.clone();
            if let Value::Object(map) = &mut edited {
                map.insert(key, right);
            }
            prop_assert_eq!(diff(&left, &edited), json_patch::diff(&left, &edited));
        }
    }
}
