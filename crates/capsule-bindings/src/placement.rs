//! Where and how every written binding is placed: its PolicyServer, `mode`, `failurePolicy`,
//! `timeoutSeconds`, the opt-in rule sets it adds, and the labels and audit annotations every
//! object this crate writes carries (README "Installing").

use std::fmt;
use std::str::FromStr;

use kube_values::labels::is_dns_subdomain;
use policy_host::Metadata;
use serde_json::{Map, Value, json};

use crate::catalogue::opt_in_sets;
use crate::error::{Error, Result};

/// The label naming the bundle on everything written (`kubectl apply --prune -l …`).
pub const PART_OF_LABEL: &str = "app.kubernetes.io/part-of";
/// Its value.
pub const PART_OF: &str = "tenancy-policies";
/// The label naming what wrote an object.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The label saying which part of the install an object is (`baseline`, `tenant`, `rbac`, …).
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// The dedicated PolicyServer every binding is placed on unless told otherwise.
pub const DEFAULT_POLICY_SERVER: &str = "tenancy-policies";
/// The policy annotations Kubewarden's audit scanner copies into PolicyReports (severity,
/// category, title, description), taken from the policy's metadata.
pub const AUDIT_ANNOTATIONS: [&str; 4] = [
    "io.kubewarden.policy.severity",
    "io.kubewarden.policy.category",
    "io.artifacthub.displayName",
    "io.kubewarden.policy.description",
];
/// The namespaces Kubewarden's recommended policies skip (Helm chart `kubewarden-defaults`,
/// `global.skipNamespaces`), which the baseline bindings skip too, with the install's own.
pub const SYSTEM_NAMESPACES: [&str; 23] = [
    "calico-system",
    "cattle-alerting",
    "cattle-fleet-local-system",
    "cattle-fleet-system",
    "cattle-global-data",
    "cattle-global-nt",
    "cattle-impersonation-system",
    "cattle-istio",
    "cattle-logging",
    "cattle-monitoring-system",
    "cattle-neuvector-system",
    "cattle-pipeline",
    "cattle-prometheus",
    "cattle-system",
    "cert-manager",
    "ingress-nginx",
    "kube-node-lease",
    "kube-public",
    "kube-system",
    "longhorn-system",
    "rancher-operator-system",
    "security-scan",
    "tigera-operator",
];

/// The namespace Kubewarden's controller runs PolicyServers in.
pub const KUBEWARDEN_NAMESPACE: &str = "kubewarden";

/// The `namespaceSelector` of a cluster-wide binding that skips the namespaces `skipped`
/// (sorted, each once).
pub fn skip_selector<'a>(skipped: impl IntoIterator<Item = &'a str>) -> Value {
    let skipped: std::collections::BTreeSet<&str> = skipped.into_iter().collect();
    json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": skipped}]})
}

/// The API server's ceiling on a webhook's `timeoutSeconds`.
pub const MAX_TIMEOUT_SECONDS: u32 = 30;

/// Kubewarden's policy mode: `monitor` admits everything and logs what `protect` would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Log, never refuse (a trial run).
    Monitor,
    /// Refuse what the policy refuses.
    #[default]
    Protect,
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "monitor" => Ok(Mode::Monitor),
            "protect" => Ok(Mode::Protect),
            other => Err(Error::Invalid(format!(
                "mode {other:?}: expected monitor or protect"
            ))),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Monitor => "monitor",
            Mode::Protect => "protect",
        })
    }
}

/// What the API server does when the policy cannot be reached in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Refuse the request (fail closed).
    #[default]
    Fail,
    /// Admit the request (fail open).
    Ignore,
}

impl FromStr for FailurePolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "Fail" => Ok(FailurePolicy::Fail),
            "Ignore" => Ok(FailurePolicy::Ignore),
            other => Err(Error::Invalid(format!(
                "failure policy {other:?}: expected Fail or Ignore"
            ))),
        }
    }
}

impl fmt::Display for FailurePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        })
    }
}

/// Where and how bindings are placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// `spec.policyServer`.
    pub policy_server: String,
    /// `spec.mode`.
    pub mode: Mode,
    /// `spec.failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// `spec.timeoutSeconds` (1 to 30).
    pub timeout_seconds: u32,
    /// Opt-in rule sets added to the policies that have them (`legacy-ingress`, `openshift`).
    pub opt_in: Vec<String>,
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            policy_server: DEFAULT_POLICY_SERVER.to_owned(),
            mode: Mode::default(),
            failure_policy: FailurePolicy::default(),
            timeout_seconds: 10,
            opt_in: Vec::new(),
        }
    }
}

impl Placement {
    /// Refuses a PolicyServer name that is not a DNS subdomain, a timeout outside 1 to 30
    /// seconds and an opt-in set no policy has.
    pub fn validate(&self) -> Result<()> {
        let mut problems = Vec::new();
        if !is_dns_subdomain(&self.policy_server) {
            problems.push(format!(
                "policy server {:?}: not a DNS subdomain (lowercase letters, digits, '-' and '.')",
                self.policy_server
            ));
        }
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&self.timeout_seconds) {
            problems.push(format!(
                "timeout {}s: the API server allows 1 to {MAX_TIMEOUT_SECONDS} seconds",
                self.timeout_seconds
            ));
        }
        let known = opt_in_sets()?;
        for name in &self.opt_in {
            if !known.contains(name) {
                problems.push(format!(
                    "opt-in {name:?}: not a rule set of any policy; known: {}",
                    known.join(", ")
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(problems.join("; ")))
        }
    }

    /// Writes `policyServer`, `mode`, `failurePolicy` and `timeoutSeconds` into `spec`.
    pub fn place(&self, spec: &mut Map<String, Value>) {
        spec.insert("policyServer".into(), json!(self.policy_server));
        spec.insert("mode".into(), json!(self.mode.to_string()));
        spec.insert(
            "failurePolicy".into(),
            json!(self.failure_policy.to_string()),
        );
        spec.insert("timeoutSeconds".into(), json!(self.timeout_seconds));
    }
}

/// What a ClusterAdmissionPolicy this crate writes holds besides its placement and what the
/// policy's metadata gives (`backgroundAudit`, `contextAwareResources`, audit annotations).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: Map<String, Value>,
    /// `spec.module`.
    pub module: String,
    /// `spec.mutating`.
    pub mutating: bool,
    /// `spec.rules`.
    pub rules: Vec<Value>,
    /// `spec.namespaceSelector` (matchExpressions only: kubewarden-controller drops
    /// matchLabels).
    pub namespace_selector: Value,
    /// `spec.settings`.
    pub settings: Value,
    /// `spec.mode` when the binding has its own, else the placement's.
    pub mode: Option<Mode>,
    /// `spec.matchConditions`, left out when empty.
    pub match_conditions: Vec<Value>,
}

impl Placement {
    /// The ClusterAdmissionPolicy `written` for the policy of `metadata`, placed here.
    pub fn binding(&self, written: Written, metadata: &Metadata) -> Value {
        let mut spec = Map::new();
        spec.insert("module".into(), json!(written.module));
        self.place(&mut spec);
        if let Some(mode) = written.mode {
            spec.insert("mode".into(), json!(mode.to_string()));
        }
        spec.insert("mutating".into(), json!(written.mutating));
        spec.insert("backgroundAudit".into(), json!(metadata.background_audit));
        spec.insert("rules".into(), Value::Array(written.rules));
        spec.insert("namespaceSelector".into(), written.namespace_selector);
        if !written.match_conditions.is_empty() {
            spec.insert(
                "matchConditions".into(),
                Value::Array(written.match_conditions),
            );
        }
        if !metadata.context_aware_resources.is_empty() {
            let resources: Vec<Value> = metadata
                .context_aware_resources
                .iter()
                .map(|r| json!({"apiVersion": r.api_version, "kind": r.kind}))
                .collect();
            spec.insert("contextAwareResources".into(), Value::Array(resources));
        }
        spec.insert("settings".into(), written.settings);
        json!({
            "apiVersion": "policies.kubewarden.io/v1",
            "kind": "ClusterAdmissionPolicy",
            "metadata": {
                "name": written.name,
                "labels": written.labels,
                "annotations": audit_annotations(metadata),
            },
            "spec": spec,
        })
    }
}

/// The labels of an object this crate writes, for `component`.
pub fn labels(component: &str) -> Map<String, Value> {
    let mut labels = Map::new();
    labels.insert(PART_OF_LABEL.into(), json!(PART_OF));
    labels.insert(MANAGED_BY_LABEL.into(), json!("capsule-bindings"));
    labels.insert(COMPONENT_LABEL.into(), json!(component));
    labels
}

/// The audit annotations of a binding of the policy with `metadata` ([`AUDIT_ANNOTATIONS`]
/// it has).
pub fn audit_annotations(metadata: &Metadata) -> Map<String, Value> {
    AUDIT_ANNOTATIONS
        .iter()
        .filter_map(|key| {
            metadata
                .annotations
                .get(*key)
                .map(|v| ((*key).to_owned(), json!(v)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_failure_policies_read_and_print_as_kubewarden_spells_them() {
        assert_eq!("monitor".parse::<Mode>().unwrap(), Mode::Monitor);
        assert_eq!(Mode::Protect.to_string(), "protect");
        assert!("Protect".parse::<Mode>().is_err());
        assert_eq!(
            "Ignore".parse::<FailurePolicy>().unwrap(),
            FailurePolicy::Ignore
        );
        assert!("fail".parse::<FailurePolicy>().is_err());
    }

    #[test]
    fn a_placement_is_refused_with_every_problem() {
        let bad = Placement {
            policy_server: "Tenancy_Policies".into(),
            timeout_seconds: 31,
            opt_in: vec!["openshift".into(), "helm".into()],
            ..Placement::default()
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("policy server \"Tenancy_Policies\""), "{err}");
        assert!(err.contains("timeout 31s"), "{err}");
        assert!(err.contains("opt-in \"helm\""), "{err}");
        assert!(!err.contains("opt-in \"openshift\""), "{err}");
        Placement::default().validate().unwrap();
    }

    #[test]
    fn placing_writes_the_four_fields() {
        let mut spec = Map::new();
        Placement {
            mode: Mode::Monitor,
            ..Placement::default()
        }
        .place(&mut spec);
        assert_eq!(
            Value::Object(spec),
            json!({"policyServer": "tenancy-policies", "mode": "monitor", "failurePolicy": "Fail", "timeoutSeconds": 10})
        );
    }
}
