//! Capsule as the judge: every Capsule scenario request the bundle answered through the API
//! server is sent to Capsule's plane too, as the same user with a server-side dry run, after
//! the scenario's Tenant is applied there and the request's cluster state written; the two
//! answers (admitted or refused, the object as admitted) are compared.
//!
//! The state is the bundle's, with what makes a Namespace a Tenant's in Capsule: an
//! ownerReference to the Tenant beside its `capsule.clastix.io/tenant` label. Namespaces are
//! written through Capsule's webhooks as its controller, so that Capsule completes them as
//! it does a namespace an owner creates (its node-selector annotation, which it refuses to
//! add later); the rest through the setup server. A Namespace labelled for a tenant the
//! scenario has no Tenant of is written without the label: Capsule refuses every request
//! about a namespace that names a tenant it cannot find.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::differences::{Disagreement, Nature};
use super::plane::CapsulePlane;
use crate::admission::{self, Outcome};
use crate::error::{Error, Result};
use crate::state::{State, for_request};
use crate::tenants::SentScenario;
use crate::verdict::describe_refusal;

/// The label that names a Namespace's tenant.
const TENANT_LABEL: &str = "capsule.clastix.io/tenant";

/// The tenant a Namespace is labelled for; nothing for any other object.
fn tenant_of(object: &Value) -> Option<&str> {
    if object.get("kind").and_then(Value::as_str) != Some("Namespace") {
        return None;
    }
    object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(TENANT_LABEL))
        .and_then(Value::as_str)
}

/// Capsule's webhook of Tenants, in the refusal of a Tenant it does not accept.
const TENANT_WEBHOOK: &str = "tenants.validating.projectcapsule.dev";

/// What Capsule creates in a tenant's namespaces, removed with the namespace so that a
/// later scenario's namespace of the same name starts empty.
const CAPSULE_MANAGED: &[&str] = &[
    "rolebindings.rbac.authorization.k8s.io",
    "resourcequotas",
    "limitranges",
    "networkpolicies.networking.k8s.io",
    "rulestatuses.capsule.clastix.io",
];

/// Both answers to every request.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Requests sent to both.
    pub requests: usize,
    /// Those both answered alike.
    pub agree: usize,
    /// The others.
    pub disagreements: Vec<Disagreement>,
    /// What kept a request or a scenario from being compared.
    pub problems: Vec<String>,
    /// Per scenario: requests compared, and those both answered alike.
    pub per_scenario: BTreeMap<String, (usize, usize)>,
}

/// Sends every request of `scenarios` to Capsule's plane and compares the answers.
pub fn run(plane: &CapsulePlane, scenarios: &[SentScenario]) -> Result<Comparison> {
    let cluster = &plane.cluster;
    admission::grant_requesters(
        cluster,
        scenarios
            .iter()
            .flat_map(|s| s.requests.iter().map(|r| &r.admitted.request)),
    )?;
    let mut comparison = Comparison::default();
    let mut state = State::with_namespaces(plane.controller.clone(), CAPSULE_MANAGED);
    for scenario in scenarios {
        let tenants = match apply_tenants(plane, scenario) {
            Ok(t) => t,
            // the Tenant convert refuses, Capsule's Tenant webhook refuses too: they agree
            Err(e) if scenario.refused && e.to_string().contains(TENANT_WEBHOOK) => {
                println!(
                    "capsule-compare: {}: the Tenant refused by Capsule as by convert",
                    scenario.stem
                );
                continue;
            }
            Err(e) => {
                comparison.problems.push(format!(
                    "{}: its Tenant on Capsule's plane: {e}",
                    scenario.stem
                ));
                continue;
            }
        };
        let (agreed, disagreed, compared) = (
            comparison.agree,
            comparison.disagreements.len(),
            comparison.requests,
        );
        for sent in &scenario.requests {
            let objects = owned(
                &for_request(&sent.admitted.objects, &sent.admitted.request),
                &tenants,
            );
            if let Err(e) = state
                .reach(cluster, &objects)
                .and_then(|()| wait_adopted(plane, &objects, &tenants))
            {
                comparison.problems.push(format!(
                    "{}: its cluster state on Capsule's plane: {e}",
                    sent.label
                ));
                continue;
            }
            let capsule = admission::send(cluster, &sent.admitted.request)?;
            comparison.requests += 1;
            match differ(&sent.outcome, &capsule, sent.admitted.request.get("object")) {
                None => comparison.agree += 1,
                Some((nature, what)) => comparison.disagreements.push(Disagreement {
                    scenario: scenario.stem.clone(),
                    request: sent.admitted.case.name.clone(),
                    nature,
                    what,
                }),
            }
        }
        remove_tenants(plane, &tenants)?;
        state.clear(cluster)?;
        comparison.per_scenario.insert(
            scenario.stem.clone(),
            (comparison.requests - compared, comparison.agree - agreed),
        );
        println!(
            "capsule-compare: {}: {} agree, {} disagree",
            scenario.stem,
            comparison.agree - agreed,
            comparison.disagreements.len() - disagreed
        );
    }
    Ok(comparison)
}

/// Applies the scenario's Tenants and waits until Capsule has reconciled them; returns
/// their UIDs by name.
fn apply_tenants(
    plane: &CapsulePlane,
    scenario: &SentScenario,
) -> Result<BTreeMap<String, String>> {
    let path = scenario.tenant.display().to_string();
    let applied = plane.cluster.admin.run(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "tenancy-e2e",
            "-f",
            &path,
            "-o",
            "json",
        ],
        None,
    )?;
    let applied: Value = serde_json::from_str(&applied)?;
    let items = match applied.get("items").and_then(Value::as_array) {
        Some(items) => items.clone(),
        None => vec![applied],
    };
    let names: Vec<String> = items
        .iter()
        .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut uids = BTreeMap::new();
        for name in &names {
            let t = plane
                .cluster
                .admin
                .get(&["tenants.capsule.clastix.io", name])?;
            if reconciled(&t)
                && let Some(uid) = t.pointer("/metadata/uid").and_then(Value::as_str)
            {
                uids.insert(name.clone(), uid.to_owned());
            }
        }
        if uids.len() == names.len() {
            return Ok(uids);
        }
        if Instant::now() > deadline {
            return Err(Error::Invalid(format!(
                "Tenants {} not reconciled by Capsule after 60s",
                names.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether Capsule reconciled the Tenant `t` as it is (its generation observed).
fn reconciled(t: &Value) -> bool {
    let generation = t.pointer("/metadata/generation").and_then(Value::as_i64);
    let observed = t
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    generation.is_some() && generation == observed
}

/// `objects` with each Namespace labelled for a tenant of `tenants` owned by its Tenant, and
/// the label dropped where the scenario has no such Tenant.
fn owned(objects: &[Value], tenants: &BTreeMap<String, String>) -> Vec<Value> {
    objects
        .iter()
        .map(|o| {
            let mut o = o.clone();
            let Some(tenant) = tenant_of(&o).map(str::to_owned) else {
                return o;
            };
            match tenants.get(&tenant) {
                Some(uid) => {
                    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                        meta.insert(
                            "ownerReferences".into(),
                            json!([{"apiVersion": "capsule.clastix.io/v1beta2", "kind": "Tenant",
                                "name": tenant, "uid": uid}]),
                        );
                    }
                }
                None => {
                    if let Some(labels) = o
                        .pointer_mut("/metadata/labels")
                        .and_then(Value::as_object_mut)
                    {
                        labels.remove(TENANT_LABEL);
                    }
                }
            }
            o
        })
        .collect()
}

/// Waits until every Tenant lists exactly the Namespaces of `objects` it owns as its spaces (a
/// space Capsule fails to reconcile is still the tenant's; one an earlier request's state held
/// is gone, as its namespace count must not include it), and Capsule's caches have had a
/// moment to see them.
fn wait_adopted(
    plane: &CapsulePlane,
    objects: &[Value],
    tenants: &BTreeMap<String, String>,
) -> Result<()> {
    let mut wanted: BTreeMap<&str, Vec<&str>> =
        tenants.keys().map(|t| (t.as_str(), Vec::new())).collect();
    for o in objects {
        let tenant = tenant_of(o).filter(|t| tenants.contains_key(*t));
        if let (Some(t), Some(name)) = (tenant, o.pointer("/metadata/name").and_then(Value::as_str))
        {
            wanted.entry(t).or_default().push(name);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for (tenant, namespaces) in wanted {
        loop {
            let t = plane
                .cluster
                .admin
                .get(&["tenants.capsule.clastix.io", tenant])?;
            let spaces = spaces(&t);
            if namespaces.iter().all(|n| spaces.contains(n)) && spaces.len() == namespaces.len() {
                break;
            }
            if Instant::now() > deadline {
                return Err(Error::Invalid(format!(
                    "Tenant {tenant} lists the spaces [{}] after 20s, not [{}]",
                    spaces.join(", "),
                    namespaces.join(", ")
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    Ok(())
}

/// The names of the Tenant `t`'s spaces.
fn spaces(t: &Value) -> Vec<&str> {
    t.pointer("/status/spaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .collect()
}

/// Deletes the Tenants through the setup server, their finalizer cleared (no namespace
/// controller empties their namespaces here), and waits until they are gone.
fn remove_tenants(plane: &CapsulePlane, tenants: &BTreeMap<String, String>) -> Result<()> {
    let setup = &plane.cluster.setup;
    for name in tenants.keys() {
        setup.run(
            &[
                "delete",
                "tenants.capsule.clastix.io",
                name,
                "--ignore-not-found",
                "--wait=false",
            ],
            None,
        )?;
        let _ = setup.answer(
            &[
                "patch",
                "tenants.capsule.clastix.io",
                name,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
            None,
        )?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for name in tenants.keys() {
        while setup
            .answer(&["get", "tenants.capsule.clastix.io", name], None)?
            .ok
        {
            if Instant::now() > deadline {
                return Err(Error::Invalid(format!("Tenant {name} not gone after 60s")));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Ok(())
}

/// How Capsule's answer differs from the bundle's, if it does: the verdict, else the object
/// as admitted (what the API server assigns on its own left out).
fn differ(bundle: &Outcome, capsule: &Outcome, sent: Option<&Value>) -> Option<(Nature, String)> {
    if bundle.allowed != capsule.allowed {
        let nature = if bundle.allowed {
            Nature::Admits
        } else {
            Nature::Refuses
        };
        let say = |o: &Outcome| {
            if o.allowed {
                "admits".to_owned()
            } else {
                format!("refuses{}", describe_refusal(o))
            }
        };
        return Some((
            nature,
            format!("the bundle {}, Capsule {}", say(bundle), say(capsule)),
        ));
    }
    let (Some(b), Some(c)) = (&bundle.object, &capsule.object) else {
        return None;
    };
    let (b, c) = (comparable(b, sent), comparable(c, sent));
    let mut paths = Vec::new();
    diff("", &b, &c, &mut paths);
    if paths.is_empty() {
        None
    } else {
        Some((
            Nature::Object,
            format!("both admit, the objects differ: {}", paths.join("; ")),
        ))
    }
}

/// `object` without what the API server assigns anew on each request (identity, times,
/// allocated addresses and ports, the generated token volume's name).
fn comparable(object: &Value, sent: Option<&Value>) -> Value {
    let mut o = object.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "generation",
            "managedFields",
        ] {
            meta.remove(f);
        }
    }
    let sent_has = |p: &str| sent.and_then(|s| s.pointer(p)).is_some();
    if o.get("kind").and_then(Value::as_str) == Some("Service")
        && let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut)
    {
        for f in ["clusterIP", "clusterIPs", "healthCheckNodePort"] {
            if !sent_has(&format!("/spec/{f}")) {
                spec.remove(f);
            }
        }
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for (i, port) in ports.iter_mut().enumerate() {
                if !sent_has(&format!("/spec/ports/{i}/nodePort"))
                    && let Some(p) = port.as_object_mut()
                {
                    p.remove("nodePort");
                }
            }
        }
    }
    let text = o.to_string();
    if text.contains("kube-api-access-") {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find("kube-api-access-") {
            let (head, tail) = rest.split_at(i + "kube-api-access-".len());
            out.push_str(head);
            let suffix = tail
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(tail.len());
            rest = tail.get(suffix..).unwrap_or("");
        }
        out.push_str(rest);
        if let Ok(v) = serde_json::from_str(&out) {
            return v;
        }
    }
    o
}

/// The JSON Pointer paths at which `a` and `b` differ, each with both values.
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => diff(&p, va, vb, out),
                    (va, vb) => out.push(format!(
                        "{p}: the bundle {}, Capsule {}",
                        va.map_or("nothing".into(), Value::to_string),
                        vb.map_or("nothing".into(), Value::to_string)
                    )),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}/{i}"), va, vb, out);
            }
        }
        _ if a != b => out.push(format!("{path}: the bundle {a}, Capsule {b}")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(allowed: bool, object: Option<Value>) -> Outcome {
        Outcome {
            allowed,
            refused_by: (!allowed).then(|| "pods.validating.projectcapsule.dev".to_owned()),
            message: if allowed { String::new() } else { "no".into() },
            object,
        }
    }

    #[test]
    fn a_verdict_that_differs_is_a_disagreement_and_names_the_refusal() {
        let (nature, what) = differ(&outcome(true, None), &outcome(false, None), None).unwrap();
        assert_eq!(nature, Nature::Admits);
        assert!(
            what.starts_with("the bundle admits, Capsule refuses"),
            "{what}"
        );
        assert!(
            what.contains("pods.validating.projectcapsule.dev: no"),
            "{what}"
        );
    }

    #[test]
    fn objects_differ_only_where_the_policies_made_them_differ() {
        let b = json!({"kind": "Service", "metadata": {"name": "s", "uid": "1", "labels": {"a": "1"}},
            "spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 80, "nodePort": 30001}]}});
        let c = json!({"kind": "Service", "metadata": {"name": "s", "uid": "2", "labels": {"a": "2"}},
            "spec": {"clusterIP": "10.96.0.9", "ports": [{"port": 80, "nodePort": 30002}]}});
        let sent = json!({"kind": "Service", "spec": {"ports": [{"port": 80}]}});
        let (nature, what) = differ(
            &outcome(true, Some(b)),
            &outcome(true, Some(c)),
            Some(&sent),
        )
        .unwrap();
        assert_eq!(nature, Nature::Object);
        assert_eq!(
            what,
            "both admit, the objects differ: /metadata/labels/a: the bundle \"1\", Capsule \"2\""
        );
    }

    #[test]
    fn the_generated_token_volume_name_is_not_a_difference() {
        let b = json!({"kind": "Pod", "spec": {"volumes": [{"name": "kube-api-access-abcde"}]}});
        let c = json!({"kind": "Pod", "spec": {"volumes": [{"name": "kube-api-access-xyz12"}]}});
        assert!(differ(&outcome(true, Some(b)), &outcome(true, Some(c)), None).is_none());
    }

    #[test]
    fn a_tenant_namespace_gets_its_owner_and_an_unknown_tenant_loses_its_label() {
        let tenants = BTreeMap::from([("solar".to_owned(), "u-1".to_owned())]);
        let objects = vec![
            json!({"kind": "Namespace", "metadata": {"name": "solar-dev", "labels": {"capsule.clastix.io/tenant": "solar"}}}),
            json!({"kind": "Namespace", "metadata": {"name": "oil-dev", "labels": {"capsule.clastix.io/tenant": "oil", "x": "y"}}}),
        ];
        let out = owned(&objects, &tenants);
        assert_eq!(
            out[0].pointer("/metadata/ownerReferences/0/uid"),
            Some(&json!("u-1"))
        );
        assert_eq!(out[1].pointer("/metadata/labels"), Some(&json!({"x": "y"})));
    }
}
