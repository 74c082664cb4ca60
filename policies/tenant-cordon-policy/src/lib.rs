//! tenant-cordon-policy: a cordoned tenant (Capsule's `spec.cordoned: true`) is frozen. Its
//! Namespaces, and every object in them, cannot be created, changed or deleted by anyone but
//! exempt principals and, by default, the platform's own identities (README rules 1–6).
//! It reads nothing of the object but its kind, name and namespace.

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::{FieldPath, PolicyError};
use tenancy_rules::principal::Principals;

pub use settings::Settings;

/// The policy.
pub struct TenantCordonPolicy;

impl Policy for TenantCordonPolicy {
    const NAME: &'static str = "tenant-cordon-policy";
    const HOST_CAPABILITIES: policy_admission::cluster::HostCapabilities =
        policy_admission::cluster::HostCapabilities::LIST_ALL;
    const OPERATIONS: &'static [Operation] =
        &[Operation::Create, Operation::Update, Operation::Delete];
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // README rule 5: CONNECT changes no object.
        if !Self::OPERATIONS.contains(&request.operation) {
            return Ok(Verdict::accept());
        }
        // README rule 6: the envelope, whoever sends the request (the core checked the
        // objects' shapes and the namespace): every kind is handled, but a request must name
        // one (docs/semantics.md#request-handling).
        let kind = &request.kind;
        if kind.kind.is_empty() {
            return Err(PolicyError::malformed(
                &FieldPath::dotted("request.kind"),
                "missing",
            ));
        }
        // README rule 4: a cluster-scoped object other than a Namespace is no tenant's.
        let namespace_kind = kind.group.is_empty() && kind.kind == "Namespace";
        if !namespace_kind && request.object_namespace()?.is_none() {
            return Ok(Verdict::accept());
        }
        // README rule 2: the platform's identities, matched without any lookup.
        if settings.exempt_platform && Principals::platform().matches(&request.user_info) {
            return Ok(Verdict::accept());
        }
        // README rule 3: exempt principals; the ClusterRoleBindings are read only for a
        // request that would be refused (docs/semantics.md#exemptions).
        settings.exempt_principals.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |_| refusal(request, settings),
        )
    }
}

/// README rule 1: the refusal of a write in the cordoned tenant, naming what was refused;
/// README rule 6: a request that cannot say what it writes is malformed (400).
fn refusal(request: &AdmissionRequest, settings: &Settings) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    verdict.violation(
        &FieldPath::empty(),
        format!(
            "tenant {:?} is cordoned: {} is refused until the tenant is uncordoned",
            settings.tenant,
            describe(request)?
        ),
    );
    Ok(verdict)
}

/// `DELETE of Pod "web" in namespace "solar-dev"`, `UPDATE of Scale "web"
/// (deployments/scale) in namespace "solar-dev"`, `CREATE of Namespace "solar-new"`.
fn describe(request: &AdmissionRequest) -> Result<String, PolicyError> {
    let kind = &request.kind;
    let operation = match request.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    };
    let name = match name(request)? {
        Name::Named(name) => format!(" {name:?}"),
        Name::Generated(prefix) => format!(" named from generateName {prefix:?}"),
    };
    let through = match request.sub_resource.as_deref() {
        Some(sub) if !sub.is_empty() => format!(" ({}/{sub})", request.resource.kind),
        _ => String::new(),
    };
    // README rule 4: a Namespace is its own namespace; any other object needs one.
    let namespace = if kind.group.is_empty() && kind.kind == "Namespace" {
        String::new()
    } else {
        format!(" in namespace {:?}", request.namespace()?)
    };
    Ok(format!(
        "{operation} of {}{name}{through}{namespace}",
        kind.kind
    ))
}

/// How the object written is named.
enum Name {
    /// Its name.
    Named(String),
    /// Only `metadata.generateName` on CREATE.
    Generated(String),
}

/// The request's `name`; without one, `metadata.name` (or `metadata.generateName`) of the
/// object (of `oldObject` on DELETE). Without any, the request is malformed (400).
fn name(request: &AdmissionRequest) -> Result<Name, PolicyError> {
    if !request.name.is_empty() {
        return Ok(Name::Named(request.name.clone()));
    }
    let object = match request.operation {
        Operation::Delete => request.old_object()?,
        _ => request.object()?,
    };
    let metadata = object.get_object("metadata")?;
    let found = |field: &str| -> Result<Option<String>, PolicyError> {
        Ok(match &metadata {
            Some(m) => m
                .get_str(field)?
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            None => None,
        })
    };
    if let Some(name) = found("name")? {
        return Ok(Name::Named(name));
    }
    if request.operation == Operation::Create
        && let Some(prefix) = found("generateName")?
    {
        return Ok(Name::Generated(prefix));
    }
    Err(PolicyError::malformed(
        &object.path.field("metadata").field("name"),
        "missing, and request.name is empty: the object written cannot be named",
    ))
}

policy_admission::export_policy!(TenantCordonPolicy);

policy_admission::robustness_tests!(
    TenantCordonPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "tenant": "solar",
            "exemptPrincipals": {"users": ["admin"], "serviceAccounts": ["capsule-system:capsule"], "clusterRoles": ["cluster-admin"]}
        }),
        kinds: &[
            ("", "v1", "Pod"),
            ("", "v1", "Namespace"),
            ("apps", "v1", "Deployment"),
            ("", "v1", "ConfigMap"),
            ("example.com", "v1alpha1", "Widget")
        ],
        subresources: &["status", "scale", "eviction"],
        reads: &["rbac.authorization.k8s.io/v1/ClusterRoleBinding"],
        strings: &[
            "metadata",
            "name",
            "generateName",
            "namespace",
            "solar-dev",
            "admin",
            "system:masters",
            "system:serviceaccount:kube-system:generic-garbage-collector"
        ],
        objects: vec![serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "solar-dev"},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}
        })],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use serde_json::{Value, json};

    fn run(settings: Value, request: Value, cluster: Vec<Value>) -> Result<Verdict, PolicyError> {
        let settings: Settings = <Settings as policy_decode::settings::Validated>::parse(&settings)
            .expect("valid settings");
        let request: AdmissionRequest = serde_json::from_value(request).expect("request");
        let mut objects = Objects::new(cluster);
        let mut lookups = Lookups::new(&mut objects);
        TenantCordonPolicy::validate(&request, &settings, &mut lookups)
    }

    fn request(kind: (&str, &str), resource: &str, operation: &str, user: Value) -> Value {
        json!({"uid": "1", "kind": {"group": kind.0, "version": "v1", "kind": kind.1},
            "resource": {"group": kind.0, "version": "v1", "resource": resource},
            "name": "web", "namespace": "solar-dev", "operation": operation, "userInfo": user,
            "object": {"metadata": {"name": "web", "namespace": "solar-dev"}},
            "oldObject": {"metadata": {"name": "web", "namespace": "solar-dev"}}})
    }

    fn alice() -> Value {
        json!({"username": "alice", "groups": ["solar-devs", "system:authenticated"]})
    }

    fn cluster_admin_binding() -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "admins"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "name": "root"}]})
    }

    #[test]
    fn every_write_of_a_tenant_user_is_refused_with_what_it_was() {
        for (op, kind, resource, expected) in [
            (
                "DELETE",
                ("", "Pod"),
                "pods",
                "DELETE of Pod \"web\" in namespace \"solar-dev\"",
            ),
            (
                "CREATE",
                ("apps", "Deployment"),
                "deployments",
                "CREATE of Deployment \"web\" in namespace \"solar-dev\"",
            ),
            (
                "UPDATE",
                ("", "Secret"),
                "secrets",
                "UPDATE of Secret \"web\" in namespace \"solar-dev\"",
            ),
        ] {
            let v = run(
                json!({"tenant": "solar"}),
                request(kind, resource, op, alice()),
                vec![],
            )
            .unwrap();
            assert_eq!(
                v.message(),
                format!(
                    "tenant \"solar\" is cordoned: {expected} is refused until the tenant is uncordoned"
                )
            );
        }
    }

    #[test]
    fn connect_is_accepted() {
        let mut r = request(("", "PodExecOptions"), "pods", "CONNECT", alice());
        r["subResource"] = json!("exec");
        let v = run(json!({"tenant": "solar"}), r, vec![]).unwrap();
        assert!(v.is_clean());
    }

    #[test]
    fn a_subresource_is_named_with_its_resource() {
        let mut r = request(("autoscaling", "Scale"), "deployments", "UPDATE", alice());
        r["subResource"] = json!("scale");
        let v = run(json!({"tenant": "solar"}), r, vec![]).unwrap();
        assert_eq!(
            v.message(),
            "tenant \"solar\" is cordoned: UPDATE of Scale \"web\" (deployments/scale) in namespace \"solar-dev\" is refused until the tenant is uncordoned"
        );
    }

    #[test]
    fn a_namespace_is_its_own_namespace() {
        let r = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
            "resource": {"group": "", "version": "v1", "resource": "namespaces"},
            "name": "", "operation": "CREATE", "userInfo": alice(),
            "object": {"metadata": {"name": "solar-new", "labels": {"capsule.clastix.io/tenant": "solar"}}}});
        let v = run(json!({"tenant": "solar"}), r, vec![]).unwrap();
        assert_eq!(
            v.message(),
            "tenant \"solar\" is cordoned: CREATE of Namespace \"solar-new\" is refused until the tenant is uncordoned"
        );
    }

    #[test]
    fn platform_identities_are_exempt_unless_exempt_platform_is_false() {
        for user in [
            json!({"username": "system:kube-controller-manager"}),
            json!({"username": "system:kube-scheduler"}),
            json!({"username": "system:apiserver"}),
            json!({"username": "system:node:n1", "groups": ["system:nodes"]}),
            json!({"username": "kubernetes-admin", "groups": ["system:masters"]}),
            json!({"username": "system:serviceaccount:kube-system:namespace-controller"}),
        ] {
            let r = request(("", "Pod"), "pods", "DELETE", user.clone());
            assert!(
                run(json!({"tenant": "solar"}), r.clone(), vec![])
                    .unwrap()
                    .is_clean(),
                "{user}"
            );
            let v = run(
                json!({"tenant": "solar", "exemptPlatform": false}),
                r,
                vec![],
            )
            .unwrap();
            assert!(!v.is_clean(), "{user}");
        }
        // a service account of that name elsewhere is not the platform's
        let r = request(
            ("", "Pod"),
            "pods",
            "DELETE",
            json!({"username": "system:serviceaccount:solar-dev:namespace-controller"}),
        );
        assert!(
            !run(json!({"tenant": "solar"}), r, vec![])
                .unwrap()
                .is_clean()
        );
    }

    #[test]
    fn exempt_principals_listed_or_bound() {
        let settings = json!({"tenant": "solar", "exemptPrincipals": {"users": ["ops"], "clusterRoles": ["cluster-admin"]}});
        let ops = request(("", "Pod"), "pods", "DELETE", json!({"username": "ops"}));
        assert!(run(settings.clone(), ops, vec![]).unwrap().is_clean());
        let root = request(("", "Pod"), "pods", "DELETE", json!({"username": "root"}));
        assert!(
            run(settings.clone(), root, vec![cluster_admin_binding()])
                .unwrap()
                .is_clean()
        );
        let v = run(
            settings,
            request(("", "Pod"), "pods", "DELETE", alice()),
            vec![cluster_admin_binding()],
        )
        .unwrap();
        assert!(!v.is_clean());
    }

    #[test]
    fn a_request_that_cannot_name_its_object_is_malformed() {
        let mut r = request(("", "ConfigMap"), "configmaps", "CREATE", alice());
        r["name"] = json!("");
        r["object"] = json!({"metadata": {"namespace": "solar-dev"}});
        let err = run(json!({"tenant": "solar"}), r.clone(), vec![]).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.to_string(),
            "metadata.name: missing, and request.name is empty: the object written cannot be named"
        );
        r["object"] = json!({"metadata": {"generateName": "cfg-", "namespace": "solar-dev"}});
        let v = run(json!({"tenant": "solar"}), r, vec![]).unwrap();
        assert_eq!(
            v.message(),
            "tenant \"solar\" is cordoned: CREATE of ConfigMap named from generateName \"cfg-\" in namespace \"solar-dev\" is refused until the tenant is uncordoned"
        );
    }

    /// kwctl refuses a request without its kind, so this is a unit test rather than a case.
    #[test]
    fn a_request_without_its_kind_is_malformed() {
        let mut r = request(("", ""), "pods", "DELETE", alice());
        r["kind"] = json!({});
        let err = run(json!({"tenant": "solar"}), r.clone(), vec![]).unwrap_err();
        assert_eq!(err.to_string(), "request.kind: missing");
        assert_eq!(err.code(), 400);
        // the envelope comes before the platform's and the listed principals' exemptions
        r["userInfo"] = json!({"username": "system:kube-controller-manager"});
        let err = run(json!({"tenant": "solar"}), r.clone(), vec![]).unwrap_err();
        assert_eq!(err.to_string(), "request.kind: missing");
        r["userInfo"] = json!({"username": "ops"});
        let settings = json!({"tenant": "solar", "exemptPrincipals": {"users": ["ops"]}});
        let err = run(settings, r, vec![]).unwrap_err();
        assert_eq!(err.to_string(), "request.kind: missing");
    }

    #[test]
    fn an_object_in_no_namespace_is_no_tenants() {
        let mut r = request(("", "Pod"), "pods", "DELETE", alice());
        r["namespace"] = json!("");
        r["oldObject"] = json!({"metadata": {"name": "web"}});
        r["object"] = Value::Null;
        let verdict = run(json!({"tenant": "solar"}), r.clone(), vec![]).unwrap();
        assert!(verdict.is_clean(), "{verdict:?}");
        // two namespaces in one request stay malformed
        r["oldObject"] = json!({"metadata": {"name": "web", "namespace": "a"}});
        r["namespace"] = json!("b");
        let err = run(json!({"tenant": "solar"}), r, vec![]).unwrap_err();
        assert_eq!(err.code(), 400);
    }
}
