//! Settings of device-class-policy: a class allow-list without default (`docs/semantics.md#class-allow-lists`),
//! `allowAdminAccess`, `deviceClassApiVersion` and `onLookupError`.

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::decode;
use tenancy_rules::class::ClassAllowList;

use policy_decode::settings::Validated;
use serde::Deserialize;
/// The settings as written: a class allow-list at the top level, and the policy's own fields.
pub use tenancy_rules::class::RawTopLevel as RawSettings;

/// API versions DeviceClasses can be fetched with.
pub const DEVICE_CLASS_API_VERSIONS: [&str; 3] = [
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRest {
    allow_admin_access: Option<bool>,
    device_class_api_version: Option<String>,
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Allowed DeviceClasses.
    pub classes: ClassAllowList,
    /// Allow `adminAccess: true` requests.
    pub allow_admin_access: bool,
    /// API version used to fetch DeviceClasses.
    pub device_class_api_version: String,
    /// What a failed DeviceClass lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(top: RawSettings) -> Result<Self, SettingsError> {
        let (classes, rest) = top.split(false)?;
        let rest: RawRest = decode(&rest)?;
        let classes = classes.ok_or_else(|| {
            SettingsError::new(
                "",
                "at least one of allowed, allowedRegex or selector is required (write `allowed: []` to forbid every DeviceClass)",
            )
        })?;
        let device_class_api_version = rest
            .device_class_api_version
            .unwrap_or_else(|| DEVICE_CLASS_API_VERSIONS[0].to_owned());
        if !DEVICE_CLASS_API_VERSIONS.contains(&device_class_api_version.as_str()) {
            return Err(SettingsError::new(
                "deviceClassApiVersion",
                format!(
                    "{device_class_api_version:?} is not one of {}",
                    DEVICE_CLASS_API_VERSIONS.join(", ")
                ),
            ));
        }
        Ok(Settings {
            classes,
            allow_admin_access: rest.allow_admin_access.unwrap_or(false),
            device_class_api_version,
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
    #[case(json!({}), "at least one of allowed, allowedRegex or selector is required")]
    #[case(json!({"allowAdminAccess": true}), "at least one of allowed, allowedRegex or selector is required")]
    #[case(json!({"allowed": ["a"], "default": "a"}), "default: this class allow-list has no default")]
    #[case(json!({"selector": {}}), "selector: an empty selector is ambiguous")]
    #[case(json!({"allowed": ["a"], "deviceClassApiVersion": "resource.k8s.io/v1alpha3"}), "deviceClassApiVersion: \"resource.k8s.io/v1alpha3\" is not one of")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({"allowed": ["gpu.example.com"]})).unwrap();
        assert_eq!(s.device_class_api_version, "resource.k8s.io/v1");
        assert!(!s.allow_admin_access);
    }
}
