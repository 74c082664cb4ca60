//! device-class-policy: ResourceClaims and ResourceClaimTemplates (DRA) may request only
//! allowed DeviceClasses — in every request, `exactly` or any `firstAvailable`
//! subrequest, in every served API version — and no admin access (README rules 1–5).

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::gate::{Gate, HandledKind, required};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::PolicyError;
use policy_decode::json::At;
use tenancy_rules::class::{ClassKind, record};

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

/// The kinds handled: ResourceClaims and ResourceClaimTemplates of every served version.
const CLAIM_KINDS: [HandledKind; 2] = [
    HandledKind {
        group: "resource.k8s.io",
        versions: &["v1", "v1beta2", "v1beta1"],
        kind: "ResourceClaim",
    },
    HandledKind {
        group: "resource.k8s.io",
        versions: &["v1", "v1beta2", "v1beta1"],
        kind: "ResourceClaimTemplate",
    },
];

impl Policy for DeviceClassPolicy {
    const NAME: &'static str = "device-class-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;
    /// Claim specs are immutable: only CREATE is judged.
    const OPERATIONS: &'static [Operation] = &[Operation::Create];

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let gate = Gate {
            kinds: &CLAIM_KINDS,
            operations: Self::OPERATIONS,
        };
        let Some(claim) = gate.admit(Self::NAME, request)? else {
            return Ok(Verdict::accept());
        };
        let mut spec = claim.spec()?;
        if claim.kind.kind == "ResourceClaimTemplate" {
            spec = required(&spec, "spec")?;
        }
        let requests = match spec.get_object("devices")? {
            Some(devices) => devices.get_list("requests")?,
            None => Vec::new(),
        };
        let judge = Requests {
            settings,
            kind: ClassKind::new(&settings.device_class_api_version, "DeviceClass"),
            v1beta1: request.kind.version == "v1beta1",
        };
        let mut verdict = Verdict::accept();
        for req in requests {
            judge.request(&req, lookups, &mut verdict)?;
        }
        Ok(verdict)
    }
}

/// The rules applied to each device request of a claim.
struct Requests<'a> {
    settings: &'a Settings,
    kind: ClassKind,
    /// v1beta1 names the class on the request itself; v1 and v1beta2 under `exactly`.
    v1beta1: bool,
}

impl Requests<'_> {
    /// README rules 1–4 for one request: every class named by it or its `firstAvailable`
    /// subrequests is judged, node by node in document order.
    fn request(
        &self,
        req: &At<'_>,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        req.object()?;
        let subrequests = req.get_list("firstAvailable")?;
        // The node naming the class outright: v1beta1 the request, v1/v1beta2 `exactly`.
        let (exact, exact_key) = if self.v1beta1 {
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
        if let Some(node) = &exact {
            self.exact(node, exact_class, !subrequests.is_empty(), lookups, verdict)?;
        }
        for sub in &subrequests {
            self.subrequest(sub, lookups, verdict)?;
        }
        Ok(())
    }

    /// README rules 2–4 for the node naming the class outright: its class is judged (an
    /// `exactly` without class next to `firstAvailable` is a violation), then admin access.
    fn exact(
        &self,
        node: &At<'_>,
        class: Option<&str>,
        has_subrequests: bool,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let path = node.path.field("deviceClassName");
        match class {
            Some(class) => record(
                self.settings.classes.judge(&self.kind, class, lookups),
                &path,
                self.settings.on_lookup_error,
                verdict,
            )?,
            None if !self.v1beta1 && has_subrequests => {
                verdict.violation(&path, "missing; every request must name a DeviceClass")
            }
            None => {}
        }
        admin_access(node, self.settings, verdict)
    }

    /// README rules 2–4 for a `firstAvailable` subrequest: it must name an allowed class
    /// and request no admin access.
    fn subrequest(
        &self,
        sub: &At<'_>,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        sub.object()?;
        let path = sub.path.field("deviceClassName");
        match sub.get_str("deviceClassName")? {
            Some(class) => record(
                self.settings.classes.judge(&self.kind, class, lookups),
                &path,
                self.settings.on_lookup_error,
                verdict,
            )?,
            None => verdict.violation(
                &path,
                "missing; every firstAvailable subrequest must name a DeviceClass",
            ),
        }
        admin_access(sub, self.settings, verdict)
    }
}

policy_admission::export_policy!(DeviceClassPolicy);

policy_admission::robustness_tests!(
    DeviceClassPolicy,
    policy_admission::testing::Robustness {
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
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
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
