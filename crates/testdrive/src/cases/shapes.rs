//! `testdrive shapes`: every lookup answer of every case, served again with one field of the
//! wrong JSON shape (`docs/semantics.md#lookups`).
//!
//! A case that reads the cluster is run once as written, recording each answer the policy
//! gets. Then, for each successful answer and each value in it (the answer itself, every
//! field, every list element, at any depth), the case runs again with that one value
//! replaced by one of another type (an object or list by a string, an object also by the list
//! of its values in reverse order, a string by an object, a number by a boolean, a boolean by
//! a string). The answer of a field the policy does not read cannot
//! change its verdict; an answer the policy reads must be refused as a failed lookup. So
//! every probe must end in one of:
//!
//! * the case's own verdict, unchanged (message, code, patch and warnings included);
//! * a rejection with code 500 whose message says `unexpected answer`;
//! * an acceptance with a warning that says `unexpected answer` (`onLookupError: accept`).
//!
//! Anything else — another verdict, another message, a patch of the wrong-shaped value — is
//! a field read as absent or copied unchecked: a failure of the probe.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::cases::{ClusterState, ResolvedCase, selected_cases};
use crate::cases::{PolicyReport, policy_name, wasm_file_name};
use policy_host::callbacks::{Callbacks, KubernetesRequest, shared};
use policy_host::cluster::ClusterObjects;
use policy_host::host::{Evaluation, Host};
use policy_host::replay::Recorder;
use policy_host::replay::{Exchange, ExchangeResponse};

/// The text a failed lookup of a wrong-shaped answer carries.
pub const UNEXPECTED_ANSWER: &str = "unexpected answer";

/// Probes of one policy.
#[derive(Debug, Clone, Default)]
pub struct ShapeReport {
    /// Policy name.
    pub policy: String,
    /// Cases whose lookups were probed.
    pub cases: usize,
    /// Probes run.
    pub probes: usize,
    /// Failed probes, each described.
    pub failures: Vec<String>,
    /// Why the policy could not be probed.
    pub error: Option<String>,
}

/// One read of an evaluation and its answer (the payload, or the host's error text).
type Read = (KubernetesRequest, Result<Vec<u8>, String>);

/// The answers one evaluation got, replayed in order with at most one of them changed. A read
/// the case itself did not make at that point (a policy that goes on after a failed lookup,
/// to its exemptions say) is answered from the case's objects, as the cluster would.
struct Probe {
    exchanges: Vec<Read>,
    cursor: usize,
    cluster: ClusterObjects,
}

impl Callbacks for Probe {
    fn kubernetes(&mut self, request: &KubernetesRequest) -> Result<Vec<u8>, String> {
        let index = self.cursor;
        self.cursor += 1;
        match self.exchanges.get(index) {
            Some((recorded, answer)) if recorded == request => answer.clone(),
            _ => self.cluster.kubernetes(request),
        }
    }
}

/// The objects of a case's cluster state, to answer reads the case itself did not make.
fn objects_of(state: &ClusterState) -> ClusterObjects {
    let objects = match state {
        ClusterState::Objects(o) => o.objects().to_vec(),
        ClusterState::Replay(session) => session.objects(),
        ClusterState::None => Vec::new(),
    };
    ClusterObjects::new(objects).unwrap_or_default()
}

/// Whether the case is itself about an answer of the wrong shape (its verdict already says
/// `unexpected answer`): changing another value could only repair it.
fn about_wrong_shapes(eval: &Evaluation) -> bool {
    let r = &eval.response;
    r.message().is_some_and(|m| m.contains(UNEXPECTED_ANSWER))
        || r.warnings
            .iter()
            .flatten()
            .any(|w| w.contains(UNEXPECTED_ANSWER))
}

/// One value of an answer to replace: its JSON pointer and the value of another type.
fn wrong_shapes(answer: &Value) -> Vec<(String, Value)> {
    fn walk(value: &Value, pointer: String, out: &mut Vec<(String, Value)>) {
        // values no reader of the original type accepts (a number is a quantity too, so a
        // string becomes an object; a number becomes a boolean); an object also becomes the
        // list of its values in reverse order, which a reader taking a struct's fields from a
        // list in order would read as another object (in document order it could read the
        // same object, and hide the lax read)
        match value {
            Value::Null => {}
            Value::Object(map) => {
                out.push((pointer.clone(), Value::from("not-the-expected-shape")));
                out.push((pointer.clone(), map.values().rev().cloned().collect()));
            }
            Value::Array(_) => out.push((pointer.clone(), Value::from("not-the-expected-shape"))),
            Value::String(_) => {
                out.push((
                    pointer.clone(),
                    serde_json::json!({"not": "the-expected-shape"}),
                ));
            }
            Value::Number(_) => out.push((pointer.clone(), Value::Bool(true))),
            Value::Bool(_) => out.push((pointer.clone(), Value::from("true"))),
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let escaped = key.replace('~', "~0").replace('/', "~1");
                    walk(child, format!("{pointer}/{escaped}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{pointer}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(answer, String::new(), &mut out);
    out
}

/// The pointer with list indices replaced by `*`: probes of the same field of several
/// elements (`/items/*/metadata/name`) in one answer are one probe of the rule behind it.
fn field_of(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|step| {
            if !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                step
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether a probe's evaluation is allowed next to the case's own (module docs).
fn acceptable(base: &Evaluation, probe: &Evaluation) -> bool {
    let said = |text: Option<&str>| text.is_some_and(|t| t.contains(UNEXPECTED_ANSWER));
    let (b, p) = (&base.response, &probe.response);
    let unchanged = b.allowed == p.allowed
        && b.code() == p.code()
        && b.message() == p.message()
        && b.warnings == p.warnings
        && base.patch == probe.patch;
    let refused = !p.allowed && p.code() == Some(500) && said(p.message());
    let warned = p.allowed && p.warnings.iter().flatten().any(|w| said(Some(w.as_str())));
    unchanged || refused || warned
}

/// A verdict in one line, for failure reports.
fn summary(eval: &Evaluation) -> String {
    let r = &eval.response;
    let mut out = format!(
        "allowed={} code={} message={:?}",
        r.allowed,
        r.code().map_or("none".to_owned(), |c| c.to_string()),
        r.message().unwrap_or("")
    );
    if let Some(w) = &r.warnings {
        out.push_str(&format!(" warnings={w:?}"));
    }
    if let Some(p) = &eval.patch {
        out.push_str(&format!(" patch={p}"));
    }
    out
}

/// Probes every case of `cases` that reads the cluster (settings cases and cases without
/// cluster state are skipped); returns the `apiVersion/Kind`s whose answers were probed.
pub fn probe_cases(
    host: &Host,
    cases: &[ResolvedCase],
    report: &mut ShapeReport,
) -> BTreeSet<String> {
    let mut kinds = BTreeSet::new();
    for case in cases {
        let Ok(scenario) = &case.scenario else {
            continue;
        };
        let Some(request) = &scenario.request else {
            continue;
        };
        if case.expect.settings_valid == Some(false) {
            continue;
        }
        let recorder = shared(Recorder::new(scenario.cluster.callbacks()));
        let Ok(base) = host.validate(request, &scenario.settings, recorder.clone()) else {
            continue;
        };
        if about_wrong_shapes(&base) {
            continue;
        }
        let cluster = objects_of(&scenario.cluster);
        let exchanges: Vec<Exchange> = match recorder.lock() {
            Ok(r) => r.exchanges().to_vec(),
            Err(_) => continue,
        };
        let Some(recorded) = parse(&exchanges) else {
            report.failures.push(format!(
                "{}: the case's reads could not be parsed back",
                case.name
            ));
            continue;
        };
        if !recorded.iter().any(|(_, answer)| answer.is_ok()) {
            continue;
        }
        report.cases += 1;
        let mut probed = HashSet::new();
        for (i, (request_i, answer)) in recorded.iter().enumerate() {
            let Ok(bytes) = answer else {
                continue;
            };
            kinds.insert(format!("{}/{}", request_i.api_version(), request_i.kind()));
            let Ok(document) = serde_json::from_slice::<Value>(bytes) else {
                continue;
            };
            for (pointer, wrong) in wrong_shapes(&document) {
                if !probed.insert((i, field_of(&pointer), wrong.is_array())) {
                    continue;
                }
                let mut changed = document.clone();
                if let Some(slot) = changed.pointer_mut(&pointer) {
                    *slot = wrong.clone();
                }
                let mut exchanges = recorded.clone();
                if let Some(entry) = exchanges.get_mut(i) {
                    entry.1 = Ok(changed.to_string().into_bytes());
                }
                let probe = shared(Probe {
                    exchanges,
                    cursor: 0,
                    cluster: cluster.clone(),
                });
                report.probes += 1;
                match host.validate(request, &scenario.settings, probe) {
                    Ok(eval) if acceptable(&base, &eval) => {}
                    Ok(eval) => report.failures.push(format!(
                        "{}: {} answer{} set to {wrong}: {}\n      the case itself: {}",
                        case.name,
                        request_i.summary(),
                        if pointer.is_empty() {
                            String::new()
                        } else {
                            format!(" {pointer}")
                        },
                        summary(&eval),
                        summary(&base)
                    )),
                    Err(e) => report
                        .failures
                        .push(format!("{}: host error: {e}", case.name)),
                }
            }
        }
    }
    kinds
}

/// The recorded exchanges as requests and answers.
fn parse(exchanges: &[Exchange]) -> Option<Vec<Read>> {
    exchanges
        .iter()
        .map(|e| {
            let request = KubernetesRequest::from_session_string(&e.request, "recorded").ok()?;
            let answer = match &e.response {
                ExchangeResponse::Success { payload } => Ok(payload.clone().into_bytes()),
                ExchangeResponse::Error { message } => Err(message.clone()),
            };
            Some((request, answer))
        })
        .collect()
}

/// Probes every case of the policy directory `dir` against its wasm in `wasm_dir`.
pub fn probe_policy(dir: &Path, wasm_dir: &Path) -> ShapeReport {
    let policy = policy_name(dir);
    let mut report = ShapeReport {
        policy: policy.clone(),
        ..Default::default()
    };
    let mut cases_report = PolicyReport::default();
    let Some(cases) = selected_cases(dir, &policy, None, &mut cases_report) else {
        return report;
    };
    let wasm_path = wasm_dir.join(wasm_file_name(dir));
    let host = std::fs::read(&wasm_path)
        .map_err(|e| format!("cannot read {}: {e}", wasm_path.display()))
        .and_then(|wasm| {
            let metadata = crate::cases::policy_metadata(dir).map_err(|e| e.to_string())?;
            let host = Host::load(&wasm, metadata.clone()).map_err(|e| e.to_string())?;
            Ok((host, metadata))
        });
    let (host, metadata) = match host {
        Ok(loaded) => loaded,
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    };
    let probed = probe_cases(&host, &cases, &mut report);
    // Every kind the policy may read must have its answers probed by some case.
    for resource in metadata.iter().flat_map(|m| &m.context_aware_resources) {
        let kind = format!("{}/{}", resource.api_version, resource.kind);
        if !probed.contains(&kind) {
            report.failures.push(format!(
                "no case reads {kind} (declared in contextAwareResources): its answers are never probed"
            ));
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_value_gets_a_value_of_another_type() {
        let answer = json!({"metadata": {"labels": {"a/b": "x"}}, "items": [1, true, null]});
        let probes = wrong_shapes(&answer);
        let pointers: Vec<&str> = probes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "",
                "",
                "/metadata",
                "/metadata",
                "/metadata/labels",
                "/metadata/labels",
                "/metadata/labels/a~1b",
                "/items",
                "/items/0",
                "/items/1"
            ]
        );
        // an object also becomes the list of its values, in reverse order
        assert_eq!(probes[5].1, json!(["x"]));
        let two = wrong_shapes(&json!({"kind": "ClusterRole", "name": "admin"}));
        assert_eq!(two[1].1, json!(["admin", "ClusterRole"]));
        for (pointer, wrong) in &probes {
            let original = answer.pointer(pointer).unwrap();
            assert_ne!(
                std::mem::discriminant(original),
                std::mem::discriminant(wrong),
                "{pointer}"
            );
        }
    }

    #[test]
    fn list_elements_are_one_field() {
        assert_eq!(field_of("/items/3/metadata/name"), "/items/*/metadata/name");
        assert_eq!(field_of(""), "");
    }
}
