//! install-e2e through the real policy-server (`$POLICY_SERVER`, else the one in
//! `../shared/kubewarden/bin`), on priority-class-policy (mutating, reads PriorityClasses):
//! the install passes with a role that grants its reads, fails naming the 403 when the role
//! lacks `priorityclasses`, and fails when its binding lacks the contextAwareResources entry.
//! Skipped (with a note) when policy-server or the built modules are absent.

#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod common;

use std::path::PathBuf;

use common::root;
use testdrive::install::{InstallOptions, InstallReport, Sabotage, run};

/// policy-server, the annotated module and the wasm, when all are there.
fn prerequisites() -> Option<PathBuf> {
    let server = std::env::var_os("POLICY_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/kubewarden/bin/policy-server"));
    let needed = [
        server.clone(),
        root().join("target/annotated/priority-class-policy.wasm"),
        common::wasm("priority-class-policy"),
    ];
    match needed.iter().find(|p| !p.is_file()) {
        Some(missing) => {
            eprintln!("skipped: {} is missing", missing.display());
            None
        }
        None => Some(server),
    }
}

const INSTALL: &str = r#"
apiVersion: policies.kubewarden.io/v1
kind: PolicyServer
metadata: {name: tenancy-policies}
spec: {image: ghcr.io/kubewarden/adm-controller/policy-server:v1.36.0, serviceAccountName: tenancy-policies}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenancy-policies, namespace: kubewarden}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tenancy-policies-lookups}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tenancy-policies-lookups}
subjects:
- {kind: ServiceAccount, name: tenancy-policies, namespace: kubewarden}
"#;

fn install(name: &str, role_resources: &str, sabotage: Option<Sabotage>) -> InstallReport {
    let dir = root().join(format!("target/tmp/install-e2e-test/{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let deploy = dir.join("deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    std::fs::write(deploy.join("install.yaml"), INSTALL).unwrap();
    std::fs::write(
        deploy.join("role.yaml"),
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: tenancy-policies-lookups}}\n\
             rules:\n- {{apiGroups: [scheduling.k8s.io, ''], resources: [{role_resources}], verbs: [get, list, watch]}}\n"
        ),
    )
    .unwrap();
    let options = InstallOptions {
        policy_server: prerequisites().unwrap(),
        server_name: None,
        deploy,
        modules_dir: root().join("target/annotated"),
        wasm_dir: root().join("target/wasm32-wasip1/release"),
        work_dir: dir.join("work"),
        policy_dirs: vec![root().join("policies/priority-class-policy")],
        sabotage,
    };
    run(&options).unwrap()
}

#[test]
fn the_install_passes_when_the_role_grants_the_reads() {
    if prerequisites().is_none() {
        return;
    }
    let report = install("granted", "priorityclasses, namespaces", None);
    assert!(report.passed(), "{:?}", report.problems);
    assert_eq!((report.loaded, report.cases, report.answered), (1, 1, 1));
    assert!(report.granted >= 1);
    assert_eq!(report.refused, 0);
}

#[test]
fn a_read_the_role_lacks_fails_naming_the_403() {
    if prerequisites().is_none() {
        return;
    }
    let report = install("no-priorityclasses", "namespaces", None);
    assert!(!report.passed());
    assert_eq!(report.answered, 0);
    assert!(report.refused >= 1);
    let problems = report.problems.join("\n");
    assert!(
        problems.contains("priority-class-policy: ")
            && problems.contains("403 Forbidden")
            && problems.contains("get scheduling.k8s.io/priorityclasses named"),
        "{problems}"
    );
}

#[test]
fn a_binding_without_its_context_aware_resource_fails() {
    if prerequisites().is_none() {
        return;
    }
    let report = install(
        "no-context-aware",
        "priorityclasses",
        Some(Sabotage::DropContextAware("priority-class-policy".into())),
    );
    assert!(!report.passed());
    assert_eq!(report.refused, 0);
    let problems = report.problems.join("\n");
    assert!(
        problems.contains(
            "has not been granted access to Kubernetes scheduling.k8s.io/v1/PriorityClass"
        ),
        "{problems}"
    );
}
