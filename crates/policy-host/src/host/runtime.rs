//! The runtime: the wasmtime engine (epoch deadlines, as policy-server configures them), a
//! policy compiled once, and a fresh waPC instance per evaluation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use wapc::WapcHost;
use wasmtime_provider::wasmtime;
use wasmtime_provider::{
    EpochDeadlines, ResourceLimits, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre,
};

use crate::callbacks::SharedCallbacks;
use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::request::validate_payload;

/// The environment variable naming a directory where compiled modules are cached between
/// processes (README "Make targets"); unset, every process compiles its modules.
pub const MODULE_CACHE_ENV: &str = "TENANCY_WASM_CACHE";

/// The compiled-module cache of [`MODULE_CACHE_ENV`], one for every engine of the process;
/// `None` when unset or unusable (modules are then compiled as usual).
fn module_cache() -> Option<wasmtime::Cache> {
    static CACHE: OnceLock<Option<wasmtime::Cache>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let dir = std::path::absolute(std::env::var_os(MODULE_CACHE_ENV)?).ok()?;
            let mut config = wasmtime::CacheConfig::new();
            config.with_directory(dir);
            wasmtime::Cache::new(config).ok()
        })
        .clone()
}

/// Bytes in a wasm page, the unit in which linear memory grows.
const WASM_PAGE: usize = 64 * 1024;
/// The most pages a 32-bit linear memory can have (4 GiB).
const MAX_PAGES: usize = 65_536;

/// Length of one epoch tick of the execution deadline.
const TICK: Duration = Duration::from_millis(100);

use super::dispatch::{CallState, make_host_callback};
use super::response::{AdmissionResponse, Evaluation, GuestResponse, SettingsValidation, finish};

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
/// let host = policy_host::Host::load(&wasm, None)?;
/// assert!(host.validate_settings(&json!({}))?.valid);
/// let request = json!({"uid": "1", "operation": "CREATE", "object": {"kind": "Pod"}});
/// let eval = host.validate(&request, &json!({}), policy_host::shared(policy_host::NoCluster::default()))?;
/// println!("allowed: {}", eval.response.allowed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Host {
    engine: wasmtime::Engine,
    module: wasmtime::Module,
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
        config.cache(module_cache());
        // `TESTDRIVE_PERFMAP=1`: name the compiled guest functions for `perf` (README).
        if std::env::var_os("TESTDRIVE_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = wasmtime::Engine::new(&config).map_err(|e| Error::Wasm(e.to_string()))?;
        let module =
            wasmtime::Module::new(&engine, wasm).map_err(|e| Error::Wasm(e.to_string()))?;
        let pre = WasmtimeEngineProviderBuilder::new()
            .engine(engine.clone())
            .module(module.clone())
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
            module,
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
        self.instantiate_from(&self.pre)
    }

    /// A fresh instance of `pre` (this host's module, with or without limits).
    fn instantiate_from(&self, pre: &WasmtimeEngineProviderPre) -> Result<Instance> {
        let ticks = (self.timeout.as_millis() / TICK.as_millis()).max(1) as u64;
        let provider = pre
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

    /// Like [`Host::validate`] with the instance's linear memory limited to `max_memory`
    /// bytes: a guest whose memory cannot grow aborts (a 500 rejection); `None` when the
    /// limit is below what the module starts with.
    pub fn validate_within(
        &self,
        request: &Value,
        settings: &Value,
        callbacks: SharedCallbacks,
        max_memory: usize,
    ) -> Result<Option<Evaluation>> {
        let payload = serialize_validate_payload(request, settings)?;
        self.validate_serialized_within(request, &payload, callbacks, max_memory)
    }

    /// [`Host::validate_within`] with the payload already serialised.
    fn validate_serialized_within(
        &self,
        request: &Value,
        payload: &[u8],
        callbacks: SharedCallbacks,
        max_memory: usize,
    ) -> Result<Option<Evaluation>> {
        let pre = WasmtimeEngineProviderBuilder::new()
            .engine(self.engine.clone())
            .module(self.module.clone())
            .enable_resource_limits(ResourceLimits {
                max_memory_size: Some(max_memory),
                max_table_elements: None,
            })
            .build_pre()
            .map_err(|e| Error::Wasm(e.to_string()))?;
        let Ok(instance) = self.instantiate_from(&pre) else {
            return Ok(None);
        };
        instance
            .validate_serialized(request, payload, callbacks)
            .map(Some)
    }

    /// The pages of linear memory the module starts with (its exported memory's minimum).
    fn initial_pages(&self) -> usize {
        self.module
            .exports()
            .find_map(|export| export.ty().memory().map(|m| m.minimum()))
            .and_then(|pages| usize::try_from(pages).ok())
            .unwrap_or(1)
            .max(1)
    }

    /// The peak linear memory, in bytes, of a fresh instance evaluating `request` with
    /// `settings`: the smallest limit (whole wasm pages) under which
    /// [`Host::validate_within`] answers as [`Host::validate`] does. A guest whose memory
    /// cannot grow aborts, so any smaller limit changes the answer. `callbacks` gives each
    /// probe its own cluster.
    pub fn peak_memory(
        &self,
        request: &Value,
        settings: &Value,
        callbacks: &dyn Fn() -> SharedCallbacks,
    ) -> Result<usize> {
        let payload = serialize_validate_payload(request, settings)?;
        let expected = self
            .instantiate()?
            .validate_serialized(request, &payload, callbacks())?;
        let answers_alike = |pages: usize| -> Result<bool> {
            let answer =
                self.validate_serialized_within(request, &payload, callbacks(), pages * WASM_PAGE)?;
            Ok(answer.as_ref() == Some(&expected))
        };
        // from the memory the module starts with, doubling to a limit that suffices, then
        // bisecting below it
        let initial = self.initial_pages();
        if answers_alike(initial)? {
            return Ok(initial * WASM_PAGE);
        }
        let mut too_few = initial;
        let mut enough = initial * 2;
        while !answers_alike(enough)? {
            if enough >= MAX_PAGES {
                return Err(Error::Invalid(format!(
                    "the evaluation needs more than {MAX_PAGES} wasm pages, or answers \
                     differently every time"
                )));
            }
            too_few = enough;
            enough = (enough * 2).min(MAX_PAGES);
        }
        while enough - too_few > 1 {
            let middle = too_few + (enough - too_few) / 2;
            if answers_alike(middle)? {
                enough = middle;
            } else {
                too_few = middle;
            }
        }
        Ok(enough * WASM_PAGE)
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
    /// Patch against `request.object` by the rules of [`super::response`].
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
