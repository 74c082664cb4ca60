//! Which pod spec a pod policy judges for a request (`docs/semantics.md#request-handling`, `docs/semantics.md#pod-bearing-kinds`, `docs/semantics.md#create-and-update`): the Pod itself
//! on CREATE (and on UPDATE where the policy judges Pod updates), a workload's template on
//! CREATE and on UPDATEs that changed the template; nothing otherwise.
//!
//! ```
//! use policy_admission::workload::{PodTarget, pod_target};
//! # use policy_admission::request::AdmissionRequest;
//! # let request: AdmissionRequest = serde_json::from_value(serde_json::json!({
//! #   "kind": {"group": "apps", "version": "v1", "kind": "Deployment"}, "operation": "CREATE",
//! #   "object": {"spec": {"template": {"spec": {"containers": []}}}}})).unwrap();
//! match pod_target(&request, "demo-policy", PodTarget::CreateOnly).unwrap() {
//!     Some(view) => assert!(view.kind.is_template()),
//!     None => unreachable!(),
//! }
//! ```

use crate::pod::{PodKind, PodView, pod_spec_changed};
use crate::policy::unsupported_kind;
use crate::request::{AdmissionRequest, Operation};
use policy_decode::error::PolicyError;

/// Which Pod operations the policy judges (workload templates are always judged on
/// CREATE and on template-changing UPDATEs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodTarget {
    /// Pods only on CREATE (their judged fields are immutable afterwards).
    CreateOnly,
    /// Pods on CREATE, and on UPDATE when the pod spec changed.
    CreateAndUpdate,
}

/// The pod spec to judge, or `None` when the request needs no judgement (DELETE, CONNECT,
/// a Pod UPDATE the policy does not judge, an UPDATE leaving the spec or template alone, a
/// ReplicationController without template). A kind that is not pod-bearing is refused
/// (400) with the policy's name.
pub fn pod_target<'a>(
    request: &'a AdmissionRequest,
    policy: &str,
    pods: PodTarget,
) -> Result<Option<PodView<'a>>, PolicyError> {
    let kind = pod_kind(request, policy)?;
    match request.operation {
        Operation::Create => {}
        Operation::Update => {
            if kind == PodKind::Pod && pods == PodTarget::CreateOnly {
                return Ok(None);
            }
            let old = request.old_object()?;
            let new = request.object()?;
            if !pod_spec_changed(old.value, new.value, kind) {
                return Ok(None);
            }
        }
        Operation::Delete | Operation::Connect => return Ok(None),
    }
    let object = request.object()?;
    PodView::read(object.value, kind)
}

/// The kind step alone (`docs/semantics.md#request-handling`): the request's pod-bearing
/// kind, or the 400 of a policy that does not handle it. A policy with early accepts takes
/// this step before them, and reads the pod spec ([`pod_target`]) only after them.
pub fn pod_kind(request: &AdmissionRequest, policy: &str) -> Result<PodKind, PolicyError> {
    PodKind::of_request(request).ok_or_else(|| unsupported_kind(policy, request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn request(kind: Value, op: &str, object: Value, old: Value) -> AdmissionRequest {
        serde_json::from_value(
            json!({"kind": kind, "operation": op, "object": object, "oldObject": old}),
        )
        .unwrap()
    }

    #[test]
    fn targets() {
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        let dep = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
        let p1 = json!({"spec": {"containers": [], "x": 1}});
        let p2 = json!({"spec": {"containers": [], "x": 2}});
        let d1 = json!({"spec": {"replicas": 1, "template": {"spec": {"x": 1}}}});
        let d2 = json!({"spec": {"replicas": 2, "template": {"spec": {"x": 1}}}});
        let d3 = json!({"spec": {"replicas": 2, "template": {"spec": {"x": 2}}}});
        let r = request(pod.clone(), "CREATE", p1.clone(), Value::Null);
        assert!(
            pod_target(&r, "p", PodTarget::CreateOnly)
                .unwrap()
                .is_some()
        );
        let r = request(pod.clone(), "UPDATE", p2.clone(), p1.clone());
        assert!(
            pod_target(&r, "p", PodTarget::CreateOnly)
                .unwrap()
                .is_none()
        );
        assert!(
            pod_target(&r, "p", PodTarget::CreateAndUpdate)
                .unwrap()
                .is_some()
        );
        let r = request(pod, "UPDATE", p1.clone(), p1);
        assert!(
            pod_target(&r, "p", PodTarget::CreateAndUpdate)
                .unwrap()
                .is_none()
        );
        let r = request(dep.clone(), "UPDATE", d2.clone(), d1.clone());
        assert!(
            pod_target(&r, "p", PodTarget::CreateOnly)
                .unwrap()
                .is_none()
        );
        let r = request(dep.clone(), "UPDATE", d3, d1);
        assert!(
            pod_target(&r, "p", PodTarget::CreateOnly)
                .unwrap()
                .is_some()
        );
        let r = request(dep, "DELETE", Value::Null, d2);
        assert!(
            pod_target(&r, "p", PodTarget::CreateOnly)
                .unwrap()
                .is_none()
        );
        let r = request(
            json!({"group": "", "version": "v1", "kind": "Service"}),
            "CREATE",
            json!({}),
            Value::Null,
        );
        assert_eq!(
            pod_target(&r, "p", PodTarget::CreateOnly)
                .unwrap_err()
                .to_string(),
            "p does not handle v1 Service"
        );
    }
}
