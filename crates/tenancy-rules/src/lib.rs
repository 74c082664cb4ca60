//! The tenancy rules that several policies share, built on the layers below
//! (`policy-decode`, `kube-values`, `policy-admission`; `docs/semantics.md#layers`): class
//! allow-lists, principals and exemptions, forbidden label and annotation keys, organizations,
//! tenant owners and namespace defaults, pod resources, the images a pod pulls and registry
//! lists, security contexts, PodRestriction primitives and RBAC ceilings. The rules of one
//! policy only are behind a feature: `limit-range` (LimitRanger semantics) and `pss` (the Pod
//! Security Standards).

#![deny(missing_docs)]

pub mod class;
pub mod exempt;
pub mod forbidden;
#[cfg(feature = "limit-range")]
pub mod limit_range;
pub mod node_defaults;
pub mod organization;
pub mod ownership;
pub mod pod_resources;
pub mod principal;
#[cfg(feature = "pss")]
pub mod pss;
pub mod pulls;
pub mod rbac;
pub mod registry;
pub mod restriction;
pub mod security_context;
