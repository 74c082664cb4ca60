//! Generated Capsule scenarios: what the written ones do not reach, for Capsule to judge.
//!
//! One Tenant per family of `rules[].enforce` (registries, QoS classes, schedulers, service
//! types, external names, ingress hostnames, metadata values), whose rules select namespaces
//! by a `case` label: one rule of each action (none, which is Capsule's deny, allow, deny,
//! audit), two rules of opposite actions in both orders, and a namespace no rule selects. In
//! each namespace two requests: one whose value the rules name, one whose value they do not.
//! The requests carry no expectation of their own: the bundle's answer and Capsule's are
//! compared, and a disagreement must be a known difference like any other.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::{self, Error, Result};

/// The namespaces of a generated scenario: the value of their `case` label (none for the
/// last), and the actions of the rules that select them, in order.
const CASES: [(&str, &[Option<&str>]); 7] = [
    ("none", &[None]),
    ("allow", &[Some("allow")]),
    ("deny", &[Some("deny")]),
    ("audit", &[Some("audit")]),
    ("deny-allow", &[Some("deny"), Some("allow")]),
    ("allow-deny", &[Some("allow"), Some("deny")]),
    ("unselected", &[]),
];

/// What a request shows, its file and the merge patch of its object.
type Request = (&'static str, &'static str, Value);

/// One family of `rules[].enforce`: the body of its rules, and its two requests.
struct Family {
    /// The scenario's name, `generated-<name>`.
    name: &'static str,
    /// `enforce` without `action`.
    body: Value,
    /// For the value the rules name, then for another value: what it is, the request file
    /// (under test_data/capsule-bindings/requests) and the merge patch of its object.
    named: Request,
    other: Request,
}

fn families() -> Vec<Family> {
    let image = |image: &str| json!({"spec": {"containers": [{"name": "web", "image": image, "imagePullPolicy": "Always"}]}});
    vec![
        Family {
            name: "registries",
            body: json!({"workloads": {"registries": [{"exact": ["docker.io/library/nginx:1.25"]}]}}),
            named: (
                "image docker.io/library/nginx:1.25",
                "pod.json",
                image("docker.io/library/nginx:1.25"),
            ),
            other: (
                "image quay.io/acme/web:1",
                "pod.json",
                image("quay.io/acme/web:1"),
            ),
        },
        Family {
            name: "qos-classes",
            body: json!({"workloads": {"qosClasses": ["BestEffort"]}}),
            named: (
                "QoS class BestEffort",
                "pod.json",
                json!({"spec": {"containers": [{"name": "web", "image": "docker.io/library/nginx:1.25", "imagePullPolicy": "Always", "resources": {}}]}}),
            ),
            other: (
                "QoS class Guaranteed",
                "pod.json",
                json!({"spec": {"containers": [{"name": "web", "image": "docker.io/library/nginx:1.25", "imagePullPolicy": "Always", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}}]}}),
            ),
        },
        Family {
            name: "schedulers",
            body: json!({"workloads": {"schedulers": [{"exact": ["gpu-scheduler"]}]}}),
            named: (
                "scheduler gpu-scheduler",
                "pod.json",
                json!({"spec": {"schedulerName": "gpu-scheduler"}}),
            ),
            other: (
                "scheduler default-scheduler",
                "pod.json",
                json!({"spec": {"schedulerName": "default-scheduler"}}),
            ),
        },
        Family {
            name: "service-types",
            body: json!({"services": {"types": ["ExternalName"]}}),
            named: ("type ExternalName", "service-external-name.json", json!({})),
            other: ("type ClusterIP", "service.json", json!({})),
        },
        Family {
            name: "external-names",
            body: json!({"services": {"externalNames": {"hostnames": [{"exact": ["db.water.acme.com"]}]}}}),
            named: (
                "external name db.water.acme.com",
                "service-external-name.json",
                json!({}),
            ),
            other: (
                "external name db.solar.acme.com",
                "service-external-name.json",
                json!({"spec": {"externalName": "db.solar.acme.com"}}),
            ),
        },
        Family {
            name: "ingress-hostnames",
            body: json!({"ingress": {"types": ["Ingress"], "hostnames": [{"exact": ["web.solar.acmecorp.com"]}]}}),
            named: ("host web.solar.acmecorp.com", "ingress.json", json!({})),
            other: (
                "host api.solar.acmecorp.com",
                "ingress.json",
                json!({"spec": {"rules": [{"host": "api.solar.acmecorp.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "nginx", "port": {"number": 80}}}}]}}]}}),
            ),
        },
        Family {
            name: "metadata",
            body: json!({"metadata": [{"kinds": ["ConfigMap"], "labels": {"team": {"values": [{"exact": ["red"]}]}}}]}),
            named: (
                "label team=red",
                "configmap.json",
                json!({"metadata": {"labels": {"team": "red"}}}),
            ),
            other: (
                "label team=blue",
                "configmap.json",
                json!({"metadata": {"labels": {"team": "blue"}}}),
            ),
        },
    ]
}

/// The namespace of a case.
fn namespace(case: &str) -> String {
    format!("solar-{case}")
}

/// Writes the generated scenarios into `dir` (their Tenants beside them); returns the
/// scenario files. `requests` is test_data/capsule-bindings/requests.
pub fn write(dir: &Path, requests: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    for family in families() {
        let stem = format!("generated-{}", family.name);
        let tenant = dir.join(format!("{stem}.tenant.yaml"));
        error::write(&tenant, yaml(&tenant_of(&family.body))?)?;
        let scenario = scenario_of(&family, &stem, requests)?;
        let file = dir.join(format!("{stem}.yaml"));
        error::write(&file, yaml(&scenario)?)?;
        files.push(file);
    }
    Ok(files)
}

fn yaml(value: &Value) -> Result<String> {
    serde_yaml::to_string(value).map_err(|e| Error::Invalid(format!("generated scenario: {e}")))
}

/// The family's Tenant: per case, its rules selecting the case's namespace.
fn tenant_of(body: &Value) -> Value {
    let mut rules = Vec::new();
    for (case, actions) in CASES {
        for action in actions.iter() {
            let mut enforce = body.clone();
            if let (Some(action), Some(map)) = (action, enforce.as_object_mut()) {
                map.insert("action".into(), json!(action));
            }
            rules.push(
                json!({"namespaceSelector": {"matchLabels": {"case": case}}, "enforce": enforce}),
            );
        }
    }
    json!({
        "apiVersion": "capsule.clastix.io/v1beta2",
        "kind": "Tenant",
        "metadata": {"name": "solar"},
        "spec": {"owners": [{"name": "alice", "kind": "User"}], "rules": rules},
    })
}

/// The family's scenario: the namespaces, and both requests in each.
fn scenario_of(family: &Family, stem: &str, requests: &Path) -> Result<Value> {
    let mut cluster = Vec::new();
    let mut cases = Vec::new();
    for (case, actions) in CASES {
        let ns = namespace(case);
        let mut labels =
            json!({"capsule.clastix.io/tenant": "solar", "kubernetes.io/metadata.name": ns});
        if !actions.is_empty()
            && let Some(map) = labels.as_object_mut()
        {
            map.insert("case".into(), json!(case));
        }
        cluster.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}, "status": {"phase": "Active"}}));
        for (what, file, patch) in [&family.named, &family.other] {
            let request = requests.join(file);
            let request = request
                .to_str()
                .ok_or_else(|| Error::Invalid(format!("{}: not UTF-8", request.display())))?;
            let mut object = patch.clone();
            if let Some(map) = object.as_object_mut() {
                let metadata = map.entry("metadata").or_insert_with(|| json!({}));
                if let Some(m) = metadata.as_object_mut() {
                    m.insert("namespace".into(), json!(ns));
                }
            }
            cases.push(json!({
                "name": format!("{ns}: {what}"),
                "request": request,
                "override": {"namespace": ns, "object": object},
                "expect": {"allowed": true},
            }));
        }
    }
    Ok(json!({
        "tenant": format!("{stem}.tenant.yaml"),
        "expect": {"bindings": []},
        "cluster": cluster,
        "requests": cases,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_case_has_its_rules_in_order_and_one_namespace_none() {
        let tenant = tenant_of(&json!({"workloads": {"qosClasses": ["BestEffort"]}}));
        let rules = tenant["spec"]["rules"].as_array().unwrap();
        let seen: Vec<(String, Option<String>)> = rules
            .iter()
            .map(|r| {
                (
                    r["namespaceSelector"]["matchLabels"]["case"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                    r["enforce"]["action"].as_str().map(str::to_owned),
                )
            })
            .collect();
        let expected: Vec<(String, Option<String>)> = [
            ("none", None),
            ("allow", Some("allow")),
            ("deny", Some("deny")),
            ("audit", Some("audit")),
            ("deny-allow", Some("deny")),
            ("deny-allow", Some("allow")),
            ("allow-deny", Some("allow")),
            ("allow-deny", Some("deny")),
        ]
        .iter()
        .map(|(c, a)| (c.to_string(), a.map(str::to_owned)))
        .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn every_namespace_gets_both_requests_and_the_unselected_one_no_case_label() {
        let families = families();
        let scenario = scenario_of(&families[0], "generated-registries", Path::new("/r")).unwrap();
        let requests = scenario["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 2 * CASES.len());
        assert_eq!(requests[0]["request"], "/r/pod.json");
        assert_eq!(requests[0]["override"]["namespace"], "solar-none");
        assert_eq!(
            requests[0]["override"]["object"]["metadata"]["namespace"],
            "solar-none"
        );
        let unselected = scenario["cluster"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["metadata"]["name"] == "solar-unselected")
            .unwrap();
        assert!(unselected["metadata"]["labels"].get("case").is_none());
    }
}
