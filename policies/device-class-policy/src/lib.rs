//! device-class-policy: ResourceClaims and ResourceClaimTemplates (DRA) may request only
//! allowed DeviceClasses — in every request, `exactly` or any `firstAvailable`
//! subrequest, in every served API version — and no admin access (SPEC 3.5).

pub mod settings;

use policy_core::class::{ClassKind, record};
use policy_core::cluster::Lookups;
use policy_core::json::At;
use policy_core::policy::{Policy, unsupported_kind};
use policy_core::request::{AdmissionRequest, Operation};
use policy_core::{FieldPath, PolicyError, SettingsError, Verdict};
use serde_json::Value;

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
    type Settings = Settings;

    fn settings(raw: &Value) -> Result<Settings, SettingsError> {
        Settings::parse(raw)
    }

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
        // Claim specs are immutable: only CREATE is judged.
        if request.operation != Operation::Create {
            return Ok(Verdict::accept());
        }
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
        let mut verdict = Verdict::accept();
        for req in requests {
            req.object()?;
            // The classes of this request, with their paths, in document order.
            let mut classes: Vec<(FieldPath, &str)> = Vec::new();
            if version == "v1beta1" {
                if let Some(c) = req.get_str("deviceClassName")? {
                    classes.push((req.path.field("deviceClassName"), c));
                }
                admin_access(&req, settings, &mut verdict)?;
            } else if let Some(exactly) = req.get_object("exactly")? {
                if let Some(c) = exactly.get_str("deviceClassName")? {
                    classes.push((exactly.path.field("deviceClassName"), c));
                }
                admin_access(&exactly, settings, &mut verdict)?;
            }
            let subrequests = req.get_list("firstAvailable")?;
            for sub in &subrequests {
                sub.object()?;
                if let Some(c) = sub.get_str("deviceClassName")? {
                    classes.push((sub.path.field("deviceClassName"), c));
                }
                admin_access(sub, settings, &mut verdict)?;
            }
            if classes.is_empty() {
                let exact = if version == "v1beta1" {
                    "deviceClassName"
                } else {
                    "exactly.deviceClassName"
                };
                verdict.violation(
                    &req.path,
                    format!("the request names no DeviceClass; set {exact} or firstAvailable[].deviceClassName"),
                );
            }
            for (path, class) in classes {
                record(
                    settings.classes.judge(&kind, class, lookups),
                    &path,
                    settings.on_lookup_error,
                    &mut verdict,
                )?;
            }
        }
        Ok(verdict)
    }
}

policy_core::export_policy!(DeviceClassPolicy);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_core::cluster::Objects;
    use policy_core::policy::{ValidationResponse, evaluate};
    use serde_json::json;

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
