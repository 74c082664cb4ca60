//! Test support shared by the policies (feature `testing`): generators of arbitrary
//! Kubernetes-shaped JSON for the "never panics, never fails open" property tests.

use proptest::prelude::*;
use serde_json::{Value, json};

/// Arbitrary JSON whose object keys are drawn mostly from `keys` and whose strings are
/// drawn partly from `strings`, so that generated documents reach deep into the fields a
/// policy reads (`spec`, `template`, `containers`, ...) with values of every JSON type.
pub fn arb_json(
    keys: &'static [&'static str],
    strings: &'static [&'static str],
) -> impl Strategy<Value = Value> {
    let known_strings = proptest::sample::select(strings).prop_map(|s| Value::String(s.to_owned()));
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z0-9:/.@=-]{0,10}".prop_map(Value::String),
        known_strings,
    ];
    let key = prop_oneof![
        3 => proptest::sample::select(keys).prop_map(str::to_owned),
        1 => "[a-z]{1,6}",
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Checks the shape of a verdict reached without cluster state: an acceptance carries no
/// code; a rejection carries a message and 400 (malformed input) or 403 (violation) —
/// never a 500, which would mean the policy failed instead of judging.
pub fn judged_without_lookups(
    r: &crate::policy::ValidationResponse,
) -> Result<(), proptest::test_runner::TestCaseError> {
    if r.accepted {
        prop_assert!(r.code.is_none(), "accepted with code {:?}", r.code);
    } else {
        prop_assert!(matches!(r.code, Some(400) | Some(403)), "{:?}", r.code);
        prop_assert!(r.message.is_some());
    }
    Ok(())
}

/// Object keys of pod-bearing resources, for [`arb_json`].
pub const POD_KEYS: &[&str] = &[
    "spec",
    "template",
    "jobTemplate",
    "metadata",
    "labels",
    "annotations",
    "namespace",
    "ownerReferences",
    "controller",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "securityContext",
    "tolerations",
    "key",
    "operator",
    "value",
    "effect",
    "privileged",
    "runAsUser",
    "capabilities",
    "drop",
    "image",
    "imagePullPolicy",
    "volumes",
    "volumeMounts",
    "hostPath",
    "path",
    "name",
    "seccompProfile",
    "type",
];

#[cfg(test)]
mod tests {
    use super::*;

    proptest! {
        #[test]
        fn generated_documents_use_the_given_vocabulary(v in arb_json(&["spec"], &["x"])) {
            fn ok(v: &Value) -> bool {
                match v {
                    Value::Object(m) => m.iter().all(|(k, v)| (k == "spec" || k.chars().all(|c| c.is_ascii_lowercase())) && ok(v)),
                    Value::Array(a) => a.iter().all(ok),
                    _ => true,
                }
            }
            prop_assert!(ok(&v));
        }
    }
}
