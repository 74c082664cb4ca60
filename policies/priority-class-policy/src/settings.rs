//! Settings of priority-class-policy: a class allow-list at the top level (`docs/semantics.md#class-allow-lists`),
//! `replaceGlobalDefault` and `onLookupError`.

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::decode;
use tenancy_rules::class::{ClassAllowList, missing_class_fields};

use policy_decode::settings::Validated;
use serde::Deserialize;
/// The settings as written: a class allow-list at the top level, and the policy's own fields.
pub use tenancy_rules::class::RawTopLevel as RawSettings;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRest {
    replace_global_default: Option<bool>,
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Allowed PriorityClasses and the tenant default.
    pub classes: ClassAllowList,
    /// Whether a class injected from the cluster's `globalDefault` counts as "no class".
    pub replace_global_default: bool,
    /// What a failed PriorityClass lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(top: RawSettings) -> Result<Self, SettingsError> {
        let (classes, rest) = top.split(true)?;
        let rest: RawRest = decode(&rest)?;
        let classes = classes.ok_or_else(missing_class_fields)?;
        Ok(Settings {
            classes,
            replace_global_default: rest.replace_global_default.unwrap_or(true),
            on_lookup_error: rest.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({}), "at least one of allowed, allowedRegex, selector or default is required")]
    #[case(json!({"onLookupError": "accept"}), "at least one of allowed")]
    #[case(json!({"selector": {}}), "selector: an empty selector is ambiguous")]
    #[case(json!({"allowed": ["a"], "replaceGlobalDefault": "yes"}), "replaceGlobalDefault: invalid type")]
    #[case(json!({"allowed": ["a"], "onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"allowed": ["a"], "allowedClasses": ["b"]}), "allowedClasses: unknown field `allowedClasses`")]
    #[case(json!({"allowedRegex": "("}), "allowedRegex: invalid regex")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({"default": "tenant-default"})).unwrap();
        assert!(s.replace_global_default);
        assert_eq!(s.on_lookup_error, OnLookupError::Reject);
        assert_eq!(s.classes.default(), Some("tenant-default"));
    }
}
