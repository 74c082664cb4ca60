//! The install directory's Kubernetes objects (ServiceAccounts, RBAC) against the Kubernetes
//! types, and its `kustomization.yaml` against its files.
//!
//! An object is valid when it decodes as its `k8s-openapi` type and encodes back to exactly
//! what was written: a misspelled or unknown field, a wrong type or a missing required field
//! is named.

use std::collections::BTreeSet;
use std::path::Path;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use policy_host::cluster::yaml_objects;
use policy_host::error::{Error, Result, read_text};

/// The name of the kustomization file of an install directory.
pub const KUSTOMIZATION: &str = "kustomization.yaml";

/// What [`check_install_dir`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct InstallReport {
    /// Kubernetes objects checked against their types.
    pub objects: usize,
    /// Files the kustomization lists.
    pub listed: usize,
    /// YAML files of the directory (kustomization excluded).
    pub files: usize,
    /// `<file>: <problem>`.
    pub problems: Vec<String>,
}

/// Checks every Kubernetes object of the YAML files directly in `dir` (Kubewarden's kinds are
/// left to the CRD check) and that `kustomization.yaml` lists exactly those files. A missing
/// directory is an empty report.
pub fn check_install_dir(dir: &Path) -> Result<InstallReport> {
    let mut report = InstallReport::default();
    if !dir.is_dir() {
        return Ok(report);
    }
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if path.is_file()
            && (name.ends_with(".yaml") || name.ends_with(".yml"))
            && name != KUSTOMIZATION
        {
            files.insert(name);
        }
    }
    report.files = files.len();
    for name in &files {
        let path = dir.join(name);
        for (i, object) in yaml_objects(&read_text(&path)?, name)?.iter().enumerate() {
            if let Some(checked) = object_problem(object) {
                report.objects += 1;
                if let Some(problem) = checked {
                    report
                        .problems
                        .push(format!("{name}: object #{}: {problem}", i + 1));
                }
            }
        }
    }
    let path = dir.join(KUSTOMIZATION);
    if !path.is_file() {
        report.problems.push(format!(
            "{KUSTOMIZATION}: missing (kubectl apply -k needs it)"
        ));
        return Ok(report);
    }
    let kustomization: Value = serde_yaml::from_str(&read_text(&path)?)
        .map_err(|e| Error::parse(path.display().to_string(), e))?;
    let listed: BTreeSet<String> = kustomization
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    report.listed = listed.len();
    for name in listed.difference(&files) {
        report.problems.push(format!(
            "{KUSTOMIZATION}: resources names {name:?}, which is not a YAML file of the directory"
        ));
    }
    for name in files.difference(&listed) {
        report.problems.push(format!(
            "{KUSTOMIZATION}: resources leaves out {name:?}: kubectl apply -k would not apply it"
        ));
    }
    Ok(report)
}

/// `None` for a kind this check does not know (Kubewarden's, checked elsewhere);
/// `Some(None)` for a valid object; `Some(Some(problem))` otherwise.
fn object_problem(object: &Value) -> Option<Option<String>> {
    let api_version = object.get("apiVersion").and_then(Value::as_str)?;
    let kind = object.get("kind").and_then(Value::as_str)?;
    let verdict = match (api_version, kind) {
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(object),
        ("v1", "Namespace") => round_trip::<Namespace>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<ClusterRole>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<ClusterRoleBinding>(object)
        }
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(object),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(object),
        (v, _) if v.starts_with("policies.kubewarden.io/") => return None,
        (v, k) => Some(format!(
            "{v} {k} is not a kind the install check knows (ServiceAccount, Namespace, RBAC)"
        )),
    };
    Some(verdict)
}

/// Decodes `object` as `T` and encodes it back: the first field that differs, if any (a
/// field the type drops is unknown; one the type adds is a required field left out).
fn round_trip<T: DeserializeOwned + Serialize>(object: &Value) -> Option<String> {
    let typed: T = match serde_json::from_value(object.clone()) {
        Ok(t) => t,
        Err(e) => return Some(format!("not a valid object of its kind: {e}")),
    };
    let back = match serde_json::to_value(&typed) {
        Ok(v) => v,
        Err(e) => return Some(format!("cannot be encoded again: {e}")),
    };
    first_difference(object, &back, "")
        .map(|path| format!("{path}: not a field of its kind (misspelled or unknown)"))
        .or_else(|| {
            first_difference(&back, object, "")
                .map(|path| format!("{path}: missing (its kind requires it)"))
        })
}

/// The path of the first value of `written` the typed copy does not keep.
fn first_difference(written: &Value, typed: &Value, path: &str) -> Option<String> {
    match (written, typed) {
        (Value::Object(w), Value::Object(t)) => w.iter().find_map(|(key, value)| {
            let at = format!("{path}.{key}");
            match t.get(key) {
                Some(kept) => first_difference(value, kept, &at),
                None => Some(at.trim_start_matches('.').to_owned()),
            }
        }),
        (Value::Array(w), Value::Array(t)) => w.iter().enumerate().find_map(|(i, value)| {
            let at = format!("{path}[{i}]");
            match t.get(i) {
                Some(kept) => first_difference(value, kept, &at),
                None => Some(at.trim_start_matches('.').to_owned()),
            }
        }),
        (w, t) if w == t => None,
        _ => Some(path.trim_start_matches('.').to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_misspelled_rbac_field_is_named() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resource": ["pods"], "verbs": ["get"]}]});
        assert_eq!(
            object_problem(&role),
            Some(Some(
                "rules[0].resource: not a field of its kind (misspelled or unknown)".into()
            ))
        );
        let good = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert_eq!(object_problem(&good), Some(None));
    }

    #[test]
    fn a_binding_without_its_role_is_refused_and_kubewarden_kinds_are_left_alone() {
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"}, "subjects": []});
        let problem = object_problem(&binding).unwrap().unwrap();
        assert!(problem.contains("roleRef"), "{problem}");
        let policy = json!({"apiVersion": "policies.kubewarden.io/v1", "kind": "PolicyServer"});
        assert_eq!(object_problem(&policy), None);
        let unknown = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        assert!(object_problem(&unknown).unwrap().is_some());
    }

    #[test]
    fn the_kustomization_must_list_exactly_the_files() {
        let dir = std::env::temp_dir().join(format!("testdrive-install-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("sa.yaml"),
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s, namespace: kubewarden}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("extra.yaml"),
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: t}\n",
        )
        .unwrap();
        std::fs::write(dir.join(KUSTOMIZATION), "resources: [sa.yaml, gone.yaml]\n").unwrap();
        let report = check_install_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(report.objects, 2);
        assert_eq!(
            report.problems,
            [
                "kustomization.yaml: resources names \"gone.yaml\", which is not a YAML file of the directory",
                "kustomization.yaml: resources leaves out \"extra.yaml\": kubectl apply -k would not apply it",
            ]
        );
    }
}
