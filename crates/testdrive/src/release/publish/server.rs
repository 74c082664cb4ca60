//! The pushed modules in the real policy-server: one declarative case per policy, chosen
//! and judged in testdrive first, then sent to the policy-server that pulled every module
//! from the registry; its answer must meet the case's expectations and be testdrive's.
//!
//! A case whose policy reads the cluster is answered by a [`FakeApi`] built from the
//! exchanges testdrive recorded while judging it, as `testdrive bench-server` does; the
//! cases of all policies share one fake API server, so a case is chosen only when its
//! lookups agree with the cases chosen before it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::Entry;
use crate::bench::server::{PolicyBinding, PolicyServer, write_review};
use crate::cases::{
    Expect, PolicyReport, ResolvedCase, check_evaluation, policy_name, selected_cases,
};
use crate::e2e::{host_disagreement, response_evaluation};
use crate::http::{free_port, http_post};
use crate::kube::apiserver::FakeApi;
use crate::kube::controller::{Request, Rule};
use policy_host::callbacks::shared;
use policy_host::error::{Error, Result};
use policy_host::host::{AdmissionResponse, Evaluation};
use policy_host::replay::Recorder;

/// The case policy-server answers for one policy, with testdrive's answer.
#[derive(Debug, Clone)]
pub struct Pick {
    /// The case's name.
    pub name: String,
    /// Its case file.
    pub file: PathBuf,
    /// Its settings (the policy's settings in policies.yml).
    pub settings: Value,
    /// Its AdmissionRequest.
    pub request: Value,
    /// What it expects.
    pub expect: Expect,
    /// testdrive's answer.
    pub testdrive: Evaluation,
    /// Lookups answered by the fake API server.
    pub lookups: usize,
}

/// Chooses the case of the policy in `dir`: the first request case with an expected verdict
/// that testdrive passes without any failed lookup and whose lookups agree with `cluster`
/// (preferring, for a policy that reads the cluster, one that makes lookups); its lookups
/// are added to `cluster`.
pub(crate) fn pick_case(
    dir: &Path,
    binding: &PolicyBinding,
    cluster: &mut FakeApi,
) -> std::result::Result<Pick, String> {
    let policy = policy_name(dir);
    let mut report = PolicyReport::default();
    let cases = selected_cases(dir, &policy, None, &mut report).unwrap_or_default();
    let reads_cluster = !binding.context_aware.is_empty();
    let mut fallback = None;
    for case in &cases {
        let Some((pick, api)) = candidate(case, binding) else {
            continue;
        };
        let mut merged = cluster.clone();
        if !merged.merge(&api) {
            continue;
        }
        if pick.lookups > 0 || !reads_cluster {
            *cluster = merged;
            return Ok(pick);
        }
        fallback.get_or_insert((pick, merged));
    }
    let (pick, merged) = fallback.ok_or_else(|| {
        format!(
            "none of its {} cases is a request case with an expected verdict that testdrive \
             passes without a failed lookup and whose lookups agree with the other policies' cases",
            cases.len()
        )
    })?;
    *cluster = merged;
    Ok(pick)
}

/// The case as a [`Pick`] with the fake API server state of its lookups, when it qualifies:
/// a request the metadata's rules route (policy-server is sent only those), with an expected
/// verdict testdrive gives.
fn candidate(case: &ResolvedCase, binding: &PolicyBinding) -> Option<(Pick, FakeApi)> {
    let scenario = case.scenario.as_ref().ok()?;
    let request = scenario.request.clone()?;
    if case.expect.allowed.is_none() || case.expect.settings_valid == Some(false) {
        return None;
    }
    // a user's request, as the API server sends it (the audit scanner's carry no user)
    if request
        .pointer("/userInfo/username")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return None;
    }
    let routed = Request::new(&request);
    if !binding
        .rules
        .iter()
        .any(|r| Rule::from_value(r, None).matches(&routed))
    {
        return None;
    }
    let recorder = shared(Recorder::new(scenario.cluster.callbacks()));
    let eval = binding
        .host
        .validate(&request, &scenario.settings, recorder.clone())
        .ok()?;
    let mut failures = Vec::new();
    check_evaluation(&case.expect, &eval, &mut failures);
    if !failures.is_empty() || !eval.host_call_errors.is_empty() {
        return None;
    }
    let exchanges = recorder.lock().ok()?.exchanges().to_vec();
    let api = FakeApi::from_exchanges(&exchanges).ok()?;
    let pick = Pick {
        name: case.name.clone(),
        file: case.file.clone(),
        settings: scenario.settings.clone(),
        request,
        expect: case.expect.clone(),
        testdrive: eval,
        lookups: exchanges.len(),
    };
    Some((pick, api))
}

/// Where and how policy-server runs.
pub(super) struct ServerSetup<'a> {
    /// The policy-server binary.
    pub(super) binary: &'a Path,
    /// Its directory: policies.yml, its log, kubeconfig, request bodies, downloads.
    pub(super) dir: &'a Path,
    /// The sources file (the registry is insecure).
    pub(super) sources: &'a Path,
}

/// Starts policy-server with every pushed module that has a case, by its immutable reference
/// in the registry, its lookups answered by `cluster`; records in each entry whether
/// policy-server pulled it and answered its case as expected. How long policy-server took to
/// be ready, `None` when it was not started or never got ready (a problem of every entry).
pub(super) fn answer_cases(
    entries: &mut [Entry],
    cluster: FakeApi,
    setup: &ServerSetup<'_>,
) -> Result<Option<Duration>> {
    let dir = setup.dir;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let policies: Map<String, Value> = entries
        .iter()
        .filter_map(|e| {
            let module = format!("registry://{}", e.pushed.as_ref()?);
            Some((
                e.policy.clone(),
                e.binding
                    .binding()
                    .entry(module, &e.pick.as_ref()?.settings),
            ))
        })
        .collect();
    if policies.is_empty() {
        return Ok(None);
    }
    let policies_file = dir.join("policies.yml");
    std::fs::write(&policies_file, Value::Object(policies).to_string())
        .map_err(|e| Error::io(&policies_file, e))?;
    let api = cluster.serve()?;
    let kubeconfig = dir.join("kubeconfig.yml");
    api.write_kubeconfig(&kubeconfig)?;
    let port = free_port(true)?;
    let started = Instant::now();
    let server = PolicyServer::start(
        setup.binary,
        &policies_file,
        &kubeconfig,
        dir,
        port,
        Some(setup.sources),
    );
    let mut server = match server {
        Ok(s) => s,
        Err(e) => {
            for entry in entries.iter_mut().filter(|e| e.pushed.is_some()) {
                entry.problems.push(format!("policy-server: {e}"));
            }
            return Ok(None);
        }
    };
    let ready = started.elapsed();
    for entry in entries.iter_mut() {
        let (Some(reference), Some(pick)) = (&entry.pushed, &entry.pick) else {
            continue;
        };
        let downloaded = dir.join("downloads/registry").join(reference);
        match same_file(&downloaded, &entry.binding.module) {
            Ok(()) => entry.pulled = true,
            Err(why) => entry.problems.push(format!("policy-server's pull: {why}")),
        }
        let failures = judge(port, dir, &entry.policy, pick);
        entry.answered = failures.is_empty();
        entry.problems.extend(failures);
    }
    server.stop();
    Ok(Some(ready))
}

/// Whether `pulled` holds exactly the bytes of `pushed`.
fn same_file(pulled: &Path, pushed: &Path) -> std::result::Result<(), String> {
    let theirs = std::fs::read(pulled).map_err(|e| format!("{}: {e}", pulled.display()))?;
    let ours = std::fs::read(pushed).map_err(|e| format!("{}: {e}", pushed.display()))?;
    if theirs == ours {
        Ok(())
    } else {
        Err(format!(
            "{} differs from the pushed {}",
            pulled.display(),
            pushed.display()
        ))
    }
}

/// Sends the case to `/validate/<policy>`; every way the answer misses the case's
/// expectations or differs from testdrive's.
fn judge(port: u16, dir: &Path, policy: &str, pick: &Pick) -> Vec<String> {
    let prefix = |why: String| format!("case {:?} ({}): {why}", pick.name, pick.file.display());
    let answer = write_review(dir, policy, "-review", &pick.request)
        .and_then(|body| std::fs::read(&body).map_err(|e| Error::io(&body, e)))
        .and_then(|body| http_post(port, &format!("/validate/{policy}"), &body));
    let (status, body) = match answer {
        Ok(a) => a,
        Err(e) => return vec![prefix(format!("policy-server: {e}"))],
    };
    let eval = match read_answer(status, &body) {
        Ok(e) => e,
        Err(why) => return vec![prefix(why)],
    };
    let mut failures = Vec::new();
    check_evaluation(&pick.expect, &eval, &mut failures);
    failures.extend(host_disagreement("policy-server", &eval, &pick.testdrive));
    failures.into_iter().map(prefix).collect()
}

/// policy-server's AdmissionReview answer as an evaluation.
pub(crate) fn read_answer(status: u16, body: &[u8]) -> std::result::Result<Evaluation, String> {
    let excerpt = || {
        String::from_utf8_lossy(body)
            .chars()
            .take(300)
            .collect::<String>()
    };
    if status != 200 {
        return Err(format!("policy-server answered {status}: {}", excerpt()));
    }
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("policy-server's answer is not JSON ({e}): {}", excerpt()))?;
    let response = review
        .get("response")
        .cloned()
        .ok_or_else(|| format!("policy-server's answer has no response: {}", excerpt()))?;
    let response: AdmissionResponse = serde_json::from_value(response)
        .map_err(|e| format!("policy-server's response is no AdmissionResponse ({e})"))?;
    response_evaluation(response, "policy-server")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_policy_server_answers() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,"status":{"message":"no","code":403}}}"#;
        let eval = read_answer(200, body).unwrap();
        assert!(!eval.response.allowed);
        assert_eq!(eval.response.code(), Some(403));
        assert_eq!(eval.response.message(), Some("no"));
        assert!(
            read_answer(500, b"boom")
                .unwrap_err()
                .contains("answered 500: boom")
        );
        assert!(read_answer(200, b"{}").unwrap_err().contains("no response"));
    }
}
