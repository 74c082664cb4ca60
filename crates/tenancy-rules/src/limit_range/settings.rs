//! The settings of limit-range-policy: LimitRange items, one LimitRange spec (`limits`) or
//! several (`items`, Capsule's shape), validated and merged by [`super::items`], or merged
//! while they are decoded when `validate` re-reads them (`reread`)
//! (`docs/semantics.md#limit-ranges`).
//!
//! ```
//! use policy_decode::settings::Validated;
//! use tenancy_rules::limit_range::LimitRanges;
//! let ranges = LimitRanges::parse(&serde_json::json!({"items": [
//!     {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "50m"}}]}
//! ]})).unwrap();
//! let cpu = &ranges.resources[0];
//! // Kubernetes LimitRange defaulting: default from max, defaultRequest from default.
//! assert_eq!(cpu.default.as_ref().map(ToString::to_string).as_deref(), Some("1"));
//! assert_eq!(cpu.default_request.as_ref().map(ToString::to_string).as_deref(), Some("1"));
//! let err = LimitRanges::parse(&serde_json::json!({"limits": [
//!     {"type": "Container", "default": {"cpu": "2"}, "max": {"cpu": "1"}}
//! ]})).unwrap_err();
//! assert_eq!(err.to_string(), "limits[0].default.cpu: 2 exceeds max 1");
//! ```

use serde::{Deserialize, Deserializer};

use policy_decode::error::SettingsError;
use policy_decode::settings::{Validated, is_reread};

use super::items::{Builder, LimitRanges, RawItem};

/// One LimitRange spec as written: `{limits: [items]}` (an entry of Capsule's
/// `spec.limitRanges.items`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimitRange {
    limits: Vec<RawItem>,
}

/// The settings as written: exactly one of `limits` and `items`. When `validate` re-reads
/// them they are merged while they are decoded (`super::reread`), without keeping the
/// items.
#[derive(Debug)]
pub struct RawSettings(RawForm);

#[derive(Debug)]
enum RawForm {
    Written(WrittenSettings),
    Merged(LimitRanges),
}

/// The settings as written, item by item, for validation.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WrittenSettings {
    #[serde(default)]
    limits: Option<Vec<RawItem>>,
    #[serde(default)]
    items: Option<Vec<RawLimitRange>>,
}

impl<'de> Deserialize<'de> for RawSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if is_reread() {
            return super::reread::merge(deserializer).map(|r| RawSettings(RawForm::Merged(r)));
        }
        WrittenSettings::deserialize(deserializer).map(|w| RawSettings(RawForm::Written(w)))
    }
}

impl Validated for LimitRanges {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for LimitRanges {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let raw = match raw.0 {
            RawForm::Merged(ranges) => return Ok(ranges),
            RawForm::Written(w) => w,
        };
        let ranges: Vec<(String, Vec<RawItem>)> = match (raw.limits, raw.items) {
            (Some(_), Some(_)) => {
                return Err(SettingsError::new(
                    "",
                    "give either limits (one LimitRange spec) or items (several, Capsule's shape), not both",
                ));
            }
            (None, None) => {
                return Err(SettingsError::new(
                    "",
                    "missing: give limits (one LimitRange spec) or items (several LimitRange specs, Capsule's shape)",
                ));
            }
            (Some(limits), None) => vec![("limits".to_owned(), limits)],
            (None, Some(items)) => {
                non_empty("items", items.len())?;
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| (format!("items[{i}].limits"), r.limits))
                    .collect()
            }
        };
        let mut builder = Builder::default();
        for (prefix, items) in ranges {
            non_empty(&prefix, items.len())?;
            let reread = is_reread();
            for (j, item) in items.into_iter().enumerate() {
                // Paths only name refusals, which a re-read cannot give.
                let path = match reread {
                    true => String::new(),
                    false => format!("{prefix}[{j}]"),
                };
                builder.add(&path, item)?;
            }
        }
        builder.finish()
    }
}

/// Refuses an empty list: a LimitRange without items enforces nothing, which is a mistake.
fn non_empty(path: &str, len: usize) -> Result<(), SettingsError> {
    if len == 0 {
        return Err(SettingsError::new(
            path,
            "empty: list at least one LimitRange item (an empty list would enforce nothing)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit_range::items::*;
    use kube_values::quantity::Quantity;
    use policy_decode::settings::Raw;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn seed() -> Value {
        json!({"items": [
            {"limits": [{"type": "Pod", "min": {"cpu": "50m", "memory": "5Mi"}, "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "10Mi"},
                "default": {"cpu": "200m", "memory": "100Mi"}, "min": {"cpu": "50m", "memory": "5Mi"},
                "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]}
        ]})
    }

    #[test]
    fn the_seed_merges_by_type() {
        let r = LimitRanges::parse(&seed()).unwrap();
        let names: Vec<&str> = r.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["cpu", "memory"]);
        let cpu = &r.resources[0];
        assert_eq!(cpu.pod.max.as_ref().unwrap().to_string(), "1");
        assert_eq!(cpu.container.min.as_ref().unwrap().to_string(), "50m");
        assert_eq!(cpu.default.as_ref().unwrap().to_string(), "200m");
        assert_eq!(cpu.default_request.as_ref().unwrap().to_string(), "100m");
        assert_eq!(r.claim.max.as_ref().unwrap().to_string(), "10Gi");
        assert!(r.bounds_pods() && r.judges_pods());
    }

    #[test]
    fn defaulting_follows_kubernetes() {
        let r = LimitRanges::parse(&json!({"limits": [
            {"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "5Mi"}, "default": {"ephemeral-storage": "1Gi"}}
        ]}))
        .unwrap();
        let get = |n: &str| r.resources.iter().find(|r| r.name == n).unwrap();
        let shown = |q: &Option<Quantity>| q.as_ref().map(ToString::to_string);
        assert_eq!(shown(&get("cpu").default).as_deref(), Some("1"));
        assert_eq!(shown(&get("cpu").default_request).as_deref(), Some("1"));
        assert_eq!(shown(&get("memory").default), None);
        assert_eq!(
            shown(&get("memory").default_request).as_deref(),
            Some("5Mi")
        );
        assert_eq!(
            shown(&get("ephemeral-storage").default_request).as_deref(),
            Some("1Gi")
        );
    }

    #[test]
    fn tightest_bounds_and_first_defaults_win() {
        let r = LimitRanges::parse(&json!({"items": [
            {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "10m"}, "defaultRequest": {"cpu": "100m"}, "default": {"cpu": "500m"}}]},
            {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "50m"}, "default": {"cpu": "300m"}}]}
        ]}))
        .unwrap();
        let cpu = &r.resources[0];
        assert_eq!(cpu.container.max.as_ref().unwrap().to_string(), "1");
        assert_eq!(cpu.container.min.as_ref().unwrap().to_string(), "50m");
        assert_eq!(cpu.default.as_ref().unwrap().to_string(), "500m");
        assert_eq!(cpu.default_request.as_ref().unwrap().to_string(), "100m");
    }

    #[rstest]
    #[case(json!({}), "missing: give limits (one LimitRange spec) or items")]
    #[case(json!(null), "missing: give limits")]
    #[case(json!({"limits": [], "items": []}), "give either limits (one LimitRange spec) or items (several, Capsule's shape), not both")]
    #[case(json!({"limits": []}), "limits: empty: list at least one LimitRange item")]
    #[case(json!({"items": []}), "items: empty")]
    #[case(json!({"items": [{"limits": []}]}), "items[0].limits: empty")]
    #[case(json!({"items": [{}]}), "items[0]: missing field `limits`")]
    #[case(json!({"items": [{"limits": [], "name": "x"}]}), "items[0].name: unknown field `name`")]
    #[case(json!({"limits": [{"type": "Node", "max": {"cpu": "1"}}]}), "limits[0].type: \"Node\" is not one of Container, Pod, PersistentVolumeClaim")]
    #[case(json!({"limits": [{"max": {"cpu": "1"}}]}), "limits[0]: missing field `type`")]
    #[case(json!({"limits": [{"type": "Container", "maximum": {"cpu": "1"}}]}), "limits[0].maximum: unknown field `maximum`")]
    #[case(json!({"limits": [{"type": "Container", "max": {"cpu": "lots"}}]}), "limits[0].max.cpu: \"lots\" is not a quantity")]
    #[case(json!({"limits": [{"type": "Container", "max": {"cpu": true}}]}), "limits[0].max.cpu: invalid type: boolean")]
    #[case(json!({"limits": [{"type": "Container", "max": ["cpu"]}]}), "limits[0].max: invalid type: sequence")]
    #[case(json!({"limits": [{"type": "Container"}]}), "limits[0]: sets none of min, max, default, defaultRequest, maxLimitRequestRatio")]
    #[case(json!({"limits": [{"type": "Container", "max": {}}]}), "limits[0]: sets none of")]
    #[case(json!({"limits": [{"type": "Container", "max": {"cpus": "1"}}]}), "limits[0].max.cpus: \"cpus\" is not a container resource")]
    #[case(json!({"limits": [{"type": "Container", "max": {"storage": "1Gi"}}]}), "limits[0].max.storage: \"storage\" is not a container resource")]
    #[case(json!({"limits": [{"type": "Container", "max": {"Example.com/gpu": "1"}}]}), "limits[0].max[\"Example.com/gpu\"]: \"Example.com/gpu\" is not a container resource")]
    #[case(json!({"limits": [{"type": "Container", "min": {"cpu": "-1"}}]}), "limits[0].min.cpu: -1 must not be negative")]
    #[case(json!({"limits": [{"type": "Pod", "default": {"cpu": "1"}}]}), "limits[0].default: an item of type Pod takes no default")]
    #[case(json!({"limits": [{"type": "Pod", "max": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}}]}), "limits[0].defaultRequest: an item of type Pod takes no defaultRequest")]
    #[case(json!({"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}, "default": {"storage": "1Gi"}}]}), "limits[0].default: an item of type PersistentVolumeClaim takes no default")]
    #[case(json!({"limits": [{"type": "PersistentVolumeClaim", "maxLimitRequestRatio": {"storage": "1"}}]}), "limits[0].maxLimitRequestRatio: an item of type PersistentVolumeClaim takes no maxLimitRequestRatio")]
    #[case(json!({"limits": [{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}]}), "limits[0].max.cpu: \"cpu\": only storage applies to a PersistentVolumeClaim")]
    #[case(json!({"limits": [{"type": "PersistentVolumeClaim", "min": {}}]}), "limits[0]: a PersistentVolumeClaim item needs min or max storage")]
    #[case(json!({"limits": [{"type": "PersistentVolumeClaim", "min": {"storage": "2Gi"}, "max": {"storage": "1Gi"}}]}), "limits[0].max.storage: 1Gi is below min 2Gi at limits[0].min.storage")]
    #[case(json!({"limits": [{"type": "Container", "default": {"cpu": "2"}, "max": {"cpu": "1"}}]}), "limits[0].default.cpu: 2 exceeds max 1")]
    #[case(json!({"limits": [{"type": "Container", "default": {"cpu": "10m"}, "min": {"cpu": "50m"}}]}), "limits[0].default.cpu: 10m is below min 50m")]
    #[case(json!({"limits": [{"type": "Container", "defaultRequest": {"cpu": "300m"}, "default": {"cpu": "200m"}}]}), "limits[0].defaultRequest.cpu: 300m exceeds default 200m")]
    #[case(json!({"limits": [{"type": "Container", "defaultRequest": {"cpu": "2"}, "max": {"cpu": "1"}}]}), "limits[0].defaultRequest.cpu: 2 exceeds max 1")]
    #[case(json!({"limits": [{"type": "Container", "defaultRequest": {"cpu": "10m"}, "min": {"cpu": "50m"}}]}), "limits[0].defaultRequest.cpu: 10m is below min 50m")]
    #[case(json!({"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]}), "limits[0].max.cpu: 1 is below min 2 at limits[0].min.cpu")]
    #[case(json!({"limits": [{"type": "Container", "maxLimitRequestRatio": {"cpu": "0.5"}}]}), "limits[0].maxLimitRequestRatio.cpu: 0.5 is below 1")]
    #[case(json!({"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}, "default": {"cpu": "300m"}, "maxLimitRequestRatio": {"cpu": "2"}}]}),
        "limits[0].default.cpu: 300m is more than 2 times defaultRequest 100m (maxLimitRequestRatio)")]
    #[case(json!({"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "2"}}]}),
        "limits[0].default.cpu: 1 (taken from max) is more than 2 times defaultRequest 100m (maxLimitRequestRatio)")]
    #[case(json!({"items": [{"limits": [{"type": "Container", "default": {"cpu": "2"}}]}, {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}]}),
        "items[0].limits[0].default.cpu: 2 exceeds max 1 at items[1].limits[0].max.cpu")]
    #[case(json!({"items": [{"limits": [{"type": "Container", "default": {"cpu": "2"}}]}, {"limits": [{"type": "Pod", "max": {"cpu": "1"}}]}]}),
        "items[0].limits[0].default.cpu: 2 exceeds max 1 per Pod at items[1].limits[0].max.cpu")]
    #[case(json!({"items": [{"limits": [{"type": "Pod", "min": {"cpu": "2"}}]}, {"limits": [{"type": "Pod", "max": {"cpu": "1"}}]}]}),
        "items[1].limits[0].max.cpu: 1 is below min 2 at items[0].limits[0].min.cpu")]
    #[case(json!({"limits": [{"type": "Pod", "min": {"cpu": "100m"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "20"}}]}),
        "limits[0].maxLimitRequestRatio.cpu: 20 exceeds max/min = 1/100m")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = LimitRanges::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
        // the same text decoded from JSON gives the same refusal
        let text = raw.to_string();
        let again = LimitRanges::parse(Raw::Json(&text))
            .unwrap_err()
            .to_string();
        assert_eq!(err, again);
    }

    #[rstest]
    #[case(seed())]
    #[case(json!({"items": [
        {"limits": [{"type": "Container", "min": {"cpu": "10m", "memory": "1Mi"}, "defaultRequest": {"cpu": "100m"}}]},
        {"limits": [{"type": "Container", "max": {"cpu": "2", "memory": "2Gi"}, "default": {"memory": "1Gi"}},
                    {"type": "Pod", "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "10"}}]},
        {"limits": [{"type": "Container", "max": {"cpu": "3", "ephemeral-storage": "1Gi"}, "min": {"cpu": "50m"},
                     "maxLimitRequestRatio": {"cpu": "20"}}]}
    ]}))]
    #[case(json!({"limits": [{"type": "Container", "min": {"memory": "5Mi"}, "max": {"cpu": "1"}, "default": {"example.com/gpu": "1"}}]}))]
    fn a_reread_merges_like_a_validation(#[case] raw: Value) {
        let full = LimitRanges::parse(&raw).unwrap();
        let text = raw.to_string();
        let reread =
            policy_decode::settings::reread(|| LimitRanges::parse(Raw::Json(&text))).unwrap();
        assert_eq!(full, reread);
        let shown = |r: &LimitRanges| {
            format!(
                "{:?}",
                r.resources
                    .iter()
                    .map(|r| (
                        r.name.clone(),
                        r.default.as_ref().map(ToString::to_string),
                        r.default_request.as_ref().map(ToString::to_string)
                    ))
                    .collect::<Vec<_>>()
            )
        };
        assert_eq!(shown(&full), shown(&reread));
    }

    #[test]
    fn extended_and_hugepages_resources_are_accepted() {
        let r = LimitRanges::parse(&json!({"limits": [
            {"type": "Container", "max": {"example.com/gpu": "1", "hugepages-2Mi": "1Gi"}}
        ]}))
        .unwrap();
        assert_eq!(r.resources.len(), 2);
        assert_eq!(
            resource_path("limits[0]", "max", "example.com/gpu"),
            "limits[0].max[\"example.com/gpu\"]"
        );
    }

    #[test]
    fn ratio_at_max_over_min_is_accepted() {
        assert!(
            LimitRanges::parse(&json!({"limits": [
                {"type": "Pod", "min": {"cpu": "100m"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "10"}}
            ]}))
            .is_ok()
        );
    }
}
