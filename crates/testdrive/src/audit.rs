//! `testdrive audit`: the audit scanner's view of a policy (`docs/semantics.md#audit`).
//!
//! Each policy with `backgroundAudit: true` keeps `test_data/<policy>/audit.yaml`: objects
//! an operator's cluster holds, each with the report an operator expects (`pass` or `fail`,
//! and for `fail` a fragment of the message). Every object is sent as Kubewarden's audit
//! scanner sends it — an AdmissionReview with `operation: CREATE`, an empty `userInfo`, no
//! `oldObject`, kind, resource (holding the Kind), namespace and name taken from the object —
//! through the wasm in testdrive and, when a policy-server is given, through its
//! `/audit/<policy-id>` endpoint. An answer with `allowed: true` is a pass.
//!
//! ```yaml
//! cluster: [<objects answering the policy's lookups>]
//! audits:
//! - name: tenant solar        # one policy id in policy-server
//!   settings: {...}
//!   objects:
//!   - {name: scheduled Pod, object: {...}, expect: pass}
//!   - {name: Pod on a shared node, object: {...}, expect: fail, message: "lacks the required"}
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::bench::server::{Binding, PolicyServer, write_review};
use crate::cases::{policy_metadata, policy_name, wasm_file_name};
use crate::e2e::host_disagreement;
use crate::http::{free_port, http_post};
use crate::kube::apiserver::FakeApi;
use crate::release::publish::server::read_answer;
use policy_host::callbacks::shared;
use policy_host::cluster::ClusterObjects;
use policy_host::error::{Error, Result, read_text};
use policy_host::host::{Evaluation, Host};
use policy_host::replay::Recorder;

/// An audit file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditFile {
    /// Objects that answer the policy's lookups.
    #[serde(default)]
    pub cluster: Vec<Value>,
    /// One entry per set of settings.
    pub audits: Vec<Audit>,
}

/// One binding of the policy and the objects it audits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// What the binding stands for.
    pub name: String,
    /// The policy's settings.
    #[serde(default = "empty_settings")]
    pub settings: Value,
    /// The existing objects.
    pub objects: Vec<AuditObject>,
}

fn empty_settings() -> Value {
    json!({})
}

/// One existing object and the report expected for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditObject {
    /// What the object stands for.
    pub name: String,
    /// The object as the API server stores it.
    pub object: Value,
    /// The expected report.
    pub expect: Report,
    /// A fragment of the refusal's message (required with `fail`).
    #[serde(default)]
    pub message: Option<String>,
}

/// A PolicyReport result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Report {
    /// `allowed: true`.
    Pass,
    /// `allowed: false`.
    Fail,
}

impl Report {
    fn of(allowed: bool) -> Self {
        if allowed { Report::Pass } else { Report::Fail }
    }
}

/// The AdmissionReview request the audit scanner sends for `object`: its kind, the Kind again
/// as the resource, its namespace, name and uid, `operation: CREATE`, an empty `userInfo`
/// and no `oldObject`.
///
/// ```
/// let r = testdrive::audit::scanner_request(&serde_json::json!({"apiVersion": "apps/v1",
///     "kind": "Deployment", "metadata": {"name": "web", "namespace": "solar-dev"}}));
/// assert_eq!(r["resource"], serde_json::json!({"group": "apps", "version": "v1", "resource": "Deployment"}));
/// assert_eq!((r["operation"].as_str(), r["namespace"].as_str()), (Some("CREATE"), Some("solar-dev")));
/// assert_eq!((&r["userInfo"], &r["oldObject"]), (&serde_json::json!({}), &serde_json::Value::Null));
/// ```
pub fn scanner_request(object: &Value) -> Value {
    let text = |path: &[&str]| {
        path.iter()
            .try_fold(object, |v, k| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let api_version = text(&["apiVersion"]);
    let (group, version) = api_version
        .split_once('/')
        .map_or((String::new(), api_version.clone()), |(g, v)| {
            (g.to_owned(), v.to_owned())
        });
    let kind = text(&["kind"]);
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let mut request = json!({
        "uid": text(&["metadata", "uid"]),
        "kind": gvk,
        "resource": {"group": group, "version": version, "resource": kind},
        "requestKind": gvk,
        "operation": "CREATE",
        "userInfo": {},
        "object": object,
        "oldObject": null,
        "options": null,
    });
    for (field, value) in [
        ("name", text(&["metadata", "name"])),
        ("namespace", text(&["metadata", "namespace"])),
    ] {
        if let (false, Some(map)) = (value.is_empty(), request.as_object_mut()) {
            map.insert(field.into(), Value::String(value));
        }
    }
    request
}

/// Where the audit runs and whether policy-server runs it too.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// Where the policy wasm files are.
    pub wasm_dir: PathBuf,
    /// The policy-server binary, when the audit also goes through it.
    pub policy_server: Option<PathBuf>,
    /// Where the annotated modules are (policy-server loads only these).
    pub annotated_dir: PathBuf,
    /// Where policies.yml, request bodies and the server's log go.
    pub work_dir: PathBuf,
    /// The test data root (`test_data`).
    pub test_data: PathBuf,
}

/// The outcome of one policy's audit file.
#[derive(Debug, Clone, Default)]
pub struct PolicyAudit {
    /// The policy's name.
    pub policy: String,
    /// Objects audited.
    pub objects: usize,
    /// Passes reported by testdrive.
    pub pass: usize,
    /// Failures reported by testdrive.
    pub fail: usize,
    /// Passes and failures reported by policy-server, when it ran.
    pub server: Option<(usize, usize)>,
    /// Every way the reports miss the expectations or differ between the hosts.
    pub problems: Vec<String>,
}

/// The audit file of the policy in `dir`: `None` when the policy has none and is not audited
/// (`backgroundAudit: false`); a problem when one of the two is missing.
pub fn audit_policy(dir: &Path, options: &AuditOptions) -> Result<Option<PolicyAudit>> {
    let policy = policy_name(dir);
    let metadata = policy_metadata(dir)?;
    let audited = metadata.as_ref().is_some_and(|m| m.background_audit);
    let file = options.test_data.join(&policy).join("audit.yaml");
    let mut report = PolicyAudit {
        policy: policy.clone(),
        ..PolicyAudit::default()
    };
    match (audited, file.is_file()) {
        (false, false) => return Ok(None),
        (true, false) => {
            report.problems.push(format!(
                "backgroundAudit: true, but {} is missing",
                file.display()
            ));
            return Ok(Some(report));
        }
        (false, true) => {
            report.problems.push(format!(
                "{} exists, but backgroundAudit is false",
                file.display()
            ));
            return Ok(Some(report));
        }
        (true, true) => {}
    }
    let text = read_text(&file)?;
    let audit: AuditFile =
        serde_yaml::from_str(&text).map_err(|e| Error::parse(file.display(), e))?;
    let cluster =
        ClusterObjects::new(audit.cluster.clone()).map_err(|e| Error::parse(file.display(), e))?;
    let wasm_path = options.wasm_dir.join(wasm_file_name(dir));
    let wasm = std::fs::read(&wasm_path).map_err(|e| Error::io(&wasm_path, e))?;
    let host = Host::load(&wasm, metadata.clone())?;
    let mut api = FakeApi::default();
    let mut answers: Vec<Vec<(Evaluation, &AuditObject)>> = Vec::new();
    for (n, binding) in audit.audits.iter().enumerate() {
        let mut evaluated = Vec::new();
        for object in &binding.objects {
            let label = format!("{} › {}", binding.name, object.name);
            if object.expect == Report::Fail && object.message.is_none() {
                report
                    .problems
                    .push(format!("{label}: expect: fail needs a message"));
            }
            let request = scanner_request(&object.object);
            let recorder = shared(Recorder::new(cluster.clone()));
            let eval = host.validate(&request, &binding.settings, recorder.clone())?;
            let exchanges = recorder
                .lock()
                .map_err(|_| Error::Invalid("recorder lock poisoned".into()))?
                .exchanges()
                .to_vec();
            if !api.merge(&FakeApi::from_exchanges(&exchanges)?) {
                report.problems.push(format!(
                    "{label}: its lookups disagree with the other objects' (audit #{n})"
                ));
            }
            report.objects += 1;
            match eval.response.allowed {
                true => report.pass += 1,
                false => report.fail += 1,
            }
            if let Some(why) = miss(object, &eval) {
                report.problems.push(format!("{label}: testdrive: {why}"));
            }
            evaluated.push((eval, object));
        }
        answers.push(evaluated);
    }
    if let Some(binary) = &options.policy_server {
        let server = through_policy_server(binary, dir, &policy, &audit, &answers, api, options);
        match server {
            Ok((counts, problems)) => {
                report.server = Some(counts);
                report.problems.extend(problems);
            }
            Err(e) => report.problems.push(format!("policy-server: {e}")),
        }
    }
    Ok(Some(report))
}

/// How `eval` misses what `object` expects.
fn miss(object: &AuditObject, eval: &Evaluation) -> Option<String> {
    let got = Report::of(eval.response.allowed);
    let message = eval.response.message().unwrap_or_default();
    if got != object.expect {
        return Some(format!(
            "expected {:?}, got {got:?} ({message:?})",
            object.expect
        ));
    }
    match &object.message {
        Some(fragment) if got == Report::Fail && !message.contains(fragment.as_str()) => Some(
            format!("the message {message:?} does not contain {fragment:?}"),
        ),
        _ => None,
    }
}

/// Every object of `audit` through policy-server's `/audit/<id>` (one id per binding), its
/// lookups answered by `api`: the pass and fail counts and the problems (expectations missed,
/// answers that differ from testdrive's).
fn through_policy_server(
    binary: &Path,
    dir: &Path,
    policy: &str,
    audit: &AuditFile,
    answers: &[Vec<(Evaluation, &AuditObject)>],
    api: FakeApi,
    options: &AuditOptions,
) -> Result<((usize, usize), Vec<String>)> {
    let work = options.work_dir.join(policy);
    std::fs::create_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    let metadata = policy_metadata(dir)?;
    let context_aware: Vec<Value> = metadata
        .iter()
        .flat_map(|m| &m.context_aware_resources)
        .map(|r| json!({"apiVersion": r.api_version, "kind": r.kind}))
        .collect();
    let capabilities: Vec<String> = metadata
        .iter()
        .flat_map(|m| m.host_capabilities.iter().flatten().cloned())
        .collect();
    let binding = Binding {
        mutating: metadata.as_ref().is_some_and(|m| m.mutating),
        context_aware: &context_aware,
        host_capabilities: &capabilities,
    };
    let module = std::path::absolute(options.annotated_dir.join(format!("{policy}.wasm")))
        .map_err(|e| Error::io(&options.annotated_dir, e))?;
    if !module.is_file() {
        return Err(Error::Invalid(format!(
            "{} is missing (make annotate)",
            module.display()
        )));
    }
    let ids: Vec<String> = (0..audit.audits.len())
        .map(|n| format!("{}-audit-{n}", policy.trim_end_matches("-policy")))
        .collect();
    let policies: serde_json::Map<String, Value> = ids
        .iter()
        .zip(&audit.audits)
        .map(|(id, a)| {
            let entry = binding.entry(format!("file://{}", module.display()), &a.settings);
            (id.clone(), entry)
        })
        .collect();
    let policies_file = work.join("policies.yml");
    std::fs::write(&policies_file, Value::Object(policies).to_string())
        .map_err(|e| Error::io(&policies_file, e))?;
    let running = api.serve()?;
    let kubeconfig = work.join("kubeconfig.yml");
    running.write_kubeconfig(&kubeconfig)?;
    let port = free_port(true)?;
    let mut server = PolicyServer::start(binary, &policies_file, &kubeconfig, &work, port, None)?;
    let (mut pass, mut fail, mut problems) = (0, 0, Vec::new());
    for ((id, binding), evaluated) in ids.iter().zip(&audit.audits).zip(answers) {
        for (n, (testdrive, object)) in evaluated.iter().enumerate() {
            let label = format!("{} › {}", binding.name, object.name);
            let request = scanner_request(&object.object);
            let answer = write_review(&work, id, &format!("-{n}"), &request)
                .and_then(|body| std::fs::read(&body).map_err(|e| Error::io(&body, e)))
                .and_then(|body| http_post(port, &format!("/audit/{id}"), &body));
            let eval = match answer {
                Ok((status, body)) => read_answer(status, &body),
                Err(e) => Err(e.to_string()),
            };
            let eval = match eval {
                Ok(eval) => eval,
                Err(why) => {
                    problems.push(format!("{label}: policy-server: {why}"));
                    continue;
                }
            };
            match eval.response.allowed {
                true => pass += 1,
                false => fail += 1,
            }
            if let Some(why) = miss(object, &eval) {
                problems.push(format!("{label}: policy-server: {why}"));
            }
            if let Some(why) = host_disagreement("policy-server", &eval, testdrive) {
                problems.push(format!("{label}: {why}"));
            }
        }
    }
    server.stop();
    Ok(((pass, fail), problems))
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

    #[test]
    fn the_scanner_request_has_no_requester_and_the_kind_as_resource() {
        let r = scanner_request(&json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker01", "uid": "u1"}}));
        assert_eq!(
            r["kind"],
            json!({"group": "", "version": "v1", "kind": "Node"})
        );
        assert_eq!(r["resource"]["resource"], "Node");
        assert_eq!(
            (r["uid"].as_str(), r["name"].as_str()),
            (Some("u1"), Some("worker01"))
        );
        assert!(
            r.get("namespace").is_none(),
            "a cluster-scoped object has no namespace"
        );
        assert_eq!(r["userInfo"], json!({}));
    }

    #[test]
    fn a_failure_needs_its_message_fragment() {
        let object: AuditObject =
            serde_yaml::from_str("{name: p, object: {}, expect: fail, message: lacks}").unwrap();
        let eval = |allowed: bool, message: &str| Evaluation {
            response: serde_json::from_value(json!({"uid": "", "allowed": allowed,
                "status": {"message": message, "code": 403}}))
            .unwrap(),
            patch: None,
            mutated_object: None,
            host_call_errors: Vec::new(),
        };
        assert_eq!(miss(&object, &eval(false, "Node lacks pool")), None);
        assert!(
            miss(&object, &eval(false, "other"))
                .unwrap()
                .contains("does not contain")
        );
        assert!(
            miss(&object, &eval(true, ""))
                .unwrap()
                .contains("expected Fail, got Pass")
        );
        let unknown = serde_yaml::from_str::<AuditFile>("audits: []\nextra: 1\n");
        assert!(unknown.is_err(), "unknown fields are refused");
    }
}
