//! Kubernetes values and their parsers, read as the API server reads them: quantities, label
//! keys and values, label selectors, image references and pull policies, hostnames, IP
//! addresses and CIDRs, taints and tolerations, comma-separated list values. Built on
//! `policy-decode` only; nothing here knows of admission requests or policies
//! (`docs/semantics.md#layers`).

#![deny(missing_docs)]

pub mod hostname;
pub mod image;
pub mod labels;
pub mod list;
pub mod net;
pub mod pull_policy;
pub mod quantity;
pub mod selector;
pub mod toleration;
