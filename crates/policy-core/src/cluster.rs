//! Cluster lookups behind a trait (SPEC 2.8): the real host callbacks inside wasm, an
//! in-memory object set in native tests, and a per-request cache with the
//! `onLookupError` policy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::PolicyError;

/// A `get_resource` lookup (wire format of the Kubewarden host).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GetRequest {
    /// `v1`, `scheduling.k8s.io/v1`, ...
    pub api_version: String,
    /// Kind, singular PascalCase.
    pub kind: String,
    /// Object name.
    pub name: String,
    /// Namespace; `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
    /// Bypass the host's short-lived cache.
    pub disable_cache: bool,
}

impl GetRequest {
    /// A cached lookup of a cluster-scoped object.
    pub fn cluster_scoped(api_version: &str, kind: &str, name: &str) -> Self {
        GetRequest {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            namespace: None,
            disable_cache: false,
        }
    }

    /// A cached lookup of a namespaced object.
    pub fn namespaced(api_version: &str, kind: &str, namespace: &str, name: &str) -> Self {
        GetRequest {
            namespace: Some(namespace.to_owned()),
            ..Self::cluster_scoped(api_version, kind, name)
        }
    }

    /// How messages name the object: `Namespace "team-a"`.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} \"{}/{}\"", self.kind, ns, self.name),
            None => format!("{} {:?}", self.kind, self.name),
        }
    }
}

/// A list lookup: `list_resources_by_namespace` when `namespace` is set, else
/// `list_resources_all`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ListRequest {
    /// API version.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, or `None` for every namespace / cluster-scoped kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Kubernetes label selector string.
    pub label_selector: Option<String>,
    /// Kubernetes field selector string.
    pub field_selector: Option<String>,
}

impl ListRequest {
    /// How messages name the list: `Ingress list in "team-a"`.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} list in {:?}", self.kind, ns),
            None => format!("{} list", self.kind),
        }
    }
}

/// Why a lookup failed (the host's error text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupFailure(pub String);

/// Answers cluster lookups.
pub trait Cluster {
    /// Fetches one object; `Ok(None)` when it does not exist.
    fn get(&mut self, request: &GetRequest) -> Result<Option<Value>, LookupFailure>;
    /// Lists objects.
    fn list(&mut self, request: &ListRequest) -> Result<Vec<Value>, LookupFailure>;
}

/// Whether a host error means "the object does not exist" (the Kubernetes API's 404).
pub fn is_not_found(message: &str) -> bool {
    message.contains("NotFound") || message.contains("not found")
}

/// What to do when a lookup fails (SPEC 2.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnLookupError {
    /// Reject the request (500).
    #[default]
    Reject,
    /// Skip the rule needing the lookup, with a warning.
    Accept,
}

/// The lookups of one request: each object fetched at most once, failures mapped to
/// [`PolicyError::Lookup`].
pub struct Lookups<'c> {
    cluster: &'c mut dyn Cluster,
    gets: BTreeMap<(String, String, Option<String>, String), Option<Value>>,
    lists: Vec<(ListRequest, Vec<Value>)>,
}

impl<'c> Lookups<'c> {
    /// Wraps a cluster for one request.
    pub fn new(cluster: &'c mut dyn Cluster) -> Self {
        Lookups {
            cluster,
            gets: BTreeMap::new(),
            lists: Vec::new(),
        }
    }

    /// Fetches one object (once per request); `Ok(None)` when it does not exist.
    pub fn get(&mut self, request: &GetRequest) -> Result<Option<&Value>, PolicyError> {
        let key = (
            request.api_version.clone(),
            request.kind.clone(),
            request.namespace.clone(),
            request.name.clone(),
        );
        if !self.gets.contains_key(&key) {
            let found = self.cluster.get(request).map_err(|e| PolicyError::Lookup {
                what: request.describe(),
                reason: e.0,
            })?;
            self.gets.insert(key.clone(), found);
        }
        Ok(self.gets.get(&key).and_then(Option::as_ref))
    }

    /// Lists objects (once per request and identical request).
    pub fn list(&mut self, request: &ListRequest) -> Result<&[Value], PolicyError> {
        let pos = match self.lists.iter().position(|(r, _)| r == request) {
            Some(p) => p,
            None => {
                let items = self
                    .cluster
                    .list(request)
                    .map_err(|e| PolicyError::Lookup {
                        what: request.describe(),
                        reason: e.0,
                    })?;
                self.lists.push((request.clone(), items));
                self.lists.len() - 1
            }
        };
        Ok(self
            .lists
            .get(pos)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[]))
    }
}

/// The Kubewarden host's cluster callbacks (inside wasm only).
#[derive(Debug, Default)]
pub struct HostCluster;

#[cfg(target_arch = "wasm32")]
impl Cluster for HostCluster {
    fn get(&mut self, request: &GetRequest) -> Result<Option<Value>, LookupFailure> {
        let msg = serde_json::to_vec(request).map_err(|e| LookupFailure(e.to_string()))?;
        match wapc_guest::host_call("kubewarden", "kubernetes", "get_resource", &msg) {
            Ok(raw) => serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|e| LookupFailure(format!("undecodable answer: {e}"))),
            Err(e) => {
                let text = e.to_string();
                if is_not_found(&text) {
                    Ok(None)
                } else {
                    Err(LookupFailure(text))
                }
            }
        }
    }

    fn list(&mut self, request: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
        let msg = serde_json::to_vec(request).map_err(|e| LookupFailure(e.to_string()))?;
        let op = if request.namespace.is_some() {
            "list_resources_by_namespace"
        } else {
            "list_resources_all"
        };
        let raw = wapc_guest::host_call("kubewarden", "kubernetes", op, &msg)
            .map_err(|e| LookupFailure(e.to_string()))?;
        let list: Value = serde_json::from_slice(&raw)
            .map_err(|e| LookupFailure(format!("undecodable answer: {e}")))?;
        match list.get("items") {
            Some(Value::Array(items)) => Ok(items.clone()),
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(_) => Err(LookupFailure(
                "undecodable answer: items is not a list".into(),
            )),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Cluster for HostCluster {
    fn get(&mut self, request: &GetRequest) -> Result<Option<Value>, LookupFailure> {
        Err(LookupFailure(format!(
            "no Kubewarden host outside wasm to read {}",
            request.describe()
        )))
    }

    fn list(&mut self, request: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
        Err(LookupFailure(format!(
            "no Kubewarden host outside wasm to read {}",
            request.describe()
        )))
    }
}

/// An in-memory cluster for native tests: a set of objects, plus optional forced failures.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    objects: Vec<Value>,
    failing_kinds: Vec<String>,
}

impl Objects {
    /// A cluster holding `objects`.
    pub fn new(objects: Vec<Value>) -> Self {
        Objects {
            objects,
            failing_kinds: Vec::new(),
        }
    }

    /// Makes every lookup of `kind` fail.
    pub fn failing(mut self, kind: &str) -> Self {
        self.failing_kinds.push(kind.to_owned());
        self
    }

    fn field<'a>(o: &'a Value, a: &str, b: &str) -> Option<&'a str> {
        o.get(a).and_then(|m| m.get(b)).and_then(Value::as_str)
    }

    fn same_kind(o: &Value, api_version: &str, kind: &str) -> bool {
        o.get("apiVersion").and_then(Value::as_str) == Some(api_version)
            && o.get("kind").and_then(Value::as_str) == Some(kind)
    }
}

impl Cluster for Objects {
    fn get(&mut self, r: &GetRequest) -> Result<Option<Value>, LookupFailure> {
        if self.failing_kinds.contains(&r.kind) {
            return Err(LookupFailure("connection refused".into()));
        }
        Ok(self
            .objects
            .iter()
            .find(|o| {
                Self::same_kind(o, &r.api_version, &r.kind)
                    && Self::field(o, "metadata", "name") == Some(r.name.as_str())
                    && Self::field(o, "metadata", "namespace") == r.namespace.as_deref()
            })
            .cloned())
    }

    fn list(&mut self, r: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
        if self.failing_kinds.contains(&r.kind) {
            return Err(LookupFailure("connection refused".into()));
        }
        Ok(self
            .objects
            .iter()
            .filter(|o| {
                Self::same_kind(o, &r.api_version, &r.kind)
                    && r.namespace
                        .as_deref()
                        .is_none_or(|ns| Self::field(o, "metadata", "namespace") == Some(ns))
                    && r.label_selector
                        .as_deref()
                        .is_none_or(|s| label_query_matches(s, o))
                    && r.field_selector
                        .as_deref()
                        .is_none_or(|s| field_query_matches(s, o))
            })
            .cloned()
            .collect())
    }
}

/// Evaluates a Kubernetes label-selector string (`a=b,c!=d,e in (x,y),f notin (z),g,!h`)
/// against an object's labels. Unparseable terms match nothing.
pub fn label_query_matches(query: &str, object: &Value) -> bool {
    let labels = object.get("metadata").and_then(|m| m.get("labels"));
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    split_terms(query).iter().all(|term| {
        let term = term.trim();
        if term.is_empty() {
            return true;
        }
        if let Some((k, rest)) = term.split_once(" notin ") {
            let vals = set_values(rest);
            return label(k.trim()).is_none_or(|v| !vals.contains(&v));
        }
        if let Some((k, rest)) = term.split_once(" in ") {
            let vals = set_values(rest);
            return label(k.trim()).is_some_and(|v| vals.contains(&v));
        }
        if let Some((k, v)) = term.split_once("!=") {
            return label(k.trim()) != Some(v.trim());
        }
        if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            return label(k.trim()) == Some(v.trim());
        }
        if let Some(k) = term.strip_prefix('!') {
            return label(k.trim()).is_none();
        }
        label(term).is_some()
    })
}

fn set_values(rest: &str) -> Vec<&str> {
    rest.trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .collect()
}

fn split_terms(query: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in query.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&query[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&query[start..]);
    out
}

/// Evaluates a field-selector string (`metadata.name=x,metadata.namespace!=y`).
pub fn field_query_matches(query: &str, object: &Value) -> bool {
    query.split(',').all(|term| {
        let (path, want, negate) = match term.split_once("!=") {
            Some((p, v)) => (p, v, true),
            None => match term.split_once("==").or_else(|| term.split_once('=')) {
                Some((p, v)) => (p, v, false),
                None => return false,
            },
        };
        let mut cur = Some(object);
        for seg in path.trim().split('.') {
            cur = cur.and_then(|c| c.get(seg));
        }
        let found = cur.and_then(Value::as_str);
        (found == Some(want.trim())) != negate
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ns(name: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    }

    #[test]
    fn objects_answer_gets_and_lists() {
        let mut c = Objects::new(vec![ns("a", json!({"env": "prod"})), ns("b", json!({}))]);
        let got = c
            .get(&GetRequest::cluster_scoped("v1", "Namespace", "a"))
            .unwrap();
        assert!(got.is_some());
        assert!(
            c.get(&GetRequest::cluster_scoped("v1", "Namespace", "z"))
                .unwrap()
                .is_none()
        );
        let listed = c
            .list(&ListRequest {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                namespace: None,
                label_selector: Some("env in (prod,dev)".into()),
                field_selector: None,
            })
            .unwrap();
        assert_eq!(listed.len(), 1);
    }

    #[test]
    fn lookups_cache_and_report_failures() {
        let mut c = Objects::new(vec![ns("a", json!({}))]).failing("PriorityClass");
        let mut l = Lookups::new(&mut c);
        assert!(
            l.get(&GetRequest::cluster_scoped("v1", "Namespace", "a"))
                .unwrap()
                .is_some()
        );
        let err = l
            .get(&GetRequest::cluster_scoped(
                "scheduling.k8s.io/v1",
                "PriorityClass",
                "x",
            ))
            .unwrap_err();
        assert_eq!(err.code(), 500);
        assert_eq!(
            err.to_string(),
            "cannot read PriorityClass \"x\": connection refused"
        );
    }

    #[test]
    fn label_queries() {
        let o = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        assert!(label_query_matches("a=1,b", &o));
        assert!(label_query_matches("a in (1,3),c notin (x),!c", &o));
        assert!(!label_query_matches("a!=1", &o));
        assert!(!label_query_matches("c", &o));
        assert!(field_query_matches("metadata.labels.a=1", &o));
        assert!(field_query_matches("metadata.name!=x", &o));
    }

    #[test]
    fn not_found_detection() {
        assert!(is_not_found("namespaces \"x\" not found: NotFound (404)"));
        assert!(!is_not_found("connection refused"));
    }
}
