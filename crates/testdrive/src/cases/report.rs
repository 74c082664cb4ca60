//! `testdrive check`: every case of a policy directory, reported.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::discovery::{case_files, policy_metadata, policy_name, wasm_file_name};
use super::judge::{CaseOutcome, run_case};
use super::resolve::{ResolvedCase, load_case_file};
use policy_host::host::Host;

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
    let generated = super::generated::null_settings(&cases);
    cases.extend(generated);
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
    let problems = crate::packaging::policy_problems(policy_dir, &policy, &wasm, metadata.as_ref());
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
