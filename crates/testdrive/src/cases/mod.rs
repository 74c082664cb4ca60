//! Declarative cases (`policies/<name>/cases/*.yaml`) and `testdrive check`.
//!
//! ```yaml
//! defaults:                      # optional, merged into every case (case fields win)
//!   settings: {protectedTaints: [{key: dedicated, value: tenantA}]}
//!   request: ../../../test_data/pod-toleration-policy/requests/pod.json
//! cases:
//! - name: exists toleration refused
//!   settingsOverride: {mode: warn}   # merge patch on the settings; settingsPatch: JSON Patch
//!   override: {userInfo: {username: bob}}
//!   replay: ../../../test_data/pod-toleration-policy/sessions/ns-team-a.yml   # or cluster: [objects]
//!   expect: {allowed: false, code: 403, message: 'operator "Exists"'}
//! ```
//!
//! Paths are relative to the case file. Unknown fields are refused.
//!
//! * [`schema`]: what a case file may say;
//! * [`resolve`]: settings, request and cluster state of each case, read from its files;
//! * [`judge`]: running a case and judging the answer by its expectations;
//! * [`discovery`]: a policy directory's case files, wasm and metadata;
//! * [`shapes`]: `testdrive shapes`, every lookup answer served again with a wrong shape;
//! * [`seeds`]: `testdrive seeds`, every case as fuzzing seeds;
//! * [`report`]: `testdrive check` over policy directories.

pub mod discovery;
pub mod generated;
pub mod judge;
pub mod report;
pub mod resolve;
pub mod schema;
pub mod seeds;
pub mod shapes;

pub use discovery::{case_files, policy_metadata, policy_name, wasm_file_name};
pub use judge::check_evaluation;
pub use judge::{CaseOutcome, run_case};
pub(crate) use judge::{check_message, compact, quote};
pub(crate) use report::selected_cases;
pub use report::{CheckOptions, PolicyReport, check_policy};
pub use resolve::{
    ClusterState, ResolvedCase, Scenario, load_case_file, parse_case_file, resolve_scenario,
};
pub use schema::{Case, CaseDefaults, CaseFile, Expect, RequestSpec};

/// A fresh scratch directory for one test.
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("testdrive-cases-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
