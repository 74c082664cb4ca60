//! The admission plumbing every policy uses: the request and its typed views ([`request`],
//! [`pod`], [`workload`], [`metadata`]), the gate in front of a policy's rules ([`gate`]),
//! cluster lookups ([`cluster`]), the verdict builder and minimal mutations ([`verdict`],
//! [`mutation`]), audit reports ([`audit`]), and the policy contract with its wasm entry
//! points ([`policy`], [`guest`], [`export_policy!`], [`teardown`]). Built on `policy-decode` and
//! `kube-values` (`docs/semantics.md#layers`).
//!
//! Data flows one way: the admission request is read into typed views, rules record
//! [`verdict::Violation`]s with their paths, and the [`verdict::Verdict`] becomes the
//! policy's answer.

#![deny(missing_docs)]

pub mod audit;
#[cfg(feature = "bench")]
pub mod bench;
pub mod cluster;
pub mod gate;
pub mod guest;
pub mod metadata;
pub mod mutation;
pub mod pod;
pub mod policy;
pub mod request;
mod robustness;
pub mod teardown;
#[cfg(feature = "testing")]
pub mod testing;
pub mod verdict;
pub mod workload;

pub use verdict::{Mode, Verdict, Violation};
