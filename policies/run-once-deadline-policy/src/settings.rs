//! Settings of run-once-deadline-policy (`docs/semantics.md#settings`).

use kube_values::labels::is_label_key;
use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::strict::Nullable;
use serde::Deserialize;

use crate::seconds::API_MAX_SECONDS;
use policy_decode::settings::Validated;

/// The deadline written when nothing else applies (APPUiO's 30 minutes).
pub const DEFAULT_ACTIVE_DEADLINE_SECONDS: i64 = 1800;

/// The namespace annotation read when `overrideAnnotation` is not written (APPUiO's).
pub const DEFAULT_OVERRIDE_ANNOTATION: &str = "appuio.io/active-deadline-seconds-override";

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    default_active_deadline_seconds: Option<i64>,
    /// Absent: the default annotation; `null`: no lookup.
    #[serde(default)]
    override_annotation: Nullable<String>,
    #[serde(default)]
    max_active_deadline_seconds: Option<i64>,
    #[serde(default)]
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The deadline written when the namespace has no override (README rule 3).
    pub default_active_deadline_seconds: i64,
    /// The namespace annotation replacing the default; `None`: the Namespace is never read.
    pub override_annotation: Option<String>,
    /// The cap of explicit deadlines and overrides; `None`: only the API server's limit.
    pub max_active_deadline_seconds: Option<i64>,
    /// What a failed Namespace lookup does (`docs/semantics.md#lookups`).
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl Settings {
    /// The largest deadline allowed: `maxActiveDeadlineSeconds`, else the API server's limit.
    pub fn cap(&self) -> i64 {
        self.max_active_deadline_seconds.unwrap_or(API_MAX_SECONDS)
    }

    /// The cap, when `seconds` is above it.
    pub fn above_cap(&self, seconds: i64) -> Option<i64> {
        Some(self.cap()).filter(|cap| seconds > *cap)
    }
}

/// Refuses a number of seconds outside the API server's range at settings path `name`.
fn in_range(name: &str, value: Option<i64>) -> Result<Option<i64>, SettingsError> {
    match value {
        Some(v) if !(1..=API_MAX_SECONDS).contains(&v) => Err(SettingsError::new(
            name,
            format!(
                "must be a whole number of seconds from 1 to {API_MAX_SECONDS} (what the API server accepts), got {v}"
            ),
        )),
        other => Ok(other),
    }
}

/// Refuses an `overrideAnnotation` that is no annotation key (checked always: one short key).
fn annotation_key(raw: Nullable<String>) -> Result<Option<String>, SettingsError> {
    match raw {
        Nullable::Absent => Ok(Some(DEFAULT_OVERRIDE_ANNOTATION.to_owned())),
        Nullable::Null => Ok(None),
        Nullable::Value(key) if is_label_key(&key) => Ok(Some(key)),
        Nullable::Value(key) => Err(SettingsError::new(
            "overrideAnnotation",
            format!(
                "{key:?} is not a valid annotation key ([prefix/]name, e.g. {DEFAULT_OVERRIDE_ANNOTATION}); write null to read no annotation"
            ),
        )),
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let written = in_range(
            "defaultActiveDeadlineSeconds",
            raw.default_active_deadline_seconds,
        )?;
        let max = in_range("maxActiveDeadlineSeconds", raw.max_active_deadline_seconds)?;
        let default = written.unwrap_or(DEFAULT_ACTIVE_DEADLINE_SECONDS);
        if let Some(max) = max
            && default > max
        {
            let problem = match written {
                Some(_) => format!("{default} is above maxActiveDeadlineSeconds {max}"),
                None => format!(
                    "the default {default} is above maxActiveDeadlineSeconds {max}; set defaultActiveDeadlineSeconds to at most {max}"
                ),
            };
            return Err(SettingsError::new("defaultActiveDeadlineSeconds", problem));
        }
        Ok(Settings {
            default_active_deadline_seconds: default,
            override_annotation: annotation_key(raw.override_annotation)?,
            max_active_deadline_seconds: max,
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::settings::Raw;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({"defaultActiveDeadlineSeconds": 0}), "defaultActiveDeadlineSeconds: must be a whole number of seconds from 1 to 2147483647 (what the API server accepts), got 0")]
    #[case(json!({"defaultActiveDeadlineSeconds": -5}), "defaultActiveDeadlineSeconds: must be a whole number of seconds from 1 to 2147483647 (what the API server accepts), got -5")]
    #[case(json!({"defaultActiveDeadlineSeconds": 1.5}), "defaultActiveDeadlineSeconds: invalid type: floating point `1.5`, expected i64")]
    #[case(json!({"defaultActiveDeadlineSeconds": "1800"}), "defaultActiveDeadlineSeconds: invalid type: string \"1800\", expected i64")]
    #[case(json!({"defaultActiveDeadlineSeconds": null}), "defaultActiveDeadlineSeconds: invalid type: null (write a value, or leave the key out)")]
    #[case(json!({"maxActiveDeadlineSeconds": 2147483648_i64}), "maxActiveDeadlineSeconds: must be a whole number of seconds from 1 to 2147483647 (what the API server accepts), got 2147483648")]
    #[case(json!({"maxActiveDeadlineSeconds": 0}), "maxActiveDeadlineSeconds: must be a whole number of seconds from 1 to 2147483647 (what the API server accepts), got 0")]
    #[case(json!({"defaultActiveDeadlineSeconds": 3600, "maxActiveDeadlineSeconds": 1800}), "defaultActiveDeadlineSeconds: 3600 is above maxActiveDeadlineSeconds 1800")]
    #[case(json!({"maxActiveDeadlineSeconds": 600}), "defaultActiveDeadlineSeconds: the default 1800 is above maxActiveDeadlineSeconds 600; set defaultActiveDeadlineSeconds to at most 600")]
    #[case(json!({"overrideAnnotation": ""}), "overrideAnnotation: \"\" is not a valid annotation key")]
    #[case(json!({"overrideAnnotation": "not a key"}), "overrideAnnotation: \"not a key\" is not a valid annotation key")]
    #[case(json!({"overrideAnnotation": 5}), "overrideAnnotation: invalid type: integer `5`, expected a string")]
    #[case(json!({"onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"defaultDeadline": 5}), "defaultDeadline: unknown field `defaultDeadline`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({})).unwrap();
        assert_eq!(
            s,
            Settings {
                default_active_deadline_seconds: 1800,
                override_annotation: Some(DEFAULT_OVERRIDE_ANNOTATION.to_owned()),
                max_active_deadline_seconds: None,
                on_lookup_error: OnLookupError::Reject,
            }
        );
        assert_eq!(Settings::parse(Raw::Json("null")).unwrap(), s);
    }

    #[test]
    fn null_annotation_reads_nothing_and_the_cap_may_equal_the_default() {
        let s = Settings::parse(&json!({"overrideAnnotation": null,
            "defaultActiveDeadlineSeconds": 600, "maxActiveDeadlineSeconds": 600}))
        .unwrap();
        assert_eq!(s.override_annotation, None);
        assert_eq!(s.above_cap(600), None);
        assert_eq!(s.above_cap(601), Some(600));
        let uncapped =
            Settings::parse(&json!({"defaultActiveDeadlineSeconds": 2147483647})).unwrap();
        assert_eq!(uncapped.above_cap(2147483647), None);
        assert_eq!(uncapped.above_cap(2147483648), Some(2147483647));
    }
}
