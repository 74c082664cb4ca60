//! kubewarden-controller's step: from the bindings of an install (`ClusterAdmissionPolicy`,
//! `AdmissionPolicy`, `ClusterAdmissionPolicyGroup`, `AdmissionPolicyGroup`) to the
//! `policies.yml` of one PolicyServer, and the webhook of each binding (where the API server
//! sends requests).
//!
//! As the controller does, only bindings whose `spec.policyServer` (default `default`) names
//! the PolicyServer are loaded; each gets the id of its webhook path `/validate/<id>`:
//! `clusterwide-<name>`, `namespaced-<namespace>-<name>`, `clusterwide-group-<name>`,
//! `namespaced-group-<namespace>-<name>`. Its entry carries `namespacedName`, `module`,
//! `policyMode` (`spec.mode`, default `protect`), `allowedToMutate` (`spec.mutating`),
//! `contextAwareResources` (cluster-wide policies only), `settings`, `message`,
//! `timeoutEvalSeconds` and `hostCapabilities` (`*` for cluster-wide policies, the
//! PolicyServer's `namespacedPoliciesCapabilities` else); a group's entry carries its
//! members (`policies`), `expression` and `message` instead, and never mutates. The
//! webhook of a cluster-wide binding leaves out the controller's own namespace (and keeps
//! only the `matchExpressions` of the binding's namespaceSelector, as the controller
//! does) unless `allowInsideAdmissionControllerNamespace`; a namespaced binding sees only
//! its namespace, through `Namespaced` rules. `matchConditions` are not evaluated.

mod manifests;
mod module;
mod route;

use serde_json::{Map, Value, json};

pub use manifests::{of_kind, read_objects};
pub use module::{ModulesDir, policy_of_module};
use policy_host::error::{Error, Result};
pub use route::{Namespaces, Request, Route, Rule, Scope, Selector};

/// The namespace kubewarden-controller deploys policy-server in (Helm's default).
pub const DEFAULT_DEPLOYMENTS_NAMESPACE: &str = "kubewarden";

/// The kinds of bindings the controller reads.
pub const BINDING_KINDS: [&str; 4] = [
    "ClusterAdmissionPolicy",
    "AdmissionPolicy",
    "ClusterAdmissionPolicyGroup",
    "AdmissionPolicyGroup",
];

/// The PolicyServer the bindings are loaded for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyServerSpec {
    /// `metadata.name`.
    pub name: String,
    /// `spec.serviceAccountName` (`None`: the namespace's default ServiceAccount).
    pub service_account: Option<String>,
    /// `spec.namespacedPoliciesCapabilities`.
    pub namespaced_capabilities: Option<Vec<String>>,
    /// Where the controller deploys it.
    pub deployments_namespace: String,
}

impl PolicyServerSpec {
    /// A PolicyServer known by name only.
    pub fn named(name: &str) -> PolicyServerSpec {
        PolicyServerSpec {
            name: name.to_owned(),
            service_account: None,
            namespaced_capabilities: None,
            deployments_namespace: DEFAULT_DEPLOYMENTS_NAMESPACE.to_owned(),
        }
    }

    /// The PolicyServer object among `objects`: the one named `name`, or the only one.
    pub fn find(objects: &[Value], name: Option<&str>) -> Result<PolicyServerSpec> {
        let servers: Vec<&Value> = of_kind(objects, "PolicyServer")
            .filter(|s| {
                name.is_none_or(|n| s.pointer("/metadata/name").and_then(Value::as_str) == Some(n))
            })
            .collect();
        let server = match servers.as_slice() {
            [one] => *one,
            [] => {
                return Err(Error::Invalid(format!(
                    "no PolicyServer{} among the manifests",
                    name.map(|n| format!(" named {n:?}")).unwrap_or_default()
                )));
            }
            _ => {
                return Err(Error::Invalid(
                    "several PolicyServers among the manifests: name the one under test".into(),
                ));
            }
        };
        let text = |path: &str| {
            server
                .pointer(path)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Ok(PolicyServerSpec {
            name: text("/metadata/name").unwrap_or_default(),
            service_account: text("/spec/serviceAccountName"),
            namespaced_capabilities: server
                .pointer("/spec/namespacedPoliciesCapabilities")
                .and_then(Value::as_array)
                .map(|caps| {
                    caps.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                }),
            deployments_namespace: DEFAULT_DEPLOYMENTS_NAMESPACE.to_owned(),
        })
    }
}

/// One binding as the controller configures it.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// Its id in policies.yml and webhook path (`/validate/<id>`).
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` of a namespaced binding.
    pub namespace: Option<String>,
    /// Its policies.yml entry, module references as written.
    pub entry: Value,
    /// Whether its webhook is a mutating one.
    pub mutating: bool,
    /// Where the API server sends requests to it.
    pub route: Route,
    /// Its module references (a group's: every member's).
    pub modules: Vec<String>,
    /// Its webhook as the controller writes it into the Validating- or
    /// MutatingWebhookConfiguration named after the id: name, rules, namespaceSelector
    /// (matchExpressions only, its own namespace excluded), objectSelector, matchConditions,
    /// failurePolicy, matchPolicy, sideEffects, timeoutSeconds; every field but its
    /// `clientConfig` (the Service of the PolicyServer, path `/validate/<id>`).
    pub webhook: Value,
}

/// The controller's view of an install for one PolicyServer.
#[derive(Debug, Clone)]
pub struct Controller {
    /// The PolicyServer.
    pub server: PolicyServerSpec,
    /// Its bindings, by id.
    pub policies: Vec<LoadedPolicy>,
    /// Bindings of other PolicyServers (`<kind>/<name> → <server>`), not loaded.
    pub elsewhere: Vec<String>,
    /// What the controller does differently from what a binding says (matchConditions not
    /// evaluated here, namespaceSelector labels dropped).
    pub notes: Vec<String>,
}

/// The webhook of binding `id` (see [`LoadedPolicy::webhook`]): the spec's fields, Kubewarden's
/// defaults where it has none, a namespaced binding's rules scoped to namespaces.
fn webhook(id: &str, cluster_wide: bool, spec: &Value, namespace_selector: Value) -> Value {
    let text = |field: &str, default: &str| {
        Value::String(
            text_at(spec, &format!("/{field}"))
                .unwrap_or(default)
                .to_owned(),
        )
    };
    let rules: Vec<Value> = spec
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            let mut r = r.clone();
            if !cluster_wide && let Some(m) = r.as_object_mut() {
                m.insert("scope".into(), Value::String("Namespaced".into()));
            }
            r
        })
        .collect();
    let mut webhook = json!({
        "name": format!("{id}.kubewarden.admission"),
        "rules": rules,
        "failurePolicy": text("failurePolicy", "Fail"),
        "matchPolicy": text("matchPolicy", "Equivalent"),
        "sideEffects": text("sideEffects", "None"),
        "timeoutSeconds": spec.get("timeoutSeconds").cloned().unwrap_or(json!(10)),
        "admissionReviewVersions": ["v1"],
    });
    if let Some(m) = webhook.as_object_mut() {
        if !namespace_selector.is_null() {
            m.insert("namespaceSelector".into(), namespace_selector);
        }
        for field in ["objectSelector", "matchConditions"] {
            if let Some(v) = non_empty(spec.get(field)) {
                m.insert(field.into(), v);
            }
        }
    }
    webhook
}

fn text_at<'a>(value: &'a Value, path: &str) -> Option<&'a str> {
    value.pointer(path).and_then(Value::as_str)
}

/// `values`, or nothing when absent or empty (the controller's `omitempty`).
fn non_empty(value: Option<&Value>) -> Option<Value> {
    value
        .filter(|v| v.as_array().is_none_or(|a| !a.is_empty()) && !v.is_null())
        .cloned()
}

/// What every entry of a binding carries.
struct Common<'a> {
    namespaced_name: Value,
    mode: &'a str,
    message: &'a str,
    host_capabilities: Value,
    cluster_wide: bool,
}

/// A group's entry: its members, expression and message; its members' modules are added to
/// `modules`.
fn group_entry(
    spec: &Value,
    common: &Common<'_>,
    modules: &mut Vec<String>,
) -> Result<Value, String> {
    let mut members = Map::new();
    for (member, m) in spec
        .get("policies")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let module = m.get("module").and_then(Value::as_str).unwrap_or_default();
        modules.push(module.to_owned());
        let mut out = Map::new();
        out.insert("module".into(), json!(module));
        out.insert(
            "settings".into(),
            m.get("settings").cloned().unwrap_or(Value::Null),
        );
        if common.cluster_wide
            && let Some(resources) = non_empty(m.get("contextAwareResources"))
        {
            out.insert("contextAwareResources".into(), resources);
        }
        if let Some(timeout) = m.get("timeoutEvalSeconds").filter(|t| !t.is_null()) {
            out.insert("timeoutEvalSeconds".into(), timeout.clone());
        }
        out.insert("hostCapabilities".into(), common.host_capabilities.clone());
        members.insert(member.clone(), Value::Object(out));
    }
    if members.is_empty() {
        return Err("a group without policies".into());
    }
    Ok(json!({
        "namespacedName": common.namespaced_name,
        "policyMode": common.mode,
        "policies": members,
        "expression": spec.get("expression").and_then(Value::as_str).unwrap_or_default(),
        "message": common.message,
    }))
}

/// A policy's entry and whether it mutates; its module is added to `modules`.
fn policy_entry(
    spec: &Value,
    settings: Value,
    common: &Common<'_>,
    modules: &mut Vec<String>,
) -> Result<(Value, bool), String> {
    let module = spec
        .get("module")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if module.is_empty() {
        return Err("no spec.module".into());
    }
    modules.push(module.to_owned());
    let mutating = spec
        .get("mutating")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut entry = Map::new();
    entry.insert("namespacedName".into(), common.namespaced_name.clone());
    entry.insert("module".into(), json!(module));
    entry.insert("policyMode".into(), json!(common.mode));
    entry.insert("allowedToMutate".into(), json!(mutating));
    if common.cluster_wide
        && let Some(resources) = non_empty(spec.get("contextAwareResources"))
    {
        entry.insert("contextAwareResources".into(), resources);
    }
    entry.insert("settings".into(), settings);
    if !common.message.is_empty() {
        entry.insert("message".into(), json!(common.message));
    }
    if let Some(timeout) = spec.get("timeoutEvalSeconds").filter(|t| !t.is_null()) {
        entry.insert("timeoutEvalSeconds".into(), timeout.clone());
    }
    entry.insert("hostCapabilities".into(), common.host_capabilities.clone());
    Ok((Value::Object(entry), mutating))
}

impl Controller {
    /// Loads the bindings of `server` among `objects`.
    pub fn load(objects: &[Value], server: &PolicyServerSpec) -> Result<Controller> {
        let mut controller = Controller {
            server: server.clone(),
            policies: Vec::new(),
            elsewhere: Vec::new(),
            notes: Vec::new(),
        };
        for object in objects {
            let Some(kind) = object
                .get("kind")
                .and_then(Value::as_str)
                .filter(|k| BINDING_KINDS.contains(k))
            else {
                continue;
            };
            let name = text_at(object, "/metadata/name").unwrap_or_default();
            let target = text_at(object, "/spec/policyServer").unwrap_or("default");
            if target != server.name {
                controller
                    .elsewhere
                    .push(format!("{kind}/{name} → {target}"));
                continue;
            }
            let policy = controller.binding(kind, object)?;
            controller.policies.push(policy);
        }
        controller.policies.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(twice) = controller.policies.windows(2).find_map(|w| match w {
            [a, b] if a.id == b.id => Some(a.id.clone()),
            _ => None,
        }) {
            return Err(Error::Invalid(format!(
                "two bindings have the policy id {twice:?}"
            )));
        }
        Ok(controller)
    }

    /// One binding's entry and webhook.
    fn binding(&mut self, kind: &str, object: &Value) -> Result<LoadedPolicy> {
        let name = text_at(object, "/metadata/name")
            .unwrap_or_default()
            .to_owned();
        let cluster_wide = kind.starts_with("Cluster");
        let group = kind.ends_with("Group");
        let namespace = if cluster_wide {
            None
        } else {
            Some(
                text_at(object, "/metadata/namespace")
                    .unwrap_or("default")
                    .to_owned(),
            )
        };
        let id = match (&namespace, group) {
            (None, false) => format!("clusterwide-{name}"),
            (None, true) => format!("clusterwide-group-{name}"),
            (Some(ns), false) => format!("namespaced-{ns}-{name}"),
            (Some(ns), true) => format!("namespaced-group-{ns}-{name}"),
        };
        let invalid = |why: String| Error::Invalid(format!("{kind}/{name}: {why}"));
        let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
        let host_capabilities = if cluster_wide {
            json!(["*"])
        } else {
            json!(
                self.server
                    .namespaced_capabilities
                    .clone()
                    .unwrap_or_else(|| vec!["*".into()])
            )
        };
        let mode = spec
            .get("mode")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or("protect");
        let namespaced_name =
            json!({"Namespace": namespace.clone().unwrap_or_default(), "Name": name});
        let settings = spec.get("settings").cloned().unwrap_or(Value::Null);
        let message = spec
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let common = Common {
            namespaced_name,
            mode,
            message,
            host_capabilities,
            cluster_wide,
        };
        let mut modules = Vec::new();
        let (entry, mutating) = if group {
            (
                group_entry(&spec, &common, &mut modules).map_err(invalid)?,
                false,
            )
        } else {
            policy_entry(&spec, settings, &common, &mut modules).map_err(invalid)?
        };
        let (route, selector) = self.route(&id, cluster_wide, namespace.as_deref(), &spec)?;
        let webhook = webhook(&id, cluster_wide, &spec, selector);
        if let Some(conditions) = spec
            .get("matchConditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        {
            self.notes.push(format!(
                "{id}: {} matchConditions not evaluated (every request its rules and selectors route is sent)",
                conditions.len()
            ));
        }
        Ok(LoadedPolicy {
            id,
            kind: kind.to_owned(),
            name,
            namespace,
            entry,
            mutating,
            route,
            modules,
            webhook,
        })
    }

    /// The webhook of a binding, as the controller writes it.
    fn route(
        &mut self,
        id: &str,
        cluster_wide: bool,
        namespace: Option<&str>,
        spec: &Value,
    ) -> Result<(Route, Value)> {
        let invalid = |why: Error| Error::Invalid(format!("{id}: {why}"));
        let scope = (!cluster_wide).then_some(Scope::Namespaced);
        let rules = spec
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| Rule::from_value(r, scope))
            .collect();
        let written = spec.get("namespaceSelector").filter(|s| !s.is_null());
        let selector = match namespace {
            Some(ns) => json!({"matchLabels": {"kubernetes.io/metadata.name": ns}}),
            None if spec
                .get("allowInsideAdmissionControllerNamespace")
                .and_then(Value::as_bool)
                .unwrap_or(false) =>
            {
                written.cloned().unwrap_or(Value::Null)
            }
            None => {
                if let Some(labels) = written
                    .and_then(|s| s.get("matchLabels"))
                    .and_then(Value::as_object)
                    .filter(|l| !l.is_empty())
                {
                    self.notes.push(format!(
                        "{id}: namespaceSelector.matchLabels {} dropped by the controller (it keeps only matchExpressions beside its own namespace's exclusion)",
                        Value::Object(labels.clone())
                    ));
                }
                let mut expressions = vec![json!({"key": "kubernetes.io/metadata.name",
                    "operator": "NotIn", "values": [self.server.deployments_namespace]})];
                expressions.extend(
                    written
                        .and_then(|s| s.get("matchExpressions"))
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                );
                json!({"matchExpressions": expressions})
            }
        };
        let route = Route {
            rules,
            namespace_selector: Selector::from_value(Some(&selector)).map_err(invalid)?,
            object_selector: Selector::from_value(spec.get("objectSelector")).map_err(invalid)?,
        };
        Ok((route, selector))
    }

    /// policies.yml, every module reference replaced by the `file://` URI of its local
    /// module in `modules`.
    pub fn policies_yml(&self, modules: &ModulesDir) -> Result<Value> {
        let mut out = Map::new();
        for policy in &self.policies {
            let mut entry = policy.entry.clone();
            if let Some(module) = entry.get_mut("module") {
                let local = modules.uri(module.as_str().unwrap_or_default())?;
                *module = Value::String(local);
            }
            for member in entry
                .get_mut("policies")
                .and_then(Value::as_object_mut)
                .into_iter()
                .flat_map(|m| m.values_mut())
            {
                if let Some(module) = member.get_mut("module") {
                    let local = modules.uri(module.as_str().unwrap_or_default())?;
                    *module = Value::String(local);
                }
            }
            out.insert(policy.id.clone(), entry);
        }
        Ok(Value::Object(out))
    }

    /// The bindings the API server sends `request` to, in the order it calls them: mutating
    /// webhooks by name (each sees the object the previous one produced), then validating
    /// ones. Each is matched against `request` as given: [`Controller::ordered`] with
    /// [`Route::applies`] at each turn follows the object as it is mutated.
    pub fn routed(&self, request: &Value, namespaces: &Namespaces) -> Vec<&LoadedPolicy> {
        self.ordered()
            .into_iter()
            .filter(|p| p.route.applies(request, namespaces))
            .collect()
    }

    /// Every binding in the order the API server calls webhooks: mutating ones by name, then
    /// validating ones.
    pub fn ordered(&self) -> Vec<&LoadedPolicy> {
        let mut ordered: Vec<&LoadedPolicy> = self.policies.iter().collect();
        ordered.sort_by_key(|p| (!p.mutating, p.id.clone()));
        ordered
    }
}

#[cfg(test)]
mod tests;
