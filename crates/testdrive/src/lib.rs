//! testdrive — the local Kubewarden test host: the case runner, the runs through the real
//! kwctl and policy-server, the benches, the fake API server and controller step, the release
//! rehearsal and the capsule-bindings harness, all on the wasm host of `policy-host`.
//!
//! Running one module (loading, host callbacks, responses) is [`policy_host`]'s; testdrive
//! drives it over every declarative case of the bundle and compares it with Kubewarden's own
//! tools:
//!
//! * [`cases`]: declarative cases, `testdrive check|shapes|seeds`;
//! * [`packaging`]: what Kubewarden's packaging tools need from a policy;
//! * [`e2e`]: every case through the real kwctl;
//! * [`bench`]: latency in the wasm host and throughput in the real policy-server;
//! * [`kube`]: the fake API server and kubewarden-controller's step;
//! * [`audit`]: the audit files, through the wasm and policy-server's `/audit`;
//! * [`install`]: the install directory run as Kubewarden runs it (`testdrive install-e2e`);
//! * [`release`]: Artifact Hub packages, the publishing identity, `testdrive publish-local`;
//! * [`manifests`]: every manifest checked against Kubewarden's CRDs and the policies;
//! * [`capsule`]: the capsule-bindings scenarios and footprint.
//!
//! ```no_run
//! use policy_host::{Host, Metadata, NoCluster, shared};
//! use serde_json::json;
//! use testdrive::cases::check_evaluation;
//!
//! let wasm = std::fs::read("target/wasm32-wasip1/release/pod_toleration_policy.wasm")?;
//! let metadata = Metadata::from_file("policies/pod-toleration-policy/metadata.yml".as_ref())?;
//! let host = Host::load(&wasm, Some(metadata))?;
//! let request = policy_host::request::load_request("test_data/pod-security-policy/requests/pod.json".as_ref())?;
//! let eval = host.validate(&request, &json!({}), shared(NoCluster::default()))?;
//! let expect = serde_json::from_value(json!({"allowed": true}))?;
//! let mut failures = Vec::new();
//! check_evaluation(&expect, &eval, &mut failures);
//! assert!(failures.is_empty(), "{failures:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The CLI (`testdrive run|check|shapes|bench|annotate|record|seeds|e2e|bench-server|manifests|identity|audit|publish-local|install-e2e|capsule-check|capsule-footprint`)
//! is a thin layer over this library.

#![deny(missing_docs)]

pub mod audit;
pub mod bench;
pub mod capsule;
pub mod cases;
pub mod e2e;
pub mod http;
pub mod install;
pub mod kube;
pub mod manifests;
pub mod packaging;
pub mod release;
