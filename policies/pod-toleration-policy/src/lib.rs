//! pod-toleration-policy: only listed principals may tolerate a protected node taint with
//! `Equal`; an `Exists` toleration of it is refused for everyone (README rules 1–6).

pub mod settings;

use kube_values::toleration::{Operator, Toleration};
use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::pod::PodKind;
use policy_admission::policy::{Policy, unsupported_kind};
use policy_admission::request::AdmissionRequest;
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::PolicyError;
use tenancy_rules::principal::has_controller_owner;

pub use settings::{ProtectedTaint, Settings};

/// The policy.
pub struct PodTolerationPolicy;

impl Policy for PodTolerationPolicy {
    const NAME: &'static str = "pod-toleration-policy";
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        _lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        if PodKind::of_request(request).is_none() {
            return Err(unsupported_kind(Self::NAME, request));
        }
        let object = request.object()?;
        let requester = &request.user_info;
        let trusted = settings.trusted_controllers.matches(requester);
        // Rule 1: a controller-owned object written by a trusted controller was judged
        // through its owner.
        if trusted && has_controller_owner(object.value) {
            return Ok(Verdict::accept());
        }
        // Rule 2: an UPDATE that leaves the pod spec / template alone is not re-judged.
        let Some(pod) = pod_target(request, Self::NAME, PodTarget::CreateAndUpdate)? else {
            return Ok(Verdict::accept());
        };
        let mut verdict = Verdict::accept();
        for toleration in Toleration::read_all(&pod.spec)? {
            for protected in settings.candidates(toleration.key) {
                if toleration.covers(&protected.taint) {
                    judge_covering(&toleration, protected, request, trusted, &mut verdict);
                }
            }
        }
        Ok(verdict)
    }
}

/// Rules 4 and 5 for a toleration covering a protected taint: `Exists` is refused for
/// everyone; `Equal` with the taint's value only for a requester the taint allows — a
/// trusted controller never counts as requester for grants (`docs/semantics.md#principals`).
fn judge_covering(
    toleration: &Toleration<'_>,
    protected: &ProtectedTaint,
    request: &AdmissionRequest,
    trusted: bool,
    verdict: &mut Verdict,
) {
    let requester = &request.user_info;
    match toleration.operator {
        Operator::Exists => verdict.violation(
            &toleration.path,
            format!(
                "operator \"Exists\" tolerates protected taint {}; nobody may use Exists on a protected taint",
                protected.taint
            ),
        ),
        Operator::Equal if toleration.value == protected.taint.value => {
            if trusted || !protected.allowed.matches(requester) {
                verdict.violation(
                    &toleration.path,
                    format!(
                        "{} may not tolerate protected taint {}; allowed: {}",
                        requester.describe(),
                        protected.taint,
                        protected.allowed.describe()
                    ),
                );
            }
        }
        Operator::Equal => {}
    }
}

policy_admission::export_policy!(PodTolerationPolicy);

policy_admission::robustness_tests!(
    PodTolerationPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"protectedTaints": [
            {"key": "dedicated", "value": "tenantA", "effect": "NoSchedule", "allowedGroups": ["tenantA-users"],
             "allowedServiceAccounts": ["team-a:deployer"]},
            {"key": "gpu", "value": "shared", "allowedUsers": ["alice"]}]}),
        subresources: &["ephemeralcontainers"],
        strings: &[
            "Exists",
            "Equal",
            "dedicated",
            "tenantA",
            "gpu",
            "shared",
            "NoSchedule",
            "NoExecute",
            "tenantA-users",
            "tolerations",
            "operator",
            "effect",
            "key",
            "value"
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

    fn run(object: Value, user: &str, groups: &[&str]) -> ValidationResponse {
        let payload = json!({
            "request": {
                "uid": "1",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE",
                "userInfo": {"username": user, "groups": groups},
                "object": object
            },
            "settings": {"protectedTaints": [{"key": "dedicated", "value": "tenantA", "effect": "NoSchedule", "allowedGroups": ["tenantA-users"]}]}
        });
        let bytes = serde_json::to_vec(&payload).unwrap();
        evaluate::<PodTolerationPolicy>(&bytes, &mut Objects::default())
    }

    fn pod(tolerations: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}], "tolerations": tolerations}})
    }

    #[test]
    fn wiring_exists_rejected_and_equal_allowed_for_group() {
        let r = run(
            pod(json!([{"key": "dedicated", "operator": "Exists"}])),
            "bob",
            &["tenantA-users"],
        );
        assert!(!r.accepted);
        assert_eq!(r.code, Some(403));
        let r = run(
            pod(json!([{"key": "dedicated", "value": "tenantA"}])),
            "bob",
            &["tenantA-users"],
        );
        assert!(r.accepted, "{:?}", r.message);
    }

    #[test]
    fn all_violations_are_reported() {
        let r = run(
            pod(json!([{"operator": "Exists"}, {"key": "dedicated", "value": "tenantA"}])),
            "bob",
            &[],
        );
        let msg = r.message.unwrap();
        assert!(
            msg.starts_with("spec.tolerations[0]: operator \"Exists\""),
            "{msg}"
        );
        assert!(msg.contains("; spec.tolerations[1]: user \"bob\" may not tolerate protected taint dedicated=tenantA:NoSchedule; allowed: groups [tenantA-users]"), "{msg}");
    }

    #[test]
    fn malformed_pod_is_400() {
        let r = run(json!({"metadata": {}}), "bob", &[]);
        assert_eq!(r.code, Some(400));
        assert_eq!(r.message.as_deref(), Some("spec: missing"));
    }
}
