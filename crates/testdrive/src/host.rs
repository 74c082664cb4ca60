//! The waPC host: compiles a policy once, instantiates it per evaluation,
//! answers host callbacks and turns the guest's verdict into an
//! AdmissionResponse like policy-evaluator does.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wapc::WapcHost;
use wasmtime_provider::wasmtime;
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

use crate::callbacks::{KubernetesRequest, SharedCallbacks};
use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::request::{canonical_cow, canonicalize, validate_payload};

/// Length of one epoch tick of the execution deadline.
const TICK: Duration = Duration::from_millis(100);

/// Status of a rejected (or annotated) AdmissionResponse.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// Message shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HTTP-like status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// The AdmissionResponse the API server would receive, shaped like the
/// output of `kwctl run`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// UID of the request.
    pub uid: String,
    /// The verdict.
    pub allowed: bool,
    /// `JSONPatch` when [`AdmissionResponse::patch`] is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Base64 of the JSON Patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Message and code, when the policy gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResponseStatus>,
    /// Audit annotations returned by the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings returned by the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    /// The status message, if any.
    pub fn message(&self) -> Option<&str> {
        self.status.as_ref().and_then(|s| s.message.as_deref())
    }

    /// The status code, if any.
    pub fn code(&self) -> Option<u16> {
        self.status.as_ref().and_then(|s| s.code)
    }

    fn reject(uid: String, message: String, code: u16) -> Self {
        AdmissionResponse {
            uid,
            allowed: false,
            status: Some(ResponseStatus {
                message: Some(message),
                code: Some(code),
            }),
            ..Default::default()
        }
    }
}

/// The outcome of one `validate` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// What the API server gets.
    pub response: AdmissionResponse,
    /// The decoded JSON Patch (an array of operations) when the policy
    /// mutated the object; `None` when nothing changed.
    pub patch: Option<Value>,
    /// The object returned by the policy, when it returned one (even if
    /// it equals the original), in canonical key order.
    pub mutated_object: Option<Value>,
    /// Every host-call error returned to the guest during the evaluation
    /// (`<namespace>/<operation>: <message>`), for diagnostics.
    pub host_call_errors: Vec<String>,
}

/// The answer of `validate_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsValidation {
    /// Whether the settings are valid.
    pub valid: bool,
    /// Why they are not.
    #[serde(default)]
    pub message: Option<String>,
}

/// What the guest's `validate` returns.
#[derive(Debug, Deserialize)]
struct GuestResponse {
    accepted: bool,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    mutated_object: Option<Value>,
    #[serde(default)]
    audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
}

/// A compiled policy module.
///
/// Compiles the module once; every [`Host::instantiate`] (and therefore
/// every [`Host::validate`]) creates a fresh instance, as policy-server
/// does. Guest execution is bounded by a deadline (10 s by default), after
/// which the call fails like policy-server's policy timeout.
///
/// ```no_run
/// use serde_json::json;
/// let wasm = std::fs::read("target/wasm32-wasip1/release/pod_toleration_policy.wasm")?;
/// let host = testdrive::Host::load(&wasm, None)?;
/// assert!(host.validate_settings(&json!({}))?.valid);
/// let request = json!({"uid": "1", "operation": "CREATE", "object": {"kind": "Pod"}});
/// let eval = host.validate(&request, &json!({}), testdrive::shared(testdrive::NoCluster::default()))?;
/// println!("allowed: {}", eval.response.allowed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Host {
    engine: wasmtime::Engine,
    pre: WasmtimeEngineProviderPre,
    metadata: Option<Arc<Metadata>>,
    annotated: bool,
    wasm_size: usize,
    compile_time: Duration,
    timeout: Duration,
    verbose: bool,
    stop_ticker: Arc<AtomicBool>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("metadata", &self.metadata)
            .field("annotated", &self.annotated)
            .field("wasm_size", &self.wasm_size)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl Host {
    /// Compiles `wasm`. Metadata embedded in the module (by `kwctl
    /// annotate` or `testdrive annotate`) is used when present; otherwise
    /// `metadata` (typically the policy's `metadata.yml`). Without any
    /// metadata, every Kubernetes read is refused and mutation is allowed.
    pub fn load(wasm: &[u8], metadata: Option<Metadata>) -> Result<Host> {
        let embedded = Metadata::from_wasm(wasm)?;
        let annotated = embedded.is_some();
        let metadata = embedded.or(metadata).map(Arc::new);

        let started = Instant::now();
        let mut config = wasmtime::Config::default();
        config.epoch_interruption(true);
        // a trap's message is the trap itself, not a multi-line wasm backtrace
        config.wasm_backtrace_max_frames(None);
        // `TESTDRIVE_PERFMAP=1`: name the compiled guest functions for `perf` (README).
        if std::env::var_os("TESTDRIVE_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = wasmtime::Engine::new(&config).map_err(|e| Error::Wasm(e.to_string()))?;
        let pre = WasmtimeEngineProviderBuilder::new()
            .engine(engine.clone())
            .module_bytes(wasm)
            .build_pre()
            .map_err(|e| Error::Wasm(e.to_string()))?;
        let compile_time = started.elapsed();

        let stop_ticker = Arc::new(AtomicBool::new(false));
        let stop = stop_ticker.clone();
        let ticking = engine.clone();
        std::thread::Builder::new()
            .name("testdrive-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    ticking.increment_epoch();
                }
            })
            .map_err(|e| Error::Wasm(format!("cannot start the deadline ticker: {e}")))?;

        Ok(Host {
            engine,
            pre,
            metadata,
            annotated,
            wasm_size: wasm.len(),
            compile_time,
            timeout: Duration::from_secs(10),
            verbose: false,
            stop_ticker,
        })
    }

    /// The metadata in force (embedded or given), if any.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_deref()
    }

    /// Whether the module carries embedded metadata.
    pub fn is_annotated(&self) -> bool {
        self.annotated
    }

    /// Size of the module in bytes.
    pub fn wasm_size(&self) -> usize {
        self.wasm_size
    }

    /// How long compiling the module took.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Sets the per-call execution deadline (default 10 s).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Prints guest log events and host calls on stderr.
    pub fn set_verbose(&mut self, verbose: bool) {
        self.verbose = verbose;
    }

    /// The wasmtime engine (shared by all instances).
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.engine
    }

    /// Creates a fresh instance (runs the module's initialisation).
    pub fn instantiate(&self) -> Result<Instance> {
        let ticks = (self.timeout.as_millis() / TICK.as_millis()).max(1) as u64;
        let provider = self
            .pre
            .rehydrate(Some(EpochDeadlines {
                wapc_init: ticks,
                wapc_func: ticks,
            }))
            .map_err(|e| Error::Wasm(e.to_string()))?;
        let state = Arc::new(Mutex::new(CallState::default()));
        let callback = make_host_callback(state.clone(), self.metadata.clone(), self.verbose);
        let wapc = WapcHost::new(Box::new(provider), Some(callback))
            .map_err(|e| Error::Wasm(e.to_string()))?;
        Ok(Instance {
            wapc,
            state,
            metadata: self.metadata.clone(),
        })
    }

    /// Calls `protocol_version` on a fresh instance (`"v1"` for our policies).
    pub fn protocol_version(&self) -> Result<String> {
        self.instantiate()?.protocol_version()
    }

    /// Calls `validate_settings` on a fresh instance.
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        self.instantiate()?.validate_settings(settings)
    }

    /// Calls `validate` on a fresh instance, answering host callbacks with
    /// `callbacks`. See [`Instance::validate`].
    pub fn validate(
        &self,
        request: &Value,
        settings: &Value,
        callbacks: SharedCallbacks,
    ) -> Result<Evaluation> {
        self.instantiate()?.validate(request, settings, callbacks)
    }
}

#[derive(Default)]
struct CallState {
    callbacks: Option<SharedCallbacks>,
    errors: Vec<String>,
}

fn make_host_callback(
    state: Arc<Mutex<CallState>>,
    metadata: Option<Arc<Metadata>>,
    verbose: bool,
) -> Box<wapc::HostCallback> {
    Box::new(move |_id, binding, namespace, operation, payload| {
        let answer = dispatch(
            &state,
            metadata.as_deref(),
            verbose,
            binding,
            namespace,
            operation,
            payload,
        );
        if let Err(message) = &answer {
            if verbose {
                eprintln!(
                    "testdrive: host call {binding}/{namespace}/{operation} failed: {message}"
                );
            }
            if let Ok(mut s) = state.lock() {
                s.errors.push(format!("{namespace}/{operation}: {message}"));
            }
        }
        answer.map_err(Into::into)
    })
}

fn dispatch(
    state: &Mutex<CallState>,
    metadata: Option<&Metadata>,
    verbose: bool,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    if binding != "kubewarden" {
        return Err(format!("unknown binding: {binding}"));
    }
    match (namespace, operation) {
        ("tracing", "log") => {
            if verbose {
                eprintln!("guest log: {}", String::from_utf8_lossy(payload));
            }
            Ok(Vec::new())
        }
        ("tracing", _) => Err(format!("unknown operation: {operation}")),
        ("kubernetes", "can_i") => Err("kubernetes/can_i is not supported by testdrive".to_owned()),
        ("kubernetes", _) => {
            // policy-server and kwctl refuse a call outside the allowed host capabilities
            // with this text; testdrive allows exactly the metadata's hostCapabilities
            let capability = format!("{namespace}/{operation}");
            if metadata.is_some_and(|m| !m.allows_capability(&capability)) {
                return Err(format!(
                    "Policy has not been granted access to the '{capability}' host capability. \
                     The violation has been reported."
                ));
            }
            let request = KubernetesRequest::from_host_call(operation, payload)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("unknown operation: {operation}"))?;
            let allowed =
                metadata.is_some_and(|m| m.allows_resource(request.api_version(), request.kind()));
            if !allowed {
                return Err(format!(
                    "Policy has not been granted access to Kubernetes {}/{} resources. \
                     The violation has been reported.",
                    request.api_version(),
                    request.kind()
                ));
            }
            let callbacks = state
                .lock()
                .map_err(|_| "testdrive: internal lock poisoned".to_owned())?
                .callbacks
                .clone();
            let Some(callbacks) = callbacks else {
                return Err(
                    "testdrive: no cluster state is available outside of `validate`".to_owned(),
                );
            };
            // policy-evaluator hands a failed read to the guest as `Callback evaluation
            // failure: {error:?}`, the anyhow debug form with a stack backtrace after the
            // first line; the guest must read only that first line.
            let answer = callbacks
                .lock()
                .map_err(|_| "testdrive: callbacks lock poisoned".to_owned())?
                .kubernetes(&request)
                .map_err(|message| {
                    format!(
                        "Callback evaluation failure: {message}\n\nStack backtrace:\n   0: <host frames, as kwctl prints them>"
                    )
                });
            if verbose {
                match &answer {
                    Ok(bytes) => {
                        eprintln!("testdrive: {} -> {} bytes", request.summary(), bytes.len())
                    }
                    Err(e) => eprintln!("testdrive: {} -> error: {e}", request.summary()),
                }
            }
            answer
        }
        _ => Err(format!(
            "host capability {namespace}/{operation} is not supported by testdrive"
        )),
    }
}

/// One live instance of a policy. Reusing it across evaluations is what
/// `kwctl bench` does; policy-server uses a fresh one per request.
pub struct Instance {
    wapc: WapcHost,
    state: Arc<Mutex<CallState>>,
    metadata: Option<Arc<Metadata>>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").finish_non_exhaustive()
    }
}

impl Instance {
    fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.wapc.call(function, payload).map_err(|e| Error::Guest {
            function: function.to_owned(),
            message: e.to_string(),
        })
    }

    /// Calls `protocol_version`.
    pub fn protocol_version(&self) -> Result<String> {
        let reply = self.call("protocol_version", b"")?;
        serde_json::from_slice(&reply).map_err(|e| Error::parse("protocol_version reply", e))
    }

    /// Calls `validate_settings`. A trap is an [`Error::Guest`].
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        let payload = serde_json::to_vec(settings)
            .map_err(|e| Error::Invalid(format!("cannot serialize settings: {e}")))?;
        let reply = self.call("validate_settings", &payload)?;
        serde_json::from_slice(&reply).map_err(|e| Error::parse("validate_settings reply", e))
    }

    /// Calls `validate` with `{"request": request, "settings": settings}`.
    ///
    /// Like policy-evaluator: a guest error or trap is a rejection with code
    /// 500 and the error text; a `mutated_object` is turned into the JSON
    /// Patch against `request.object`, refused (rejection, code 500) on a
    /// DELETE request or when the metadata says `mutating: false`.
    pub fn validate(
        &self,
        request: &Value,
        settings: &Value,
        callbacks: SharedCallbacks,
    ) -> Result<Evaluation> {
        let payload = serialize_validate_payload(request, settings)?;
        self.validate_serialized(request, &payload, callbacks)
    }

    /// Like [`Instance::validate`] with the payload already serialised by
    /// [`serialize_validate_payload`] from `request` (benchmarks serialise once).
    pub fn validate_serialized(
        &self,
        request: &Value,
        payload: &[u8],
        callbacks: SharedCallbacks,
    ) -> Result<Evaluation> {
        {
            let mut s = self
                .state
                .lock()
                .map_err(|_| Error::Invalid("internal lock poisoned".into()))?;
            s.callbacks = Some(callbacks);
            s.errors.clear();
        }
        let reply = self.wapc.call("validate", payload);
        let host_call_errors = {
            let mut s = self
                .state
                .lock()
                .map_err(|_| Error::Invalid("internal lock poisoned".into()))?;
            s.callbacks = None;
            std::mem::take(&mut s.errors)
        };
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let guest = match reply {
            Err(e) => {
                return Ok(Evaluation {
                    response: AdmissionResponse::reject(uid, e.to_string(), 500),
                    patch: None,
                    mutated_object: None,
                    host_call_errors,
                });
            }
            Ok(bytes) => match serde_json::from_slice::<GuestResponse>(&bytes) {
                Ok(g) => g,
                Err(e) => {
                    return Ok(Evaluation {
                        response: AdmissionResponse::reject(
                            uid,
                            format!("cannot decode the policy's validation response: {e}"),
                            500,
                        ),
                        patch: None,
                        mutated_object: None,
                        host_call_errors,
                    });
                }
            },
        };
        let mut evaluation = finish(uid, request, guest, self.metadata.as_deref())?;
        evaluation.host_call_errors = host_call_errors;
        Ok(evaluation)
    }
}

/// The bytes of the `validate` payload the host sends for `request` and `settings`.
pub fn serialize_validate_payload(request: &Value, settings: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(&validate_payload(request, settings))
        .map_err(|e| Error::Invalid(format!("cannot serialize the request: {e}")))
}

/// Builds the AdmissionResponse from the guest's answer.
fn finish(
    uid: String,
    request: &Value,
    guest: GuestResponse,
    metadata: Option<&Metadata>,
) -> Result<Evaluation> {
    let status = (guest.message.is_some() || guest.code.is_some()).then(|| ResponseStatus {
        message: guest.message.clone(),
        code: guest.code,
    });
    let mut response = AdmissionResponse {
        uid: uid.clone(),
        allowed: guest.accepted,
        status,
        audit_annotations: guest.audit_annotations,
        warnings: guest.warnings,
        ..Default::default()
    };
    let mut patch = None;
    // The mutated object in canonical key order (sorted in place, not copied), as the
    // request object is sent: patches do not depend on the key order the policy keeps.
    let mut mutated_object = guest.mutated_object;
    if let Some(mutated) = &mut mutated_object {
        canonicalize(mutated);
    }
    if let (true, Some(mutated)) = (guest.accepted, &mutated_object) {
        let operation = request.get("operation").and_then(Value::as_str);
        if operation == Some("DELETE") {
            response = AdmissionResponse::reject(
                uid,
                "Request rejected: the policy returned a mutated object for a DELETE request; \
                 mutation of DELETE requests is not allowed"
                    .to_owned(),
                500,
            );
        } else if metadata.is_some_and(|m| !m.mutating) {
            response = AdmissionResponse::reject(
                uid,
                "Request rejected: the policy is not mutating (metadata `mutating: false`) \
                 but returned a mutated object"
                    .to_owned(),
                500,
            );
        } else {
            let original = canonical_cow(request.get("object").unwrap_or(&Value::Null));
            let ops = json_patch::diff(&original, mutated);
            if !ops.0.is_empty() {
                let bytes = serde_json::to_vec(&ops)
                    .map_err(|e| Error::Invalid(format!("cannot serialize patch: {e}")))?;
                response.patch_type = Some("JSONPatch".to_owned());
                response.patch = Some(base64::engine::general_purpose::STANDARD.encode(&bytes));
                patch = Some(
                    serde_json::to_value(&ops)
                        .map_err(|e| Error::Invalid(format!("cannot serialize patch: {e}")))?,
                );
            }
        }
    }
    Ok(Evaluation {
        response,
        patch,
        mutated_object,
        host_call_errors: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guest(v: Value) -> GuestResponse {
        serde_json::from_value(v).unwrap()
    }

    fn meta(mutating: bool) -> Metadata {
        Metadata {
            mutating,
            ..Default::default()
        }
    }

    #[test]
    fn accepted_without_mutation() {
        let req = json!({"uid": "u1", "operation": "CREATE", "object": {"a": 1}});
        let e = finish("u1".into(), &req, guest(json!({"accepted": true})), None).unwrap();
        assert_eq!(
            serde_json::to_value(&e.response).unwrap(),
            json!({"uid": "u1", "allowed": true})
        );
        assert_eq!(e.patch, None);
    }

    #[test]
    fn rejection_keeps_message_code_and_warnings() {
        let req = json!({"uid": "u1", "operation": "CREATE"});
        let e = finish(
            "u1".into(),
            &req,
            guest(json!({"accepted": false, "message": "no", "code": 403, "warnings": ["w"], "audit_annotations": {"k": "v"}})),
            None,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&e.response).unwrap(),
            json!({"uid": "u1", "allowed": false, "status": {"message": "no", "code": 403},
                   "warnings": ["w"], "auditAnnotations": {"k": "v"}})
        );
    }

    #[test]
    fn mutation_becomes_a_json_patch() {
        let req = json!({"uid": "u", "operation": "CREATE",
                         "object": {"spec": {"a": 1, "list": [1]}, "keep": true}});
        let mutated = json!({"spec": {"a": 2, "list": [1, 2], "b": "x"}, "keep": true});
        let e = finish(
            "u".into(),
            &req,
            guest(json!({"accepted": true, "mutated_object": mutated})),
            Some(&meta(true)),
        )
        .unwrap();
        let patch = e.patch.clone().unwrap();
        // applying the patch to the original yields the mutated object
        let mut doc = req["object"].clone();
        let ops: json_patch::Patch = serde_json::from_value(patch.clone()).unwrap();
        json_patch::patch(&mut doc, &ops).unwrap();
        assert_eq!(doc, mutated);
        assert_eq!(e.response.patch_type.as_deref(), Some("JSONPatch"));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(e.response.patch.unwrap())
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&decoded).unwrap(), patch);
    }

    #[test]
    fn identical_mutated_object_is_no_patch() {
        let req = json!({"uid": "u", "operation": "CREATE", "object": {"a": 1}});
        let e = finish(
            "u".into(),
            &req,
            guest(json!({"accepted": true, "mutated_object": {"a": 1}})),
            Some(&meta(true)),
        )
        .unwrap();
        assert!(e.response.allowed);
        assert_eq!(e.patch, None);
        assert_eq!(e.response.patch, None);
        assert!(e.mutated_object.is_some());
    }

    #[test]
    fn mutation_refused_on_delete_and_for_non_mutating_policies() {
        let del = json!({"uid": "u", "operation": "DELETE", "oldObject": {"a": 1}});
        let e = finish(
            "u".into(),
            &del,
            guest(json!({"accepted": true, "mutated_object": {"a": 2}})),
            Some(&meta(true)),
        )
        .unwrap();
        assert!(!e.response.allowed);
        assert!(
            e.response
                .message()
                .unwrap()
                .contains("mutation of DELETE requests is not allowed")
        );

        let create = json!({"uid": "u", "operation": "CREATE", "object": {"a": 1}});
        let e = finish(
            "u".into(),
            &create,
            guest(json!({"accepted": true, "mutated_object": {"a": 2}})),
            Some(&meta(false)),
        )
        .unwrap();
        assert!(!e.response.allowed);
        assert_eq!(e.response.code(), Some(500));
        assert!(e.response.message().unwrap().contains("not mutating"));
        assert_eq!(e.patch, None);
    }

    #[test]
    fn dispatch_enforces_context_aware_resources() {
        let state = Mutex::new(CallState::default());
        let m = Metadata::from_yaml_str(
            "contextAwareResources:\n- apiVersion: v1\n  kind: Namespace\n",
            "t",
        )
        .unwrap();
        let payload = br#"{"api_version":"v1","kind":"Pod","name":"a","namespace":"b","disable_cache":false}"#;
        let err = dispatch(
            &state,
            Some(&m),
            false,
            "kubewarden",
            "kubernetes",
            "get_resource",
            payload,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "Policy has not been granted access to Kubernetes v1/Pod resources. The violation has been reported."
        );
        let ns = br#"{"api_version":"v1","kind":"Namespace","name":"a","namespace":null,"disable_cache":false}"#;
        // allowed, but no callbacks outside validate
        assert!(
            dispatch(
                &state,
                Some(&m),
                false,
                "kubewarden",
                "kubernetes",
                "get_resource",
                ns
            )
            .unwrap_err()
            .contains("no cluster state")
        );
        state.lock().unwrap().callbacks = Some(crate::callbacks::shared(
            crate::ClusterObjects::new(vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
            ])
            .unwrap(),
        ));
        let reply = dispatch(
            &state,
            Some(&m),
            false,
            "kubewarden",
            "kubernetes",
            "get_resource",
            ns,
        )
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&reply).unwrap()["metadata"]["name"],
            "a"
        );
        // no metadata: everything refused
        assert!(
            dispatch(
                &state,
                None,
                false,
                "kubewarden",
                "kubernetes",
                "get_resource",
                ns
            )
            .is_err()
        );
        // other calls
        assert!(dispatch(&state, None, false, "kubewarden", "tracing", "log", b"{}").is_ok());
        assert!(
            dispatch(
                &state,
                None,
                false,
                "kubewarden",
                "kubernetes",
                "can_i",
                b"{}"
            )
            .unwrap_err()
            .contains("not supported")
        );
        assert!(
            dispatch(
                &state,
                None,
                false,
                "kubewarden",
                "oci",
                "v1/manifest_digest",
                b"{}"
            )
            .is_err()
        );
        assert!(
            dispatch(
                &state,
                None,
                false,
                "other",
                "kubernetes",
                "get_resource",
                ns
            )
            .is_err()
        );
        assert!(
            dispatch(
                &state,
                Some(&m),
                false,
                "kubewarden",
                "kubernetes",
                "delete_everything",
                ns
            )
            .is_err()
        );
    }
}
