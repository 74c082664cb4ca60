//! A request's outcome through the API server against what its case expects: the verdict,
//! the refusing webhook and its message, and for an admitted object every change the
//! expected patch makes (the object returned also carries the API server's own defaults).

use serde_json::Value;

use crate::admission::{Outcome, policy_id};
use testdrive::cases::judge::check_message;
use testdrive::cases::schema::Expect;

/// Every way `outcome` differs from `expect`, the expectation of binding `id` (a refusal
/// must be its own).
pub fn judge(id: &str, expect: &Expect, outcome: &Outcome, sent: Option<&Value>) -> Vec<String> {
    let mut failures = Vec::new();
    let expected = expect.allowed.unwrap_or(true);
    if expected != outcome.allowed {
        failures.push(format!(
            "allowed: expected {expected}, got {}{}",
            outcome.allowed,
            describe_refusal(outcome)
        ));
        return failures;
    }
    if !outcome.allowed {
        match outcome.refused_by.as_deref().map(policy_id) {
            Some(by) if by == id => check_message(expect, Some(&outcome.message), &mut failures),
            _ => failures.push(format!(
                "refused, but not by {id}{}",
                describe_refusal(outcome)
            )),
        }
        return failures;
    }
    if let (Some(patch), Some(sent), Some(admitted)) = (&expect.patch, sent, &outcome.object) {
        failures.extend(patch_missing(patch, sent, admitted));
    }
    failures
}

/// ` (refused by <webhook>: <message>)`, or nothing.
pub fn describe_refusal(outcome: &Outcome) -> String {
    if outcome.allowed {
        return String::new();
    }
    format!(
        " (refused by {}: {})",
        outcome.refused_by.as_deref().unwrap_or("the API server"),
        outcome.message
    )
}

/// Each change of `patch` (applied to `sent`) that `admitted` does not show.
pub fn patch_missing(patch: &[Value], sent: &Value, admitted: &Value) -> Vec<String> {
    let Ok(ops) = serde_json::from_value::<json_patch::Patch>(Value::Array(patch.to_vec())) else {
        return vec![format!(
            "the expected patch is not a JSON Patch: {}",
            Value::Array(patch.to_vec())
        )];
    };
    let mut expected = sent.clone();
    if let Err(e) = json_patch::patch(&mut expected, &ops) {
        return vec![format!(
            "the expected patch does not apply to the object sent: {e}"
        )];
    }
    let mut out = Vec::new();
    for op in patch {
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let want = expected.pointer(path);
        let got = admitted.pointer(path);
        let same = match (want, got) {
            (Some(w), Some(g)) => contains(g, w),
            (None, None) => true,
            _ => false,
        };
        if !same {
            out.push(format!(
                "patch: {path} expected {}, the admitted object has {}",
                want.map_or("nothing".into(), Value::to_string),
                got.map_or("nothing".into(), Value::to_string)
            ));
        }
    }
    out
}

/// Whether `got` holds everything of `want` (objects: every key, recursively; the API
/// server and helm may add defaults, status and metadata beside them).
pub fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| contains(gv, wv))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(gv, wv)| contains(gv, wv))
        }
        _ => got == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_is_found_beside_the_api_servers_defaults() {
        let sent = json!({"spec": {"containers": [{"name": "a"}]}});
        let patch = vec![
            json!({"op": "add", "path": "/spec/containers/0/imagePullPolicy", "value": "Always"}),
        ];
        let admitted = json!({"spec": {"containers": [{"name": "a", "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log"}]}});
        assert!(patch_missing(&patch, &sent, &admitted).is_empty());
        let unpatched =
            json!({"spec": {"containers": [{"name": "a", "imagePullPolicy": "IfNotPresent"}]}});
        assert_eq!(patch_missing(&patch, &sent, &unpatched).len(), 1);
    }
}
