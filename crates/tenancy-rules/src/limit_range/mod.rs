//! LimitRange items enforced at admission with the Kubernetes LimitRanger semantics
//! (`docs/semantics.md#limit-ranges`): Container defaults written into Pods being created
//! (simulated in workload templates), Container and Pod bounds, PersistentVolumeClaim
//! bounds; `pods/resize` judged by the bounds only.
//!
//! * [`settings`]: the settings as written, read once per request;
//! * [`items`]: the items, validated and merged by type;
//! * `bounds`: the `min` / `max` / `maxLimitRequestRatio` checks and their messages;
//! * [`pods`]: containers, defaults and Pod totals;
//! * [`claims`]: claims and StatefulSet claim templates.
//!
//! ```
//! use policy_decode::settings::Validated;
//! use tenancy_rules::limit_range::{LimitRanges, judge};
//! use policy_admission::request::AdmissionRequest;
//! let ranges = LimitRanges::parse(&serde_json::json!({"limits": [
//!     {"type": "Container", "default": {"cpu": "200m"}, "max": {"cpu": "1"}}]})).unwrap();
//! let request: AdmissionRequest = serde_json::from_value(serde_json::json!({
//!     "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
//!     "object": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]}}
//! })).unwrap();
//! let verdict = judge("limit-range-policy", &request, &ranges).unwrap();
//! assert_eq!(verdict.message(),
//!     "spec.containers[0].resources.limits.cpu: \"2\" exceeds the maximum 1 per Container");
//! ```

mod bounds;
pub mod claims;
pub mod items;
pub mod pods;
mod reread;
pub mod settings;

pub use items::{Bound, ItemType, LimitRanges, Resource, ResourceList};
pub use pods::Stage;
pub use settings::RawSettings;

use policy_admission::pod::{PodKind, PodView};
use policy_admission::policy::unsupported_kind;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_admission::verdict::Verdict;
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::error::PolicyError;

/// The subresource whose UPDATEs are judged by the bounds only (README rule 5).
pub const RESIZE: &str = "resize";

/// Whether the request is for a `v1` PersistentVolumeClaim.
fn is_claim(request: &AdmissionRequest) -> bool {
    let k = &request.kind;
    k.group.is_empty() && k.version == "v1" && k.kind == "PersistentVolumeClaim"
}

/// Judges one request (README rules 1–5): Pods on CREATE and on `pods/resize` UPDATE,
/// workload templates on CREATE and template-changing UPDATE, StatefulSet claim templates
/// on CREATE and when they changed, PersistentVolumeClaims on CREATE and on UPDATEs that
/// changed their requests. Any other kind is refused (400) with `policy`'s name.
pub fn judge(
    policy: &str,
    request: &AdmissionRequest,
    ranges: &LimitRanges,
) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    if is_claim(request) {
        claim_request(request, ranges, &mut verdict)?;
        return Ok(verdict);
    }
    let Some(kind) = PodKind::of_request(request) else {
        return Err(unsupported_kind(policy, request));
    };
    if kind == PodKind::Pod && request.operation == Operation::Update {
        // Other Pod UPDATEs (status, ephemeral containers, metadata) are accepted.
        if request.is_subresource(RESIZE) && ranges.judges_pods() {
            let object = request.object()?;
            if let Some(view) = PodView::read(object.value, kind)? {
                pods::judge(&view, ranges, Stage::Resize, &mut verdict)?;
            }
        }
        return Ok(verdict);
    }
    if ranges.judges_pods()
        && let Some(view) = pod_target(request, policy, PodTarget::CreateOnly)?
    {
        let stage = match view.kind.is_template() {
            true => Stage::Template,
            false => Stage::Create,
        };
        pods::judge(&view, ranges, stage, &mut verdict)?;
    }
    if kind == PodKind::StatefulSet && claim_templates_judged(request)? {
        claims::judge_templates(&request.object()?, ranges, &mut verdict)?;
    }
    Ok(verdict)
}

/// README rule 4 for a PersistentVolumeClaim: CREATE, and UPDATE when
/// `spec.resources.requests` changed.
fn claim_request(
    request: &AdmissionRequest,
    ranges: &LimitRanges,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    match request.operation {
        Operation::Create => {}
        Operation::Update => {
            let old = request.old_object()?;
            let new = request.object()?;
            if claims::requested(old.value) == claims::requested(new.value) {
                return Ok(());
            }
        }
        Operation::Delete | Operation::Connect => return Ok(()),
    }
    let object = request.object()?;
    let spec = policy_admission::gate::required(&object, "spec")?;
    claims::judge(&spec, ranges, verdict)
}

/// Whether a StatefulSet's `spec.volumeClaimTemplates` are judged: on CREATE, and on an
/// UPDATE that changed them.
fn claim_templates_judged(request: &AdmissionRequest) -> Result<bool, PolicyError> {
    let templates = |v: &serde_json::Value| v.pointer("/spec/volumeClaimTemplates").cloned();
    Ok(match request.operation {
        Operation::Create => true,
        Operation::Update => {
            templates(request.old_object()?.value) != templates(request.object()?.value)
        }
        Operation::Delete | Operation::Connect => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::settings::Validated;
    use serde_json::{Value, json};

    fn ranges() -> LimitRanges {
        LimitRanges::parse(&json!({"items": [
            {"limits": [{"type": "Pod", "min": {"cpu": "50m", "memory": "5Mi"}, "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "10Mi"},
                "default": {"cpu": "200m", "memory": "100Mi"}, "min": {"cpu": "50m", "memory": "5Mi"},
                "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]}
        ]}))
        .unwrap()
    }

    fn request(
        kind: Value,
        op: &str,
        object: Value,
        old: Value,
        sub: Option<&str>,
    ) -> AdmissionRequest {
        serde_json::from_value(json!({"kind": kind, "operation": op, "object": object,
            "oldObject": old, "subResource": sub}))
        .unwrap()
    }

    fn message(r: &AdmissionRequest) -> String {
        match judge("limit-range-policy", r, &ranges()) {
            Ok(v) => v.message(),
            Err(e) => format!("error: {e}"),
        }
    }

    fn claim(storage: &str) -> Value {
        json!({"spec": {"resources": {"requests": {"storage": storage}}}})
    }

    #[test]
    fn claims_on_create_and_expansion() {
        let pvc = json!({"group": "", "version": "v1", "kind": "PersistentVolumeClaim"});
        let r = request(pvc.clone(), "CREATE", claim("12Gi"), Value::Null, None);
        assert_eq!(
            message(&r),
            "spec.resources.requests.storage: \"12Gi\" exceeds the maximum 10Gi per PersistentVolumeClaim"
        );
        let r = request(pvc.clone(), "UPDATE", claim("20Gi"), claim("5Gi"), None);
        assert!(message(&r).contains("\"20Gi\" exceeds"));
        // an UPDATE leaving the requests alone is not judged (a claim older than the binding)
        let r = request(pvc.clone(), "UPDATE", claim("20Gi"), claim("20Gi"), None);
        assert_eq!(message(&r), "");
        let r = request(pvc, "CREATE", json!({"metadata": {}}), Value::Null, None);
        assert_eq!(message(&r), "error: spec: missing");
    }

    #[test]
    fn pod_updates_other_than_resize_are_accepted() {
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        let big = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}}]}});
        let r = request(pod.clone(), "UPDATE", big.clone(), big.clone(), None);
        assert_eq!(message(&r), "");
        let r = request(
            pod.clone(),
            "UPDATE",
            big.clone(),
            big.clone(),
            Some("status"),
        );
        assert_eq!(message(&r), "");
        let r = request(pod, "UPDATE", big.clone(), big, Some("resize"));
        assert!(message(&r).contains("\"2\" exceeds the maximum 1 per Container"));
    }

    #[test]
    fn statefulset_claim_templates() {
        let sts = json!({"group": "apps", "version": "v1", "kind": "StatefulSet"});
        let object = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "20Gi"}}}}]}});
        let r = request(sts.clone(), "CREATE", object.clone(), Value::Null, None);
        assert_eq!(
            message(&r),
            "spec.volumeClaimTemplates[0].spec.resources.requests.storage: \"20Gi\" exceeds the maximum 10Gi per PersistentVolumeClaim"
        );
        let mut scaled = object.clone();
        scaled["spec"]["replicas"] = json!(3);
        let r = request(sts, "UPDATE", scaled, object, None);
        assert_eq!(message(&r), "");
    }

    #[test]
    fn other_kinds_are_refused() {
        let r = request(
            json!({"group": "", "version": "v1", "kind": "Service"}),
            "CREATE",
            json!({}),
            Value::Null,
            None,
        );
        assert_eq!(
            message(&r),
            "error: limit-range-policy does not handle v1 Service"
        );
    }
}
