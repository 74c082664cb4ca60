//! One cluster directory: etcd and kube-apiserver on loopback, as envtest runs them, plus a
//! second kube-apiserver on the same etcd without the admission webhooks, through which the
//! harness writes each scenario's state (a Namespace the bundle's bindings would refuse to
//! a tenant must still exist for the tenant's requests in it).
//!
//! The main API server: a client-certificate admin in `system:masters`, RBAC, service-account
//! tokens (issuer and signing key), every default admission plugin (the webhooks among them),
//! privileged containers allowed (the pod-security policies judge them, not the API server),
//! and an audit log of every request of a service account, from which the reads the
//! policy-server made, and the answers RBAC gave, are counted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::{Error, Result, read, write};
pub mod kubectl;
pub mod pki;
pub mod process;

use kubectl::Kubectl;
use pki::{Authority, Pair, Subject, service_account_key};
use process::{Lifetime, spawn, stop_all};

/// The Service IP range (the API server's default Service `kubernetes` takes the first one).
pub const SERVICE_RANGE: &str = "10.96.0.0/12";

/// Plugins the setup server runs without: the webhooks (the bundle's), and the PVC/PV
/// protection finalizers no controller would ever remove here.
const SETUP_WITHOUT: &str = "MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy,StorageObjectInUseProtection";

/// What [`up`] needs.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The cluster directory (emptied first).
    pub dir: PathBuf,
    /// The etcd binary.
    pub etcd: PathBuf,
    /// The kube-apiserver binary.
    pub kube_apiserver: PathBuf,
    /// The kubectl binary.
    pub kubectl: PathBuf,
    /// CRD files or directories of them (`*.yaml`), applied once the API server is ready.
    pub crds: Vec<PathBuf>,
    /// How long the servers live.
    pub lifetime: Lifetime,
}

/// A running cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its directory.
    pub dir: PathBuf,
    /// The main API server's port.
    pub port: u16,
    /// kubectl as the admin, on the main API server.
    pub admin: Kubectl,
    /// kubectl as the admin, on the setup server (no webhooks).
    pub setup: Kubectl,
    /// The authority's certificate (every caBundle).
    pub ca: PathBuf,
    /// The audit log of the service accounts' requests.
    pub audit_log: PathBuf,
    /// CRDs applied.
    pub crds: usize,
}

fn kubeconfig(ca: &Path, port: u16, cert: &Path, key: &Path) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": format!("https://127.0.0.1:{port}"),
            "certificate-authority": ca,
        }}],
        "users": [{"name": "admin", "user": {"client-certificate": cert, "client-key": key}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
        "current-context": "e2e",
    })
}

/// A kubeconfig for `token` on the main API server of `cluster` (policy-server's).
pub fn token_kubeconfig(cluster: &Cluster, token: &str, path: &Path) -> Result<()> {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": format!("https://127.0.0.1:{}", cluster.port),
            "certificate-authority": cluster.ca,
        }}],
        "users": [{"name": "token", "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "token"}}],
        "current-context": "e2e",
    });
    write(path, serde_json::to_string_pretty(&config)?)
}

/// The audit policy: metadata of every request of a service account, nothing else.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: [system:serviceaccounts]
- level: None
";

fn wait_ready(
    kubectl: &Kubectl,
    server: &mut Child,
    what: &str,
    log: &Path,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(status)) = server.try_wait() {
            return Err(Error::Invalid(format!(
                "{what} exited ({status}); see {}",
                log.display()
            )));
        }
        let answer = kubectl.answer(&["get", "--raw", "/readyz"], None)?;
        if answer.ok && answer.stdout.trim() == "ok" {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Invalid(format!(
                "{what} not ready after {}s ({}); see {}",
                timeout.as_secs(),
                answer.stderr.trim(),
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn yaml_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Error::io(p, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The certificates and files every API server of a cluster directory shares.
struct Shared {
    ca: PathBuf,
    serving: Pair,
    admin: Pair,
    service_account: Pair,
    audit_policy: PathBuf,
    audit_log: PathBuf,
}

/// Starts etcd on two free loopback ports; returns its client port.
fn start_etcd(opts: &UpOptions) -> Result<u16> {
    let dir = &opts.dir;
    let client = testdrive::http::free_port(true)?;
    let peer = client + 1;
    let mut etcd = Command::new(&opts.etcd);
    etcd.args([
        "--name=e2e",
        "--unsafe-no-fsync",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
        "--listen-metrics-urls=",
    ])
    .arg(format!("--data-dir={}", dir.join("etcd").display()))
    .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
    .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
    .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
    .arg(format!(
        "--initial-advertise-peer-urls=http://127.0.0.1:{peer}"
    ))
    .arg(format!("--initial-cluster=e2e=http://127.0.0.1:{peer}"));
    spawn(dir, "etcd", etcd, opts.lifetime)?;
    Ok(client)
}

/// Starts the kube-apiserver `name` on etcd's `etcd_client` port, `without` these admission
/// plugins (else with the audit log), and writes its admin kubeconfig; returns it running,
/// before it is ready.
fn start_apiserver(
    opts: &UpOptions,
    shared: &Shared,
    name: &str,
    etcd_client: u16,
    without: Option<&str>,
) -> Result<(u16, PathBuf, Child)> {
    let dir = &opts.dir;
    let port = testdrive::http::free_port(false)?;
    let path = |p: &Path| p.display().to_string();
    let mut server = Command::new(&opts.kube_apiserver);
    server
        .args([
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            "--v=1",
        ])
        .arg(format!("--etcd-servers=http://127.0.0.1:{etcd_client}"))
        .arg(format!("--secure-port={port}"))
        .arg(format!("--service-cluster-ip-range={SERVICE_RANGE}"))
        .arg(format!("--cert-dir={}", path(&dir.join(name))))
        .arg(format!("--tls-cert-file={}", path(&shared.serving.cert)))
        .arg(format!(
            "--tls-private-key-file={}",
            path(&shared.serving.key)
        ))
        .arg(format!("--client-ca-file={}", path(&shared.ca)))
        .arg(format!("--service-account-issuer=https://127.0.0.1:{port}"))
        .arg(format!(
            "--service-account-key-file={}",
            path(&shared.service_account.cert)
        ))
        .arg(format!(
            "--service-account-signing-key-file={}",
            path(&shared.service_account.key)
        ));
    match without {
        None => {
            server
                .arg(format!(
                    "--audit-policy-file={}",
                    path(&shared.audit_policy)
                ))
                .arg(format!("--audit-log-path={}", path(&shared.audit_log)))
                .arg("--audit-log-format=json");
        }
        Some(plugins) => {
            server.arg(format!("--disable-admission-plugins={plugins}"));
        }
    }
    let child = spawn(dir, name, server, opts.lifetime)?;
    let config = dir.join(format!("{name}.kubeconfig"));
    let admin = kubeconfig(&shared.ca, port, &shared.admin.cert, &shared.admin.key);
    write(&config, serde_json::to_string_pretty(&admin)?)?;
    Ok((port, config, child))
}

/// Applies every CRD of `files` and waits until they are established; returns how many
/// objects kubectl applied.
fn apply_crds(kubectl: &Kubectl, files: &[PathBuf]) -> Result<usize> {
    if files.is_empty() {
        return Ok(0);
    }
    let mut args = vec!["apply".to_owned(), "--server-side".into()];
    for f in files {
        args.push("-f".into());
        args.push(f.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let applied = kubectl.run(&args, None)?.lines().count();
    kubectl.run(
        &[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ],
        None,
    )?;
    Ok(applied)
}

/// Starts the cluster of `opts.dir` (stopping whatever it ran before), applies the CRDs and
/// waits until they are established.
pub fn up(opts: &UpOptions) -> Result<Cluster> {
    let dir = &opts.dir;
    if dir.exists() {
        stop_all(dir, Duration::from_secs(10))?;
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::create_dir_all(dir.join("etcd")).map_err(|e| Error::io(dir, e))?;
    let ca = Authority::create(dir)?;
    let shared = Shared {
        serving: ca.issue(dir, "apiserver", Subject::Server("kube-apiserver"))?,
        admin: ca.issue(dir, "admin", Subject::Client("admin", &["system:masters"]))?,
        service_account: service_account_key(dir)?,
        audit_policy: dir.join("audit-policy.yaml"),
        audit_log: dir.join("audit.log"),
        ca: ca.cert,
    };
    write(&shared.audit_policy, AUDIT_POLICY)?;
    let etcd_client = start_etcd(opts)?;
    let (port, main_config, mut main) =
        start_apiserver(opts, &shared, "kube-apiserver", etcd_client, None)?;
    let (_, setup_config, mut setup) = start_apiserver(
        opts,
        &shared,
        "setup-apiserver",
        etcd_client,
        Some(SETUP_WITHOUT),
    )?;
    let mut cluster = Cluster {
        dir: dir.clone(),
        port,
        admin: Kubectl::new(&opts.kubectl, &main_config),
        setup: Kubectl::new(&opts.kubectl, &setup_config),
        ca: shared.ca.clone(),
        audit_log: shared.audit_log.clone(),
        crds: 0,
    };
    let ready = Duration::from_secs(120);
    let log = |name: &str| dir.join(format!("{name}.log"));
    wait_ready(
        &cluster.admin,
        &mut main,
        "kube-apiserver",
        &log("kube-apiserver"),
        ready,
    )?;
    wait_ready(
        &cluster.setup,
        &mut setup,
        "the setup kube-apiserver",
        &log("setup-apiserver"),
        ready,
    )?;
    cluster.crds = apply_crds(&cluster.admin, &yaml_files(&opts.crds)?)?;
    Ok(cluster)
}

/// Stops every server of `dir` and removes it; returns those that had to be killed.
pub fn down(dir: &Path) -> Result<Vec<String>> {
    let killed = stop_all(dir, Duration::from_secs(10))?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(killed)
}

/// One read of a service account, from the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// `get`, `list` or `watch`.
    pub verb: String,
    /// `<group>/<resource>` (`core/<resource>` for the core group).
    pub resource: String,
    /// The answer's HTTP status.
    pub code: u64,
}

/// The reads `user` made on the main API server, in order.
pub fn reads_of(cluster: &Cluster, user: &str) -> Result<Vec<Read>> {
    if !cluster.audit_log.exists() {
        return Ok(Vec::new());
    }
    let text = read(&cluster.audit_log)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.pointer("/user/username").and_then(Value::as_str) == Some(user))
        .filter(|e| e.get("stage").and_then(Value::as_str) == Some("ResponseComplete"))
        .filter_map(|e| {
            let verb = e.get("verb").and_then(Value::as_str)?;
            if !matches!(verb, "get" | "list" | "watch") {
                return None;
            }
            let group = e
                .pointer("/objectRef/apiGroup")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty())
                .unwrap_or("core");
            let resource = e.pointer("/objectRef/resource").and_then(Value::as_str)?;
            Some(Read {
                verb: verb.to_owned(),
                resource: format!("{group}/{resource}"),
                code: e
                    .pointer("/responseStatus/code")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            })
        })
        .collect())
}
