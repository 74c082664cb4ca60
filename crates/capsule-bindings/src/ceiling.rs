//! The tenant ceiling of the baseline `tenancy-rbac` binding (rbac-policy `ceiling`): what a
//! tenant's Roles may grant at most, the ClusterRoles that aggregate the Gateway API into
//! Kubernetes' `view`, `edit` and `admin`, and the ceiling's place beside those roles: never
//! beyond `admin`, and every difference from `edit` with its reason (README "The tenant
//! ceiling").
//!
//! ```
//! use capsule_bindings::ceiling::{Comparison, tenant_ceiling};
//!
//! assert!(tenant_ceiling().as_array().is_some_and(|rules| !rules.is_empty()));
//! // Kubernetes' roles as the API server serves them (`kubectl get clusterroles -o yaml`)
//! let roles: Vec<serde_json::Value> = Vec::new();
//! let err = Comparison::new(&roles).unwrap_err().to_string();
//! assert!(err.contains("no ClusterRole \"edit\""), "{err}");
//! ```

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use tenancy_rules::rbac::ceiling::STANDARD_VERBS;

use crate::error::{Error, Result};
use crate::placement::labels;

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &STANDARD_VERBS;

/// Verbs on resources of one API group.
struct Grant {
    group: &'static str,
    verbs: &'static [&'static str],
    resources: &'static [&'static str],
}

const fn grant(
    group: &'static str,
    verbs: &'static [&'static str],
    resources: &'static [&'static str],
) -> Grant {
    Grant {
        group,
        verbs,
        resources,
    }
}

/// The Gateway API resources a tenant administers (the install aggregates them into `view`,
/// `edit` and `admin`, which know no custom resource).
const GATEWAY_API: &[&str] = &["gateways", "grpcroutes", "httproutes", "referencegrants"];
const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// The ceiling: Kubernetes v1.36's aggregated `admin` (`edit`, and the Roles, RoleBindings
/// and local access reviews of a namespace's administrator), without `impersonate`, plus the
/// Gateway API; no cluster-scoped resource, no escalation verb.
const TENANT_CEILING: &[Grant] = &[
    grant(
        "",
        READ_WRITE,
        &[
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "pods",
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    grant("", &["create"], &["pods/eviction", "serviceaccounts/token"]),
    grant(
        "",
        READ,
        &[
            "bindings",
            "endpoints",
            "limitranges",
            "namespaces",
            "namespaces/status",
            "persistentvolumeclaims/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
            "services/status",
        ],
    ),
    grant("events.k8s.io", READ_WRITE, &["events"]),
    grant("discovery.k8s.io", READ, &["endpointslices"]),
    grant(
        "apps",
        READ_WRITE,
        &[
            "daemonsets",
            "deployments",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    grant("apps", WRITE, &["deployments/rollback"]),
    grant(
        "apps",
        READ,
        &[
            "controllerrevisions",
            "daemonsets/status",
            "deployments/status",
            "replicasets/status",
            "statefulsets/status",
        ],
    ),
    grant("autoscaling", READ_WRITE, &["horizontalpodautoscalers"]),
    grant("autoscaling", READ, &["horizontalpodautoscalers/status"]),
    grant("batch", READ_WRITE, &["cronjobs", "jobs"]),
    grant("batch", READ, &["cronjobs/status", "jobs/status"]),
    grant(
        "extensions",
        READ_WRITE,
        &[
            "daemonsets",
            "deployments",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
    ),
    grant("extensions", WRITE, &["deployments/rollback"]),
    grant(
        "extensions",
        READ,
        &[
            "daemonsets/status",
            "deployments/status",
            "ingresses/status",
            "replicasets/status",
        ],
    ),
    grant("policy", READ_WRITE, &["poddisruptionbudgets"]),
    grant("policy", READ, &["poddisruptionbudgets/status"]),
    grant(
        "networking.k8s.io",
        READ_WRITE,
        &["ingresses", "networkpolicies"],
    ),
    grant("networking.k8s.io", READ, &["ingresses/status"]),
    grant("coordination.k8s.io", READ_WRITE, &["leases"]),
    grant(
        "resource.k8s.io",
        READ_WRITE,
        &["resourceclaims", "resourceclaimtemplates"],
    ),
    grant("resource.k8s.io", READ, &["resourceclaims/status"]),
    grant(GATEWAY_GROUP, READ_WRITE, GATEWAY_API),
    grant(
        "authorization.k8s.io",
        &["create"],
        &["localsubjectaccessreviews"],
    ),
    grant(
        "rbac.authorization.k8s.io",
        READ_WRITE,
        &["rolebindings", "roles"],
    ),
];

/// Why the ceiling is what it is on some resources: required where it differs from `edit`,
/// and said where an operator would ask (README "The tenant ceiling").
const REASONS: &[(&str, &[&str], &str)] = &[
    (
        "",
        &["endpoints"],
        "read only, as in `edit` since Kubernetes 1.22: a tenant who writes Endpoints points a \
         Service, and so a LoadBalancer or an Ingress, at another tenant's Pods or at \
         cluster-internal addresses (CVE-2021-25740)",
    ),
    (
        "discovery.k8s.io",
        &["endpointslices"],
        "read only, as in `edit`: EndpointSlices are the same addresses as Endpoints \
         (CVE-2021-25740)",
    ),
    (
        "",
        &["serviceaccounts"],
        "no `impersonate`, which `edit` grants: rbac-policy refuses escalation verbs in \
         tenant Roles, so that a Role never hands out a service account's identity without \
         a Pod that runs as it",
    ),
    (
        "",
        &["pods/proxy", "services/proxy"],
        "as `edit`: the API server proxies only to a Pod of the namespace, at the global \
         unicast address its kubelet reported (services/proxy checks each endpoint against \
         its Pod)",
    ),
    (
        "",
        &["secrets", "serviceaccounts/token"],
        "as `edit`: the namespace's own Secrets and tokens, which a tenant who runs Pods \
         there can read anyway",
    ),
    (
        "authorization.k8s.io",
        &["localsubjectaccessreviews"],
        "`admin`'s: a tenant's administrator asks what a subject may do in the namespace \
         (`kubectl auth can-i --as`)",
    ),
    (
        "rbac.authorization.k8s.io",
        &["rolebindings", "roles"],
        "`admin`'s: a tenant delegates within its namespaces; each Role is judged under this \
         ceiling, each RoleBinding by rbac-policy's binding rules, and the API server's own \
         escalation check still applies",
    ),
    (
        GATEWAY_GROUP,
        GATEWAY_API,
        "Kubernetes' roles know no Gateway API; the install's ClusterRoles \
         `tenancy-policies-gateway-api-view` and `-edit` aggregate these into `view`, `edit` \
         and `admin`, as Ingresses are in them",
    ),
];

/// The ceiling's rules, as rbac-policy's `ceiling` setting takes them.
pub fn tenant_ceiling() -> Value {
    TENANT_CEILING
        .iter()
        .map(|g| json!({"apiGroups": [g.group], "verbs": g.verbs, "resources": g.resources}))
        .collect()
}

/// The ClusterRoles that aggregate the ceiling's Gateway API resources into Kubernetes'
/// `view` (read) and `edit` and `admin` (read and write), labelled `component`.
pub fn gateway_api_roles(component: &str) -> Vec<Value> {
    let role = |suffix: &str, aggregate_to: &[&str], verbs: &[&str]| {
        let mut labels = labels(component);
        for to in aggregate_to {
            labels.insert(
                format!("rbac.authorization.k8s.io/aggregate-to-{to}"),
                json!("true"),
            );
        }
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": format!("tenancy-policies-gateway-api-{suffix}"), "labels": labels},
            "rules": [{"apiGroups": [GATEWAY_GROUP], "resources": GATEWAY_API, "verbs": verbs}],
        })
    };
    vec![
        role("view", &["view", "edit", "admin"], READ),
        role("edit", &["edit", "admin"], READ_WRITE),
    ]
}

/// (API group, resource) → verbs.
type Grants = BTreeMap<(String, String), BTreeSet<String>>;

/// The grants of a list of rules (resource rules only: names and URLs narrow nothing here).
fn grants_of<'a>(rules: impl IntoIterator<Item = &'a Value>, grants: &mut Grants) {
    let strings = |rule: &'a Value, field: &str| -> Vec<&'a str> {
        rule.get(field)
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    for rule in rules {
        if rule
            .get("resourceNames")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
        {
            continue;
        }
        for group in strings(rule, "apiGroups") {
            for resource in strings(rule, "resources") {
                let verbs = grants.entry((group.into(), resource.into())).or_default();
                verbs.extend(strings(rule, "verbs").into_iter().map(str::to_owned));
            }
        }
    }
}

/// ClusterRoles by name, from YAML documents that are ClusterRoles or lists of them.
fn cluster_roles(documents: &[Value]) -> BTreeMap<String, &Value> {
    let mut roles = BTreeMap::new();
    for doc in documents {
        let items = match doc.get("items").and_then(Value::as_array) {
            Some(items) => items.as_slice(),
            None => std::slice::from_ref(doc),
        };
        for item in items {
            if item.get("kind").and_then(Value::as_str) == Some("ClusterRole")
                && let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str)
            {
                roles.insert(name.to_owned(), item);
            }
        }
    }
    roles
}

/// The rules of ClusterRole `name` with what its `aggregationRule` selects, recursively, as
/// Kubernetes' aggregation controller writes them.
fn aggregated(roles: &BTreeMap<String, &Value>, name: &str) -> Result<Grants> {
    let mut grants = Grants::new();
    let mut seen = BTreeSet::new();
    let mut pending = vec![name.to_owned()];
    while let Some(current) = pending.pop() {
        if !seen.insert(current.clone()) {
            continue;
        }
        let role = roles.get(&current).ok_or_else(|| {
            Error::Invalid(format!("no ClusterRole {current:?} among the roles given"))
        })?;
        if let Some(rules) = role.get("rules").and_then(Value::as_array) {
            grants_of(rules, &mut grants);
        }
        let selectors = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for selector in selectors {
            if selector.get("matchExpressions").is_some() {
                return Err(Error::Invalid(format!(
                    "ClusterRole {current:?}: aggregationRule matchExpressions are not read; only matchLabels"
                )));
            }
            let wanted = selector
                .get("matchLabels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (other, role) in roles {
                let labels = role.pointer("/metadata/labels").and_then(Value::as_object);
                if wanted
                    .iter()
                    .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
                {
                    pending.push(other.clone());
                }
            }
        }
    }
    Ok(grants)
}

/// One row of the comparison: resources of one API group with the same verbs in the
/// ceiling, `edit` and `admin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// API group (`""` for core).
    pub group: String,
    /// Resources, sorted.
    pub resources: Vec<String>,
    /// The ceiling's verbs.
    pub ours: BTreeSet<String>,
    /// `edit`'s verbs.
    pub edit: BTreeSet<String>,
    /// `admin`'s verbs.
    pub admin: BTreeSet<String>,
    /// Why the ceiling is so ([`REASONS`]); present wherever it differs from `edit`.
    pub why: Option<&'static str>,
}

/// The ceiling beside Kubernetes' aggregated `edit` and `admin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Every (API group, resource) of the three, grouped.
    pub rows: Vec<Row>,
    /// Atomic permissions (API group × resource × verb) of the ceiling.
    pub permissions: usize,
}

impl Comparison {
    /// Compares the ceiling with `edit` and `admin` among `documents` (ClusterRoles, or lists
    /// of them, as `kubectl get clusterroles -o yaml` prints them or as Kubernetes'
    /// bootstrap policy defines them, to which the install's [`gateway_api_roles`] are
    /// added). Fails when the ceiling grants what `admin` does not, when it differs from
    /// `edit` without a reason, or when a reason names a resource no role has.
    pub fn new(documents: &[Value]) -> Result<Self> {
        let mut documents = documents.to_vec();
        documents.extend(gateway_api_roles("baseline"));
        let roles = cluster_roles(&documents);
        let edit = aggregated(&roles, "edit")?;
        let admin = aggregated(&roles, "admin")?;
        let mut ours = Grants::new();
        grants_of(tenant_ceiling().as_array().into_iter().flatten(), &mut ours);
        let permissions = ours.values().map(BTreeSet::len).sum();
        let beyond: Vec<String> = ours
            .iter()
            .filter_map(|((group, resource), verbs)| {
                let allowed = admin.get(&(group.clone(), resource.clone()));
                let extra: BTreeSet<String> = verbs
                    .iter()
                    .filter(|v| !allowed.is_some_and(|a| a.contains(*v)))
                    .cloned()
                    .collect();
                (!extra.is_empty()).then(|| {
                    format!(
                        "{} on {}",
                        verbs_cell(&extra),
                        resource_name(group, resource)
                    )
                })
            })
            .collect();
        if !beyond.is_empty() {
            return Err(Error::Invalid(format!(
                "the tenant ceiling grants what Kubernetes' admin does not: {}",
                beyond.join("; ")
            )));
        }
        let why = |group: &str, resource: &str| {
            REASONS
                .iter()
                .find(|(g, rs, _)| *g == group && rs.contains(&resource))
                .map(|(_, _, why)| *why)
        };
        let keys: BTreeSet<&(String, String)> =
            ours.keys().chain(edit.keys()).chain(admin.keys()).collect();
        let mut rows: Vec<Row> = Vec::new();
        let mut unexplained = Vec::new();
        for key in keys {
            let (group, resource) = key;
            let get = |g: &Grants| g.get(key).cloned().unwrap_or_default();
            let (o, e, a) = (get(&ours), get(&edit), get(&admin));
            let reason = why(group, resource);
            if o != e && reason.is_none() {
                unexplained.push(resource_name(group, resource));
            }
            match rows.iter_mut().find(|r| {
                r.group == *group && r.ours == o && r.edit == e && r.admin == a && r.why == reason
            }) {
                Some(row) => row.resources.push(resource.clone()),
                None => rows.push(Row {
                    group: group.clone(),
                    resources: vec![resource.clone()],
                    ours: o,
                    edit: e,
                    admin: a,
                    why: reason,
                }),
            }
        }
        if !unexplained.is_empty() {
            return Err(Error::Invalid(format!(
                "the tenant ceiling differs from Kubernetes' edit without a reason on {}",
                unexplained.join(", ")
            )));
        }
        let stale: Vec<String> = REASONS
            .iter()
            .flat_map(|(g, rs, _)| rs.iter().map(move |r| (*g, *r)))
            .filter(|(g, r)| {
                !rows
                    .iter()
                    .any(|row| row.group == *g && row.resources.iter().any(|x| x == r))
            })
            .map(|(g, r)| resource_name(g, r))
            .collect();
        if !stale.is_empty() {
            return Err(Error::Invalid(format!(
                "reasons name resources none of the roles has: {}",
                stale.join(", ")
            )));
        }
        Ok(Comparison { rows, permissions })
    }

    /// The rows that differ from `edit`.
    pub fn differences(&self) -> usize {
        self.rows.iter().filter(|r| r.ours != r.edit).count()
    }

    /// The comparison as a Markdown table (README "The tenant ceiling").
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| API group | Resources | Ceiling | `edit` | `admin` | Why |\n|---|---|---|---|---|---|\n",
        );
        for row in &self.rows {
            let group = if row.group.is_empty() {
                "core".to_owned()
            } else {
                format!("`{}`", row.group)
            };
            let resources: Vec<String> = row.resources.iter().map(|r| format!("`{r}`")).collect();
            out.push_str(&format!(
                "| {group} | {} | {} | {} | {} | {} |\n",
                resources.join(", "),
                verbs_cell(&row.ours),
                verbs_cell(&row.edit),
                verbs_cell(&row.admin),
                row.why.unwrap_or("")
            ));
        }
        out
    }
}

/// A resource as messages name it: `pods`, `roles` in `rbac.authorization.k8s.io`.
fn resource_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource} in {group}")
    }
}

/// Verbs in Kubernetes' order, `read` (get, list, watch), `write` (create, update, patch,
/// delete, deletecollection) and `read, write` named as such; `—` for none.
fn verbs_cell(verbs: &BTreeSet<String>) -> String {
    let has_all = |set: &[&str]| set.iter().all(|v| verbs.contains(*v));
    let mut parts: Vec<String> = Vec::new();
    let mut named: BTreeSet<&str> = BTreeSet::new();
    if has_all(READ) {
        parts.push("read".into());
        named.extend(READ);
    }
    if has_all(WRITE) {
        parts.push("write".into());
        named.extend(WRITE);
    }
    for verb in STANDARD_VERBS
        .iter()
        .filter(|v| verbs.contains(**v) && !named.contains(**v))
    {
        parts.push((*verb).to_owned());
    }
    for verb in verbs
        .iter()
        .filter(|v| !STANDARD_VERBS.contains(&v.as_str()))
    {
        parts.push(verb.clone());
    }
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, labels: Value, rules: Value, aggregate: Option<Value>) -> Value {
        let mut role = json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules});
        if let Some(selectors) = aggregate {
            role["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
        }
        role
    }

    /// `admin` ⊇ `edit` ⊇ the parts named, aggregated by labels as Kubernetes does.
    fn kubernetes(edit_rules: Value, admin_rules: Value) -> Vec<Value> {
        vec![json!({"kind": "List", "items": [
            role("admin", json!({}), json!([]), Some(json!([{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]))),
            role("edit", json!({"rbac.authorization.k8s.io/aggregate-to-admin": "true"}), json!([]),
                Some(json!([{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]))),
            role("system:aggregate-to-edit", json!({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}), edit_rules, None),
            role("system:aggregate-to-admin", json!({"rbac.authorization.k8s.io/aggregate-to-admin": "true"}), admin_rules, None),
        ]})]
    }

    #[test]
    fn a_ceiling_beyond_admin_is_refused_naming_each_permission() {
        let err = Comparison::new(&kubernetes(json!([]), json!([])))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the tenant ceiling grants what Kubernetes' admin does not: "),
            "{err}"
        );
        assert!(err.contains("read, write on configmaps; "), "{err}");
        // the Gateway API is aggregated by the install's own roles, so it is never beyond
        assert!(!err.contains("gateway"), "{err}");
    }

    #[test]
    fn admin_is_aggregated_transitively_and_differences_need_reasons() {
        // edit = the ceiling without Roles, local access reviews and Gateway API; admin adds them
        let ceiling = tenant_ceiling();
        let (admin_only, edit_rules): (Vec<Value>, Vec<Value>) =
            ceiling.as_array().unwrap().iter().cloned().partition(|r| {
                let g = r["apiGroups"][0].as_str().unwrap();
                g == "rbac.authorization.k8s.io" || g == "authorization.k8s.io"
            });
        let comparison =
            Comparison::new(&kubernetes(json!(edit_rules), json!(admin_only))).unwrap();
        assert_eq!(comparison.differences(), 2, "{:#?}", comparison.rows);
        let roles = comparison
            .rows
            .iter()
            .find(|r| r.group == "rbac.authorization.k8s.io")
            .unwrap();
        assert_eq!(roles.resources, ["rolebindings", "roles"]);
        assert!(roles.edit.is_empty() && roles.admin == roles.ours);
        assert!(roles.why.unwrap().starts_with("`admin`'s"));
        // a difference without a reason: edit grants impersonate on pods too
        let mut more = edit_rules.clone();
        more.push(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate"]}));
        let mut admin_more = admin_only.clone();
        admin_more
            .push(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate"]}));
        let err = Comparison::new(&kubernetes(json!(more), json!(admin_more)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the tenant ceiling differs from Kubernetes' edit without a reason on pods"
        );
    }

    #[test]
    fn the_ceiling_holds_no_wildcard_nor_escalation_verb_and_no_endpoint_write() {
        for grant in TENANT_CEILING {
            for verb in grant.verbs {
                assert!(
                    !["*", "escalate", "bind", "impersonate"].contains(verb),
                    "{verb}"
                );
            }
            assert!(grant.resources.iter().all(|r| !r.contains('*')));
            if grant.resources.contains(&"endpoints") || grant.resources.contains(&"endpointslices")
            {
                assert_eq!(grant.verbs, READ, "{:?}", grant.resources);
            }
        }
    }

    #[test]
    fn the_table_names_verbs_as_kubernetes_groups_them() {
        let set = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
        assert_eq!(verbs_cell(&set(READ_WRITE)), "read, write");
        assert_eq!(verbs_cell(&set(&["create"])), "create");
        assert_eq!(
            verbs_cell(&set(&["get", "list", "watch", "impersonate"])),
            "read, impersonate"
        );
        assert_eq!(
            verbs_cell(&set(&[
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection"
            ])),
            "write"
        );
        assert_eq!(verbs_cell(&BTreeSet::new()), "—");
    }

    #[test]
    fn the_gateway_roles_aggregate_read_into_view_and_write_into_edit_and_admin() {
        let roles = gateway_api_roles("baseline");
        let labels = |i: usize| roles[i]["metadata"]["labels"].as_object().unwrap().clone();
        assert!(labels(0).contains_key("rbac.authorization.k8s.io/aggregate-to-view"));
        assert!(!labels(1).contains_key("rbac.authorization.k8s.io/aggregate-to-view"));
        assert_eq!(roles[1]["rules"][0]["verbs"], json!(READ_WRITE));
    }
}
