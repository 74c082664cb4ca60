//! The Kubernetes side of a cluster, imitated for the real policy-server: the fake API server
//! that answers its lookups under RBAC, and kubewarden-controller's step from bindings to
//! `policies.yml`.

pub mod apiserver;
pub mod controller;
