//! `testdrive`: run Kubewarden waPC policies locally (see the library docs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use testdrive::bench::{BenchOptions, BudgetCheck, bench_scenario, budget_checks, load_bench_file};
use testdrive::cases::{CheckOptions, ClusterState, check_policy, load_case_file};
use testdrive::error::{Error, Result};
use testdrive::request::load_request;
use testdrive::{
    ClusterObjects, Host, Metadata, NoCluster, Recorder, ReplaySession, SharedCallbacks, shared,
};

#[derive(Parser)]
#[command(
    name = "testdrive",
    version,
    about = "Local Kubewarden host: runs policy wasm modules like policy-server and kwctl do"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate one request, like `kwctl run`; prints the AdmissionResponse.
    Run(RunArgs),
    /// Run every declarative case of the policies against their wasm.
    Check(CheckArgs),
    /// Per-request latency with a fresh instance and with a reused one.
    Bench(BenchArgs),
    /// Embed metadata in a module, like `kwctl annotate`.
    Annotate(AnnotateArgs),
    /// Evaluate against `cluster` objects and write the kwctl replay session.
    Record(RecordArgs),
    /// Write every case's validate payload and settings as fuzzing seeds.
    Seeds(SeedsArgs),
    /// Run every declarative case through the real kwctl (annotate, scaffold, run).
    E2e(E2eArgs),
    /// Throughput of the bench scenarios in the real policy-server, driven by wrk.
    BenchServer(BenchServerArgs),
}

#[derive(Args)]
struct BenchServerArgs {
    /// Policy directories (default: every directory under ./policies).
    dirs: Vec<PathBuf>,
    /// The policy-server binary.
    #[arg(long)]
    policy_server: PathBuf,
    /// Kubewarden's annotated policies (default: `anchors/` beside the binary's `bin/`).
    #[arg(long)]
    anchors_dir: Option<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    wasm_dir: PathBuf,
    /// Where the annotated modules are (make annotate).
    #[arg(long, default_value = "target/annotated")]
    annotated_dir: PathBuf,
    /// Where policies.yml, request bodies and the server's log go.
    #[arg(long, default_value = "target/bench-server")]
    work_dir: PathBuf,
    /// Load duration of each measurement, in seconds.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// wrk connections.
    #[arg(long, default_value_t = 2)]
    connections: usize,
    /// policy-server's port (its readiness probe listens on the next one).
    #[arg(long, default_value_t = 3300)]
    port: u16,
}

#[derive(Args)]
struct E2eArgs {
    /// Policy directories (default: every directory under ./policies).
    dirs: Vec<PathBuf>,
    /// The kwctl binary.
    #[arg(long)]
    kwctl: PathBuf,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    wasm_dir: PathBuf,
    /// Where annotated modules, case inputs and recorded sessions go.
    #[arg(long, default_value = "target/e2e")]
    work_dir: PathBuf,
    /// kwctl processes at a time (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Only cases whose name (or policy name) contains this.
    #[arg(long)]
    filter: Option<String>,
}

#[derive(Args)]
struct SeedsArgs {
    /// Policy directories (default: every directory under ./policies).
    dirs: Vec<PathBuf>,
    /// Seeds go to `<out>/<policy>/validate/` and `<out>/<policy>/settings/`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct SettingsArgs {
    /// Settings as a JSON string.
    #[arg(long, conflicts_with = "settings_path")]
    settings_json: Option<String>,
    /// Settings file (YAML or JSON).
    #[arg(long, short = 's')]
    settings_path: Option<PathBuf>,
}

#[derive(Args)]
struct RunArgs {
    /// The policy module.
    module: PathBuf,
    /// AdmissionRequest or AdmissionReview file.
    #[arg(long, short = 'r')]
    request_path: PathBuf,
    #[command(flatten)]
    settings: SettingsArgs,
    /// kwctl session file answering host callbacks.
    #[arg(long, conflicts_with = "cluster")]
    replay_host_capabilities_interactions: Option<PathBuf>,
    /// YAML list of objects that exist in the cluster.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// metadata.yml, used when the module is not annotated.
    #[arg(long, short = 'm')]
    metadata: Option<PathBuf>,
    /// Print guest logs and host calls on stderr.
    #[arg(long, short = 'v')]
    verbose: bool,
}

#[derive(Args)]
struct CheckArgs {
    /// Policy directories (default: every directory under ./policies).
    dirs: Vec<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    wasm_dir: PathBuf,
    /// Only cases whose name (or policy name) contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Print guest logs and host calls on stderr.
    #[arg(long, short = 'v')]
    verbose: bool,
}

#[derive(Args)]
struct BenchArgs {
    /// Policy directories (default: every directory under ./policies).
    dirs: Vec<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    wasm_dir: PathBuf,
    /// Iterations with a fresh instance per request.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Iterations on one reused instance (default: 10 x --iterations).
    #[arg(long)]
    reused_iterations: Option<usize>,
    /// Time budget per measurement, in seconds.
    #[arg(long, default_value_t = 5.0)]
    budget_secs: f64,
    /// Write each policy's bench inputs as `<dir>/<policy>.json` (validate payloads plus the
    /// cluster objects) for the policy's native benchmark, instead of measuring.
    #[arg(long)]
    emit_payloads: Option<PathBuf>,
}

#[derive(Args)]
struct AnnotateArgs {
    /// The module to annotate.
    module: PathBuf,
    /// metadata.yml
    #[arg(long, short = 'm')]
    metadata: PathBuf,
    /// README.md, stored as the `io.kubewarden.policy.usage` annotation.
    #[arg(long, short = 'u')]
    usage: Option<PathBuf>,
    /// Output module.
    #[arg(long, short = 'o')]
    output: PathBuf,
}

#[derive(Args)]
struct RecordArgs {
    /// The policy module.
    module: PathBuf,
    /// AdmissionRequest or AdmissionReview file.
    #[arg(long, short = 'r', required_unless_present = "case")]
    request_path: Option<PathBuf>,
    #[command(flatten)]
    settings: SettingsArgs,
    /// YAML list of objects that exist in the cluster.
    #[arg(long, required_unless_present = "case")]
    cluster: Option<PathBuf>,
    /// Take settings, request and `cluster:` from this case file ...
    #[arg(long, requires = "name", conflicts_with_all = ["request_path", "cluster"])]
    case: Option<PathBuf>,
    /// ... and this case name.
    #[arg(long)]
    name: Option<String>,
    /// metadata.yml, used when the module is not annotated.
    #[arg(long, short = 'm')]
    metadata: Option<PathBuf>,
    /// Where to write the session.
    #[arg(long)]
    out: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run(a),
        Command::Check(a) => check(a),
        Command::Bench(a) => bench(a),
        Command::Annotate(a) => annotate(a),
        Command::Record(a) => record(a),
        Command::Seeds(a) => seeds(a),
        Command::E2e(a) => e2e(a),
        Command::BenchServer(a) => bench_server(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("testdrive: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

fn load_settings(args: &SettingsArgs) -> Result<Value> {
    if let Some(json) = &args.settings_json {
        return serde_json::from_str(json).map_err(|e| Error::parse("--settings-json", e));
    }
    if let Some(path) = &args.settings_path {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let v: Option<Value> =
            serde_yaml::from_str(&text).map_err(|e| Error::parse(path.display(), e))?;
        return Ok(v.unwrap_or_else(|| Value::Object(Default::default())));
    }
    Ok(Value::Object(Default::default()))
}

fn load_host(module: &Path, metadata: Option<&Path>) -> Result<Host> {
    let wasm = read(module)?;
    let metadata = match metadata {
        Some(p) => Some(Metadata::from_file(p)?),
        None => {
            // like `check`: a metadata.yml next to the module, if any
            let sibling = module.with_file_name("metadata.yml");
            if sibling.is_file() {
                Some(Metadata::from_file(&sibling)?)
            } else {
                None
            }
        }
    };
    let given = metadata.is_some();
    let host = Host::load(&wasm, metadata)?;
    if host.is_annotated() && given {
        eprintln!("testdrive: note: the module is annotated; its embedded metadata is used");
    }
    if host.metadata().is_none() {
        eprintln!(
            "testdrive: note: no metadata (module not annotated, no --metadata): \
             Kubernetes reads are refused, mutations allowed"
        );
    }
    Ok(host)
}

fn ensure_valid_settings(host: &Host, settings: &Value) -> Result<()> {
    let v = host.validate_settings(settings)?;
    if v.valid {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "Provided settings are not valid: {}",
            v.message.unwrap_or_default()
        )))
    }
}

fn print_evaluation(eval: &testdrive::Evaluation, problems: &[String]) -> Result<()> {
    let text =
        serde_json::to_string_pretty(&eval.response).map_err(|e| Error::Invalid(e.to_string()))?;
    println!("{text}");
    if let Some(patch) = &eval.patch {
        let pretty =
            serde_json::to_string_pretty(patch).map_err(|e| Error::Invalid(e.to_string()))?;
        eprintln!("testdrive: decoded patch:\n{pretty}");
    }
    for e in &eval.host_call_errors {
        eprintln!("testdrive: host-call error returned to the policy: {e}");
    }
    for p in problems {
        eprintln!("testdrive: warning: {p}");
    }
    Ok(())
}

fn callback_report(callbacks: &SharedCallbacks) -> Vec<String> {
    match callbacks.lock() {
        Ok(cb) => cb.problems().into_iter().chain(cb.unused()).collect(),
        Err(_) => vec!["callbacks lock poisoned".to_owned()],
    }
}

fn run(a: RunArgs) -> Result<ExitCode> {
    let mut host = load_host(&a.module, a.metadata.as_deref())?;
    host.set_verbose(a.verbose);
    let settings = load_settings(&a.settings)?;
    let request = load_request(&a.request_path)?;
    let callbacks: SharedCallbacks = match (&a.replay_host_capabilities_interactions, &a.cluster) {
        (Some(p), _) => shared(ReplaySession::from_file(p)?),
        (None, Some(p)) => shared(ClusterObjects::from_file(p)?),
        (None, None) => shared(NoCluster::default()),
    };
    ensure_valid_settings(&host, &settings)?;
    let eval = host.validate(&request, &settings, callbacks.clone())?;
    print_evaluation(&eval, &callback_report(&callbacks))?;
    Ok(ExitCode::SUCCESS)
}

fn policy_dirs(dirs: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    if !dirs.is_empty() {
        return Ok(dirs);
    }
    let root = Path::new("policies");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let p = entry.map_err(|e| Error::io(root, e))?.path();
        if p.is_dir() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn check(a: CheckArgs) -> Result<ExitCode> {
    let options = CheckOptions {
        wasm_dir: a.wasm_dir,
        filter: a.filter,
        verbose: a.verbose,
    };
    let reports: Vec<_> = policy_dirs(a.dirs)?
        .iter()
        .map(|dir| check_policy(dir, &options))
        .collect();
    Ok(print_reports(&reports))
}

/// Prints each policy's failures and counts, then the closing line `N passed, N failed`.
fn print_reports(reports: &[testdrive::cases::PolicyReport]) -> ExitCode {
    let (mut passed, mut failed) = (0usize, 0usize);
    for report in reports {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
        for f in &report.failures {
            let mut lines = f.failures.iter();
            let first = lines.next().map(String::as_str).unwrap_or("failed");
            println!(
                "FAIL {} › {} [{}]: {first}",
                report.policy,
                f.name,
                f.file.display()
            );
            for line in lines {
                println!("    {line}");
            }
        }
        if let Some(e) = &report.error {
            println!("ERROR {e}");
        }
        if report.passed + report.failed() > 0 {
            println!(
                "{}: {} passed, {} failed",
                report.policy,
                report.passed,
                report.failed()
            );
        }
        passed += report.passed;
        failed += report.failed();
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn bench_server(a: BenchServerArgs) -> Result<ExitCode> {
    let anchors_dir = a.anchors_dir.unwrap_or_else(|| {
        a.policy_server
            .parent()
            .and_then(Path::parent)
            .map(|root| root.join("anchors"))
            .unwrap_or_else(|| PathBuf::from("anchors"))
    });
    let options = testdrive::server_bench::ServerBenchOptions {
        policy_server: a.policy_server,
        anchors_dir,
        wasm_dir: a.wasm_dir,
        annotated_dir: a.annotated_dir,
        work_dir: a.work_dir,
        seconds: a.seconds.max(1),
        connections: a.connections.max(1),
        port: a.port,
    };
    // the goals are reported, not enforced: they depend on the machine
    testdrive::server_bench::run(&policy_dirs(a.dirs)?, &options)?;
    Ok(ExitCode::SUCCESS)
}

fn e2e(a: E2eArgs) -> Result<ExitCode> {
    let version = testdrive::e2e::kwctl_version(&a.kwctl)?;
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    println!(
        "e2e: every case through {} ({}), {jobs} at a time",
        a.kwctl.display(),
        if version.is_empty() {
            "version unknown"
        } else {
            &version
        }
    );
    let options = testdrive::e2e::E2eOptions {
        kwctl: a.kwctl,
        wasm_dir: a.wasm_dir,
        work_dir: a.work_dir,
        jobs,
        filter: a.filter,
    };
    let reports = testdrive::e2e::run(&policy_dirs(a.dirs)?, &options)?;
    Ok(print_reports(&reports))
}

fn bench(a: BenchArgs) -> Result<ExitCode> {
    let options = BenchOptions {
        fresh_iterations: a.iterations.max(1),
        reused_iterations: a.reused_iterations.unwrap_or(a.iterations * 10).max(1),
        budget: std::time::Duration::from_secs_f64(a.budget_secs.max(0.1)),
    };
    let mut errors = 0;
    let mut budgets: Vec<BudgetCheck> = Vec::new();
    if a.emit_payloads.is_none() {
        print_bench_header();
    }
    for dir in policy_dirs(a.dirs)? {
        let bench_file = dir.join("bench.yaml");
        if !bench_file.is_file() {
            continue;
        }
        let policy = testdrive::cases::policy_name(&dir);
        if let Some(out_dir) = &a.emit_payloads {
            let written = load_bench_file(&bench_file).and_then(|benches| {
                std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir.clone(), e))?;
                let path = out_dir.join(format!("{policy}.json"));
                let doc = testdrive::bench::native_inputs(&benches);
                std::fs::write(&path, doc.to_string()).map_err(|e| Error::io(path.clone(), e))?;
                Ok(path)
            });
            match written {
                Ok(path) => println!("{}", path.display()),
                Err(e) => {
                    errors += 1;
                    println!("ERROR {policy}: {e}");
                }
            }
            continue;
        }
        let outcome = (|| -> Result<()> {
            let benches = load_bench_file(&bench_file)?;
            let wasm_path = a.wasm_dir.join(testdrive::cases::wasm_file_name(&dir));
            let wasm = read(&wasm_path)?;
            let host = Host::load(&wasm, testdrive::cases::policy_metadata(&dir)?)?;
            let mut results = Vec::new();
            for b in &benches {
                match bench_scenario(&host, b, &options.for_kind(&b.kind)) {
                    Ok(r) => {
                        println!(
                            "{:<28} {:<32} {:>20} {:>8.1}ms {:>9} {:>22} {:>22}",
                            policy,
                            r.name,
                            format!(
                                "{} B ({:.1} KiB)",
                                host.wasm_size(),
                                host.wasm_size() as f64 / 1024.0
                            ),
                            host.compile_time().as_secs_f64() * 1e3,
                            if r.allowed { "allowed" } else { "rejected" },
                            format!(
                                "{:.1} / {:.1} (n={})",
                                r.fresh.median_us, r.fresh.mean_us, r.fresh.iterations
                            ),
                            format!(
                                "{:.1} / {:.1} (n={})",
                                r.reused.median_us, r.reused.mean_us, r.reused.iterations
                            ),
                        );
                        results.push((b, r));
                    }
                    Err(e) => {
                        errors += 1;
                        println!("ERROR {policy} › {}: {e}", b.name);
                    }
                }
            }
            let pairs: Vec<_> = results.iter().map(|(b, r)| (*b, r)).collect();
            budgets.extend(budget_checks(&policy, &pairs));
            Ok(())
        })();
        if let Err(e) = outcome {
            errors += 1;
            println!("ERROR {policy}: {e}");
        }
    }
    if !budgets.is_empty() {
        print_budgets(&budgets);
    }
    let over = budgets.iter().filter(|b| !b.ok()).count();
    Ok(if errors == 0 && over == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The cost budgets of SPEC 2.16: one line per grown object and per scaled setting, with
/// the host floor (the same payloads, accepted before the settings are read).
fn print_budgets(budgets: &[BudgetCheck]) {
    println!();
    println!(
        "== cost budgets (SPEC 2.16), fresh instance, median µs; floor = same payload, {} ==",
        testdrive::bench::FLOOR_OPERATION
    );
    println!(
        "{:<30} {:<44} {:>26} {:>26} {:>17} {:>24} {:>9} {:>5}",
        "policy", "scenario", "µs fresh", "µs floor", "t(N)/t(n) (floor)", "budget", "measured", ""
    );
    let join = |v: &[f64]| {
        v.iter()
            .map(|t| format!("{t:.1}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    for b in budgets {
        let measured = if b.budget.starts_with('<') {
            format!("{:.1} ms", b.measured)
        } else {
            format!("{:.2}×", b.measured)
        };
        let growth = match b.growth {
            Some((policy, floor)) => format!("{policy:.2}× ({floor:.2}×)"),
            None => String::new(),
        };
        println!(
            "{:<30} {:<44} {:>26} {:>26} {:>17} {:>24} {:>9} {:>5}",
            b.policy,
            b.scenario,
            join(&b.fresh_us),
            join(&b.floor_us),
            growth,
            b.budget,
            measured,
            if b.ok() { "OK" } else { "OVER" }
        );
    }
    let over = budgets.iter().filter(|b| !b.ok()).count();
    println!("{} budgets OK, {over} OVER", budgets.len() - over);
}

fn annotate(a: AnnotateArgs) -> Result<ExitCode> {
    let wasm = read(&a.module)?;
    let metadata = Metadata::from_file(&a.metadata)?;
    let usage = match &a.usage {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?),
        None => None,
    };
    let host = Host::load(&wasm, None)?;
    let version = host.protocol_version()?;
    let annotated = testdrive::metadata::annotate(&wasm, metadata, &version, usage.as_deref())?;
    // the result must still compile and expose its metadata
    let check = Host::load(&annotated, None)?;
    if !check.is_annotated() {
        return Err(Error::Invalid("annotated module lost its metadata".into()));
    }
    std::fs::write(&a.output, &annotated).map_err(|e| Error::io(&a.output, e))?;
    eprintln!(
        "testdrive: wrote {} ({} bytes, protocol {version})",
        a.output.display(),
        annotated.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn record(a: RecordArgs) -> Result<ExitCode> {
    let host = load_host(&a.module, a.metadata.as_deref())?;
    let (settings, request, objects) = match (&a.case, &a.name) {
        (Some(file), Some(name)) => {
            let case = load_case_file(file)?
                .into_iter()
                .find(|c| &c.name == name)
                .ok_or_else(|| {
                    Error::Invalid(format!("no case named `{name}` in {}", file.display()))
                })?;
            let s = case.scenario.map_err(Error::Invalid)?;
            let ClusterState::Objects(objects) = s.cluster else {
                return Err(Error::Invalid(format!(
                    "case `{name}` has no `cluster:` objects"
                )));
            };
            let request = s
                .request
                .ok_or_else(|| Error::Invalid(format!("case `{name}` has no request")))?;
            (s.settings, request, objects)
        }
        _ => {
            let (Some(req), Some(cluster)) = (&a.request_path, &a.cluster) else {
                return Err(Error::Invalid(
                    "give --request-path and --cluster, or --case and --name".into(),
                ));
            };
            (
                load_settings(&a.settings)?,
                load_request(req)?,
                ClusterObjects::from_file(cluster)?,
            )
        }
    };
    ensure_valid_settings(&host, &settings)?;
    let recorder = shared(Recorder::new(objects));
    let eval = host.validate(&request, &settings, recorder.clone())?;
    print_evaluation(&eval, &[])?;
    let yaml = recorder
        .lock()
        .map_err(|_| Error::Invalid("recorder lock poisoned".into()))?
        .session_yaml()?;
    std::fs::write(&a.out, yaml).map_err(|e| Error::io(&a.out, e))?;
    eprintln!("testdrive: session written to {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}

fn seeds(a: SeedsArgs) -> Result<ExitCode> {
    for dir in policy_dirs(a.dirs)? {
        let c = testdrive::seeds::write_seeds(&dir, &a.out)?;
        println!(
            "{}: {} payloads, {} settings, {} cases skipped",
            c.policy, c.payloads, c.settings, c.skipped
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_bench_header() {
    println!(
        "{:<28} {:<32} {:>20} {:>10} {:>9} {:>22} {:>22}",
        "policy",
        "bench",
        "wasm size",
        "compile",
        "verdict",
        "fresh µs median/mean",
        "reused µs median/mean"
    );
}
