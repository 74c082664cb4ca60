//! The install directory `deploy/` is what `capsule-bindings install` writes, and its
//! ClusterRole grants exactly the reads the policies declare.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use capsule_bindings::install::{InstallOptions, install};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn deploy_is_what_install_writes() {
    let deploy = root().join("deploy");
    let files = install(&InstallOptions::default()).unwrap();
    let mut stale = Vec::new();
    for file in &files {
        let written = std::fs::read_to_string(deploy.join(file.name)).unwrap_or_default();
        if written != file.text().unwrap() {
            stale.push(file.name);
        }
    }
    assert!(
        stale.is_empty(),
        "deploy/ drifted from `capsule-bindings install` in {stale:?}: run `make deploy` and commit"
    );
    let expected: BTreeSet<&str> = files.iter().map(|f| f.name).collect();
    let present: BTreeSet<String> = std::fs::read_dir(&deploy)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let present: BTreeSet<&str> = present.iter().map(String::as_str).collect();
    assert_eq!(
        present, expected,
        "files of deploy/ that install does not write"
    );
}

/// (API group, resource) pairs.
type Reads = BTreeSet<(String, String)>;

fn declared_reads() -> Reads {
    let mut reads = Reads::new();
    for entry in std::fs::read_dir(root().join("policies")).unwrap() {
        let path = entry.unwrap().path().join("metadata.yml");
        if !path.is_file() {
            continue;
        }
        let metadata: Value =
            serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for r in metadata["contextAwareResources"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let api_version = r["apiVersion"].as_str().unwrap();
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = r["kind"].as_str().unwrap();
            reads.insert((group.to_owned(), policy_host::kube::plural(kind)));
        }
    }
    reads
}

fn granted_reads(role: &Value) -> Reads {
    let mut reads = Reads::new();
    for rule in role["rules"].as_array().unwrap() {
        let verbs: BTreeSet<&str> = rule["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(verbs, BTreeSet::from(["get", "list", "watch"]), "{rule}");
        for group in rule["apiGroups"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                reads.insert((
                    group.as_str().unwrap().to_owned(),
                    resource.as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    reads
}

#[test]
fn the_role_grants_exactly_what_the_policies_read() {
    let text = std::fs::read_to_string(root().join("deploy/cluster-role.yaml")).unwrap();
    let role = policy_host::cluster::yaml_objects(&text, "cluster-role.yaml").unwrap();
    assert_eq!(role.len(), 1);
    let granted = granted_reads(&role[0]);
    let declared = declared_reads();
    let missing: Vec<_> = declared.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "a policy reads what deploy/cluster-role.yaml does not grant (lookups would answer 403): {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "deploy/cluster-role.yaml grants reads no policy declares: {extra:?}"
    );
    assert!(declared.contains(&(
        "rbac.authorization.k8s.io".into(),
        "clusterrolebindings".into()
    )));
}

/// rbac-policy's cases of the baseline binding judge with exactly the settings `install`
/// writes into `tenancy-rbac`, so that the ceiling's cases (through the wasm and kwctl) prove
/// the binding operators apply.
#[test]
fn the_baseline_rbac_cases_use_the_binding_settings() {
    let baseline = capsule_bindings::install::baseline(&InstallOptions::default()).unwrap();
    let rbac = baseline
        .iter()
        .find(|b| b["metadata"]["name"] == "tenancy-rbac")
        .unwrap();
    let cases: Value = serde_yaml::from_str(
        &std::fs::read_to_string(root().join("policies/rbac-policy/cases/baseline.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        cases["defaults"]["settings"], rbac["spec"]["settings"],
        "policies/rbac-policy/cases/baseline.yaml: defaults.settings must be tenancy-rbac's settings (deploy/baseline.yaml)"
    );
}

/// The PolicyServer's default image is the one Kubewarden's own 1.36 chart
/// (`kubewarden-defaults`, in `../shared/kubewarden/helm-charts`) installs for its default
/// PolicyServer: `global.cattle.systemDefaultRegistry`/`policyServer.image.repository`:`tag`.
#[test]
fn the_default_image_is_kubewarden_1_36s_policy_server() {
    let values =
        root().join("../shared/kubewarden/helm-charts/charts/kubewarden-defaults/values.yaml");
    let values: Value = serde_yaml::from_str(
        &std::fs::read_to_string(&values).unwrap_or_else(|e| panic!("{}: {e}", values.display())),
    )
    .unwrap();
    let image = format!(
        "{}/{}:{}",
        values["global"]["cattle"]["systemDefaultRegistry"]
            .as_str()
            .unwrap(),
        values["policyServer"]["image"]["repository"]
            .as_str()
            .unwrap(),
        values["policyServer"]["image"]["tag"].as_str().unwrap()
    );
    assert_eq!(capsule_bindings::install::POLICY_SERVER_IMAGE, image);
    let text = std::fs::read_to_string(root().join("deploy/policy-server.yaml")).unwrap();
    let server = policy_host::cluster::yaml_objects(&text, "policy-server.yaml").unwrap();
    assert_eq!(server[0]["spec"]["image"], image.as_str());
}
