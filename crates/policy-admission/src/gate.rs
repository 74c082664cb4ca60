//! The gate in front of a policy's rules (`docs/semantics.md#request-handling`,
//! `docs/semantics.md#create-and-update`): which kinds the policy handles (any other is
//! refused, 400), which operations it judges, whether an UPDATE changed what the rules read,
//! and the view of the object the rules judge. Pod-bearing kinds pass the same steps in
//! [`crate::workload::pod_target`].
//!
//! ```
//! use policy_admission::gate::{Gate, HandledKind};
//! use policy_admission::request::{AdmissionRequest, Operation};
//! # let request: AdmissionRequest = serde_json::from_value(serde_json::json!({
//! #   "kind": {"group": "gateway.networking.k8s.io", "version": "v1", "kind": "Gateway"},
//! #   "operation": "CREATE", "object": {"spec": {"gatewayClassName": "public"}}})).unwrap();
//! const GATEWAY: [HandledKind; 1] = [HandledKind {
//!     group: "gateway.networking.k8s.io",
//!     versions: &["v1", "v1beta1"],
//!     kind: "Gateway",
//! }];
//! let gate = Gate { kinds: &GATEWAY, operations: &[Operation::Create, Operation::Update] };
//! let admitted = gate.admit("demo-policy", &request).unwrap().unwrap();
//! assert!(admitted.changed(|o| o.pointer("/spec/gatewayClassName").cloned()).unwrap());
//! assert_eq!(admitted.spec().unwrap().get_str("gatewayClassName").unwrap(), Some("public"));
//! ```

use serde_json::Value;

use crate::policy::unsupported_kind;
use crate::request::{AdmissionRequest, GroupVersionKind, Operation};
use policy_decode::error::PolicyError;
use policy_decode::json::At;

/// A kind a policy handles: its API group, the served versions it judges, and the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandledKind {
    /// API group (`""` for core).
    pub group: &'static str,
    /// The versions judged.
    pub versions: &'static [&'static str],
    /// Kind.
    pub kind: &'static str,
}

impl HandledKind {
    /// Whether the request's kind is this one at a judged version.
    pub fn matches(&self, gvk: &GroupVersionKind) -> bool {
        gvk.group == self.group && gvk.kind == self.kind && self.versions.contains(&&*gvk.version)
    }
}

/// `v1 Namespace` (cluster-scoped: its policies are bound cluster-wide).
pub const NAMESPACE: HandledKind = HandledKind {
    group: "",
    versions: &["v1"],
    kind: "Namespace",
};

/// OpenShift's `project.openshift.io/v1 Project`: a view of its Namespace, created for a
/// ProjectRequest by the project API's own identity.
pub const PROJECT: HandledKind = HandledKind {
    group: "project.openshift.io",
    versions: &["v1"],
    kind: "Project",
};

/// OpenShift's `project.openshift.io/v1 ProjectRequest`: a user's request for a project,
/// whose labels the API server does not carry into it.
pub const PROJECT_REQUEST: HandledKind = HandledKind {
    group: "project.openshift.io",
    versions: &["v1"],
    kind: "ProjectRequest",
};

/// The kinds a policy handles and the operations it judges.
#[derive(Clone, Copy, Debug)]
pub struct Gate {
    /// The kinds handled; any other is refused (400) with the policy's name.
    pub kinds: &'static [HandledKind],
    /// The operations judged; any other is accepted.
    pub operations: &'static [Operation],
}

/// A request past the kind and operation steps of a [`Gate`].
#[derive(Clone, Debug)]
pub struct Admitted<'r> {
    /// The handled kind the request is for.
    pub kind: &'static HandledKind,
    /// The request.
    pub request: &'r AdmissionRequest,
    /// The request's object (a JSON object).
    pub object: At<'r>,
}

impl Gate {
    /// The kind step (a kind not handled is refused, 400) and the operation step (`None`
    /// for an operation not judged); the object must be a JSON object (400 otherwise).
    pub fn admit<'r>(
        &self,
        policy: &str,
        request: &'r AdmissionRequest,
    ) -> Result<Option<Admitted<'r>>, PolicyError> {
        let Some(kind) = self.kinds.iter().find(|k| k.matches(&request.kind)) else {
            return Err(unsupported_kind(policy, request));
        };
        if !self.operations.contains(&request.operation) {
            return Ok(None);
        }
        Ok(Some(Admitted {
            kind,
            request,
            object: request.object()?,
        }))
    }
}

impl<'r> Admitted<'r> {
    /// The changed step: on UPDATE, whether `part` differs between `oldObject` (which must
    /// be a JSON object, 400 otherwise) and `object`; `true` for every other operation.
    pub fn changed<T, F>(&self, part: F) -> Result<bool, PolicyError>
    where
        T: PartialEq,
        F: Fn(&'r Value) -> T,
    {
        if self.request.operation != Operation::Update {
            return Ok(true);
        }
        let old = self.request.old_object()?;
        Ok(part(old.value) != part(self.object.value))
    }

    /// The view step: the object's `spec` (400 `spec: missing` when absent).
    pub fn spec(&self) -> Result<At<'r>, PolicyError> {
        required(&self.object, "spec")
    }
}

/// The object at `field` below `at`, which must be present (400 `<path>: missing`).
pub fn required<'a>(at: &At<'a>, field: &str) -> Result<At<'a>, PolicyError> {
    at.get_object(field)?
        .ok_or_else(|| PolicyError::malformed(&at.path.field(field), "missing"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KINDS: [HandledKind; 2] = [
        HandledKind {
            group: "g.io",
            versions: &["v1", "v1beta1"],
            kind: "Thing",
        },
        HandledKind {
            group: "",
            versions: &["v1"],
            kind: "Other",
        },
    ];
    const GATE: Gate = Gate {
        kinds: &KINDS,
        operations: &[Operation::Create, Operation::Update],
    };

    fn request(
        group: &str,
        version: &str,
        op: &str,
        object: Value,
        old: Value,
    ) -> AdmissionRequest {
        serde_json::from_value(
            json!({"kind": {"group": group, "version": version, "kind": "Thing"},
            "operation": op, "object": object, "oldObject": old}),
        )
        .unwrap()
    }

    #[test]
    fn kind_step_refuses_what_is_not_handled() {
        let r = request("g.io", "v2", "CREATE", json!({}), Value::Null);
        assert_eq!(
            GATE.admit("p", &r).unwrap_err().to_string(),
            "p does not handle g.io/v2 Thing"
        );
        let r = request("g.io", "v1beta1", "CREATE", json!({}), Value::Null);
        assert_eq!(GATE.admit("p", &r).unwrap().unwrap().kind, &KINDS[0]);
    }

    #[test]
    fn operation_step_accepts_what_is_not_judged() {
        let r = request("g.io", "v1", "DELETE", Value::Null, json!({}));
        assert!(GATE.admit("p", &r).unwrap().is_none());
    }

    #[test]
    fn changed_step_compares_the_part_on_update_only() {
        let name = |o: &Value| o.pointer("/spec/name").cloned();
        let same = request(
            "g.io",
            "v1",
            "UPDATE",
            json!({"spec": {"name": "a", "x": 1}}),
            json!({"spec": {"name": "a"}}),
        );
        assert!(
            !GATE
                .admit("p", &same)
                .unwrap()
                .unwrap()
                .changed(name)
                .unwrap()
        );
        let other = request(
            "g.io",
            "v1",
            "UPDATE",
            json!({"spec": {"name": "b"}}),
            json!({"spec": {"name": "a"}}),
        );
        assert!(
            GATE.admit("p", &other)
                .unwrap()
                .unwrap()
                .changed(name)
                .unwrap()
        );
        let create = request(
            "g.io",
            "v1",
            "CREATE",
            json!({"spec": {"name": "a"}}),
            Value::Null,
        );
        assert!(
            GATE.admit("p", &create)
                .unwrap()
                .unwrap()
                .changed(name)
                .unwrap()
        );
        let no_old = request("g.io", "v1", "UPDATE", json!({"spec": {}}), Value::Null);
        let e = GATE
            .admit("p", &no_old)
            .unwrap()
            .unwrap()
            .changed(name)
            .unwrap_err();
        assert_eq!(e.to_string(), "request.oldObject: missing");
    }

    #[test]
    fn view_step_requires_the_spec() {
        let r = request("g.io", "v1", "CREATE", json!({"metadata": {}}), Value::Null);
        let e = GATE.admit("p", &r).unwrap().unwrap().spec().unwrap_err();
        assert_eq!((e.code(), e.to_string()), (400, "spec: missing".to_owned()));
    }
}
