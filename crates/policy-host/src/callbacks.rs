//! Host callbacks: the Kubernetes reads a policy makes, and the trait that
//! answers them from fixtures.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One Kubernetes read requested by a policy through `host_call`.
///
/// The serde representation (externally tagged, snake_case fields) is the
/// one kwctl writes inside the `request:` strings of a replay session, e.g.
/// `!KubernetesGetResource` followed by the fields.
///
/// ```
/// use policy_host::KubernetesRequest;
/// let r = KubernetesRequest::KubernetesGetResource {
///     api_version: "v1".into(), kind: "Namespace".into(), name: "team-a".into(),
///     namespace: None, disable_cache: false, field_masks: None,
/// };
/// assert_eq!(r.to_session_string().unwrap(),
///     "!KubernetesGetResource\napi_version: v1\nkind: Namespace\nname: team-a\nnamespace: null\ndisable_cache: false\n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(clippy::enum_variant_names)] // the names are kwctl's
pub enum KubernetesRequest {
    /// `get_resource`: one object by name.
    KubernetesGetResource {
        /// apiVersion of the resource.
        api_version: String,
        /// Kind of the resource.
        kind: String,
        /// Name of the object.
        name: String,
        /// Namespace, `None` for cluster-scoped resources.
        namespace: Option<String>,
        /// Whether the host cache must be bypassed.
        disable_cache: bool,
        /// Optional field masks (newer SDKs); absent and null are equal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    /// `list_resources_by_namespace`: objects of one namespace.
    KubernetesListResourceNamespace {
        /// apiVersion of the resource.
        api_version: String,
        /// Kind of the resource.
        kind: String,
        /// Namespace to list.
        namespace: String,
        /// Kubernetes label selector string.
        label_selector: Option<String>,
        /// Kubernetes field selector string.
        field_selector: Option<String>,
        /// Optional field masks (newer SDKs); absent and null are equal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    /// `list_resources_all`: objects of every namespace (or cluster-scoped).
    KubernetesListResourceAll {
        /// apiVersion of the resource.
        api_version: String,
        /// Kind of the resource.
        kind: String,
        /// Kubernetes label selector string.
        label_selector: Option<String>,
        /// Kubernetes field selector string.
        field_selector: Option<String>,
        /// Optional field masks (newer SDKs); absent and null are equal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
}

#[derive(Deserialize)]
struct GetPayload {
    api_version: String,
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    disable_cache: bool,
    #[serde(default)]
    field_masks: Option<BTreeSet<String>>,
}

#[derive(Deserialize)]
struct ListNamespacePayload {
    api_version: String,
    kind: String,
    namespace: String,
    #[serde(default)]
    label_selector: Option<String>,
    #[serde(default)]
    field_selector: Option<String>,
    #[serde(default)]
    field_masks: Option<BTreeSet<String>>,
}

#[derive(Deserialize)]
struct ListAllPayload {
    api_version: String,
    kind: String,
    #[serde(default)]
    label_selector: Option<String>,
    #[serde(default)]
    field_selector: Option<String>,
    #[serde(default)]
    field_masks: Option<BTreeSet<String>>,
}

impl KubernetesRequest {
    /// Decodes the JSON payload of a `kubewarden/kubernetes/<operation>`
    /// host call. Returns `Ok(None)` for operations that are not reads.
    pub fn from_host_call(operation: &str, payload: &[u8]) -> Result<Option<Self>> {
        let origin = format!("payload of kubernetes/{operation}");
        let parsed = match operation {
            "get_resource" => {
                let p: GetPayload =
                    serde_json::from_slice(payload).map_err(|e| Error::parse(&origin, e))?;
                KubernetesRequest::KubernetesGetResource {
                    api_version: p.api_version,
                    kind: p.kind,
                    name: p.name,
                    namespace: p.namespace,
                    disable_cache: p.disable_cache,
                    field_masks: p.field_masks,
                }
            }
            "list_resources_by_namespace" => {
                let p: ListNamespacePayload =
                    serde_json::from_slice(payload).map_err(|e| Error::parse(&origin, e))?;
                KubernetesRequest::KubernetesListResourceNamespace {
                    api_version: p.api_version,
                    kind: p.kind,
                    namespace: p.namespace,
                    label_selector: p.label_selector,
                    field_selector: p.field_selector,
                    field_masks: p.field_masks,
                }
            }
            "list_resources_all" => {
                let p: ListAllPayload =
                    serde_json::from_slice(payload).map_err(|e| Error::parse(&origin, e))?;
                KubernetesRequest::KubernetesListResourceAll {
                    api_version: p.api_version,
                    kind: p.kind,
                    label_selector: p.label_selector,
                    field_selector: p.field_selector,
                    field_masks: p.field_masks,
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(parsed))
    }

    /// apiVersion of the requested resource.
    pub fn api_version(&self) -> &str {
        match self {
            KubernetesRequest::KubernetesGetResource { api_version, .. }
            | KubernetesRequest::KubernetesListResourceNamespace { api_version, .. }
            | KubernetesRequest::KubernetesListResourceAll { api_version, .. } => api_version,
        }
    }

    /// Kind of the requested resource.
    pub fn kind(&self) -> &str {
        match self {
            KubernetesRequest::KubernetesGetResource { kind, .. }
            | KubernetesRequest::KubernetesListResourceNamespace { kind, .. }
            | KubernetesRequest::KubernetesListResourceAll { kind, .. } => kind,
        }
    }

    /// The tagged YAML string kwctl stores in a session's `request:` field.
    pub fn to_session_string(&self) -> Result<String> {
        serde_yaml::to_string(self)
            .map_err(|e| Error::Invalid(format!("cannot serialize host request: {e}")))
    }

    /// Parses a session `request:` string.
    pub fn from_session_string(text: &str, origin: &str) -> Result<Self> {
        serde_yaml::from_str(text).map_err(|e| Error::parse(origin, e))
    }

    /// A one-line human description, e.g. `get v1/Namespace team-a`.
    pub fn summary(&self) -> String {
        match self {
            KubernetesRequest::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                ..
            } => match namespace {
                Some(ns) => format!("get {api_version}/{kind} {ns}/{name}"),
                None => format!("get {api_version}/{kind} {name}"),
            },
            KubernetesRequest::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                ..
            } => format!(
                "list {api_version}/{kind} in namespace {namespace}{}",
                selectors_summary(label_selector, field_selector)
            ),
            KubernetesRequest::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                ..
            } => format!(
                "list {api_version}/{kind} in all namespaces{}",
                selectors_summary(label_selector, field_selector)
            ),
        }
    }
}

fn selectors_summary(label: &Option<String>, field: &Option<String>) -> String {
    let mut out = String::new();
    if let Some(l) = label {
        out.push_str(&format!(" labels `{l}`"));
    }
    if let Some(f) = field {
        out.push_str(&format!(" fields `{f}`"));
    }
    out
}

/// Answers the Kubernetes reads of one evaluation.
///
/// The host enforces `contextAwareResources` before calling it, so an
/// implementation only sees allowed reads.
pub trait Callbacks {
    /// Answers one read: `Ok(reply JSON bytes)` or `Err(message)`, which the
    /// guest receives as a host-call error.
    fn kubernetes(&mut self, request: &KubernetesRequest) -> std::result::Result<Vec<u8>, String>;

    /// Fixture problems noticed so far (unexpected or out-of-order reads,
    /// exhausted session, reads without any cluster state). A case with
    /// problems fails even if the verdict matches.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }

    /// Fixture entries that were never used (e.g. replay exchanges left
    /// over at the end of the evaluation).
    fn unused(&self) -> Vec<String> {
        Vec::new()
    }

    /// Rewinds to the initial state, to run the same evaluation again.
    fn reset(&mut self) {}
}

/// Callbacks shared between the caller and the running instance.
///
/// A `Arc<Mutex<ReplaySession>>` (or any other implementation) coerces to
/// it, so the caller keeps a typed handle to inspect it afterwards.
pub type SharedCallbacks = Arc<Mutex<dyn Callbacks + Send>>;

/// Wraps callbacks for [`Host::validate`](crate::Host::validate).
///
/// ```
/// use policy_host::Callbacks;
/// let shared = policy_host::shared(policy_host::NoCluster::default());
/// assert!(shared.lock().unwrap().problems().is_empty());
/// ```
pub fn shared<C: Callbacks + Send + 'static>(callbacks: C) -> Arc<Mutex<C>> {
    Arc::new(Mutex::new(callbacks))
}

/// Shared callbacks answer like the ones they share (so that a [`Recorder`](crate::replay::Recorder) can wrap them).
impl Callbacks for SharedCallbacks {
    fn kubernetes(&mut self, request: &KubernetesRequest) -> std::result::Result<Vec<u8>, String> {
        self.lock()
            .map_err(|_| "testdrive: callbacks lock poisoned".to_owned())?
            .kubernetes(request)
    }

    fn problems(&self) -> Vec<String> {
        self.lock().map(|c| c.problems()).unwrap_or_default()
    }

    fn unused(&self) -> Vec<String> {
        self.lock().map(|c| c.unused()).unwrap_or_default()
    }

    fn reset(&mut self) {
        if let Ok(mut c) = self.lock() {
            c.reset();
        }
    }
}

/// No cluster state at all: every read fails, and is reported as a problem.
#[derive(Debug, Default, Clone)]
pub struct NoCluster {
    asked: Vec<String>,
}

impl Callbacks for NoCluster {
    fn kubernetes(&mut self, request: &KubernetesRequest) -> std::result::Result<Vec<u8>, String> {
        self.asked.push(request.summary());
        Err(
            "testdrive: no cluster state was provided for this evaluation \
             (use a replay session or `cluster:` objects)"
                .to_owned(),
        )
    }

    fn problems(&self) -> Vec<String> {
        self.asked
            .iter()
            .map(|r| format!("the policy read the cluster ({r}) but no cluster state was given"))
            .collect()
    }

    fn reset(&mut self) {
        self.asked.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_sdk_payloads() {
        let get = KubernetesRequest::from_host_call(
            "get_resource",
            br#"{"api_version":"v1","kind":"Namespace","name":"a","namespace":null,"disable_cache":true,"field_masks":null}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            get,
            KubernetesRequest::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                name: "a".into(),
                namespace: None,
                disable_cache: true,
                field_masks: None
            }
        );
        let list = KubernetesRequest::from_host_call(
            "list_resources_by_namespace",
            br#"{"api_version":"v1","kind":"Pod","namespace":"ns","label_selector":"app=x","field_selector":null}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(list.kind(), "Pod");
        assert!(list.summary().contains("labels `app=x`"));
        let all = KubernetesRequest::from_host_call(
            "list_resources_all",
            br#"{"api_version":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","label_selector":null,"field_selector":null}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(all.api_version(), "rbac.authorization.k8s.io/v1");
        assert_eq!(
            KubernetesRequest::from_host_call("can_i", b"{}").unwrap(),
            None
        );
        assert!(KubernetesRequest::from_host_call("get_resource", b"{}").is_err());
    }

    #[test]
    fn session_string_round_trip() {
        let r = KubernetesRequest::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            label_selector: Some("env in (prod)".into()),
            field_selector: None,
            field_masks: None,
        };
        let text = r.to_session_string().unwrap();
        assert!(text.starts_with("!KubernetesListResourceAll\n"));
        assert!(text.contains("field_selector: null"));
        assert_eq!(
            KubernetesRequest::from_session_string(&text, "t").unwrap(),
            r
        );
    }

    #[test]
    fn no_cluster_reports_reads() {
        let mut nc = NoCluster::default();
        let r = KubernetesRequest::from_host_call(
            "get_resource",
            br#"{"api_version":"v1","kind":"Namespace","name":"a","namespace":null,"disable_cache":false}"#,
        )
        .unwrap()
        .unwrap();
        assert!(nc.kubernetes(&r).is_err());
        assert_eq!(nc.problems().len(), 1);
        nc.reset();
        assert!(nc.problems().is_empty());
    }
}
