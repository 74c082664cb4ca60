//! The robustness contract of a policy's answers (DESIGN §2, `docs/semantics.md#request-handling`, `docs/semantics.md#lookups`, `docs/semantics.md#messages`, `docs/semantics.md#settings`):
//! each check returns why a response breaks it.

use serde_json::Value;

use crate::cluster::Objects;
use crate::policy::{Policy, ValidationResponse, evaluate, validate_settings};
use crate::request::{Operation, ValidatePayload};
use crate::testing::FailingCluster;
use policy_decode::settings::{Raw, Validated, reread};

fn describe(r: &ValidationResponse) -> String {
    serde_json::to_string(r).unwrap_or_else(|e| format!("(unserialisable response: {e})"))
}

/// A verdict reached without any failed lookup: an acceptance carries no code; a rejection
/// carries a message and 400 (malformed input, unsupported kind) or 403 (violation) —
/// never a 500, which would mean the policy failed instead of judging.
pub fn check_judged(r: &ValidationResponse) -> Result<(), String> {
    if r.accepted {
        if r.code.is_some() {
            return Err(format!("accepted with a code: {}", describe(r)));
        }
        return Ok(());
    }
    if !matches!(r.code, Some(400) | Some(403)) {
        return Err(format!("rejected without 400/403: {}", describe(r)));
    }
    match r.message.as_deref() {
        Some(m) if !m.is_empty() => Ok(()),
        _ => Err(format!("rejected without a message: {}", describe(r))),
    }
}

/// What the host accepts from a guest: no mutation with a rejection or on DELETE (the host
/// refuses it), none at all from a policy declared `mutating: false`, and a mutated object
/// that is a JSON object.
pub fn check_host_contract(
    r: &ValidationResponse,
    delete: bool,
    mutating: bool,
) -> Result<(), String> {
    let Some(mutated) = &r.mutated_object else {
        return Ok(());
    };
    if !r.accepted {
        return Err(format!("a rejection carries a mutation: {}", describe(r)));
    }
    if delete {
        return Err(format!("a DELETE is mutated: {}", describe(r)));
    }
    if !mutating {
        return Err(format!(
            "a policy declared mutating: false mutates: {}",
            describe(r)
        ));
    }
    if !mutated.is_object() {
        return Err(format!(
            "the mutated object is not an object: {}",
            describe(r)
        ));
    }
    Ok(())
}

/// Every attempted lookup (`apiVersion/Kind`) is one the policy declares: the host refuses
/// the others.
pub fn check_reads(reads: &[String], declared: &[&str]) -> Result<(), String> {
    match reads.iter().find(|r| !declared.contains(&r.as_str())) {
        Some(r) => Err(format!(
            "read {r}, which is not declared (declared: {declared:?})"
        )),
        None => Ok(()),
    }
}

/// Whether settings ask to skip rules whose lookup failed (`onLookupError: accept`).
pub fn accepts_lookup_errors(settings: &Value) -> bool {
    settings.get("onLookupError").and_then(Value::as_str) == Some("accept")
}

/// The answer to a request whose lookups failed (`docs/semantics.md#lookups`): with `onLookupError: reject`
/// (the default) a rejection with 500 and a message — never an acceptance; with `accept`
/// the skipped check is reported in a warning quoting the failure (the
/// [`FailingCluster`]'s [`FAILURE`](crate::testing::FAILURE)).
pub fn check_fails_closed(r: &ValidationResponse, accept: bool) -> Result<(), String> {
    if accept {
        let warned = r
            .warnings
            .iter()
            .flatten()
            .any(|w| w.contains(crate::testing::FAILURE));
        return if warned {
            Ok(())
        } else {
            Err(format!(
                "a lookup failed under onLookupError: accept, but no warning reports the skipped check: {}",
                describe(r)
            ))
        };
    }
    if r.accepted {
        return Err(format!("a lookup failed, yet accepted: {}", describe(r)));
    }
    if r.code != Some(500) || r.message.is_none() {
        return Err(format!(
            "a lookup failed, yet not rejected with 500 and a message: {}",
            describe(r)
        ));
    }
    Ok(())
}

/// Settings that `validate_settings` accepted are accepted again by `validate`: the answer
/// is never the 500 `invalid settings: …`.
pub fn check_settings_reread(r: &ValidationResponse) -> Result<(), String> {
    let refused = !r.accepted
        && r.code == Some(500)
        && r.message
            .as_deref()
            .is_some_and(|m| m.starts_with("invalid settings"));
    if refused {
        Err(format!(
            "validate_settings accepted the settings, validate refused them: {}",
            describe(r)
        ))
    } else {
        Ok(())
    }
}

/// Every property for one raw `validate` payload (the fuzz targets' input), evaluated
/// against an empty cluster and against a [`FailingCluster`]:
///
/// * an undecodable payload is rejected with 400 by both;
/// * an operation the policy does not judge ([`Policy::OPERATIONS`]) is accepted unchanged
///   by both, without a lookup, whatever the settings (they are not read);
/// * settings refused by `validate_settings` are never accepted by `validate` when they do
///   not decode in re-read mode either; settings refused only by a check re-reading skips
///   (duplicates, syntax — which policy-server never hands over, as it refuses to load
///   them) are judged like valid ones;
/// * valid settings are re-read ([`check_settings_reread`]), the empty-cluster verdict is
///   [judged](check_judged) and keeps the [host contract](check_host_contract) (mutations
///   allowed, as the policy is unknown here);
/// * if the failing cluster saw a lookup, the answer [fails closed](check_fails_closed);
///   otherwise both answers are identical.
pub fn check_payload<P: Policy>(data: &[u8]) -> Result<(), String> {
    let plain = evaluate::<P>(data, &mut Objects::default());
    let mut failing = FailingCluster::default();
    let failed = evaluate::<P>(data, &mut failing);
    let payload = match ValidatePayload::decode(data) {
        Ok(p) => p,
        Err(_) => {
            for r in [&plain, &failed] {
                if r.accepted || r.code != Some(400) {
                    return Err(format!(
                        "an undecodable payload is not rejected with 400: {}",
                        describe(r)
                    ));
                }
            }
            return Ok(());
        }
    };
    if !P::OPERATIONS.contains(&payload.request.operation) {
        for r in [&plain, &failed] {
            if !r.accepted || r.code.is_some() || r.mutated_object.is_some() {
                return Err(format!(
                    "an operation the policy does not judge is not accepted unchanged: {}",
                    describe(r)
                ));
            }
        }
        if failing.attempted() {
            return Err("an operation the policy does not judge made a lookup".into());
        }
        return Ok(());
    }
    let settings_text = payload.settings.map_or("null", |raw| raw.get());
    let settings: Value = serde_json::from_str(settings_text).unwrap_or(Value::Null);
    let settings_valid = validate_settings::<P>(settings_text.as_bytes()).valid
        || reread(|| P::Settings::parse(Raw::Json(settings_text)).is_ok());
    if !settings_valid {
        return match [&plain, &failed].into_iter().find(|r| r.accepted) {
            Some(r) => Err(format!(
                "settings refused by validate_settings, yet accepted: {}",
                describe(r)
            )),
            None => Ok(()),
        };
    }
    check_settings_reread(&plain)?;
    check_judged(&plain)?;
    let delete = payload.request.operation == Operation::Delete;
    check_host_contract(&plain, delete, true)?;
    if failing.attempted() {
        check_fails_closed(&failed, accepts_lookup_errors(&settings))
    } else if describe(&plain) != describe(&failed) {
        Err(format!(
            "no lookup was made, yet the answers differ: {} vs {}",
            describe(&plain),
            describe(&failed)
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn response(accepted: bool, code: Option<u16>, message: Option<&str>) -> ValidationResponse {
        ValidationResponse {
            accepted,
            message: message.map(str::to_owned),
            code,
            mutated_object: None,
            audit_annotations: None,
            warnings: None,
        }
    }

    #[test]
    fn judged_verdicts() {
        assert!(check_judged(&response(true, None, None)).is_ok());
        assert!(check_judged(&response(false, Some(403), Some("x: bad"))).is_ok());
        assert!(check_judged(&response(false, Some(400), Some("x: missing"))).is_ok());
        assert!(check_judged(&response(true, Some(200), None)).is_err());
        assert!(check_judged(&response(false, Some(500), Some("cannot read"))).is_err());
        assert!(check_judged(&response(false, Some(403), None)).is_err());
        assert!(check_judged(&response(false, Some(403), Some(""))).is_err());
    }

    #[test]
    fn host_contract() {
        let mut r = response(true, None, None);
        r.mutated_object = Some(json!({"spec": {}}));
        assert!(check_host_contract(&r, false, true).is_ok());
        assert!(check_host_contract(&r, false, false).is_err());
        assert!(check_host_contract(&r, true, true).is_err());
        r.accepted = false;
        assert!(check_host_contract(&r, false, true).is_err());
        r.accepted = true;
        r.mutated_object = Some(json!([]));
        assert!(check_host_contract(&r, false, true).is_err());
    }

    #[test]
    fn fails_closed() {
        assert!(
            check_fails_closed(&response(false, Some(500), Some("cannot read")), false).is_ok()
        );
        assert!(check_fails_closed(&response(true, None, None), false).is_err());
        assert!(check_fails_closed(&response(false, Some(403), Some("x")), false).is_err());
        let mut warned = response(true, None, None);
        warned.warnings = Some(vec![format!(
            "cannot read X: {}; spec.x was not checked",
            crate::testing::FAILURE
        )]);
        assert!(check_fails_closed(&warned, true).is_ok());
        assert!(check_fails_closed(&response(true, None, None), true).is_err());
    }

    #[test]
    fn reads_and_reread() {
        assert!(check_reads(&["v1/Namespace".into()], &["v1/Namespace"]).is_ok());
        assert!(check_reads(&["v1/Node".into()], &["v1/Namespace"]).is_err());
        assert!(
            check_settings_reread(&response(false, Some(500), Some("invalid settings: x")))
                .is_err()
        );
        assert!(check_settings_reread(&response(false, Some(500), Some("cannot read"))).is_ok());
    }
}
