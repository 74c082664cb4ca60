//! Shared admission logic of the tenancy-policies bundle.
//!
//! Data flows one way: the admission request is read into typed views ([`request`],
//! [`pod`]), core checks record [`verdict::Violation`]s with their paths, and the
//! [`verdict::Verdict`] becomes the policy's answer. A policy crate implements
//! [`policy::Policy`] and exports it with [`export_policy!`].

#![deny(missing_docs)]

pub mod audit;
#[cfg(feature = "bench")]
pub mod bench;
pub mod class;
pub mod cluster;
pub mod error;
pub mod exempt;
pub mod gate;
pub mod hostname;
pub mod image;
pub mod json;
pub mod labels;
pub mod limit_range;
pub mod matcher;
pub mod message;
pub mod metadata;
pub mod mutation;
pub mod names;
pub mod net;
pub mod node_defaults;
pub mod organization;
pub mod path;
pub mod pod;
pub mod pod_resources;
pub mod policy;
pub mod principal;
#[cfg(feature = "pss")]
pub mod pss;
pub mod pull_policy;
pub mod pulls;
pub mod quantity;
pub mod ranges;
pub mod rbac;
pub mod registry;
pub mod request;
pub mod restriction;
mod robustness;
pub mod security_context;
pub mod selector;
pub mod settings;
pub mod strict;
#[cfg(feature = "testing")]
pub mod testing;
pub mod toleration;
pub mod verdict;
pub mod workload;

pub use error::{PolicyError, SettingsError};
pub use path::FieldPath;
pub use verdict::{Mode, Verdict, Violation};

/// Re-exports the guest-side registration used by [`export_policy!`].
pub mod guest {
    pub use kubewarden_policy_sdk::protocol_version_guest;
    pub use wapc_guest::register_function;
}
