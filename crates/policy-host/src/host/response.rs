//! The response rules: how the guest's answer becomes an AdmissionResponse, as
//! policy-evaluator builds it (`AdmissionResponse::from_policy_validation_response`) and
//! policy-server constrains it (`validation_response_with_constraints`).
//!
//! * A mutated object for a request whose `object` is null (only DELETE requests have none)
//!   is refused with policy-evaluator's message and no code.
//! * Otherwise the patch is the JSON Patch from the request's object to the mutated object,
//!   both in canonical key order; an empty diff is no patch.
//! * A patch from a policy whose binding is not mutating (testdrive reads `mutating` from the
//!   policy's metadata, which is what a binding written from it says) is refused with
//!   policy-server's message and no code, and the patch is dropped.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::request::{canonical_cow, canonicalize};

/// Status of a rejected (or annotated) AdmissionResponse.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// Message shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HTTP-like status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// The AdmissionResponse the API server would receive, shaped like the
/// output of `kwctl run`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// UID of the request.
    pub uid: String,
    /// The verdict.
    pub allowed: bool,
    /// `JSONPatch` when [`AdmissionResponse::patch`] is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Base64 of the JSON Patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Message and code, when the policy gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResponseStatus>,
    /// Audit annotations returned by the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings returned by the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    /// The status message, if any.
    pub fn message(&self) -> Option<&str> {
        self.status.as_ref().and_then(|s| s.message.as_deref())
    }

    /// The status code, if any.
    pub fn code(&self) -> Option<u16> {
        self.status.as_ref().and_then(|s| s.code)
    }

    pub(super) fn reject(uid: String, message: String, code: u16) -> Self {
        AdmissionResponse {
            uid,
            allowed: false,
            status: Some(ResponseStatus {
                message: Some(message),
                code: Some(code),
            }),
            ..Default::default()
        }
    }
}

/// The outcome of one `validate` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// What the API server gets.
    pub response: AdmissionResponse,
    /// The decoded JSON Patch (an array of operations) when the policy
    /// mutated the object; `None` when nothing changed.
    pub patch: Option<Value>,
    /// The object returned by the policy, when it returned one (even if
    /// it equals the original), in canonical key order.
    pub mutated_object: Option<Value>,
    /// Every host-call error returned to the guest during the evaluation
    /// (`<namespace>/<operation>: <message>`), for diagnostics.
    pub host_call_errors: Vec<String>,
}

/// The answer of `validate_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsValidation {
    /// Whether the settings are valid.
    pub valid: bool,
    /// Why they are not.
    #[serde(default)]
    pub message: Option<String>,
}

/// What the guest's `validate` returns.
#[derive(Debug, Deserialize)]
pub(super) struct GuestResponse {
    accepted: bool,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    mutated_object: Option<Value>,
    #[serde(default)]
    audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
}

/// policy-evaluator's refusal of a mutation when the request has no object.
pub const NULL_OBJECT_MUTATION: &str = "Incoming object is null, which happens only with DELETE \
     operations, but the policy is attempting a mutation. This is not allowed";

/// policy-server's refusal of a patch from a policy whose binding does not mutate.
pub fn not_allowed_to_mutate(policy_id: &str) -> String {
    format!(
        "Request rejected by policy {policy_id}. The policy attempted to mutate the request, \
         but it is currently configured to not allow mutations."
    )
}

/// Builds the AdmissionResponse from the guest's answer (see the module docs for the rules).
pub(super) fn finish(
    uid: String,
    request: &Value,
    mut guest: GuestResponse,
    metadata: Option<&Metadata>,
) -> Result<Evaluation> {
    // The mutated object in canonical key order (sorted in place, not copied), as the
    // request object is sent: patches do not depend on the key order the policy keeps.
    let mut mutated_object = guest.mutated_object.take();
    if let Some(mutated) = &mut mutated_object {
        canonicalize(mutated);
    }
    let object = request.get("object").filter(|o| !o.is_null());
    let (response, patch) = respond(uid, object, mutated_object.as_ref(), guest, metadata)?;
    Ok(Evaluation {
        response,
        patch,
        mutated_object,
        host_call_errors: Vec::new(),
    })
}

/// The response to the guest's answer and the patch it carries, by the rules of the module
/// docs.
fn respond(
    uid: String,
    object: Option<&Value>,
    mutated: Option<&Value>,
    guest: GuestResponse,
    metadata: Option<&Metadata>,
) -> Result<(AdmissionResponse, Option<Value>)> {
    let Some(mutated) = mutated else {
        return Ok((response_of(uid, guest), None));
    };
    let Some(object) = object else {
        let message = NULL_OBJECT_MUTATION.to_owned();
        return Ok((rejected_without_code(uid, message), None));
    };
    let ops = super::patch::diff(&canonical_cow(object), mutated);
    if ops.0.is_empty() {
        return Ok((response_of(uid, guest), None));
    }
    if metadata.is_some_and(|m| !m.mutating) {
        let id = metadata
            .and_then(|m| m.annotations.get("io.kubewarden.policy.title"))
            .map_or("policy", String::as_str);
        return Ok((rejected_without_code(uid, not_allowed_to_mutate(id)), None));
    }
    let patch = serde_json::to_value(&ops)
        .map_err(|e| Error::Invalid(format!("cannot serialize patch: {e}")))?;
    let mut response = response_of(uid, guest);
    response.patch_type = Some("JSONPatch".to_owned());
    response.patch = Some(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    Ok((response, Some(patch)))
}

/// The response the guest's verdict, message, code, audit annotations and warnings make.
fn response_of(uid: String, guest: GuestResponse) -> AdmissionResponse {
    let status = (guest.message.is_some() || guest.code.is_some()).then_some(ResponseStatus {
        message: guest.message,
        code: guest.code,
    });
    AdmissionResponse {
        uid,
        allowed: guest.accepted,
        status,
        audit_annotations: guest.audit_annotations,
        warnings: guest.warnings,
        ..Default::default()
    }
}

/// A refusal by the host itself, which sets no code (the API server reports it as 403).
fn rejected_without_code(uid: String, message: String) -> AdmissionResponse {
    AdmissionResponse {
        uid,
        allowed: false,
        status: Some(ResponseStatus {
            message: Some(message),
            code: None,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guest(v: Value) -> GuestResponse {
        serde_json::from_value(v).unwrap()
    }

    fn meta(mutating: bool) -> Metadata {
        Metadata {
            mutating,
            ..Default::default()
        }
    }

    #[test]
    fn accepted_without_mutation() {
        let req = json!({"uid": "u1", "operation": "CREATE", "object": {"a": 1}});
        let e = finish("u1".into(), &req, guest(json!({"accepted": true})), None).unwrap();
        assert_eq!(
            serde_json::to_value(&e.response).unwrap(),
            json!({"uid": "u1", "allowed": true})
        );
        assert_eq!(e.patch, None);
    }

    #[test]
    fn rejection_keeps_message_code_and_warnings() {
        let req = json!({"uid": "u1", "operation": "CREATE"});
        let e = finish(
            "u1".into(),
            &req,
            guest(json!({"accepted": false, "message": "no", "code": 403, "warnings": ["w"], "audit_annotations": {"k": "v"}})),
            None,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&e.response).unwrap(),
            json!({"uid": "u1", "allowed": false, "status": {"message": "no", "code": 403},
                   "warnings": ["w"], "auditAnnotations": {"k": "v"}})
        );
    }

    #[test]
    fn mutation_becomes_a_json_patch() {
        let req = json!({"uid": "u", "operation": "CREATE",
                         "object": {"spec": {"a": 1, "list": [1]}, "keep": true}});
        let mutated = json!({"spec": {"a": 2, "list": [1, 2], "b": "x"}, "keep": true});
        let e = finish(
            "u".into(),
            &req,
            guest(json!({"accepted": true, "mutated_object": mutated})),
            Some(&meta(true)),
        )
        .unwrap();
        let patch = e.patch.clone().unwrap();
        // applying the patch to the original yields the mutated object
        let mut doc = req["object"].clone();
        let ops: json_patch::Patch = serde_json::from_value(patch.clone()).unwrap();
        json_patch::patch(&mut doc, &ops).unwrap();
        assert_eq!(doc, mutated);
        assert_eq!(e.response.patch_type.as_deref(), Some("JSONPatch"));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(e.response.patch.unwrap())
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&decoded).unwrap(), patch);
    }

    #[test]
    fn identical_mutated_object_is_no_patch() {
        let req = json!({"uid": "u", "operation": "CREATE", "object": {"a": 1}});
        let e = finish(
            "u".into(),
            &req,
            guest(json!({"accepted": true, "mutated_object": {"a": 1}})),
            Some(&meta(true)),
        )
        .unwrap();
        assert!(e.response.allowed);
        assert_eq!(e.patch, None);
        assert_eq!(e.response.patch, None);
        assert!(e.mutated_object.is_some());
    }

    #[test]
    fn mutation_of_a_null_object_is_refused_as_policy_evaluator_does() {
        let del = json!({"uid": "u", "operation": "DELETE", "object": null, "oldObject": {"a": 1}});
        let mutated = guest(json!({"accepted": true, "mutated_object": {"a": 2}}));
        let e = finish("u".into(), &del, mutated, Some(&meta(true))).unwrap();
        assert!(!e.response.allowed);
        assert_eq!(e.response.message(), Some(NULL_OBJECT_MUTATION));
        assert_eq!(e.response.code(), None);
        assert_eq!(e.patch, None);
        // a DELETE that carries an object (some clients send it) is diffed like any other
        let with_object = json!({"uid": "u", "operation": "DELETE", "object": {"a": 1}});
        let mutated = guest(json!({"accepted": true, "mutated_object": {"a": 2}}));
        let e = finish("u".into(), &with_object, mutated, Some(&meta(true))).unwrap();
        assert!(e.response.allowed);
        assert!(e.patch.is_some());
    }

    #[test]
    fn a_patch_from_a_binding_that_does_not_mutate_is_refused_as_policy_server_does() {
        let mut m = meta(false);
        m.annotations
            .insert("io.kubewarden.policy.title".into(), "p".into());
        let create = json!({"uid": "u", "operation": "CREATE", "object": {"a": 1}});
        let mutated = guest(json!({"accepted": true, "mutated_object": {"a": 2}}));
        let e = finish("u".into(), &create, mutated, Some(&m)).unwrap();
        assert!(!e.response.allowed);
        assert_eq!(e.response.code(), None);
        assert_eq!(
            e.response.message(),
            Some(not_allowed_to_mutate("p").as_str())
        );
        assert!(
            e.response
                .message()
                .unwrap()
                .starts_with("Request rejected by policy p.")
        );
        assert_eq!(e.patch, None);
        assert_eq!(e.response.patch, None);
        // the same object handed back is no patch, so nothing to refuse
        let same = guest(json!({"accepted": true, "mutated_object": {"a": 1}}));
        let e = finish("u".into(), &create, same, Some(&m)).unwrap();
        assert!(e.response.allowed);
    }
}
