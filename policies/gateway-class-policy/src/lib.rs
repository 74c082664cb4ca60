//! gateway-class-policy: Gateways may name only allowed GatewayClasses; a Gateway created
//! without class gets the tenant default (README rules 1–3).

use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::gate::{Gate, HandledKind};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::PolicyError;
use serde_json::Value;
use tenancy_rules::class::{ClassKind, ClassPolicySettings, DefaultClass, record};

/// The policy's settings: a class allow-list and `onLookupError`.
pub type Settings = ClassPolicySettings;

/// The policy.
pub struct GatewayClassPolicy;

/// The Gateway API group.
const GROUP: &str = "gateway.networking.k8s.io";

/// The kinds handled (Gateways of the served versions) and the operations judged.
fn gate() -> Gate {
    const GATEWAY: [HandledKind; 1] = [HandledKind {
        group: GROUP,
        versions: &["v1", "v1beta1"],
        kind: "Gateway",
    }];
    Gate {
        kinds: &GATEWAY,
        operations: GatewayClassPolicy::OPERATIONS,
    }
}

fn gateway_class() -> ClassKind {
    ClassKind::new("gateway.networking.k8s.io/v1", "GatewayClass")
}

/// `spec.gatewayClassName` of an object (absent or `""` = none).
fn class_name(object: &Value) -> Option<&str> {
    object
        .get("spec")
        .and_then(|s| s.get("gatewayClassName"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

impl Policy for GatewayClassPolicy {
    const NAME: &'static str = "gateway-class-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(gateway) = gate().admit(Self::NAME, request)? else {
            return Ok(Verdict::accept());
        };
        // The view before the changed step: a Gateway without spec is malformed (400) even
        // on an UPDATE that leaves the class alone.
        let spec = gateway.spec()?;
        let path = spec.path.field("gatewayClassName");
        let name = spec.get_str("gatewayClassName")?.filter(|n| !n.is_empty());
        // UPDATE: judged only when the class changed (listeners are not judged).
        if !gateway.changed(class_name)? {
            return Ok(Verdict::accept());
        }
        let create = request.operation == Operation::Create;
        let mut verdict = Verdict::accept();
        match (name, settings.classes.default()) {
            (Some(name), _) => {
                record(
                    settings.classes.judge(&gateway_class(), name, lookups),
                    &path,
                    settings.on_lookup_error,
                    &mut verdict,
                )?;
            }
            (None, Some(default)) if create => DefaultClass {
                kind: &gateway_class(),
                name: default,
                field: "gatewayClassName",
            }
            .set_name(&mut verdict),
            (None, _) => verdict.violation(
                &path,
                format!(
                    "a Gateway must name a GatewayClass; allowed: {}",
                    settings.classes.describe()
                ),
            ),
        }
        Ok(verdict)
    }
}

policy_admission::export_policy!(GatewayClassPolicy);

policy_admission::robustness_tests!(
    GatewayClassPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"allowed": ["internal"], "allowedRegex": "customer-.*", "selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"}),
        kinds: &[
            ("gateway.networking.k8s.io", "v1", "Gateway"),
            ("gateway.networking.k8s.io", "v1beta1", "Gateway")
        ],
        strings: &[
            "gatewayClassName",
            "tenant-default",
            "public",
            "customer-x",
            "listeners"
        ],
        reads: &["gateway.networking.k8s.io/v1/GatewayClass"],
        mutating: true,
        objects: vec![
            serde_json::json!({"kind": "Gateway", "metadata": {"name": "g", "namespace": "team-a"},
            "spec": {"gatewayClassName": "public", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}})
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": "public", "labels": {"env": "production"}}})
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::json;

    fn run(version: &str, spec: Value, settings: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": GROUP, "version": version, "kind": "Gateway"}, "operation": "CREATE", "userInfo": {"username": "alice"},
                "object": {"apiVersion": format!("{GROUP}/{version}"), "kind": "Gateway", "metadata": {"name": "g"}, "spec": spec}},
            "settings": settings
        });
        evaluate::<GatewayClassPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    #[test]
    fn default_written_and_missing_class_refused() {
        let r = run(
            "v1",
            json!({"listeners": []}),
            json!({"default": "tenant-default"}),
        );
        assert_eq!(
            r.mutated_object.unwrap()["spec"]["gatewayClassName"],
            "tenant-default"
        );
        let r = run(
            "v1beta1",
            json!({"listeners": []}),
            json!({"allowed": ["a"]}),
        );
        assert_eq!(
            r.message.as_deref(),
            Some("spec.gatewayClassName: a Gateway must name a GatewayClass; allowed: names [a]")
        );
    }

    #[test]
    fn other_versions_are_not_handled() {
        let r = run("v1alpha2", json!({}), json!({"allowed": ["a"]}));
        assert_eq!(r.code, Some(400));
    }
}
