//! A scenario's cluster state as real objects: whatever the policies read (Namespaces with
//! their labels, classes, quotas, other tenants' objects) written through the setup server
//! (no webhooks), and whatever the previous state held and this one does not removed, so
//! that every request meets exactly its own state. Each Namespace gets the ServiceAccount
//! `default` its Pods need (no controller-manager creates it here); a Namespace the state
//! says is Terminating (`deletionTimestamp`, or `status.phase`) is deleted once its objects
//! are written, and stays Terminating, as no namespace controller empties it here.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::cluster::kubectl::Kubectl;
use crate::error::Result;

/// `apiVersion`, kind, namespace, name: one object's identity.
type Key = (String, String, String, String);

fn key(object: &Value) -> Option<Key> {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).map(str::to_owned);
    Some((
        text("/apiVersion")?,
        text("/kind")?,
        text("/metadata/namespace").unwrap_or_default(),
        text("/metadata/name")?,
    ))
}

/// What the API server assigns, which an object written again must not carry.
const SERVER_FIELDS: [&str; 8] = [
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// `object` as the harness writes it: without server-assigned metadata or status.
pub fn writable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in SERVER_FIELDS {
            meta.remove(f);
        }
    }
    if let Some(m) = object.as_object_mut() {
        m.remove("status");
    }
    object
}

/// Whether `object` is a Namespace being deleted.
fn terminating(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("Namespace")
        && (object.pointer("/metadata/deletionTimestamp").is_some()
            || object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating"))
}

/// One object as written, and whether it was left Terminating.
type Held = (Value, bool);

/// The objects the harness wrote and not yet removed.
#[derive(Debug, Default)]
pub struct State {
    held: BTreeMap<Key, Held>,
    /// What is deleted from a Namespace before it is removed (what a controller created in
    /// it), beyond what the state wrote.
    empty: &'static [&'static str],
    /// Through whom Namespaces are written, when not through the setup server.
    namespaces: Option<Kubectl>,
}

impl State {
    /// A state whose Namespaces are written by `namespaces` (through the webhooks of a
    /// controller that completes them as it admits them), and emptied of `resources` before
    /// they are removed.
    pub fn with_namespaces(namespaces: Kubectl, resources: &'static [&'static str]) -> State {
        State {
            held: BTreeMap::new(),
            empty: resources,
            namespaces: Some(namespaces),
        }
    }

    /// Makes the cluster hold `objects` (and a ServiceAccount `default` per Namespace):
    /// removes what it held beyond them, writes those not held as they are.
    pub fn reach(&mut self, cluster: &Cluster, objects: &[Value]) -> Result<()> {
        let mut wanted: BTreeMap<Key, Held> = BTreeMap::new();
        for original in objects {
            let o = writable(original);
            let dying = terminating(original);
            if let Some(k) = key(&o) {
                if k.1 == "Namespace" {
                    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "default", "namespace": k.3}});
                    if let Some(ak) = key(&account) {
                        wanted.insert(ak, (account, false));
                    }
                }
                wanted.insert(k, (o, dying));
            }
        }
        // namespaced objects before the Namespaces they are in
        // what is not wanted, and every Terminating Namespace, held or wanted (nothing can be
        // created in it: it is removed, written with what it holds, then deleted again)
        let stale: Vec<Key> = self
            .held
            .iter()
            .filter(|(k, held)| match wanted.get(*k) {
                None => true,
                Some(want) => held.1 || want.1,
            })
            .map(|(k, _)| k.clone())
            .collect();
        let (namespaces, inside): (Vec<Key>, Vec<Key>) = stale
            .into_iter()
            .partition(|k| k.1 == "Namespace" && k.2.is_empty());
        for k in inside.iter().chain(&namespaces) {
            remove(cluster, k, self.empty)?;
            self.held.remove(k);
        }
        let changed: Vec<&Held> = wanted
            .iter()
            .filter(|(k, v)| self.held.get(*k) != Some(*v))
            .map(|(_, v)| v)
            .collect();
        let dying: Vec<String> = changed
            .iter()
            .filter(|(_, t)| *t)
            .filter_map(|(o, _)| {
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect();
        let changed: Vec<Value> = changed.into_iter().map(|(o, _)| o.clone()).collect();
        if !changed.is_empty() {
            // Namespaces first: the objects in them need them
            let (first, rest): (Vec<Value>, Vec<Value>) = changed
                .into_iter()
                .partition(|o| o.get("kind").and_then(Value::as_str) == Some("Namespace"));
            let namespaces = self.namespaces.as_ref().unwrap_or(&cluster.setup);
            for (batch, writer) in [(first, namespaces), (rest, &cluster.setup)] {
                if !batch.is_empty() && writer.apply(&batch, "tenancy-e2e-state").is_err() {
                    // one by one, and an object whose change the API server refuses (an
                    // immutable field: a PriorityClass's value) removed and written anew
                    for object in &batch {
                        let one = std::slice::from_ref(object);
                        if writer.apply(one, "tenancy-e2e-state").is_err() {
                            if let Some(k) = key(object) {
                                remove(cluster, &k, self.empty)?;
                            }
                            writer.apply(one, "tenancy-e2e-state")?;
                        }
                    }
                }
            }
        }
        for name in &dying {
            cluster
                .setup
                .run(&["delete", "namespace", name, "--wait=false"], None)?;
        }
        self.held = wanted;
        Ok(())
    }

    /// Removes everything it holds.
    pub fn clear(&mut self, cluster: &Cluster) -> Result<()> {
        self.reach(cluster, &[])
    }
}

/// The kubectl resource of a kind (`<kind>.<version>.<group>`, which kubectl resolves).
pub fn resource(api_version: &str, kind: &str) -> String {
    match api_version.split_once('/') {
        Some((group, version)) => format!("{kind}.{version}.{group}"),
        None => kind.to_owned(),
    }
}

/// Deletes one object through the setup server; a Namespace is emptied of `empty` and
/// finalized at once (no namespace controller runs here), so that a later state may create
/// it again.
fn remove(cluster: &Cluster, k: &Key, empty: &[&str]) -> Result<()> {
    let (api_version, kind, namespace, name) = k;
    if kind == "Namespace" && !empty.is_empty() {
        cluster.setup.run(
            &[
                "delete",
                &empty.join(","),
                "--all",
                "--ignore-not-found",
                "--wait=false",
                &format!("--namespace={name}"),
            ],
            None,
        )?;
    }
    let mut args = vec![
        "delete".to_owned(),
        resource(api_version, kind),
        name.clone(),
        "--ignore-not-found".into(),
        "--wait=false".into(),
    ];
    if !namespace.is_empty() {
        args.push(format!("--namespace={namespace}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cluster.setup.run(&args, None)?;
    if kind == "Namespace" {
        let answer = cluster
            .setup
            .answer(&["get", "namespace", name, "-o", "json"], None)?;
        if answer.ok {
            let mut ns: Value = serde_json::from_str(&answer.stdout)?;
            if let Some(spec) = ns.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("finalizers".into(), Value::Array(Vec::new()));
            }
            cluster.setup.run(
                &[
                    "replace",
                    "--raw",
                    &format!("/api/v1/namespaces/{name}/finalize"),
                    "-f",
                    "-",
                ],
                Some(&ns.to_string()),
            )?;
        }
    }
    Ok(())
}

/// The state a request needs beyond `objects`: its namespace exists, the object it updates
/// or deletes exists (its `oldObject`), the object it creates does not.
pub fn for_request(objects: &[Value], request: &Value) -> Vec<Value> {
    let operation = request
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("");
    let subject = request
        .get("object")
        .filter(|o| !o.is_null())
        .or_else(|| request.get("oldObject"))
        .and_then(|o| with_namespace(o, request))
        .and_then(|o| key(&o));
    let mut out: Vec<Value> = objects
        .iter()
        .filter(|o| operation != "CREATE" || key(o) != subject || subject.is_none())
        .cloned()
        .collect();
    // the namespace the request is in exists (a Namespace's own request names itself)
    let namespace = request
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let is_namespace = request.pointer("/kind/kind").and_then(Value::as_str) == Some("Namespace");
    if !namespace.is_empty()
        && !is_namespace
        && !out.iter().any(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Namespace")
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(namespace)
        })
    {
        out.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}));
    }
    if matches!(operation, "UPDATE" | "DELETE")
        && let Some(old) = request
            .get("oldObject")
            .filter(|o| !o.is_null())
            .and_then(|o| with_namespace(o, request))
    {
        let old_key = key(&old);
        out.retain(|o| key(o) != old_key);
        out.push(old);
    }
    out
}

/// `object` with the request's namespace when it names none (a namespaced object sent
/// without one, as kubectl does).
pub fn with_namespace(object: &Value, request: &Value) -> Option<Value> {
    let mut object = object.clone();
    let namespace = request
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    // a Namespace's request names the Namespace itself as its namespace
    let namespace = if object.get("kind").and_then(Value::as_str) == Some("Namespace") {
        ""
    } else {
        namespace
    };
    let meta = object.get_mut("metadata")?.as_object_mut()?;
    if !namespace.is_empty() && !meta.contains_key("namespace") {
        meta.insert("namespace".into(), Value::String(namespace.to_owned()));
    }
    if !meta.contains_key("name")
        && let Some(name) = request.get("name").and_then(Value::as_str)
    {
        meta.insert("name".into(), Value::String(name.to_owned()));
    }
    Some(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_needs_its_old_object_and_a_create_not_its_object() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}});
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let create = json!({"operation": "CREATE", "namespace": "a", "object": pod});
        let state = for_request(std::slice::from_ref(&ns), &create);
        assert_eq!(state, vec![ns.clone()]);
        let elsewhere = json!({"operation": "CREATE", "namespace": "b", "object": pod});
        let state = for_request(std::slice::from_ref(&ns), &elsewhere);
        assert_eq!(
            state[1],
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}})
        );
        let create_ns = json!({"operation": "CREATE", "object": ns});
        assert!(for_request(std::slice::from_ref(&ns), &create_ns).is_empty());
        let update =
            json!({"operation": "UPDATE", "namespace": "a", "object": pod, "oldObject": pod});
        let state = for_request(std::slice::from_ref(&ns), &update);
        assert_eq!(state.len(), 2);
        assert_eq!(state[1].pointer("/metadata/namespace"), Some(&json!("a")));
    }

    #[test]
    fn written_objects_carry_no_server_fields() {
        let o = json!({"kind": "Namespace", "metadata": {"name": "a", "uid": "u", "resourceVersion": "1"}, "status": {}});
        assert_eq!(
            writable(&o),
            json!({"kind": "Namespace", "metadata": {"name": "a"}})
        );
    }
}
