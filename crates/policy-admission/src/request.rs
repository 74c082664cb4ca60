//! The admission request as the policy sees it: a typed envelope with the objects kept as
//! generic JSON (`docs/semantics.md#request-handling`).

use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;
use policy_decode::settings::Raw;
use policy_decode::strict::Refusing;

/// The operation of an admission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Operation {
    /// `CREATE`
    #[serde(rename = "CREATE")]
    Create,
    /// `UPDATE`
    #[serde(rename = "UPDATE")]
    Update,
    /// `DELETE`
    #[serde(rename = "DELETE")]
    Delete,
    /// `CONNECT`
    #[serde(rename = "CONNECT")]
    Connect,
}

/// Group, version and kind (or resource) of the request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct GroupVersionKind {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind (`kind`) or plural resource (`resource`).
    #[serde(alias = "resource")]
    pub kind: String,
}

impl GroupVersionKind {
    /// `group/version`, or `version` for the core group.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The requesting user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct UserInfo {
    /// Username (`system:serviceaccount:<ns>:<name>` for service accounts).
    pub username: String,
    /// Groups the user belongs to.
    pub groups: BTreeSet<String>,
}

impl UserInfo {
    /// The namespace and name when the user is a service account.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        let rest = self.username.strip_prefix("system:serviceaccount:")?;
        let (ns, name) = rest.split_once(':')?;
        if ns.is_empty() || name.is_empty() || name.contains(':') {
            return None;
        }
        Some((ns, name))
    }

    /// How messages name the requester: `user "bob"` or `service account "ns:sa"`.
    pub fn describe(&self) -> String {
        match self.service_account() {
            Some((ns, name)) => format!("service account \"{ns}:{name}\""),
            None => format!("user {:?}", self.username),
        }
    }
}

/// An admission/v1 AdmissionRequest (the fields policies read).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Request UID.
    #[serde(default)]
    pub uid: String,
    /// Kind of the object.
    pub kind: GroupVersionKind,
    /// Resource of the object.
    #[serde(default)]
    pub resource: GroupVersionKind,
    /// Subresource (`ephemeralcontainers`, `status`, ...), empty when none.
    #[serde(default)]
    pub sub_resource: Option<String>,
    /// Object name (may be empty on CREATE with generateName).
    #[serde(default)]
    pub name: String,
    /// Request namespace.
    #[serde(default)]
    pub namespace: String,
    /// The operation.
    pub operation: Operation,
    /// The requester (absent in audit-scanner requests).
    #[serde(default)]
    pub user_info: UserInfo,
    /// The new object (`null` on DELETE).
    #[serde(default)]
    pub object: Value,
    /// The old object (UPDATE, DELETE); read it through [`AdmissionRequest::old_object`],
    /// which refuses a missing or non-object `oldObject` (400).
    #[serde(default)]
    old_object: Value,
    /// Whether this is a dry run (judged as a real request).
    #[serde(default)]
    pub dry_run: bool,
}

impl AdmissionRequest {
    /// The object, which must be a JSON object (400 otherwise).
    pub fn object(&self) -> Result<At<'_>, PolicyError> {
        require_object(&self.object, "object")
    }

    /// The old object, which must be a JSON object (400 otherwise).
    pub fn old_object(&self) -> Result<At<'_>, PolicyError> {
        require_object(&self.old_object, "oldObject")
    }

    /// Whether the request carries an `oldObject` (anything but absent or `null`).
    pub fn has_old_object(&self) -> bool {
        !self.old_object.is_null()
    }

    /// The envelope (`docs/semantics.md#request-handling`), checked by the core for every
    /// judged request whoever sends it, before any early accept: `object` is a JSON object on
    /// CREATE and UPDATE, `oldObject` on UPDATE and on a DELETE that carries one (400 naming
    /// `request.object` / `request.oldObject`), and the request judges one namespace
    /// ([`AdmissionRequest::object_namespace`]). The kind step is each policy's own, and
    /// comes before its early accepts too.
    ///
    /// ```
    /// # use policy_admission::request::AdmissionRequest;
    /// let request: AdmissionRequest = serde_json::from_value(serde_json::json!({
    ///     "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "UPDATE",
    ///     "object": {"metadata": {"name": "p"}}, "oldObject": [1]})).unwrap();
    /// assert_eq!(request.envelope().unwrap_err().to_string(),
    ///     "request.oldObject: expected an object");
    /// ```
    pub fn envelope(&self) -> Result<(), PolicyError> {
        match self.operation {
            Operation::Create => {
                self.object()?;
            }
            Operation::Update => {
                self.object()?;
                self.old_object()?;
            }
            Operation::Delete if self.has_old_object() => {
                self.old_object()?;
            }
            Operation::Delete | Operation::Connect => {}
        }
        self.object_namespace().map(|_| ())
    }

    /// The namespace of the object (`docs/semantics.md#request-handling`): `metadata.namespace`
    /// of `object` (of `oldObject` when there is no object: DELETE), else the request's
    /// namespace; `None` when all are empty. The one accessor every policy uses: a
    /// `metadata.namespace` that is not a string, or two namespaces that differ (the object's,
    /// the old object's, the request's), make the request malformed (400), so that no policy
    /// judges one namespace and looks up another.
    ///
    /// ```
    /// # use policy_admission::request::AdmissionRequest;
    /// let request: AdmissionRequest = serde_json::from_value(serde_json::json!({
    ///     "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
    ///     "namespace": "team-a", "object": {"metadata": {"namespace": "team-b"}}})).unwrap();
    /// assert_eq!(request.object_namespace().unwrap_err().to_string(),
    ///     "metadata.namespace: \"team-b\" differs from request.namespace \"team-a\"; a request judges one namespace");
    /// ```
    pub fn object_namespace(&self) -> Result<Option<&str>, PolicyError> {
        let new = metadata_namespace(&self.object, FieldPath::empty())?;
        let old = metadata_namespace(&self.old_object, FieldPath::root("oldObject"))?;
        let request = Some(self.namespace.as_str())
            .filter(|s| !s.is_empty())
            .map(|n| (n, FieldPath::root("request").field("namespace")));
        let mut chosen: Option<(&str, FieldPath)> = None;
        for (namespace, path) in [new, old, request].into_iter().flatten() {
            match &chosen {
                None => chosen = Some((namespace, path)),
                Some((first, _)) if *first == namespace => {}
                Some((first, first_path)) => {
                    return Err(PolicyError::malformed(
                        first_path,
                        format!(
                            "{first:?} differs from {path} {namespace:?}; a request judges one namespace"
                        ),
                    ));
                }
            }
        }
        Ok(chosen.map(|(namespace, _)| namespace))
    }

    /// The namespace of a namespaced object for a rule that depends on it (bindings by
    /// namespace, tenant attribution), from [`AdmissionRequest::object_namespace`]: without
    /// one the rule cannot be judged, which is a 400 ([`missing_namespace`]), never "unbound".
    pub fn namespace(&self) -> Result<&str, PolicyError> {
        self.object_namespace()?.ok_or_else(missing_namespace)
    }

    /// Whether this is the audit scanner's request for an existing object
    /// (`docs/semantics.md#audit`): a CREATE without `oldObject` and with an empty
    /// `userInfo.username`, which the API server never sends (anonymous requests are
    /// `system:anonymous`).
    ///
    /// ```
    /// # use policy_admission::request::AdmissionRequest;
    /// let audit: AdmissionRequest = serde_json::from_value(serde_json::json!({
    ///     "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
    ///     "object": {"metadata": {"name": "p"}}})).unwrap();
    /// assert!(audit.is_audit());
    /// let api: AdmissionRequest = serde_json::from_value(serde_json::json!({
    ///     "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
    ///     "userInfo": {"username": "system:anonymous"}, "object": {}})).unwrap();
    /// assert!(!api.is_audit());
    /// ```
    pub fn is_audit(&self) -> bool {
        self.operation == Operation::Create
            && self.user_info.username.is_empty()
            && !self.has_old_object()
    }

    /// Whether the request targets subresource `name`.
    pub fn is_subresource(&self, name: &str) -> bool {
        self.sub_resource.as_deref() == Some(name)
    }
}

/// `metadata.namespace` of an object (the path of `metadata` is `root.metadata`) with its
/// path: `None` when there is no object, or it has none or an empty one; a non-string is
/// malformed.
fn metadata_namespace(
    object: &Value,
    root: FieldPath,
) -> Result<Option<(&str, FieldPath)>, PolicyError> {
    if !object.is_object() {
        return Ok(None);
    }
    let Some(metadata) = At::new(object, root).get_object("metadata")? else {
        return Ok(None);
    };
    Ok(metadata
        .get_str("namespace")?
        .filter(|n| !n.is_empty())
        .map(|n| (n, metadata.path.field("namespace"))))
}

/// The rejection for a namespaced object without namespace, where a rule depends on it.
pub fn missing_namespace() -> PolicyError {
    PolicyError::malformed(
        &FieldPath::root("metadata").field("namespace"),
        "missing, and request.namespace is empty: the object's namespace is needed to judge it",
    )
}

fn require_object<'a>(value: &'a Value, field: &str) -> Result<At<'a>, PolicyError> {
    match value {
        Value::Object(_) => Ok(At::new(value, FieldPath::empty())),
        Value::Null => Err(PolicyError::malformed(
            &FieldPath::root("request").field(field),
            "missing",
        )),
        _ => Err(PolicyError::malformed(
            &FieldPath::root("request").field(field),
            "expected an object",
        )),
    }
}

/// The `validate` payload: the request and the raw settings (borrowed from the payload, to
/// be decoded by the policy straight into its typed settings).
#[derive(Debug, Deserialize)]
pub struct ValidatePayload<'a> {
    /// The admission request.
    pub request: AdmissionRequest,
    /// The settings as sent by the host (`None` when absent).
    #[serde(default, borrow)]
    pub settings: Option<&'a RawValue>,
}

impl<'a> ValidatePayload<'a> {
    /// Decodes a `validate` payload; an undecodable request is a 400 naming the field.
    ///
    /// The payload is decoded once without tracking paths; only a failure is decoded again
    /// to name the offending field.
    pub fn decode(payload: &'a [u8]) -> Result<Self, PolicyError> {
        if let Ok(text) = std::str::from_utf8(payload)
            && let Ok(p) = Self::deserialize(&mut serde_json::Deserializer::from_str(text))
        {
            return Ok(p);
        }
        let de = &mut serde_json::Deserializer::from_slice(payload);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            PolicyError::malformed(&FieldPath::dotted(&path), e.into_inner().to_string())
        })
    }

    /// The settings (`null` when absent).
    pub fn settings(&self) -> Raw<'a> {
        match self.settings {
            Some(raw) => Raw::Json(raw.get()),
            None => Raw::Json("null"),
        }
    }
}

/// A `validate` payload decoded in one pass (README "What every policy guarantees": cost):
/// the request, then the settings straight into the policy's raw settings type `R` — or
/// skipped when the operation is not judged. Hosts send the request first; settings that
/// come first are kept as text and decoded once the operation is known.
#[derive(Debug)]
pub struct OnePassPayload<'a, R> {
    /// The admission request.
    pub request: AdmissionRequest,
    /// The settings.
    pub settings: PayloadSettings<'a, R>,
}

/// The settings of a [`OnePassPayload`].
#[derive(Debug)]
pub enum PayloadSettings<'a, R> {
    /// Not read: the operation is not judged.
    Skipped,
    /// Decoded; `None` when absent or `null` (read as `{}`).
    Decoded(Option<R>),
    /// Sent before the request: the text, to be decoded if the operation is judged.
    Deferred(Option<&'a RawValue>),
}

impl<'a, R: DeserializeOwned> OnePassPayload<'a, R> {
    /// Decodes `payload`, reading the settings only for an operation in `judged`; `None`
    /// when anything does not decode (decode again with [`ValidatePayload::decode`] and the
    /// policy's settings parser to name the problem).
    pub fn decode(payload: &'a [u8], judged: &[Operation]) -> Option<Self> {
        let text = std::str::from_utf8(payload).ok()?;
        let mut de = serde_json::Deserializer::from_str(text);
        let seed = OnePassSeed {
            judged,
            raw: PhantomData,
        };
        let decoded = seed.deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(decoded)
    }
}

struct OnePassSeed<'j, R> {
    judged: &'j [Operation],
    raw: PhantomData<R>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum PayloadField {
    Request,
    Settings,
    #[serde(other)]
    Other,
}

impl<'de, R: DeserializeOwned> DeserializeSeed<'de> for OnePassSeed<'_, R> {
    type Value = OnePassPayload<'de, R>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, R: DeserializeOwned> Visitor<'de> for OnePassSeed<'_, R> {
    type Value = OnePassPayload<'de, R>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a validate payload")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut request: Option<AdmissionRequest> = None;
        let mut settings: Option<PayloadSettings<'de, R>> = None;
        while let Some(field) = map.next_key::<PayloadField>()? {
            match field {
                PayloadField::Request if request.is_some() => {
                    return Err(A::Error::duplicate_field("request"));
                }
                PayloadField::Request => request = Some(map.next_value()?),
                PayloadField::Settings if settings.is_some() => {
                    return Err(A::Error::duplicate_field("settings"));
                }
                PayloadField::Settings => {
                    settings = Some(match &request {
                        Some(r) if !self.judged.contains(&r.operation) => {
                            map.next_value::<IgnoredAny>()?;
                            PayloadSettings::Skipped
                        }
                        Some(_) => PayloadSettings::Decoded(
                            map.next_value::<Option<Refusing<R>>>()?.map(|r| r.0),
                        ),
                        None => PayloadSettings::Deferred(map.next_value()?),
                    });
                }
                PayloadField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let request = request.ok_or_else(|| A::Error::missing_field("request"))?;
        let settings = match settings {
            Some(PayloadSettings::Deferred(_)) | None
                if !self.judged.contains(&request.operation) =>
            {
                PayloadSettings::Skipped
            }
            Some(s) => s,
            None => PayloadSettings::Decoded(None),
        };
        Ok(OnePassPayload { request, settings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn payload(request: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"request": request, "settings": {}})).unwrap()
    }

    #[test]
    fn decodes_minimal_request() {
        let bytes = payload(json!({
            "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE", "namespace": "ns",
            "userInfo": {"username": "system:serviceaccount:kube-system:job-controller", "groups": ["a"]},
            "object": {"metadata": {"name": "p"}}
        }));
        let p = ValidatePayload::decode(&bytes).unwrap();
        assert_eq!(p.request.kind.kind, "Pod");
        assert_eq!(p.request.resource.kind, "pods");
        assert_eq!(p.request.operation, Operation::Create);
        assert_eq!(
            p.request.user_info.service_account(),
            Some(("kube-system", "job-controller"))
        );
        assert_eq!(p.request.object_namespace(), Ok(Some("ns")));
        assert_eq!(p.request.namespace().unwrap(), "ns");
    }

    #[test]
    fn undecodable_request_names_field() {
        let err = ValidatePayload::decode(&payload(json!({
            "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "PATCH"
        })))
        .unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(err.to_string().starts_with("request.operation:"), "{err}");
    }

    #[test]
    fn missing_object_is_malformed() {
        let bytes = payload(json!({
            "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE"
        }));
        let p = ValidatePayload::decode(&bytes).unwrap();
        assert_eq!(
            p.request.object().unwrap_err().to_string(),
            "request.object: missing"
        );
    }

    #[test]
    fn namespace_from_metadata_then_request_else_400() {
        let decode = |request: Value| ValidatePayload::decode(&payload(request)).unwrap().request;
        let kind = json!({"group": "", "version": "v1", "kind": "Pod"});
        let r = decode(json!({"kind": kind, "operation": "CREATE", "namespace": "",
            "object": {"metadata": {"namespace": "meta"}}}));
        assert_eq!(r.namespace().unwrap(), "meta");
        let r = decode(
            json!({"kind": kind, "operation": "CREATE", "namespace": "req",
            "object": {"metadata": {"namespace": ""}}}),
        );
        assert_eq!(r.namespace().unwrap(), "req");
        let r = decode(json!({"kind": kind, "operation": "CREATE", "namespace": "",
            "object": {"metadata": {}}}));
        assert_eq!(r.object_namespace(), Ok(None));
        let err = r.namespace().unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(
            err.to_string().starts_with("metadata.namespace: missing"),
            "{err}"
        );
    }

    #[test]
    fn one_namespace_per_request() {
        let decode = |request: Value| ValidatePayload::decode(&payload(request)).unwrap().request;
        let kind = json!({"group": "", "version": "v1", "kind": "Pod"});
        let message = |request: Value| decode(request).namespace().unwrap_err().to_string();
        assert_eq!(
            message(
                json!({"kind": kind, "operation": "CREATE", "namespace": "req",
                "object": {"metadata": {"namespace": "meta"}}})
            ),
            "metadata.namespace: \"meta\" differs from request.namespace \"req\"; a request judges one namespace"
        );
        assert_eq!(
            message(
                json!({"kind": kind, "operation": "UPDATE", "namespace": "a",
                "object": {"metadata": {"namespace": "a"}}, "oldObject": {"metadata": {"namespace": "b"}}})
            ),
            "metadata.namespace: \"a\" differs from oldObject.metadata.namespace \"b\"; a request judges one namespace"
        );
        // DELETE: the old object's namespace, checked against the request's
        let r = decode(json!({"kind": kind, "operation": "DELETE", "namespace": "",
            "oldObject": {"metadata": {"namespace": "gone"}}}));
        assert_eq!(r.namespace().unwrap(), "gone");
        assert_eq!(
            message(
                json!({"kind": kind, "operation": "DELETE", "namespace": "x",
                "oldObject": {"metadata": {"namespace": "gone"}}})
            ),
            "oldObject.metadata.namespace: \"gone\" differs from request.namespace \"x\"; a request judges one namespace"
        );
        assert_eq!(
            message(
                json!({"kind": kind, "operation": "CREATE", "namespace": "x",
                "object": {"metadata": {"namespace": 7}}})
            ),
            "metadata.namespace: expected a string"
        );
    }

    #[test]
    fn old_object_is_checked() {
        let decode = |request: Value| ValidatePayload::decode(&payload(request)).unwrap().request;
        let kind = json!({"group": "", "version": "v1", "kind": "Pod"});
        let r = decode(json!({"kind": kind, "operation": "UPDATE", "object": {}}));
        assert_eq!(
            r.old_object().unwrap_err().to_string(),
            "request.oldObject: missing"
        );
        let r =
            decode(json!({"kind": kind, "operation": "UPDATE", "object": {}, "oldObject": [1]}));
        assert_eq!(
            r.old_object().unwrap_err().to_string(),
            "request.oldObject: expected an object"
        );
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Names {
        allowed: Vec<String>,
    }

    const JUDGED: &[Operation] = &[Operation::Create, Operation::Update];

    fn one_pass(text: &str) -> Option<OnePassPayload<'_, Names>> {
        OnePassPayload::decode(text.as_bytes(), JUDGED)
    }

    const POD: &str = r#"{"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE", "object": {}}"#;
    const DELETE: &str =
        r#"{"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "DELETE"}"#;

    #[test]
    fn one_pass_decodes_the_settings_of_judged_operations() {
        let text = format!(r#"{{"request": {POD}, "settings": {{"allowed": ["a"]}}}}"#);
        let p = one_pass(&text).unwrap();
        assert_eq!(p.request.operation, Operation::Create);
        assert!(
            matches!(p.settings, PayloadSettings::Decoded(Some(Names { ref allowed })) if allowed == &["a"])
        );
        for text in [
            format!(r#"{{"request": {POD}, "settings": null}}"#),
            format!(r#"{{"request": {POD}}}"#),
        ] {
            assert!(
                matches!(
                    one_pass(&text).unwrap().settings,
                    PayloadSettings::Decoded(None)
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn one_pass_skips_the_settings_of_other_operations() {
        // Settings that would not decode are not even read.
        for text in [
            format!(r#"{{"request": {DELETE}, "settings": {{"allowed": 1}}}}"#),
            format!(r#"{{"settings": {{"allowed": 1}}, "request": {DELETE}}}"#),
            format!(r#"{{"request": {DELETE}}}"#),
        ] {
            assert!(
                matches!(one_pass(&text).unwrap().settings, PayloadSettings::Skipped),
                "{text}"
            );
        }
    }

    #[test]
    fn one_pass_defers_settings_sent_first() {
        let text =
            format!(r#"{{"settings": {{"allowed": ["a"]}}, "extra": [1], "request": {POD}}}"#);
        match one_pass(&text).unwrap().settings {
            PayloadSettings::Deferred(Some(raw)) => assert_eq!(raw.get(), r#"{"allowed": ["a"]}"#),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_pass_gives_up_on_anything_malformed() {
        for text in [
            format!(r#"{{"request": {POD}, "settings": {{"allowed": 1}}}}"#),
            format!(r#"{{"request": {POD}, "settings": {{"other": []}}}}"#),
            format!(r#"{{"request": {POD}, "request": {POD}}}"#),
            format!(r#"{{"request": {POD}, "settings": {{"allowed": []}}, "settings": null}}"#),
            format!(r#"{{"request": {POD}}} trailing"#),
            r#"{"settings": {"allowed": []}}"#.to_owned(),
            r#"{"request": {"operation": "PATCH"}}"#.to_owned(),
            "[]".to_owned(),
        ] {
            assert!(one_pass(&text).is_none(), "{text}");
        }
        assert!(OnePassPayload::<Names>::decode(b"\xff", JUDGED).is_none());
    }

    #[test]
    fn describes_requesters() {
        let u = UserInfo {
            username: "bob".into(),
            groups: BTreeSet::new(),
        };
        assert_eq!(u.describe(), "user \"bob\"");
        let u = UserInfo {
            username: "system:serviceaccount:a:b".into(),
            groups: BTreeSet::new(),
        };
        assert_eq!(u.describe(), "service account \"a:b\"");
    }
}
