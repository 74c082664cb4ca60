//! Requests through the API server: the real policy-server served over HTTPS, its lookups
//! made with a token of the install's ServiceAccount (so Kubernetes' RBAC grants or refuses
//! every read), each binding's webhook registered as kubewarden-controller writes it but
//! pointed at that policy-server by `url` with the cluster's caBundle, and every request sent
//! with kubectl as its user (`--as`, `--as-group`), with a server-side dry run.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::cluster::pki::{Authority, Subject};
use crate::cluster::process::{Lifetime, spawn};
use crate::cluster::{Cluster, token_kubeconfig};
use crate::error::{Error, Result, read, write};
use testdrive::kube::controller::{Controller, LoadedPolicy, ModulesDir};

/// How long the API server takes to see webhook configurations written or removed.
const SETTLE: Duration = Duration::from_millis(700);

/// The label of every webhook configuration the harness writes.
const LABEL: &str = "tenancy-e2e";

/// The ClusterRole (and binding) letting the requests' users do what they ask, so that the
/// webhooks, not RBAC, judge their requests.
const REQUESTER_ROLE: &str = "tenancy-e2e-requester";

/// A running policy-server.
pub struct Served {
    /// Its HTTPS port.
    pub port: u16,
    child: Child,
}

impl Served {
    /// Stops it.
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The user policy-server's token authenticates as.
pub fn service_account_user(namespace: &str, account: &str) -> String {
    format!("system:serviceaccount:{namespace}:{account}")
}

/// Starts `binary` on `policies` (policies.yml) in `dir`, serving HTTPS with a certificate of
/// the cluster's authority, its lookups made with a TokenRequest token of the ServiceAccount
/// `namespace/account`; returns once it is ready.
pub fn serve(
    cluster: &Cluster,
    binary: &Path,
    policies: &Value,
    dir: &Path,
    (namespace, account): (&str, &str),
) -> Result<Served> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let token = cluster.admin.run(
        &[
            "create",
            "token",
            account,
            "--namespace",
            namespace,
            "--duration=2h",
        ],
        None,
    )?;
    let kubeconfig = dir.join("kubeconfig.json");
    token_kubeconfig(cluster, token.trim(), &kubeconfig)?;
    let authority = Authority::load(&cluster.dir)?;
    let tls = authority.issue(dir, "policy-server", Subject::Server("policy-server", &[]))?;
    let policies_file = dir.join("policies.yml");
    write(&policies_file, serde_json::to_string_pretty(policies)?)?;
    let port = testdrive::http::free_port(true)?;
    let readiness = port + 1;
    let mut command = Command::new(binary);
    command
        .arg("--policies")
        .arg(&policies_file)
        .args(["--addr", "127.0.0.1", "--port", &port.to_string()])
        .args(["--readiness-probe-port", &readiness.to_string()])
        .arg("--cert-file")
        .arg(&tls.cert)
        .arg("--key-file")
        .arg(&tls.key)
        .arg("--policies-download-dir")
        .arg(dir.join("downloads"))
        .arg("--sigstore-cache-dir")
        .arg(dir.join("sigstore"))
        .arg("--log-no-color")
        .env("KUBECONFIG", &kubeconfig);
    let name = dir
        .file_name()
        .map_or("policy-server".into(), |n| n.to_string_lossy().into_owned());
    // recorded in the cluster's pid file, so that `control-plane down` stops it too
    let mut child = spawn(&cluster.dir, &name, command, Lifetime::ThisRun)?;
    let log = cluster.dir.join(format!("{name}.log"));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Invalid(format!(
                "policy-server exited ({status}); see {}",
                log.display()
            )));
        }
        if matches!(
            testdrive::http::http_get(readiness, "/readiness"),
            Ok((200, _))
        ) {
            return Ok(Served { port, child });
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(Error::Invalid(format!(
                "policy-server not ready after 300 s; see {}",
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts `binary` on the policies.yml `controller` writes for the PolicyServer `server`
/// (modules from `modules_dir`), its token that of the PolicyServer's ServiceAccount.
pub fn serve_controller(
    cluster: &Cluster,
    binary: &Path,
    modules_dir: &Path,
    controller: &Controller,
    name: &str,
) -> Result<Served> {
    let policies = controller.policies_yml(&ModulesDir::new(modules_dir)?)?;
    let server = &controller.server;
    let account = server.service_account.as_deref().unwrap_or("default");
    serve(
        cluster,
        binary,
        &policies,
        &cluster.dir.join(name),
        (&server.deployments_namespace, account),
    )
}

/// The webhook configuration kubewarden-controller writes for `policy`, its webhook pointed
/// at `port` on loopback.
pub fn configuration(policy: &LoadedPolicy, port: u16, ca_bundle: &str) -> Value {
    let mut webhook = policy.webhook.clone();
    if let Some(m) = webhook.as_object_mut() {
        m.insert(
            "clientConfig".into(),
            json!({"url": format!("https://127.0.0.1:{port}/validate/{}", policy.id), "caBundle": ca_bundle}),
        );
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": if policy.mutating { "MutatingWebhookConfiguration" } else { "ValidatingWebhookConfiguration" },
        "metadata": {"name": policy.id, "labels": {"kubewarden": "true", LABEL: "true"}},
        "webhooks": [webhook],
    })
}

/// The cluster's caBundle (base64 of its authority's PEM).
pub fn ca_bundle(cluster: &Cluster) -> Result<String> {
    Ok(base64::engine::general_purpose::STANDARD.encode(read(&cluster.ca)?))
}

/// Replaces every webhook configuration the harness wrote by those of `policies`, and
/// waits until the API server uses them.
pub fn register(cluster: &Cluster, policies: &[&LoadedPolicy], port: u16) -> Result<()> {
    unregister(cluster)?;
    let bundle = ca_bundle(cluster)?;
    let objects: Vec<Value> = policies
        .iter()
        .map(|p| configuration(p, port, &bundle))
        .collect();
    if !objects.is_empty() {
        cluster.admin.apply(&objects, "tenancy-e2e")?;
    }
    std::thread::sleep(SETTLE);
    Ok(())
}

/// Removes every webhook configuration the harness wrote.
pub fn unregister(cluster: &Cluster) -> Result<()> {
    cluster.admin.run(
        &[
            "delete",
            "validatingwebhookconfigurations,mutatingwebhookconfigurations",
            "-l",
            &format!("{LABEL}=true"),
            "--ignore-not-found",
        ],
        None,
    )?;
    Ok(())
}

/// Lets every user of `requests` do anything (a ClusterRole bound to each by name), so that
/// RBAC does not stand between a tenant's request and the webhooks.
pub fn grant_requesters<'a>(
    cluster: &Cluster,
    requests: impl IntoIterator<Item = &'a Value>,
) -> Result<usize> {
    let users: BTreeSet<&str> = requests
        .into_iter()
        .filter_map(|r| r.pointer("/userInfo/username").and_then(Value::as_str))
        .filter(|u| !u.is_empty())
        .collect();
    let subjects: Vec<Value> = users
        .iter()
        .map(|u| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}))
        .collect();
    let objects = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": REQUESTER_ROLE},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": REQUESTER_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": REQUESTER_ROLE},
            "subjects": subjects}),
    ];
    cluster.admin.apply(&objects, "tenancy-e2e")?;
    Ok(users.len())
}

/// What the API server answered a request.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Whether it was admitted.
    pub allowed: bool,
    /// The webhook that refused it (`<policy id>.kubewarden.admission`), when one did.
    pub refused_by: Option<String>,
    /// The refusal's message (the webhook's, else the API server's).
    pub message: String,
    /// The object as admitted (mutations and the API server's defaults applied).
    pub object: Option<Value>,
}

/// Why a request cannot go through kubectl.
pub fn unsendable(request: &Value) -> Option<String> {
    let operation = request
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("");
    let sub = request
        .get("subResource")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !sub.is_empty() {
        return Some(format!("{operation} of the subresource {sub}"));
    }
    if !matches!(operation, "CREATE" | "UPDATE" | "DELETE") {
        return Some(format!("operation {operation}"));
    }
    if request
        .pointer("/userInfo/username")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Some("no userInfo.username".into());
    }
    None
}

/// The kubectl resource a request names (`<resource>.<version>.<group>`).
fn resource_of(request: &Value) -> String {
    let text = |p: &str| request.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (group, version, resource) = (
        text("/resource/group"),
        text("/resource/version"),
        text("/resource/resource"),
    );
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{version}.{group}")
    }
}

/// Sends `request` through the main API server as its user, with a server-side dry run.
pub fn send(cluster: &Cluster, request: &Value) -> Result<Outcome> {
    let operation = request
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut args: Vec<String> = Vec::new();
    let mut stdin = None;
    match operation {
        "CREATE" | "UPDATE" => {
            let object = request
                .get("object")
                .and_then(|o| crate::state::with_namespace(o, request))
                .map(|o| crate::state::writable(&o))
                .ok_or_else(|| Error::Invalid("the request has no object".into()))?;
            args.push(
                if operation == "CREATE" {
                    "create"
                } else {
                    "replace"
                }
                .into(),
            );
            args.extend(["-f".into(), "-".into(), "-o".into(), "json".into()]);
            stdin = Some(object.to_string());
        }
        _ => {
            let name = request.get("name").and_then(Value::as_str).unwrap_or("");
            args.extend([
                "delete".into(),
                resource_of(request),
                name.to_owned(),
                "--wait=false".into(),
            ]);
        }
    }
    args.push("--dry-run=server".into());
    if let Some(ns) = request
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        args.push(format!("--namespace={ns}"));
    }
    if let Some(user) = request
        .pointer("/userInfo/username")
        .and_then(Value::as_str)
    {
        args.push(format!("--as={user}"));
    }
    for group in request
        .pointer("/userInfo/groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|g| *g != "system:authenticated")
    {
        args.push(format!("--as-group={group}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let answer = cluster.admin.answer(&args, stdin.as_deref())?;
    if answer.ok {
        let object = serde_json::from_str(&answer.stdout).ok();
        return Ok(Outcome {
            allowed: true,
            refused_by: None,
            message: String::new(),
            object,
        });
    }
    Ok(refusal(&answer.stderr))
}

/// A refusal as kubectl prints it: `... admission webhook "<name>" denied the request: <message>`.
fn refusal(stderr: &str) -> Outcome {
    let text = stderr.trim();
    let (refused_by, message) = match text.split_once("admission webhook \"") {
        Some((_, rest)) => match rest.split_once('"') {
            Some((name, tail)) => (
                Some(name.to_owned()),
                tail.trim_start_matches(" denied the request: ")
                    .trim()
                    .to_owned(),
            ),
            None => (None, text.to_owned()),
        },
        None => (None, text.to_owned()),
    };
    Outcome {
        allowed: false,
        refused_by,
        message,
        object: None,
    }
}

/// The policy id of a webhook name (`<id>.kubewarden.admission`).
pub fn policy_id(webhook: &str) -> &str {
    webhook
        .strip_suffix(".kubewarden.admission")
        .unwrap_or(webhook)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_refusal_names_the_webhook_and_keeps_the_message() {
        let o = refusal(
            "Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"clusterwide-x.kubewarden.admission\" denied the request: spec.tolerations[0]: refused\n",
        );
        assert!(!o.allowed);
        assert_eq!(
            o.refused_by.as_deref(),
            Some("clusterwide-x.kubewarden.admission")
        );
        assert_eq!(o.message, "spec.tolerations[0]: refused");
        assert_eq!(
            policy_id("clusterwide-x.kubewarden.admission"),
            "clusterwide-x"
        );
        let other = refusal("Error from server (Forbidden): pods \"p\" is forbidden: no");
        assert_eq!(other.refused_by, None);
    }

    #[test]
    fn subresources_and_connect_are_not_sent() {
        assert!(
            unsendable(&json!({"operation": "CONNECT", "userInfo": {"username": "a"}})).is_some()
        );
        assert!(unsendable(&json!({"operation": "UPDATE", "subResource": "status", "userInfo": {"username": "a"}})).is_some());
        assert!(
            unsendable(&json!({"operation": "CREATE", "userInfo": {"username": "a"}})).is_none()
        );
    }
}
