//! The tenant ceiling against the live API server's roles: its ClusterRoles (Kubernetes'
//! bootstrap roles as this kube-apiserver wrote them, and deploy/'s Gateway API
//! aggregations) read with kubectl and given to `capsule-bindings ceiling`, which aggregates
//! `edit` and `admin` as Kubernetes' aggregation controller does, fails when the baseline
//! ceiling grants anything beyond `admin`, and checks that README's table of every difference
//! from `edit` is this one.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::cluster::Cluster;
use crate::error::{Error, Result, write};

/// The live comparison's line, and the ClusterRoles read.
pub fn check(
    cluster: &Cluster,
    capsule_bindings: &Path,
    readme: &Path,
    version: &str,
) -> Result<(String, usize)> {
    let roles = cluster.admin.get(&["clusterroles"])?;
    let count = roles
        .get("items")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let file = cluster.dir.join("live-clusterroles.json");
    write(&file, serde_json::to_string(&roles)?)?;
    let out = Command::new(capsule_bindings)
        .arg("ceiling")
        .arg("--roles")
        .arg(&file)
        .arg("--source")
        .arg(format!("the live kube-apiserver {version}"))
        .arg("--check")
        .arg(readme)
        .output()
        .map_err(|e| Error::Command {
            program: capsule_bindings.display().to_string(),
            detail: e.to_string(),
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() {
        return Err(Error::Command {
            program: "capsule-bindings ceiling (live roles)".into(),
            detail: format!("{stdout} {}", String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    Ok((stdout, count))
}
