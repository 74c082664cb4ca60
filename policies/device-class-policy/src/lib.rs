//! device-class-policy: ResourceClaims and ResourceClaimTemplates (DRA) may request only
//! allowed DeviceClasses — in every request, `exactly` or any `firstAvailable`
//! subrequest, in every served API version — and no admin access (README rules 1–5).

pub mod settings;

use policy_core::class::{ClassKind, record};
use policy_core::cluster::{HostCapabilities, Lookups};
use policy_core::json::At;
use policy_core::policy::{Policy, unsupported_kind};
use policy_core::request::{AdmissionRequest, Operation};
use policy_core::{FieldPath, PolicyError, Verdict};

pub use settings::Settings;

/// The policy.
pub struct DeviceClassPolicy;

/// Records a violation when `node.adminAccess` is true and admin access is not allowed.
fn admin_access(
    node: &At<'_>,
    settings: &Settings,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    if node.get_bool("adminAccess")? == Some(true) && !settings.allow_admin_access {
        verdict.violation(
            &node.path.field("adminAccess"),
            "\"true\": requests with admin access are not allowed (they expose devices in use by others)",
        );
    }
    Ok(())
}

impl Policy for DeviceClassPolicy {
    const NAME: &'static str = "device-class-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type RawSettings = settings::RawSettings;
    type Settings = Settings;
    /// Claim specs are immutable: only CREATE is judged.
    const OPERATIONS: &'static [Operation] = &[Operation::Create];

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let k = &request.kind;
        let version = k.version.as_str();
        let served =
            k.group == "resource.k8s.io" && matches!(version, "v1" | "v1beta2" | "v1beta1");
        let template = match k.kind.as_str() {
            "ResourceClaim" if served => false,
            "ResourceClaimTemplate" if served => true,
            _ => return Err(unsupported_kind(Self::NAME, request)),
        };
        let object = request.object()?;
        let mut spec = object
            .get_object("spec")?
            .ok_or_else(|| PolicyError::malformed(&FieldPath::root("spec"), "missing"))?;
        if template {
            spec = spec
                .get_object("spec")?
                .ok_or_else(|| PolicyError::malformed(&spec.path.field("spec"), "missing"))?;
        }
        let requests = match spec.get_object("devices")? {
            Some(devices) => devices.get_list("requests")?,
            None => Vec::new(),
        };
        let kind = ClassKind::new(&settings.device_class_api_version, "DeviceClass");
        let v1beta1 = version == "v1beta1";
        let mut verdict = Verdict::accept();
        for req in requests {
            req.object()?;
            let subrequests = req.get_list("firstAvailable")?;
            // The node naming the class outright: v1beta1 the request, v1/v1beta2 `exactly`.
            let (exact, exact_key) = if v1beta1 {
                (Some(req.clone()), "deviceClassName")
            } else {
                (req.get_object("exactly")?, "exactly.deviceClassName")
            };
            let exact_class = match &exact {
                Some(node) => node.get_str("deviceClassName")?,
                None => None,
            };
            if exact_class.is_none() && subrequests.is_empty() {
                verdict.violation(
                    &req.path,
                    format!("the request names no DeviceClass; set {exact_key} or firstAvailable[].deviceClassName"),
                );
            }
            // Classes and admin access are judged node by node, in document order.
            if let Some(node) = &exact {
                let path = node.path.field("deviceClassName");
                match exact_class {
                    Some(class) => record(
                        settings.classes.judge(&kind, class, lookups),
                        &path,
                        settings.on_lookup_error,
                        &mut verdict,
                    )?,
                    // An `exactly` without class next to `firstAvailable` is still judged.
                    None if !v1beta1 && !subrequests.is_empty() => {
                        verdict.violation(&path, "missing; every request must name a DeviceClass")
                    }
                    None => {}
                }
                admin_access(node, settings, &mut verdict)?;
            }
            for sub in &subrequests {
                sub.object()?;
                let path = sub.path.field("deviceClassName");
                match sub.get_str("deviceClassName")? {
                    Some(class) => record(
                        settings.classes.judge(&kind, class, lookups),
                        &path,
                        settings.on_lookup_error,
                        &mut verdict,
                    )?,
                    None => verdict.violation(
                        &path,
                        "missing; every firstAvailable subrequest must name a DeviceClass",
                    ),
                }
                admin_access(sub, settings, &mut verdict)?;
            }
        }
        Ok(verdict)
    }
}

policy_core::export_policy!(DeviceClassPolicy);

policy_core::robustness_tests!(
    DeviceClassPolicy,
    policy_core::testing::Robustness {
        settings: serde_json::json!({"allowed": ["gpu-a"], "selector": {"matchLabels": {"env": "production"}}}),
        kinds: &[
            ("resource.k8s.io", "v1", "ResourceClaim"),
            ("resource.k8s.io", "v1", "ResourceClaimTemplate"),
            ("resource.k8s.io", "v1beta2", "ResourceClaim"),
            ("resource.k8s.io", "v1beta1", "ResourceClaimTemplate"),
        ],
        strings: &[
            "devices",
            "requests",
            "exactly",
            "firstAvailable",
            "deviceClassName",
            "adminAccess",
            "gpu-a",
            "gpu-prod"
        ],
        reads: &["resource.k8s.io/v1/DeviceClass"],
        objects: vec![
            serde_json::json!({"kind": "ResourceClaim", "metadata": {"name": "c"}, "spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu-prod", "adminAccess": true}},
                {"name": "b", "deviceClassName": "gpu-a", "firstAvailable": [{"name": "x", "deviceClassName": "gpu-x"}]}]}}}),
            serde_json::json!({"kind": "ResourceClaimTemplate", "metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu-a"}, "firstAvailable": [{"name": "x", "deviceClassName": "gpu-y", "adminAccess": false}]}]}}}}),
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu-prod", "labels": {"env": "production"}}})
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_core::cluster::Objects;
    use policy_core::policy::{ValidationResponse, evaluate};
    use serde_json::{Value, json};

    fn run(version: &str, requests: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "resource.k8s.io", "version": version, "kind": "ResourceClaim"}, "operation": "CREATE",
                "object": {"apiVersion": format!("resource.k8s.io/{version}"), "kind": "ResourceClaim",
                    "metadata": {"name": "c"}, "spec": {"devices": {"requests": requests}}}},
            "settings": {"allowed": ["gpu-prod"]}
        });
        evaluate::<DeviceClassPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    #[test]
    fn every_request_and_subrequest_is_judged() {
        let r = run(
            "v1",
            json!([{"name": "a", "exactly": {"deviceClassName": "gpu-prod"}},
                   {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "gpu-prod"}, {"name": "y", "deviceClassName": "gpu-secret"}]}]),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.devices.requests[1].firstAvailable[1].deviceClassName: DeviceClass \"gpu-secret\" is not allowed; allowed: names [gpu-prod]"
            )
        );
    }

    #[test]
    fn violations_in_document_order_and_classless_subrequests() {
        let r = run(
            "v1",
            json!([{"name": "a", "exactly": {"deviceClassName": "gpu-x", "adminAccess": true}},
                   {"name": "b", "firstAvailable": [{"name": "x"}, {"name": "y", "deviceClassName": "gpu-prod", "adminAccess": true}]}]),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(concat!(
                "spec.devices.requests[0].exactly.deviceClassName: DeviceClass \"gpu-x\" is not allowed; allowed: names [gpu-prod]; ",
                "spec.devices.requests[0].exactly.adminAccess: \"true\": requests with admin access are not allowed (they expose devices in use by others); ",
                "spec.devices.requests[1].firstAvailable[0].deviceClassName: missing; every firstAvailable subrequest must name a DeviceClass; ",
                "spec.devices.requests[1].firstAvailable[1].adminAccess: \"true\": requests with admin access are not allowed (they expose devices in use by others)"
            ))
        );
        let r = run(
            "v1",
            json!([{"name": "a", "exactly": {"count": 1}, "firstAvailable": [{"name": "x", "deviceClassName": "gpu-prod"}]}]),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.devices.requests[0].exactly.deviceClassName: missing; every request must name a DeviceClass"
            )
        );
    }

    #[test]
    fn v1beta1_class_on_the_request() {
        let r = run(
            "v1beta1",
            json!([{"name": "a", "deviceClassName": "gpu-prod"}]),
        );
        assert!(r.accepted, "{:?}", r.message);
        let r = run("v1beta1", json!([{"name": "a"}]));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.devices.requests[0]: the request names no DeviceClass; set deviceClassName or firstAvailable[].deviceClassName"
            )
        );
    }
}
