//! Id strategies (`runAsUser`, `runAsGroup`, `fsGroup`, `supplementalGroups`): rules and
//! ranges, validated as the PSP API validated them.

use policy_decode::SettingsError;

use super::err;
use super::raw::{RawIdRange, RawIdStrategy};

/// An id range: fixed bounds, or `[n, n]` read from a Namespace annotation per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// `{min, max}` with `0 ≤ min ≤ max`.
    Fixed(i64, i64),
    /// `{fromNamespaceAnnotation: key}`.
    FromNamespaceAnnotation(String),
}

/// The rule of an id strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdRule {
    /// Ids must be set and inside the ranges; unset ones default to the first range's min.
    MustRunAs,
    /// Ids are optional; set ones must be inside the ranges.
    MayRunAs,
    /// `runAsUser` only: the container must not run as root.
    MustRunAsNonRoot,
    /// Anything.
    RunAsAny,
}

impl IdRule {
    /// The rule's name in settings (`MustRunAs`).
    fn name(self) -> &'static str {
        match self {
            IdRule::MustRunAs => "MustRunAs",
            IdRule::MayRunAs => "MayRunAs",
            IdRule::MustRunAsNonRoot => "MustRunAsNonRoot",
            IdRule::RunAsAny => "RunAsAny",
        }
    }
}

/// `runAsUser`, `runAsGroup`, `fsGroup` or `supplementalGroups`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdStrategy {
    /// The rule.
    pub rule: IdRule,
    /// The ranges (non-empty for `MustRunAs`/`MayRunAs`, empty otherwise).
    pub ranges: Vec<RangeSpec>,
}

impl IdStrategy {
    /// `RunAsAny`.
    pub fn any() -> Self {
        IdStrategy {
            rule: IdRule::RunAsAny,
            ranges: Vec::new(),
        }
    }

    /// The Namespace annotations its ranges read.
    pub fn annotations(&self) -> impl Iterator<Item = &str> {
        self.ranges.iter().filter_map(|r| match r {
            RangeSpec::FromNamespaceAnnotation(k) => Some(k.as_str()),
            RangeSpec::Fixed(..) => None,
        })
    }
}

/// Validates one id strategy: `required` ones must be given (others default to `RunAsAny`),
/// the rule must be one of `allowed`, and the ranges must suit the rule.
pub(super) fn id_strategy(
    field: &str,
    raw: Option<RawIdStrategy>,
    allowed: &[IdRule],
    required: bool,
) -> Result<IdStrategy, SettingsError> {
    let Some(raw) = raw else {
        if required {
            return Err(err(field, "a rule is required (as in PodSecurityPolicy)"));
        }
        return Ok(IdStrategy::any());
    };
    let rule = id_rule(field, &raw.rule, allowed)?;
    let raw_ranges = raw.ranges.unwrap_or_default();
    ranges_suit_rule(field, rule, raw_ranges.len())?;
    let mut ranges = Vec::with_capacity(raw_ranges.len());
    for (i, r) in raw_ranges.into_iter().enumerate() {
        ranges.push(id_range(&format!("{field}.ranges[{i}]"), r)?);
    }
    Ok(IdStrategy { rule, ranges })
}

/// The rule named `name`, if it is one of `allowed`.
fn id_rule(field: &str, name: &str, allowed: &[IdRule]) -> Result<IdRule, SettingsError> {
    allowed
        .iter()
        .copied()
        .find(|r| r.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|r| r.name()).collect();
            err(
                format!("{field}.rule"),
                format!("{name:?} is not one of {}", names.join(", ")),
            )
        })
}

/// `MustRunAs` and `MayRunAs` need ranges; the other rules take none.
fn ranges_suit_rule(field: &str, rule: IdRule, count: usize) -> Result<(), SettingsError> {
    let needs_ranges = matches!(rule, IdRule::MustRunAs | IdRule::MayRunAs);
    if needs_ranges && count == 0 {
        return Err(err(
            format!("{field}.ranges"),
            format!("{} needs at least one range", rule.name()),
        ));
    }
    if !needs_ranges && count > 0 {
        return Err(err(
            format!("{field}.ranges"),
            format!("ranges are not used by {}", rule.name()),
        ));
    }
    Ok(())
}

/// One range at `path`: `{min, max}` with `0 <= min <= max`, or a non-empty
/// `{fromNamespaceAnnotation}`.
fn id_range(path: &str, r: RawIdRange) -> Result<RangeSpec, SettingsError> {
    match (r.min, r.max, r.from_namespace_annotation) {
        (None, None, Some(key)) if !key.is_empty() => Ok(RangeSpec::FromNamespaceAnnotation(key)),
        (None, None, Some(_)) => Err(err(
            format!("{path}.fromNamespaceAnnotation"),
            "must not be empty",
        )),
        (Some(min), Some(max), None) => {
            if min < 0 {
                return Err(err(format!("{path}.min"), format!("{min} is negative")));
            }
            if max < min {
                return Err(err(
                    format!("{path}.max"),
                    format!("{max} is below min {min}"),
                ));
            }
            Ok(RangeSpec::Fixed(min, max))
        }
        (_, _, Some(_)) => Err(err(
            path,
            "fromNamespaceAnnotation cannot be combined with min/max",
        )),
        _ => Err(err(
            path,
            "needs both min and max, or fromNamespaceAnnotation",
        )),
    }
}
