//! `testdrive e2e`: every declarative case through the real `kwctl`, the way Kubewarden's
//! own policies are tested (`e2e.bats` with `kwctl run`).
//!
//! Per policy: `kwctl annotate` (metadata and README; any warning fails the policy), then
//! `kwctl scaffold artifacthub` (its metadata must be accepted). Per case: the settings, the
//! request (as an AdmissionReview) and the cluster state are written to files and handed to
//! `kwctl run`, with `--allowed-host-capabilities` set to exactly the metadata's
//! `hostCapabilities` (when it declares any). A case with `replay:` uses its own session file; a case with
//! `cluster:` objects uses the session testdrive records while answering from those objects
//! (the host's texts included, e.g. its not-found message); a case without any state gets an
//! empty session, so a lookup fails as it does in testdrive.
//!
//! kwctl's answer is judged by the case's expectations, as `testdrive check` judges its own,
//! and must agree with testdrive's (verdict, code, message, patch, warnings); a settings case
//! must make kwctl exit non-zero with `Provided settings are not valid: <message>`. The
//! idempotence re-run of mutations stays with `testdrive check` (same module, same host
//! semantics). kwctl runs `jobs` at a time, with an empty Sigstore trust configuration so
//! that it does not wait on the network ([`EMPTY_SIGSTORE_TRUST`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::cases::{
    CaseOutcome, ClusterState, PolicyReport, ResolvedCase, Scenario, check_evaluation,
    check_message, compact, policy_metadata, policy_name, quote, selected_cases, wasm_file_name,
};
use policy_host::callbacks::shared;
use policy_host::error::{Error, Result};
use policy_host::host::{AdmissionResponse, Evaluation, Host};
use policy_host::metadata::Metadata;
use policy_host::replay::Recorder;

/// A Sigstore client trust configuration that trusts nothing: kwctl then does not fetch the
/// trust root from the network before every run (it cannot verify signatures with it, which
/// e2e never needs: the modules are local `file://` ones).
pub const EMPTY_SIGSTORE_TRUST: &str = r#"{"mediaType":"application/vnd.dev.sigstore.clienttrustconfig.v0.1+json","trustedRoot":{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[],"certificateAuthorities":[],"ctlogs":[],"timestampAuthorities":[]},"signingConfig":{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json","caUrls":[],"oidcUrls":[],"rekorTlogUrls":[],"tsaUrls":[]}}"#;

/// What kwctl prints before the message of refused settings.
pub const SETTINGS_REFUSED: &str = "Provided settings are not valid: ";

/// Options of [`run`].
#[derive(Debug, Clone)]
pub struct E2eOptions {
    /// The kwctl binary.
    pub kwctl: PathBuf,
    /// Where the policy wasm files are.
    pub wasm_dir: PathBuf,
    /// Where annotated modules, case inputs and recorded sessions are written.
    pub work_dir: PathBuf,
    /// kwctl processes run at a time.
    pub jobs: usize,
    /// Only cases whose name (or policy name) contains this.
    pub filter: Option<String>,
}

/// One `kwctl run` to make and how to judge it.
struct Job {
    /// Index of the policy's report.
    report: usize,
    case: ResolvedCase,
    args: Vec<String>,
    /// testdrive's own answer for the same inputs (`None` for settings cases).
    testdrive: Option<Evaluation>,
}

/// Runs every case of `dirs` through kwctl; one report per policy directory.
pub fn run(dirs: &[PathBuf], options: &E2eOptions) -> Result<Vec<PolicyReport>> {
    let (work_dir, trust) = prepare_work_dir(&options.work_dir)?;
    let mut reports = Vec::new();
    let mut jobs = Vec::new();
    for dir in dirs {
        let index = reports.len();
        let (report, policy_jobs) = prepare_policy(dir, index, &work_dir, options);
        reports.push(report);
        jobs.extend(policy_jobs);
    }
    let outcomes = run_jobs(&jobs, &options.kwctl, &trust, options.jobs.max(1));
    for (job, failures) in jobs.iter().zip(outcomes) {
        let Some(report) = reports.get_mut(job.report) else {
            continue;
        };
        if failures.is_empty() {
            report.passed += 1;
        } else {
            report.failures.push(CaseOutcome {
                name: job.case.name.clone(),
                file: job.case.file.clone(),
                failures,
            });
        }
    }
    Ok(reports)
}

/// Creates `work_dir` and writes [`EMPTY_SIGSTORE_TRUST`] into it: the absolute work
/// directory and the trust file to give every `kwctl run`.
pub fn prepare_work_dir(work_dir: &Path) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(work_dir).map_err(|e| Error::io(work_dir, e))?;
    let work_dir = std::path::absolute(work_dir).map_err(|e| Error::io(work_dir, e))?;
    let trust = work_dir.join("sigstore-trust-config.json");
    std::fs::write(&trust, EMPTY_SIGSTORE_TRUST).map_err(|e| Error::io(&trust, e))?;
    Ok((work_dir, trust))
}

/// kwctl's version line (`kwctl 1.36.0-beta.1`), to name the host in the output.
pub fn kwctl_version(kwctl: &Path) -> Result<String> {
    let out = Command::new(kwctl)
        .arg("--version")
        .output()
        .map_err(|e| Error::io(kwctl, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// Annotates and scaffolds one policy and turns its cases into jobs.
fn prepare_policy(
    dir: &Path,
    index: usize,
    work_dir: &Path,
    options: &E2eOptions,
) -> (PolicyReport, Vec<Job>) {
    let policy = policy_name(dir);
    let mut report = PolicyReport {
        policy: policy.clone(),
        ..Default::default()
    };
    let cases = match selected_cases(dir, &policy, options.filter.as_deref(), &mut report) {
        Some(c) if !c.is_empty() => c,
        _ => return (report, Vec::new()),
    };
    let out_dir = work_dir.join(&policy);
    let prepared = prepare_module(dir, &policy, &out_dir, options);
    let (module, metadata, host, mut problems) = match prepared {
        Ok(p) => p,
        Err(e) => {
            report.error = Some(format!("{policy}: {e}"));
            report.not_run = cases.len();
            return (report, Vec::new());
        }
    };
    if let Err(e) = scaffold_artifacthub(dir, &out_dir, &options.kwctl) {
        problems.push(e);
    }
    if !problems.is_empty() {
        report.error = Some(format!("{policy}: {}", problems.join("; ")));
    }
    let mut jobs = Vec::with_capacity(cases.len());
    for (n, case) in cases.into_iter().enumerate() {
        let case_dir = out_dir.join(format!("case-{n:04}"));
        match make_job(index, case, &case_dir, &module, &metadata, &host) {
            Ok(job) => jobs.push(job),
            Err(outcome) => report.failures.push(outcome),
        }
    }
    (report, jobs)
}

type Prepared = (PathBuf, Metadata, Host, Vec<String>);

/// `kwctl annotate` of the policy's module; a warning is a packaging problem.
fn prepare_module(
    dir: &Path,
    policy: &str,
    out_dir: &Path,
    options: &E2eOptions,
) -> std::result::Result<Prepared, String> {
    std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let wasm_path = options.wasm_dir.join(wasm_file_name(dir));
    let wasm = std::fs::read(&wasm_path).map_err(|e| {
        format!(
            "cannot read {}: {e} (build the policy first)",
            wasm_path.display()
        )
    })?;
    let metadata = policy_metadata(dir)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "no metadata.yml".to_owned())?;
    let mut problems = crate::packaging::policy_problems(dir, policy, &wasm, Some(&metadata));
    let module = out_dir.join("policy.wasm");
    let warned = annotate(
        &options.kwctl,
        &wasm_path,
        &dir.join("metadata.yml"),
        &dir.join("README.md"),
        &module,
    )?;
    if let Some(warning) = warned {
        problems.push(format!("kwctl annotate warned: {warning}"));
    }
    let host = Host::load(&wasm, Some(metadata.clone())).map_err(|e| e.to_string())?;
    Ok((module, metadata, host, problems))
}

/// `kwctl annotate` of `wasm` with its metadata and README into `output`; `Ok(Some(text))`
/// when kwctl warned.
pub fn annotate(
    kwctl: &Path,
    wasm: &Path,
    metadata: &Path,
    readme: &Path,
    output: &Path,
) -> std::result::Result<Option<String>, String> {
    let out = Command::new(kwctl)
        .arg("annotate")
        .arg(wasm)
        .arg("--metadata-path")
        .arg(metadata)
        .arg("--usage-path")
        .arg(readme)
        .arg("--output-path")
        .arg(output)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", kwctl.display()))?;
    let stderr = plain_text(&out.stderr);
    if !out.status.success() {
        return Err(format!("kwctl annotate failed: {}", first_lines(&stderr)));
    }
    Ok((!stderr.trim().is_empty()).then(|| first_lines(&stderr)))
}

/// One `kwctl run` of an annotated `module` on inputs already written to files, with an empty
/// Sigstore `trust` configuration ([`EMPTY_SIGSTORE_TRUST`]): kwctl's answer, or why there is
/// none.
pub fn kwctl_run(
    kwctl: &Path,
    trust: &Path,
    module: &Path,
    inputs: &KwctlInputs<'_>,
    metadata: &Metadata,
) -> std::result::Result<Evaluation, String> {
    let args = kwctl_run_args(
        module,
        inputs.settings,
        inputs.request,
        inputs.session,
        metadata,
    );
    let out = kwctl_output(kwctl, &args, trust)?;
    if !out.status.success() {
        return Err(format!(
            "kwctl exited with {}: {}",
            out.status,
            first_lines(&plain_text(&out.stderr))
        ));
    }
    kwctl_evaluation(&out.stdout)
}

/// The files one `kwctl run` reads.
#[derive(Debug, Clone, Copy)]
pub struct KwctlInputs<'a> {
    /// The settings (JSON).
    pub settings: &'a Path,
    /// The AdmissionReview (JSON).
    pub request: &'a Path,
    /// The replay session of host capability interactions (YAML; `[]` for none).
    pub session: &'a Path,
}

/// `kwctl scaffold artifacthub` with the policy's metadata and questions.
fn scaffold_artifacthub(
    dir: &Path,
    out_dir: &Path,
    kwctl: &Path,
) -> std::result::Result<(), String> {
    let out = Command::new(kwctl)
        .args(["scaffold", "artifacthub", "--metadata-path"])
        .arg(dir.join("metadata.yml"))
        .arg("--questions-path")
        .arg(dir.join("questions-ui.yml"))
        .arg("--output")
        .arg(out_dir.join("artifacthub-pkg.yml"))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", kwctl.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "kwctl scaffold artifacthub refused the metadata: {}",
            first_lines(&plain_text(&out.stderr))
        ))
    }
}

/// Writes one case's inputs and evaluates them in testdrive (recording the session).
fn make_job(
    report: usize,
    case: ResolvedCase,
    case_dir: &Path,
    module: &Path,
    metadata: &Metadata,
    host: &Host,
) -> std::result::Result<Job, CaseOutcome> {
    let fail = |case: &ResolvedCase, why: String| CaseOutcome {
        name: case.name.clone(),
        file: case.file.clone(),
        failures: vec![why],
    };
    let scenario = match &case.scenario {
        Ok(s) => s,
        Err(e) => return Err(fail(&case, format!("invalid case: {e}"))),
    };
    let request = scenario.request.clone().unwrap_or_else(placeholder_request);
    let (testdrive, recorded) = if case.expect.settings_valid == Some(false) {
        (None, None)
    } else {
        let (eval, recorded) =
            evaluate_recording(host, scenario, &request).map_err(|why| fail(&case, why))?;
        (Some(eval), recorded)
    };
    let write = |name: &str, text: &str| -> std::result::Result<PathBuf, CaseOutcome> {
        let path = case_dir.join(name);
        std::fs::write(&path, text).map_err(|e| fail(&case, format!("{}: {e}", path.display())))?;
        Ok(path)
    };
    std::fs::create_dir_all(case_dir)
        .map_err(|e| fail(&case, format!("{}: {e}", case_dir.display())))?;
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    });
    let settings_path = write("settings.json", &compact(&scenario.settings))?;
    let request_path = write("request.json", &compact(&review))?;
    // every run replays a session (empty without cluster state): no host call of the policy
    // reaches the network, and kwctl builds no Sigstore client
    let session = match (&scenario.session_file, recorded) {
        (Some(file), _) => std::path::absolute(file)
            .map_err(|e| fail(&case, format!("{}: {e}", file.display())))?,
        (None, Some(text)) => write("session.yml", &text)?,
        (None, None) => write("session.yml", "[]\n")?,
    };
    let args = kwctl_run_args(module, &settings_path, &request_path, &session, metadata);
    Ok(Job {
        report,
        case,
        args,
        testdrive,
    })
}

/// Evaluates a case in testdrive; with `cluster:` objects, also the kwctl session of the
/// reads it made.
fn evaluate_recording(
    host: &Host,
    scenario: &Scenario,
    request: &Value,
) -> std::result::Result<(Evaluation, Option<String>), String> {
    let recorder = shared(Recorder::new(scenario.cluster.callbacks()));
    let eval = host
        .validate(request, &scenario.settings, recorder.clone())
        .map_err(|e| format!("testdrive: host error: {e}"))?;
    if !matches!(scenario.cluster, ClusterState::Objects(_)) {
        return Ok((eval, None));
    }
    let session = recorder
        .lock()
        .map_err(|_| "recorder lock poisoned".to_owned())?
        .session_yaml()
        .map_err(|e| e.to_string())?;
    Ok((eval, Some(session)))
}

/// The arguments of `kwctl run` for one case.
fn kwctl_run_args(
    module: &Path,
    settings_path: &Path,
    request_path: &Path,
    session: &Path,
    metadata: &Metadata,
) -> Vec<String> {
    let mut args = vec![
        "run".to_owned(),
        format!("file://{}", module.display()),
        "--settings-path".to_owned(),
        settings_path.display().to_string(),
        "--request-path".to_owned(),
        request_path.display().to_string(),
    ];
    if !metadata.context_aware_resources.is_empty() {
        args.push("--allow-context-aware".to_owned());
    }
    args.push("--replay-host-capabilities-interactions".to_owned());
    args.push(session.display().to_string());
    // kwctl takes one or more existing capabilities; a module that declares none contains
    // no host-call name either (kwctl annotate and `packaging::policy_problems` check that)
    let declared = metadata.host_capabilities.clone().unwrap_or_default();
    if !declared.is_empty() {
        args.push("--allowed-host-capabilities".to_owned());
        args.extend(declared);
    }
    args
}

/// The request given to kwctl for a settings case without one (kwctl needs a request; it
/// refuses the settings before reading it).
fn placeholder_request() -> Value {
    json!({
        "uid": "settings-case",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "default",
        "userInfo": {"username": "e2e"},
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    })
}

/// `kwctl <args> --sigstore-trust-config <trust>`: its output, or why it could not run.
fn kwctl_output(
    kwctl: &Path,
    args: &[String],
    trust: &Path,
) -> std::result::Result<Output, String> {
    Command::new(kwctl)
        .args(args)
        .arg("--sigstore-trust-config")
        .arg(trust)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", kwctl.display()))
}

/// Calls `f` on every item, `jobs` items at a time on scoped threads; the results in the
/// items' order (`None` where a worker panicked before storing its result).
pub fn in_parallel<T, R, F>(items: &[T], jobs: usize, f: F) -> Vec<Option<R>>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = f(item);
                    if let Ok(mut r) = results.lock()
                        && let Some(slot) = r.get_mut(i)
                    {
                        *slot = Some(result);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_default()
}

/// Runs the jobs `jobs` at a time; the failures of each, in order.
fn run_jobs(jobs: &[Job], kwctl: &Path, trust: &Path, parallel: usize) -> Vec<Vec<String>> {
    in_parallel(jobs, parallel, |job| {
        match kwctl_output(kwctl, &job.args, trust) {
            Ok(out) => judge(job, &out),
            Err(e) => vec![e],
        }
    })
    .into_iter()
    .map(|r| r.unwrap_or_else(|| vec!["not run".to_owned()]))
    .collect()
}

/// The failures of one kwctl run against its case.
fn judge(job: &Job, out: &Output) -> Vec<String> {
    let mut failures = Vec::new();
    let stderr = plain_text(&out.stderr);
    let expect = &job.case.expect;
    if expect.settings_valid == Some(false) {
        let refusal = stderr
            .lines()
            .find_map(|l| l.split_once(SETTINGS_REFUSED).map(|(_, m)| m.to_owned()));
        match refusal {
            Some(message) if !out.status.success() => {
                check_message(expect, Some(&message), &mut failures)
            }
            _ => failures.push(format!(
                "settings: expected kwctl to refuse them ({SETTINGS_REFUSED}...), it exited with {} \
                 and printed {}",
                out.status,
                first_lines(&stderr)
            )),
        }
        return failures;
    }
    if !out.status.success() {
        return vec![format!(
            "kwctl exited with {}: {}",
            out.status,
            first_lines(&stderr)
        )];
    }
    let eval = match kwctl_evaluation(&out.stdout) {
        Ok(e) => e,
        Err(e) => return vec![e],
    };
    check_evaluation(expect, &eval, &mut failures);
    if let Some(ours) = &job.testdrive
        && let Some(difference) = disagreement(&eval, ours)
    {
        failures.push(difference);
    }
    failures
}

/// kwctl's printed AdmissionResponse with its patch decoded.
fn kwctl_evaluation(stdout: &[u8]) -> std::result::Result<Evaluation, String> {
    let response: AdmissionResponse = serde_json::from_slice(stdout).map_err(|e| {
        format!(
            "kwctl printed no AdmissionResponse ({e}): {}",
            first_lines(&String::from_utf8_lossy(stdout))
        )
    })?;
    response_evaluation(response, "kwctl")
}

/// A real host's AdmissionResponse (from `host`, for messages) with its patch decoded.
pub(crate) fn response_evaluation(
    response: AdmissionResponse,
    host: &str,
) -> std::result::Result<Evaluation, String> {
    let patch = match &response.patch {
        None => None,
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("{host}'s patch is not base64: {e}"))?;
            Some(
                serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| format!("{host}'s patch is not JSON: {e}"))?,
            )
        }
    };
    Ok(Evaluation {
        response,
        patch,
        mutated_object: None,
        host_call_errors: Vec::new(),
    })
}

/// How kwctl's answer differs from testdrive's, if it does.
pub fn disagreement(kwctl: &Evaluation, testdrive: &Evaluation) -> Option<String> {
    host_disagreement("kwctl", kwctl, testdrive)
}

/// How the answer of the real `host` (kwctl, policy-server) differs from testdrive's, if it
/// does: verdict, code, message, patch and warnings.
pub fn host_disagreement(
    host: &str,
    theirs: &Evaluation,
    testdrive: &Evaluation,
) -> Option<String> {
    let view = |e: &Evaluation| {
        json!({
            "allowed": e.response.allowed,
            "code": e.response.code(),
            "message": e.response.message(),
            "patch": e.patch,
            "warnings": e.response.warnings.clone().unwrap_or_default(),
        })
    };
    let (k, t) = (view(theirs), view(testdrive));
    (k != t).then(|| {
        format!(
            "{host} and testdrive disagree:\n      {:<10} {}\n      testdrive: {}",
            format!("{host}:"),
            compact(&k),
            compact(&t)
        )
    })
}

/// Text without ANSI colour sequences.
pub(crate) fn plain_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The lines of kwctl's diagnostics worth showing: not its Sigstore trust-root warning
/// (no network for it here) nor the backtraces.
pub(crate) fn first_lines(text: &str) -> String {
    let useful: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.contains("Sigstore")
                && !l.contains("sigstore")
                && !l.starts_with("Caused by")
                && !l.starts_with("Stack backtrace")
                && !l.starts_with("at ")
                && !l
                    .split_once(':')
                    .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .take(3)
        .collect();
    quote(Some(&useful.join(" | ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_parallel_keeps_the_items_order() {
        let items: Vec<u32> = (0..50).collect();
        let doubled = in_parallel(&items, 3, |n| n * 2);
        let expected: Vec<Option<u32>> = (0..50).map(|n| Some(n * 2)).collect();
        assert_eq!(doubled, expected);
        assert!(in_parallel(&[] as &[u32], 2, |n| *n).is_empty());
    }

    #[test]
    fn strips_colours() {
        assert_eq!(
            plain_text(b"\x1b[2m2026\x1b[0m \x1b[33m WARN\x1b[0m text"),
            "2026  WARN text"
        );
    }

    #[test]
    fn reads_kwctl_output() {
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/a","value":1}]"#);
        let out = format!(
            r#"{{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"{patch}","auditAnnotations":null,"warnings":["w"]}}"#
        );
        let eval = kwctl_evaluation(out.as_bytes()).unwrap();
        assert!(eval.response.allowed);
        assert_eq!(
            eval.patch,
            Some(json!([{"op": "add", "path": "/a", "value": 1}]))
        );
        assert_eq!(eval.response.warnings, Some(vec!["w".to_owned()]));
        assert!(
            kwctl_evaluation(b"not json")
                .unwrap_err()
                .contains("no AdmissionResponse")
        );
    }

    #[test]
    fn disagreement_names_both_answers() {
        let eval = |allowed: bool, message: Option<&str>| Evaluation {
            response: AdmissionResponse {
                uid: "u".into(),
                allowed,
                status: message.map(|m| policy_host::host::ResponseStatus {
                    message: Some(m.into()),
                    code: Some(403),
                }),
                ..Default::default()
            },
            patch: None,
            mutated_object: None,
            host_call_errors: vec![],
        };
        assert_eq!(disagreement(&eval(true, None), &eval(true, None)), None);
        let d = disagreement(&eval(false, Some("a")), &eval(false, Some("b"))).unwrap();
        assert!(
            d.contains("\"message\":\"a\"") && d.contains("\"message\":\"b\""),
            "{d}"
        );
    }

    #[test]
    fn diagnostics_skip_sigstore_and_backtraces() {
        let text = "WARN Cannot create Sigstore trust root\nCaused by:\n   0: x\nError: boom\n  12: frame\n2026-11-25T09:27:22Z WARN declared\n";
        assert_eq!(
            first_lines(text),
            "\"Error: boom | 2026-11-25T09:27:22Z WARN declared\""
        );
    }
}
