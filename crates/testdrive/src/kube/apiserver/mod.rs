//! A fake Kubernetes API server on loopback, answering a real policy-server's lookups from
//! recorded exchanges (`testdrive bench-server`).
//!
//! policy-server resolves a `get_resource` in two steps: discovery of the group version
//! (`GET /api/v1` or `GET /apis/<group>/<version>`, an `APIResourceList` giving the plural
//! and whether the kind is namespaced), then the object itself
//! (`GET <base>[/namespaces/<ns>]/<plural>/<name>`). Its list calls
//! (`list_resources_all`, `list_resources_by_namespace`) start one reflector per distinct
//! (kind, namespace, label selector, field selector): a paged LIST
//! (`GET <base>[/namespaces/<ns>]/<plural>?labelSelector=…&limit=500`, following
//! `continue` tokens), then a WATCH of the same target that stays open and keeps the cache
//! current; the guest is then answered from that cache on every request.
//!
//! [`FakeApi`] learns all of it from the exchanges testdrive recorded while evaluating a
//! scenario: a found object is served as recorded, the host's not-found answer becomes a
//! `404 NotFound` Status (which policy-server turns back into the same not-found text), any
//! other error a `500` Status. A recorded list is served page by page as the API server
//! pages (`limit`, `continue`, `remainingItemCount`) under the selectors it was recorded
//! with, and its watch is held open without events until the server stops or the watch's
//! `timeoutSeconds` pass: the recorded state does not change during a benchmark.

mod query;
mod rbac;
mod serve;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use policy_host::callbacks::KubernetesRequest;
use policy_host::error::{Error, Result};
use policy_host::kube::plural;
use policy_host::replay::{Exchange, ExchangeResponse};
use query::Target;
pub use rbac::{Access, Rbac};
pub use serve::RunningApi;

/// One answer: HTTP status and JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: u16,
    body: String,
}

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    /// Answer and carry on.
    Full(Answer),
    /// Hold a watch open (no events) for at most this many seconds.
    Watch { seconds: u64 },
}

/// What discovery says of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resource {
    plural: String,
    namespaced: bool,
}

/// A list target: its path and the selectors it was recorded with (empty = none).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ListKey {
    path: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
}

/// A recorded list answer.
#[derive(Debug, Clone, PartialEq)]
enum Listed {
    /// The items, served as a `<kind>List` of `api_version`.
    Items {
        api_version: String,
        kind: String,
        items: Vec<Value>,
    },
    /// The host failed: the answer of every page and watch.
    Failed(Answer),
}

/// The cluster-scoped kinds a list of which may be recorded empty (so that its items cannot
/// tell); any other kind listed across namespaces is served as namespaced.
const CLUSTER_SCOPED: [&str; 14] = [
    "Namespace",
    "Node",
    "PersistentVolume",
    "IngressClass",
    "GatewayClass",
    "RuntimeClass",
    "PriorityClass",
    "StorageClass",
    "DeviceClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

/// The state a fake API server answers from: object paths, lists and discovered kinds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FakeApi {
    objects: BTreeMap<String, Answer>,
    lists: BTreeMap<ListKey, Listed>,
    /// apiVersion → kind → resource.
    kinds: BTreeMap<String, BTreeMap<String, Resource>>,
    /// The reads granted to the client, `None`: every read.
    rbac: Option<Rbac>,
}

/// What the RBAC of a [`FakeApi`] says of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// Discovery or another path every client may read.
    Open,
    /// A read the role grants (or no role is enforced).
    Granted(Access),
    /// A read the role does not grant: answered 403.
    Refused(Access),
}

impl FakeApi {
    /// The state behind recorded exchanges (gets and lists).
    pub fn from_exchanges(exchanges: &[Exchange]) -> Result<Self> {
        let mut api = FakeApi::default();
        for (i, exchange) in exchanges.iter().enumerate() {
            let origin = format!("recorded exchange {i}");
            let request = KubernetesRequest::from_session_string(&exchange.request, &origin)?;
            match request {
                KubernetesRequest::KubernetesGetResource {
                    api_version,
                    kind,
                    name,
                    namespace,
                    ..
                } => {
                    let resource =
                        api.learn_kind(&origin, &api_version, &kind, namespace.is_some())?;
                    let path = object_path(&api_version, &resource, namespace.as_deref(), &name);
                    let answer = get_answer(&resource, &name, &exchange.response);
                    api.objects.insert(path, answer);
                }
                KubernetesRequest::KubernetesListResourceNamespace {
                    api_version,
                    kind,
                    namespace,
                    label_selector,
                    field_selector,
                    ..
                } => {
                    let listed = listed(&origin, &api_version, &kind, &exchange.response)?;
                    let resource = api.learn_kind(&origin, &api_version, &kind, true)?;
                    let key = ListKey {
                        path: list_path(&api_version, &resource, Some(&namespace)),
                        label_selector: label_selector.filter(|s| !s.is_empty()),
                        field_selector: field_selector.filter(|s| !s.is_empty()),
                    };
                    api.lists.insert(key, listed);
                }
                KubernetesRequest::KubernetesListResourceAll {
                    api_version,
                    kind,
                    label_selector,
                    field_selector,
                    ..
                } => {
                    let listed = listed(&origin, &api_version, &kind, &exchange.response)?;
                    let namespaced = match &listed {
                        Listed::Items { items, .. } if !items.is_empty() => items.iter().any(|i| {
                            i.pointer("/metadata/namespace")
                                .is_some_and(Value::is_string)
                        }),
                        _ => !CLUSTER_SCOPED.contains(&kind.as_str()),
                    };
                    let resource = api.learn_kind(&origin, &api_version, &kind, namespaced)?;
                    let key = ListKey {
                        path: list_path(&api_version, &resource, None),
                        label_selector: label_selector.filter(|s| !s.is_empty()),
                        field_selector: field_selector.filter(|s| !s.is_empty()),
                    };
                    api.lists.insert(key, listed);
                }
            }
        }
        Ok(api)
    }

    /// Records what discovery says of a kind; a kind recorded both namespaced and
    /// cluster-scoped is refused.
    fn learn_kind(
        &mut self,
        origin: &str,
        api_version: &str,
        kind: &str,
        namespaced: bool,
    ) -> Result<Resource> {
        let resource = Resource {
            plural: plural(kind),
            namespaced,
        };
        let kinds = self.kinds.entry(api_version.to_owned()).or_default();
        match kinds.get(kind) {
            Some(known) if *known != resource => Err(Error::Invalid(format!(
                "{origin}: {api_version} {kind} was recorded both namespaced and cluster-scoped"
            ))),
            Some(_) => Ok(resource),
            None => {
                kinds.insert(kind.to_owned(), resource.clone());
                Ok(resource)
            }
        }
    }

    /// Enforces `rbac`: every read it does not grant answers `403 Forbidden`.
    pub fn with_rbac(mut self, rbac: Rbac) -> Self {
        self.rbac = Some(rbac);
        self
    }

    /// Whether the client may make the read of `target` (`GET path?query`).
    pub fn authorize(&self, target: &str) -> Authorization {
        let parsed = Target::parse(target);
        match Access::of_target(&parsed.path, parsed.watch) {
            None => Authorization::Open,
            Some(access) if self.rbac.as_ref().is_none_or(|r| r.grants(&access)) => {
                Authorization::Granted(access)
            }
            Some(access) => Authorization::Refused(access),
        }
    }

    /// The `403 Forbidden` answer to a refused read.
    fn forbidden(&self, access: &Access) -> Answer {
        self.rbac.clone().unwrap_or_default().forbidden(access)
    }

    /// Every object it serves (got, or listed; a listed item gets its list's `apiVersion`
    /// and kind), for a real API server to hold the same state.
    pub fn objects(&self) -> Vec<Value> {
        let got = self
            .objects
            .values()
            .filter(|a| a.status == 200)
            .filter_map(|a| serde_json::from_str::<Value>(&a.body).ok())
            .filter(|o| o.get("kind").and_then(Value::as_str).is_some());
        let listed = self.lists.values().flat_map(|l| match l {
            Listed::Items {
                api_version,
                kind,
                items,
            } => items
                .iter()
                .map(|i| {
                    let mut i = i.clone();
                    if let Some(map) = i.as_object_mut() {
                        let kind = kind.strip_suffix("List").unwrap_or(kind);
                        map.insert("kind".into(), json!(kind));
                        map.insert("apiVersion".into(), json!(api_version));
                    }
                    i
                })
                .collect(),
            Listed::Failed(_) => Vec::new(),
        });
        got.chain(listed).collect()
    }

    /// The Namespace objects it serves (got, or listed).
    pub fn namespaces(&self) -> Vec<Value> {
        self.objects()
            .into_iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Namespace"))
            .collect()
    }

    /// Whether nothing is served.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.lists.is_empty()
    }

    /// Adds `other`'s state when no path, list or kind is answered differently by the two;
    /// whether it was added.
    pub fn merge(&mut self, other: &FakeApi) -> bool {
        let objects_agree = other
            .objects
            .iter()
            .all(|(path, answer)| self.objects.get(path).is_none_or(|a| a == answer));
        let lists_agree = other
            .lists
            .iter()
            .all(|(key, listed)| self.lists.get(key).is_none_or(|l| l == listed));
        let kinds_agree = other.kinds.iter().all(|(version, kinds)| {
            kinds.iter().all(|(kind, r)| {
                self.kinds
                    .get(version)
                    .and_then(|k| k.get(kind))
                    .is_none_or(|known| known == r)
            })
        });
        if !(objects_agree && lists_agree && kinds_agree) {
            return false;
        }
        self.objects.extend(other.objects.clone());
        self.lists.extend(other.lists.clone());
        for (version, kinds) in &other.kinds {
            self.kinds
                .entry(version.clone())
                .or_default()
                .extend(kinds.clone());
        }
        true
    }

    /// What to do with `GET target`.
    fn reply(&self, target: &str) -> Reply {
        let target = Target::parse(target);
        let key = ListKey {
            path: target.path.clone(),
            label_selector: target.label_selector.clone(),
            field_selector: target.field_selector.clone(),
        };
        match (self.lists.get(&key), target.watch) {
            (Some(Listed::Failed(answer)), _) => Reply::Full(answer.clone()),
            (Some(Listed::Items { .. }), true) => Reply::Watch {
                seconds: target.timeout_seconds.unwrap_or(290),
            },
            (Some(listed @ Listed::Items { .. }), false) => Reply::Full(page(listed, &target)),
            (None, true) => Reply::Full(status_answer(
                404,
                "NotFound",
                &format!("no recorded list to watch at {}", target.path),
            )),
            (None, false) => Reply::Full(self.answer(&target.path)),
        }
    }

    /// The answer to `GET path` of an object, a discovery document or `/version`.
    fn answer(&self, path: &str) -> Answer {
        if let Some(answer) = self.objects.get(path) {
            return answer.clone();
        }
        if path == "/version" {
            return Answer {
                status: 200,
                body: json!({"major": "1", "minor": "34", "gitVersion": "v1.34.0",
                    "platform": "linux/amd64"})
                .to_string(),
            };
        }
        let version = match path {
            "/api/v1" => Some("v1"),
            _ => path
                .strip_prefix("/apis/")
                .filter(|v| v.matches('/').count() == 1),
        };
        match version.and_then(|v| self.kinds.get(v).map(|k| (v, k))) {
            Some((version, kinds)) => Answer {
                status: 200,
                body: resource_list(version, kinds).to_string(),
            },
            None => status_answer(
                404,
                "NotFound",
                &format!("the server could not find {path}"),
            ),
        }
    }
}

/// The answer to a recorded get.
fn get_answer(resource: &Resource, name: &str, response: &ExchangeResponse) -> Answer {
    match response {
        ExchangeResponse::Success { payload } => Answer {
            status: 200,
            body: payload.clone(),
        },
        ExchangeResponse::Error { message } if message.starts_with("Cannot find ") => {
            status_answer(
                404,
                "NotFound",
                &format!("{} \"{name}\" not found", resource.plural),
            )
        }
        ExchangeResponse::Error { message } => status_answer(500, "InternalError", message),
    }
}

/// A recorded list answer: its items, or the failure every page repeats.
fn listed(
    origin: &str,
    api_version: &str,
    kind: &str,
    response: &ExchangeResponse,
) -> Result<Listed> {
    match response {
        ExchangeResponse::Success { payload } => {
            let list: Value = serde_json::from_str(payload)
                .map_err(|e| Error::Invalid(format!("{origin}: list answer: {e}")))?;
            let items = match list.get("items") {
                Some(Value::Array(items)) => items.clone(),
                None | Some(Value::Null) => Vec::new(),
                Some(_) => {
                    return Err(Error::Invalid(format!(
                        "{origin}: list answer: items is not a list"
                    )));
                }
            };
            Ok(Listed::Items {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                items,
            })
        }
        ExchangeResponse::Error { message } => {
            Ok(Listed::Failed(status_answer(500, "InternalError", message)))
        }
    }
}

/// One page of a list, as the API server pages: at most `limit` items from the offset the
/// `continue` token names, with the token of the next page and the count left after it.
fn page(listed: &Listed, target: &Target) -> Answer {
    let Listed::Items {
        api_version,
        kind,
        items,
    } = listed
    else {
        return status_answer(500, "InternalError", "not a list");
    };
    let offset = match target.continue_token.as_deref().map(str::parse::<usize>) {
        None => 0,
        Some(Ok(offset)) if offset <= items.len() => offset,
        Some(_) => return status_answer(400, "BadRequest", "continue key is not valid"),
    };
    let end = match target.limit {
        0 => items.len(),
        limit => offset.saturating_add(limit).min(items.len()),
    };
    let metadata = if end < items.len() {
        json!({"resourceVersion": "1", "continue": end.to_string(),
            "remainingItemCount": items.len() - end})
    } else {
        json!({"resourceVersion": "1"})
    };
    Answer {
        status: 200,
        body: json!({"apiVersion": api_version, "kind": format!("{kind}List"),
            "metadata": metadata, "items": items.get(offset..end).unwrap_or_default()})
        .to_string(),
    }
}

/// A `meta/v1` Status answer.
fn status_answer(code: u16, reason: &str, message: &str) -> Answer {
    Answer {
        status: code,
        body: json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code})
        .to_string(),
    }
}

/// The discovery document of one group version.
fn resource_list(version: &str, kinds: &BTreeMap<String, Resource>) -> Value {
    let resources: Vec<Value> = kinds
        .iter()
        .map(|(kind, r)| {
            json!({"name": r.plural, "singularName": kind.to_lowercase(),
                "namespaced": r.namespaced, "kind": kind, "verbs": ["get", "list", "watch"]})
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": version,
        "resources": resources})
}

/// The path of a group version's resources.
fn base_path(api_version: &str) -> String {
    if api_version == "v1" {
        "/api/v1".to_owned()
    } else {
        format!("/apis/{api_version}")
    }
}

/// The path of a list: of one namespace, or of every namespace (or a cluster-scoped kind).
fn list_path(api_version: &str, resource: &Resource, namespace: Option<&str>) -> String {
    let base = base_path(api_version);
    match namespace {
        Some(ns) => format!("{base}/namespaces/{ns}/{}", resource.plural),
        None => format!("{base}/{}", resource.plural),
    }
}

/// The object path of a get.
fn object_path(
    api_version: &str,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> String {
    format!("{}/{name}", list_path(api_version, resource, namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get_exchange(
        kind: &str,
        api_version: &str,
        name: &str,
        ns: Option<&str>,
        response: ExchangeResponse,
    ) -> Exchange {
        let request = KubernetesRequest::KubernetesGetResource {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            namespace: ns.map(str::to_owned),
            disable_cache: false,
            field_masks: None,
        };
        Exchange {
            request: request.to_session_string().unwrap(),
            response,
        }
    }

    fn http_get(port: u16, path: &str) -> (u16, Value) {
        let (status, body) = crate::http::http_get(port, path).unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[test]
    fn serves_discovery_objects_and_not_found() {
        let ns = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}"#;
        let api = FakeApi::from_exchanges(&[
            get_exchange("Namespace", "v1", "team-a", None, ExchangeResponse::Success { payload: ns.into() }),
            get_exchange(
                "PriorityClass",
                "scheduling.k8s.io/v1",
                "gold",
                None,
                ExchangeResponse::Error {
                    message: "Cannot find scheduling.k8s.io/v1/PriorityClass named 'gold' inside of namespace 'None'".into(),
                },
            ),
            get_exchange("Pod", "v1", "web", Some("team-a"), ExchangeResponse::Error { message: "boom".into() }),
        ])
        .unwrap();
        let running = api.serve().unwrap();
        let port = running.port;
        let (code, body) = http_get(port, "/api/v1");
        assert_eq!(code, 200);
        let names: Vec<_> = body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap(),
                    r["namespaced"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(names, [("namespaces", false), ("pods", true)]);
        assert_eq!(
            http_get(port, "/apis/scheduling.k8s.io/v1").1["resources"][0]["kind"],
            "PriorityClass"
        );
        assert_eq!(
            http_get(port, "/api/v1/namespaces/team-a").1["metadata"]["name"],
            "team-a"
        );
        let (code, status) = http_get(port, "/apis/scheduling.k8s.io/v1/priorityclasses/gold");
        assert_eq!((code, status["reason"].as_str()), (404, Some("NotFound")));
        let (code, status) = http_get(port, "/api/v1/namespaces/team-a/pods/web?x=1");
        assert_eq!((code, status["message"].as_str()), (500, Some("boom")));
        assert_eq!(http_get(port, "/apis/apps/v1").0, 404);
        assert_eq!(http_get(port, "/version").1["major"], "1");
    }

    #[test]
    fn enforces_the_role_and_serves_discovery() {
        let ns = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}"#;
        let pc = r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"gold"}}"#;
        let objects = policy_host::cluster::yaml_objects(
            "kind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: [namespaces], verbs: [get]}]\n---\n\
             kind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r}\n\
             subjects: [{kind: ServiceAccount, name: ps, namespace: kubewarden}]\n",
            "t",
        )
        .unwrap();
        let api = FakeApi::from_exchanges(&[
            get_exchange(
                "Namespace",
                "v1",
                "team-a",
                None,
                ExchangeResponse::Success { payload: ns.into() },
            ),
            get_exchange(
                "PriorityClass",
                "scheduling.k8s.io/v1",
                "gold",
                None,
                ExchangeResponse::Success { payload: pc.into() },
            ),
        ])
        .unwrap()
        .with_rbac(Rbac::for_service_account(&objects, "kubewarden", "ps"));
        let running = api.serve().unwrap();
        let port = running.port();
        assert_eq!(http_get(port, "/api/v1/namespaces/team-a").0, 200);
        let (code, status) = http_get(port, "/apis/scheduling.k8s.io/v1/priorityclasses/gold");
        assert_eq!(code, 403);
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "priorityclasses.scheduling.k8s.io \"gold\" is forbidden: User \"system:serviceaccount:kubewarden:ps\" cannot get resource \"priorityclasses\" in API group \"scheduling.k8s.io\" at the cluster scope",
                "reason": "Forbidden", "details": {"name": "gold", "group": "scheduling.k8s.io", "kind": "priorityclasses"}, "code": 403})
        );
        assert_eq!(http_get(port, "/apis/scheduling.k8s.io/v1").0, 200);
        assert_eq!(http_get(port, "/api/v1").0, 200);
        let reads: Vec<(String, bool)> = running
            .reads()
            .into_iter()
            .map(|(a, granted)| (a.to_string(), granted))
            .collect();
        assert_eq!(
            reads,
            [
                (
                    "get core/namespaces in team-a named team-a".to_owned(),
                    true
                ),
                (
                    "get scheduling.k8s.io/priorityclasses named gold".to_owned(),
                    false
                )
            ]
        );
    }

    #[test]
    fn merges_only_agreeing_states() {
        let ns = |labels: &str| {
            FakeApi::from_exchanges(&[get_exchange(
                "Namespace",
                "v1",
                "a",
                None,
                ExchangeResponse::Success {
                    payload: format!(r#"{{"metadata":{{"name":"a","labels":{labels}}}}}"#),
                },
            )])
            .unwrap()
        };
        let mut merged = FakeApi::default();
        assert!(merged.merge(&ns("{}")));
        assert!(merged.merge(&ns("{}")));
        assert!(!merged.merge(&ns(r#"{"x":"y"}"#)));
        assert_eq!(merged, ns("{}"));
    }

    fn list_exchange(request: KubernetesRequest, response: ExchangeResponse) -> Exchange {
        Exchange {
            request: request.to_session_string().unwrap(),
            response,
        }
    }

    fn ingresses(n: usize) -> String {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"metadata": {"name": format!("web-{i}"), "namespace": "solar-dev"}}))
            .collect();
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressList", "metadata": {}, "items": items})
            .to_string()
    }

    #[test]
    fn serves_recorded_lists_page_by_page_under_their_selectors() {
        let all = KubernetesRequest::KubernetesListResourceAll {
            api_version: "networking.k8s.io/v1".into(),
            kind: "Ingress".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        let tenant = KubernetesRequest::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            label_selector: Some("capsule.clastix.io/tenant=solar".into()),
            field_selector: None,
            field_masks: None,
        };
        let in_ns = KubernetesRequest::KubernetesListResourceNamespace {
            api_version: "networking.k8s.io/v1".into(),
            kind: "Ingress".into(),
            namespace: "solar-dev".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        let empty = json!({"items": []}).to_string();
        let api = FakeApi::from_exchanges(&[
            list_exchange(
                all,
                ExchangeResponse::Success {
                    payload: ingresses(5),
                },
            ),
            list_exchange(tenant, ExchangeResponse::Success { payload: empty }),
            list_exchange(
                in_ns,
                ExchangeResponse::Error {
                    message: "boom".into(),
                },
            ),
        ])
        .unwrap();
        let running = api.serve().unwrap();
        let port = running.port;
        let base = "/apis/networking.k8s.io/v1/ingresses";
        let (code, first) = http_get(port, &format!("{base}?limit=2"));
        assert_eq!(code, 200);
        assert_eq!(first["kind"], "IngressList");
        assert_eq!(first["metadata"]["continue"], "2");
        assert_eq!(first["metadata"]["remainingItemCount"], 3);
        assert_eq!(first["items"][1]["metadata"]["name"], "web-1");
        let (_, last) = http_get(port, &format!("{base}?limit=2&continue=4"));
        assert_eq!(last["items"].as_array().unwrap().len(), 1);
        assert!(last["metadata"].get("continue").is_none());
        assert_eq!(last["metadata"]["resourceVersion"], "1");
        assert_eq!(http_get(port, &format!("{base}?continue=x")).0, 400);
        // selectors are part of what was recorded; discovery knows both kinds' scope
        let (code, ns) = http_get(
            port,
            "/api/v1/namespaces?labelSelector=capsule.clastix.io%2Ftenant%3Dsolar",
        );
        assert_eq!((code, ns["kind"].as_str()), (200, Some("NamespaceList")));
        assert_eq!(http_get(port, "/api/v1/namespaces?labelSelector=x").0, 404);
        assert_eq!(
            http_get(port, "/api/v1").1["resources"][0]["namespaced"],
            false
        );
        assert_eq!(
            http_get(port, "/apis/networking.k8s.io/v1").1["resources"][0]["namespaced"],
            true
        );
        let (code, failed) = http_get(
            port,
            "/apis/networking.k8s.io/v1/namespaces/solar-dev/ingresses",
        );
        assert_eq!((code, failed["message"].as_str()), (500, Some("boom")));
    }

    #[test]
    fn holds_a_watch_open_until_it_times_out() {
        let all = KubernetesRequest::KubernetesListResourceAll {
            api_version: "networking.k8s.io/v1".into(),
            kind: "Ingress".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        let api = FakeApi::from_exchanges(&[list_exchange(
            all,
            ExchangeResponse::Success {
                payload: ingresses(1),
            },
        )])
        .unwrap();
        let running = api.serve().unwrap();
        let started = std::time::Instant::now();
        let (code, body) = crate::http::http_get(
            running.port,
            "/apis/networking.k8s.io/v1/ingresses?watch=true&timeoutSeconds=1&resourceVersion=1",
        )
        .unwrap();
        assert_eq!(code, 200);
        assert_eq!(body, b"0\r\n\r\n");
        assert!(started.elapsed() >= std::time::Duration::from_secs(1));
        let (code, _) = crate::http::http_get(running.port, "/api/v1/pods?watch=1").unwrap();
        assert_eq!(code, 404);
    }

    #[test]
    fn refuses_a_kind_recorded_in_both_scopes() {
        let all = KubernetesRequest::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        let err = FakeApi::from_exchanges(&[
            list_exchange(
                all,
                ExchangeResponse::Success {
                    payload: json!({"items": []}).to_string(),
                },
            ),
            get_exchange(
                "Namespace",
                "v1",
                "a",
                Some("b"),
                ExchangeResponse::Error {
                    message: "x".into(),
                },
            ),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("both namespaced and cluster-scoped"), "{err}");
    }
}
