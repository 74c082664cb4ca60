//! One cluster directory: etcd and kube-apiserver on loopback, as envtest runs them, plus a
//! second kube-apiserver on the same etcd without the admission webhooks, through which the
//! harness writes each scenario's state (a Namespace the bundle's bindings would refuse to
//! a tenant must still exist for the tenant's requests in it). Further planes (a pair of API
//! servers on their own etcd prefix, so another cluster on the same etcd) start the same way:
//! Capsule's, on the test host (`crate::capsule`).
//!
//! The main API server: a client-certificate admin in `system:masters`, RBAC, service-account
//! tokens (issuer and signing key), every default admission plugin (the webhooks among them),
//! privileged containers allowed (the pod-security policies judge them, not the API server),
//! and an audit log of every request of a service account, from which the reads the
//! policy-server made, and the answers RBAC gave, are counted.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::{Error, Result, read, write};
pub mod host;
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

/// A running cluster (one plane of a cluster directory).
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its directory.
    pub dir: PathBuf,
    /// The address its API servers listen on.
    pub address: Ipv4Addr,
    /// The main API server's port.
    pub port: u16,
    /// etcd's client port (every plane's).
    pub etcd_port: u16,
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

fn kubeconfig(ca: &Path, address: Ipv4Addr, port: u16, cert: &Path, key: &Path) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": format!("https://{address}:{port}"),
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
            "server": format!("https://{}:{}", cluster.address, cluster.port),
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

pub(crate) fn yaml_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
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

/// The certificates and files every API server of a cluster directory shares, written by
/// [`up`].
struct Shared {
    ca: PathBuf,
    admin: Pair,
    service_account: Pair,
    audit_policy: PathBuf,
    audit_log: PathBuf,
}

impl Shared {
    fn of(dir: &Path) -> Shared {
        let pair = |name: &str, cert: &str, key: &str| Pair {
            cert: dir.join(format!("{name}.{cert}")),
            key: dir.join(format!("{name}.{key}")),
        };
        Shared {
            ca: dir.join("ca.crt"),
            admin: pair("admin", "crt", "key"),
            service_account: pair("service-account", "pub", "key"),
            audit_policy: dir.join("audit-policy.yaml"),
            audit_log: dir.join("audit.log"),
        }
    }
}

/// A pair of API servers on the cluster's etcd: the main one (every admission plugin, the
/// webhooks among them) and its setup server (without [`SETUP_WITHOUT`]).
#[derive(Debug, Clone, Copy)]
pub struct Plane<'a> {
    /// The main server's name (its log, kubeconfig and certificate files); the setup
    /// server's is `<setup>`.
    pub main: &'a str,
    /// The setup server's name.
    pub setup: &'a str,
    /// The address both listen on.
    pub address: Ipv4Addr,
    /// The etcd prefix that holds the plane's objects.
    pub etcd_prefix: &'a str,
    /// Whether the main server writes the audit log of the service accounts' requests.
    pub audit: bool,
    /// Admission plugins the main server runs beyond the defaults (comma-separated), or "".
    pub enable: &'a str,
}

/// The bundle's plane: on loopback, Kubernetes' own etcd prefix, audited.
pub const MAIN_PLANE: Plane<'static> = Plane {
    main: "kube-apiserver",
    setup: "setup-apiserver",
    address: Ipv4Addr::LOCALHOST,
    etcd_prefix: "/registry",
    audit: true,
    enable: "",
};

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

/// One API server of a plane.
struct Server<'a> {
    name: &'a str,
    serving: &'a Pair,
    /// Admission plugins it runs without (the setup server's), else the main one's.
    without: Option<&'a str>,
}

/// Starts the kube-apiserver `server` of `plane` on etcd's `etcd_client` port, and writes its
/// admin kubeconfig; returns it running, before it is ready.
fn start_apiserver(
    opts: &UpOptions,
    shared: &Shared,
    plane: &Plane<'_>,
    server_of: &Server<'_>,
    etcd_client: u16,
) -> Result<(u16, PathBuf, Child)> {
    let dir = &opts.dir;
    let name = server_of.name;
    let port = testdrive::http::free_port(false)?;
    let path = |p: &Path| p.display().to_string();
    let address = plane.address;
    let mut server = Command::new(&opts.kube_apiserver);
    server
        .arg(format!("--bind-address={address}"))
        .arg(format!("--advertise-address={address}"))
        .arg(format!("--etcd-prefix={}", plane.etcd_prefix))
        .args([
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
        .arg(format!("--tls-cert-file={}", path(&server_of.serving.cert)))
        .arg(format!(
            "--tls-private-key-file={}",
            path(&server_of.serving.key)
        ))
        .arg(format!("--client-ca-file={}", path(&shared.ca)))
        .arg(format!("--service-account-issuer=https://{address}:{port}"))
        .arg(format!(
            "--service-account-key-file={}",
            path(&shared.service_account.cert)
        ))
        .arg(format!(
            "--service-account-signing-key-file={}",
            path(&shared.service_account.key)
        ));
    match server_of.without {
        None if plane.audit => {
            server
                .arg(format!(
                    "--audit-policy-file={}",
                    path(&shared.audit_policy)
                ))
                .arg(format!("--audit-log-path={}", path(&shared.audit_log)))
                .arg("--audit-log-format=json");
        }
        None => {}
        Some(plugins) => {
            server.arg(format!("--disable-admission-plugins={plugins}"));
        }
    }
    if server_of.without.is_none() && !plane.enable.is_empty() {
        server.arg(format!("--enable-admission-plugins={}", plane.enable));
    }
    let child = spawn(dir, name, server, opts.lifetime)?;
    let config = dir.join(format!("{name}.kubeconfig"));
    let admin = kubeconfig(
        &shared.ca,
        address,
        port,
        &shared.admin.cert,
        &shared.admin.key,
    );
    write(&config, serde_json::to_string_pretty(&admin)?)?;
    Ok((port, config, child))
}

/// Applies every CRD of `files` and waits until they are established; returns how many
/// objects kubectl applied.
pub(crate) fn apply_crds(kubectl: &Kubectl, files: &[PathBuf]) -> Result<usize> {
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
    ca.issue(dir, "admin", Subject::Client("admin", &["system:masters"]))?;
    service_account_key(dir)?;
    write(&Shared::of(dir).audit_policy, AUDIT_POLICY)?;
    let etcd_port = start_etcd(opts)?;
    let mut cluster = start_plane(opts, etcd_port, &MAIN_PLANE)?;
    cluster.crds = apply_crds(&cluster.admin, &yaml_files(&opts.crds)?)?;
    Ok(cluster)
}

/// Starts the API servers of `plane` on the etcd of `opts.dir` (which [`up`] started), and
/// waits until both are ready.
pub fn start_plane(opts: &UpOptions, etcd_port: u16, plane: &Plane<'_>) -> Result<Cluster> {
    let dir = &opts.dir;
    let shared = Shared::of(dir);
    let extra: Vec<Ipv4Addr> = Some(plane.address)
        .filter(|a| !a.is_loopback())
        .into_iter()
        .collect();
    let authority = Authority::load(dir)?;
    let serving = authority.issue(
        dir,
        &format!("{}-serving", plane.main),
        Subject::Server("kube-apiserver", &extra),
    )?;
    let main_server = Server {
        name: plane.main,
        serving: &serving,
        without: None,
    };
    let setup_server = Server {
        name: plane.setup,
        serving: &serving,
        without: Some(SETUP_WITHOUT),
    };
    let (port, main_config, mut main) =
        start_apiserver(opts, &shared, plane, &main_server, etcd_port)?;
    let (_, setup_config, mut setup) =
        start_apiserver(opts, &shared, plane, &setup_server, etcd_port)?;
    let cluster = Cluster {
        dir: dir.clone(),
        address: plane.address,
        port,
        etcd_port,
        admin: Kubectl::new(&opts.kubectl, &main_config),
        setup: Kubectl::new(&opts.kubectl, &setup_config),
        ca: authority.cert.clone(),
        audit_log: shared.audit_log.clone(),
        crds: 0,
    };
    let ready = Duration::from_secs(120);
    let log = |name: &str| dir.join(format!("{name}.log"));
    wait_ready(
        &cluster.admin,
        &mut main,
        plane.main,
        &log(plane.main),
        ready,
    )?;
    wait_ready(
        &cluster.setup,
        &mut setup,
        &format!("the setup server {}", plane.setup),
        &log(plane.setup),
        ready,
    )?;
    Ok(cluster)
}

/// Stops every server of `dir`, removes its test host and the directory; returns the servers
/// that had to be killed.
pub fn down(dir: &Path) -> Result<Vec<String>> {
    let killed = stop_all(dir, Duration::from_secs(10))?;
    host::remove(dir)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(killed)
}

/// [`down`], the servers' logs (`*.log`) first moved to `<dir>.logs` (replacing it), where
/// a run that failed can be read after it.
pub fn down_keeping_logs(dir: &Path) -> Result<Vec<String>> {
    let killed = stop_all(dir, Duration::from_secs(10))?;
    let mut logs = dir.as_os_str().to_owned();
    logs.push(".logs");
    let logs = PathBuf::from(logs);
    if logs.exists() {
        std::fs::remove_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
    }
    if dir.exists() {
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let path = entry.map_err(|e| Error::io(dir, e))?.path();
            if path.extension().is_some_and(|e| e == "log")
                && let Some(name) = path.file_name()
            {
                std::fs::rename(&path, logs.join(name)).map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    Ok([killed, down(dir)?].concat())
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
