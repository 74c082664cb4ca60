//! Which webhooks the API server calls for a request: the rules (group, version, resource
//! with subresource, operation, scope), the namespaceSelector and the objectSelector of each.

use std::collections::BTreeMap;

use kube_values::selector::{LabelSelector, RawLabelSelector};
use policy_host::kube::{listed, strings};
use serde_json::{Map, Value};

use policy_host::error::{Error, Result};

/// `rules[].scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `*` (the default).
    Any,
    /// `Cluster`.
    Cluster,
    /// `Namespaced`.
    Namespaced,
}

/// One `RuleWithOperations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
    scope: Scope,
}

/// A label selector as the API server applies it; `None` inside: the empty selector, which
/// selects everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(Option<LabelSelector>);

impl Selector {
    /// Reads a `LabelSelector` (absent or `null`: everything).
    pub fn from_value(value: Option<&Value>) -> Result<Selector> {
        let raw: RawLabelSelector = match value {
            None | Some(Value::Null) => return Ok(Selector(None)),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| Error::Invalid(format!("label selector: {e}")))?,
        };
        if raw.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && raw.match_expressions.as_ref().is_none_or(Vec::is_empty)
        {
            return Ok(Selector(None));
        }
        LabelSelector::build(&raw)
            .map(|s| Selector(Some(s)))
            .map_err(|e| Error::Invalid(format!("label selector: {e}")))
    }

    /// Whether `labels` (`None`: no labels) are selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.0.as_ref().is_none_or(|s| s.matches_map(labels))
    }
}

impl Rule {
    /// Reads one rule; `scope` overrides the rule's own (`AdmissionPolicy` rules are always
    /// `Namespaced`).
    pub fn from_value(rule: &Value, scope: Option<Scope>) -> Rule {
        let written = match rule.get("scope").and_then(Value::as_str) {
            Some("Cluster") => Scope::Cluster,
            Some("Namespaced") => Scope::Namespaced,
            _ => Scope::Any,
        };
        Rule {
            groups: strings(rule, "apiGroups"),
            versions: strings(rule, "apiVersions"),
            resources: strings(rule, "resources"),
            operations: strings(rule, "operations"),
            scope: scope.unwrap_or(written),
        }
    }

    /// Whether the rule names the request's group, version, resource (a `res/sub` entry for
    /// a subresource, `*` only for no subresource), operation and scope.
    pub fn matches(&self, request: &Request<'_>) -> bool {
        let resource_listed = self.resources.iter().any(|entry| {
            let (res, sub) = entry.split_once('/').unwrap_or((entry, ""));
            (res == "*" || res == request.resource) && (sub == "*" || sub == request.sub_resource)
        });
        let scope = match self.scope {
            Scope::Any => true,
            Scope::Namespaced => !request.is_namespace() && !request.namespace.is_empty(),
            Scope::Cluster => request.is_namespace() || request.namespace.is_empty(),
        };
        listed(&self.groups, request.group)
            && listed(&self.versions, request.version)
            && resource_listed
            && listed(&self.operations, request.operation)
            && scope
    }
}

/// The fields of an AdmissionRequest routing reads.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    group: &'a str,
    version: &'a str,
    resource: &'a str,
    sub_resource: &'a str,
    operation: &'a str,
    namespace: &'a str,
    raw: &'a Value,
}

impl<'a> Request<'a> {
    /// Reads an AdmissionRequest (absent fields are empty).
    pub fn new(raw: &'a Value) -> Request<'a> {
        let field = |path: &str| {
            raw.pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        Request {
            group: field("/resource/group"),
            version: field("/resource/version"),
            resource: field("/resource/resource"),
            sub_resource: field("/subResource"),
            operation: field("/operation"),
            namespace: field("/namespace"),
            raw,
        }
    }

    /// Whether the request is of a Namespace object itself.
    fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.version == "v1" && self.resource == "namespaces"
    }

    fn labels(&self, object: &str) -> Option<&'a Map<String, Value>> {
        self.raw
            .get(object)
            .and_then(|o| o.pointer("/metadata/labels"))
            .and_then(Value::as_object)
    }
}

/// The labels of the cluster's Namespaces, with `kubernetes.io/metadata.name`, which the API
/// server sets on every namespace (a namespace absent from the objects has only that label).
#[derive(Debug, Clone, Default)]
pub struct Namespaces {
    labels: BTreeMap<String, Map<String, Value>>,
}

impl Namespaces {
    /// The Namespace objects among `objects`.
    pub fn from_objects(objects: &[Value]) -> Namespaces {
        let labels = objects
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Namespace"))
            .filter_map(|o| {
                let name = o.pointer("/metadata/name").and_then(Value::as_str)?;
                let labels = o
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                Some((name.to_owned(), labels))
            })
            .collect();
        Namespaces { labels }
    }

    /// The labels of namespace `name`.
    pub fn labels(&self, name: &str) -> Map<String, Value> {
        let mut labels = self.labels.get(name).cloned().unwrap_or_default();
        labels.insert(
            "kubernetes.io/metadata.name".into(),
            Value::String(name.to_owned()),
        );
        labels
    }
}

/// Where the API server sends requests for one webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The rules.
    pub rules: Vec<Rule>,
    /// The namespaceSelector of the webhook.
    pub namespace_selector: Selector,
    /// The objectSelector.
    pub object_selector: Selector,
}

impl Route {
    /// Whether the API server calls this webhook for `request`: a rule matches; the
    /// namespaceSelector matches the request's namespace (a cluster-scoped object other
    /// than a Namespace is never filtered; a Namespace created or updated is judged by its
    /// own labels); the objectSelector matches the object or the old object.
    pub fn applies(&self, request: &Value, namespaces: &Namespaces) -> bool {
        let req = Request::new(request);
        if !self.rules.iter().any(|r| r.matches(&req)) {
            return false;
        }
        let namespace_ok = if req.namespace.is_empty() && !req.is_namespace() {
            true
        } else if req.is_namespace() && req.sub_resource.is_empty() && req.operation != "DELETE" {
            let mut labels = req.labels("object").cloned().unwrap_or_default();
            let name = request
                .pointer("/object/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(req.namespace);
            labels.insert(
                "kubernetes.io/metadata.name".into(),
                Value::String(name.to_owned()),
            );
            self.namespace_selector.matches(Some(&labels))
        } else {
            self.namespace_selector
                .matches(Some(&namespaces.labels(req.namespace)))
        };
        let object_ok = match &self.object_selector.0 {
            None => true,
            Some(_) => ["object", "oldObject"].iter().any(|o| {
                request.get(*o).is_some_and(|v| !v.is_null())
                    && self.object_selector.matches(req.labels(o))
            }),
        };
        namespace_ok && object_ok
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn route(rules: Value, namespace_selector: Value) -> Route {
        Route {
            rules: rules
                .as_array()
                .unwrap()
                .iter()
                .map(|r| Rule::from_value(r, None))
                .collect(),
            namespace_selector: Selector::from_value(Some(&namespace_selector)).unwrap(),
            object_selector: Selector(None),
        }
    }

    fn pod(namespace: &str, operation: &str, sub: Option<&str>) -> Value {
        let mut r = json!({"resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": operation, "namespace": namespace,
            "object": {"metadata": {"name": "p", "labels": {"app": "web"}}}});
        if let Some(sub) = sub {
            r["subResource"] = json!(sub);
        }
        r
    }

    fn namespaces() -> Namespaces {
        Namespaces::from_objects(&[
            json!({"kind": "Namespace", "metadata": {"name": "solar-dev", "labels": {"tenant": "solar"}}}),
            json!({"kind": "Namespace", "metadata": {"name": "oil-dev", "labels": {"tenant": "oil"}}}),
        ])
    }

    #[test]
    fn rules_name_group_version_resource_operation() {
        let r = route(
            json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE", "UPDATE"]}]),
            json!(null),
        );
        let ns = namespaces();
        assert!(r.applies(&pod("solar-dev", "CREATE", None), &ns));
        assert!(!r.applies(&pod("solar-dev", "DELETE", None), &ns));
        assert!(!r.applies(
            &pod("solar-dev", "UPDATE", Some("ephemeralcontainers")),
            &ns
        ));
        let mut deploy = pod("solar-dev", "CREATE", None);
        deploy["resource"] = json!({"group": "apps", "version": "v1", "resource": "deployments"});
        assert!(!r.applies(&deploy, &ns));
    }

    #[test]
    fn subresources_and_wildcards() {
        let ns = namespaces();
        let sub = route(
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods/ephemeralcontainers"], "operations": ["*"]}]),
            json!(null),
        );
        assert!(sub.applies(&pod("a", "UPDATE", Some("ephemeralcontainers")), &ns));
        assert!(!sub.applies(&pod("a", "UPDATE", None), &ns));
        let star = route(
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]),
            json!(null),
        );
        assert!(star.applies(&pod("a", "CREATE", None), &ns));
        assert!(!star.applies(&pod("a", "UPDATE", Some("status")), &ns));
        let all = route(
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "operations": ["*"]}]),
            json!(null),
        );
        assert!(all.applies(&pod("a", "UPDATE", Some("status")), &ns));
    }

    #[test]
    fn scope_tells_namespaces_from_cluster_objects() {
        let ns = namespaces();
        let cluster = route(
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"], "scope": "Cluster"}]),
            json!(null),
        );
        let namespace = json!({"resource": {"group": "", "version": "v1", "resource": "namespaces"},
            "operation": "CREATE", "namespace": "new", "object": {"metadata": {"name": "new"}}});
        assert!(cluster.applies(&namespace, &ns));
        assert!(!cluster.applies(&pod("a", "CREATE", None), &ns));
        let namespaced = route(
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"], "scope": "Namespaced"}]),
            json!(null),
        );
        assert!(!namespaced.applies(&namespace, &ns));
        assert!(namespaced.applies(&pod("a", "CREATE", None), &ns));
    }

    #[test]
    fn namespace_selector_reads_the_namespace_or_the_namespace_object() {
        let ns = namespaces();
        let rules = json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]);
        let solar = route(rules.clone(), json!({"matchLabels": {"tenant": "solar"}}));
        assert!(solar.applies(&pod("solar-dev", "CREATE", None), &ns));
        assert!(!solar.applies(&pod("oil-dev", "CREATE", None), &ns));
        assert!(!solar.applies(&pod("unknown", "CREATE", None), &ns));
        let by_name = route(
            rules.clone(),
            json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kubewarden"]}]}),
        );
        assert!(by_name.applies(&pod("unknown", "CREATE", None), &ns));
        assert!(!by_name.applies(&pod("kubewarden", "CREATE", None), &ns));
        let created = json!({"resource": {"group": "", "version": "v1", "resource": "namespaces"},
            "operation": "CREATE", "namespace": "solar-prod",
            "object": {"metadata": {"name": "solar-prod", "labels": {"tenant": "solar"}}}});
        assert!(solar.applies(&created, &ns));
        let node = json!({"resource": {"group": "", "version": "v1", "resource": "nodes"},
            "operation": "CREATE", "object": {"metadata": {"name": "n"}}});
        assert!(solar.applies(&node, &ns));
    }

    #[test]
    fn object_selector_reads_object_or_old_object() {
        let ns = namespaces();
        let mut r = route(
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]),
            json!(null),
        );
        r.object_selector =
            Selector::from_value(Some(&json!({"matchLabels": {"app": "web"}}))).unwrap();
        assert!(r.applies(&pod("a", "CREATE", None), &ns));
        let mut other = pod("a", "UPDATE", None);
        other["object"]["metadata"]["labels"] = json!({"app": "db"});
        assert!(!r.applies(&other, &ns));
        other["oldObject"] = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(r.applies(&other, &ns));
    }
}
