//! A fake Kubernetes API server on loopback, answering a real policy-server's lookups from
//! recorded exchanges (`testdrive bench-server`).
//!
//! policy-server resolves a `get_resource` in two steps: discovery of the group version
//! (`GET /api/v1` or `GET /apis/<group>/<version>`, an `APIResourceList` giving the plural
//! and whether the kind is namespaced), then the object itself
//! (`GET <base>[/namespaces/<ns>]/<plural>/<name>`). [`FakeApi`] learns both from the
//! exchanges testdrive recorded while evaluating a scenario: a found object is served as
//! recorded, the host's not-found answer becomes a `404 NotFound` Status (which
//! policy-server turns back into the same not-found text), any other error a `500` Status.
//! Lists are not served (no policy of the bundle lists today): their paths answer `404`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::callbacks::KubernetesRequest;
use crate::error::{Error, Result};
use crate::replay::{Exchange, ExchangeResponse};

/// One answer: HTTP status and JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: u16,
    body: String,
}

/// What discovery says of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resource {
    plural: String,
    namespaced: bool,
}

/// The state a fake API server answers from: object paths and discovered kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeApi {
    objects: BTreeMap<String, Answer>,
    /// apiVersion → kind → resource.
    kinds: BTreeMap<String, BTreeMap<String, Resource>>,
}

impl FakeApi {
    /// The state behind recorded exchanges; a list exchange is refused.
    pub fn from_exchanges(exchanges: &[Exchange]) -> Result<Self> {
        let mut api = FakeApi::default();
        for (i, exchange) in exchanges.iter().enumerate() {
            let origin = format!("recorded exchange {i}");
            let request = KubernetesRequest::from_session_string(&exchange.request, &origin)?;
            let KubernetesRequest::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                ..
            } = request
            else {
                return Err(Error::Invalid(format!(
                    "{origin}: the fake API server serves gets only, not {}",
                    request.summary()
                )));
            };
            let resource = Resource {
                plural: plural(&kind),
                namespaced: namespace.is_some(),
            };
            let path = object_path(&api_version, &resource, namespace.as_deref(), &name);
            let answer = match &exchange.response {
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
            };
            api.kinds
                .entry(api_version)
                .or_default()
                .insert(kind, resource);
            api.objects.insert(path, answer);
        }
        Ok(api)
    }

    /// Whether nothing is served.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Adds `other`'s state when no path or kind is answered differently by the two;
    /// whether it was added.
    pub fn merge(&mut self, other: &FakeApi) -> bool {
        let objects_agree = other
            .objects
            .iter()
            .all(|(path, answer)| self.objects.get(path).is_none_or(|a| a == answer));
        let kinds_agree = other.kinds.iter().all(|(version, kinds)| {
            kinds.iter().all(|(kind, r)| {
                self.kinds
                    .get(version)
                    .and_then(|k| k.get(kind))
                    .is_none_or(|known| known == r)
            })
        });
        if !(objects_agree && kinds_agree) {
            return false;
        }
        self.objects.extend(other.objects.clone());
        for (version, kinds) in &other.kinds {
            self.kinds
                .entry(version.clone())
                .or_default()
                .extend(kinds.clone());
        }
        true
    }

    /// The answer to `GET path` (query string ignored).
    fn answer(&self, path: &str) -> Answer {
        let path = path.split_once('?').map_or(path, |(p, _)| p);
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

    /// Serves this state on an ephemeral loopback port until the server is dropped.
    pub fn serve(self) -> Result<RunningApi> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| Error::Invalid(format!("fake API server: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::Invalid(format!("fake API server: {e}")))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let api = Arc::new(self);
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(stream) = stream {
                    let api = api.clone();
                    std::thread::spawn(move || serve_connection(&api, stream));
                }
            }
        });
        Ok(RunningApi { port, stop })
    }
}

/// A served [`FakeApi`]; stops accepting connections when dropped.
#[derive(Debug)]
pub struct RunningApi {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl RunningApi {
    /// Writes a kubeconfig that points a client at this server.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{}\n\
             users:\n- name: bench\n  user:\n    token: bench\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: bench\n\
             current-context: fake\n",
            self.port
        );
        std::fs::write(path, text).map_err(|e| Error::io(path, e))
    }
}

impl Drop for RunningApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // wake the accept loop so that it sees the flag
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answers requests on one connection: kept alive for HTTP/1.1 until the client closes it
/// or asks `Connection: close`, one request for HTTP/1.0.
fn serve_connection(api: &FakeApi, stream: TcpStream) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or_default();
        let mut keep_alive = parts.next() == Some("HTTP/1.1");
        let mut content_length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    content_length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("connection") {
                    keep_alive &= !value.eq_ignore_ascii_case("close");
                }
            }
        }
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer = if method == "GET" {
            api.answer(path)
        } else {
            status_answer(405, "MethodNotAllowed", &format!("{method} is not served"))
        };
        let response = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            answer.status,
            reason_phrase(answer.status),
            answer.body.len(),
            answer.body
        );
        if writer.write_all(response.as_bytes()).is_err() || !keep_alive {
            return;
        }
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
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

/// The object path of a get.
fn object_path(
    api_version: &str,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> String {
    let base = if api_version == "v1" {
        "/api/v1".to_owned()
    } else {
        format!("/apis/{api_version}")
    };
    match namespace {
        Some(ns) => format!("{base}/namespaces/{ns}/{}/{name}", resource.plural),
        None => format!("{base}/{}/{name}", resource.plural),
    }
}

/// The resource name of a kind, by the API's English pluralisation (`Ingress` → `ingresses`,
/// `NetworkPolicy` → `networkpolicies`).
fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
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
    fn plurals_follow_the_api() {
        assert_eq!(plural("Namespace"), "namespaces");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("PriorityClass"), "priorityclasses");
        assert_eq!(plural("Gateway"), "gateways");
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

    #[test]
    fn refuses_lists() {
        let request = KubernetesRequest::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Pod".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        let exchange = Exchange {
            request: request.to_session_string().unwrap(),
            response: ExchangeResponse::Success {
                payload: "{}".into(),
            },
        };
        let err = FakeApi::from_exchanges(&[exchange])
            .unwrap_err()
            .to_string();
        assert!(err.contains("serves gets only"), "{err}");
    }
}
