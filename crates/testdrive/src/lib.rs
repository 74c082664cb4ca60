//! testdrive — a local Kubewarden host for waPC policies.
//!
//! It behaves like Kubewarden's policy-evaluator (and `kwctl run`): it
//! loads a policy `.wasm` (plain or annotated), calls `protocol_version`,
//! `validate_settings` and `validate` on a fresh instance per evaluation,
//! answers the `kubewarden/kubernetes/*` host callbacks from fixtures (a
//! kwctl replay session or a list of objects), refuses reads outside the
//! metadata's `contextAwareResources`, and turns a `mutated_object` into
//! the JSON Patch the API server would receive.
//!
//! ```no_run
//! use serde_json::json;
//! use testdrive::{Host, Metadata, ReplaySession, shared};
//!
//! let wasm = std::fs::read("target/wasm32-wasip1/release/pod_toleration_policy.wasm")?;
//! let metadata = Metadata::from_file("policies/pod-toleration-policy/metadata.yml".as_ref())?;
//! let host = Host::load(&wasm, Some(metadata))?;
//! let request = testdrive::request::load_request("test_data/pod-security-policy/requests/pod.json".as_ref())?;
//! let session = shared(ReplaySession::from_file("test_data/pod-security-policy/sessions/ns.yml".as_ref())?);
//! let eval = host.validate(&request, &json!({}), session.clone())?;
//! println!("{}", serde_json::to_string_pretty(&eval.response)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The CLI (`testdrive run|check|bench|annotate|record|seeds|e2e|bench-server|publish-local|install-e2e`)
//! is a thin layer
//! over this library.

#![deny(missing_docs)]

pub mod apiserver;
pub mod artifacthub;
pub mod audit;
pub mod bench;
pub mod callbacks;
pub mod cases;
pub mod cluster;
pub mod controller;
pub mod e2e;
pub mod error;
pub mod host;
mod http;
pub mod identity;
pub mod install;
pub mod manifests;
pub mod metadata;
pub mod packaging;
pub mod publish;
pub mod replay;
pub mod request;
pub mod seeds;
pub mod selector;
pub mod server_bench;
pub mod shapes;
pub mod wasm;

pub use callbacks::{Callbacks, KubernetesRequest, NoCluster, Recorder, SharedCallbacks, shared};
pub use cluster::ClusterObjects;
pub use error::{Error, Result};
pub use host::{AdmissionResponse, Evaluation, Host, Instance, SettingsValidation};
pub use metadata::Metadata;
pub use replay::ReplaySession;
pub use selector::{FieldSelector, LabelSelector};
