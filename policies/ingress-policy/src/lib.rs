//! ingress-policy: Ingresses publish only allowed hostnames (rule and TLS hosts, no
//! catch-alls, wildcards only when allowed), never a (host, path) another Ingress of the
//! collision scope already uses, and only allowed IngressClasses; an Ingress created without
//! class gets the tenant default (README rules 1–11).

pub mod classes;
pub mod collisions;
pub mod hostnames;
pub mod ingress;
pub mod report;
pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::gate::{Admitted, Gate, HandledKind};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::PolicyError;

use crate::collisions::Me;
use crate::hostnames::Hostnames;
use crate::ingress::{ClassValues, backend_field, classes_part, collisions_part, hostnames_part};
use crate::report::Report;
pub use crate::settings::{CollisionScope, Settings};

/// The policy.
pub struct IngressPolicy;

/// The kinds handled (Ingresses of the three served versions) and the operations judged.
fn gate() -> Gate {
    const INGRESS: [HandledKind; 2] = [
        HandledKind {
            group: "networking.k8s.io",
            versions: &["v1", "v1beta1"],
            kind: "Ingress",
        },
        HandledKind {
            group: "extensions",
            versions: &["v1beta1"],
            kind: "Ingress",
        },
    ];
    Gate {
        kinds: &INGRESS,
        operations: IngressPolicy::OPERATIONS,
    }
}

impl Policy for IngressPolicy {
    const NAME: &'static str = "ingress-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_AND_LIST;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(ingress) = gate().admit(Self::NAME, request)? else {
            return Ok(Verdict::accept());
        };
        let mut verdict = Verdict::accept();
        let mut report = Report::default();
        judge(&ingress, settings, lookups, &mut report, &mut verdict)?;
        let backend = backend_field(&request.kind.version);
        // README "How a request is decided": violations in document order.
        report.into_verdict(ingress.object.value, backend, &mut verdict);
        Ok(verdict)
    }
}

/// Every rule, each on CREATE and on the UPDATEs that change what it reads
/// (`docs/semantics.md#create-and-update`); the lookups are made in this order: classes,
/// then collisions.
fn judge(
    ingress: &Admitted<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    report: &mut Report,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let request = ingress.request;
    let backend = backend_field(&request.kind.version);
    // The view before the changed steps: a malformed Ingress is a 400 whatever changed.
    let spec = ingress.spec()?;
    let rules = ingress::rules(&spec)?;
    let tls = ingress::tls_hosts(&spec)?;
    let class = ClassValues::read(&ingress.object, &spec)?;
    let backend_path = spec.get_object(backend)?.map(|b| b.path);
    let create = request.operation == Operation::Create;
    // README rule 11: judged when either value changed.
    if ingress.changed(classes_part)? {
        let out = classes::Outcome { report, verdict };
        classes::judge(&class, create, settings, lookups, out)?;
    }
    // README rule 3.
    if ingress.changed(|o| hostnames_part(o, backend))? {
        let hosts = Hostnames {
            rules: &rules,
            tls: &tls,
            backend: backend_path,
        };
        hostnames::judge(&hosts, settings, report);
    }
    // README rule 7.
    if settings.hostname_collision_scope != CollisionScope::Disabled
        && ingress.changed(collisions_part)?
    {
        let me = Me {
            namespace: request.namespace()?,
            name: ingress
                .object
                .value
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or(&request.name),
        };
        collisions::judge(&rules, me, settings, lookups, report, verdict)?;
    }
    Ok(())
}

policy_admission::export_policy!(IngressPolicy);

policy_admission::robustness_tests!(
    IngressPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "allowedHostnames": {"allowed": ["app.acme.com"], "allowedRegex": "[a-z0-9-]+\\.solar\\.acme\\.com"},
            "hostnameCollisionScope": "Tenant",
            "allowedClasses": {"allowed": ["internal"], "selector": {"matchLabels": {"env": "production"}}, "default": "tenant-nginx"}
        }),
        kinds: &[
            ("networking.k8s.io", "v1", "Ingress"),
            ("networking.k8s.io", "v1beta1", "Ingress"),
            ("extensions", "v1beta1", "Ingress")
        ],
        strings: &[
            "rules",
            "host",
            "http",
            "paths",
            "path",
            "tls",
            "hosts",
            "defaultBackend",
            "backend",
            "ingressClassName",
            "kubernetes.io/ingress.class",
            "app.acme.com",
            "*.acme.com",
            "web.solar.acme.com",
            "gold",
            "nginx"
        ],
        reads: &[
            "networking.k8s.io/v1/IngressClass",
            "networking.k8s.io/v1/Ingress",
            "v1/Namespace"
        ],
        mutating: true,
        objects: vec![serde_json::json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "solar-prod", "annotations": {"kubernetes.io/ingress.class": "gold"}},
            "spec": {"ingressClassName": "gold", "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
                "tls": [{"hosts": ["app.acme.com"], "secretName": "tls"}],
                "rules": [{"host": "app.acme.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}
        })],
        cluster: vec![
            serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "gold", "labels": {"env": "production"}}}),
            serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}}}),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "solar-prod", "labels": {"capsule.clastix.io/tenant": "solar"}}}),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "solar-dev", "labels": {"capsule.clastix.io/tenant": "solar"}}}),
            serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": "web", "namespace": "solar-dev"},
                "spec": {"rules": [{"host": "app.acme.com", "http": {"paths": [{"path": "/", "pathType": "Prefix"}]}}]}})
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::{Value, json};

    fn run(
        version: &str,
        object: Value,
        settings: Value,
        cluster: Vec<Value>,
    ) -> ValidationResponse {
        let group = if version == "extensions/v1beta1" {
            "extensions"
        } else {
            "networking.k8s.io"
        };
        let v = version.rsplit('/').next().unwrap();
        let payload = json!({
            "request": {"kind": {"group": group, "version": v, "kind": "Ingress"}, "operation": "CREATE", "userInfo": {"username": "alice"},
                "namespace": "solar-prod", "object": object},
            "settings": settings
        });
        evaluate::<IngressPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::new(cluster),
        )
    }

    fn web(spec: Value) -> Value {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "web", "namespace": "solar-prod"}, "spec": spec})
    }

    #[test]
    fn default_written_and_hosts_judged_in_document_order() {
        let r = run(
            "v1",
            web(json!({"rules": [{"host": "app.acme.com"}]})),
            json!({"allowedClasses": {"default": "tenant-nginx"}}),
            vec![],
        );
        assert_eq!(
            r.mutated_object.unwrap()["spec"]["ingressClassName"],
            "tenant-nginx"
        );
        let r = run(
            "v1",
            web(
                json!({"rules": [{"host": "*.evil.com"}], "tls": [{"hosts": ["bank.example.com"]}]}),
            ),
            json!({"allowedHostnames": {"allowed": ["app.acme.com"]}}),
            vec![],
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.rules[0].host: \"*.evil.com\" is not an allowed hostname; allowed: [app.acme.com]; \
                 spec.rules[0].host: \"*.evil.com\" is a wildcard hostname; wildcard hostnames are not allowed; \
                 spec.tls[0].hosts[0]: \"bank.example.com\" is not an allowed hostname; allowed: [app.acme.com]"
            )
        );
    }

    #[test]
    fn denied_hosts_are_refused_even_when_allowed() {
        let settings = json!({
            "allowedHostnames": {"allowedRegex": ".*\\.acme\\.com"},
            "deniedHostnames": {"denied": ["admin.acme.com", "*.acme.com"], "deniedRegex": ".*\\.internal\\.acme\\.com"},
            "allowWildcardHostnames": true
        });
        let r = run(
            "v1",
            web(json!({
                "rules": [{"host": "Admin.acme.com."}, {"host": "www.acme.com"}, {"host": "*.acme.com"}],
                "tls": [{"hosts": ["db.internal.acme.com", "internal.acme.com", "db.internal.evil.io"]}]
            })),
            settings.clone(),
            vec![],
        );
        let denied = "denied: [admin.acme.com, *.acme.com], regex [.*\\.internal\\.acme\\.com]";
        assert_eq!(
            r.message.unwrap(),
            format!(
                "spec.rules[0].host: \"Admin.acme.com.\" is a denied hostname; {denied}; \
                 spec.rules[2].host: \"*.acme.com\" is a denied hostname; {denied}; \
                 spec.tls[0].hosts[0]: \"db.internal.acme.com\" is a denied hostname; {denied}; \
                 spec.tls[0].hosts[2]: \"db.internal.evil.io\" is not an allowed hostname; allowed: regex [.*\\.acme\\.com]"
            )
        );
        // a deny-list alone: the wildcard is denied literally, other hosts pass
        let settings =
            json!({"deniedHostnames": {"denied": ["*.acme.com"]}, "allowWildcardHostnames": true});
        let ok = run(
            "v1",
            web(json!({"rules": [{"host": "www.acme.com"}, {"host": "*.solar.acme.com"}]})),
            settings.clone(),
            vec![],
        );
        assert!(ok.accepted, "{:?}", ok.message);
        let r = run(
            "v1",
            web(json!({"rules": [{"host": "*.acme.com"}]})),
            settings,
            vec![],
        );
        assert_eq!(
            r.message.as_deref(),
            Some("spec.rules[0].host: \"*.acme.com\" is a denied hostname; denied: [*.acme.com]")
        );
    }

    #[test]
    fn default_backend_field_follows_the_version() {
        let settings = json!({"allowedHostnames": {"allowed": ["app.acme.com"]}});
        let backend = json!({"serviceName": "web", "servicePort": 80});
        for version in ["networking.k8s.io/v1beta1", "extensions/v1beta1"] {
            let r = run(
                version,
                web(json!({"backend": backend})),
                settings.clone(),
                vec![],
            );
            assert!(
                r.message
                    .unwrap()
                    .starts_with("spec.backend: an Ingress with only a default backend")
            );
        }
        let r = run(
            "v1",
            web(json!({"defaultBackend": {"service": {"name": "web"}}})),
            settings,
            vec![],
        );
        assert!(r.message.unwrap().starts_with("spec.defaultBackend: "));
    }

    #[test]
    fn other_kinds_are_not_handled() {
        let payload = json!({
            "request": {"kind": {"group": "extensions", "version": "v1", "kind": "Ingress"}, "operation": "CREATE", "userInfo": {"username": "alice"},
                "object": web(json!({}))},
            "settings": {}
        });
        let r = evaluate::<IngressPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        );
        assert_eq!(r.code, Some(400));
        assert_eq!(
            r.message.as_deref(),
            Some("ingress-policy does not handle extensions/v1 Ingress")
        );
    }

    #[test]
    fn collisions_name_the_other_ingress_in_the_tenant_only() {
        let ns = |name: &str, tenant: &str| {
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"capsule.clastix.io/tenant": tenant}}})
        };
        let existing = |namespace: &str| {
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"rules": [{"host": "app.acme.com", "http": {"paths": [{"path": "/"}]}}]}})
        };
        let cluster = vec![
            ns("solar-prod", "solar"),
            ns("solar-dev", "solar"),
            ns("wind-prod", "wind"),
            existing("solar-dev"),
            existing("wind-prod"),
        ];
        let new =
            web(json!({"rules": [{"host": "app.acme.com", "http": {"paths": [{"path": "/"}]}}]}));
        let r = run(
            "v1",
            new.clone(),
            json!({"hostnameCollisionScope": "Tenant"}),
            cluster.clone(),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.rules[0]: host \"app.acme.com\" path \"/\" is already used by Ingress solar-dev/web"
            )
        );
        let only_wind = vec![
            ns("solar-prod", "solar"),
            ns("wind-prod", "wind"),
            existing("wind-prod"),
        ];
        let r = run(
            "v1",
            new,
            json!({"hostnameCollisionScope": "Cluster"}),
            only_wind,
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.rules[0]: host \"app.acme.com\" path \"/\" is already used by an Ingress in another namespace"
            )
        );
    }
}
