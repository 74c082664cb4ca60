//! policy-host — the wasm host that runs a Kubewarden waPC policy module as policy-evaluator
//! does: the runtime, the host callbacks and the admission response, shared by testdrive and
//! the capsule-bindings CLI.
//!
//! It loads a policy `.wasm` (plain or annotated), calls `protocol_version`,
//! `validate_settings` and `validate` on a fresh instance per evaluation, answers the
//! `kubewarden/kubernetes/*` host callbacks from fixtures (a kwctl replay session or a list
//! of objects), refuses reads outside the metadata's `contextAwareResources`, and turns a
//! `mutated_object` into the JSON Patch the API server would receive. As in Kubewarden's
//! policy-evaluator, the engine ([`host`], its `runtimes/`) is apart from what answers the
//! guest's calls ([`callbacks`], [`replay`], [`cluster`], its `callback_handler/`).
//!
//! ```no_run
//! use serde_json::json;
//! use policy_host::{Host, Metadata, ReplaySession, shared};
//!
//! let wasm = std::fs::read("target/wasm32-wasip1/release/pod_toleration_policy.wasm")?;
//! let metadata = Metadata::from_file("policies/pod-toleration-policy/metadata.yml".as_ref())?;
//! let host = Host::load(&wasm, Some(metadata))?;
//! let request = policy_host::request::load_request("test_data/pod-security-policy/requests/pod.json".as_ref())?;
//! let session = shared(ReplaySession::from_file("test_data/pod-security-policy/sessions/ns.yml".as_ref())?);
//! let eval = host.validate(&request, &json!({}), session.clone())?;
//! println!("{}", serde_json::to_string_pretty(&eval.response)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod callbacks;
pub mod cluster;
pub mod error;
pub mod host;
pub mod kube;
pub mod metadata;
pub mod replay;
pub mod request;
pub mod selector;
pub mod wasm;

pub use callbacks::{Callbacks, KubernetesRequest, NoCluster, SharedCallbacks, shared};
pub use cluster::ClusterObjects;
pub use error::{Error, Result};
pub use host::{AdmissionResponse, Evaluation, Host, Instance, SettingsValidation};
pub use metadata::Metadata;
pub use replay::{Recorder, ReplaySession};
pub use selector::{FieldSelector, LabelSelector};
