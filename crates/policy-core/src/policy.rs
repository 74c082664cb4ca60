//! The policy contract and its wasm entry points: a policy crate implements [`Policy`] and
//! calls [`export_policy!`]; the same [`evaluate`] runs natively in tests and benchmarks.

pub use kubewarden_policy_sdk::response::ValidationResponse;
pub use kubewarden_policy_sdk::settings::SettingsValidationResponse;

use crate::cluster::{Cluster, Lookups};
use crate::error::{PolicyError, SettingsError};
use crate::request::{AdmissionRequest, ValidatePayload};
use crate::settings::Raw;
use crate::verdict::{Mode, Verdict, error_response};

/// One admission policy: settings parsing plus the decision.
pub trait Policy {
    /// The policy's name, used in messages (`pod-toleration-policy`).
    const NAME: &'static str;
    /// Validated settings.
    type Settings;

    /// Decodes and validates the settings; errors name the settings path. Inside `validate`
    /// this runs in re-read mode ([`crate::settings::is_reread`]).
    fn settings(raw: Raw<'_>) -> Result<Self::Settings, SettingsError>;

    /// Whether violations reject or warn (SPEC 2.12); `Enforce` unless the policy has `mode`.
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
        Ok(text) => P::settings(Raw::Json(text)).map(|_| ()),
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
pub fn evaluate<P: Policy>(payload: &[u8], cluster: &mut dyn Cluster) -> ValidationResponse {
    let outcome = ValidatePayload::decode(payload).and_then(|p| {
        let settings = crate::settings::reread(|| P::settings(p.settings())).map_err(|e| {
            PolicyError::Settings(SettingsError::new("", format!("invalid settings: {e}")))
        })?;
        let mut lookups = Lookups::new(cluster);
        let verdict = P::validate(&p.request, &settings, &mut lookups)?;
        Ok(verdict.into_response(P::mode(&settings)))
    });
    match outcome {
        Ok(response) => response,
        Err(e) => error_response(&e),
    }
}

/// The rejection for a kind the policy does not handle (SPEC 2.1.2).
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
            $crate::guest::register_function(
                "protocol_version",
                $crate::guest::protocol_version_guest,
            );
            $crate::guest::register_function("validate_settings", |payload: &[u8]| {
                $crate::policy::to_wire(&$crate::policy::validate_settings::<$policy>(payload))
            });
            $crate::guest::register_function("validate", |payload: &[u8]| {
                let mut host = $crate::cluster::HostCluster;
                $crate::policy::to_wire(&$crate::policy::evaluate::<$policy>(payload, &mut host))
            });
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Objects;
    use crate::path::FieldPath;
    use serde::Deserialize;
    use serde_json::Value;
    use serde_json::json;

    struct Demo;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct DemoSettings {
        forbidden: String,
    }

    impl Policy for Demo {
        const NAME: &'static str = "demo-policy";
        type Settings = DemoSettings;
        fn settings(raw: Raw<'_>) -> Result<DemoSettings, SettingsError> {
            crate::settings::decode(raw)
        }
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
