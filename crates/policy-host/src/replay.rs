//! kwctl replay sessions (`--replay-host-capabilities-interactions`): played back by [`ReplaySession`], written by [`Recorder`].
//!
//! A session is a YAML list of exchanges matched strictly in order:
//!
//! ```yaml
//! - type: Exchange
//!   request: |
//!     !KubernetesGetResource
//!     api_version: v1
//!     kind: Namespace
//!     name: team-a
//!     namespace: null
//!     disable_cache: false
//!   response:
//!     type: Success
//!     payload: '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}'
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::callbacks::{Callbacks, KubernetesRequest};
use crate::error::{Error, Result, read_text};

/// The answer recorded for one exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ExchangeResponse {
    /// The host answered with this payload (a JSON document, as a string).
    Success {
        /// Reply payload.
        payload: String,
    },
    /// The host answered with an error.
    Error {
        /// Error message returned to the guest.
        message: String,
    },
}

/// One recorded exchange, as kwctl serializes it (`type: Exchange`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub struct Exchange {
    /// The request, as a tagged YAML document in a string.
    pub request: String,
    /// The recorded answer.
    pub response: ExchangeResponse,
}

/// Serializes exchanges exactly as kwctl writes a session file.
pub fn session_to_yaml(exchanges: &[Exchange]) -> Result<String> {
    serde_yaml::to_string(exchanges)
        .map_err(|e| Error::Invalid(format!("cannot serialize session: {e}")))
}

#[derive(Debug, Clone)]
struct ParsedExchange {
    request: KubernetesRequest,
    response: ExchangeResponse,
}

/// A kwctl session replayed strictly in order.
///
/// The n-th read of the policy must equal the n-th recorded request; a
/// mismatch or a read past the end is returned to the guest as an error
/// and reported by [`Callbacks::problems`]; exchanges left over are
/// reported by [`Callbacks::unused`].
///
/// ```
/// use policy_host::{Callbacks, KubernetesRequest, ReplaySession};
/// let mut s = ReplaySession::from_yaml_str(r#"
/// - type: Exchange
///   request: |
///     !KubernetesGetResource
///     api_version: v1
///     kind: Namespace
///     name: a
///     namespace: null
///     disable_cache: false
///   response:
///     type: Error
///     message: 'Cannot find v1/Namespace named ''a'' inside of namespace ''None'''
/// "#, "inline").unwrap();
/// let req = KubernetesRequest::KubernetesGetResource { api_version: "v1".into(),
///     kind: "Namespace".into(), name: "a".into(), namespace: None,
///     disable_cache: false, field_masks: None };
/// assert!(s.kubernetes(&req).unwrap_err().starts_with("Cannot find v1/Namespace named 'a'"));
/// assert!(s.problems().is_empty() && s.unused().is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct ReplaySession {
    origin: String,
    exchanges: Vec<ParsedExchange>,
    cursor: usize,
    problems: Vec<String>,
}

impl ReplaySession {
    /// The objects the session's successful answers contain (a get's object, a list's
    /// items), for replaying the same state to a native in-memory cluster.
    pub fn objects(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for e in &self.exchanges {
            if let ExchangeResponse::Success { payload } = &e.response
                && let Ok(v) = serde_json::from_str::<Value>(payload)
            {
                match v.get("items").and_then(Value::as_array) {
                    Some(items) => out.extend(items.iter().cloned()),
                    None => out.push(v),
                }
            }
        }
        out
    }

    /// Parses session YAML; `origin` names it in messages.
    pub fn from_yaml_str(text: &str, origin: &str) -> Result<Self> {
        // an empty file is an empty session
        let raw: Vec<Exchange> = if text.trim().is_empty() || text.trim() == "---" {
            Vec::new()
        } else {
            serde_yaml::from_str::<Option<Vec<Exchange>>>(text)
                .map_err(|e| Error::parse(origin, e))?
                .unwrap_or_default()
        };
        let mut exchanges = Vec::with_capacity(raw.len());
        for (i, ex) in raw.into_iter().enumerate() {
            let request = KubernetesRequest::from_session_string(
                &ex.request,
                &format!("{origin}: exchange #{} request", i + 1),
            )?;
            if let ExchangeResponse::Success { payload } = &ex.response {
                serde_json::from_str::<Value>(payload).map_err(|e| {
                    Error::parse(format!("{origin}: exchange #{} response payload", i + 1), e)
                })?;
            }
            exchanges.push(ParsedExchange {
                request,
                response: ex.response,
            });
        }
        Ok(ReplaySession {
            origin: origin.to_owned(),
            exchanges,
            cursor: 0,
            problems: Vec::new(),
        })
    }

    /// Reads a session file.
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_yaml_str(&read_text(path)?, &path.display().to_string())
    }

    /// Number of recorded exchanges.
    pub fn len(&self) -> usize {
        self.exchanges.len()
    }

    /// Whether the session has no exchange.
    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }
}

/// Field-by-field difference between two requests, for humans.
pub(crate) fn request_diff(expected: &KubernetesRequest, actual: &KubernetesRequest) -> String {
    let as_pair = |r: &KubernetesRequest| -> (String, serde_json::Map<String, Value>) {
        match serde_json::to_value(r) {
            Ok(Value::Object(map)) => match map.into_iter().next() {
                Some((tag, Value::Object(fields))) => (tag, fields),
                _ => (String::new(), serde_json::Map::new()),
            },
            _ => (String::new(), serde_json::Map::new()),
        }
    };
    let (etag, efields) = as_pair(expected);
    let (atag, afields) = as_pair(actual);
    if etag != atag {
        return format!(
            "expected !{etag} ({}), got !{atag} ({})",
            expected.summary(),
            actual.summary()
        );
    }
    let mut keys: Vec<&String> = efields.keys().chain(afields.keys()).collect();
    keys.sort();
    keys.dedup();
    let diffs: Vec<String> = keys
        .into_iter()
        .filter_map(|k| {
            let e = efields.get(k).unwrap_or(&Value::Null);
            let a = afields.get(k).unwrap_or(&Value::Null);
            (e != a).then(|| format!("{k}: expected {e}, got {a}"))
        })
        .collect();
    format!("!{etag} differs: {}", diffs.join("; "))
}

impl Callbacks for ReplaySession {
    fn kubernetes(&mut self, request: &KubernetesRequest) -> std::result::Result<Vec<u8>, String> {
        let index = self.cursor;
        self.cursor += 1;
        let Some(exchange) = self.exchanges.get(index) else {
            self.problems.push(format!(
                "replay {}: the policy made read #{} ({}) but the session has only {} exchange(s)",
                self.origin,
                index + 1,
                request.summary(),
                self.exchanges.len()
            ));
            return Err("the list of recorded responses is empty or has been exhausted".to_owned());
        };
        if &exchange.request != request {
            self.problems.push(format!(
                "replay {}: exchange #{} does not match the policy's read: {}",
                self.origin,
                index + 1,
                request_diff(&exchange.request, request)
            ));
            return Err(format!(
                "Replay error: unexpected request. Was expecting {:?}, got {:?} instead",
                exchange.request, request
            ));
        }
        match &exchange.response {
            ExchangeResponse::Success { payload } => Ok(payload.clone().into_bytes()),
            ExchangeResponse::Error { message } => Err(message.clone()),
        }
    }

    fn problems(&self) -> Vec<String> {
        self.problems.clone()
    }

    fn unused(&self) -> Vec<String> {
        self.exchanges
            .iter()
            .enumerate()
            .skip(self.cursor)
            .map(|(i, ex)| {
                format!(
                    "replay {}: exchange #{} ({}) was never used",
                    self.origin,
                    i + 1,
                    ex.request.summary()
                )
            })
            .collect()
    }

    fn reset(&mut self) {
        self.cursor = 0;
        self.problems.clear();
    }
}

/// Wraps other callbacks and records every exchange, to write a kwctl
/// replay session (`testdrive record`).
#[derive(Debug, Default)]
pub struct Recorder<C> {
    inner: C,
    exchanges: Vec<Exchange>,
}

impl<C: Callbacks> Recorder<C> {
    /// Starts recording the answers of `inner`.
    pub fn new(inner: C) -> Self {
        Recorder {
            inner,
            exchanges: Vec::new(),
        }
    }

    /// The recorded exchanges, in order.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// The session file contents, exactly as kwctl writes it.
    pub fn session_yaml(&self) -> Result<String> {
        session_to_yaml(&self.exchanges)
    }
}

impl<C: Callbacks> Callbacks for Recorder<C> {
    fn kubernetes(&mut self, request: &KubernetesRequest) -> std::result::Result<Vec<u8>, String> {
        let answer = self.inner.kubernetes(request);
        let response = match &answer {
            Ok(payload) => ExchangeResponse::Success {
                payload: String::from_utf8_lossy(payload).into_owned(),
            },
            Err(message) => ExchangeResponse::Error {
                message: message.clone(),
            },
        };
        match request.to_session_string() {
            Ok(text) => self.exchanges.push(Exchange {
                request: text,
                response,
            }),
            Err(e) => return Err(e.to_string()),
        }
        answer
    }

    fn problems(&self) -> Vec<String> {
        self.inner.problems()
    }

    fn unused(&self) -> Vec<String> {
        self.inner.unused()
    }

    fn reset(&mut self) {
        self.inner.reset();
        self.exchanges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = r#"---
- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: Namespace
    name: team-a
    namespace: null
    disable_cache: false
  response:
    type: Success
    payload: '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a","labels":{"env":"prod"}}}'
- type: Exchange
  request: |
    !KubernetesListResourceAll
    api_version: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    label_selector: null
    field_selector: null
  response:
    type: Error
    message: 'boom'
"#;

    fn get(name: &str) -> KubernetesRequest {
        KubernetesRequest::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: name.into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        }
    }

    fn list_crb() -> KubernetesRequest {
        KubernetesRequest::KubernetesListResourceAll {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: "ClusterRoleBinding".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        }
    }

    #[test]
    fn parses_tagged_request_strings() {
        let s = ReplaySession::from_yaml_str(SESSION, "s").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s.exchanges[0].request, get("team-a"));
        assert_eq!(s.exchanges[1].request, list_crb());
    }

    #[test]
    fn replays_in_order() {
        let mut s = ReplaySession::from_yaml_str(SESSION, "s").unwrap();
        let ns: Value = serde_json::from_slice(&s.kubernetes(&get("team-a")).unwrap()).unwrap();
        assert_eq!(ns["metadata"]["labels"]["env"], "prod");
        assert_eq!(s.unused().len(), 1);
        assert_eq!(s.kubernetes(&list_crb()).unwrap_err(), "boom");
        assert!(s.problems().is_empty());
        assert!(s.unused().is_empty());
        // past the end
        assert!(s.kubernetes(&get("x")).is_err());
        assert_eq!(s.problems().len(), 1);
        assert!(s.problems()[0].contains("only 2 exchange(s)"));
        s.reset();
        assert!(s.problems().is_empty());
        assert_eq!(s.unused().len(), 2);
    }

    #[test]
    fn out_of_order_is_a_mismatch_with_diff() {
        let mut s = ReplaySession::from_yaml_str(SESSION, "s").unwrap();
        let err = s.kubernetes(&list_crb()).unwrap_err();
        assert!(err.starts_with("Replay error: unexpected request"));
        let p = s.problems();
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("exchange #1"), "{}", p[0]);
        assert!(p[0].contains("expected !KubernetesGetResource"), "{}", p[0]);

        let mut s = ReplaySession::from_yaml_str(SESSION, "s").unwrap();
        assert!(s.kubernetes(&get("team-b")).is_err());
        let p = s.problems();
        assert!(
            p[0].contains(r#"name: expected "team-a", got "team-b""#),
            "{}",
            p[0]
        );
    }

    #[test]
    fn field_masks_null_equals_absent() {
        let mut s = ReplaySession::from_yaml_str(SESSION, "s").unwrap();
        let payload = br#"{"api_version":"v1","kind":"Namespace","name":"team-a","namespace":null,"disable_cache":false,"field_masks":null}"#;
        let req = KubernetesRequest::from_host_call("get_resource", payload)
            .unwrap()
            .unwrap();
        assert!(s.kubernetes(&req).is_ok());
    }

    #[test]
    fn serializes_like_kwctl() {
        let ex = vec![Exchange {
            request: get("team-a").to_session_string().unwrap(),
            response: ExchangeResponse::Success {
                payload: r#"{"kind":"Namespace"}"#.into(),
            },
        }];
        let text = session_to_yaml(&ex).unwrap();
        assert!(text.starts_with("- type: Exchange\n  request: |\n    !KubernetesGetResource\n"));
        assert!(
            text.contains(
                "  response:\n    type: Success\n    payload: '{\"kind\":\"Namespace\"}'\n"
            )
        );
        let back = ReplaySession::from_yaml_str(&text, "t").unwrap();
        assert_eq!(back.exchanges[0].request, get("team-a"));
    }

    #[test]
    fn rejects_bad_sessions() {
        assert!(
            ReplaySession::from_yaml_str(
                "- type: Exchange\n  request: '!Bogus {}'\n  response: {type: Error, message: x}\n",
                "s"
            )
            .is_err()
        );
        assert!(ReplaySession::from_yaml_str("- type: Exchange\n  request: \"!KubernetesGetResource\\napi_version: v1\\nkind: Namespace\\nname: a\\nnamespace: null\\ndisable_cache: false\\n\"\n  response: {type: Success, payload: 'not json'}\n", "s").is_err());
        assert!(ReplaySession::from_yaml_str("", "s").unwrap().is_empty());
    }

    #[test]
    fn recorder_writes_a_replayable_session() {
        let objects = crate::ClusterObjects::new(vec![serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}
        })])
        .unwrap();
        let mut rec = Recorder::new(objects);
        let found = KubernetesRequest::from_host_call(
            "get_resource",
            br#"{"api_version":"v1","kind":"Namespace","name":"a","namespace":null,"disable_cache":false}"#,
        )
        .unwrap()
        .unwrap();
        let missing = KubernetesRequest::from_host_call(
            "get_resource",
            br#"{"api_version":"v1","kind":"Namespace","name":"b","namespace":null,"disable_cache":false}"#,
        )
        .unwrap()
        .unwrap();
        let a1 = rec.kubernetes(&found);
        let b1 = rec.kubernetes(&missing);
        assert_eq!(rec.exchanges().len(), 2);
        let yaml = rec.session_yaml().unwrap();
        let mut replay = ReplaySession::from_yaml_str(&yaml, "recorded").unwrap();
        assert_eq!(replay.kubernetes(&found), a1);
        assert_eq!(replay.kubernetes(&missing), b1);
        assert!(replay.problems().is_empty() && replay.unused().is_empty());
    }
}
