//! The ClusterAdmissionPolicyGroup example (`deploy/examples/tenant-pod-group.yaml`) loaded by
//! the controller's step into the real policy-server (`$POLICY_SERVER`, else the one in
//! `../shared/kubewarden/bin`) on the install's PolicyServer and RBAC: a tenant's compliant
//! Pod is allowed, one from another registry is refused with the group's message, and a Pod
//! of another tenant is not sent to the group. Skipped (with a note) when policy-server or
//! the built modules are absent.

#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use common::{root, wasm};
use policy_host::{ClusterObjects, Host, Metadata, Recorder, SharedCallbacks, shared};
use serde_json::{Value, json};
use testdrive::install::{Deployment, install_server};
use testdrive::kube::apiserver::FakeApi;
use testdrive::kube::controller::{
    Controller, ModulesDir, Namespaces, policy_of_module, read_objects,
};

const MEMBERS: [&str; 3] = [
    "container-registry-policy",
    "pod-restriction-policy",
    "pod-toleration-policy",
];

fn prerequisites() -> Option<PathBuf> {
    let server = std::env::var_os("POLICY_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/kubewarden/bin/policy-server"));
    let mut needed = vec![server.clone()];
    for p in MEMBERS {
        needed.push(root().join(format!("target/annotated/{p}.wasm")));
        needed.push(wasm(p));
    }
    match needed.iter().find(|p| !p.is_file()) {
        Some(missing) => {
            eprintln!("skipped: {} is missing", missing.display());
            None
        }
        None => Some(server),
    }
}

fn pod(namespace: &str, image: &str) -> Value {
    json!({
        "uid": format!("group-{namespace}-{image}"),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "web", "namespace": namespace, "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["solar-devs", "system:authenticated"]},
        "object": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"containers": [{"name": "web", "image": image}]}},
        "dryRun": false,
    })
}

fn namespaces() -> Vec<Value> {
    ["solar", "oil"]
        .iter()
        .map(|t| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("{t}-dev"),
                "labels": {"capsule.clastix.io/tenant": t, "kubernetes.io/metadata.name": format!("{t}-dev")}}})
        })
        .collect()
}

/// What the members read while testdrive judges `requests`, as the fake API server serves it.
fn recorded_state(group: &Value, requests: &[Value]) -> FakeApi {
    let cluster = ClusterObjects::new(namespaces()).unwrap();
    let mut api = FakeApi::default();
    for member in group["spec"]["policies"].as_object().unwrap().values() {
        let policy = policy_of_module(member["module"].as_str().unwrap());
        let metadata =
            Metadata::from_file(&root().join(format!("policies/{policy}/metadata.yml"))).unwrap();
        let host = Host::load(&std::fs::read(wasm(policy)).unwrap(), Some(metadata)).unwrap();
        for request in requests {
            let objects: SharedCallbacks = shared(cluster.clone());
            let recorder = shared(Recorder::new(objects));
            host.validate(request, &member["settings"], recorder.clone())
                .unwrap();
            let exchanges = recorder.lock().unwrap().exchanges().to_vec();
            assert!(api.merge(&FakeApi::from_exchanges(&exchanges).unwrap()));
        }
    }
    api
}

#[test]
fn the_tenant_pod_group_judges_pods_in_policy_server() {
    let Some(server_binary) = prerequisites() else {
        return;
    };
    let example = root().join("deploy/examples/tenant-pod-group.yaml");
    let mut objects = read_objects(&[root().join("deploy")]).unwrap();
    let group = read_objects(std::slice::from_ref(&example)).unwrap()[0].clone();
    objects.push(group.clone());
    let (server, rbac) = install_server(&objects, None).unwrap();
    let controller = Controller::load(&objects, &server).unwrap();
    let id = "clusterwide-group-tenant-solar-pods";
    let loaded = controller.policies.iter().find(|p| p.id == id).unwrap();
    assert!(!loaded.mutating);
    assert_eq!(
        loaded.entry["expression"],
        "registry() && restriction() && toleration()"
    );
    let allowed = pod("solar-dev", "docker.io/nginx:1.27");
    let refused = pod("solar-dev", "evil.io/miner:1");
    let other_tenant = pod("oil-dev", "evil.io/miner:1");
    let api = recorded_state(&group, &[allowed.clone(), refused.clone()]);
    let work = root().join("target/tmp/policy-group-test");
    let _ = std::fs::remove_dir_all(&work);
    let mut deployment = Deployment::start(
        controller,
        &ModulesDir::new(&root().join("target/annotated")).unwrap(),
        api.with_rbac(rbac),
        &server_binary,
        &work,
    )
    .unwrap();
    let routing = Namespaces::from_objects(&namespaces());
    let only_group = |p: &str| p == id;

    let admission = deployment.admit(&allowed, &routing, only_group);
    let step = admission.step(id).expect("the group judges a solar Pod");
    let eval = step.answer.as_ref().unwrap();
    assert!(eval.response.allowed, "{:?}", eval.response);

    let admission = deployment.admit(&refused, &routing, only_group);
    let eval = admission.step(id).unwrap().answer.as_ref().unwrap();
    assert!(!eval.response.allowed);
    assert_eq!(
        eval.response.message(),
        Some("the workload breaks the rules of tenant solar")
    );

    assert!(
        deployment
            .admit(&other_tenant, &routing, only_group)
            .steps
            .is_empty()
    );
    assert!(deployment.reads().iter().all(|(_, granted)| *granted));
    deployment.stop();
}

/// The cluster-scoped resources the metadata rules name; every other resource they name is
/// namespaced. A wildcard rule with `scope: Namespaced` (tenant-cordon-policy) shares no
/// request with these.
const CLUSTER_SCOPED: [&str; 3] = ["namespaces", "clusterroles", "clusterrolebindings"];

/// The namespaced resources the metadata rules name: a resource in neither list fails the
/// test, so a new one is classified before a family is computed with it.
const NAMESPACED: [&str; 22] = [
    "configmaps",
    "cronjobs",
    "daemonsets",
    "deployments",
    "gateways",
    "ingresses",
    "jobs",
    "limitranges",
    "networkpolicies",
    "persistentvolumeclaims",
    "pods",
    "replicasets",
    "replicationcontrollers",
    "resourceclaims",
    "resourceclaimtemplates",
    "resourcequotas",
    "rolebindings",
    "roles",
    "secrets",
    "serviceaccounts",
    "services",
    "statefulsets",
];

/// One request pattern of a metadata rule: group, version, resource (`*`, `*/*`, `x/*`,
/// `*/s` or a concrete `x`, `x/s`), operation, and scope (`Cluster`, `Namespaced` or `*`).
type Route = (String, String, String, String, String);

/// The meet of two rule components: `*` matches anything.
fn meet(a: &str, b: &str) -> Option<String> {
    match (a, b) {
        ("*", _) => Some(b.to_owned()),
        (_, "*") => Some(a.to_owned()),
        _ if a == b => Some(a.to_owned()),
        _ => None,
    }
}

/// The meet of two resource patterns: `*/*` is every resource and subresource, `*` every
/// resource, `x/*` every subresource of `x`, `*/s` subresource `s` of any resource; a
/// resource and a subresource never meet.
fn meet_resource(a: &str, b: &str) -> Option<String> {
    match (a, b) {
        ("*/*", _) => return Some(b.to_owned()),
        (_, "*/*") => return Some(a.to_owned()),
        _ => {}
    }
    let (an, asub) = a.split_once('/').map_or((a, None), |(n, s)| (n, Some(s)));
    let (bn, bsub) = b.split_once('/').map_or((b, None), |(n, s)| (n, Some(s)));
    let name = meet(an, bn)?;
    match (asub, bsub) {
        (None, None) => Some(name),
        (Some(x), Some(y)) => Some(format!("{name}/{}", meet(x, y)?)),
        _ => None,
    }
}

/// The requests both routes match, if any.
fn meet_route(a: &Route, b: &Route) -> Option<Route> {
    Some((
        meet(&a.0, &b.0)?,
        meet(&a.1, &b.1)?,
        meet_resource(&a.2, &b.2)?,
        meet(&a.3, &b.3)?,
        meet(&a.4, &b.4)?,
    ))
}

/// Every request pattern a policy's metadata rules route to it; a concrete resource carries
/// its scope.
fn routes(metadata: &Metadata) -> BTreeSet<Route> {
    let list = |rule: &Value, key: &str| -> Vec<String> {
        rule[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let mut out = BTreeSet::new();
    for rule in &metadata.rules {
        let rule_scope = rule["scope"].as_str().unwrap_or("*");
        for g in list(rule, "apiGroups") {
            for v in list(rule, "apiVersions") {
                for r in list(rule, "resources") {
                    let base = r.split('/').next().unwrap_or_default();
                    let scope = if base == "*" {
                        rule_scope.to_owned()
                    } else if CLUSTER_SCOPED.contains(&base) {
                        "Cluster".to_owned()
                    } else {
                        assert!(
                            NAMESPACED.contains(&base),
                            "{base}: classify it in CLUSTER_SCOPED or NAMESPACED"
                        );
                        "Namespaced".to_owned()
                    };
                    for o in list(rule, "operations") {
                        out.insert((g.clone(), v.clone(), r.clone(), o, scope.clone()));
                    }
                }
            }
        }
    }
    out
}

/// The requests both sets of routes match.
fn intersect(a: &BTreeSet<Route>, b: &BTreeSet<Route>) -> BTreeSet<Route> {
    a.iter()
        .flat_map(|x| b.iter().filter_map(move |y| meet_route(x, y)))
        .collect()
}

/// Whether every request of `sub` is routed by `routes`.
fn covered(sub: &BTreeSet<Route>, routes: &BTreeSet<Route>) -> bool {
    sub.iter()
        .all(|c| routes.iter().any(|r| meet_route(c, r).as_ref() == Some(c)))
}

/// Routes as `group/version/resource (OPS)`, one kind after the other; a wildcard resource
/// shows its scope.
fn render(routes: &BTreeSet<Route>) -> String {
    let mut by_kind: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (g, v, r, op, scope) in routes {
        let group = if g.is_empty() { "core" } else { g };
        let scope = if r.contains('*') && scope != "*" {
            format!(", {scope}")
        } else {
            String::new()
        };
        by_kind
            .entry(format!("{group}/{v}/{r}{scope}"))
            .or_default()
            .push(op);
    }
    by_kind
        .iter()
        .map(|(kind, ops)| {
            let (kind, scope) = kind
                .split_once(", ")
                .map_or((kind.as_str(), ""), |(k, s)| (k, s));
            let scope = if scope.is_empty() {
                String::new()
            } else {
                format!("; {scope} only")
            };
            format!("`{kind}` ({}{scope})", ops.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The generated part of the README's "Policy groups": the policies that cannot be members, and
/// every family of non-mutating policies with the requests all of them handle (a family is
/// every policy that handles those requests).
fn groupable_section() -> String {
    let mut mutating = Vec::new();
    let mut handled: BTreeMap<String, BTreeSet<Route>> = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("policies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let metadata = Metadata::from_file(&dir.join("metadata.yml")).unwrap();
        if metadata.mutating {
            mutating.push(format!("`{name}`"));
        } else {
            handled.insert(name, routes(&metadata));
        }
    }
    let names: Vec<&String> = handled.keys().collect();
    let mut families: BTreeMap<Vec<String>, BTreeSet<Route>> = BTreeMap::new();
    for mask in 1u32..(1 << names.len()) {
        let chosen: Vec<&String> = names
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect();
        let common = chosen
            .iter()
            .map(|n| handled[*n].clone())
            .reduce(|a, b| intersect(&a, &b))
            .unwrap();
        if chosen.len() < 2 || common.is_empty() {
            continue;
        }
        let family: Vec<String> = handled
            .iter()
            .filter(|(_, r)| covered(&common, r))
            .map(|(n, _)| n.clone())
            .collect();
        families.insert(family, common);
    }
    let mut out = String::from(
        "| members | the requests every member handles: what the group's rules may route |\n|---|---|\n",
    );
    for (family, common) in &families {
        let members: Vec<String> = family.iter().map(|m| format!("`{m}`")).collect();
        out.push_str(&format!(
            "| {} | {} |\n",
            members.join(", "),
            render(common)
        ));
    }
    let alone: Vec<String> = handled
        .keys()
        .filter(|n| !families.keys().any(|f| f.contains(n)))
        .map(|n| format!("`{n}`"))
        .collect();
    if !alone.is_empty() {
        out.push_str(&format!(
            "\nNon-mutating, but sharing no request with another policy (a member only of a group of its own, such as the same policy twice with different settings): {}.\n",
            alone.join(", ")
        ));
    }
    out.push_str(&format!(
        "\nMutating, never a member: {}.\n",
        mutating.join(", ")
    ));
    out
}

#[test]
fn the_groupable_policies_of_the_docs_are_the_metadatas() {
    let doc = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (begin, end) = (
        "<!-- groupable: generated from metadata.yml -->\n",
        "<!-- end groupable -->",
    );
    let start = doc
        .find(begin)
        .expect("the generated section's start marker")
        + begin.len();
    let stop = doc.find(end).expect("the generated section's end marker");
    let expected = groupable_section();
    assert!(
        doc.get(start..stop) == Some(expected.as_str()),
        "README.md (Policy groups) differs from the metadata; the section should read:\n{expected}"
    );
}
