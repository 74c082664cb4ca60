//! What an audit request is told (`docs/semantics.md#audit`): an existing object passes only
//! when the policy would admit it unchanged. A mutation the policy would make becomes a
//! finding per changed field, naming the value found and the value the policy writes.

use kubewarden_policy_sdk::response::ValidationResponse;
use serde_json::Value;

use crate::verdict::Violation;
use policy_decode::path::FieldPath;

/// Map fields whose keys are shown as `["key"]` (`spec.nodeSelector["pool"]`).
const MAPS: &[&str] = &[
    "labels",
    "annotations",
    "nodeSelector",
    "limits",
    "requests",
    "overhead",
];

/// The fields `mutated` changes in `original`, in document order: each as a violation
/// `<path>: <found>; <policy> writes <value>` (`missing` when the field is absent).
///
/// ```
/// use serde_json::json;
/// let found = policy_admission::audit::changes(
///     "image-pull-policy",
///     &json!({"spec": {"containers": [{"imagePullPolicy": "IfNotPresent"}]}}),
///     &json!({"spec": {"containers": [{"imagePullPolicy": "Always"}]}}),
/// );
/// assert_eq!(found[0].to_string(),
///     "spec.containers[0].imagePullPolicy: \"IfNotPresent\"; image-pull-policy writes \"Always\" into new objects");
/// ```
pub fn changes(policy: &str, original: &Value, mutated: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    diff(policy, FieldPath::empty(), "", original, mutated, &mut out);
    out
}

fn child(path: &FieldPath, parent: &str, key: &str) -> FieldPath {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric());
    if MAPS.contains(&parent) || !plain || path.is_empty() && key.is_empty() {
        path.key(key)
    } else {
        path.field(key)
    }
}

fn diff(
    policy: &str,
    path: FieldPath,
    parent: &str,
    found: &Value,
    written: &Value,
    out: &mut Vec<Violation>,
) {
    match (found, written) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, new) in b {
                let at = child(&path, parent, key);
                match a.get(key) {
                    Some(old) => diff(policy, at, key, old, new, out),
                    None => out.push(finding(policy, at, None, new)),
                }
            }
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(Violation {
                    path: child(&path, parent, key),
                    problem: format!("present; {policy} removes it from new objects"),
                });
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (old, new)) in a.iter().zip(b).enumerate() {
                diff(policy, path.index(i), parent, old, new, out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(finding(policy, path, Some(a), b)),
    }
}

fn finding(policy: &str, path: FieldPath, found: Option<&Value>, written: &Value) -> Violation {
    let found = found.map_or_else(|| "missing".to_owned(), Value::to_string);
    Violation {
        path,
        problem: format!("{found}; {policy} writes {written} into new objects"),
    }
}

/// The answer to an audit request (`docs/semantics.md#audit`): `response` unchanged unless
/// it accepts with a mutation of `original`, which becomes a 403 listing every change.
pub fn report(policy: &str, original: &Value, response: ValidationResponse) -> ValidationResponse {
    let Some(mutated) = response
        .mutated_object
        .as_ref()
        .filter(|_| response.accepted)
    else {
        return response;
    };
    let found = changes(policy, original, mutated);
    if found.is_empty() {
        return ValidationResponse {
            mutated_object: None,
            ..response
        };
    }
    let message = found
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    ValidationResponse {
        accepted: false,
        message: Some(message),
        code: Some(403),
        mutated_object: None,
        ..response
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )]
    use super::*;
    use serde_json::json;

    fn accepted(mutated: Option<Value>) -> ValidationResponse {
        ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: mutated,
            audit_annotations: None,
            warnings: Some(vec!["w".into()]),
        }
    }

    #[test]
    fn names_added_and_replaced_fields_in_document_order() {
        let original = json!({"metadata": {"name": "p"}, "spec": {"nodeSelector": {"zone": "a"},
            "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]}});
        let mutated = json!({"metadata": {"name": "p"}, "spec": {"nodeSelector": {"zone": "a", "pool": "renewable"},
            "containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
            "activeDeadlineSeconds": 1800}});
        let found: Vec<String> = changes("p", &original, &mutated)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                r#"spec.nodeSelector["pool"]: missing; p writes "renewable" into new objects"#,
                r#"spec.containers[0].resources.limits["cpu"]: "1"; p writes "2" into new objects"#,
                r#"spec.containers[0].resources.limits["memory"]: missing; p writes "1Gi" into new objects"#,
                "spec.activeDeadlineSeconds: missing; p writes 1800 into new objects",
            ]
        );
    }

    #[test]
    fn lists_of_another_length_are_one_change_and_removals_are_named() {
        let original = json!({"spec": {"tolerations": [], "x": 1}});
        let mutated = json!({"spec": {"tolerations": [{"key": "k"}]}});
        let found: Vec<String> = changes("p", &original, &mutated)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                r#"spec.tolerations: []; p writes [{"key":"k"}] into new objects"#,
                "spec.x: present; p removes it from new objects",
            ]
        );
    }

    #[test]
    fn a_mutation_is_a_finding_and_the_rest_is_kept() {
        let original = json!({"spec": {}});
        let r = report("p", &original, accepted(Some(json!({"spec": {"a": "b"}}))));
        assert!(!r.accepted);
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(r#"spec.a: missing; p writes "b" into new objects"#)
        );
        assert!(r.mutated_object.is_none());
        assert_eq!(r.warnings, Some(vec!["w".to_owned()]));
    }

    #[test]
    fn an_unchanged_object_or_a_plain_answer_passes() {
        let original = json!({"spec": {"a": "b"}});
        let r = report("p", &original, accepted(Some(original.clone())));
        assert!(r.accepted && r.mutated_object.is_none());
        let r = report("p", &original, accepted(None));
        assert!(r.accepted);
        let refused = ValidationResponse {
            accepted: false,
            message: Some("no".into()),
            code: Some(403),
            ..accepted(None)
        };
        assert_eq!(
            report("p", &original, refused).message.as_deref(),
            Some("no")
        );
    }
}
