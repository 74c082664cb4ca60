//! The pages a fresh instance of the built priority-class module faults in to answer a
//! small request (`docs/semantics.md#cost`), counted against the no-op guest of `testdrive
//! bench-server` (one page) in the same process: the module's own stack, data and heap
//! pages, each faulted once because `policy_admission::guest::touch_first` writes the
//! pages that would otherwise be read first. Linux only (the process's minor faults, from
//! `/proc/self/stat`); skipped (with a note) when the module is not built: `make test`
//! builds it first. The only test of this binary, so no other test thread faults meanwhile.

#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod common;

use policy_host::{Host, NoCluster, shared};
use serde_json::{Value, json};

/// Evaluations counted per module, after as many to warm the host up.
const EVALUATIONS: u32 = 200;

/// What the module may fault in beyond the no-op guest's page: the stack's top two pages,
/// the page of `.data`, two pages of the module's read-only data, two of heap and the one at
/// the end of the initial memory where the allocator writes its footer. Without the first
/// touches, the stack's second page and the `.data` page fault twice each.
const EXTRA_PAGES: f64 = 7.0;

/// The process's minor page faults so far, or `None` where `/proc/self/stat` is missing.
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // after the command name (in parentheses): state, ppid, pgrp, session, tty_nr, tpgid,
    // flags, minflt
    let fields = stat.rsplit_once(')')?.1;
    fields.split_whitespace().nth(7)?.parse().ok()
}

/// The minor faults of one evaluation in a fresh instance of `module`, on average.
fn faults_per_evaluation(module: &[u8], request: &Value, settings: &Value) -> f64 {
    let host = Host::load(module, None).unwrap();
    let evaluate = || {
        let answer = host
            .validate(request, settings, shared(NoCluster::default()))
            .unwrap();
        assert!(answer.response.allowed, "{:?}", answer.response);
    };
    (0..EVALUATIONS).for_each(|_| evaluate());
    let before = minor_faults().unwrap();
    (0..EVALUATIONS).for_each(|_| evaluate());
    let after = minor_faults().unwrap();
    (after - before) as f64 / f64::from(EVALUATIONS)
}

#[test]
fn a_small_request_faults_each_page_of_the_module_once() {
    if minor_faults().is_none() {
        eprintln!("skipped: no /proc/self/stat");
        return;
    }
    let Some(path) = common::built_module("priority-class-policy") else {
        return;
    };
    let ours = std::fs::read(path).unwrap();
    let request: Value = serde_json::from_str(
        &std::fs::read_to_string(
            common::root().join("test_data/priority-class-policy/requests/pod-gold.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let names: Vec<String> = ["gold", "silver"]
        .into_iter()
        .map(str::to_owned)
        .chain((2..10).map(|i| format!("class-{i}")))
        .collect();
    let settings = json!({ "allowed": names });
    let noop = testdrive::bench::noop::annotated_module().unwrap();
    let floor = faults_per_evaluation(&noop, &request, &settings);
    let policy = faults_per_evaluation(&ours, &request, &settings);
    eprintln!("faults per fresh evaluation: no-op guest {floor:.2}, priority-class {policy:.2}");
    assert!(
        policy - floor <= EXTRA_PAGES + 0.5,
        "priority-class faults in {policy:.2} pages per request, the no-op guest {floor:.2}: \
         more than {EXTRA_PAGES} pages beyond it"
    );
}
