//! The simple "these objects exist" cluster state.

use std::path::Path;

use std::collections::BTreeSet;

use policy_admission::cluster::{GetRequest, host_view, not_found_text};
use serde_json::{Value, json};

use crate::callbacks::{Callbacks, KubernetesRequest};
use crate::error::{Error, Result, read_text};
use crate::selector::{FieldSelector, LabelSelector};

/// A fixed set of objects answering reads like the Kubewarden host would:
/// `get_resource` by (apiVersion, kind, namespace, name), or for a missing
/// object the host's error text `Cannot find <apiVersion>/<kind> named
/// '<name>' inside of namespace '<namespace>'`
/// ([`policy_admission::cluster::not_found_text`]); lists filtered by
/// apiVersion/kind, namespace, label and field selectors, returned as
/// `<Kind>List` sorted by namespace then name. Answers are what the host hands a guest
/// ([`policy_admission::cluster::host_view`]): no managed fields, no last-applied annotation,
/// and only the fields a request's `field_masks` name.
///
/// ```
/// use serde_json::json;
/// use policy_host::{Callbacks, ClusterObjects, KubernetesRequest};
/// let mut c = ClusterObjects::new(vec![json!({"apiVersion": "v1", "kind": "Namespace",
///     "metadata": {"name": "team-a", "labels": {"env": "prod"}}})]).unwrap();
/// let list = KubernetesRequest::KubernetesListResourceAll { api_version: "v1".into(),
///     kind: "Namespace".into(), label_selector: Some("env=prod".into()),
///     field_selector: None, field_masks: None };
/// let reply: serde_json::Value = serde_json::from_slice(&c.kubernetes(&list).unwrap()).unwrap();
/// assert_eq!(reply["kind"], "NamespaceList");
/// assert_eq!(reply["items"][0]["metadata"]["name"], "team-a");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    objects: Vec<Value>,
}

/// The objects of a YAML text: a list of objects, a `kind: List` with `items`, or several
/// `---` documents of either form (empty documents skipped).
///
/// ```
/// let objects = policy_host::cluster::yaml_objects("a: 1\n---\n[{b: 2}]\n---\nkind: List\nitems: [{c: 3}]\n", "t").unwrap();
/// assert_eq!(objects.len(), 3);
/// ```
pub fn yaml_objects(text: &str, origin: &str) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value: Value =
            serde::Deserialize::deserialize(doc).map_err(|e| Error::parse(origin, e))?;
        match value {
            Value::Null => {}
            Value::Array(items) => objects.extend(items),
            Value::Object(ref map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
                if let Some(Value::Array(items)) = map.get("items") {
                    objects.extend(items.iter().cloned());
                }
            }
            other => objects.push(other),
        }
    }
    Ok(objects)
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

impl ClusterObjects {
    /// Builds the state from objects; each needs `apiVersion`, `kind` and
    /// `metadata.name`.
    pub fn new(objects: Vec<Value>) -> Result<Self> {
        for (i, o) in objects.iter().enumerate() {
            for path in [&["apiVersion"][..], &["kind"], &["metadata", "name"]] {
                if str_at(o, path).is_none() {
                    return Err(Error::Invalid(format!(
                        "cluster object #{} has no string `{}`",
                        i + 1,
                        path.join(".")
                    )));
                }
            }
        }
        Ok(ClusterObjects { objects })
    }

    /// Parses YAML: a list of objects, a `kind: List` with `items`, or
    /// several `---` documents of either form.
    pub fn from_yaml_str(text: &str, origin: &str) -> Result<Self> {
        Self::new(yaml_objects(text, origin)?).map_err(|e| Error::parse(origin, e))
    }

    /// Reads a YAML/JSON file of objects (see [`ClusterObjects::from_yaml_str`]).
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_yaml_str(&read_text(path)?, &path.display().to_string())
    }

    /// The objects, in the given order.
    pub fn objects(&self) -> &[Value] {
        &self.objects
    }

    fn of_type<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Value> {
        self.objects.iter().filter(move |o| {
            str_at(o, &["apiVersion"]) == Some(api_version) && str_at(o, &["kind"]) == Some(kind)
        })
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: &Option<String>,
        field_selector: &Option<String>,
        field_masks: &Option<BTreeSet<String>>,
    ) -> std::result::Result<Vec<u8>, String> {
        let labels = LabelSelector::parse(label_selector.as_deref().unwrap_or(""))
            .map_err(|e| e.to_string())?;
        let fields = FieldSelector::parse(field_selector.as_deref().unwrap_or(""))
            .map_err(|e| e.to_string())?;
        let mut items: Vec<&Value> = self
            .of_type(api_version, kind)
            .filter(|o| namespace.is_none() || str_at(o, &["metadata", "namespace"]) == namespace)
            .filter(|o| labels.matches(o.pointer("/metadata/labels").unwrap_or(&Value::Null)))
            .filter(|o| fields.matches(o))
            .collect();
        items.sort_by_key(|o| {
            (
                str_at(o, &["metadata", "namespace"]).unwrap_or(""),
                str_at(o, &["metadata", "name"]).unwrap_or(""),
            )
        });
        let masks: Option<Vec<String>> = field_masks.as_ref().map(|m| m.iter().cloned().collect());
        let items: Vec<Value> = items
            .into_iter()
            .map(|o| {
                let mut o = o.clone();
                host_view(&mut o, masks.as_deref());
                o
            })
            .collect();
        let reply = json!({
            "apiVersion": api_version,
            "kind": format!("{kind}List"),
            "metadata": {},
            "items": items,
        });
        serde_json::to_vec(&reply).map_err(|e| e.to_string())
    }
}

impl Callbacks for ClusterObjects {
    fn kubernetes(&mut self, request: &KubernetesRequest) -> std::result::Result<Vec<u8>, String> {
        match request {
            KubernetesRequest::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                ..
            } => self
                .of_type(api_version, kind)
                .find(|o| {
                    str_at(o, &["metadata", "name"]) == Some(name.as_str())
                        && str_at(o, &["metadata", "namespace"]) == namespace.as_deref()
                })
                .map(|o| {
                    let mut o = o.clone();
                    host_view(&mut o, None);
                    serde_json::to_vec(&o).map_err(|e| e.to_string())
                })
                .unwrap_or_else(|| {
                    Err(not_found_text(&GetRequest {
                        api_version: api_version.clone(),
                        kind: kind.clone(),
                        name: name.clone(),
                        namespace: namespace.clone(),
                        disable_cache: false,
                    }))
                }),
            KubernetesRequest::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            } => self.list(
                api_version,
                kind,
                Some(namespace),
                label_selector,
                field_selector,
                field_masks,
            ),
            KubernetesRequest::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            } => self.list(
                api_version,
                kind,
                None,
                label_selector,
                field_selector,
                field_masks,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJECTS: &str = r#"
- apiVersion: v1
  kind: Namespace
  metadata: {name: team-b, labels: {env: dev, tenant: b}}
- apiVersion: v1
  kind: Namespace
  metadata: {name: team-a, labels: {env: prod, tenant: a}}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: team-a, labels: {app: web}}
- apiVersion: v1
  kind: Pod
  metadata: {name: db, namespace: team-a, labels: {app: db}}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: team-b, labels: {app: web}}
---
apiVersion: v1
kind: List
items:
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicy
  metadata: {name: deny, namespace: team-a}
"#;

    fn cluster() -> ClusterObjects {
        ClusterObjects::from_yaml_str(OBJECTS, "t").unwrap()
    }

    fn call(
        c: &mut ClusterObjects,
        op: &str,
        payload: Value,
    ) -> std::result::Result<Value, String> {
        let req = KubernetesRequest::from_host_call(op, &serde_json::to_vec(&payload).unwrap())
            .unwrap()
            .unwrap();
        c.kubernetes(&req)
            .map(|b| serde_json::from_slice(&b).unwrap())
    }

    fn names(list: &Value) -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["metadata"]["namespace"].as_str().unwrap_or(""),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn loads_lists_and_multi_docs() {
        assert_eq!(cluster().objects().len(), 6);
        assert!(ClusterObjects::from_yaml_str("- kind: Pod\n", "t").is_err());
    }

    #[test]
    fn get_resource() {
        let mut c = cluster();
        let ns = call(&mut c, "get_resource", json!({"api_version": "v1", "kind": "Namespace", "name": "team-a", "namespace": null, "disable_cache": false})).unwrap();
        assert_eq!(ns["metadata"]["labels"]["env"], "prod");
        let pod = call(&mut c, "get_resource", json!({"api_version": "v1", "kind": "Pod", "name": "web", "namespace": "team-b", "disable_cache": false})).unwrap();
        assert_eq!(pod["metadata"]["namespace"], "team-b");
        let err = call(&mut c, "get_resource", json!({"api_version": "v1", "kind": "Namespace", "name": "nope", "namespace": null, "disable_cache": false})).unwrap_err();
        assert_eq!(
            err,
            "Cannot find v1/Namespace named 'nope' inside of namespace 'None'"
        );
        let err = call(&mut c, "get_resource", json!({"api_version": "networking.k8s.io/v1", "kind": "NetworkPolicy", "name": "x", "namespace": "team-a", "disable_cache": false})).unwrap_err();
        assert_eq!(
            err,
            "Cannot find networking.k8s.io/v1/NetworkPolicy named 'x' inside of namespace 'Some(\"team-a\")'"
        );
        // a namespaced object is not found without its namespace
        assert!(call(&mut c, "get_resource", json!({"api_version": "v1", "kind": "Pod", "name": "web", "namespace": null, "disable_cache": false})).is_err());
    }

    #[test]
    fn lists_filter_and_sort() {
        let mut c = cluster();
        let all = call(&mut c, "list_resources_all", json!({"api_version": "v1", "kind": "Namespace", "label_selector": null, "field_selector": null})).unwrap();
        assert_eq!(all["kind"], "NamespaceList");
        assert_eq!(all["apiVersion"], "v1");
        assert_eq!(names(&all), ["/team-a", "/team-b"]);

        let pods = call(&mut c, "list_resources_by_namespace", json!({"api_version": "v1", "kind": "Pod", "namespace": "team-a", "label_selector": null, "field_selector": null})).unwrap();
        assert_eq!(names(&pods), ["team-a/db", "team-a/web"]);

        let web = call(&mut c, "list_resources_all", json!({"api_version": "v1", "kind": "Pod", "label_selector": "app in (web)", "field_selector": null})).unwrap();
        assert_eq!(names(&web), ["team-a/web", "team-b/web"]);

        let not_a = call(&mut c, "list_resources_all", json!({"api_version": "v1", "kind": "Pod", "label_selector": "app=web", "field_selector": "metadata.namespace!=team-a"})).unwrap();
        assert_eq!(names(&not_a), ["team-b/web"]);

        let by_name = call(&mut c, "list_resources_all", json!({"api_version": "v1", "kind": "Namespace", "label_selector": "env", "field_selector": "metadata.name=team-b"})).unwrap();
        assert_eq!(names(&by_name), ["/team-b"]);

        let none = call(&mut c, "list_resources_all", json!({"api_version": "apps/v1", "kind": "Deployment", "label_selector": null, "field_selector": null})).unwrap();
        assert_eq!(none["kind"], "DeploymentList");
        assert_eq!(none["items"], json!([]));

        assert!(call(&mut c, "list_resources_all", json!({"api_version": "v1", "kind": "Pod", "label_selector": "app in web", "field_selector": null})).is_err());
    }

    #[test]
    fn answers_carry_only_what_the_host_keeps() {
        let mut c = ClusterObjects::new(vec![json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "a", "managedFields": [{}]},
            "spec": {"ingressClassName": "x", "rules": [{"host": "h", "http": {"paths": [{"path": "/", "pathType": "Prefix"}]}}]},
            "status": {"loadBalancer": {}}})])
        .unwrap();
        let masked = call(
            &mut c,
            "list_resources_by_namespace",
            json!({"api_version": "networking.k8s.io/v1",
            "kind": "Ingress", "namespace": "a", "label_selector": null, "field_selector": null,
            "field_masks": ["spec.rules.host", "spec.rules.http.paths.path"]}),
        )
        .unwrap();
        assert_eq!(
            masked["items"][0],
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"rules": [{"host": "h", "http": {"paths": [{"path": "/"}]}}]}})
        );
        let whole = call(
            &mut c,
            "get_resource",
            json!({"api_version": "networking.k8s.io/v1",
            "kind": "Ingress", "name": "web", "namespace": "a", "disable_cache": false}),
        )
        .unwrap();
        assert_eq!(whole["status"], json!({"loadBalancer": {}}));
        assert!(whole["metadata"].get("managedFields").is_none());
    }
}
