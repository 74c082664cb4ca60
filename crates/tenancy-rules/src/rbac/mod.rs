//! Kubernetes RBAC rules as the API server reads them (`docs/semantics.md#rbac`): what a rule
//! grants ([`rule`]), and whether a ceiling of rules covers a role's rules as the API server's
//! escalation check decides ([`ceiling`]).

pub mod ceiling;
pub mod rule;

pub use ceiling::{Ceiling, Uncovered, ceiling_problems};
pub use rule::{Permissions, PolicyRule, RuleView, describe_resource};
