//! Cases generated from a policy's own cases, run with them by `check` and `e2e`.
//!
//! **`null` in settings** (`docs/semantics.md#settings`): for every top-level settings key
//! that the policy's valid cases write, one case sets that key to `null` in the first such
//! settings and expects them refused with the key's path:
//! `<key>: invalid type: null (write a value, or leave the key out)`. A key that one of the
//! policy's own cases sets to `null` with valid settings is one whose section gives `null` a
//! meaning; it gets no generated case (its own cases say what `null` does).

use std::collections::BTreeSet;

use serde_json::Value;

use super::resolve::{ResolvedCase, Scenario};
use super::schema::Expect;
use crate::cases::ClusterState;

use policy_decode::strict::NULL_REFUSED;

/// The generated `null` cases of a policy whose written cases are `cases`.
pub fn null_settings(cases: &[ResolvedCase]) -> Vec<ResolvedCase> {
    let valid = |case: &&ResolvedCase| case.expect.settings_valid != Some(false);
    let settings_of = |case: &ResolvedCase| match &case.scenario {
        Ok(Scenario {
            settings: Value::Object(map),
            ..
        }) => Some(map.clone()),
        _ => None,
    };
    let nullable: BTreeSet<String> = cases
        .iter()
        .filter(valid)
        .filter_map(&settings_of)
        .flat_map(|map| {
            map.into_iter()
                .filter(|(_, v)| v.is_null())
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for case in cases.iter().filter(valid) {
        let Some(settings) = settings_of(case) else {
            continue;
        };
        for (key, value) in &settings {
            if value.is_null() || nullable.contains(key) || !done.insert(key.clone()) {
                continue;
            }
            let mut with_null = settings.clone();
            with_null.insert(key.clone(), Value::Null);
            out.push(ResolvedCase {
                file: case.file.clone(),
                name: format!("generated: settings {key}: null is refused"),
                scenario: Ok(Scenario {
                    settings: Value::Object(with_null),
                    request: None,
                    cluster: ClusterState::None,
                    session_file: None,
                }),
                expect: Expect {
                    settings_valid: Some(false),
                    message_exact: Some(format!("{key}: {NULL_REFUSED}")),
                    ..Expect::default()
                },
                idempotent: false,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(name: &str, settings: Value, settings_valid: Option<bool>) -> ResolvedCase {
        ResolvedCase {
            file: "cases/x.yaml".into(),
            name: name.to_owned(),
            scenario: Ok(Scenario {
                settings,
                request: None,
                cluster: ClusterState::None,
                session_file: None,
            }),
            expect: Expect {
                settings_valid,
                ..Expect::default()
            },
            idempotent: true,
        }
    }

    #[test]
    fn one_case_per_key_of_valid_settings_except_documented_nulls() {
        let cases = [
            case("a", json!({"allowed": ["x"], "mode": "warn"}), None),
            case("b", json!({"allowed": ["y"], "default": "z"}), None),
            case("c", json!({"override": null, "allowed": []}), None),
            case("d", json!({"bogus": 1}), Some(false)),
        ];
        let generated = null_settings(&cases);
        let names: Vec<&str> = generated.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "generated: settings allowed: null is refused",
                "generated: settings mode: null is refused",
                "generated: settings default: null is refused"
            ]
        );
        let first = &generated[0];
        assert_eq!(
            first.scenario.as_ref().unwrap().settings,
            json!({"allowed": null, "mode": "warn"})
        );
        assert_eq!(first.expect.settings_valid, Some(false));
        assert_eq!(
            first.expect.message_exact.as_deref(),
            Some("allowed: invalid type: null (write a value, or leave the key out)")
        );
    }
}
