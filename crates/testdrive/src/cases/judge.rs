//! Running one case on fresh instances and judging the answer by its expectations.

use std::path::PathBuf;

use serde_json::Value;

use super::resolve::{ResolvedCase, Scenario};
use super::schema::Expect;
use policy_host::callbacks::SharedCallbacks;
use policy_host::host::{Evaluation, Host};

/// The result of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseOutcome {
    /// The case name.
    pub name: String,
    /// The case file.
    pub file: PathBuf,
    /// Why the case failed; empty when it passed.
    pub failures: Vec<String>,
}

impl CaseOutcome {
    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

pub(crate) fn quote(s: Option<&str>) -> String {
    match s {
        Some(s) => format!("{s:?}"),
        None => "(no message)".to_owned(),
    }
}

/// Adds to `failures` every way `actual` misses the expected message fragments, exact message
/// or absence.
pub fn check_message(expect: &Expect, actual: Option<&str>, failures: &mut Vec<String>) {
    let mut fragments: Vec<&String> = expect.message.iter().collect();
    fragments.extend(expect.messages.iter().flatten());
    for f in fragments {
        if !actual.is_some_and(|m| m.contains(f.as_str())) {
            failures.push(format!(
                "message: expected to contain {f:?}, got {}",
                quote(actual)
            ));
        }
    }
    if let Some(exact) = &expect.message_exact
        && actual != Some(exact.as_str())
    {
        failures.push(format!(
            "message: expected exactly {exact:?}, got {}",
            quote(actual)
        ));
    }
    if expect.no_message && actual.is_some() {
        failures.push(format!("message: expected none, got {}", quote(actual)));
    }
}

pub(crate) fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Adds to `failures` every way `eval` differs from `expect` (verdict, code, message, patch,
/// warnings; not `settingsValid`).
pub fn check_evaluation(expect: &Expect, eval: &Evaluation, failures: &mut Vec<String>) {
    let resp = &eval.response;
    if let Some(allowed) = expect.allowed
        && allowed != resp.allowed
    {
        failures.push(format!(
            "allowed: expected {allowed}, got {} (message: {}, code: {})",
            resp.allowed,
            quote(resp.message()),
            resp.code().map_or("none".to_owned(), |c| c.to_string())
        ));
    }
    if let Some(code) = expect.code
        && Some(code) != resp.code()
    {
        failures.push(format!(
            "code: expected {code}, got {} (message: {})",
            resp.code().map_or("none".to_owned(), |c| c.to_string()),
            quote(resp.message())
        ));
    }
    check_message(expect, resp.message(), failures);
    let actual_patch = eval.patch.clone().unwrap_or(Value::Array(Vec::new()));
    if let Some(patch) = &expect.patch {
        let expected = Value::Array(patch.clone());
        if expected != actual_patch {
            failures.push(format!(
                "patch differs:\n      expected: {}\n      actual:   {}",
                compact(&expected),
                compact(&actual_patch)
            ));
        }
    }
    if expect.no_patch && eval.patch.is_some() {
        failures.push(format!(
            "patch: expected no mutation, got {}",
            compact(&actual_patch)
        ));
    }
    let warnings: &[String] = resp.warnings.as_deref().unwrap_or(&[]);
    for fragment in expect.warnings.iter().flatten() {
        if !warnings.iter().any(|w| w.contains(fragment.as_str())) {
            failures.push(format!(
                "warnings: expected one containing {fragment:?}, got {warnings:?}"
            ));
        }
    }
    if let Some(n) = expect.warnings_count
        && n != warnings.len()
    {
        failures.push(format!(
            "warnings: expected {n}, got {}: {warnings:?}",
            warnings.len()
        ));
    }
    if expect.no_warnings && !warnings.is_empty() {
        failures.push(format!("warnings: expected none, got {warnings:?}"));
    }
}

/// Runs one case on fresh instances of `host`: `validate_settings`, then
/// `validate`, then (for mutations) the idempotence re-run.
pub fn run_case(host: &Host, case: &ResolvedCase) -> CaseOutcome {
    let mut failures = Vec::new();
    run_case_into(host, case, &mut failures);
    CaseOutcome {
        name: case.name.clone(),
        file: case.file.clone(),
        failures,
    }
}

fn run_case_into(host: &Host, case: &ResolvedCase, failures: &mut Vec<String>) {
    let scenario = match &case.scenario {
        Ok(s) => s,
        Err(e) => {
            failures.push(format!("invalid case: {e}"));
            return;
        }
    };
    let expect = &case.expect;
    let settings = match host.validate_settings(&scenario.settings) {
        Ok(s) => s,
        Err(e) => {
            failures.push(format!("validate_settings failed: {e}"));
            return;
        }
    };
    if expect.settings_valid == Some(false) {
        if settings.valid {
            failures.push(format!(
                "settings: expected invalid, but validate_settings accepted {}",
                compact(&scenario.settings)
            ));
        } else {
            check_message(expect, settings.message.as_deref(), failures);
        }
        return;
    }
    if !settings.valid {
        failures.push(format!(
            "settings rejected by validate_settings: {}",
            quote(settings.message.as_deref())
        ));
        return;
    }
    let Some(request) = &scenario.request else {
        failures.push("no request".to_owned());
        return;
    };
    let callbacks = scenario.cluster.callbacks();
    let eval = match host.validate(request, &scenario.settings, callbacks.clone()) {
        Ok(e) => e,
        Err(e) => {
            failures.push(format!("host error: {e}"));
            return;
        }
    };
    check_evaluation(expect, &eval, failures);
    let mut fixture_problems = 0;
    match callbacks.lock() {
        Ok(cb) => {
            let problems = cb.problems();
            fixture_problems = problems.len();
            failures.extend(problems);
            failures.extend(cb.unused());
        }
        Err(_) => failures.push("callbacks lock poisoned".to_owned()),
    }
    if case.idempotent
        && eval.response.allowed
        && let (Some(_), Some(mutated)) = (&eval.patch, &eval.mutated_object)
    {
        check_idempotence(host, request, mutated, scenario, &callbacks, failures);
    }
    // host-call errors explain a surprising verdict, unless the fixture
    // problems above already did
    if !failures.is_empty() && fixture_problems == 0 && !eval.host_call_errors.is_empty() {
        failures.push(format!(
            "(host-call errors seen by the policy: {})",
            eval.host_call_errors.join(" | ")
        ));
    }
}

/// Re-runs the policy on its own output (the request with the mutated object): it must
/// accept it without a further patch (docs/semantics.md#mutations).
fn check_idempotence(
    host: &Host,
    request: &Value,
    mutated: &Value,
    scenario: &Scenario,
    callbacks: &SharedCallbacks,
    failures: &mut Vec<String>,
) {
    let mut again = request.clone();
    if let Value::Object(map) = &mut again {
        map.insert("object".to_owned(), mutated.clone());
    }
    if let Ok(mut cb) = callbacks.lock() {
        cb.reset();
    }
    match host.validate(&again, &scenario.settings, callbacks.clone()) {
        Err(e) => failures.push(format!("idempotence re-run: host error: {e}")),
        Ok(second) if !second.response.allowed => failures.push(format!(
            "not idempotent: re-running on the mutated object was rejected: {}",
            quote(second.response.message())
        )),
        Ok(second) => {
            if let Some(p) = &second.patch {
                failures.push(format!(
                    "not idempotent: re-running on the mutated object patched again: {}",
                    compact(p)
                ));
            }
        }
    }
    if let Ok(cb) = callbacks.lock() {
        failures.extend(
            cb.problems()
                .into_iter()
                .map(|p| format!("idempotence re-run: {p}")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(
        allowed: bool,
        message: Option<&str>,
        patch: Option<Value>,
        warnings: &[&str],
    ) -> Evaluation {
        Evaluation {
            response: policy_host::AdmissionResponse {
                uid: "u".into(),
                allowed,
                status: message.map(|m| policy_host::host::ResponseStatus {
                    message: Some(m.into()),
                    code: Some(403),
                }),
                warnings: (!warnings.is_empty())
                    .then(|| warnings.iter().map(|w| w.to_string()).collect()),
                ..Default::default()
            },
            patch,
            mutated_object: None,
            host_call_errors: vec![],
        }
    }

    fn expect(yaml: &str) -> Expect {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn failures(e: &Expect, ev: &Evaluation) -> Vec<String> {
        let mut f = Vec::new();
        check_evaluation(e, ev, &mut f);
        f
    }

    #[test]
    fn expectations() {
        let rejected = eval(false, Some("operator \"Exists\" is refused"), None, &[]);
        assert!(
            failures(
                &expect("{allowed: false, code: 403, message: 'operator \"Exists\"'}"),
                &rejected
            )
            .is_empty()
        );
        assert!(
            failures(
                &expect("{allowed: false, messages: [operator, refused]}"),
                &rejected
            )
            .is_empty()
        );
        let f = failures(
            &expect("{allowed: true, code: 400, message: nope}"),
            &rejected,
        );
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].starts_with("allowed: expected true, got false"));
        assert!(
            failures(
                &expect("{allowed: false, messageExact: 'operator \"Exists\" is refused'}"),
                &rejected
            )
            .is_empty()
        );
        assert_eq!(
            failures(&expect("{allowed: false, noMessage: true}"), &rejected).len(),
            1
        );

        let patch = json!([{"op": "add", "path": "/spec/x", "value": 1}]);
        let mutated = eval(true, None, Some(patch.clone()), &["toleration added"]);
        assert!(failures(&expect("{allowed: true, patch: [{op: add, path: /spec/x, value: 1}], warnings: [added], warningsCount: 1}"), &mutated).is_empty());
        let f = failures(
            &expect("{allowed: true, patch: [{op: add, path: /spec/x, value: 2}]}"),
            &mutated,
        );
        assert!(f[0].contains("patch differs"), "{f:?}");
        assert_eq!(
            failures(&expect("{allowed: true, noPatch: true}"), &mutated).len(),
            1
        );
        assert_eq!(
            failures(&expect("{allowed: true, patch: []}"), &mutated).len(),
            1
        );
        assert_eq!(
            failures(&expect("{allowed: true, noWarnings: true}"), &mutated).len(),
            1
        );
        assert_eq!(
            failures(&expect("{allowed: true, warnings: [other]}"), &mutated).len(),
            1
        );

        let plain = eval(true, None, None, &[]);
        assert!(
            failures(
                &expect("{allowed: true, patch: [], noWarnings: true, noMessage: true}"),
                &plain
            )
            .is_empty()
        );
    }

    #[test]
    fn snake_case_aliases() {
        let e = expect("{settings_valid: false, message_exact: x}");
        assert_eq!(e.settings_valid, Some(false));
        assert_eq!(e.message_exact.as_deref(), Some("x"));
    }
}
