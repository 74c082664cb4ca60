//! Cluster lookups behind a trait (`docs/semantics.md#lookups`): the real host callbacks inside wasm, an
//! in-memory object set in native tests, and a per-request cache with the
//! `onLookupError` policy.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use kube_values::selector::LabelSelector;
use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;
use policy_decode::strict::{AnswerRules, Strict};

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
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
    /// Field masks: dot-separated paths (`spec.rules.host`) of the parts of each object's
    /// body the policy reads; the host keeps only these (and the whole `metadata`) in its
    /// watch cache and in its answers. `None` keeps every field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
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

/// Why a lookup failed: the first line of the host's error text, without the guest
/// library's and the host's prefixes (see [`host_error_text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupFailure(pub String);

/// Answers cluster lookups.
pub trait Cluster {
    /// Fetches one object; `Ok(None)` when it does not exist.
    fn get(&mut self, request: &GetRequest) -> Result<Option<Value>, LookupFailure>;
    /// Lists objects.
    fn list(&mut self, request: &ListRequest) -> Result<Vec<Value>, LookupFailure>;

    /// Lists objects as the host's JSON answer (`{"items": [...]}`), for a caller that
    /// decodes only the fields it reads ([`Lookups::list_of`]).
    fn list_json(&mut self, request: &ListRequest) -> Result<Vec<u8>, LookupFailure> {
        let items = self.list(request)?;
        serde_json::to_vec(&serde_json::json!({ "items": items }))
            .map_err(|e| LookupFailure(e.to_string()))
    }
}

/// The error text with which the Kubewarden host (policy-evaluator) answers a `get_resource`
/// of an object that does not exist: `Cannot find <apiVersion>/<kind> named '<name>' inside
/// of namespace '<namespace>'`, the namespace written as Rust debug of an optional string
/// (`None`, or `Some("team-a")`). There is no structured 404: this text is the host's
/// only "does not exist", and kwctl records it verbatim into replay sessions.
///
/// ```
/// use policy_admission::cluster::{GetRequest, not_found_text};
/// assert_eq!(not_found_text(&GetRequest::cluster_scoped("v1", "Namespace", "team-a")),
///     "Cannot find v1/Namespace named 'team-a' inside of namespace 'None'");
/// ```
pub fn not_found_text(request: &GetRequest) -> String {
    format!(
        "Cannot find {}/{} named '{}' inside of namespace '{:?}'",
        request.api_version,
        request.kind,
        request.name,
        request.namespace.as_deref()
    )
}

/// The meaningful first line of a host-call error as the guest receives it: the waPC guest
/// prefix `Host error: ` and policy-evaluator's `Callback evaluation failure: ` are dropped,
/// and so is everything after the first line (kwctl appends a stack backtrace).
///
/// ```
/// use policy_admission::cluster::host_error_text;
/// assert_eq!(host_error_text("Host error: Callback evaluation failure: timeout\n\nStack backtrace:\n  0: x"),
///     "timeout");
/// ```
pub fn host_error_text(error: &str) -> &str {
    let text = error.strip_prefix("Host error: ").unwrap_or(error);
    let text = text
        .strip_prefix("Callback evaluation failure: ")
        .unwrap_or(text);
    text.lines().next().unwrap_or("").trim_end()
}

/// Whether a host-call error answering `request` is exactly the host's "does not exist" for
/// that object ([`not_found_text`]: apiVersion, kind, name and namespace must all match).
/// Every other error, whatever its words, is a lookup failure.
pub fn is_not_found(request: &GetRequest, error: &str) -> bool {
    host_error_text(error) == not_found_text(request)
}

/// Checks that a `get_resource` answer is the object asked for: a JSON object of the
/// requested apiVersion and kind whose `metadata`, when present, is an object.
fn check_object(request: &GetRequest, answer: &Value) -> Result<(), LookupFailure> {
    let Some(object) = answer.as_object() else {
        return Err(LookupFailure(format!(
            "unexpected answer: expected a {} object, got {}",
            request.kind,
            json_type(answer)
        )));
    };
    let field = |name: &str| object.get(name).and_then(Value::as_str);
    if field("kind") != Some(request.kind.as_str())
        || field("apiVersion") != Some(request.api_version.as_str())
    {
        return Err(LookupFailure(format!(
            "unexpected answer: expected {}/{}, got {}/{}",
            request.api_version,
            request.kind,
            field("apiVersion").unwrap_or("?"),
            field("kind").unwrap_or("?")
        )));
    }
    match object.get("metadata") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(other) => Err(LookupFailure(format!(
            "unexpected answer: metadata is {}",
            json_type(other)
        ))),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// An object a `get_resource` lookup returned, read only through strict accessors
/// (`docs/semantics.md#lookups`): a field a rule reads that has the wrong JSON shape is a
/// failed lookup naming the object and the field (500, or the warning of
/// `onLookupError: accept`), never an absent value. Absent and `null` fields are absent.
///
/// Cloning a `Found` shares the object: a rule may keep the answer for each of many fields
/// naming the same object without copying it.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    object: Arc<Value>,
    what: Arc<str>,
}

impl Found {
    /// The answer `object` to the lookup `what` ([`GetRequest::describe`]).
    pub fn new(object: Value, what: String) -> Self {
        Found {
            object: Arc::new(object),
            what: what.into(),
        }
    }

    /// Reads the object through `read`, given the object's root; a malformed field
    /// ([`PolicyError::Malformed`], as every [`At`] accessor reports it) becomes a failed
    /// lookup, `cannot read <object>: unexpected answer: <path>: <problem>`.
    ///
    /// ```
    /// use policy_admission::cluster::Found;
    /// use serde_json::json;
    /// let class = Found::new(json!({"value": "high"}), "PriorityClass \"gold\"".into());
    /// let err = class.read(|at| at.get_i64("value")).unwrap_err();
    /// assert_eq!(err.code(), 500);
    /// assert_eq!(err.to_string(), "cannot read PriorityClass \"gold\": unexpected answer: value: expected an integer");
    /// ```
    pub fn read<'a, T>(
        &'a self,
        read: impl FnOnce(At<'a>) -> Result<T, PolicyError>,
    ) -> Result<T, PolicyError> {
        read(At::new(&self.object, FieldPath::empty())).map_err(|e| self.unexpected(e))
    }

    /// The failed lookup for a malformed field; any other error is kept.
    fn unexpected(&self, error: PolicyError) -> PolicyError {
        match error {
            PolicyError::Malformed { path, problem } => PolicyError::Lookup {
                what: self.what.to_string(),
                reason: format!("unexpected answer: {path}: {problem}"),
            },
            other => other,
        }
    }

    /// `metadata.<map>` (`labels`, `annotations`) as a map of strings; `None` when absent.
    fn string_map(&self, map: &str) -> Result<Option<&Map<String, Value>>, PolicyError> {
        self.read(|at| at.get_metadata_map(map))
    }

    /// `metadata.labels`, every value a string; `None` when absent.
    pub fn labels(&self) -> Result<Option<&Map<String, Value>>, PolicyError> {
        self.string_map("labels")
    }

    /// Label `key` (`metadata.labels` must be a map of strings).
    pub fn label(&self, key: &str) -> Result<Option<&str>, PolicyError> {
        Ok(self
            .labels()?
            .and_then(|l| l.get(key))
            .and_then(Value::as_str))
    }

    /// `metadata.annotations`, every value a string; `None` when absent.
    pub fn annotations(&self) -> Result<Option<&Map<String, Value>>, PolicyError> {
        self.string_map("annotations")
    }

    /// Annotation `key` (`metadata.annotations` must be a map of strings).
    pub fn annotation(&self, key: &str) -> Result<Option<&str>, PolicyError> {
        Ok(self
            .annotations()?
            .and_then(|a| a.get(key))
            .and_then(Value::as_str))
    }

    /// Whether the object's labels satisfy `selector` (`docs/semantics.md#selectors`).
    pub fn selected_by(&self, selector: &LabelSelector) -> Result<bool, PolicyError> {
        let labels = self.labels()?;
        Ok(selector.matches(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str)))
    }
}

/// What to do when a lookup fails (`docs/semantics.md#lookups`).
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
    /// Answers by [`get_key`].
    gets: BTreeMap<String, Option<Found>>,
    /// The key of the lookup being made, written into one buffer for every call.
    key: String,
}

/// Writes the cache key of `request` into `key`: each part with its length before it, so
/// that no two lookups share a key whatever their names hold.
fn get_key(key: &mut String, request: &GetRequest) {
    key.clear();
    let parts = [
        Some(request.api_version.as_str()),
        Some(request.kind.as_str()),
        request.namespace.as_deref(),
        Some(request.name.as_str()),
    ];
    for part in parts {
        match part {
            Some(part) => {
                policy_decode::path::push_decimal(key, part.len());
                key.push(':');
                key.push_str(part);
            }
            None => key.push('-'),
        }
    }
}

impl<'c> Lookups<'c> {
    /// Wraps a cluster for one request.
    pub fn new(cluster: &'c mut dyn Cluster) -> Self {
        Lookups {
            cluster,
            gets: BTreeMap::new(),
            key: String::new(),
        }
    }

    /// Fetches one object (once per request); `Ok(None)` when it does not exist. Its fields
    /// are read through [`Found`]'s strict accessors.
    pub fn get(&mut self, request: &GetRequest) -> Result<Option<&Found>, PolicyError> {
        get_key(&mut self.key, request);
        if !self.gets.contains_key(self.key.as_str()) {
            let failed = |e: LookupFailure| PolicyError::Lookup {
                what: request.describe(),
                reason: e.0,
            };
            let found = self.cluster.get(request).map_err(failed)?;
            if let Some(object) = &found {
                check_object(request, object).map_err(failed)?;
            }
            let found = found.map(|object| Found::new(object, request.describe()));
            self.gets.insert(self.key.clone(), found);
        }
        Ok(self.gets.get(self.key.as_str()).and_then(Option::as_ref))
    }

    /// Fetches one object and reads it with `read` (`None` when it does not exist): a failed
    /// lookup and an answer of the wrong shape are one error, for one `onLookupError`
    /// decision.
    pub fn read<'s, T>(
        &'s mut self,
        request: &GetRequest,
        read: impl FnOnce(&'s Found) -> Result<T, PolicyError>,
    ) -> Result<Option<T>, PolicyError> {
        self.get(request)?.map(read).transpose()
    }

    /// Lists objects decoded straight into `T`, which names only the fields the caller reads:
    /// the rest of each object is skipped unparsed, several times faster than building JSON
    /// values of every object (`docs/semantics.md#cost`). Not cached: the caller reads each
    /// such list once per request. An answer that does not decode is a failed lookup naming
    /// the item and field (`unexpected answer: items[3].metadata.name: …`).
    pub fn list_of<T: DeserializeOwned>(
        &mut self,
        request: &ListRequest,
    ) -> Result<Vec<T>, PolicyError> {
        let failed = |reason: String| PolicyError::Lookup {
            what: request.describe(),
            reason,
        };
        let answer = self.cluster.list_json(request).map_err(|e| failed(e.0))?;
        let mut decoder = serde_json::Deserializer::from_slice(&answer);
        let strict = Strict(&mut decoder, AnswerRules);
        let list: TypedList<T> = serde_path_to_error::deserialize(strict).map_err(|e| {
            failed(format!(
                "unexpected answer: {}: {}",
                e.path(),
                without_position(e.inner())
            ))
        })?;
        Ok(list.items.unwrap_or_default())
    }
}

/// A decoding error's text without serde_json's ` at line 1 column 87` (the answer is one
/// line, and the field path already says where).
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(i) if error.line() > 0 => text.get(..i).unwrap_or(&text).to_owned(),
        _ => text,
    }
}

/// A list answer decoded into `T` items (absent or `null` items are none).
#[derive(Deserialize)]
struct TypedList<T> {
    items: Option<Vec<T>>,
}

/// The items of a list answer (`{"kind": "<Kind>List", "items": [...]}`): a non-object
/// answer or `items` that are not a list is a failure; absent or `null` items are empty.
pub fn list_items(answer: Value) -> Result<Vec<Value>, LookupFailure> {
    let Value::Object(mut list) = answer else {
        return Err(LookupFailure(format!(
            "unexpected answer: expected a list object, got {}",
            json_type(&answer)
        )));
    };
    match list.remove("items") {
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(other) => Err(LookupFailure(format!(
            "unexpected answer: items is {}",
            json_type(&other)
        ))),
    }
}

/// The Kubernetes host calls a policy makes: its `metadata.yml` `hostCapabilities`
/// (README "Packaging"). Inside wasm, `guest::HostCluster` compiles in only the calls
/// declared here, so that `kwctl annotate` detects exactly these in the module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCapabilities {
    /// `kubernetes/get_resource`: one object by name.
    pub get_resource: bool,
    /// `kubernetes/list_resources_by_namespace`: the objects of one namespace.
    pub list_resources_by_namespace: bool,
    /// `kubernetes/list_resources_all`: the objects of every namespace.
    pub list_resources_all: bool,
}

impl HostCapabilities {
    /// No host call: the policy never reads the cluster.
    pub const NONE: HostCapabilities = HostCapabilities {
        get_resource: false,
        list_resources_by_namespace: false,
        list_resources_all: false,
    };

    /// Only `kubernetes/get_resource`.
    pub const GET_RESOURCE: HostCapabilities = HostCapabilities {
        get_resource: true,
        ..HostCapabilities::NONE
    };

    /// Only `kubernetes/list_resources_all` (e.g. the ClusterRoleBindings of `exemptPrincipals`).
    pub const LIST_ALL: HostCapabilities = HostCapabilities {
        list_resources_all: true,
        ..HostCapabilities::NONE
    };

    /// `kubernetes/get_resource` and `kubernetes/list_resources_all`.
    pub const GET_AND_LIST_ALL: HostCapabilities = HostCapabilities {
        get_resource: true,
        list_resources_all: true,
        ..HostCapabilities::NONE
    };

    /// `kubernetes/get_resource` and both list calls, `list_resources_by_namespace` and
    /// `list_resources_all`.
    pub const GET_AND_LIST: HostCapabilities = HostCapabilities {
        get_resource: true,
        list_resources_by_namespace: true,
        list_resources_all: true,
    };
}

/// An object as the Kubewarden host hands it to a guest: without `metadata.managedFields`
/// and the `kubectl.kubernetes.io/last-applied-configuration` annotation, which the host
/// never keeps; with `masks`, every field outside `apiVersion`, `kind` and `metadata` that no
/// mask path names is dropped (a list applies its mask to each item; a path ending on a field
/// keeps all of it; no masks, or an empty list, keeps everything).
///
/// ```
/// use policy_admission::cluster::host_view;
/// use serde_json::json;
/// let mut ingress = json!({"kind": "Ingress", "metadata": {"name": "web", "managedFields": []},
///     "spec": {"ingressClassName": "a", "rules": [{"host": "x", "http": {"paths": [{"path": "/", "pathType": "Prefix"}]}}]},
///     "status": {}});
/// host_view(&mut ingress, Some(&["spec.rules.host".into(), "spec.rules.http.paths.path".into()]));
/// assert_eq!(ingress, json!({"kind": "Ingress", "metadata": {"name": "web"},
///     "spec": {"rules": [{"host": "x", "http": {"paths": [{"path": "/"}]}}]}}));
/// ```
pub fn host_view(object: &mut Value, masks: Option<&[String]>) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    let Some(masks) = masks.filter(|m| !m.is_empty()) else {
        return;
    };
    let paths: Vec<Vec<&str>> = masks.iter().map(|m| m.split('.').collect()).collect();
    let paths: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
    if let Some(map) = object.as_object_mut() {
        map.retain(|key, value| {
            matches!(key.as_str(), "apiVersion" | "kind" | "metadata")
                || prune_under(key, value, &paths)
        });
    }
}

/// Keeps `value` (the field `key`) when a mask path starts with `key`, pruned to the paths'
/// rests; whether it is kept.
fn prune_under(key: &str, value: &mut Value, paths: &[&[&str]]) -> bool {
    let rests: Vec<&[&str]> = paths
        .iter()
        .filter_map(|p| p.split_first())
        .filter(|(head, _)| **head == key)
        .map(|(_, rest)| rest)
        .collect();
    if rests.is_empty() {
        return false;
    }
    if !rests.iter().any(|r| r.is_empty()) {
        prune(value, &rests);
    }
    true
}

/// Prunes an object (or each item of a list) to the mask paths.
fn prune(value: &mut Value, paths: &[&[&str]]) {
    match value {
        Value::Object(map) => map.retain(|key, value| prune_under(key, value, paths)),
        Value::Array(items) => items.iter_mut().for_each(|item| prune(item, paths)),
        _ => {}
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
            .map(|o| {
                let mut o = o.clone();
                host_view(&mut o, None);
                o
            }))
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
            .map(|o| {
                let mut o = o.clone();
                host_view(&mut o, r.field_masks.as_deref());
                o
            })
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
                field_masks: None,
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
    fn not_found_is_exactly_the_hosts_answer_for_the_object_asked() {
        let ns = GetRequest::cluster_scoped("v1", "Namespace", "x");
        let host = "Host error: Callback evaluation failure: Cannot find v1/Namespace named 'x' inside of namespace 'None'\n\nStack backtrace:\n   0: anyhow::error";
        assert!(is_not_found(&ns, host));
        assert!(is_not_found(&ns, &not_found_text(&ns)));
        let pv = GetRequest::namespaced("v1", "PersistentVolumeClaim", "team-a", "data");
        assert_eq!(
            not_found_text(&pv),
            "Cannot find v1/PersistentVolumeClaim named 'data' inside of namespace 'Some(\"team-a\")'"
        );
        assert!(is_not_found(&pv, &not_found_text(&pv)));
        // Any other text, whatever its words, is a failure.
        for other in [
            "upstream host not found",
            "namespaces \"x\" not found: NotFound (404)",
            "Host error: Callback evaluation failure: Cannot find v1/Namespace named 'y' inside of namespace 'None'",
            "Host error: Callback evaluation failure: Cannot find v1/Pod named 'x' inside of namespace 'None'",
            "Cannot find v1/Namespace named 'x' inside of namespace 'Some(\"x\")'",
            "Cannot find v1/Namespace named 'x' inside of namespace 'None' (proxy)",
            "Cannot find resource v1/Namespace",
            "",
        ] {
            assert!(!is_not_found(&ns, other), "{other}");
        }
    }

    #[test]
    fn host_errors_show_their_first_line_only() {
        assert_eq!(
            host_error_text(
                "Host error: Callback evaluation failure: boom\n\nStack backtrace:\n 0: x"
            ),
            "boom"
        );
        assert_eq!(host_error_text("plain"), "plain");
        assert_eq!(host_error_text(""), "");
    }

    #[test]
    fn answers_of_the_wrong_shape_are_failures() {
        let ns = GetRequest::cluster_scoped("v1", "Namespace", "a");
        for (answer, reason) in [
            (
                json!([{"kind": "Namespace"}]),
                "expected a Namespace object, got a list",
            ),
            (json!("text"), "expected a Namespace object, got a string"),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}),
                "expected v1/Namespace, got v1/Pod",
            ),
            (
                json!({"metadata": {"name": "a"}}),
                "expected v1/Namespace, got ?/?",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": []}),
                "metadata is a list",
            ),
        ] {
            struct Fixed(Value);
            impl Cluster for Fixed {
                fn get(&mut self, _: &GetRequest) -> Result<Option<Value>, LookupFailure> {
                    Ok(Some(self.0.clone()))
                }
                fn list(&mut self, _: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
                    Ok(vec![self.0.clone()])
                }
            }
            let mut c = Fixed(answer);
            let err = Lookups::new(&mut c).get(&ns).unwrap_err();
            assert_eq!(err.code(), 500);
            assert!(err.to_string().ends_with(reason), "{err}");
        }
        assert!(list_items(json!([])).is_err());
        assert!(list_items(json!({"items": {}})).is_err());
        assert_eq!(
            list_items(json!({"kind": "NamespaceList"})).unwrap(),
            Vec::<Value>::new()
        );
        let mut c = Objects::new(vec![]);
        struct BadList;
        impl Cluster for BadList {
            fn get(&mut self, _: &GetRequest) -> Result<Option<Value>, LookupFailure> {
                Ok(None)
            }
            fn list(&mut self, _: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
                Ok(vec![json!({}), json!(3)])
            }
        }
        let req = ListRequest {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        assert!(
            Lookups::new(&mut c)
                .list_of::<Value>(&req)
                .unwrap()
                .is_empty()
        );
        #[derive(Debug, Deserialize)]
        struct Item {}
        let err = Lookups::new(&mut BadList)
            .list_of::<Item>(&req)
            .unwrap_err();
        assert!(
            err.to_string().ends_with(
                "unexpected answer: items[1]: invalid type: integer `3`, expected struct Item"
            ),
            "{err}"
        );
    }

    #[test]
    fn found_objects_are_read_strictly() {
        let what = "Namespace \"a\"".to_owned();
        let ns = Found::new(
            json!({"metadata": {"labels": {"tenant": "solar"}, "annotations": {"k": "v"}}}),
            what.clone(),
        );
        assert_eq!(ns.label("tenant").unwrap(), Some("solar"));
        assert_eq!(ns.label("other").unwrap(), None);
        assert_eq!(ns.annotation("k").unwrap(), Some("v"));
        let raw = serde_json::from_value(json!({"matchLabels": {"tenant": "solar"}})).unwrap();
        let selector = LabelSelector::build(&raw).unwrap();
        assert!(ns.selected_by(&selector).unwrap());
        // absent and null are absent
        let bare = Found::new(json!({"metadata": {"labels": null}}), what.clone());
        assert_eq!(bare.labels().unwrap(), None);
        assert_eq!(bare.annotation("k").unwrap(), None);
        // a wrong shape is a failed lookup naming the field, whichever key is asked
        for (object, field) in [
            (
                json!({"metadata": {"labels": "tenant=solar"}}),
                "metadata.labels: expected an object",
            ),
            (
                json!({"metadata": {"labels": {"x": 1, "tenant": "solar"}}}),
                "metadata.labels[\"x\"]: expected a string",
            ),
            (json!({"metadata": "x"}), "metadata: expected an object"),
        ] {
            let err = Found::new(object, what.clone())
                .label("tenant")
                .unwrap_err();
            assert_eq!(err.code(), 500);
            assert_eq!(
                err.to_string(),
                format!("cannot read Namespace \"a\": unexpected answer: {field}")
            );
        }
        let err = Found::new(json!({"metadata": {"annotations": []}}), what).selected_by(&selector);
        assert!(err.is_ok(), "labels are read, not annotations");
    }

    #[test]
    fn read_joins_the_lookup_and_the_answer_into_one_error() {
        let ns = |labels: Value| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": labels}});
        let request = GetRequest::cluster_scoped("v1", "Namespace", "a");
        let label = |found: &Found| Ok(found.label("t")?.map(str::to_owned));
        let mut good = Objects::new(vec![ns(json!({"t": "x"}))]);
        assert_eq!(
            Lookups::new(&mut good).read(&request, label).unwrap(),
            Some(Some("x".to_owned()))
        );
        let mut none = Objects::default();
        assert_eq!(Lookups::new(&mut none).read(&request, label).unwrap(), None);
        let mut bad = Objects::new(vec![ns(json!(["t"]))]);
        let err = Lookups::new(&mut bad).read(&request, label).unwrap_err();
        assert!(matches!(err, PolicyError::Lookup { .. }), "{err}");
        let mut failing = Objects::default().failing("Namespace");
        let err = Lookups::new(&mut failing)
            .read(&request, label)
            .unwrap_err();
        assert_eq!(err.code(), 500);
    }

    #[test]
    fn host_view_keeps_masked_fields_and_all_metadata() {
        let masks = [
            "spec.rules.host".to_owned(),
            "spec.tls".to_owned(),
            "nope.x".to_owned(),
        ];
        let mut o = json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "a", "labels": {"x": "y"}, "managedFields": [{}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "k": "v"}},
            "spec": {"rules": [{"host": "h", "http": {}}, {"http": {}}, "text"], "tls": [{"hosts": ["h"], "secretName": "s"}], "other": 1},
            "status": {"x": 1}});
        host_view(&mut o, Some(&masks));
        assert_eq!(
            o,
            json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "a", "labels": {"x": "y"}, "annotations": {"k": "v"}},
            "spec": {"rules": [{"host": "h"}, {}, "text"], "tls": [{"hosts": ["h"], "secretName": "s"}]}})
        );
        let mut unmasked = json!({"metadata": {"managedFields": []}, "spec": {"a": 1}});
        host_view(&mut unmasked, Some(&[]));
        assert_eq!(unmasked, json!({"metadata": {}, "spec": {"a": 1}}));
    }

    #[test]
    fn typed_lists_decode_only_what_is_asked_and_name_bad_fields() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Named {
            metadata: Name,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Name {
            name: String,
        }
        let mut c = Objects::new(vec![ns("a", json!({"env": "prod"})), ns("b", json!({}))]);
        let req = ListRequest {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        let names: Vec<Named> = Lookups::new(&mut c).list_of(&req).unwrap();
        let names: Vec<&str> = names.iter().map(|n| n.metadata.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let mut bad = Objects::new(vec![
            ns("a", json!({})),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": 3}}),
        ]);
        let err = Lookups::new(&mut bad)
            .list_of::<Named>(&req)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unexpected answer: items[1].metadata.name: invalid type: integer `3`"),
            "{err}"
        );
        let err = Lookups::new(&mut Objects::new(vec![]).failing("Namespace"))
            .list_of::<Named>(&req)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("connection refused"), "{err}");
    }
}
