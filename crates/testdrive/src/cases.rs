//! Declarative cases (`policies/<name>/cases/*.yaml`) and `testdrive check`.
//!
//! ```yaml
//! defaults:                      # optional, merged into every case (case fields win)
//!   settings: {protectedTaints: [{key: dedicated, value: tenantA}]}
//!   request: ../../../test_data/pod-toleration-policy/requests/pod.json
//! cases:
//! - name: exists toleration refused
//!   override: {userInfo: {username: bob}}
//!   replay: ../../../test_data/pod-toleration-policy/sessions/ns-team-a.yml   # or cluster: [objects]
//!   expect: {allowed: false, code: 403, message: 'operator "Exists"'}
//! ```
//!
//! Paths are relative to the case file. Unknown fields are refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::callbacks::{NoCluster, SharedCallbacks, shared};
use crate::cluster::ClusterObjects;
use crate::error::{Error, Result, read_text};
use crate::host::{Evaluation, Host};
use crate::metadata::Metadata;
use crate::replay::ReplaySession;
use crate::request::{load_request, merge_patch, unwrap_review};

/// A request given by path (relative to the file) or inline.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RequestSpec {
    /// Path of a JSON (or YAML) AdmissionRequest / AdmissionReview file.
    Path(String),
    /// The AdmissionRequest (or AdmissionReview) itself.
    Inline(serde_json::Map<String, Value>),
}

/// Fields shared by cases, defaults and bench entries.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseDefaults {
    /// Policy settings (default `{}`).
    #[serde(default)]
    pub settings: Option<Value>,
    /// The admission request.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// RFC 7386 merge patch applied to the request.
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// kwctl replay session file.
    #[serde(default)]
    pub replay: Option<String>,
    /// Objects that exist in the cluster.
    #[serde(default)]
    pub cluster: Option<Vec<Value>>,
}

/// The expected outcome of a case.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// The verdict; required unless `settingsValid: false`.
    #[serde(default)]
    pub allowed: Option<bool>,
    /// Exact status code.
    #[serde(default)]
    pub code: Option<u16>,
    /// Substring of the message.
    #[serde(default)]
    pub message: Option<String>,
    /// Several substrings, all required.
    #[serde(default)]
    pub messages: Option<Vec<String>>,
    /// The exact message.
    #[serde(default, alias = "message_exact")]
    pub message_exact: Option<String>,
    /// The message must be absent.
    #[serde(default, alias = "no_message")]
    pub no_message: bool,
    /// The exact JSON Patch (`[]` = no mutation).
    #[serde(default)]
    pub patch: Option<Vec<Value>>,
    /// No mutation.
    #[serde(default, alias = "no_patch")]
    pub no_patch: bool,
    /// Each fragment must be a substring of some warning.
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
    /// Exact number of warnings.
    #[serde(default, alias = "warnings_count")]
    pub warnings_count: Option<usize>,
    /// No warning at all.
    #[serde(default, alias = "no_warnings")]
    pub no_warnings: bool,
    /// `false`: a settings-validation case.
    #[serde(default, alias = "settings_valid")]
    pub settings_valid: Option<bool>,
}

/// One case as written in a case file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    /// Unique name within the policy.
    pub name: String,
    /// Free text for readers; ignored by the runner.
    #[serde(default)]
    pub description: Option<String>,
    /// Policy settings (replacing the defaults' ones).
    #[serde(default)]
    pub settings: Option<Value>,
    /// RFC 7386 merge patch applied to the settings (the case's, else the defaults').
    #[serde(default)]
    pub settings_override: Option<Value>,
    /// RFC 6902 JSON Patch applied to the settings after `settingsOverride`, for edits inside
    /// lists (`[{op: add, path: /profiles/0/spec/privileged, value: true}]`).
    #[serde(default)]
    pub settings_patch: Option<json_patch::Patch>,
    /// The admission request.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// RFC 7386 merge patch applied to the request (after the defaults' one).
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// kwctl replay session file.
    #[serde(default)]
    pub replay: Option<String>,
    /// Objects that exist in the cluster.
    #[serde(default)]
    pub cluster: Option<Vec<Value>>,
    /// Expected outcome.
    pub expect: Expect,
    /// `false` disables the automatic idempotence check of mutations.
    #[serde(default)]
    pub idempotent: Option<bool>,
}

/// A case file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// Defaults merged into every case.
    #[serde(default)]
    pub defaults: Option<CaseDefaults>,
    /// The cases.
    pub cases: Vec<Case>,
}

/// Cluster state of an evaluation.
#[derive(Debug, Clone)]
pub enum ClusterState {
    /// No state: every read fails and fails the case.
    None,
    /// A kwctl replay session.
    Replay(ReplaySession),
    /// Objects that exist.
    Objects(ClusterObjects),
}

impl ClusterState {
    /// Fresh callbacks for one evaluation.
    pub fn callbacks(&self) -> SharedCallbacks {
        match self {
            ClusterState::None => shared(NoCluster::default()),
            ClusterState::Replay(s) => shared(s.clone()),
            ClusterState::Objects(o) => shared(o.clone()),
        }
    }
}

/// Settings, request and cluster state, resolved from files.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Settings JSON (`{}` by default).
    pub settings: Value,
    /// The AdmissionRequest with overrides applied (absent for pure
    /// settings cases).
    pub request: Option<Value>,
    /// Cluster state.
    pub cluster: ClusterState,
    /// The replay session file the state was read from, if any.
    pub session_file: Option<PathBuf>,
}

/// A case ready to run.
#[derive(Debug, Clone)]
pub struct ResolvedCase {
    /// The case file.
    pub file: PathBuf,
    /// The case name.
    pub name: String,
    /// Inputs, or why they could not be resolved (reported as a failure).
    pub scenario: std::result::Result<Scenario, String>,
    /// Expected outcome.
    pub expect: Expect,
    /// Whether mutations are re-run to check idempotence.
    pub idempotent: bool,
}

fn resolve_path(base: &Path, rel: &str) -> PathBuf {
    base.parent().unwrap_or(Path::new(".")).join(rel)
}

/// Resolves settings/request/cluster fields (relative to `file`).
pub fn resolve_scenario(
    file: &Path,
    defaults: &CaseDefaults,
    case: &CaseDefaults,
    overrides: &[&Value],
) -> Result<Scenario> {
    let settings = case
        .settings
        .clone()
        .or_else(|| defaults.settings.clone())
        .unwrap_or_else(|| Value::Object(Default::default()));
    let request = match case.request.as_ref().or(defaults.request.as_ref()) {
        None => None,
        Some(RequestSpec::Path(p)) => Some(load_request(&resolve_path(file, p))?),
        Some(RequestSpec::Inline(map)) => Some(unwrap_review(
            Value::Object(map.clone()),
            &format!("{}: inline request", file.display()),
        )?),
    };
    let request = match request {
        Some(mut r) => {
            for o in overrides {
                merge_patch(&mut r, o);
            }
            Some(r)
        }
        None if overrides.is_empty() => None,
        None => {
            return Err(Error::Invalid(
                "`override` given without a `request`".into(),
            ));
        }
    };
    // the case's cluster state (either form) replaces the defaults' one
    let (replay, cluster) = if case.replay.is_some() || case.cluster.is_some() {
        (&case.replay, &case.cluster)
    } else {
        (&defaults.replay, &defaults.cluster)
    };
    let session_file = replay.as_deref().map(|p| resolve_path(file, p));
    let cluster = match (replay, cluster) {
        (Some(_), Some(_)) => {
            return Err(Error::Invalid(
                "`replay` and `cluster` are mutually exclusive".into(),
            ));
        }
        (Some(p), None) => ClusterState::Replay(ReplaySession::from_file(&resolve_path(file, p))?),
        (None, Some(objects)) => ClusterState::Objects(ClusterObjects::new(objects.clone())?),
        (None, None) => ClusterState::None,
    };
    Ok(Scenario {
        settings,
        request,
        cluster,
        session_file,
    })
}

fn check_expect(expect: &Expect) -> std::result::Result<(), String> {
    let settings_case = expect.settings_valid == Some(false);
    if settings_case {
        if expect.allowed.is_some()
            || expect.code.is_some()
            || expect.patch.is_some()
            || expect.no_patch
            || expect.warnings.is_some()
            || expect.warnings_count.is_some()
            || expect.no_warnings
        {
            return Err("a `settingsValid: false` case only accepts message expectations".into());
        }
    } else if expect.allowed.is_none() {
        return Err("`expect.allowed` is required (unless `settingsValid: false`)".into());
    }
    if expect.patch.is_some() && expect.no_patch {
        return Err("`patch` and `noPatch` are mutually exclusive".into());
    }
    let has_message =
        expect.message.is_some() || expect.messages.is_some() || expect.message_exact.is_some();
    if has_message && expect.no_message {
        return Err("`noMessage` contradicts the message expectations".into());
    }
    if expect.no_warnings
        && (expect.warnings.is_some() || expect.warnings_count.is_some_and(|n| n > 0))
    {
        return Err("`noWarnings` contradicts the warning expectations".into());
    }
    Ok(())
}

/// Applies a case's `settingsOverride`, then its `settingsPatch`, to the settings it starts
/// from (its own or the defaults').
fn edit_settings(settings: &mut Value, case: &Case) -> std::result::Result<(), String> {
    if let Some(o) = &case.settings_override {
        merge_patch(settings, o);
    }
    if let Some(p) = &case.settings_patch {
        json_patch::patch(settings, p).map_err(|e| format!("`settingsPatch`: {e}"))?;
    }
    Ok(())
}

/// Parses a case file and resolves its cases. A syntax error or an
/// unknown field fails the whole file; problems of one case (missing
/// request file, contradictory expectations) are kept in that case.
pub fn load_case_file(path: &Path) -> Result<Vec<ResolvedCase>> {
    let text = read_text(path)?;
    parse_case_file(&text, path)
}

/// Like [`load_case_file`], from text; `path` resolves relative paths.
pub fn parse_case_file(text: &str, path: &Path) -> Result<Vec<ResolvedCase>> {
    let file: CaseFile = serde_yaml::from_str(text).map_err(|e| Error::parse(path.display(), e))?;
    let defaults = file.defaults.unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(file.cases.len());
    for case in file.cases {
        if !seen.insert(case.name.clone()) {
            return Err(Error::parse(
                path.display(),
                format!("duplicate case name `{}`", case.name),
            ));
        }
        let fields = CaseDefaults {
            settings: case.settings.clone(),
            request: case.request.clone(),
            override_: case.override_.clone(),
            replay: case.replay.clone(),
            cluster: case.cluster.clone(),
        };
        let overrides: Vec<&Value> = defaults
            .override_
            .iter()
            .chain(case.override_.iter())
            .collect();
        let scenario = check_expect(&case.expect)
            .and_then(|()| {
                resolve_scenario(path, &defaults, &fields, &overrides).map_err(|e| e.to_string())
            })
            .and_then(|mut s| {
                edit_settings(&mut s.settings, &case)?;
                Ok(s)
            })
            .and_then(|s| {
                if s.request.is_none() && case.expect.settings_valid != Some(false) {
                    Err("no `request` (in the case or in `defaults`)".to_owned())
                } else {
                    Ok(s)
                }
            });
        out.push(ResolvedCase {
            file: path.to_path_buf(),
            name: case.name,
            scenario,
            expect: case.expect,
            idempotent: case.idempotent.unwrap_or(true),
        });
    }
    Ok(out)
}

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

pub(crate) fn check_message(expect: &Expect, actual: Option<&str>, failures: &mut Vec<String>) {
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

pub(crate) fn check_evaluation(expect: &Expect, eval: &Evaluation, failures: &mut Vec<String>) {
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
    // host-call errors explain a surprising verdict, unless the fixture
    // problems above already did
    if !failures.is_empty() && fixture_problems == 0 && !eval.host_call_errors.is_empty() {
        failures.push(format!(
            "(host-call errors seen by the policy: {})",
            eval.host_call_errors.join(" | ")
        ));
    }
}

/// The case files of a policy directory: `cases/*.yaml|yml` (sorted) and
/// `cases.yaml`. `None` when the policy has neither.
pub fn case_files(policy_dir: &Path) -> Result<Option<Vec<PathBuf>>> {
    let mut files = Vec::new();
    let mut found = false;
    let single = policy_dir.join("cases.yaml");
    if single.is_file() {
        found = true;
        files.push(single);
    }
    let dir = policy_dir.join("cases");
    if dir.is_dir() {
        found = true;
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut in_dir = Vec::new();
        for entry in entries {
            let p = entry.map_err(|e| Error::io(&dir, e))?.path();
            if p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                in_dir.push(p);
            }
        }
        in_dir.sort();
        files.extend(in_dir);
    }
    Ok(found.then_some(files))
}

/// The policy's name: its directory's name (the whole path if it has none).
pub fn policy_name(policy_dir: &Path) -> String {
    policy_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| policy_dir.display().to_string())
}

/// The wasm file name of a policy directory: the `[package] name` of its
/// `Cargo.toml` (else the directory name) with `-` replaced by `_`.
pub fn wasm_file_name(policy_dir: &Path) -> String {
    let from_manifest = std::fs::read_to_string(policy_dir.join("Cargo.toml"))
        .ok()
        .and_then(|text| {
            let mut in_package = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with('[') {
                    in_package = line == "[package]";
                } else if in_package
                    && let Some(rest) = line.strip_prefix("name")
                    && let Some(value) = rest.trim_start().strip_prefix('=')
                {
                    return Some(value.trim().trim_matches('"').to_owned());
                }
            }
            None
        });
    let name = from_manifest.unwrap_or_else(|| {
        policy_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    format!("{}.wasm", name.replace('-', "_"))
}

/// `metadata.yml` (or `metadata.yaml`) of a policy directory, if present.
pub fn policy_metadata(policy_dir: &Path) -> Result<Option<Metadata>> {
    for name in ["metadata.yml", "metadata.yaml"] {
        let p = policy_dir.join(name);
        if p.is_file() {
            return Metadata::from_file(&p).map(Some);
        }
    }
    Ok(None)
}

/// Why a policy would not package as Kubewarden's tools expect: its metadata
/// ([`Metadata::packaging_problems`]), host capabilities that differ from the ones the module
/// can call (what `kwctl annotate` warns about), or no `questions-ui.yml` for Artifact Hub.
pub fn packaging_problems(
    policy_dir: &Path,
    policy: &str,
    wasm: &[u8],
    metadata: Option<&Metadata>,
) -> Vec<String> {
    let Some(metadata) = metadata else {
        return vec!["no metadata.yml".to_owned()];
    };
    let mut out = metadata.packaging_problems(policy);
    match crate::wasm::detected_host_capabilities(wasm) {
        Ok(detected) => {
            let declared: BTreeSet<String> = metadata
                .host_capabilities
                .iter()
                .flatten()
                .cloned()
                .collect();
            if metadata.host_capabilities.is_some() && detected != declared {
                out.push(format!(
                    "hostCapabilities {declared:?} differ from the calls the module can make {detected:?}"
                ));
            }
        }
        Err(e) => out.push(e.to_string()),
    }
    let questions = policy_dir.join("questions-ui.yml");
    match std::fs::read_to_string(&questions) {
        Ok(text) if !text.trim().is_empty() => {}
        _ => out.push(format!(
            "{} is missing or empty (kwctl scaffold artifacthub refuses an empty one)",
            questions.display()
        )),
    }
    out
}

/// The outcome of `check` for one policy directory.
#[derive(Debug, Clone, Default)]
pub struct PolicyReport {
    /// Policy name (directory name).
    pub policy: String,
    /// Passed cases.
    pub passed: usize,
    /// Failing cases (and files that failed to parse).
    pub failures: Vec<CaseOutcome>,
    /// Non-fatal notes (e.g. no cases, no metadata).
    pub warnings: Vec<String>,
    /// A policy-level error (missing wasm, bad metadata, wrong protocol version).
    pub error: Option<String>,
    /// Selected cases that could not run because of [`PolicyReport::error`].
    pub not_run: usize,
}

impl PolicyReport {
    /// Number of failed cases: failing cases, unparsable files, cases that
    /// could not run, and a policy-level error that did not stop the run.
    pub fn failed(&self) -> usize {
        self.failures.len() + self.not_run + usize::from(self.error.is_some() && self.not_run == 0)
    }
}

/// Options of [`check_policy`].
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Where the policy wasm files are.
    pub wasm_dir: PathBuf,
    /// Only run cases whose name (or policy name) contains this.
    pub filter: Option<String>,
    /// Print guest logs and host calls.
    pub verbose: bool,
}

/// The cases of a policy directory selected by `filter` (a case name or the policy name
/// containing it); unparsable files and duplicate names are recorded in `report` as
/// failures. `None` when the policy has no cases (noted in `report`).
pub(crate) fn selected_cases(
    policy_dir: &Path,
    policy: &str,
    filter: Option<&str>,
    report: &mut PolicyReport,
) -> Option<Vec<ResolvedCase>> {
    let files = match case_files(policy_dir) {
        Ok(Some(f)) => f,
        Ok(None) => {
            report.warnings.push(format!(
                "{policy}: no cases/ directory or cases.yaml, skipped"
            ));
            return None;
        }
        Err(e) => {
            report.error = Some(e.to_string());
            return None;
        }
    };
    let policy_matches = filter.is_none_or(|f| policy.contains(f));
    let mut cases = Vec::new();
    for file in &files {
        match load_case_file(file) {
            Ok(c) => cases.extend(c),
            Err(e) => report.failures.push(CaseOutcome {
                name: "(case file)".to_owned(),
                file: file.clone(),
                failures: vec![e.to_string()],
            }),
        }
    }
    let mut names = BTreeSet::new();
    for c in &cases {
        if !names.insert(c.name.clone()) {
            report.failures.push(CaseOutcome {
                name: c.name.clone(),
                file: c.file.clone(),
                failures: vec!["duplicate case name within the policy".to_owned()],
            });
        }
    }
    cases.retain(|c| policy_matches || filter.is_some_and(|f| c.name.contains(f)));
    Some(cases)
}

/// Runs every case of a policy directory against its wasm (compiled once).
pub fn check_policy(policy_dir: &Path, options: &CheckOptions) -> PolicyReport {
    let policy = policy_name(policy_dir);
    let mut report = PolicyReport {
        policy: policy.clone(),
        ..Default::default()
    };
    let Some(cases) = selected_cases(policy_dir, &policy, options.filter.as_deref(), &mut report)
    else {
        return report;
    };
    if cases.is_empty() && report.failures.is_empty() {
        return report;
    }
    let wasm_path = options.wasm_dir.join(wasm_file_name(policy_dir));
    let wasm = match std::fs::read(&wasm_path) {
        Ok(w) => w,
        Err(e) => {
            report.error = Some(format!(
                "{policy}: cannot read {}: {e} (build the policy first)",
                wasm_path.display()
            ));
            report.not_run = cases.len();
            return report;
        }
    };
    let metadata = match policy_metadata(policy_dir) {
        Ok(m) => m,
        Err(e) => {
            report.error = Some(format!("{policy}: {e}"));
            report.not_run = cases.len();
            return report;
        }
    };
    let problems = packaging_problems(policy_dir, &policy, &wasm, metadata.as_ref());
    if !problems.is_empty() {
        report.error = Some(format!("{policy}: packaging: {}", problems.join("; ")));
    }
    let mut host = match Host::load(&wasm, metadata) {
        Ok(h) => h,
        Err(e) => {
            report.error = Some(format!("{policy}: {}: {e}", wasm_path.display()));
            report.not_run = cases.len();
            return report;
        }
    };
    host.set_verbose(options.verbose);
    if host.metadata().is_none() {
        report.warnings.push(format!(
            "{policy}: no metadata.yml and module not annotated: Kubernetes reads are refused"
        ));
    }
    match host.protocol_version() {
        Ok(v) if v == "v1" => {}
        Ok(v) => {
            report.error = Some(format!(
                "{policy}: protocol_version answered {v:?}, expected \"v1\""
            ));
        }
        Err(e) => report.error = Some(format!("{policy}: {e}")),
    }
    for case in &cases {
        let outcome = run_case(&host, case);
        if outcome.passed() {
            report.passed += 1;
        } else {
            report.failures.push(outcome);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("testdrive-cases-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const FILE: &str = r#"
defaults:
  settings: {protectedTaints: [{key: dedicated, value: tenantA}]}
  request: req.json
cases:
- name: refused for everyone
  expect: {allowed: false, code: 403, message: 'operator "Exists"'}
- name: bob is allowed
  override:
    userInfo: {username: bob, groups: [tenantA-users]}
    operation: UPDATE
  expect: {allowed: true, noMessage: true, patch: []}
- name: settings invalid
  settings: {protectedTaints: 3}
  expect: {settingsValid: false, message: 'invalid'}
- name: inline request with cluster
  request: {uid: inline, operation: CREATE, object: {kind: Pod}}
  cluster:
  - {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}
  expect: {allowed: true, warnings: [w], warningsCount: 1}
"#;

    #[test]
    fn settings_are_merge_patched_then_json_patched() {
        let d = tmp("settings-edits");
        std::fs::write(d.join("req.json"), r#"{"uid":"r","operation":"CREATE"}"#).unwrap();
        let file = r#"
defaults:
  settings: {mode: enforce, profiles: [{name: p, spec: {volumes: ["*"]}}]}
  request: req.json
cases:
- name: defaults as they are
  expect: {allowed: true}
- name: merge patch
  settingsOverride: {mode: warn}
  expect: {allowed: true}
- name: json patch inside a list, after the merge patch
  settingsOverride: {mode: null}
  settingsPatch: [{op: add, path: /profiles/0/spec/privileged, value: true}]
  expect: {allowed: true}
- name: own settings edited
  settings: {a: 1}
  settingsOverride: {b: 2}
  expect: {allowed: true}
- name: patch of a missing path fails the case
  settingsPatch: [{op: replace, path: /nothing/0, value: 1}]
  expect: {allowed: true}
"#;
        let cases = parse_case_file(file, &d.join("cases.yaml")).unwrap();
        let settings = |i: usize| cases[i].scenario.as_ref().unwrap().settings.clone();
        let profiles = json!([{"name": "p", "spec": {"volumes": ["*"]}}]);
        assert_eq!(
            settings(0),
            json!({"mode": "enforce", "profiles": profiles})
        );
        assert_eq!(settings(1), json!({"mode": "warn", "profiles": profiles}));
        assert_eq!(
            settings(2),
            json!({"profiles": [{"name": "p", "spec": {"volumes": ["*"], "privileged": true}}]})
        );
        assert_eq!(settings(3), json!({"a": 1, "b": 2}));
        let err = cases[4].scenario.as_ref().unwrap_err();
        assert!(err.starts_with("`settingsPatch`:"), "{err}");
    }

    #[test]
    fn parses_defaults_overrides_and_inline() {
        let d = tmp("parse");
        std::fs::write(
            d.join("req.json"),
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r","operation":"CREATE","userInfo":{"username":"alice"}}}"#,
        )
        .unwrap();
        let cases = parse_case_file(FILE, &d.join("cases.yaml")).unwrap();
        assert_eq!(cases.len(), 4);

        let s0 = cases[0].scenario.as_ref().unwrap();
        assert_eq!(s0.settings["protectedTaints"][0]["key"], "dedicated");
        assert_eq!(
            s0.request.as_ref().unwrap()["userInfo"]["username"],
            "alice"
        );
        assert!(matches!(s0.cluster, ClusterState::None));

        let s1 = cases[1].scenario.as_ref().unwrap();
        let r1 = s1.request.as_ref().unwrap();
        assert_eq!(r1["operation"], "UPDATE");
        assert_eq!(
            r1["userInfo"],
            json!({"username": "bob", "groups": ["tenantA-users"]})
        );
        assert_eq!(cases[1].expect.patch, Some(vec![]));
        assert!(cases[1].expect.no_message);

        let s2 = cases[2].scenario.as_ref().unwrap();
        assert_eq!(s2.settings, json!({"protectedTaints": 3}));
        assert_eq!(cases[2].expect.settings_valid, Some(false));

        let s3 = cases[3].scenario.as_ref().unwrap();
        assert_eq!(s3.request.as_ref().unwrap()["uid"], "inline");
        assert!(matches!(s3.cluster, ClusterState::Objects(_)));
        assert_eq!(cases[3].expect.warnings_count, Some(1));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_unknown_fields() {
        let p = Path::new("x/cases.yaml");
        for bad in [
            "cases:\n- name: a\n  request: r.json\n  expect: {allowed: true}\n  typo: 1\n",
            "cases:\n- name: a\n  request: r.json\n  expect: {allowd: true}\n",
            "defaults: {setings: {}}\ncases: []\n",
            "case: []\n",
        ] {
            let err = parse_case_file(bad, p).unwrap_err().to_string();
            assert!(err.contains("unknown field"), "{bad}: {err}");
        }
    }

    #[test]
    fn refuses_duplicate_names() {
        let text = "cases:\n- {name: a, request: {uid: x}, expect: {allowed: true}}\n- {name: a, request: {uid: x}, expect: {allowed: true}}\n";
        assert!(
            parse_case_file(text, Path::new("c.yaml"))
                .unwrap_err()
                .to_string()
                .contains("duplicate")
        );
    }

    #[test]
    fn case_level_problems_stay_in_the_case() {
        let text = r#"
cases:
- {name: no allowed, request: {uid: x}, expect: {code: 403}}
- {name: missing file, request: nope.json, expect: {allowed: true}}
- {name: both states, request: {uid: x}, replay: s.yml, cluster: [], expect: {allowed: true}}
- {name: no request, expect: {allowed: true}}
- {name: contradiction, request: {uid: x}, expect: {allowed: true, patch: [], noPatch: true}}
- {name: settings only, expect: {settingsValid: false, message: bad}}
- {name: settings case with verdict, expect: {settingsValid: false, allowed: true}}
"#;
        let cases = parse_case_file(text, Path::new("/nonexistent/c.yaml")).unwrap();
        let errs: Vec<String> = cases
            .iter()
            .map(|c| c.scenario.as_ref().err().cloned().unwrap_or_default())
            .collect();
        assert!(
            errs[0].contains("`expect.allowed` is required"),
            "{}",
            errs[0]
        );
        assert!(errs[1].contains("nope.json"), "{}", errs[1]);
        assert!(errs[2].contains("mutually exclusive"), "{}", errs[2]);
        assert!(errs[3].contains("no `request`"), "{}", errs[3]);
        assert!(errs[4].contains("mutually exclusive"), "{}", errs[4]);
        assert_eq!(errs[5], "");
        assert!(errs[6].contains("only accepts message"), "{}", errs[6]);
    }

    #[test]
    fn case_cluster_state_replaces_defaults() {
        let d = tmp("state");
        std::fs::write(d.join("s.yml"), "[]\n").unwrap();
        let text = r#"
defaults:
  request: {uid: x}
  replay: s.yml
cases:
- {name: inherits, expect: {allowed: true}}
- {name: own objects, cluster: [], expect: {allowed: true}}
"#;
        let cases = parse_case_file(text, &d.join("c.yaml")).unwrap();
        assert!(matches!(
            cases[0].scenario.as_ref().unwrap().cluster,
            ClusterState::Replay(_)
        ));
        assert!(matches!(
            cases[1].scenario.as_ref().unwrap().cluster,
            ClusterState::Objects(_)
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn eval(
        allowed: bool,
        message: Option<&str>,
        patch: Option<Value>,
        warnings: &[&str],
    ) -> Evaluation {
        Evaluation {
            response: crate::AdmissionResponse {
                uid: "u".into(),
                allowed,
                status: message.map(|m| crate::host::ResponseStatus {
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

    #[test]
    fn discovers_files_and_wasm_names() {
        let d = tmp("discover");
        let policy = d.join("foo-policy");
        std::fs::create_dir_all(policy.join("cases")).unwrap();
        std::fs::write(policy.join("cases/b.yaml"), "cases: []\n").unwrap();
        std::fs::write(policy.join("cases/a.yml"), "cases: []\n").unwrap();
        std::fs::write(policy.join("cases/notes.md"), "").unwrap();
        let files = case_files(&policy).unwrap().unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.yml", "b.yaml"]);
        assert_eq!(wasm_file_name(&policy), "foo_policy.wasm");
        std::fs::write(
            policy.join("Cargo.toml"),
            "[package]\nname = \"bar-policy\"\n",
        )
        .unwrap();
        assert_eq!(wasm_file_name(&policy), "bar_policy.wasm");
        assert_eq!(case_files(&d).unwrap(), None);

        // a policy with cases but no wasm is an error
        let report = check_policy(
            &policy,
            &CheckOptions {
                wasm_dir: d.join("nowhere"),
                ..Default::default()
            },
        );
        assert!(report.error.is_none(), "no case at all: nothing to run");
        std::fs::write(
            policy.join("cases/a.yml"),
            "cases:\n- {name: x, request: {uid: x}, expect: {allowed: true}}\n",
        )
        .unwrap();
        let report = check_policy(
            &policy,
            &CheckOptions {
                wasm_dir: d.join("nowhere"),
                ..Default::default()
            },
        );
        assert!(report.error.as_deref().unwrap().contains("cannot read"));
        assert_eq!(report.failed(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
