#![allow(clippy::indexing_slicing, clippy::unwrap_used)]

use serde_json::json;

use super::*;

const INSTALL: &str = r#"
apiVersion: policies.kubewarden.io/v1
kind: PolicyServer
metadata: {name: tenancy-policies}
spec: {image: x, serviceAccountName: tenancy-policies, namespacedPoliciesCapabilities: ["kubernetes/*"]}
---
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata: {name: priority-class}
spec:
  policyServer: tenancy-policies
  module: registry://ghcr.io/acme/tenancy-policies/priority-class-policy:v0.1.0
  mutating: true
  rules:
  - {apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}
  contextAwareResources:
  - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass}
  settings: {allowed: [gold]}
  namespaceSelector:
    matchLabels: {tenant: solar}
    matchExpressions: [{key: env, operator: In, values: [dev]}]
  matchConditions:
  - {name: x, expression: "true"}
---
kind: List
items:
- apiVersion: policies.kubewarden.io/v1
  kind: AdmissionPolicy
  metadata: {name: registry, namespace: solar-dev}
  spec:
    policyServer: tenancy-policies
    module: ghcr.io/acme/container-registry-policy:v0.1.0
    mode: monitor
    rules:
    - {apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE], scope: Cluster}
    contextAwareResources: [{apiVersion: v1, kind: Namespace}]
    message: nope
    timeoutEvalSeconds: 5
- apiVersion: policies.kubewarden.io/v1
  kind: ClusterAdmissionPolicy
  metadata: {name: elsewhere}
  spec: {module: registry://x/y:v1, rules: []}
---
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicyGroup
metadata: {name: pods}
spec:
  policyServer: tenancy-policies
  allowInsideAdmissionControllerNamespace: true
  rules:
  - {apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}
  policies:
    registry:
      module: registry://ghcr.io/acme/tenancy-policies/container-registry-policy:v0.1.0
      settings: {allowed: [docker.io]}
      contextAwareResources: [{apiVersion: v1, kind: Namespace}]
    toleration:
      module: registry://ghcr.io/acme/tenancy-policies/pod-toleration-policy:v0.1.0
      timeoutEvalSeconds: 3
  expression: registry() && toleration()
  message: the pod breaks the tenant's rules
"#;

fn controller() -> Controller {
    let objects = policy_host::cluster::yaml_objects(INSTALL, "install").unwrap();
    let server = PolicyServerSpec::find(&objects, None).unwrap();
    Controller::load(&objects, &server).unwrap()
}

#[test]
fn reads_the_policy_server() {
    let server = controller().server;
    assert_eq!(server.name, "tenancy-policies");
    assert_eq!(server.service_account.as_deref(), Some("tenancy-policies"));
    assert_eq!(
        server.namespaced_capabilities,
        Some(vec!["kubernetes/*".to_owned()])
    );
}

#[test]
fn loads_only_the_servers_bindings_under_the_controllers_ids() {
    let c = controller();
    let ids: Vec<&str> = c.policies.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "clusterwide-group-pods",
            "clusterwide-priority-class",
            "namespaced-solar-dev-registry"
        ]
    );
    assert_eq!(c.elsewhere, ["ClusterAdmissionPolicy/elsewhere → default"]);
}

#[test]
fn writes_the_controllers_entries() {
    let c = controller();
    let by_id = |id: &str| {
        c.policies
            .iter()
            .find(|p| p.id == id)
            .unwrap()
            .entry
            .clone()
    };
    assert_eq!(
        by_id("clusterwide-priority-class"),
        json!({
            "namespacedName": {"Namespace": "", "Name": "priority-class"},
            "module": "registry://ghcr.io/acme/tenancy-policies/priority-class-policy:v0.1.0",
            "policyMode": "protect",
            "allowedToMutate": true,
            "contextAwareResources": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}],
            "settings": {"allowed": ["gold"]},
            "hostCapabilities": ["*"],
        })
    );
    // a namespaced policy reads nothing and gets the PolicyServer's capabilities
    assert_eq!(
        by_id("namespaced-solar-dev-registry"),
        json!({
            "namespacedName": {"Namespace": "solar-dev", "Name": "registry"},
            "module": "ghcr.io/acme/container-registry-policy:v0.1.0",
            "policyMode": "monitor",
            "allowedToMutate": false,
            "settings": null,
            "message": "nope",
            "timeoutEvalSeconds": 5,
            "hostCapabilities": ["kubernetes/*"],
        })
    );
    assert_eq!(
        by_id("clusterwide-group-pods"),
        json!({
            "namespacedName": {"Namespace": "", "Name": "pods"},
            "policyMode": "protect",
            "policies": {
                "registry": {
                    "module": "registry://ghcr.io/acme/tenancy-policies/container-registry-policy:v0.1.0",
                    "settings": {"allowed": ["docker.io"]},
                    "contextAwareResources": [{"apiVersion": "v1", "kind": "Namespace"}],
                    "hostCapabilities": ["*"],
                },
                "toleration": {
                    "module": "registry://ghcr.io/acme/tenancy-policies/pod-toleration-policy:v0.1.0",
                    "settings": null,
                    "timeoutEvalSeconds": 3,
                    "hostCapabilities": ["*"],
                },
            },
            "expression": "registry() && toleration()",
            "message": "the pod breaks the tenant's rules",
        })
    );
}

#[test]
fn reports_what_it_does_not_enforce_as_written() {
    let notes = controller().notes;
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains("matchLabels {\"tenant\":\"solar\"} dropped"),
        "{notes:?}"
    );
    assert!(
        notes[1].contains("1 matchConditions not evaluated"),
        "{notes:?}"
    );
}

#[test]
fn maps_modules_to_local_files() {
    let dir = std::env::temp_dir().join(format!("testdrive-controller-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for p in ["priority-class-policy", "container-registry-policy"] {
        std::fs::write(dir.join(format!("{p}.wasm")), b"").unwrap();
    }
    let c = controller();
    let modules = ModulesDir::new(&dir).unwrap();
    let err = c.policies_yml(&modules).unwrap_err().to_string();
    assert!(err.contains("pod-toleration-policy.wasm"), "{err}");
    std::fs::write(dir.join("pod-toleration-policy.wasm"), b"").unwrap();
    let yml = c.policies_yml(&modules).unwrap();
    let local = format!(
        "file://{}",
        dir.join("priority-class-policy.wasm").display()
    );
    assert_eq!(yml["clusterwide-priority-class"]["module"], json!(local));
    assert_eq!(
        yml["namespaced-solar-dev-registry"]["module"],
        json!(format!(
            "file://{}",
            dir.join("container-registry-policy.wasm").display()
        ))
    );
    assert!(
        yml["clusterwide-group-pods"]["policies"]["toleration"]["module"]
            .as_str()
            .unwrap()
            .ends_with("/pod-toleration-policy.wasm")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn pod(namespace: &str) -> Value {
    json!({"resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
        "namespace": namespace, "object": {"metadata": {"name": "p"}}})
}

#[test]
fn routes_as_the_webhooks_the_controller_writes() {
    let c = controller();
    let namespaces = Namespaces::from_objects(&[
        json!({"kind": "Namespace", "metadata": {"name": "solar-dev", "labels": {"tenant": "solar", "env": "dev"}}}),
        json!({"kind": "Namespace", "metadata": {"name": "oil-dev", "labels": {"tenant": "oil", "env": "dev"}}}),
        json!({"kind": "Namespace", "metadata": {"name": "oil-prod", "labels": {"tenant": "oil", "env": "prod"}}}),
    ]);
    let ids = |ns: &str| -> Vec<String> {
        c.routed(&pod(ns), &namespaces)
            .iter()
            .map(|p| p.id.clone())
            .collect()
    };
    // mutating first; the namespaced policy's rules are Namespaced whatever they say
    assert_eq!(
        ids("solar-dev"),
        [
            "clusterwide-priority-class",
            "clusterwide-group-pods",
            "namespaced-solar-dev-registry"
        ]
    );
    // matchLabels are dropped by the controller: oil-dev is routed too, oil-prod is not
    assert_eq!(
        ids("oil-dev"),
        ["clusterwide-priority-class", "clusterwide-group-pods"]
    );
    assert_eq!(ids("oil-prod"), ["clusterwide-group-pods"]);
    // the controller's namespace is left out unless the binding allows it
    assert_eq!(ids("kubewarden"), ["clusterwide-group-pods"]);
}

#[test]
fn refuses_two_bindings_with_one_id() {
    let objects = policy_host::cluster::yaml_objects(
        "kind: AdmissionPolicy\nmetadata: {name: b-c, namespace: a}\nspec: {module: x}\n---\n\
         kind: AdmissionPolicy\nmetadata: {name: c, namespace: a-b}\nspec: {module: x}\n",
        "t",
    )
    .unwrap();
    let err = Controller::load(&objects, &PolicyServerSpec::named("default"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("namespaced-a-b-c"), "{err}");
}
