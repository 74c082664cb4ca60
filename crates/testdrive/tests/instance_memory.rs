//! The peak linear memory `Host::peak_memory` reports (and `make bench-server` prints beside
//! every scenario), on the built priority-class module: a small request stays within the
//! 2 MiB every module starts with (`.cargo/config.toml`: no `memory.grow`), a large object
//! needs more, and the figure is the smallest limit under which the module answers alike.
//! Skipped (with a note) when the module is not built; `make test` builds it first.

#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod common;

use std::path::PathBuf;

use policy_host::{Host, NoCluster, SharedCallbacks, shared};
use serde_json::{Value, json};

const INITIAL_MEMORY: usize = 2 * 1024 * 1024;
const PAGE: usize = 64 * 1024;

fn module() -> Option<PathBuf> {
    common::built_module("priority-class-policy")
}

fn pod(containers: usize) -> Value {
    let containers: Vec<Value> = (0..containers)
        .map(|i| json!({"name": format!("c-{i}"), "image": format!("registry.example.com/app-{i}:1.0")}))
        .collect();
    json!({
        "uid": "1", "operation": "CREATE", "namespace": "solar",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "userInfo": {"username": "alice"},
        "object": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "solar"},
            "spec": {"priorityClassName": "gold", "containers": containers}}
    })
}

fn no_cluster() -> SharedCallbacks {
    shared(NoCluster::default())
}

#[test]
fn a_small_request_stays_in_the_initial_memory_and_a_large_one_grows_it() {
    let Some(path) = module() else { return };
    let host = Host::load(&std::fs::read(path).unwrap(), None).unwrap();
    let settings = json!({"allowed": ["gold", "silver"]});
    let small = host.peak_memory(&pod(3), &settings, &no_cluster).unwrap();
    assert_eq!(
        small, INITIAL_MEMORY,
        "a 3-container Pod needs no memory.grow"
    );
    let large = host
        .peak_memory(&pod(5_000), &settings, &no_cluster)
        .unwrap();
    assert!(
        large > INITIAL_MEMORY,
        "5,000 containers grow memory: {large}"
    );
    assert_eq!(large % PAGE, 0, "memory grows in whole pages");
}

#[test]
fn the_peak_is_the_smallest_limit_that_answers_alike() {
    let Some(path) = module() else { return };
    let host = Host::load(&std::fs::read(path).unwrap(), None).unwrap();
    let settings = json!({"allowed": ["gold"]});
    let request = pod(5_000);
    let peak = host.peak_memory(&request, &settings, &no_cluster).unwrap();
    let answer = host.validate(&request, &settings, no_cluster()).unwrap();
    assert!(answer.response.allowed);
    let within = |bytes| {
        host.validate_within(&request, &settings, no_cluster(), bytes)
            .unwrap()
    };
    assert_eq!(within(peak).as_ref(), Some(&answer));
    // one page less: the guest cannot allocate and aborts, a 500
    let short = within(peak - PAGE).expect("the module starts below the peak");
    assert!(!short.response.allowed);
    assert_eq!(
        short.response.status.as_ref().and_then(|s| s.code),
        Some(500)
    );
    // below the memory the module starts with, no instance at all
    assert_eq!(within(INITIAL_MEMORY - PAGE), None);
}
