//! `capsule-bindings`: Capsule Tenants in, the bundle's ClusterAdmissionPolicies out (see the
//! library docs and the README section "Coming from Capsule").

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capsule_bindings::admission::{admit, describe};
use capsule_bindings::binding::ModuleSource;
use capsule_bindings::ceiling::Comparison;
use capsule_bindings::convert::convert_from;
use capsule_bindings::install::{
    InstallOptions, KUBEWARDEN_NAMESPACE, POLICY_SERVER_IMAGE, install,
};
use capsule_bindings::placement::{DEFAULT_POLICY_SERVER, FailurePolicy, Mode, Placement};
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
    /// Write the install directory (`kubectl apply -k <dir>`): the dedicated PolicyServer,
    /// its ServiceAccount, the ClusterRole granting exactly the reads the policies'
    /// `contextAwareResources` name, its ClusterRoleBinding, the cluster-wide baseline
    /// bindings and kustomization.yaml.
    Install(InstallArgs),
    /// Write the Helm chart (`helm install -n kubewarden tenancy-policies <dir>`): the install
    /// directory's objects templated on install's options (values.yaml, values.schema.json),
    /// without kustomization.yaml.
    Chart(ChartArgs),
    /// Print the baseline tenant ceiling beside the `edit` and `admin` ClusterRoles of the
    /// roles given (Kubernetes' bootstrap policy, or `kubectl get clusterroles -o yaml` of a
    /// live cluster), aggregated as Kubernetes aggregates them, as a Markdown table. Fails
    /// when the ceiling grants what `admin` does not, or differs from `edit` without a reason.
    Ceiling(CeilingArgs),
}

#[derive(Args)]
struct CeilingArgs {
    /// YAML of ClusterRoles (documents, or lists of them); repeatable.
    #[arg(long = "roles", required = true)]
    roles: Vec<PathBuf>,
    /// What the roles are, for the closing line (`k8s.io/kubernetes v1.36.1`).
    #[arg(long, default_value = "the roles given")]
    source: String,
    /// Check that this Markdown file holds the table between the markers
    /// `<!-- tenant-ceiling:begin -->` and `<!-- tenant-ceiling:end -->`, instead of printing it.
    #[arg(long, conflicts_with = "write")]
    check: Option<PathBuf>,
    /// Write the table between those markers of this Markdown file.
    #[arg(long)]
    write: Option<PathBuf>,
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
struct ChartArgs {
    /// The chart directory to write (created if missing; its files of the same names replaced).
    #[arg(long, short, default_value = "charts/tenancy-policies")]
    output: PathBuf,
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
    /// Leave out the cluster-wide namespace ownership binding (written from every Tenant
    /// given; convert all Tenants at once to keep it whole).
    #[arg(long)]
    no_ownership: bool,
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

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Convert(a) => convert(a),
        Command::Try(a) => try_requests(a),
        Command::Install(a) => install_dir(a),
        Command::Chart(a) => chart_dir(a),
        Command::Ceiling(a) => ceiling(a),
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
        ownership: !args.no_ownership,
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

fn chart_dir(args: ChartArgs) -> Result<ExitCode> {
    let files = capsule_bindings::chart::write(&args.output)?;
    eprintln!(
        "capsule-bindings: wrote {} files to {} (helm install -n kubewarden tenancy-policies {})",
        files.len(),
        args.output.display(),
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

const CEILING_BEGIN: &str = "<!-- tenant-ceiling:begin -->\n";
const CEILING_END: &str = "<!-- tenant-ceiling:end -->";

fn ceiling(args: CeilingArgs) -> Result<ExitCode> {
    let mut documents = Vec::new();
    for path in &args.roles {
        documents.extend(policy_host::cluster::yaml_objects(
            &read(path)?,
            &path.display().to_string(),
        )?);
    }
    let comparison = Comparison::new(&documents)?;
    let table = comparison.markdown();
    let summary = format!(
        "ceiling: {} permissions, none beyond admin of {}; {} rows differ from edit, each with its reason",
        comparison.permissions,
        args.source,
        comparison.differences()
    );
    let Some(path) = args.check.as_ref().or(args.write.as_ref()) else {
        print!("{table}");
        eprintln!("{summary}");
        return Ok(ExitCode::SUCCESS);
    };
    let text = read(path)?;
    let (Some(begin), Some(end)) = (text.find(CEILING_BEGIN), text.find(CEILING_END)) else {
        return Err(Error::Invalid(format!(
            "{}: no {} ... {} markers",
            path.display(),
            CEILING_BEGIN.trim_end(),
            CEILING_END
        )));
    };
    let start = begin + CEILING_BEGIN.len();
    let current = text.get(start..end).unwrap_or_default();
    if args.write.is_some() {
        let (head, tail) = (
            text.get(..start).unwrap_or_default(),
            text.get(end..).unwrap_or_default(),
        );
        let updated = format!("{head}{table}{tail}");
        std::fs::write(path, updated).map_err(|e| Error::io(path, e))?;
        println!("{summary}; table written to {}", path.display());
    } else if current != table {
        eprintln!(
            "{}: the tenant ceiling table is stale: run `make ceiling-table` and commit",
            path.display()
        );
        return Ok(ExitCode::from(1));
    } else {
        println!("{summary}; the table of {} is current", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn try_requests(args: TryArgs) -> Result<ExitCode> {
    let origin = args.bindings.display().to_string();
    let bindings = policy_host::cluster::yaml_objects(&read(&args.bindings)?, &origin)?
        .iter()
        .map(Binding::from_manifest)
        .collect::<Result<Vec<_>>>()?;
    let cluster = match &args.cluster {
        Some(path) => policy_host::ClusterObjects::from_file(path)?,
        None => policy_host::ClusterObjects::default(),
    };
    let mut hosts = Hosts::new(args.wasm_dir);
    for path in &args.requests {
        let request = policy_host::request::load_request(path)?;
        let field = |p: &str| request.pointer(p).and_then(Value::as_str).unwrap_or("?");
        // a cluster-scoped object (a Namespace) has no namespace to show
        let namespace = match request.pointer("/namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() => format!("{ns}/"),
            _ => String::new(),
        };
        println!(
            "{} {} {namespace}{} by {} ({}):",
            field("/operation"),
            field("/kind/kind"),
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
