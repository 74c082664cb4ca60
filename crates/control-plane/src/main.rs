//! `control-plane`: the bundle against a real Kubernetes control plane (`make cluster-up`,
//! `make cluster-down`, `make cluster-e2e`; README "Every manifest works as written").

mod admission;
mod capsule;
mod cases;
mod ceiling;
mod chart;
mod cluster;
mod error;
mod install;
mod stand_ins;
mod state;
mod tally;
mod tenants;
mod verdict;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use capsule::{differences, table};
use cluster::process::Lifetime;
use cluster::{Cluster, UpOptions};
use error::{Error, Result};

#[derive(Parser)]
#[command(about = "The bundle against a real Kubernetes API server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Starts etcd and kube-apiserver in DIR and applies the CRDs; they run until `down`.
    Up(UpArgs),
    /// Stops every server of DIR and removes it.
    Down {
        /// The cluster directory.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Starts a cluster for this run, checks everything against it, stops it.
    E2e(E2eArgs),
    /// Sends every Capsule scenario request to the bundle and to Capsule, compares.
    Compare(CompareArgs),
}

#[derive(Args)]
struct UpArgs {
    /// The cluster directory (emptied first).
    #[arg(long)]
    dir: PathBuf,
    /// etcd.
    #[arg(long)]
    etcd: PathBuf,
    /// kube-apiserver.
    #[arg(long)]
    kube_apiserver: PathBuf,
    /// kubectl.
    #[arg(long)]
    kubectl: PathBuf,
    /// CRD files or directories of them; repeatable.
    #[arg(long)]
    crds: Vec<PathBuf>,
}

/// What `e2e` and `compare` both run: the repository's bundle and its Capsule scenarios,
/// through the real policy-server.
#[derive(Args)]
struct BundleArgs {
    /// The repository root.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// policy-server.
    #[arg(long)]
    policy_server: PathBuf,
    /// The annotated modules (`<policy>.wasm`, `make annotate`).
    #[arg(long, default_value = "target/annotated")]
    modules_dir: PathBuf,
    /// The policy wasm files.
    #[arg(long, default_value = "target/wasm32-wasip1/release")]
    wasm_dir: PathBuf,
    /// Capsule scenario files or directories of them.
    #[arg(long, default_value = "crates/capsule-bindings/cases")]
    scenarios: Vec<PathBuf>,
}

impl BundleArgs {
    /// deploy/.
    fn deploy(&self) -> PathBuf {
        self.root.join("deploy")
    }

    /// What the Capsule scenarios need.
    fn tenants(&self) -> tenants::TenantsOptions {
        tenants::TenantsOptions {
            policy_server: self.policy_server.clone(),
            modules_dir: self.modules_dir.clone(),
            wasm_dir: self.wasm_dir.clone(),
            deploy: self.deploy(),
            scenarios: self.scenarios.clone(),
            generated: Vec::new(),
        }
    }
}

#[derive(Args)]
struct E2eArgs {
    #[command(flatten)]
    up: UpArgs,
    #[command(flatten)]
    bundle: BundleArgs,
    /// helm.
    #[arg(long)]
    helm: PathBuf,
    /// capsule-bindings (the live ceiling).
    #[arg(long)]
    capsule_bindings: PathBuf,
    /// Generated manifests applied with a dry run (files or directories); repeatable.
    #[arg(long)]
    generated: Vec<PathBuf>,
}

#[derive(Args)]
struct CompareArgs {
    #[command(flatten)]
    up: UpArgs,
    #[command(flatten)]
    bundle: BundleArgs,
    /// helm (renders Capsule's chart).
    #[arg(long)]
    helm: PathBuf,
    /// Capsule's controller (`make capsule-bin`).
    #[arg(long)]
    capsule: PathBuf,
    /// Capsule's chart, its CRDs in `crds/`.
    #[arg(long)]
    capsule_chart: PathBuf,
    /// The known differences with Capsule, under the root.
    #[arg(
        long,
        default_value = "test_data/capsule-bindings/capsule-differences.yaml"
    )]
    differences: PathBuf,
    /// The document that explains the bundle's deliberate differences, under the root.
    #[arg(long, default_value = "docs/capsule.md")]
    doc: PathBuf,
    /// Writes this run's agreement table into the document (else a table that differs fails).
    #[arg(long)]
    write_table: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Up(a) => up(a),
        Command::Down { dir } => down(&dir),
        Command::E2e(a) => e2e(a),
        Command::Compare(a) => compare(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("control-plane: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn up_options(a: &UpArgs, lifetime: Lifetime) -> UpOptions {
    UpOptions {
        dir: a.dir.clone(),
        etcd: a.etcd.clone(),
        kube_apiserver: a.kube_apiserver.clone(),
        kubectl: a.kubectl.clone(),
        crds: a.crds.clone(),
        lifetime,
    }
}

fn server_version(cluster: &Cluster) -> Result<String> {
    let v = cluster.admin.get(&["--raw", "/version"]);
    let v = match v {
        Ok(v) => v,
        Err(_) => serde_json::from_str(&cluster.admin.run(&["get", "--raw", "/version"], None)?)?,
    };
    v.get("gitVersion")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::Invalid("/version: no gitVersion".into()))
}

fn up(a: UpArgs) -> Result<ExitCode> {
    let cluster = cluster::up(&up_options(&a, Lifetime::UntilDown))?;
    println!(
        "cluster-up: kube-apiserver {} on https://127.0.0.1:{}, {} CRDs established; kubectl --kubeconfig {}",
        server_version(&cluster)?,
        cluster.port,
        cluster.crds,
        cluster.admin.kubeconfig.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn down(dir: &std::path::Path) -> Result<ExitCode> {
    let killed = cluster::down(dir)?;
    if killed.is_empty() {
        println!("cluster-down: {} stopped and removed", dir.display());
    } else {
        println!(
            "cluster-down: {} removed; killed after the grace period: {}",
            dir.display(),
            killed.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Stops the run's cluster however the run ends, its servers' logs kept in `<dir>.logs`.
struct Stop(PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        if let Err(e) = cluster::down_keeping_logs(&self.0) {
            eprintln!("control-plane: stopping {}: {e}", self.0.display());
        }
    }
}

/// The policy directories of the repository (`policies/*-policy`), sorted.
fn policy_dirs(root: &std::path::Path) -> Result<Vec<PathBuf>> {
    let base = root.join("policies");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&base)
        .map_err(|e| Error::io(&base, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with("-policy"))
        })
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// The resource every read refused by a broken install is of (the first hole's).
const REFUSED_AS_EXPECTED: &str = "scheduling.k8s.io/priorityclasses";

/// install-e2e's cases, then every Capsule scenario request, through the API server.
fn requests(
    cluster: &Cluster,
    a: &BundleArgs,
    state: &mut state::State,
    tally: &mut tally::Tally,
) -> Result<()> {
    let cases = cases::CasesOptions {
        policy_server: a.policy_server.clone(),
        modules_dir: a.modules_dir.clone(),
        wasm_dir: a.wasm_dir.clone(),
        deploy: a.deploy(),
        policy_dirs: policy_dirs(&a.root)?,
    };
    cases::run(cluster, &cases, state, tally)?;
    tenants::run(cluster, &a.tenants(), state, tally)?;
    state.clear(cluster)
}

/// The APIs a plain kube-apiserver lacks and some policies read: OpenShift's Groups and
/// Users, as CRDs named test doubles.
fn test_doubles(cluster: &Cluster) -> Result<()> {
    cluster
        .admin
        .apply(&stand_ins::openshift_user_api(), "tenancy-e2e")?;
    cluster.admin.run(
        &[
            "wait",
            "--for=condition=Established",
            "crd",
            "-l",
            "tenancy-policies.io/test-double",
            "--timeout=60s",
        ],
        None,
    )?;
    println!(
        "test doubles: OpenShift's user.openshift.io Groups and Users as CRDs (a plain kube-apiserver serves no such API)"
    );
    Ok(())
}

/// The version Capsule's controller reports (`Capsule Version <v>` in its log).
fn capsule_version(capsule: &std::path::Path) -> Result<String> {
    let out = std::process::Command::new(capsule)
        .arg("--version")
        .output()
        .map_err(|e| Error::Command {
            program: format!("{} --version", capsule.display()),
            detail: e.to_string(),
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.split("Capsule Version ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|v| v.trim_matches('"').to_owned())
        .ok_or_else(|| Error::Invalid(format!("{}: no version", capsule.display())))
}

/// Every Capsule scenario request through the bundle's plane, then through Capsule's, and
/// the answers compared.
fn compare(a: CompareArgs) -> Result<ExitCode> {
    let _stop = Stop(a.up.dir.clone());
    let capsule_version = capsule_version(&a.capsule)?;
    let opts = up_options(&a.up, Lifetime::ThisRun);
    let cluster = cluster::up(&opts)?;
    let version = server_version(&cluster)?;
    test_doubles(&cluster)?;
    let mut applied = install::Applied::default();
    install::deploy(&cluster, &a.bundle.deploy(), &mut applied)?;
    let mut tally = tally::Tally::default();
    let mut state = state::State::default();
    let mut scenarios = a.bundle.tenants();
    let requests = a.bundle.root.join("test_data/capsule-bindings/requests");
    let requests = std::path::absolute(&requests).map_err(|e| Error::io(&requests, e))?;
    scenarios.generated = capsule::generated::write(&a.up.dir.join("generated"), &requests)?;
    let sent = tenants::run(&cluster, &scenarios, &mut state, &mut tally)?;
    state.clear(&cluster)?;
    let plane = capsule::plane::up(
        &opts,
        cluster.etcd_port,
        &capsule::plane::CapsuleOptions {
            capsule: a.capsule.clone(),
            helm: a.helm.clone(),
            chart: a.capsule_chart.clone(),
        },
    )?;
    println!(
        "Capsule {capsule_version} on the test host {}: {} validating and {} mutating webhooks registered by Capsule from its chart's configuration, {} CRDs, its own kube-apiserver {version} on the same etcd",
        cluster::host::TEST_HOST,
        plane.webhooks.0,
        plane.webhooks.1,
        plane.crds
    );
    let comparison = capsule::compare::run(&plane, &sent)?;
    let known = differences::read(&a.bundle.root.join(&a.differences))?;
    let doc_path = a.bundle.root.join(&a.doc);
    let doc = std::fs::read_to_string(&doc_path)
        .map_err(|e| Error::Invalid(format!("{}: {e}", doc_path.display())))?;
    let reports = sent
        .iter()
        .map(|s| (s.stem.clone(), s.reports.clone()))
        .collect();
    let classified = differences::classify(
        &comparison.disagreements,
        &known,
        &reports,
        &differences::anchors(&doc),
    );
    for d in &classified.silent {
        println!("SILENT {d}");
    }
    let table_problem = agreement_table(&a, &doc_path, &doc, &sent, &comparison, &classified)?;
    for p in tally
        .problems
        .iter()
        .chain(&comparison.problems)
        .chain(&classified.problems)
        .chain(&table_problem)
    {
        println!("FAIL {p}");
    }
    println!(
        "capsule-compare: {} requests, {} agree, {} disagree ({} reported by convert, {} documented, {} silent)",
        comparison.requests,
        comparison.agree,
        comparison.disagreements.len(),
        classified.reported,
        classified.documented,
        classified.silent.len()
    );
    let clean = tally.problems.is_empty()
        && comparison.problems.is_empty()
        && classified.problems.is_empty()
        && table_problem.is_none();
    Ok(if classified.silent.is_empty() && clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The agreement table of this run beside the document's: written with `--write-table`, else
/// a problem when they differ.
fn agreement_table(
    a: &CompareArgs,
    doc_path: &std::path::Path,
    doc: &str,
    sent: &[tenants::SentScenario],
    comparison: &capsule::compare::Comparison,
    classified: &differences::Classified,
) -> Result<Option<String>> {
    let mut rows = std::collections::BTreeMap::new();
    for s in sent {
        let (requests, agree) = comparison
            .per_scenario
            .get(&s.stem)
            .copied()
            .unwrap_or_default();
        let row = table::Row {
            fields: table::fields(&s.tenant)?,
            requests,
            agree,
            ended: classified
                .by_scenario
                .get(&s.stem)
                .cloned()
                .unwrap_or_default(),
        };
        rows.insert(s.stem.clone(), row);
    }
    let rendered = table::render(&rows);
    let Some(updated) = table::replace(doc, &rendered) else {
        return Ok(Some(format!(
            "{}: no agreement table (the lines {} and {})",
            doc_path.display(),
            table::BEGIN,
            table::END
        )));
    };
    if a.write_table {
        std::fs::write(doc_path, &updated)
            .map_err(|e| Error::Invalid(format!("{}: {e}", doc_path.display())))?;
        println!(
            "capsule-compare: the agreement table of {} written",
            doc_path.display()
        );
        return Ok(None);
    }
    Ok((updated != doc).then(|| {
        format!(
            "{}: the agreement table is not this run's (make capsule-table writes it)",
            doc_path.display()
        )
    }))
}

fn e2e(a: E2eArgs) -> Result<ExitCode> {
    let _stop = Stop(a.up.dir.clone());
    let cluster = cluster::up(&up_options(&a.up, Lifetime::ThisRun))?;
    let version = server_version(&cluster)?;
    println!(
        "kube-apiserver {version} on https://127.0.0.1:{}, {} CRDs established",
        cluster.port, cluster.crds
    );
    test_doubles(&cluster)?;
    let mut tally = tally::Tally::default();
    let mut applied = install::Applied::default();
    let deploy = a.bundle.deploy();
    install::deploy(&cluster, &deploy, &mut applied)?;
    install::manifests(&cluster, &a.bundle.root, &a.generated, &mut applied)?;
    println!(
        "install: deploy/ applied server-side, {} documented manifests and {} generated files through a server-side dry run, {} refused",
        applied.documented,
        applied.generated_files,
        applied.problems.len()
    );
    tally.objects += applied.objects;
    tally.problems.append(&mut applied.problems);
    match chart::check(
        &cluster,
        &a.helm,
        &a.bundle.root.join("charts/tenancy-policies"),
        &deploy,
    ) {
        Ok(mut chart) => {
            println!(
                "chart: helm lint --strict and helm template for {} sets of values, {} objects equal to capsule-bindings install's; helm install in place of deploy/: {} live objects equal to deploy/'s",
                chart.sets, chart.compared, chart.installed
            );
            tally.objects += chart.installed;
            tally.problems.append(&mut chart.problems);
        }
        Err(e) => tally.problems.push(format!("chart: {e}")),
    }
    match ceiling::check(
        &cluster,
        &a.capsule_bindings,
        &a.bundle.root.join("README.md"),
        &version,
    ) {
        Ok((line, roles)) => println!("{line} ({roles} live ClusterRoles read)"),
        Err(e) => tally.problems.push(e.to_string()),
    }
    let mut state = state::State::default();
    if let Err(e) = requests(&cluster, &a.bundle, &mut state, &mut tally) {
        tally
            .problems
            .push(format!("requests through the API server stopped: {e}"));
    }
    let (granted, refused) = rbac_reads(&cluster, &deploy, &mut tally)?;
    if tally.holes.len() != 2 {
        tally.problems.push(format!(
            "{} of the 2 broken installs failed as they must",
            tally.holes.len()
        ));
    }
    for u in &tally.unsendable {
        println!("not sent (kubectl cannot send it): {u}");
    }
    for p in &tally.problems {
        println!("FAIL {p}");
    }
    println!(
        "cluster-e2e: kube-apiserver {version}, {} objects applied, {} requests through the API server as tenants, {} as expected, RBAC by the API server ({granted} reads granted, {} refused as expected)",
        tally.objects, tally.requests, tally.as_expected, refused
    );
    Ok(if tally.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The reads deploy/'s ServiceAccount made, from the audit log: those RBAC authorized (found
/// or not), and those it refused, each of which must be a broken install's; any other
/// answer is a problem.
fn rbac_reads(
    cluster: &Cluster,
    deploy: &std::path::Path,
    tally: &mut tally::Tally,
) -> Result<(usize, usize)> {
    let objects = testdrive::kube::controller::read_objects(&[deploy.to_path_buf()])?;
    let server = testdrive::install::install_server(&objects, None)?.0;
    let user = admission::service_account_user(
        &server.deployments_namespace,
        server.service_account.as_deref().unwrap_or("default"),
    );
    let (mut granted, mut refused) = (0, 0);
    for r in cluster::reads_of(cluster, &user)? {
        match r.code {
            200..=399 | 404 => granted += 1,
            403 if r.resource == REFUSED_AS_EXPECTED => refused += 1,
            code => tally.problems.push(format!(
                "{user}: {} {}: answered {code}",
                r.verb, r.resource
            )),
        }
    }
    Ok((granted, refused))
}
