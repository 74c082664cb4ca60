//! Proptest strategies for the robustness properties: arbitrary Kubernetes-shaped JSON,
//! random edits of representative documents, admission requests and settings.
//!
//! Purely random JSON rarely reaches the fields a policy reads, so most generated documents
//! are a valid-looking example (the policy's settings, a rich Pod, a policy's own objects)
//! with a few random [`Edit`]s: a subtree replaced by arbitrary JSON, removed, or given an
//! extra key.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

use super::Robustness;
use crate::pod::PodKind;

/// Object keys of pod-bearing resources, for [`arb_json`].
pub const POD_KEYS: &[&str] = &[
    "spec",
    "template",
    "jobTemplate",
    "metadata",
    "labels",
    "annotations",
    "namespace",
    "ownerReferences",
    "controller",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "securityContext",
    "tolerations",
    "key",
    "operator",
    "value",
    "effect",
    "privileged",
    "runAsUser",
    "capabilities",
    "drop",
    "image",
    "imagePullPolicy",
    "volumes",
    "volumeMounts",
    "hostPath",
    "path",
    "name",
    "seccompProfile",
    "type",
];

/// Values that often sit on edges of parsers and matchers.
const EDGE_STRINGS: &[&str] = &[
    "",
    "*",
    ".*",
    "(",
    "a)|(b",
    "accept",
    "reject",
    "warn",
    "enforce",
    "Always",
    "true",
    "0",
    "-1",
    "1e3",
    "100m",
    "1Ki",
    "system:serviceaccount:kube-system:replicaset-controller",
];

fn owned(words: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    if out.is_empty() {
        out.push("x".to_owned());
    }
    out
}

fn arb_leaf(strings: Vec<String>) -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop_oneof![Just(0i64), Just(-1), Just(1), Just(65535), Just(65536)].prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-zA-Z0-9:/.@=*_-]{0,12}".prop_map(Value::String),
        proptest::sample::select(strings).prop_map(Value::String),
    ]
    .boxed()
}

/// Arbitrary JSON whose object keys are drawn mostly from `keys` and whose strings are
/// drawn partly from `strings`, with values of every JSON type.
pub fn arb_json(keys: &[&str], strings: &[&str]) -> BoxedStrategy<Value> {
    arb_json_owned(owned(keys), owned(strings))
}

fn arb_json_owned(keys: Vec<String>, strings: Vec<String>) -> BoxedStrategy<Value> {
    let key = prop_oneof![
        3 => proptest::sample::select(keys),
        1 => "[a-z]{1,6}",
    ];
    arb_leaf(strings)
        .prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(key.clone(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// What an [`Edit`] does at the node it reaches.
#[derive(Clone, Debug)]
pub enum Action {
    /// Replace the node by this value.
    Replace(Value),
    /// Remove the node from its object or list (a top-level node becomes `null`).
    Remove,
    /// Add this key to an object node, push the value to a list node, or replace a leaf.
    Insert(String, Value),
}

/// One random change of a document: walk down by `path`, then apply `action`. Each index
/// picks a child (stopping early at a leaf): among all children, or — half of the time,
/// when there are any — among the *focused* children, those whose key is a focus word or
/// whose subtree holds one, so that edits land near the fields the policy reads.
#[derive(Clone, Debug)]
pub struct Edit {
    /// Child choices, from the top.
    pub path: Vec<Index>,
    /// What to do there.
    pub action: Action,
}

fn apply_here(node: &mut Value, action: &Action) {
    match (action, node) {
        (Action::Replace(v), node) => *node = v.clone(),
        (Action::Remove, node) => *node = Value::Null,
        (Action::Insert(k, v), Value::Object(map)) => {
            map.insert(k.clone(), v.clone());
        }
        (Action::Insert(_, v), Value::Array(items)) => items.push(v.clone()),
        (Action::Insert(_, v), node) => *node = v.clone(),
    }
}

/// Whether `value` holds a key from `focus` anywhere below it.
fn holds_focus(value: &Value, focus: &BTreeSet<String>) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| focus.contains(k) || holds_focus(v, focus)),
        Value::Array(items) => items.iter().any(|v| holds_focus(v, focus)),
        _ => false,
    }
}

/// The child position `choice` picks among `len` children, of which `focused` are focused.
fn pick(choice: &Index, len: usize, focused: &[usize]) -> usize {
    let i = choice.index(2 * len);
    match focused.len() {
        0 => i % len,
        n if i >= len => focused.get((i - len) % n).copied().unwrap_or(0),
        _ => i,
    }
}

fn apply_edit(node: &mut Value, path: &[Index], action: &Action, focus: &BTreeSet<String>) {
    let Some((first, rest)) = path.split_first() else {
        apply_here(node, action);
        return;
    };
    match node {
        Value::Object(map) if !map.is_empty() => {
            let focused: Vec<usize> = map
                .iter()
                .enumerate()
                .filter(|(_, (k, v))| focus.contains(*k) || holds_focus(v, focus))
                .map(|(i, _)| i)
                .collect();
            let Some(key) = map.keys().nth(pick(first, map.len(), &focused)).cloned() else {
                return;
            };
            if rest.is_empty() && matches!(action, Action::Remove) {
                map.remove(&key);
            } else if let Some(child) = map.get_mut(&key) {
                apply_edit(child, rest, action, focus);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let focused: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, v)| holds_focus(v, focus))
                .map(|(i, _)| i)
                .collect();
            let i = pick(first, items.len(), &focused);
            if rest.is_empty() && matches!(action, Action::Remove) {
                if i < items.len() {
                    items.remove(i);
                }
            } else if let Some(child) = items.get_mut(i) {
                apply_edit(child, rest, action, focus);
            }
        }
        node => apply_here(node, action),
    }
}

/// `doc` with `edits` applied in order, walks biased towards the `focus` keys.
pub fn apply_edits(doc: &Value, edits: &[Edit], focus: &BTreeSet<String>) -> Value {
    let mut out = doc.clone();
    for e in edits {
        apply_edit(&mut out, &e.path, &e.action, focus);
    }
    out
}

fn arb_edits(keys: Vec<String>, strings: Vec<String>, max: usize) -> BoxedStrategy<Vec<Edit>> {
    let value = arb_json_owned(keys.clone(), strings.clone());
    let word = proptest::sample::select(strings).prop_map(Value::String);
    let action = prop_oneof![
        3 => word.prop_map(Action::Replace),
        2 => value.clone().prop_map(Action::Replace),
        2 => Just(Action::Remove),
        2 => (proptest::sample::select(keys), value).prop_map(|(k, v)| Action::Insert(k, v)),
    ];
    // Paths start below the top: replacing the whole document is arbitrary JSON's job.
    let edit = (prop::collection::vec(any::<Index>(), 1..12), action)
        .prop_map(|(path, action)| Edit { path, action });
    prop::collection::vec(edit, 0..=max).boxed()
}

/// One of `examples` with up to four random edits (arbitrary JSON when there is none).
fn arb_variant(
    examples: Vec<Value>,
    keys: Vec<String>,
    strings: Vec<String>,
    focus: BTreeSet<String>,
) -> BoxedStrategy<Value> {
    if examples.is_empty() {
        return arb_json_owned(keys, strings);
    }
    (
        proptest::sample::select(examples),
        arb_edits(keys, strings, 4),
    )
        .prop_map(move |(doc, edits)| apply_edits(&doc, &edits, &focus))
        .boxed()
}

/// Every object key and string value of `doc`.
fn vocabulary_of(doc: &Value, keys: &mut BTreeSet<String>, strings: &mut BTreeSet<String>) {
    match doc {
        Value::Object(map) => {
            for (k, v) in map {
                keys.insert(k.clone());
                vocabulary_of(v, keys, strings);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| vocabulary_of(v, keys, strings)),
        Value::String(s) => {
            strings.insert(s.clone());
        }
        _ => {}
    }
}

/// Keys and strings for documents like `docs`, plus the policy's domain words.
fn vocabulary(
    docs: &[&Value],
    base_keys: &[&str],
    config: &Robustness,
) -> (Vec<String>, Vec<String>) {
    let mut keys: BTreeSet<String> = base_keys.iter().map(|k| (*k).to_owned()).collect();
    let mut strings: BTreeSet<String> = EDGE_STRINGS.iter().map(|s| (*s).to_owned()).collect();
    for w in config.strings {
        keys.insert((*w).to_owned());
        strings.insert((*w).to_owned());
    }
    for d in docs {
        vocabulary_of(d, &mut keys, &mut strings);
    }
    (keys.into_iter().collect(), strings.into_iter().collect())
}

/// A Pod spec using most fields the pod policies read.
fn rich_pod_spec(with_ephemeral: bool) -> Value {
    let mut spec = json!({
        "serviceAccountName": "deployer",
        "nodeName": "node-1",
        "nodeSelector": {"pool": "renewable"},
        "priorityClassName": "gold",
        "priority": 0,
        "runtimeClassName": "kata",
        "hostNetwork": false, "hostPID": false, "hostIPC": false, "hostUsers": true,
        "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": true,
            "fsGroup": 1000, "supplementalGroups": [1000],
            "seccompProfile": {"type": "RuntimeDefault"}, "seLinuxOptions": {"type": "container_t"},
            "appArmorProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}]},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "tenantA", "effect": "NoSchedule"}],
        "initContainers": [{"name": "sidecar", "image": "busybox", "restartPolicy": "Always"}],
        "containers": [{"name": "app", "image": "docker.io/library/nginx:1.25", "imagePullPolicy": "Always",
            "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
            "securityContext": {"privileged": false, "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true, "runAsUser": 1000, "procMount": "Default",
                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}}],
        "volumes": [
            {"name": "data", "hostPath": {"path": "/data/project", "type": "Directory"}},
            {"name": "config", "configMap": {"name": "settings"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
                "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"]}}}},
            {"name": "tools", "image": {"reference": "quay.io/tools/kit:1"}}
        ],
        "overhead": {"cpu": "250m"}
    });
    if with_ephemeral && let Some(map) = spec.as_object_mut() {
        map.insert(
            "ephemeralContainers".to_owned(),
            json!([{"name": "debug", "image": "busybox", "targetContainerName": "app"}]),
        );
    }
    spec
}

/// Valid-looking objects of a pod-bearing kind, their pod at the kind's template path: a
/// rich one and a bare one (only a container: the "nothing chosen" case of defaulting
/// rules). `None` for other kinds.
fn pod_examples(group: &str, version: &str, kind: &str) -> Option<[Value; 2]> {
    let pod_kind = PodKind::from_gvk(group, version, kind)?;
    let metadata = json!({"name": "app", "namespace": "team-a", "labels": {"app": "web"},
        "annotations": {"team": "a"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "1", "controller": true}]});
    let rich = place(
        pod_kind,
        group,
        version,
        kind,
        metadata,
        rich_pod_spec(pod_kind == PodKind::Pod),
    )?;
    let bare = place(
        pod_kind,
        group,
        version,
        kind,
        json!({"name": "app", "namespace": "team-a"}),
        json!({"containers": [{"name": "app", "image": "nginx"}]}),
    )?;
    Some([rich, bare])
}

/// An object of `pod_kind` holding a pod of `metadata` and `spec` at its template path.
fn place(
    pod_kind: PodKind,
    group: &str,
    version: &str,
    kind: &str,
    metadata: Value,
    spec: Value,
) -> Option<Value> {
    let api_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let path = pod_kind.template_path();
    if path.is_empty() {
        return Some(
            json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}),
        );
    }
    let mut object = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": "web", "namespace": "team-a"}});
    let mut at = &mut object;
    for step in path {
        let Value::Object(map) = at else {
            return None;
        };
        at = map
            .entry((*step).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    *at = json!({"metadata": metadata, "spec": spec});
    if pod_kind == PodKind::StatefulSet
        && let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert(
            "volumeClaimTemplates".to_owned(),
            json!([{"metadata": {"name": "data"}, "spec": {"storageClassName": "fast"}}]),
        );
    }
    Some(object)
}

/// Whether a generated request is a DELETE.
pub fn is_delete(request: &Value) -> bool {
    request.get("operation").and_then(Value::as_str) == Some("DELETE")
}

/// Arbitrary admission requests for a policy: any handled kind (and one unhandled kind),
/// every operation, none or one of its subresources, with or without namespace and user;
/// the object is a random variant of an example of the kind, the old object an edit of it
/// (possibly none: an unchanged UPDATE), arbitrary JSON, or absent.
pub fn arb_request(config: &Robustness) -> BoxedStrategy<Value> {
    let kinds = request_kinds(config);
    let examples = kind_examples(config, &kinds);
    let all: Vec<&Value> = examples.iter().flatten().collect();
    let (keys, strings) = vocabulary(&all, POD_KEYS, config);
    let mut subresources: Vec<Option<String>> = vec![None];
    subresources.extend(config.subresources.iter().map(|s| Some((*s).to_owned())));
    let focus: BTreeSet<String> = config.strings.iter().map(|s| (*s).to_owned()).collect();
    let object = arb_kind_object(examples, keys.clone(), strings.clone(), focus.clone());
    let old_kind = prop_oneof![
        1 => Just(OldObject::Absent),
        4 => Just(OldObject::Edit),
        1 => Just(OldObject::Arbitrary),
    ];
    (
        object,
        old_kind,
        arb_json_owned(keys, strings),
        prop_oneof![9 => Just(false), 1 => Just(true)],
        arb_operation(),
        proptest::sample::select(subresources),
        (
            proptest::sample::select(request_namespaces(config)),
            prop_oneof![4 => Just(true), 1 => Just(false)],
        ),
        arb_user(config),
        any::<bool>(),
    )
        .prop_map(
            move |(
                (i, object, old_edits),
                old_kind,
                arbitrary,
                null_object,
                operation,
                subresource,
                (namespace, one_namespace),
                user,
                dry_run,
            )| {
                let old_object = match old_kind {
                    OldObject::Edit => Some(apply_edits(&object, &old_edits, &focus)),
                    OldObject::Arbitrary => Some(arbitrary),
                    OldObject::Absent => None,
                };
                let mut parts = RequestParts {
                    kind: kinds.get(i).cloned().unwrap_or_default(),
                    operation,
                    dry_run,
                    subresource,
                    namespace,
                    user,
                    old_object,
                    object: (!null_object).then_some(object),
                };
                if one_namespace {
                    parts.align_namespaces();
                }
                parts.into_request()
            },
        )
        .boxed()
}

/// What the old object of a generated request is.
#[derive(Clone, Copy, Debug)]
enum OldObject {
    /// No old object.
    Absent,
    /// An edit of the object (or the object itself).
    Edit,
    /// Arbitrary JSON.
    Arbitrary,
}

/// The parts of one generated admission request.
struct RequestParts {
    kind: (String, String, String),
    operation: &'static str,
    dry_run: bool,
    subresource: Option<String>,
    namespace: Option<String>,
    user: Option<Value>,
    old_object: Option<Value>,
    object: Option<Value>,
}

impl RequestParts {
    /// Makes the objects' string `metadata.namespace` and the request's namespace agree, as
    /// through an API server (most generated requests; the others are refused with 400 before
    /// the policy judges them, `docs/semantics.md#request-handling`).
    fn align_namespaces(&mut self) {
        fn own(object: Option<&Value>) -> Option<String> {
            object
                .and_then(|o| o.pointer("/metadata/namespace"))
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
        }
        let Some(namespace) = own(self.object.as_ref())
            .or_else(|| own(self.old_object.as_ref()))
            .or_else(|| self.namespace.clone().filter(|n| !n.is_empty()))
        else {
            return;
        };
        for object in [self.object.as_mut(), self.old_object.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(slot) = object.pointer_mut("/metadata/namespace")
                && slot.is_string()
            {
                *slot = Value::from(namespace.clone());
            }
        }
        if self.namespace.is_some() {
            self.namespace = Some(namespace);
        }
    }

    /// The AdmissionRequest JSON (absent parts omitted).
    fn into_request(self) -> Value {
        let (group, version, kind) = self.kind;
        let mut request = Map::new();
        request.insert("uid".into(), json!("robustness"));
        request.insert(
            "kind".into(),
            json!({"group": group, "version": version, "kind": kind}),
        );
        request.insert(
            "resource".into(),
            json!({"group": group, "version": version, "resource": plural(&kind)}),
        );
        request.insert("name".into(), json!("web"));
        request.insert("operation".into(), json!(self.operation));
        request.insert("dryRun".into(), json!(self.dry_run));
        if let Some(sub) = self.subresource {
            request.insert("subResource".into(), json!(sub));
        }
        if let Some(ns) = self.namespace {
            request.insert("namespace".into(), json!(ns));
        }
        if let Some(user) = self.user {
            request.insert("userInfo".into(), user);
        }
        if let Some(old) = self.old_object {
            request.insert("oldObject".into(), old);
        }
        if let Some(object) = self.object {
            request.insert("object".into(), object);
        }
        Value::Object(request)
    }
}

/// The resource name of a kind, as the API server names the common ones (`NetworkPolicy` →
/// `networkpolicies`, `Ingress` → `ingresses`).
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else if lower.ends_with('s') || lower.ends_with('x') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// The policy's handled kinds and one unhandled kind (a ConfigMap).
fn request_kinds(config: &Robustness) -> Vec<(String, String, String)> {
    let mut kinds: Vec<(String, String, String)> = config
        .kinds
        .iter()
        .map(|(g, v, k)| ((*g).to_owned(), (*v).to_owned(), (*k).to_owned()))
        .collect();
    kinds.push(("".to_owned(), "v1".to_owned(), "ConfigMap".to_owned()));
    kinds
}

/// The example objects of each kind: the configured objects of that kind and the pod
/// examples, or every configured object when there is none.
fn kind_examples(config: &Robustness, kinds: &[(String, String, String)]) -> Vec<Vec<Value>> {
    kinds
        .iter()
        .map(|(g, v, k)| {
            let mut own: Vec<Value> = config
                .objects
                .iter()
                .filter(|o| o.get("kind").and_then(Value::as_str) == Some(k.as_str()))
                .cloned()
                .collect();
            own.extend(pod_examples(g, v, k).into_iter().flatten());
            if own.is_empty() {
                own = config.objects.clone();
            }
            own
        })
        .collect()
}

/// The index of a kind, a random variant of one of its examples, and edits for the old
/// object.
fn arb_kind_object(
    examples: Vec<Vec<Value>>,
    keys: Vec<String>,
    strings: Vec<String>,
    focus: BTreeSet<String>,
) -> impl Strategy<Value = (usize, Value, Vec<Edit>)> {
    (0..examples.len()).prop_flat_map(move |i| {
        let own = examples.get(i).cloned().unwrap_or_default();
        (
            Just(i),
            arb_variant(own, keys.clone(), strings.clone(), focus.clone()),
            arb_edits(keys.clone(), strings.clone(), 2),
        )
    })
}

/// Every operation, CREATE and UPDATE most often.
fn arb_operation() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        4 => Just("CREATE"),
        4 => Just("UPDATE"),
        1 => Just("DELETE"),
        1 => Just("CONNECT"),
    ]
}

/// The request namespaces: none, ordinary, system, empty, and the policy's strings.
fn request_namespaces(config: &Robustness) -> Vec<Option<String>> {
    [None, Some("team-a"), Some("kube-system"), Some("")]
        .into_iter()
        .map(|n| n.map(str::to_owned))
        .chain(config.strings.iter().map(|s| Some((*s).to_owned())))
        .collect()
}

/// No user, or a user (people, controllers, service accounts, a node, the policy's
/// strings) with up to two groups.
fn arb_user(config: &Robustness) -> impl Strategy<Value = Option<Value>> + use<> {
    let users: Vec<String> = [
        "alice",
        "bob",
        "system:kube-controller-manager",
        "system:serviceaccount:kube-system:replicaset-controller",
        "system:serviceaccount:team-a:deployer",
        "system:node:node-1",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(config.strings.iter().map(|s| (*s).to_owned()))
    .collect();
    let groups: Vec<String> = [
        "system:authenticated",
        "system:nodes",
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
        "tenantA-users",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(config.strings.iter().map(|s| (*s).to_owned()))
    .collect();
    prop_oneof![
        1 => Just(None),
        4 => (
            proptest::sample::select(users),
            prop::collection::vec(proptest::sample::select(groups), 0..3)
        )
            .prop_map(|(u, g)| Some(json!({"username": u, "groups": g}))),
    ]
}

/// Arbitrary settings: mostly random edits of the representative settings (many stay
/// valid), sometimes an arbitrary document.
pub fn arb_settings(config: &Robustness) -> BoxedStrategy<Value> {
    let (keys, strings) = vocabulary(&[&config.settings], &[], config);
    let focus: BTreeSet<String> = config.strings.iter().map(|s| (*s).to_owned()).collect();
    prop_oneof![
        1 => arb_json_owned(keys.clone(), strings.clone()),
        6 => arb_variant(vec![config.settings.clone()], keys, strings, focus),
    ]
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    proptest! {
        #[test]
        fn generated_documents_use_the_given_vocabulary(v in arb_json(&["spec"], &["x"])) {
            fn ok(v: &Value) -> bool {
                match v {
                    Value::Object(m) => m.iter().all(|(k, v)| (k == "spec" || k.chars().all(|c| c.is_ascii_lowercase())) && ok(v)),
                    Value::Array(a) => a.iter().all(ok),
                    _ => true,
                }
            }
            prop_assert!(ok(&v));
        }
    }

    #[test]
    fn edits_reach_nested_nodes() {
        let doc = json!({"a": {"b": [1, 2]}});
        let mut runner = TestRunner::deterministic();
        let mut index = |n: usize| -> Vec<Index> {
            // An Index picks child `i` of `len` children as `i = raw * len / 2^64`.
            let mut out = Vec::new();
            for _ in 0..n {
                out.push(
                    any::<Index>()
                        .new_tree(&mut runner)
                        .map(|t| t.current())
                        .ok(),
                );
            }
            out.into_iter().flatten().collect()
        };
        let removed = apply_edits(
            &doc,
            &[Edit {
                path: index(3),
                action: Action::Remove,
            }],
            &BTreeSet::new(),
        );
        let b = removed
            .pointer("/a/b")
            .and_then(Value::as_array)
            .map(Vec::len);
        assert_eq!(b, Some(1), "{removed}");
        let replaced = apply_edits(
            &doc,
            &[Edit {
                path: Vec::new(),
                action: Action::Replace(json!(7)),
            }],
            &BTreeSet::new(),
        );
        assert_eq!(replaced, json!(7));
        let inserted = apply_edits(
            &doc,
            &[Edit {
                path: index(1),
                action: Action::Insert("c".into(), json!(true)),
            }],
            &BTreeSet::new(),
        );
        assert_eq!(inserted.pointer("/a/c"), Some(&json!(true)));
    }

    #[test]
    fn edits_prefer_focused_children() {
        let mut doc = Map::new();
        for i in 0..10 {
            doc.insert(format!("k{i}"), json!({"x": i}));
        }
        doc.insert("z".into(), json!({"target": 0}));
        let doc = Value::Object(doc);
        let focus: BTreeSet<String> = ["target".to_owned()].into();
        let mut runner = TestRunner::deterministic();
        let mut hits = 0;
        for _ in 0..200 {
            let Ok(tree) = any::<Index>().new_tree(&mut runner) else {
                continue;
            };
            let path = vec![tree.current(), tree.current()];
            let edited = apply_edits(
                &doc,
                &[Edit {
                    path,
                    action: Action::Replace(json!("hit")),
                }],
                &focus,
            );
            if edited.pointer("/z/target") == Some(&json!("hit")) {
                hits += 1;
            }
        }
        // Uniform walks would hit 1 time in 11 (about 18); focused ones about half the time.
        assert!(hits > 60, "{hits}");
    }

    #[test]
    fn pod_examples_sit_at_the_template_path() {
        let Some([cron, bare]) = pod_examples("batch", "v1", "CronJob") else {
            panic!("CronJob is pod-bearing");
        };
        for example in [&cron, &bare] {
            assert!(
                example
                    .pointer("/spec/jobTemplate/spec/template/spec/containers/0/image")
                    .is_some()
            );
        }
        assert!(
            bare.pointer("/spec/jobTemplate/spec/template/spec/volumes")
                .is_none()
        );
        let Some([pod, _]) = pod_examples("", "v1", "Pod") else {
            panic!("Pod is pod-bearing");
        };
        assert!(pod.pointer("/spec/ephemeralContainers/0").is_some());
        let Some([sts, _]) = pod_examples("apps", "v1", "StatefulSet") else {
            panic!("StatefulSet is pod-bearing");
        };
        assert!(sts.pointer("/spec/volumeClaimTemplates/0").is_some());
        assert!(
            sts.pointer("/spec/template/spec/ephemeralContainers")
                .is_none()
        );
        assert!(pod_examples("", "v1", "ConfigMap").is_none());
    }
}
