//! Test support shared by the policies (feature `testing`): the "never panics, never fails
//! open" contract of every policy, checked by one property-test suite
//! ([`robustness_tests!`](crate::robustness_tests)) and by the `cargo fuzz` targets
//! ([`fuzz_validate`], [`fuzz_settings`]).
//!
//! * [`generate`]: proptest strategies for Kubernetes-shaped JSON, admission requests and
//!   settings, mostly as random edits of representative valid documents.
//! * [`contract`]: the checks themselves, each returning why a response breaks it.
//! * [`FailingCluster`]: a cluster whose every lookup fails, recording what was read.
//!
//! A policy crate declares its suite in a few lines:
//!
//! ```ignore
//! policy_admission::robustness_tests!(PodTolerationPolicy, policy_admission::testing::Robustness {
//!     settings: json!({"protectedTaints": [{"key": "dedicated", "value": "tenantA"}]}),
//!     subresources: &["ephemeralcontainers"],
//!     strings: &["Exists", "Equal", "dedicated", "tenantA"],
//!     ..Default::default()
//! });
//! ```

// Test support only (feature `testing`, a dev-dependency of the policies and the fuzz
// crate): a panic here is how a broken property reaches the test runner or the fuzzer.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

pub mod contract;
pub mod generate;

/// Re-exported so that policy crates need no proptest dependency of their own.
pub use proptest;

use proptest::prelude::{Just, prop_oneof};
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

use crate::cluster::{Cluster, GetRequest, ListRequest, LookupFailure, Objects};
use crate::policy::{Policy, evaluate, validate_settings};

pub use contract::{
    check_fails_closed, check_host_contract, check_judged, check_payload, check_settings_reread,
};
pub use generate::{POD_KEYS, arb_json};

/// The pod-bearing kinds of `docs/semantics.md#pod-bearing-kinds` as `(group, version, kind)`.
pub const POD_KINDS: &[(&str, &str, &str)] = &[
    ("", "v1", "Pod"),
    ("", "v1", "ReplicationController"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "DaemonSet"),
    ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"),
];

/// What a policy's robustness suite needs to know about the policy.
#[derive(Clone, Debug)]
pub struct Robustness {
    /// Representative valid settings; where the policy has lookups they should trigger them.
    pub settings: Value,
    /// The kinds the policy handles, as `(group, version, kind)`.
    pub kinds: &'static [(&'static str, &'static str, &'static str)],
    /// Subresources the policy judges (`ephemeralcontainers`); requests get none or one.
    pub subresources: &'static [&'static str],
    /// Domain words — field names the policy reads, class names, taint keys: used as object
    /// keys and values, and random edits are biased towards the fields they name.
    pub strings: &'static [&'static str],
    /// What the policy may read, as `apiVersion/Kind` (`v1/Namespace`): its
    /// `contextAwareResources`. Empty: the policy must never make a lookup.
    pub reads: &'static [&'static str],
    /// Whether the policy is declared `mutating: true` (else it must never mutate).
    pub mutating: bool,
    /// Valid-looking objects that generated requests start from (matched to a kind by their
    /// `kind` field); pod-bearing kinds also start from a generic rich pod.
    pub objects: Vec<Value>,
    /// Objects of a populated cluster (classes, Namespaces, Nodes the examples name):
    /// property a is also checked against it, reaching the rules behind found objects.
    pub cluster: Vec<Value>,
    /// Cases per property (`PROPTEST_CASES` overrides it).
    pub cases: u32,
}

impl Default for Robustness {
    fn default() -> Self {
        Robustness {
            settings: json!({}),
            kinds: POD_KINDS,
            subresources: &[],
            strings: &[],
            reads: &[],
            mutating: false,
            objects: Vec::new(),
            cluster: Vec::new(),
            cases: 256,
        }
    }
}

/// The text every [`FailingCluster`] failure contains.
pub const FAILURE: &str = "connection refused (test cluster: every lookup fails)";

/// A cluster whose every lookup fails (as an unreachable API server would), recording each
/// lookup as `apiVersion/Kind`.
#[derive(Clone, Debug, Default)]
pub struct FailingCluster {
    reads: Vec<String>,
}

impl FailingCluster {
    /// The lookups attempted so far, as `apiVersion/Kind`, in order.
    pub fn reads(&self) -> &[String] {
        &self.reads
    }

    /// Whether any lookup was attempted.
    pub fn attempted(&self) -> bool {
        !self.reads.is_empty()
    }

    fn fail(&mut self, api_version: &str, kind: &str, what: String) -> LookupFailure {
        self.reads.push(format!("{api_version}/{kind}"));
        LookupFailure(format!("{FAILURE} while reading {what}"))
    }
}

impl Cluster for FailingCluster {
    fn get(&mut self, r: &GetRequest) -> Result<Option<Value>, LookupFailure> {
        Err(self.fail(&r.api_version, &r.kind, r.describe()))
    }

    fn list(&mut self, r: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
        Err(self.fail(&r.api_version, &r.kind, r.describe()))
    }
}

/// The `validate` payload for `request` and `settings`.
pub fn payload(request: &Value, settings: &Value) -> Vec<u8> {
    json!({"request": request, "settings": settings})
        .to_string()
        .into_bytes()
}

/// A property failure with the `validate` payload that reproduces it (also a fuzz input).
fn reproducer(problem: String, payload: &[u8]) -> String {
    format!("{problem}\n  payload: {}", String::from_utf8_lossy(payload))
}

fn runner(config: &Robustness) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(config.cases);
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::with_cases(cases)
    })
}

fn run<S: Strategy>(
    config: &Robustness,
    property: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), String>,
) {
    let outcome = runner(config).run(&strategy, |input| test(input).map_err(TestCaseError::fail));
    if let Err(e) = outcome {
        panic!("{property}: {e}");
    }
}

/// The representative settings are accepted by `validate_settings` (else every other
/// property would only exercise the settings refusal).
pub fn representative_settings_are_valid<P: Policy>(config: &Robustness) {
    let r = validate_settings::<P>(config.settings.to_string().as_bytes());
    assert!(
        r.valid,
        "{}: representative settings refused: {:?}",
        P::NAME,
        r.message
    );
}

/// Property a: arbitrary requests of every handled kind and operation, with and without
/// namespace, never panic; against a cluster where nothing exists (and against the
/// configured populated cluster) the verdict is an acceptance without code or a rejection
/// with a message and 400/403; the host contract (no mutation on rejection or DELETE, none
/// at all for non-mutating policies) holds.
pub fn arbitrary_requests_are_judged<P: Policy>(config: &Robustness) {
    run(
        config,
        "arbitrary requests are judged",
        generate::arb_request(config),
        |request| {
            let payload = payload(&request, &config.settings);
            let delete = generate::is_delete(&request);
            let mut clusters = vec![Objects::default()];
            if !config.cluster.is_empty() {
                clusters.push(Objects::new(config.cluster.clone()));
            }
            for mut cluster in clusters {
                let r = evaluate::<P>(&payload, &mut cluster);
                check_judged(&r)
                    .and_then(|()| check_host_contract(&r, delete, config.mutating))
                    .map_err(|e| reproducer(e, &payload))?;
            }
            Ok(())
        },
    );
}

/// Property b: against a cluster whose every lookup fails, a request that attempted a
/// lookup is rejected with 500 (`onLookupError: reject`, the default) — never accepted —
/// or, under `onLookupError: accept`, reports the skipped check in a warning; only declared
/// kinds are read. Settings are the representative ones or valid random edits of them. At
/// least one generated request must make a lookup when the policy declares reads (else the
/// property would be vacuous): the property runs again, up to 8 times, until
/// one has, so that a policy whose requests rarely look up does not fail by chance.
pub fn failed_lookups_never_fail_open<P: Policy>(config: &Robustness) {
    let attempted = std::cell::Cell::new(0u32);
    for _ in 0..LOOKUP_ROUNDS {
        failed_lookups_round::<P>(config, &attempted);
        if config.reads.is_empty() || attempted.get() > 0 {
            return;
        }
    }
    panic!(
        "{}: none of {} generated requests made a lookup: the representative settings do not exercise {:?}",
        P::NAME,
        LOOKUP_ROUNDS * runner(config).config().cases,
        config.reads
    );
}

/// The most runs of property b that may pass without any lookup before it fails as vacuous.
const LOOKUP_ROUNDS: u32 = 8;

/// One run of property b, counting the requests that attempted a lookup in `attempted`.
fn failed_lookups_round<P: Policy>(config: &Robustness, attempted: &std::cell::Cell<u32>) {
    let settings = prop_oneof![
        3 => Just(config.settings.clone()),
        2 => generate::arb_settings(config),
    ];
    run(
        config,
        "failed lookups never fail open",
        (settings, generate::arb_request(config)),
        |(settings, request)| {
            if !validate_settings::<P>(settings.to_string().as_bytes()).valid {
                return Ok(());
            }
            let payload = payload(&request, &settings);
            let mut cluster = FailingCluster::default();
            let r = evaluate::<P>(&payload, &mut cluster);
            contract::check_reads(cluster.reads(), config.reads)
                .map_err(|e| reproducer(e, &payload))?;
            if cluster.attempted() {
                attempted.set(attempted.get() + 1);
                check_fails_closed(&r, contract::accepts_lookup_errors(&settings))
                    .map_err(|e| reproducer(e, &payload))?;
            }
            Ok(())
        },
    );
}

/// Property c: arbitrary settings (random edits of the representative ones, and arbitrary
/// documents) never panic `validate_settings`; settings it accepts are accepted again when
/// `validate` re-reads them (never the 500 `invalid settings: …`), and the verdict keeps
/// the shape of property a. Both valid and invalid settings must be generated.
pub fn arbitrary_settings_are_consistent<P: Policy>(config: &Robustness) {
    let (valid, invalid) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let strategy = (
        generate::arb_settings(config),
        generate::arb_request(config),
    );
    run(
        config,
        "arbitrary settings are consistent",
        strategy,
        |(settings, request)| {
            let answer = validate_settings::<P>(settings.to_string().as_bytes());
            if !answer.valid {
                invalid.set(invalid.get() + 1);
                return match answer.message {
                    Some(_) => Ok(()),
                    None => Err("settings refused without a message".to_owned()),
                };
            }
            valid.set(valid.get() + 1);
            let payload = payload(&request, &settings);
            let r = evaluate::<P>(&payload, &mut Objects::default());
            check_settings_reread(&r)
                .and_then(|()| check_judged(&r))
                .and_then(|()| {
                    check_host_contract(&r, generate::is_delete(&request), config.mutating)
                })
                .map_err(|e| reproducer(e, &payload))
        },
    );
    assert!(
        valid.get() > 0 && invalid.get() > 0,
        "{}: settings generation is one-sided ({} valid, {} invalid)",
        P::NAME,
        valid.get(),
        invalid.get()
    );
}

/// Body of a `<policy>_validate` fuzz target: `data` is a `validate` payload; panics with
/// the broken property when [`check_payload`] fails.
pub fn fuzz_validate<P: Policy>(data: &[u8]) {
    if let Err(e) = check_payload::<P>(data) {
        panic!("{}: {e}", P::NAME);
    }
}

/// Body of a `<policy>_settings` fuzz target: `data` is a settings document. It must not
/// panic `validate_settings`; when accepted, `validate` must accept the same settings for a
/// request (never the 500 `invalid settings: …`).
pub fn fuzz_settings<P: Policy>(data: &[u8]) {
    let answer = validate_settings::<P>(data);
    if !answer.valid {
        assert!(
            answer.message.is_some(),
            "{}: settings refused without a message",
            P::NAME
        );
        return;
    }
    let settings: Value = if data.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(data) {
            Ok(v) => v,
            Err(e) => panic!("{}: validate_settings accepted non-JSON: {e}", P::NAME),
        }
    };
    let request = json!({"uid": "fuzz", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "DELETE", "namespace": "team-a"});
    let r = evaluate::<P>(&payload(&request, &settings), &mut Objects::default());
    if let Err(e) = check_settings_reread(&r) {
        panic!("{}: {e}", P::NAME);
    }
}
