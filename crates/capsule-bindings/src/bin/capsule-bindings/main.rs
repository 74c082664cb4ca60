//! `capsule-bindings`: Capsule Tenants in, the bundle's ClusterAdmissionPolicies out (see the
//! library docs and the README section "Coming from Capsule").

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capsule_bindings::admission::{admit, describe};
use capsule_bindings::binding::ModuleSource;
use capsule_bindings::convert::convert_from;
use capsule_bindings::install::{
    InstallOptions, KUBEWARDEN_NAMESPACE, POLICY_SERVER_IMAGE, install,
};
use capsule_bindings::placement::{DEFAULT_POLICY_SERVER, FailurePolicy, Mode, Placement};
use capsule_bindings::scenario::{KwctlOptions, run_file, scenario_files};
use capsule_bindings::{Binding, Error, Hosts, Options, Result, parse_tenants};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

const DEFAULT_WASM_DIR: &str = "target/wasm32-wasip1/release";

#[derive(Parser)]
#[command(
    name = "capsule-bindings",
    version,
    about = "Converts Capsule Tenants into the tenancy-policies ClusterAdmissionPolicies that enforce the same tenant"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert Tenant manifests into ClusterAdmissionPolicies (YAML on stdout or --output);
    /// findings on stderr. Nothing is written when a field is malformed or a policy refuses
    /// its settings.
    Convert(ConvertArgs),
    /// Judge requests with written bindings, as the API server routes them: which binding
    /// admitted, mutated or refused each, and why.
    Try(TryArgs),
    /// Run scenario cases (a Tenant converted, requests judged by its bindings); with --kwctl
    /// every evaluation is also run by the real kwctl and must agree.
    Check(CheckArgs),
    /// Write the install directory (`kubectl apply -k <dir>`): the dedicated PolicyServer,
    /// its ServiceAccount, the ClusterRole granting exactly the reads the policies'
    /// `contextAwareResources` name, its ClusterRoleBinding, the cluster-wide baseline
    /// bindings and kustomization.yaml.
    Install(InstallArgs),
    /// Measure policy-server's start time and memory on the install directory plus N copies
    /// of a Tenant, loaded as kubewarden-controller would load them (a benchmark; prints one
    /// line per N).
    Footprint(FootprintArgs),
}

#[derive(Args)]
struct FootprintArgs {
    /// The Tenant copied.
    #[arg(long, default_value = "test_data/capsule-bindings/tenants/solar.yaml")]
    tenant: PathBuf,
    /// How many copies, one measurement each (repeatable).
    #[arg(long = "tenants", default_values_t = [0, 100, 1000])]
    tenants: Vec<usize>,
    /// The policy-server binary.
    #[arg(long)]
    policy_server: PathBuf,
    /// The install directory.
    #[arg(long, default_value = "deploy")]
    install_dir: PathBuf,
    /// The annotated modules (make annotate).
    #[arg(long, default_value = "target/annotated")]
    modules_dir: PathBuf,
    /// Where the built policy modules are (the converted settings are checked).
    #[arg(long, default_value = DEFAULT_WASM_DIR)]
    wasm_dir: PathBuf,
    /// Where each run's policies.yml and log go.
    #[arg(long, default_value = "target/footprint")]
    work_dir: PathBuf,
}

/// Where and how bindings are placed (every command that writes bindings).
#[derive(Args)]
struct PlacementArgs {
    /// The PolicyServer that runs the bindings (`spec.policyServer`).
    #[arg(long, default_value = DEFAULT_POLICY_SERVER)]
    policy_server: String,
    /// `monitor` (log what would be refused, for a trial run) or `protect`.
    #[arg(long, default_value = "protect")]
    mode: Mode,
    /// What the API server does when policy-server does not answer: `Fail` or `Ignore`.
    #[arg(long, default_value = "Fail")]
    failure_policy: FailurePolicy,
    /// Webhook timeout, 1 to 30 seconds.
    #[arg(long, default_value_t = 10)]
    timeout_seconds: u32,
    /// Opt-in rule sets for APIs not every cluster serves: `legacy-ingress` (Ingress
    /// v1beta1), `openshift` (Projects, ProjectRequests). Repeatable.
    #[arg(long = "opt-in")]
    opt_in: Vec<String>,
}

impl PlacementArgs {
    fn placement(&self) -> Placement {
        Placement {
            policy_server: self.policy_server.clone(),
            mode: self.mode,
            failure_policy: self.failure_policy,
            timeout_seconds: self.timeout_seconds,
            opt_in: self.opt_in.clone(),
        }
    }
}

#[derive(Args)]
struct InstallArgs {
    /// The directory to write (created if missing; its files of the same names replaced).
    #[arg(long, short, default_value = "deploy")]
    output: PathBuf,
    /// Registry and path prefix of the modules: registry://<REGISTRY>/tenancy-policies/<policy>:<VERSION>.
    #[arg(long, default_value = "ghcr.io/tenancy-policies")]
    registry: String,
    /// Module tag.
    #[arg(long, default_value = concat!("v", env!("CARGO_PKG_VERSION")))]
    version: String,
    #[command(flatten)]
    placement: PlacementArgs,
    /// Namespace of the PolicyServer's ServiceAccount: where Kubewarden's controller runs.
    #[arg(long, default_value = KUBEWARDEN_NAMESPACE)]
    namespace: String,
    /// The policy-server image.
    #[arg(long, default_value = POLICY_SERVER_IMAGE)]
    image: String,
    /// PolicyServer replicas.
    #[arg(long, default_value_t = 2)]
    replicas: u32,
    /// Namespaces the baseline bindings skip, replacing Kubewarden's list of system
    /// namespaces (repeatable; the install namespace is always skipped).
    #[arg(long = "skip-namespace")]
    skip_namespaces: Vec<String>,
    /// Namespace label naming the tenant (protected by the namespace-metadata baseline).
    #[arg(long, default_value = capsule_bindings::translate::CAPSULE_TENANT_LABEL)]
    tenant_label: String,
}

#[derive(Args)]
struct ConvertArgs {
    /// Tenant manifests (`-` for stdin); several Tenants per file are allowed.
    #[arg(required = true)]
    tenants: Vec<PathBuf>,
    /// Registry and path prefix of the modules: registry://<REGISTRY>/tenancy-policies/<policy>:<VERSION>.
    #[arg(long)]
    registry: String,
    /// Module tag.
    #[arg(long, default_value = concat!("v", env!("CARGO_PKG_VERSION")))]
    version: String,
    /// Namespace label naming the tenant.
    #[arg(long, default_value = capsule_bindings::translate::CAPSULE_TENANT_LABEL)]
    tenant_label: String,
    /// Where the built policy modules are (their validate_settings checks every binding).
    #[arg(long, default_value = DEFAULT_WASM_DIR)]
    wasm_dir: PathBuf,
    /// Write the YAML here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    placement: PlacementArgs,
    /// List what would be written (one line per binding) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args)]
struct TryArgs {
    /// The bindings (the YAML `convert` wrote).
    bindings: PathBuf,
    /// AdmissionRequests or AdmissionReviews (JSON or YAML).
    #[arg(long = "request-path", required = true, num_args = 1..)]
    requests: Vec<PathBuf>,
    /// Objects in the cluster (Namespaces with their labels, classes, ...), YAML.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Where the built policy modules are.
    #[arg(long, default_value = DEFAULT_WASM_DIR)]
    wasm_dir: PathBuf,
}

#[derive(Args)]
struct CheckArgs {
    /// Scenario files or folders of them.
    #[arg(default_value = "crates/capsule-bindings/cases")]
    paths: Vec<PathBuf>,
    /// Where the built policy modules are.
    #[arg(long, default_value = DEFAULT_WASM_DIR)]
    wasm_dir: PathBuf,
    /// Also run every evaluation through this kwctl.
    #[arg(long)]
    kwctl: Option<PathBuf>,
    /// Where kwctl's annotated modules and inputs are written.
    #[arg(long, default_value = "target/e2e-capsule-bindings")]
    work_dir: PathBuf,
    /// The policies' folders (metadata.yml and README.md, for kwctl annotate).
    #[arg(long, default_value = "policies")]
    policies_dir: PathBuf,
    /// Only requests whose name (or file name) contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Instead, send every scenario request through this policy-server, configured as
    /// kubewarden-controller configures it from the converted bindings, its lookups answered
    /// under the install directory's ClusterRole.
    #[arg(long)]
    policy_server: Option<PathBuf>,
    /// The PolicyServer under test (default: the only one of --install-dir).
    #[arg(long)]
    policy_server_name: Option<String>,
    /// The install directory (its PolicyServer, ServiceAccount and RBAC), for --policy-server.
    #[arg(long, default_value = "deploy")]
    install_dir: PathBuf,
    /// The annotated modules (make annotate), for --policy-server.
    #[arg(long, default_value = "target/annotated")]
    modules_dir: PathBuf,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Convert(a) => convert(a),
        Command::Try(a) => try_requests(a),
        Command::Check(a) => check(a),
        Command::Install(a) => install_dir(a),
        Command::Footprint(a) => footprint(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("capsule-bindings: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn read(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::io(path, e))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

fn convert(args: ConvertArgs) -> Result<ExitCode> {
    let mut tenants = Vec::new();
    for path in &args.tenants {
        tenants.extend(parse_tenants(&read(path)?, &path.display().to_string())?);
    }
    let options = Options {
        tenant_label: args.tenant_label,
        placement: args.placement.placement(),
    };
    let source = ModuleSource {
        registry: args.registry,
        version: args.version,
    };
    let mut hosts = Hosts::new(args.wasm_dir);
    let conversion = convert_from(&tenants, &options, &source, &mut hosts)?;
    for report in &conversion.reports {
        eprintln!("capsule-bindings: {report}");
    }
    for error in &conversion.errors {
        eprintln!("capsule-bindings: {error}");
    }
    let Some(yaml) = conversion.output()? else {
        eprintln!(
            "capsule-bindings: {} error(s): nothing written",
            conversion.errors.len()
        );
        return Ok(ExitCode::from(1));
    };
    if args.dry_run {
        for manifest in &conversion.bindings {
            let at = |p: &str| manifest.pointer(p).cloned().unwrap_or(Value::Null);
            let mutating = if at("/spec/mutating") == Value::Bool(true) {
                "mutating"
            } else {
                "validating"
            };
            println!(
                "would write ClusterAdmissionPolicy {} ({mutating}, {}): settings {}",
                at("/metadata/name").as_str().unwrap_or_default(),
                at("/spec/module").as_str().unwrap_or_default(),
                at("/spec/settings")
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    match &args.output {
        Some(path) => {
            std::fs::write(path, yaml).map_err(|e| Error::io(path, e))?;
            eprintln!(
                "capsule-bindings: wrote {} ClusterAdmissionPolicies to {}",
                conversion.bindings.len(),
                path.display()
            );
        }
        None => print!("{yaml}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn install_dir(args: InstallArgs) -> Result<ExitCode> {
    let defaults = InstallOptions::default();
    let options = InstallOptions {
        placement: args.placement.placement(),
        source: ModuleSource {
            registry: args.registry,
            version: args.version,
        },
        namespace: args.namespace,
        image: args.image,
        replicas: args.replicas,
        skip_namespaces: if args.skip_namespaces.is_empty() {
            defaults.skip_namespaces
        } else {
            args.skip_namespaces
        },
        tenant_label: args.tenant_label,
    };
    let files = install(&options)?;
    std::fs::create_dir_all(&args.output).map_err(|e| Error::io(&args.output, e))?;
    for file in &files {
        let path = args.output.join(file.name);
        std::fs::write(&path, file.text()?).map_err(|e| Error::io(&path, e))?;
    }
    eprintln!(
        "capsule-bindings: wrote {} files to {} (kubectl apply -k {})",
        files.len(),
        args.output.display(),
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn footprint(args: FootprintArgs) -> Result<ExitCode> {
    let origin = args.tenant.display().to_string();
    let tenants = parse_tenants(&read(&args.tenant)?, &origin)?;
    let [tenant] = tenants.as_slice() else {
        return Err(Error::Invalid(format!(
            "{origin}: one Tenant is copied, not {}",
            tenants.len()
        )));
    };
    let options = capsule_bindings::footprint::FootprintOptions {
        policy_server: args.policy_server,
        install_dir: args.install_dir,
        modules_dir: args.modules_dir,
        work_dir: args.work_dir,
    };
    let mut hosts = Hosts::new(args.wasm_dir);
    for count in args.tenants {
        let copies = capsule_bindings::footprint::copies(tenant, count);
        let measured = capsule_bindings::footprint::measure(
            &copies,
            &Options::default(),
            &mut hosts,
            &options,
        )?;
        println!("{measured}");
    }
    Ok(ExitCode::SUCCESS)
}

fn try_requests(args: TryArgs) -> Result<ExitCode> {
    let origin = args.bindings.display().to_string();
    let bindings = testdrive::cluster::yaml_objects(&read(&args.bindings)?, &origin)?
        .iter()
        .map(Binding::from_manifest)
        .collect::<Result<Vec<_>>>()?;
    let cluster = match &args.cluster {
        Some(path) => testdrive::ClusterObjects::from_file(path)?,
        None => testdrive::ClusterObjects::default(),
    };
    let mut hosts = Hosts::new(args.wasm_dir);
    for path in &args.requests {
        let request = testdrive::request::load_request(path)?;
        let field = |p: &str| request.pointer(p).and_then(Value::as_str).unwrap_or("?");
        println!(
            "{} {} {}/{} by {} ({}):",
            field("/operation"),
            field("/kind/kind"),
            field("/namespace"),
            field("/name"),
            field("/userInfo/username"),
            path.display()
        );
        let admission = admit(&bindings, &request, &cluster, &mut hosts)?;
        for line in describe(&admission) {
            println!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check(args: CheckArgs) -> Result<ExitCode> {
    let files = scenario_files(&args.paths)?;
    if let Some(policy_server) = args.policy_server {
        let options = capsule_bindings::server::ServerOptions {
            policy_server,
            server_name: args.policy_server_name,
            install_dir: args.install_dir,
            modules_dir: args.modules_dir,
            work_dir: args.work_dir.join("policy-server"),
        };
        println!(
            "capsule-bindings check: every scenario request through {} ({} files)",
            capsule_bindings::server::describe(&options),
            files.len()
        );
        let mut hosts = Hosts::new(args.wasm_dir.clone());
        let report = capsule_bindings::server::check(&files, &mut hosts, &options)?;
        return Ok(if capsule_bindings::server::require_pass(&report).is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let kwctl = args.kwctl.map(|kwctl| KwctlOptions {
        kwctl,
        work_dir: args.work_dir,
        policies_dir: args.policies_dir,
    });
    match &kwctl {
        Some(k) => println!(
            "capsule-bindings e2e: every scenario request through {} ({} files)",
            testdrive::e2e::kwctl_version(&k.kwctl)?,
            files.len()
        ),
        None => println!(
            "capsule-bindings check: every scenario through the built wasm ({} files)",
            files.len()
        ),
    }
    let mut hosts = Hosts::new(args.wasm_dir.clone());
    let (mut passed, mut failed) = (0, 0);
    for file in &files {
        let report = run_file(
            file,
            &mut hosts,
            &args.wasm_dir,
            kwctl.as_ref(),
            args.filter.as_deref(),
        );
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "  {name}: {} passed, {} failed",
            report.passed,
            report.failures.len()
        );
        for (case, failures) in &report.failures {
            println!("    FAIL {case}");
            for failure in failures {
                println!("      {failure}");
            }
        }
        passed += report.passed;
        failed += report.failures.len();
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
