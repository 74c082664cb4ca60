//! The command line: every subcommand and its arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "testdrive",
    version,
    about = "Local Kubewarden host: runs policy wasm modules like policy-server and kwctl do"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Evaluate one request, like `kwctl run`; prints the AdmissionResponse.
    Run(RunArgs),
    /// Run every declarative case of the policies against their wasm.
    Check(CheckArgs),
    /// Serve every lookup answer of every case again with one field of the wrong shape: the
    /// verdict must stay the case's own or become a failed lookup.
    Shapes(ShapesArgs),
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
    /// Check every Kubewarden manifest (READMEs, docs, deploy, generated files) against
    /// Kubewarden's CRDs and the policies, every questions-ui.yml and example settings file,
    /// and the identity's derived values.
    Manifests(ManifestsArgs),
    /// Compare the values derived from .github/publishing.env with the repository's
    /// (metadata, artifacthub-repo.yml, README module references); `--write` rewrites them.
    Identity(IdentityArgs),
    /// Every audit file: existing objects sent as the audit scanner sends them, through the
    /// wasm and, with `--policy-server`, through its `/audit/<id>`; the expected reports.
    Audit(AuditArgs),
    /// The release rehearsed against a local OCI registry: release.sh push, the modules pulled
    /// and run by the real policy-server, the Artifact Hub branch, the README install commands.
    PublishLocal(PublishLocalArgs),
    /// The install directory run as Kubewarden runs it: the controller's policies.yml, the
    /// real policy-server, RBAC enforced by the fake API server, one case per context-aware
    /// policy routed as the API server routes it.
    InstallE2e(InstallE2eArgs),
    /// The capsule-bindings scenario cases (a Tenant converted, requests judged by its
    /// bindings); with --kwctl every evaluation is also run by the real kwctl and must agree.
    CapsuleCheck(CapsuleCheckArgs),
    /// Measure policy-server's start time and memory on the install directory plus N copies
    /// of a Tenant converted by capsule-bindings, loaded as kubewarden-controller would load
    /// them (a benchmark; prints one line per N).
    CapsuleFootprint(CapsuleFootprintArgs),
}

#[derive(Args)]
pub(crate) struct InstallE2eArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// The policy-server binary.
    #[arg(long)]
    pub(crate) policy_server: PathBuf,
    /// The PolicyServer under test (default: the only one in the install directory).
    #[arg(long)]
    pub(crate) policy_server_name: Option<String>,
    /// The install directory (every YAML document directly in it).
    #[arg(long, default_value = "deploy")]
    pub(crate) deploy: PathBuf,
    /// The annotated modules (make annotate).
    #[arg(long, default_value = "target/annotated")]
    pub(crate) modules_dir: PathBuf,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Where policies.yml, policy-server's log and the request bodies go.
    #[arg(long, default_value = "target/install-e2e")]
    pub(crate) work_dir: PathBuf,
    /// Remove this resource from the ClusterRole first: the run must then fail.
    #[arg(long)]
    pub(crate) drop_role_resource: Option<String>,
    /// Remove the first contextAwareResources entry of this policy's binding: the run must
    /// then fail.
    #[arg(long)]
    pub(crate) drop_context_aware: Option<String>,
}

#[derive(Args)]
pub(crate) struct PublishLocalArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// The kwctl binary (release.sh and the README commands run it).
    #[arg(long)]
    pub(crate) kwctl: PathBuf,
    /// The policy-server binary.
    #[arg(long)]
    pub(crate) policy_server: PathBuf,
    /// The OCI registry binary, run as `<registry> serve <config.yml>`.
    #[arg(long, default_value = "docker-registry")]
    pub(crate) registry: PathBuf,
    /// The release script.
    #[arg(long, default_value = ".github/scripts/release.sh")]
    pub(crate) release_script: PathBuf,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Where the annotated modules are (make annotate).
    #[arg(long, default_value = "target/annotated")]
    pub(crate) annotated_dir: PathBuf,
    /// Where the registry, policy-server, Artifact Hub branch and manifests go.
    #[arg(long, default_value = "target/publish-local")]
    pub(crate) work_dir: PathBuf,
    /// RELEASE_PUSH_ATTEMPTS of the concurrent Artifact Hub pushes (default: one per policy).
    #[arg(long)]
    pub(crate) push_attempts: Option<u32>,
}

#[derive(Args)]
pub(crate) struct AuditArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// The policy-server binary: every object also goes through its `/audit/<id>`.
    #[arg(long)]
    pub(crate) policy_server: Option<PathBuf>,
    /// Where the annotated modules are (make annotate), for policy-server.
    #[arg(long, default_value = "target/annotated")]
    pub(crate) annotated_dir: PathBuf,
    /// Where policies.yml, request bodies and policy-server's logs go.
    #[arg(long, default_value = "target/audit")]
    pub(crate) work_dir: PathBuf,
    /// Where the audit files are (`<test-data>/<policy>/audit.yaml`).
    #[arg(long, default_value = "test_data")]
    pub(crate) test_data: PathBuf,
}

#[derive(Args)]
pub(crate) struct BenchServerArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// The policy-server binary.
    #[arg(long)]
    pub(crate) policy_server: PathBuf,
    /// Kubewarden's annotated policies (default: `anchors/` beside the binary's `bin/`).
    #[arg(long)]
    pub(crate) anchors_dir: Option<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Where the annotated modules are (make annotate).
    #[arg(long, default_value = "target/annotated")]
    pub(crate) annotated_dir: PathBuf,
    /// Where policies.yml, request bodies and the server's log go.
    #[arg(long, default_value = "target/bench-server")]
    pub(crate) work_dir: PathBuf,
    /// Load duration of each measurement, in seconds.
    #[arg(long, default_value_t = 3)]
    pub(crate) seconds: u64,
    /// wrk connections.
    #[arg(long, default_value_t = 2)]
    pub(crate) connections: usize,
    /// policy-server's port (its readiness probe listens on the next one).
    #[arg(long, default_value_t = 3300)]
    pub(crate) port: u16,
}

#[derive(Args)]
pub(crate) struct E2eArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// The kwctl binary.
    #[arg(long)]
    pub(crate) kwctl: PathBuf,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Where annotated modules, case inputs and recorded sessions go.
    #[arg(long, default_value = "target/e2e")]
    pub(crate) work_dir: PathBuf,
    /// kwctl processes at a time (default: one per core).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Only cases whose name (or policy name) contains this.
    #[arg(long)]
    pub(crate) filter: Option<String>,
}

#[derive(Args)]
pub(crate) struct SeedsArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// Seeds go to `<out>/<policy>/validate/` and `<out>/<policy>/settings/`.
    #[arg(long)]
    pub(crate) out: PathBuf,
}

#[derive(Args)]
pub(crate) struct SettingsArgs {
    /// Settings as a JSON string.
    #[arg(long, conflicts_with = "settings_path")]
    pub(crate) settings_json: Option<String>,
    /// Settings file (YAML or JSON).
    #[arg(long, short = 's')]
    pub(crate) settings_path: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The policy module.
    pub(crate) module: PathBuf,
    /// AdmissionRequest or AdmissionReview file.
    #[arg(long, short = 'r')]
    pub(crate) request_path: PathBuf,
    #[command(flatten)]
    pub(crate) settings: SettingsArgs,
    /// kwctl session file answering host callbacks.
    #[arg(long, conflicts_with = "cluster")]
    pub(crate) replay_host_capabilities_interactions: Option<PathBuf>,
    /// YAML list of objects that exist in the cluster.
    #[arg(long)]
    pub(crate) cluster: Option<PathBuf>,
    /// metadata.yml, used when the module is not annotated.
    #[arg(long, short = 'm')]
    pub(crate) metadata: Option<PathBuf>,
    /// Print guest logs and host calls on stderr.
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Only cases whose name (or policy name) contains this.
    #[arg(long)]
    pub(crate) filter: Option<String>,
    /// Print guest logs and host calls on stderr.
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
}

#[derive(Args)]
pub(crate) struct ShapesArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Policies probed at once (default: one per core).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Policy directories (default: every directory under ./policies).
    pub(crate) dirs: Vec<PathBuf>,
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Iterations with a fresh instance per request.
    #[arg(long, default_value_t = 200)]
    pub(crate) iterations: usize,
    /// Iterations on one reused instance (default: 10 x --iterations).
    #[arg(long)]
    pub(crate) reused_iterations: Option<usize>,
    /// Time budget per measurement, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub(crate) budget_secs: f64,
    /// Write each policy's bench inputs as `<dir>/<policy>.json` (validate payloads plus the
    /// cluster objects) for the policy's native benchmark, instead of measuring.
    #[arg(long)]
    pub(crate) emit_payloads: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct AnnotateArgs {
    /// The module to annotate.
    pub(crate) module: PathBuf,
    /// metadata.yml
    #[arg(long, short = 'm')]
    pub(crate) metadata: PathBuf,
    /// README.md, stored as the `io.kubewarden.policy.usage` annotation.
    #[arg(long, short = 'u')]
    pub(crate) usage: Option<PathBuf>,
    /// Output module.
    #[arg(long, short = 'o')]
    pub(crate) output: PathBuf,
}

#[derive(Args)]
pub(crate) struct RecordArgs {
    /// The policy module.
    pub(crate) module: PathBuf,
    /// AdmissionRequest or AdmissionReview file.
    #[arg(long, short = 'r', required_unless_present = "case")]
    pub(crate) request_path: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) settings: SettingsArgs,
    /// YAML list of objects that exist in the cluster.
    #[arg(long, required_unless_present = "case")]
    pub(crate) cluster: Option<PathBuf>,
    /// Take settings, request and `cluster:` from this case file ...
    #[arg(long, requires = "name", conflicts_with_all = ["request_path", "cluster"])]
    pub(crate) case: Option<PathBuf>,
    /// ... and this case name.
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// metadata.yml, used when the module is not annotated.
    #[arg(long, short = 'm')]
    pub(crate) metadata: Option<PathBuf>,
    /// Where to write the session.
    #[arg(long)]
    pub(crate) out: PathBuf,
}

#[derive(Args)]
pub(crate) struct ManifestsArgs {
    /// Where the policy wasm files are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Generated manifests to check too (files, or directories of YAML files).
    #[arg(long)]
    pub(crate) generated: Vec<PathBuf>,
}

#[derive(Args)]
pub(crate) struct IdentityArgs {
    /// Rewrite the drifted files instead of failing.
    #[arg(long)]
    pub(crate) write: bool,
}

#[derive(Args)]
pub(crate) struct CapsuleCheckArgs {
    /// Scenario files or folders of them.
    #[arg(default_value = "crates/capsule-bindings/cases")]
    pub(crate) paths: Vec<PathBuf>,
    /// Where the built policy modules are.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Also run every evaluation through this kwctl.
    #[arg(long)]
    pub(crate) kwctl: Option<PathBuf>,
    /// Where kwctl's annotated modules and inputs are written.
    #[arg(long, default_value = "target/e2e-capsule-bindings")]
    pub(crate) work_dir: PathBuf,
    /// The policies' folders (metadata.yml and README.md, for kwctl annotate).
    #[arg(long, default_value = "policies")]
    pub(crate) policies_dir: PathBuf,
    /// Only requests whose name (or file name) contains this.
    #[arg(long)]
    pub(crate) filter: Option<String>,
    /// Instead, send every scenario request through this policy-server, configured as
    /// kubewarden-controller configures it from the converted bindings, its lookups answered
    /// under the install directory's ClusterRole.
    #[arg(long)]
    pub(crate) policy_server: Option<PathBuf>,
    /// The PolicyServer under test (default: the only one of --install-dir).
    #[arg(long)]
    pub(crate) policy_server_name: Option<String>,
    /// The install directory (its PolicyServer, ServiceAccount and RBAC), for --policy-server.
    #[arg(long, default_value = "deploy")]
    pub(crate) install_dir: PathBuf,
    /// The annotated modules (make annotate), for --policy-server.
    #[arg(long, default_value = "target/annotated")]
    pub(crate) modules_dir: PathBuf,
}

#[derive(Args)]
pub(crate) struct CapsuleFootprintArgs {
    /// The Tenant copied.
    #[arg(long, default_value = "test_data/capsule-bindings/tenants/solar.yaml")]
    pub(crate) tenant: PathBuf,
    /// How many copies, one measurement each (repeatable).
    #[arg(long = "tenants", default_values_t = [0, 100, 1000])]
    pub(crate) tenants: Vec<usize>,
    /// The policy-server binary.
    #[arg(long)]
    pub(crate) policy_server: PathBuf,
    /// The install directory.
    #[arg(long, default_value = "deploy")]
    pub(crate) install_dir: PathBuf,
    /// The annotated modules (make annotate).
    #[arg(long, default_value = "target/annotated")]
    pub(crate) modules_dir: PathBuf,
    /// Where the built policy modules are (the converted settings are checked).
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    pub(crate) wasm_dir: PathBuf,
    /// Where each run's policies.yml and log go.
    #[arg(long, default_value = "target/footprint")]
    pub(crate) work_dir: PathBuf,
}
