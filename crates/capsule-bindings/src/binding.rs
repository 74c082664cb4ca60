//! ClusterAdmissionPolicies: written from a plan, read back to judge requests.

use kube_values::selector::{LabelSelector, RawLabelSelector};
use policy_host::kube::{listed, strings};
use serde_json::{Value, json};

use crate::catalogue::Policy;
use crate::error::{Error, Result};
use crate::placement::{KUBEWARDEN_NAMESPACE, SYSTEM_NAMESPACES, Written, labels, skip_selector};
use crate::translate::{Options, Planned};

/// Where the modules are published and which version to bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSource {
    /// The OCI registry and path prefix (`ghcr.io/acme`): modules are
    /// `registry://<registry>/tenancy-policies/<policy>:<version>`.
    pub registry: String,
    /// The tag (`v0.1.0`).
    pub version: String,
}

impl ModuleSource {
    /// The module reference of `policy`.
    pub fn module(&self, policy: &Policy) -> String {
        format!(
            "registry://{}/tenancy-policies/{}:{}",
            self.registry.trim_end_matches('/'),
            policy.name,
            self.version
        )
    }
}

/// The name of the binding of `policy` for `tenant` (`solar-priority-class`).
pub fn binding_name(tenant: &str, policy: &Policy) -> String {
    format!("{tenant}-{}", policy.short)
}

/// The name of the binding `planned` for `tenant` (`solar-priority-class`,
/// `solar-container-registry-rule-0`).
pub fn planned_name(tenant: &str, planned: &Planned) -> String {
    match &planned.suffix {
        Some(suffix) => format!("{}-{suffix}", binding_name(tenant, planned.policy)),
        None => binding_name(tenant, planned.policy),
    }
}

/// The cluster-wide namespace ownership binding. The API server calls mutating webhooks in
/// the order of their names, so the name sorts before every tenant's: its tenant label is
/// written before the tenant's own Namespace bindings are matched.
pub const OWNERSHIP_BINDING: &str = "0-tenancy-namespace-ownership";

/// The ClusterAdmissionPolicy binding a planned policy to the namespaces labelled
/// `options.tenant_label: tenant`, placed as `options.placement` says; `mutating`,
/// `backgroundAudit`, `contextAwareResources`, the audit annotations and (unless the plan
/// narrows them) `rules` with the opt-in ones are the policy's metadata. It is labelled with
/// the bundle, the component `tenant` and the tenant (`kubectl apply --prune -l`).
pub fn manifest(
    tenant: &str,
    options: &Options,
    planned: &Planned,
    source: &ModuleSource,
) -> Result<Value> {
    let policy = planned.policy;
    let metadata = policy.metadata()?;
    let mut object_labels = labels("tenant");
    object_labels.insert(options.tenant_label.clone(), json!(tenant));
    let rules = match &planned.rules {
        Some(narrowed) => narrowed.clone(),
        None => {
            let mut rules = metadata.rules.clone();
            rules.extend(policy.opt_in_rules(&options.placement.opt_in)?);
            rules
        }
    };
    let mut expressions =
        vec![json!({"key": options.tenant_label, "operator": "In", "values": [tenant]})];
    expressions.extend(planned.selector.iter().cloned());
    let written = Written {
        name: planned_name(tenant, planned),
        labels: object_labels,
        module: source.module(policy),
        mutating: planned.mutating.unwrap_or(metadata.mutating),
        rules,
        namespace_selector: json!({ "matchExpressions": expressions }),
        settings: planned.settings.clone(),
        mode: planned.mode,
        match_conditions: planned.match_conditions.clone(),
    };
    Ok(options.placement.binding(written, &metadata))
}

/// The cluster-wide binding of namespace-organization-policy holding every Tenant's owners
/// (`entries`): a Namespace has no tenant label before it is assigned, so no tenant's
/// `namespaceSelector` can route its CREATE. It skips the system namespaces the baseline
/// skips and exempts `cluster-admin`.
pub fn ownership_manifest(
    entries: Vec<Value>,
    options: &Options,
    source: &ModuleSource,
) -> Result<Value> {
    let policy = Policy::find("namespace-organization")
        .ok_or_else(|| Error::Invalid("namespace-organization-policy is not bundled".into()))?;
    let metadata = policy.metadata()?;
    let mut rules = metadata.rules.clone();
    rules.extend(policy.opt_in_rules(&options.placement.opt_in)?);
    let written = Written {
        name: OWNERSHIP_BINDING.to_owned(),
        labels: labels("ownership"),
        module: source.module(policy),
        mutating: metadata.mutating,
        rules,
        namespace_selector: skip_selector(
            SYSTEM_NAMESPACES.into_iter().chain([KUBEWARDEN_NAMESPACE]),
        ),
        settings: ownership_settings(entries, options),
        mode: None,
        match_conditions: Vec::new(),
    };
    Ok(options.placement.binding(written, &metadata))
}

/// The ownership binding's settings: the tenant label, every Tenant's owners, administrators
/// exempt.
pub fn ownership_settings(entries: Vec<Value>, options: &Options) -> Value {
    json!({
        "organizationLabel": options.tenant_label,
        "owners": entries,
        "exemptPrincipals": {"clusterRoles": ["cluster-admin"]},
    })
}

/// Several manifests as one YAML stream for `kubectl apply -f`.
pub fn to_yaml(manifests: &[Value]) -> Result<String> {
    let mut out = String::new();
    for manifest in manifests {
        out.push_str("---\n");
        out.push_str(
            &serde_yaml::to_string(manifest)
                .map_err(|e| Error::Invalid(format!("cannot write YAML: {e}")))?,
        );
    }
    Ok(out)
}

/// One admission rule of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
    /// `Namespaced`, `Cluster` or `*` (absent).
    scope: String,
}

/// A binding as the API server routes requests to it.
#[derive(Debug, Clone)]
pub struct Binding {
    /// `metadata.name`.
    pub name: String,
    /// The policy its module is.
    pub policy: &'static Policy,
    /// `spec.mutating`.
    pub mutating: bool,
    /// `spec.mode: monitor`: policy-server logs the verdict and admits the request unchanged.
    pub monitor: bool,
    /// `spec.settings`.
    pub settings: Value,
    rules: Vec<Rule>,
    namespace_selector: Option<LabelSelector>,
}

impl Binding {
    /// Reads a ClusterAdmissionPolicy of this bundle (its module must name one of
    /// [`crate::POLICIES`]).
    pub fn from_manifest(manifest: &Value) -> Result<Binding> {
        let name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let invalid = |what: String| Error::Invalid(format!("binding {name:?}: {what}"));
        if manifest.get("kind").and_then(Value::as_str) != Some("ClusterAdmissionPolicy") {
            return Err(invalid("not a ClusterAdmissionPolicy".into()));
        }
        let spec = manifest
            .get("spec")
            .ok_or_else(|| invalid("no spec".into()))?;
        let module = spec
            .get("module")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let policy_name = module
            .rsplit('/')
            .next()
            .and_then(|last| last.split([':', '@']).next())
            .unwrap_or_default();
        let policy = Policy::find(policy_name).ok_or_else(|| {
            invalid(format!(
                "module {module:?} is not a policy a Tenant translates into"
            ))
        })?;
        let rules = spec
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| Rule {
                groups: strings(r, "apiGroups"),
                versions: strings(r, "apiVersions"),
                resources: strings(r, "resources"),
                operations: strings(r, "operations"),
                scope: r
                    .get("scope")
                    .and_then(Value::as_str)
                    .unwrap_or("*")
                    .to_owned(),
            })
            .collect();
        let namespace_selector = match spec.get("namespaceSelector") {
            None | Some(Value::Null) => None,
            Some(raw) => {
                let raw: RawLabelSelector = serde_json::from_value(raw.clone())
                    .map_err(|e| invalid(format!("namespaceSelector: {e}")))?;
                Some(
                    LabelSelector::build(&raw)
                        .map_err(|e| invalid(format!("namespaceSelector: {e}")))?,
                )
            }
        };
        Ok(Binding {
            name,
            policy,
            mutating: spec
                .get("mutating")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            monitor: spec.get("mode").and_then(Value::as_str) == Some("monitor"),
            settings: spec.get("settings").cloned().unwrap_or_else(|| json!({})),
            rules,
            namespace_selector,
        })
    }

    /// Whether the API server sends `request` to this binding: one rule names its group,
    /// version, resource (with subresource) and operation, and its Namespace (`namespace`,
    /// `None` for cluster-scoped objects, which a namespaceSelector never filters) matches.
    pub fn applies(&self, request: &Value, namespace: Option<&Value>) -> bool {
        let field = |path: &str| {
            request
                .pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (group, version, resource) = (
            field("/resource/group"),
            field("/resource/version"),
            field("/resource/resource"),
        );
        let sub = field("/subResource");
        let operation = field("/operation");
        let full = if sub.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}/{sub}")
        };
        let resource_listed = |list: &[String]| {
            list.iter().any(|r| {
                r == &full
                    || r == "*/*"
                    || (sub.is_empty() && r == "*")
                    || (!sub.is_empty()
                        && (r == &format!("{resource}/*") || r == &format!("*/{sub}")))
            })
        };
        // a Namespace is cluster-scoped; any other object is namespaced when it has a namespace
        let is_namespace = group.is_empty() && resource == "namespaces";
        let has_namespace = !field("/namespace").is_empty();
        let namespaced = has_namespace && !is_namespace;
        let scoped = |scope: &str| match scope {
            "Namespaced" => namespaced,
            "Cluster" => !namespaced,
            _ => true,
        };
        let routed = self.rules.iter().any(|r| {
            listed(&r.groups, group)
                && listed(&r.versions, version)
                && resource_listed(&r.resources)
                && listed(&r.operations, operation)
                && scoped(&r.scope)
        });
        routed
            && match (&self.namespace_selector, namespace) {
                (Some(selector), Some(namespace)) => selector.matches_map(
                    namespace
                        .pointer("/metadata/labels")
                        .and_then(serde_json::Value::as_object),
                ),
                _ => true,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::POLICIES;

    fn opts(tenant_label: &str) -> Options {
        Options {
            tenant_label: tenant_label.into(),
            ..Options::default()
        }
    }

    fn source() -> ModuleSource {
        ModuleSource {
            registry: "ghcr.io/acme/".into(),
            version: "v0.1.0".into(),
        }
    }

    fn plan(short: &str, settings: Value) -> Planned {
        Planned::new(Policy::find(short).unwrap(), settings)
    }

    #[test]
    fn planned_rules_replace_the_metadata_ones() {
        let mut planned = plan("protected-objects", json!({}));
        let narrow = json!({"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "resources": ["networkpolicies"], "operations": ["DELETE"]});
        planned.rules = Some(vec![narrow.clone()]);
        let m = manifest("solar", &opts("t"), &planned, &source()).unwrap();
        assert_eq!(m["spec"]["rules"], json!([narrow]));
    }

    fn pod_request(namespace: &str, operation: &str, sub: Option<&str>) -> Value {
        let mut r = json!({"resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": operation, "namespace": namespace});
        if let Some(sub) = sub {
            r["subResource"] = json!(sub);
        }
        r
    }

    #[test]
    fn manifests_carry_the_metadata_and_read_back() {
        let planned = plan("priority-class", json!({"allowed": ["a"]}));
        let m = manifest(
            "solar",
            &opts("capsule.clastix.io/tenant"),
            &planned,
            &source(),
        )
        .unwrap();
        assert_eq!(m["metadata"]["name"], "solar-priority-class");
        assert_eq!(
            m["spec"]["module"],
            "registry://ghcr.io/acme/tenancy-policies/priority-class-policy:v0.1.0"
        );
        assert_eq!(m["spec"]["mutating"], true);
        assert_eq!(
            m["spec"]["contextAwareResources"][0]["kind"],
            "PriorityClass"
        );
        assert_eq!(
            m["spec"]["namespaceSelector"],
            json!({"matchExpressions": [{"key": "capsule.clastix.io/tenant", "operator": "In", "values": ["solar"]}]})
        );
        let binding = Binding::from_manifest(&m).unwrap();
        assert_eq!(binding.policy.name, "priority-class-policy");
        assert!(binding.mutating);
        let solar = json!({"metadata": {"name": "solar-dev", "labels": {"capsule.clastix.io/tenant": "solar"}}});
        let oil = json!({"metadata": {"name": "oil-dev", "labels": {"capsule.clastix.io/tenant": "oil"}}});
        assert!(binding.applies(&pod_request("solar-dev", "CREATE", None), Some(&solar)));
        assert!(!binding.applies(&pod_request("oil-dev", "CREATE", None), Some(&oil)));
        assert!(!binding.applies(&pod_request("solar-dev", "DELETE", None), Some(&solar)));
        assert!(!binding.applies(
            &pod_request("solar-dev", "UPDATE", Some("ephemeralcontainers")),
            Some(&solar)
        ));
    }

    #[test]
    fn subresources_need_their_own_rule() {
        let m = manifest(
            "solar",
            &opts("t"),
            &plan("container-registry", json!({})),
            &source(),
        )
        .unwrap();
        let binding = Binding::from_manifest(&m).unwrap();
        assert!(binding.applies(
            &pod_request("x", "UPDATE", Some("ephemeralcontainers")),
            None
        ));
        assert!(!binding.applies(&pod_request("x", "UPDATE", Some("status")), None));
    }

    #[test]
    fn a_rule_scope_routes_only_its_scope() {
        let mut planned = plan("tenant-cordon", json!({"tenant": "solar"}));
        planned.rules = Some(vec![
            json!({"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "operations": ["CREATE"], "scope": "Namespaced"}),
        ]);
        let m = manifest("solar", &opts("t"), &planned, &source()).unwrap();
        let binding = Binding::from_manifest(&m).unwrap();
        assert!(binding.applies(&pod_request("x", "CREATE", None), None));
        let cluster_role = json!({"resource": {"group": "rbac.authorization.k8s.io", "version": "v1", "resource": "clusterroles"}, "operation": "CREATE"});
        assert!(!binding.applies(&cluster_role, None));
        let namespace = json!({"resource": {"group": "", "version": "v1", "resource": "namespaces"}, "operation": "CREATE", "namespace": "solar-dev"});
        assert!(!binding.applies(&namespace, None));
    }

    #[test]
    fn refuses_foreign_modules() {
        let m = json!({"kind": "ClusterAdmissionPolicy", "metadata": {"name": "x"}, "spec": {"module": "registry://ghcr.io/kubewarden/policies/safe-labels:v1"}});
        let err = Binding::from_manifest(&m).unwrap_err().to_string();
        assert!(
            err.contains("not a policy a Tenant translates into"),
            "{err}"
        );
    }

    #[test]
    fn yaml_stream() {
        let all: Vec<Value> = POLICIES
            .iter()
            .take(2)
            .map(|p| manifest("solar", &opts("t"), &plan(p.short, json!({})), &source()).unwrap())
            .collect();
        let text = to_yaml(&all).unwrap();
        assert_eq!(text.matches("---\n").count(), 2);
        assert!(text.contains("name: solar-node-selector"));
    }
}
