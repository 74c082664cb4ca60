//! The policy contract and its wasm entry points: a policy crate implements [`Policy`] and
//! calls [`export_policy!`](crate::export_policy); the same [`evaluate`] runs natively in tests and benchmarks.

pub use kubewarden_policy_sdk::response::ValidationResponse;
pub use kubewarden_policy_sdk::settings::SettingsValidationResponse;

use crate::cluster::{Cluster, HostCapabilities, Lookups};
use crate::request::{
    AdmissionRequest, OnePassPayload, Operation, PayloadSettings, ValidatePayload,
};
use crate::verdict::{Mode, Verdict, error_response};
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::settings::{Raw, Validated};

/// The settings of policy `P` as written.
type Written<P> = <<P as Policy>::Settings as Validated>::Written;

/// One admission policy: settings parsing plus the decision.
pub trait Policy {
    /// The policy's name, used in messages (`pod-toleration-policy`).
    const NAME: &'static str;
    /// Validated settings, built from the settings as written; errors name the settings path.
    /// Inside `validate` they are built in re-read mode ([`policy_decode::settings::is_reread`]).
    type Settings: Validated;
    /// The operations the policy judges; every other operation is accepted before the
    /// settings are read (README "What every policy guarantees": cost).
    const OPERATIONS: &'static [Operation] = &[Operation::Create, Operation::Update];
    /// The host calls the policy makes; exactly its `metadata.yml` `hostCapabilities`
    /// (`testdrive check` compares them with what the module contains).
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::NONE;

    /// Whether violations reject or warn (`docs/semantics.md#warnings-and-mode`); `Enforce` unless the policy has `mode`.
    fn mode(_settings: &Self::Settings) -> Mode {
        Mode::Enforce
    }

    /// Judges one request.
    fn validate(
        request: &AdmissionRequest,
        settings: &Self::Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError>;
}

/// The answer to `validate_settings` for raw settings bytes.
pub fn validate_settings<P: Policy>(payload: &[u8]) -> SettingsValidationResponse {
    let text = if payload.is_empty() {
        Ok("null")
    } else {
        std::str::from_utf8(payload).map_err(|e| e.to_string())
    };
    let parsed = text.and_then(|t| {
        serde_json::from_str::<serde::de::IgnoredAny>(t)
            .map(|_| t)
            .map_err(|e| e.to_string())
    });
    let result = match parsed {
        Ok(text) => P::Settings::parse(Raw::Json(text)).map(|_| ()),
        Err(e) => Err(SettingsError::new(
            "",
            format!("settings are not JSON: {e}"),
        )),
    };
    match result {
        Ok(()) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(e) => SettingsValidationResponse {
            valid: false,
            message: Some(e.to_string()),
        },
    }
}

/// The answer to `validate` for a raw payload, with lookups answered by `cluster`.
///
/// The payload is decoded in one pass ([`OnePassPayload`]), its settings re-read
/// ([`policy_decode::settings::reread`]) straight into the settings as written, or not read at all for an
/// operation `P` does not judge. Anything that does not decode is decoded again, field by
/// field, to name the problem: the request's (400) or the settings' (500).
pub fn evaluate<P: Policy>(payload: &[u8], cluster: &mut dyn Cluster) -> ValidationResponse {
    let decoded = policy_decode::settings::reread(|| {
        OnePassPayload::<Written<P>>::decode(payload, P::OPERATIONS)
    });
    let outcome = match decoded {
        Some(p) => judge_decoded::<P>(p, cluster),
        None => judge_checked::<P>(payload, cluster),
    };
    match outcome {
        Ok(response) => response,
        Err(e) => error_response(&e),
    }
}

/// Judges a payload decoded in one pass.
fn judge_decoded<P: Policy>(
    payload: OnePassPayload<'_, Written<P>>,
    cluster: &mut dyn Cluster,
) -> Result<ValidationResponse, PolicyError> {
    let OnePassPayload { request, settings } = payload;
    let settings = policy_decode::settings::reread(|| match settings {
        PayloadSettings::Skipped => Ok(None),
        PayloadSettings::Decoded(Some(raw)) => P::Settings::try_from(raw).map(Some),
        PayloadSettings::Decoded(None) => P::Settings::parse(Raw::Json("null")).map(Some),
        PayloadSettings::Deferred(raw) => {
            let text = raw.map_or("null", |r| r.get());
            P::Settings::parse(Raw::Json(text)).map(Some)
        }
    })
    .map_err(invalid_settings)?;
    match settings {
        None => {
            crate::teardown::release(request);
            Ok(Verdict::accept().into_response(Mode::Enforce))
        }
        Some(settings) => {
            let response = judge::<P>(request, &settings, cluster);
            crate::teardown::release(settings);
            response
        }
    }
}

/// Judges a payload that did not decode in one pass, naming what does not decode.
fn judge_checked<P: Policy>(
    payload: &[u8],
    cluster: &mut dyn Cluster,
) -> Result<ValidationResponse, PolicyError> {
    let p = ValidatePayload::decode(payload)?;
    if !P::OPERATIONS.contains(&p.request.operation) {
        crate::teardown::release(p);
        return Ok(Verdict::accept().into_response(Mode::Enforce));
    }
    let settings = policy_decode::settings::reread(|| P::Settings::parse(p.settings()))
        .map_err(invalid_settings)?;
    let response = judge::<P>(p.request, &settings, cluster);
    crate::teardown::release(settings);
    response
}

fn invalid_settings(e: SettingsError) -> PolicyError {
    PolicyError::Settings(SettingsError::new("", format!("invalid settings: {e}")))
}

fn judge<P: Policy>(
    mut request: AdmissionRequest,
    settings: &P::Settings,
    cluster: &mut dyn Cluster,
) -> Result<ValidationResponse, PolicyError> {
    // The envelope, whoever sends the request and before any early accept of the policy:
    // the objects' shapes and one namespace per request (`docs/semantics.md#request-handling`).
    request.envelope()?;
    let mut lookups = Lookups::new(cluster);
    let verdict = P::validate(&request, settings, &mut lookups)?;
    crate::teardown::release(lookups);
    // An audit judges `mode: warn` as enforce and reports mutations (docs/semantics.md#audit).
    if request.is_audit() {
        let object = std::mem::take(&mut request.object);
        // the object as found, copied only when an enforcing policy would change it (`warn`
        // never mutates at admission, so it reports no mutation either)
        let original = match P::mode(settings) {
            Mode::Enforce if verdict.has_edits() || verdict.mutated().is_some() => {
                Some(object.clone())
            }
            _ => None,
        };
        let response = verdict.into_response_for(Mode::Enforce, object)?;
        crate::teardown::release(request);
        return Ok(match original {
            Some(original) => crate::audit::report(P::NAME, &original, response),
            None => ValidationResponse {
                mutated_object: None,
                ..response
            },
        });
    }
    // Edits are applied to the request's own object, which is no longer needed.
    let object = std::mem::take(&mut request.object);
    let response = verdict.into_response_for(P::mode(settings), object);
    crate::teardown::release(request);
    response
}

/// The rejection for a kind the policy does not handle (`docs/semantics.md#request-handling`).
pub fn unsupported_kind(policy: &str, request: &AdmissionRequest) -> PolicyError {
    PolicyError::UnsupportedKind {
        policy: policy.to_owned(),
        group_version: request.kind.group_version(),
        kind: request.kind.kind.clone(),
    }
}

/// Serialises a response for the host; serialisation of these plain types cannot fail, but
/// a failure would still be reported as an error rather than a panic.
pub fn to_wire<T: serde::Serialize>(
    value: &T,
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(serde_json::to_vec(value)?)
}

/// Exports a [`Policy`] as the waPC functions `validate`, `validate_settings` and
/// `protocol_version` (only when compiled to wasm).
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[unsafe(no_mangle)]
        pub extern "C" fn wapc_init() {
            $crate::guest::touch_first();
            $crate::guest::register_function(
                "protocol_version",
                $crate::guest::protocol_version_guest,
            );
            $crate::guest::register_function("validate_settings", |payload: &[u8]| {
                $crate::policy::to_wire(&$crate::policy::validate_settings::<$policy>(payload))
            });
            $crate::guest::register_function("validate", |payload: &[u8]| {
                let mut host = $crate::guest::HostCluster::<$policy>::default();
                let response = $crate::policy::evaluate::<$policy>(payload, &mut host);
                let wire = $crate::policy::to_wire(&response);
                $crate::teardown::release(response);
                $crate::teardown::evaluation_done();
                wire
            });
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Objects;
    use policy_decode::path::FieldPath;
    use serde::Deserialize;
    use serde_json::Value;
    use serde_json::json;

    struct Demo;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawDemoSettings {
        forbidden: String,
    }

    struct DemoSettings {
        forbidden: String,
    }

    impl TryFrom<RawDemoSettings> for DemoSettings {
        type Error = SettingsError;
        fn try_from(raw: RawDemoSettings) -> Result<Self, SettingsError> {
            if raw.forbidden.is_empty() {
                return Err(SettingsError::new("forbidden", "must not be empty"));
            }
            Ok(DemoSettings {
                forbidden: raw.forbidden,
            })
        }
    }

    impl Validated for DemoSettings {
        type Written = RawDemoSettings;
    }

    impl Policy for Demo {
        const NAME: &'static str = "demo-policy";
        type Settings = DemoSettings;
        fn validate(
            request: &AdmissionRequest,
            settings: &DemoSettings,
            _lookups: &mut Lookups<'_>,
        ) -> Result<Verdict, PolicyError> {
            if request.kind.kind != "Pod" {
                return Err(unsupported_kind(Demo::NAME, request));
            }
            let obj = request.object()?;
            let mut v = Verdict::accept();
            let meta = obj.get_object("metadata")?;
            if let Some(meta) = meta
                && meta.get_str("name")? == Some(settings.forbidden.as_str())
            {
                v.violation(&FieldPath::root("metadata").field("name"), "forbidden");
            }
            Ok(v)
        }
    }

    fn run(request: Value, settings: Value) -> ValidationResponse {
        let payload =
            serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap();
        evaluate::<Demo>(&payload, &mut Objects::default())
    }

    /// `mode: warn` when `forbidden` is `x`; a violation, else a label written.
    struct WarnOrLabel;

    impl Policy for WarnOrLabel {
        const NAME: &'static str = "label-policy";
        type Settings = DemoSettings;
        fn mode(settings: &DemoSettings) -> Mode {
            match settings.forbidden.as_str() {
                "x" => Mode::Warn,
                _ => Mode::Enforce,
            }
        }
        fn validate(
            request: &AdmissionRequest,
            settings: &DemoSettings,
            lookups: &mut Lookups<'_>,
        ) -> Result<Verdict, PolicyError> {
            let mut v = Demo::validate(request, settings, lookups)?;
            if v.is_clean() {
                v.edit_set(&["metadata", "labels"], "team", json!("a"));
            }
            Ok(v)
        }
    }

    fn run_warn_or_label(user: Value, name: &str, forbidden: &str) -> ValidationResponse {
        let request = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
            "userInfo": user, "object": {"metadata": {"name": name, "labels": {"app": "x"}}}});
        let payload = json!({"request": request, "settings": {"forbidden": forbidden}});
        evaluate::<WarnOrLabel>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    #[test]
    fn an_audit_refuses_what_would_be_a_warning_or_a_mutation() {
        let alice = json!({"username": "alice"});
        // mode: warn — a warning at admission, a fail in an audit; nothing mutated in either
        let warned = run_warn_or_label(alice.clone(), "x", "x");
        assert!(warned.accepted);
        assert_eq!(
            warned.warnings,
            Some(vec!["metadata.name: forbidden".to_owned()])
        );
        let audit = run_warn_or_label(json!({}), "x", "x");
        assert!(!audit.accepted);
        assert_eq!(
            (audit.code, audit.message.as_deref()),
            (Some(403), Some("metadata.name: forbidden"))
        );
        let audit = run_warn_or_label(json!({}), "y", "x");
        assert!(audit.accepted && audit.mutated_object.is_none());
        // enforce: a mutation at admission, a fail naming the field in an audit
        assert!(run_warn_or_label(alice, "y", "z").mutated_object.is_some());
        let audit = run_warn_or_label(json!({}), "y", "z");
        assert!(!audit.accepted && audit.mutated_object.is_none());
        assert_eq!(
            audit.message.as_deref(),
            Some(r#"metadata.labels["team"]: missing; label-policy writes "a" into new objects"#)
        );
        // an UPDATE without requester is no audit
        let request = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "UPDATE",
            "object": {"metadata": {"name": "y"}}, "oldObject": {"metadata": {"name": "y"}}});
        let payload = json!({"request": request, "settings": {"forbidden": "z"}});
        let r = evaluate::<WarnOrLabel>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        );
        assert!(r.accepted && r.mutated_object.is_some());
    }

    #[test]
    fn evaluates_and_rejects() {
        let req = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
            "object": {"metadata": {"name": "x"}}});
        let r = run(req.clone(), json!({"forbidden": "x"}));
        assert!(!r.accepted);
        assert_eq!(r.message.as_deref(), Some("metadata.name: forbidden"));
        assert!(run(req, json!({"forbidden": "y"})).accepted);
    }

    #[test]
    fn null_settings_and_two_namespaces_are_refused_in_validate_too() {
        let req = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
            "namespace": "a", "object": {"metadata": {"name": "x", "namespace": "a"}}});
        // the settings document null is `{}` (here: refused for the missing key)...
        assert_eq!(run(req.clone(), Value::Null).code, Some(500));
        // ...a null value is refused whichever decoding reads it (request first or settings first)
        let r = run(req.clone(), json!({"forbidden": null}));
        assert_eq!(r.code, Some(500));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "invalid settings: forbidden: invalid type: null (write a value, or leave the key out)"
            )
        );
        let settings_first = format!(r#"{{"settings": {{"forbidden": null}}, "request": {req}}}"#);
        let r = evaluate::<Demo>(settings_first.as_bytes(), &mut Objects::default());
        assert_eq!(r.code, Some(500));
        let mut other = req;
        other["object"]["metadata"]["namespace"] = json!("b");
        let r = run(other, json!({"forbidden": "y"}));
        assert_eq!(r.code, Some(400));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.namespace: \"b\" differs from request.namespace \"a\"; a request judges one namespace"
            )
        );
    }

    /// Accepts every request unread, as an early accept does.
    struct AcceptAll;

    impl Policy for AcceptAll {
        const NAME: &'static str = "accept-all-policy";
        const OPERATIONS: &'static [Operation] =
            &[Operation::Create, Operation::Update, Operation::Delete];
        type Settings = DemoSettings;
        fn validate(
            _request: &AdmissionRequest,
            _settings: &DemoSettings,
            _lookups: &mut Lookups<'_>,
        ) -> Result<Verdict, PolicyError> {
            Ok(Verdict::accept())
        }
    }

    #[test]
    fn the_envelope_is_checked_before_any_early_accept() {
        let run = |request: Value| {
            let payload = json!({"request": request, "settings": {"forbidden": "x"}});
            evaluate::<AcceptAll>(
                &serde_json::to_vec(&payload).unwrap(),
                &mut Objects::default(),
            )
        };
        let kind = json!({"group": "", "version": "v1", "kind": "Pod"});
        let pod = json!({"metadata": {"name": "p", "namespace": "a"}});
        for (request, message) in [
            (
                json!({"kind": kind, "operation": "CREATE", "namespace": "a"}),
                "request.object: missing",
            ),
            (
                json!({"kind": kind, "operation": "CREATE", "namespace": "a", "object": [pod]}),
                "request.object: expected an object",
            ),
            (
                json!({"kind": kind, "operation": "UPDATE", "namespace": "a", "object": pod}),
                "request.oldObject: missing",
            ),
            (
                json!({"kind": kind, "operation": "UPDATE", "namespace": "a", "object": pod,
                    "oldObject": "p"}),
                "request.oldObject: expected an object",
            ),
            (
                json!({"kind": kind, "operation": "DELETE", "namespace": "a", "oldObject": 1}),
                "request.oldObject: expected an object",
            ),
            (
                json!({"kind": kind, "operation": "CREATE", "namespace": "b", "object": pod}),
                "metadata.namespace: \"a\" differs from request.namespace \"b\"; a request judges one namespace",
            ),
        ] {
            let r = run(request.clone());
            assert_eq!(
                (r.accepted, r.code, r.message.as_deref()),
                (false, Some(400), Some(message)),
                "{request}"
            );
        }
        // a DELETE without oldObject, and CONNECT, carry no object to check
        for request in [
            json!({"kind": kind, "operation": "DELETE", "namespace": "a"}),
            json!({"kind": kind, "operation": "CONNECT", "namespace": "a", "object": 1}),
            json!({"kind": kind, "operation": "UPDATE", "namespace": "a", "object": pod, "oldObject": pod}),
        ] {
            assert!(run(request.clone()).accepted, "{request}");
        }
    }

    #[test]
    fn unsupported_kind_is_400() {
        let req = json!({"kind": {"group": "", "version": "v1", "kind": "Endpoints"}, "operation": "CREATE",
            "object": {}});
        let r = run(req, json!({"forbidden": "y"}));
        assert_eq!(r.code, Some(400));
        assert_eq!(
            r.message.as_deref(),
            Some("demo-policy does not handle v1 Endpoints")
        );
    }

    #[test]
    fn operations_not_judged_are_accepted_before_the_settings_are_read() {
        for op in ["DELETE", "CONNECT"] {
            let req = json!({"kind": {"group": "", "version": "v1", "kind": "Endpoints"},
                "operation": op, "object": {"metadata": {"name": "x"}}});
            // Neither the unsupported kind nor settings that do not decode are looked at.
            let r = run(req, json!({"forbidden": 1}));
            assert!(r.accepted, "{op}: {:?}", r.message);
            assert_eq!((r.code, r.mutated_object), (None, None));
        }
        let req = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "UPDATE",
            "object": {"metadata": {"name": "x"}}});
        let r = run(req, json!({"forbidden": 1}));
        assert_eq!(
            r.code,
            Some(500),
            "judged operations still decode the settings"
        );
    }

    #[test]
    fn settings_that_do_not_decode_or_validate_are_a_500_naming_the_path() {
        let req = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
            "object": {"metadata": {"name": "x"}}});
        for (settings, message) in [
            (
                json!({"forbidden": 1}),
                "invalid settings: forbidden: invalid type: integer `1`, expected a string",
            ),
            (
                json!({"forbidden": ""}),
                "invalid settings: forbidden: must not be empty",
            ),
            (
                json!({"other": "x"}),
                "invalid settings: other: unknown field `other`, expected `forbidden`",
            ),
            (json!(null), "invalid settings: missing field `forbidden`"),
        ] {
            let r = run(req.clone(), settings.clone());
            assert_eq!(r.code, Some(500), "{settings}");
            assert_eq!(r.message.as_deref(), Some(message), "{settings}");
        }
    }

    #[test]
    fn settings_sent_before_the_request_are_read_too() {
        let text = r#"{"settings": {"forbidden": "x"}, "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE", "object": {"metadata": {"name": "x"}}}}"#;
        let r = evaluate::<Demo>(text.as_bytes(), &mut Objects::default());
        assert_eq!(r.message.as_deref(), Some("metadata.name: forbidden"));
    }

    #[test]
    fn garbage_payload_is_rejected_not_panicking() {
        let r = evaluate::<Demo>(b"not json", &mut Objects::default());
        assert!(!r.accepted);
        assert_eq!(r.code, Some(400));
    }

    #[test]
    fn settings_validation() {
        let r = validate_settings::<Demo>(br#"{"forbidden": 1}"#);
        assert!(!r.valid);
        assert!(r.message.unwrap().starts_with("forbidden: invalid type"));
        assert!(validate_settings::<Demo>(br#"{"forbidden": "a"}"#).valid);
        assert!(!validate_settings::<Demo>(b"{").valid);
    }
}
