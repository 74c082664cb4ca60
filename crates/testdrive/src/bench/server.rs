//! `testdrive bench-server`: the `bench.yaml` scenarios served by the real policy-server and
//! driven by `wrk` on loopback, beside the host floor and Kubewarden's own policies.
//!
//! Every scenario becomes three kinds of policy-server policies, all loaded in one
//! policy-server (a fresh wasm instance per request, the settings handed over each time):
//! ours; the **floor**, the same module, settings and payload with operation `CONNECT`, which
//! every policy of the bundle accepts before reading its settings; and the Kubewarden
//! policies the entry names under `kubewarden:` (module from the anchors directory), with the
//! same request. Beside each Kubewarden pair, the **no-op guest** ([`super::noop`]) takes the
//! same request and our settings: a policy that reads neither, whose ratio to Kubewarden's is
//! the most any policy with these settings can reach. Each is checked once (its verdict must
//! be testdrive's; the floor's and the no-op guest's must be an accept), then loaded by `wrk`
//! for the set duration.
//!
//! A scenario whose policy reads the cluster is answered by a [`FakeApi`] built from the
//! exchanges testdrive records while judging it (its replay session or `cluster:` objects),
//! which policy-server reaches through a kubeconfig. Scenarios whose cluster states agree
//! share one policy-server; one whose state contradicts another's gets its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::bench::goals::{Cost, Goals, RunResult, noop_ratios, ratio};
use crate::bench::load::{Load, Measurement, WRK_SCRIPT, perf_available};
use crate::bench::{BenchKind, BenchScenario, FLOOR_OPERATION, load_bench_file};
use crate::cases::{compact, policy_metadata, policy_name, wasm_file_name};
use crate::http::{http_get, http_post};
use crate::kube::apiserver::FakeApi;
use policy_host::callbacks::{NoCluster, shared};
use policy_host::error::{Error, Result};
use policy_host::host::Host;
use policy_host::replay::Recorder;

/// Options of [`run`].
#[derive(Debug, Clone)]
pub struct ServerBenchOptions {
    /// The policy-server binary.
    pub policy_server: PathBuf,
    /// Kubewarden's annotated policies (`<module>.wasm`).
    pub anchors_dir: PathBuf,
    /// Our plain modules (for testdrive's verdicts).
    pub wasm_dir: PathBuf,
    /// Our annotated modules (`<policy>.wasm`), as policy-server loads them.
    pub annotated_dir: PathBuf,
    /// Where policies.yml, bodies and logs go.
    pub work_dir: PathBuf,
    /// Load duration per measurement.
    pub seconds: u64,
    /// wrk connections.
    pub connections: usize,
    /// policy-server's port (its readiness probe uses the next one).
    pub port: u16,
}

/// One policy-server policy to measure.
#[derive(Debug, Clone)]
struct Target {
    id: String,
    module: PathBuf,
    settings: Value,
    mutating: bool,
    /// `contextAwareResources` of its metadata.
    context_aware: Vec<Value>,
    /// `hostCapabilities` of its metadata.
    host_capabilities: Vec<String>,
    body: PathBuf,
    /// The verdict it must give.
    expect_allowed: Option<bool>,
    /// Its instance's peak linear memory in testdrive, in bytes (`None`: not measurable).
    peak_memory: Option<usize>,
}

/// One table row: our scenario, its floor and its Kubewarden equivalents.
#[derive(Debug, Clone)]
struct Row {
    policy: String,
    scenario: String,
    /// Entry count of a scaled scenario.
    entries: Option<usize>,
    ours: Target,
    floor: Target,
    anchors: Vec<(String, Target)>,
    /// The no-op guest on the same request and settings, when there are Kubewarden
    /// equivalents.
    noop: Option<Target>,
    /// What the cluster answers to its lookups.
    cluster: FakeApi,
    /// Its lookups and whether it mutates: the floor share it is held to.
    cost: Cost,
}

/// Measurements of each target of a row, alternated this many times.
const RUNS: usize = 2;

/// Runs every policy's bench scenarios in policy-server and prints the table and the goals;
/// whether every scenario could be measured (goals are reported, not enforced).
pub fn run(dirs: &[PathBuf], options: &ServerBenchOptions) -> Result<bool> {
    std::fs::create_dir_all(&options.work_dir).map_err(|e| Error::io(&options.work_dir, e))?;
    let work_dir =
        std::path::absolute(&options.work_dir).map_err(|e| Error::io(&options.work_dir, e))?;
    let noop = work_dir.join(NOOP_FILE);
    std::fs::write(&noop, super::noop::annotated_module()?).map_err(|e| Error::io(&noop, e))?;
    let mut anchors = AnchorHosts::default();
    let mut rows = Vec::new();
    for dir in dirs {
        rows.extend(policy_rows(dir, &work_dir, options, &mut anchors)?);
    }
    let script = work_dir.join(WRK_SCRIPT_FILE);
    std::fs::write(&script, WRK_SCRIPT).map_err(|e| Error::io(&script, e))?;
    let perf = perf_available();
    let load = Load {
        port: options.port,
        connections: options.connections,
        seconds: options.seconds,
        script: &script,
        perf,
    };
    let batches = batches(rows);
    println!(
        "{} scenarios in {} policy-server run(s) of {} (wrk, {} connections, {} s each; \
         ours, floor and Kubewarden's alternated, {RUNS} runs)",
        batches.iter().map(|b| b.rows.len()).sum::<usize>(),
        batches.len(),
        options.policy_server.display(),
        options.connections,
        options.seconds
    );
    if perf {
        println!(
            "per request: page faults and CPU time of the policy-server process (perf stat), \
             instructions where the machine counts them; peak: the instance's linear memory"
        );
    } else {
        println!("perf stat is not available: no page faults or CPU time per request");
    }
    let mut goals = Goals::default();
    let mut failed = 0;
    for (n, batch) in batches.into_iter().enumerate() {
        failed += run_batch(n, batch, &work_dir, &load, options, &mut goals)?;
    }
    goals.print();
    if failed > 0 {
        println!("{failed} scenarios could not be measured");
    }
    Ok(failed == 0)
}

/// Kubewarden's modules compiled in testdrive, by file (their peak memory is measured there).
#[derive(Default)]
struct AnchorHosts(std::collections::HashMap<PathBuf, Option<Host>>);

impl AnchorHosts {
    /// The peak memory of `module` judging `request` with `settings`, if it loads and runs.
    fn peak_memory(&mut self, module: &Path, request: &Value, settings: &Value) -> Option<usize> {
        let host = self
            .0
            .entry(module.to_path_buf())
            .or_insert_with(|| {
                let wasm = std::fs::read(module).ok()?;
                Host::load(&wasm, None).ok()
            })
            .as_ref()?;
        host.peak_memory(request, settings, &|| shared(NoCluster::default()))
            .ok()
    }
}

/// Rows measured in one policy-server, against one cluster state.
struct Batch {
    cluster: FakeApi,
    rows: Vec<Row>,
}

/// Groups the rows so that each batch's rows agree on every answer of the cluster.
fn batches(rows: Vec<Row>) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for row in rows {
        match batches
            .iter_mut()
            .find_map(|b| b.cluster.merge(&row.cluster).then_some(b))
        {
            Some(batch) => batch.rows.push(row),
            None => batches.push(Batch {
                cluster: row.cluster.clone(),
                rows: vec![row],
            }),
        }
    }
    batches
}

/// Starts the batch's cluster and policy-server, measures and prints its rows; how many
/// could not be measured.
fn run_batch(
    n: usize,
    batch: Batch,
    work_dir: &Path,
    load: &Load<'_>,
    options: &ServerBenchOptions,
    goals: &mut Goals,
) -> Result<usize> {
    let policies: Map<String, Value> = batch
        .rows
        .iter()
        .flat_map(|r| {
            [&r.ours, &r.floor]
                .into_iter()
                .chain(r.anchors.iter().map(|(_, t)| t))
                .chain(&r.noop)
        })
        .map(|t| {
            let binding = Binding {
                mutating: t.mutating,
                context_aware: &t.context_aware,
                host_capabilities: &t.host_capabilities,
            };
            let module = format!("file://{}", t.module.display());
            (t.id.clone(), binding.entry(module, &t.settings))
        })
        .collect();
    let policies_file = work_dir.join(format!("policies-{n}.yml"));
    std::fs::write(&policies_file, Value::Object(policies).to_string())
        .map_err(|e| Error::io(&policies_file, e))?;
    let cluster = batch.cluster.serve()?;
    let kubeconfig = work_dir.join(format!("kubeconfig-{n}.yml"));
    cluster.write_kubeconfig(&kubeconfig)?;
    let mut server = PolicyServer::start(
        &options.policy_server,
        &policies_file,
        &kubeconfig,
        work_dir,
        options.port,
        None,
    )?;
    let pid = server.pid();
    let mut failed = 0;
    for row in &batch.rows {
        let measured = (0..RUNS)
            .map(|_| measure_row(row, load, pid))
            .collect::<Result<Vec<_>>>();
        match measured {
            Ok(runs) => {
                let name = format!("{} › {}", row.policy, row.scenario);
                print_row(&name, row, &runs);
                goals.record(&name, row.entries, row.cost, &runs);
            }
            Err(e) => {
                failed += 1;
                println!("{} › {}: not measured: {e}", row.policy, row.scenario);
            }
        }
    }
    server.stop();
    Ok(failed)
}

/// One run of a row: ours, its floor, each Kubewarden equivalent, then the no-op guest.
fn measure_row(row: &Row, load: &Load<'_>, pid: u32) -> Result<RunResult> {
    let ours = measure(&row.ours, load, pid)?;
    let floor = measure(&row.floor, load, pid)?;
    let theirs = row
        .anchors
        .iter()
        .map(|(name, target)| Ok((name.clone(), measure(target, load, pid)?)))
        .collect::<Result<Vec<_>>>()?;
    let noop = row
        .noop
        .as_ref()
        .map(|target| measure(target, load, pid))
        .transpose()?;
    Ok(RunResult {
        ours,
        floor,
        theirs,
        noop,
    })
}

/// What a policies.yml entry says of a policy besides its module and settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding<'a> {
    /// `allowedToMutate`.
    pub(crate) mutating: bool,
    /// `contextAwareResources`.
    pub(crate) context_aware: &'a [Value],
    /// `hostCapabilities`.
    pub(crate) host_capabilities: &'a [String],
}

impl Binding<'_> {
    /// The policies.yml entry of `module` (a `file://` or `registry://` URI) with `settings`.
    pub(crate) fn entry(&self, module: String, settings: &Value) -> Value {
        json!({
            "module": module,
            "settings": settings,
            "allowedToMutate": self.mutating,
            "contextAwareResources": self.context_aware,
            "hostCapabilities": self.host_capabilities,
        })
    }
}

/// One policy as policy-server is given it: its annotated module and what its binding says.
pub(crate) struct PolicyBinding {
    /// The policy's name.
    pub(crate) policy: String,
    /// The annotated module, absolute.
    pub(crate) module: PathBuf,
    /// `allowedToMutate`.
    pub(crate) mutating: bool,
    /// `contextAwareResources`.
    pub(crate) context_aware: Vec<Value>,
    /// `hostCapabilities`.
    pub(crate) host_capabilities: Vec<String>,
    /// The module in testdrive, which judges each scenario first.
    pub(crate) host: Host,
    /// The metadata's rules: the requests the API server routes to the policy.
    pub(crate) rules: Vec<Value>,
}

impl PolicyBinding {
    /// Reads the policy directory's metadata, its module from `wasm_dir` and its annotated
    /// module from `annotated_dir` (which must exist).
    pub(crate) fn load(dir: &Path, wasm_dir: &Path, annotated_dir: &Path) -> Result<Self> {
        let policy = policy_name(dir);
        let wasm_path = wasm_dir.join(wasm_file_name(dir));
        let wasm = std::fs::read(&wasm_path).map_err(|e| Error::io(&wasm_path, e))?;
        let metadata = policy_metadata(dir)?;
        let module = std::path::absolute(annotated_dir.join(format!("{policy}.wasm")))
            .map_err(|e| Error::io(annotated_dir, e))?;
        if !module.is_file() {
            return Err(Error::Invalid(format!(
                "{} is missing (make annotate)",
                module.display()
            )));
        }
        Ok(PolicyBinding {
            policy,
            module,
            mutating: metadata.as_ref().is_some_and(|m| m.mutating),
            context_aware: metadata
                .iter()
                .flat_map(|m| &m.context_aware_resources)
                .map(|r| json!({"apiVersion": r.api_version, "kind": r.kind}))
                .collect(),
            host_capabilities: metadata
                .iter()
                .flat_map(|m| m.host_capabilities.iter().flatten().cloned())
                .collect(),
            rules: metadata.iter().flat_map(|m| m.rules.clone()).collect(),
            host: Host::load(&wasm, metadata)?,
        })
    }

    /// What policies.yml says of this policy besides its module and settings.
    pub(crate) fn binding(&self) -> Binding<'_> {
        Binding {
            mutating: self.mutating,
            context_aware: &self.context_aware,
            host_capabilities: &self.host_capabilities,
        }
    }

    /// A target of this binding: `module` with `settings`, driven with `body`.
    fn target(
        &self,
        id: String,
        module: PathBuf,
        settings: Value,
        body: PathBuf,
        expect_allowed: Option<bool>,
    ) -> Target {
        Target {
            id,
            module,
            settings,
            mutating: self.mutating,
            context_aware: self.context_aware.clone(),
            host_capabilities: self.host_capabilities.clone(),
            body,
            expect_allowed,
            peak_memory: None,
        }
    }
}

/// The rows of one policy directory (nothing when it has no `bench.yaml`).
fn policy_rows(
    dir: &Path,
    work_dir: &Path,
    options: &ServerBenchOptions,
    anchor_hosts: &mut AnchorHosts,
) -> Result<Vec<Row>> {
    let bench_file = dir.join("bench.yaml");
    if !bench_file.is_file() {
        return Ok(Vec::new());
    }
    let binding = PolicyBinding::load(dir, &options.wasm_dir, &options.annotated_dir)?;
    let mut rows = Vec::new();
    for (n, bench) in load_bench_file(&bench_file)?.into_iter().enumerate() {
        if let Some(row) = scenario_row(&binding, n, &bench, work_dir, options, anchor_hosts)? {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Writes `request` as the AdmissionReview body `<id><suffix>.json`.
pub(crate) fn write_review(
    work_dir: &Path,
    id: &str,
    suffix: &str,
    request: &Value,
) -> Result<PathBuf> {
    let path = work_dir.join(format!("{id}{suffix}.json"));
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    });
    std::fs::write(&path, compact(&review)).map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

/// The row of the `n`th bench scenario: ours, the floor, Kubewarden's anchors, and the
/// cluster the fake API server must serve (recorded while testdrive judges the scenario).
fn scenario_row(
    binding: &PolicyBinding,
    n: usize,
    bench: &BenchScenario,
    work_dir: &Path,
    options: &ServerBenchOptions,
    anchor_hosts: &mut AnchorHosts,
) -> Result<Option<Row>> {
    let scenario = &bench.scenario;
    let Some(request) = &scenario.request else {
        return Ok(None);
    };
    let recorder = shared(Recorder::new(scenario.cluster.callbacks()));
    let eval = binding
        .host
        .validate(request, &scenario.settings, recorder.clone())?;
    let (cluster, lookups) = {
        let recorder = recorder
            .lock()
            .map_err(|_| Error::Invalid("recorder lock poisoned".into()))?;
        let exchanges = recorder.exchanges();
        (FakeApi::from_exchanges(exchanges)?, exchanges.len())
    };
    let cost = Cost::of(lookups, eval.patch.is_some());
    let fresh_cluster = || scenario.cluster.callbacks();
    let peak = |request: &Value| {
        binding
            .host
            .peak_memory(request, &scenario.settings, &fresh_cluster)
            .ok()
    };
    let id = format!("{}-{n}", binding.policy.trim_end_matches("-policy"));
    let mut floor_request = request.clone();
    if let Some(map) = floor_request.as_object_mut() {
        map.insert("operation".into(), Value::String(FLOOR_OPERATION.into()));
    }
    let ours_body = write_review(work_dir, &id, "", request)?;
    let anchors = bench
        .anchors
        .iter()
        .map(|a| {
            let module = options.anchors_dir.join(format!("{}.wasm", a.module));
            let module = std::path::absolute(&module).map_err(|e| Error::io(&module, e))?;
            let id = format!("{id}-kw-{}", a.module);
            let peak_memory = anchor_hosts.peak_memory(&module, request, &a.settings);
            let target = binding.target(id, module, a.settings.clone(), ours_body.clone(), None);
            // Kubewarden's policy reads no cluster: it is granted nothing
            let target = Target {
                context_aware: Vec::new(),
                host_capabilities: Vec::new(),
                peak_memory,
                ..target
            };
            Ok((a.module.clone(), target))
        })
        .collect::<Result<Vec<_>>>()?;
    let settings = &scenario.settings;
    let noop = (!anchors.is_empty())
        .then(|| noop_target(&id, work_dir, request, settings, &ours_body, anchor_hosts));
    Ok(Some(Row {
        policy: binding.policy.clone(),
        scenario: bench.name.clone(),
        entries: match bench.kind {
            BenchKind::Scaled { entries, .. } => Some(entries),
            _ => None,
        },
        ours: Target {
            peak_memory: peak(request),
            ..binding.target(
                id.clone(),
                binding.module.clone(),
                settings.clone(),
                ours_body,
                Some(eval.response.allowed),
            )
        },
        floor: Target {
            peak_memory: peak(&floor_request),
            ..binding.target(
                format!("{id}-floor"),
                binding.module.clone(),
                settings.clone(),
                write_review(work_dir, &id, "-floor", &floor_request)?,
                Some(true),
            )
        },
        anchors,
        noop,
        cluster,
        cost,
    }))
}

/// The no-op guest ([`super::noop`], written to the work directory by [`run`]) taking the
/// request of row `id` from `body`, handed our policy's `settings`: policy-server's cost of
/// handing them over is part of what no policy with these settings can avoid.
fn noop_target(
    id: &str,
    work_dir: &Path,
    request: &Value,
    settings: &Value,
    body: &Path,
    anchor_hosts: &mut AnchorHosts,
) -> Target {
    let module = work_dir.join(NOOP_FILE);
    Target {
        id: format!("{id}-noop"),
        peak_memory: anchor_hosts.peak_memory(&module, request, settings),
        module,
        settings: settings.clone(),
        mutating: false,
        context_aware: Vec::new(),
        host_capabilities: Vec::new(),
        body: body.to_path_buf(),
        expect_allowed: Some(true),
    }
}

/// A running policy-server, stopped on drop.
pub(crate) struct PolicyServer {
    child: Child,
}

impl PolicyServer {
    /// Starts `binary` on `policies` (its log beside them, `<policies>.log`), listening on
    /// `port` and answering readiness on the next one, its lookups sent to the cluster of
    /// `kubeconfig`, its downloads and Sigstore cache in `work_dir`, and `sources` (insecure
    /// registries, ...) when given; returns once it is ready.
    pub(crate) fn start(
        binary: &Path,
        policies: &Path,
        kubeconfig: &Path,
        work_dir: &Path,
        port: u16,
        sources: Option<&Path>,
    ) -> Result<Self> {
        let log_path = policies.with_extension("log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
        let err = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
        let readiness = port + 1;
        let mut command = Command::new(binary);
        if let Some(sources) = sources {
            command.arg("--sources-path").arg(sources);
        }
        let child = command
            .arg("--policies")
            .arg(policies)
            .args(["--addr", "127.0.0.1", "--port", &port.to_string()])
            .args(["--readiness-probe-port", &readiness.to_string()])
            .env("KUBECONFIG", kubeconfig)
            .arg("--policies-download-dir")
            .arg(work_dir.join("downloads"))
            .arg("--sigstore-cache-dir")
            .arg(work_dir.join("sigstore"))
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| Error::io(binary, e))?;
        let mut server = PolicyServer { child };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(Error::Invalid(format!(
                    "policy-server exited ({status}); see {}",
                    log_path.display()
                )));
            }
            if matches!(http_get(readiness, "/readiness"), Ok((200, _))) {
                return Ok(server);
            }
            if Instant::now() > deadline {
                server.stop();
                return Err(Error::Invalid(format!(
                    "policy-server not ready after 300 s; see {}",
                    log_path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM` of
    /// `/proc/<pid>/status`; `None` where there is no procfs).
    pub(crate) fn memory_kib(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Stops the server (kill, then wait).
    pub(crate) fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PolicyServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Checks the target's verdict, then loads it with wrk (and perf stat, when available).
fn measure(target: &Target, load: &Load<'_>, pid: u32) -> Result<Measurement> {
    let body = std::fs::read(&target.body).map_err(|e| Error::io(&target.body, e))?;
    let path = format!("/validate/{}", target.id);
    let (status, answer) = http_post(load.port, &path, &body)?;
    let allowed = serde_json::from_slice::<Value>(&answer)
        .ok()
        .and_then(|v| v.pointer("/response/allowed").and_then(Value::as_bool));
    let excerpt = || {
        String::from_utf8_lossy(&answer)
            .chars()
            .take(300)
            .collect::<String>()
    };
    if status != 200 || allowed.is_none() {
        return Err(Error::Invalid(format!(
            "{}: policy-server answered {status}: {}",
            target.id,
            excerpt()
        )));
    }
    if let Some(expected) = target.expect_allowed
        && allowed != Some(expected)
    {
        return Err(Error::Invalid(format!(
            "{}: policy-server's verdict allowed={allowed:?} differs from testdrive's {expected}: {}",
            target.id,
            excerpt()
        )));
    }
    load.measure(pid, &path, &target.body)
}

/// The wrk script's file name (in the work directory).
const WRK_SCRIPT_FILE: &str = "post.lua";

/// The annotated no-op guest's file name (in the work directory).
const NOOP_FILE: &str = "noop-guest.wasm";

/// req/s of every run, `a / b`.
fn rates(runs: &[Measurement]) -> String {
    runs.iter()
        .map(|m| format!("{:.0}", m.throughput.requests_per_second))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Page faults, CPU µs (and instructions) per request of every run, and the peak memory.
fn costs(runs: &[Measurement], peak: Option<usize>) -> String {
    let per_run: Vec<String> = runs
        .iter()
        .filter_map(|m| m.per_request)
        .map(|c| {
            let instructions = c
                .instructions
                .map(|i| format!(", {:.0}k instr", i / 1e3))
                .unwrap_or_default();
            format!(
                "{:.1} faults, {:.0} µs{instructions}",
                c.page_faults,
                1e3 * c.task_clock_ms
            )
        })
        .collect();
    let peak = peak.map_or("peak ?".to_owned(), |b| format!("peak {} KiB", b / 1024));
    if per_run.is_empty() {
        peak
    } else {
        format!("{}; {peak}", per_run.join(" / "))
    }
}

fn print_row(name: &str, row: &Row, runs: &[RunResult]) {
    let ours: Vec<Measurement> = runs.iter().map(|r| r.ours).collect();
    let floor: Vec<Measurement> = runs.iter().map(|r| r.floor).collect();
    let shares: Vec<String> = runs
        .iter()
        .map(|r| {
            format!(
                "{:.0}%",
                100.0 * r.ours.throughput.requests_per_second
                    / r.floor.throughput.requests_per_second
            )
        })
        .collect();
    println!(
        "{name}\n    ours {} req/s, floor {} req/s: {} of the floor",
        rates(&ours),
        rates(&floor),
        shares.join(" / ")
    );
    println!(
        "    ours  per request: {}",
        costs(&ours, row.ours.peak_memory)
    );
    println!(
        "    floor per request: {}",
        costs(&floor, row.floor.peak_memory)
    );
    for (k, (module, target)) in row.anchors.iter().enumerate() {
        let theirs: Vec<Measurement> = runs
            .iter()
            .filter_map(|r| r.theirs.get(k).map(|(_, m)| *m))
            .collect();
        let ratios: Vec<String> = runs
            .iter()
            .zip(&theirs)
            .map(|(r, t)| format!("{:.2}×", ratio(&r.ours, t)))
            .collect();
        println!(
            "    Kubewarden {module}: {} req/s, ours ÷ theirs {}; per request: {}",
            rates(&theirs),
            ratios.join(" / "),
            costs(&theirs, target.peak_memory)
        );
    }
    print_noop(row, runs);
}

/// The no-op guest's line of a row: its rates, its ratio to each Kubewarden equivalent (the
/// most any policy reaches) and its costs.
fn print_noop(row: &Row, runs: &[RunResult]) {
    let Some(target) = &row.noop else {
        return;
    };
    let noop: Vec<Measurement> = runs.iter().filter_map(|r| r.noop).collect();
    let ceilings: Vec<String> = row
        .anchors
        .iter()
        .enumerate()
        .map(|(k, (module, _))| format!("{} {module}", noop_ratios(runs, k).join(" / ")))
        .collect();
    println!(
        "    no-op guest (reads nothing): {} req/s, {}; per request: {}",
        rates(&noop),
        ceilings.join(", "),
        costs(&noop, target.peak_memory)
    );
}
