//! Capsule's plane: a pair of API servers of their own on the cluster's etcd (prefix
//! `/capsule`), listening on this side of the test host's veth pair, with all of Capsule's
//! CRDs, and Capsule's controller (`github.com/projectcapsule/capsule` `cmd/controller`, built
//! by `make capsule-bin`) run out of cluster on the test host, where its webhook server and
//! health probe listen (on every interface, which no flag changes).
//!
//! Capsule writes its webhook configurations itself, from the `CapsuleConfiguration` that
//! its own chart renders (the chart's list of webhooks, each with its rules, selectors and
//! failure policy), here with `url` clients on the test host and the cluster's authority as
//! their caBundle, and its TLS reconciler off. The controller runs as its ServiceAccount
//! `capsule-system/capsule` (bound to `cluster-admin`), which Capsule counts as its own
//! identity; the users of the scenarios (group `capsule.clastix.io`) are its users.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::cluster::host::{self, HOST_SIDE, TEST_HOST};
use crate::cluster::kubectl::Kubectl;
use crate::cluster::pki::{Authority, Subject};
use crate::cluster::process::{run, spawn};
use crate::cluster::{Cluster, Plane, UpOptions, apply_crds, start_plane, yaml_files};
use crate::error::{Error, Result, read, write};

/// Capsule's plane.
const CAPSULE_PLANE: Plane<'static> = Plane {
    main: "capsule-apiserver",
    setup: "capsule-setup-apiserver",
    address: HOST_SIDE,
    etcd_prefix: "/capsule",
    audit: false,
    // Capsule's node selectors are the namespace annotation PodNodeSelector enforces; its
    // documentation has it enabled
    enable: "PodNodeSelector",
};

/// The namespace and ServiceAccount Capsule runs as (its chart's defaults).
const NAMESPACE: &str = "capsule-system";
const SERVICE_ACCOUNT: &str = "capsule";
/// The port of Capsule's webhook server on the test host.
const WEBHOOK_PORT: u16 = 9443;
/// The name Capsule gives both of its webhook configurations (the chart's, for release
/// `capsule`).
pub const WEBHOOK_CONFIGURATION: &str = "capsule-dynamic-webhook";
/// The group of the scenarios' users, Capsule's users here.
const USER_GROUP: &str = "capsule.clastix.io";

/// What Capsule's plane needs.
#[derive(Debug, Clone)]
pub struct CapsuleOptions {
    /// Capsule's controller.
    pub capsule: PathBuf,
    /// helm (renders Capsule's chart).
    pub helm: PathBuf,
    /// Capsule's chart, with its CRDs in `crds/`.
    pub chart: PathBuf,
}

/// Capsule's plane, running.
#[derive(Debug, Clone)]
pub struct CapsulePlane {
    /// Its API servers (the main one with Capsule's webhooks).
    pub cluster: Cluster,
    /// kubectl as Capsule's controller, on the main server.
    pub controller: Kubectl,
    /// The webhooks Capsule registered (validating, mutating).
    pub webhooks: (usize, usize),
    /// CRD objects applied (the cluster's and Capsule's).
    pub crds: usize,
}

/// Starts Capsule's plane beside the cluster `opts.dir` runs (whose etcd is on `etcd_port`):
/// the test host, the API servers, the cluster's CRDs and Capsule's, its configuration, then
/// Capsule, and waits
/// until its webhooks are registered and answer.
pub fn up(opts: &UpOptions, etcd_port: u16, capsule: &CapsuleOptions) -> Result<CapsulePlane> {
    let dir = &opts.dir;
    host::create(dir)?;
    let cluster = start_plane(opts, etcd_port, &CAPSULE_PLANE)?;
    // the cluster's CRDs (the Gateway API's among them: the scenarios' state holds its
    // objects) and Capsule's, each once
    let mut files = yaml_files(&opts.crds)?;
    files.extend(yaml_files(&[capsule.chart.join("crds")])?);
    let mut seen = std::collections::BTreeSet::new();
    files.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    let crds = apply_crds(&cluster.admin, &files)?;
    cluster.admin.apply(&identity(), "tenancy-e2e")?;
    let configuration = render_configuration(dir, capsule, &cluster.ca)?;
    cluster.admin.run(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "tenancy-e2e",
            "-f",
            "-",
        ],
        Some(&configuration),
    )?;
    let kubeconfig = controller_kubeconfig(dir, &cluster)?;
    let certs = dir.join("capsule-webhook");
    std::fs::create_dir_all(&certs).map_err(|e| Error::io(&certs, e))?;
    Authority::load(dir)?.issue(
        &certs,
        "tls",
        Subject::Server("capsule-webhook", &[TEST_HOST]),
    )?;
    let mut command = host::command(&capsule.capsule);
    command
        .env("NAMESPACE", NAMESPACE)
        .env("SERVICE_ACCOUNT", SERVICE_ACCOUNT)
        .env("KUBECONFIG", &kubeconfig)
        .args([
            "--metrics-addr=0",
            "--configuration-name=default",
            "--zap-log-level=info",
        ])
        .arg(format!("--webhook-port={WEBHOOK_PORT}"))
        .arg(format!("--webhook-cert-path={}", certs.display()));
    let mut child = spawn(dir, "capsule", command, opts.lifetime)?;
    let log = dir.join("capsule.log");
    let deadline = Instant::now() + Duration::from_secs(120);
    let webhooks = loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Invalid(format!(
                "Capsule exited ({status}); see {}",
                log.display()
            )));
        }
        if let Some(counts) = registered(&cluster)?
            && std::net::TcpStream::connect_timeout(
                &(TEST_HOST, WEBHOOK_PORT).into(),
                Duration::from_millis(200),
            )
            .is_ok()
            && users_known(&cluster)?
        {
            break counts;
        }
        if Instant::now() > deadline {
            return Err(Error::Invalid(format!(
                "Capsule's webhooks not registered and answering after 120s; see {}",
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    Ok(CapsulePlane {
        controller: Kubectl::new(&cluster.admin.bin, &kubeconfig),
        cluster,
        webhooks,
        crds,
    })
}

/// Capsule's namespace and ServiceAccount, bound to `cluster-admin` (its chart binds it so).
fn identity() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "capsule-manager"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]}),
    ]
}

/// Writes a kubeconfig as Capsule's ServiceAccount (the admin's certificate impersonating
/// it, so that the API server adds the ServiceAccount's groups), on the plane's main server;
/// returns its path.
fn controller_kubeconfig(dir: &Path, cluster: &Cluster) -> Result<PathBuf> {
    let path = dir.join("capsule.kubeconfig");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "capsule", "cluster": {
            "server": format!("https://{}:{}", cluster.address, cluster.port),
            "certificate-authority": cluster.ca,
        }}],
        "users": [{"name": "capsule", "user": {
            "client-certificate": dir.join("admin.crt"),
            "client-key": dir.join("admin.key"),
            "as": format!("system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"),
        }}],
        "contexts": [{"name": "capsule", "context": {"cluster": "capsule", "user": "capsule"}}],
        "current-context": "capsule",
    });
    write(&path, serde_json::to_string_pretty(&config)?)?;
    Ok(path)
}

/// The `CapsuleConfiguration` of Capsule's chart (`templates/configuration.yaml`): its
/// webhooks with `url` clients on the test host and `ca` as their caBundle, the TLS
/// reconciler off, and the scenarios' group among its users. The chart is rendered from a
/// copy without its one dependency (capsule-proxy, which is not here and not needed).
fn render_configuration(dir: &Path, capsule: &CapsuleOptions, ca: &Path) -> Result<String> {
    let copy = dir.join("capsule-chart");
    copy_dir(&capsule.chart, &copy)?;
    let chart_yaml = copy.join("Chart.yaml");
    write(&chart_yaml, without_dependencies(&read(&chart_yaml)?))?;
    let lock = copy.join("Chart.lock");
    if lock.exists() {
        std::fs::remove_file(&lock).map_err(|e| Error::io(&lock, e))?;
    }
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(read(ca)?);
    let sets = [
        format!("webhooks.service.url=https://{TEST_HOST}:{WEBHOOK_PORT}"),
        format!("webhooks.service.caBundle={ca_bundle}"),
        "tls.enableController=false".to_owned(),
        format!("manager.options.capsuleUserGroups={{{USER_GROUP}}}"),
    ];
    let copy = copy.display().to_string();
    let mut args = vec![
        "template",
        "capsule",
        &copy,
        "--namespace",
        NAMESPACE,
        "--show-only",
        "templates/configuration.yaml",
    ];
    for s in &sets {
        args.extend(["--set", s]);
    }
    run(&capsule.helm, &args)
}

/// `Chart.yaml` without its `dependencies:` block.
fn without_dependencies(chart: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in chart.lines() {
        let top_level = !line.starts_with([' ', '-', '\t']) && !line.trim().is_empty();
        if top_level {
            skipping = line.starts_with("dependencies:");
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Copies the directory `from` to `to` (replacing it).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| Error::io(to, e))?;
    }
    std::fs::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| Error::io(from, e))? {
        let entry = entry.map_err(|e| Error::io(from, e))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else {
            std::fs::copy(&path, &target).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

/// How many webhooks Capsule registered (validating, mutating), once both configurations
/// exist.
fn registered(cluster: &Cluster) -> Result<Option<(usize, usize)>> {
    let count = |kind: &str| -> Result<Option<usize>> {
        let answer = cluster
            .admin
            .answer(&["get", kind, WEBHOOK_CONFIGURATION, "-o", "json"], None)?;
        if !answer.ok {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(&answer.stdout)?;
        Ok(v.get("webhooks").and_then(Value::as_array).map(Vec::len))
    };
    Ok(
        match (
            count("validatingwebhookconfigurations")?,
            count("mutatingwebhookconfigurations")?,
        ) {
            (Some(v), Some(m)) if v > 0 && m > 0 => Some((v, m)),
            _ => None,
        },
    )
}

/// Whether Capsule's configuration lists its users in its status (what its webhooks read).
fn users_known(cluster: &Cluster) -> Result<bool> {
    let answer = cluster.admin.answer(
        &["get", "capsuleconfigurations", "default", "-o", "json"],
        None,
    )?;
    if !answer.ok {
        return Ok(false);
    }
    let v: Value = serde_json::from_str(&answer.stdout)?;
    Ok(v.pointer("/status/users")
        .and_then(Value::as_array)
        .is_some_and(|u| !u.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dependencies_block_goes_and_nothing_else() {
        let chart = "apiVersion: v2\nname: capsule\ndependencies:\n  - name: capsule-proxy\n    version: 0.14.0\n    alias: proxy\nversion: 0.0.0\n";
        assert_eq!(
            without_dependencies(chart),
            "apiVersion: v2\nname: capsule\nversion: 0.0.0\n"
        );
    }
}
