//! `testdrive bench-server`: the `bench.yaml` scenarios served by the real policy-server and
//! driven by `wrk` on loopback, beside the host floor and Kubewarden's own policies.
//!
//! Every scenario becomes three kinds of policy-server policies, all loaded in one
//! policy-server (a fresh wasm instance per request, the settings handed over each time):
//! ours; the **floor**, the same module, settings and payload with operation `CONNECT`, which
//! every policy of the bundle accepts before reading its settings; and the Kubewarden
//! policies the entry names under `kubewarden:` (module from the anchors directory), with the
//! same request. Each is checked once (its verdict must be testdrive's; the floor's must be
//! an accept), then loaded by `wrk` for the set duration.
//!
//! A scenario whose policy reads the cluster is answered by a [`FakeApi`] built from the
//! exchanges testdrive records while judging it (its replay session or `cluster:` objects),
//! which policy-server reaches through a kubeconfig. Scenarios whose cluster states agree
//! share one policy-server; one whose state contradicts another's gets its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::bench::{BenchKind, BenchScenario, FLOOR_OPERATION, load_bench_file};
use crate::cases::{compact, policy_metadata, policy_name, wasm_file_name};
use crate::http::{http_get, http_post};
use crate::kube::apiserver::FakeApi;
use policy_host::callbacks::shared;
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
    /// What the cluster answers to its lookups.
    cluster: FakeApi,
}

/// req/s and mean latency of one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Requests per second.
    pub requests_per_second: f64,
    /// Mean latency in microseconds.
    pub mean_latency_us: f64,
}

/// Runs every policy's bench scenarios in policy-server and prints the table and the goals.
pub fn run(dirs: &[PathBuf], options: &ServerBenchOptions) -> Result<bool> {
    std::fs::create_dir_all(&options.work_dir).map_err(|e| Error::io(&options.work_dir, e))?;
    let work_dir =
        std::path::absolute(&options.work_dir).map_err(|e| Error::io(&options.work_dir, e))?;
    let mut rows = Vec::new();
    for dir in dirs {
        rows.extend(policy_rows(dir, &work_dir, options)?);
    }
    let script = work_dir.join(WRK_SCRIPT_FILE);
    std::fs::write(&script, WRK_SCRIPT).map_err(|e| Error::io(&script, e))?;
    let batches = batches(rows);
    println!(
        "{} scenarios in {} policy-server run(s) of {} (wrk, {} connections, {} s each)",
        batches.iter().map(|b| b.rows.len()).sum::<usize>(),
        batches.len(),
        options.policy_server.display(),
        options.connections,
        options.seconds
    );
    println!(
        "{:<64} {:>9} {:>9} {:>9} {:>7}  Kubewarden equivalent",
        "policy › scenario", "req/s", "mean µs", "floor", "÷floor"
    );
    let mut goals = Goals::default();
    let mut failed = 0;
    for (n, batch) in batches.into_iter().enumerate() {
        failed += run_batch(n, batch, &work_dir, options, &mut goals)?;
    }
    let met = goals.print();
    if failed > 0 {
        println!("{failed} scenarios could not be measured");
    }
    Ok(met && failed == 0)
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
    let mut failed = 0;
    for row in &batch.rows {
        let measured = measure(&row.ours, options).and_then(|ours| {
            let floor = measure(&row.floor, options)?;
            let theirs = row
                .anchors
                .iter()
                .map(|(name, target)| Ok((name.clone(), measure(target, options)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok((ours, floor, theirs))
        });
        match measured {
            Ok((ours, floor, theirs)) => {
                print_row(row, ours, floor, &theirs);
                goals.record(row, ours, floor, &theirs);
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
        }
    }
}

/// The rows of one policy directory (nothing when it has no `bench.yaml`).
fn policy_rows(dir: &Path, work_dir: &Path, options: &ServerBenchOptions) -> Result<Vec<Row>> {
    let bench_file = dir.join("bench.yaml");
    if !bench_file.is_file() {
        return Ok(Vec::new());
    }
    let binding = PolicyBinding::load(dir, &options.wasm_dir, &options.annotated_dir)?;
    let mut rows = Vec::new();
    for (n, bench) in load_bench_file(&bench_file)?.into_iter().enumerate() {
        if let Some(row) = scenario_row(&binding, n, &bench, work_dir, options)? {
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
) -> Result<Option<Row>> {
    let scenario = &bench.scenario;
    let Some(request) = &scenario.request else {
        return Ok(None);
    };
    let recorder = shared(Recorder::new(scenario.cluster.callbacks()));
    let eval = binding
        .host
        .validate(request, &scenario.settings, recorder.clone())?;
    let cluster = FakeApi::from_exchanges(
        recorder
            .lock()
            .map_err(|_| Error::Invalid("recorder lock poisoned".into()))?
            .exchanges(),
    )?;
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
            let target = binding.target(id, module, a.settings.clone(), ours_body.clone(), None);
            // Kubewarden's policy reads no cluster: it is granted nothing
            let target = Target {
                context_aware: Vec::new(),
                host_capabilities: Vec::new(),
                ..target
            };
            Ok((a.module.clone(), target))
        })
        .collect::<Result<Vec<_>>>()?;
    let settings = &scenario.settings;
    Ok(Some(Row {
        policy: binding.policy.clone(),
        scenario: bench.name.clone(),
        entries: match bench.kind {
            BenchKind::Scaled { entries, .. } => Some(entries),
            _ => None,
        },
        ours: binding.target(
            id.clone(),
            binding.module.clone(),
            settings.clone(),
            ours_body,
            Some(eval.response.allowed),
        ),
        floor: binding.target(
            format!("{id}-floor"),
            binding.module.clone(),
            settings.clone(),
            write_review(work_dir, &id, "-floor", &floor_request)?,
            Some(true),
        ),
        anchors,
        cluster,
    }))
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

/// Checks the target's verdict once, then loads it with wrk.
fn measure(target: &Target, options: &ServerBenchOptions) -> Result<Throughput> {
    let body = std::fs::read(&target.body).map_err(|e| Error::io(&target.body, e))?;
    let path = format!("/validate/{}", target.id);
    let (status, answer) = http_post(options.port, &path, &body)?;
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
    wrk(options, &path, &target.body)
}

/// The wrk script (in the work directory): a POST of the file named by `WRK_BODY`.
const WRK_SCRIPT_FILE: &str = "post.lua";
const WRK_SCRIPT: &str = "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\n\
     local f = assert(io.open(os.getenv(\"WRK_BODY\"), \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n";

/// Runs wrk with a POST of `body` and reads its req/s and mean latency.
fn wrk(options: &ServerBenchOptions, path: &str, body: &Path) -> Result<Throughput> {
    let script = options.work_dir.join(WRK_SCRIPT_FILE);
    let out = Command::new("wrk")
        .args(["-t1", &format!("-c{}", options.connections)])
        .arg(format!("-d{}s", options.seconds))
        .arg("-s")
        .arg(&script)
        .arg(format!("http://127.0.0.1:{}{path}", options.port))
        .env("WRK_BODY", body)
        .output()
        .map_err(|e| Error::Invalid(format!("cannot run wrk: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_wrk(&text).ok_or_else(|| Error::Invalid(format!("unexpected wrk output: {text}")))
}

/// req/s and mean latency from wrk's report; `None` when it had errors or no numbers.
pub fn parse_wrk(text: &str) -> Option<Throughput> {
    if text.contains("Non-2xx or 3xx responses") || text.contains("Socket errors") {
        return None;
    }
    let requests_per_second = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())?;
    let latency = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Latency"))
        .and_then(|rest| rest.split_whitespace().next())?;
    let (number, factor) = if let Some(v) = latency.strip_suffix("us") {
        (v, 1.0)
    } else if let Some(v) = latency.strip_suffix("ms") {
        (v, 1e3)
    } else if let Some(v) = latency.strip_suffix('s') {
        (v, 1e6)
    } else {
        return None;
    };
    let mean_latency_us = number.parse::<f64>().ok()? * factor;
    Some(Throughput {
        requests_per_second,
        mean_latency_us,
    })
}

fn print_row(row: &Row, ours: Throughput, floor: Throughput, theirs: &[(String, Throughput)]) {
    let name = format!("{} › {}", row.policy, row.scenario);
    let kw: Vec<String> = theirs
        .iter()
        .map(|(module, t)| {
            format!(
                "{module} {:.0} req/s (ours ÷ theirs {:.2})",
                t.requests_per_second,
                ours.requests_per_second / t.requests_per_second
            )
        })
        .collect();
    println!(
        "{name:<64} {:>9.0} {:>9.0} {:>9.0} {:>6.0}%  {}",
        ours.requests_per_second,
        ours.mean_latency_us,
        floor.requests_per_second,
        100.0 * ours.requests_per_second / floor.requests_per_second,
        kw.join("; ")
    );
}

/// The goals of the measurement (README "Performance").
#[derive(Debug, Default)]
struct Goals {
    lines: Vec<(bool, String)>,
}

/// Share of the floor every scenario reaches up to 1,000 settings entries.
const FLOOR_SHARE: f64 = 0.9;
/// Times Kubewarden's equivalent at 10,000 entries.
const TIMES_KUBEWARDEN_AT_10K: f64 = 2.0;
/// Times Kubewarden's trusted-repos on registry allow-lists.
const TIMES_TRUSTED_REPOS: f64 = 50.0;

impl Goals {
    fn record(
        &mut self,
        row: &Row,
        ours: Throughput,
        floor: Throughput,
        theirs: &[(String, Throughput)],
    ) {
        let name = format!("{} › {}", row.policy, row.scenario);
        let share = ours.requests_per_second / floor.requests_per_second;
        if row.entries.is_none_or(|n| n <= 1_000) {
            self.lines.push((
                share >= FLOOR_SHARE,
                format!(
                    "{name}: {:.0}% of the floor (goal ≥ {:.0}%)",
                    100.0 * share,
                    100.0 * FLOOR_SHARE
                ),
            ));
        }
        for (module, t) in theirs {
            let ratio = ours.requests_per_second / t.requests_per_second;
            if module == "trusted_repos_policy" {
                self.lines.push((
                    ratio >= TIMES_TRUSTED_REPOS,
                    format!("{name}: {ratio:.1}× {module} (goal ≥ {TIMES_TRUSTED_REPOS:.0}×)"),
                ));
            } else if row.entries == Some(10_000) {
                self.lines.push((
                    ratio >= TIMES_KUBEWARDEN_AT_10K,
                    format!("{name}: {ratio:.2}× {module} (goal ≥ {TIMES_KUBEWARDEN_AT_10K:.0}×)"),
                ));
            }
        }
    }

    /// Prints every goal and the count; whether all were met.
    fn print(&self) -> bool {
        println!("goals:");
        for (met, line) in &self.lines {
            println!("  {} {line}", if *met { "met   " } else { "MISSED" });
        }
        let missed = self.lines.iter().filter(|(met, _)| !met).count();
        println!("{} goals met, {missed} missed", self.lines.len() - missed);
        missed == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wrk_reports() {
        let report = "Running 6s test @ http://127.0.0.1:3300/validate/x\n  1 threads and 2 connections\n  Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency   512.34us  100.00us   2.00ms   90.00%\n    Req/Sec     3.87k   100.00     4.00k    70.00%\n  23196 requests in 6.00s, 5.00MB read\nRequests/sec:   3866.12\nTransfer/sec:      0.83MB\n";
        let t = parse_wrk(report).unwrap();
        assert_eq!(t.requests_per_second, 3866.12);
        assert!((t.mean_latency_us - 512.34).abs() < 1e-9);
        let ms = report.replace("512.34us", "1.50ms");
        assert!((parse_wrk(&ms).unwrap().mean_latency_us - 1500.0).abs() < 1e-9);
        let errors = format!("{report}  Non-2xx or 3xx responses: 12\n");
        assert_eq!(parse_wrk(&errors), None);
        assert_eq!(parse_wrk("nothing"), None);
    }
}
