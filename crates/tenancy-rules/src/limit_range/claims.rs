//! PersistentVolumeClaims and StatefulSet claim templates (README rule 4): the `storage`
//! request of `spec.resources.requests` within the PersistentVolumeClaim bounds.

use policy_admission::gate::required;
use policy_admission::verdict::Verdict;
use policy_decode::error::PolicyError;
use policy_decode::json::At;

use super::bounds::{Observed, Subject, check};
use super::items::LimitRanges;

/// The resource PersistentVolumeClaim items bound.
pub const STORAGE: &str = "storage";

/// The `spec.resources.requests` of a claim's `spec`.
fn requests<'a>(spec: &At<'a>) -> Result<Option<At<'a>>, PolicyError> {
    match spec.get_object("resources")? {
        Some(resources) => resources.get_object("requests"),
        None => Ok(None),
    }
}

/// Judges one claim spec (a PersistentVolumeClaim's `spec`, or a claim template's).
pub fn judge(
    spec: &At<'_>,
    ranges: &LimitRanges,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    if ranges.claim.is_empty() {
        return Ok(());
    }
    let requests = requests(spec)?;
    let requests_path = || spec.path.field("resources").field("requests");
    let map = requests.as_ref().map(|r| r.object()).transpose()?;
    let request = crate::pod_resources::read_value(map, STORAGE, &requests_path)?;
    let base = || spec.path.field("resources");
    let observed = Observed {
        request: request.as_ref(),
        limit: None,
    };
    let subject = Subject::Object {
        base: &base,
        per: "PersistentVolumeClaim",
    };
    check(&ranges.claim, observed, subject, STORAGE, false, verdict);
    Ok(())
}

/// Judges every `spec.volumeClaimTemplates[i]` of a StatefulSet `object`; a template
/// without `spec` is malformed.
pub fn judge_templates(
    object: &At<'_>,
    ranges: &LimitRanges,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    if ranges.claim.is_empty() {
        return Ok(());
    }
    let Some(spec) = object.get_object("spec")? else {
        return Ok(());
    };
    for template in spec.get_list("volumeClaimTemplates")? {
        template.object()?;
        let claim_spec = required(&template, "spec")?;
        judge(&claim_spec, ranges, verdict)?;
    }
    Ok(())
}

/// What README rule 4 reads of a claim: its storage requests (UPDATE is judged when they
/// changed).
pub fn requested(object: &serde_json::Value) -> Option<&serde_json::Value> {
    object.pointer("/spec/resources/requests")
}
