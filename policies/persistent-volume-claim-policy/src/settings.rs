//! Settings of persistent-volume-claim-policy: a StorageClass allow-list and cross-tenant
//! volume binding protection.

use kube_values::labels::is_label_key;
use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::Validated;
use policy_decode::settings::is_reread;
use serde::Deserialize;
use tenancy_rules::class::{ClassAllowList, RawClassAllowList};

/// The default tenant label on Namespaces and PersistentVolumes.
pub const DEFAULT_TENANT_LABEL: &str = "capsule.clastix.io/tenant";

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    storage_classes: Option<RawClassAllowList>,
    replace_cluster_default: Option<bool>,
    volume_binding: Option<RawVolumeBinding>,
    on_lookup_error: Option<OnLookupError>,
}

/// Cross-tenant binding protection as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawVolumeBinding {
    tenant_label: Option<String>,
    allow_unlabelled_volumes: Option<bool>,
    pin_selector: Option<bool>,
}

/// Cross-tenant binding protection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeBinding {
    /// Label on Namespaces and PersistentVolumes naming the tenant.
    pub tenant_label: String,
    /// Allow pre-binding PersistentVolumes without the tenant label.
    pub allow_unlabelled_volumes: bool,
    /// Pin `spec.selector` of new claims to the tenant.
    pub pin_selector: bool,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Allowed StorageClasses and the tenant default (absent = not restricted).
    pub storage_classes: Option<ClassAllowList>,
    /// The cluster default class injected by DefaultStorageClass counts as none.
    pub replace_cluster_default: bool,
    /// Cross-tenant binding protection (absent = no check).
    pub volume_binding: Option<VolumeBinding>,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawVolumeBinding> for VolumeBinding {
    type Error = SettingsError;

    fn try_from(raw: RawVolumeBinding) -> Result<Self, SettingsError> {
        let tenant_label = raw
            .tenant_label
            .unwrap_or_else(|| DEFAULT_TENANT_LABEL.to_owned());
        if tenant_label.is_empty() {
            return Err(SettingsError::new("tenantLabel", "must not be empty"));
        }
        if !is_reread() && !is_label_key(&tenant_label) {
            return Err(SettingsError::new(
                "tenantLabel",
                format!("{tenant_label:?} is not a valid label key"),
            ));
        }
        Ok(VolumeBinding {
            tenant_label,
            allow_unlabelled_volumes: raw.allow_unlabelled_volumes.unwrap_or(false),
            pin_selector: raw.pin_selector.unwrap_or(true),
        })
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        if raw.storage_classes.is_none() && raw.volume_binding.is_none() {
            return Err(SettingsError::new(
                "",
                "at least one of storageClasses and volumeBinding is required",
            ));
        }
        let storage_classes = match raw.storage_classes {
            Some(s) => Some(ClassAllowList::build(s, true).map_err(|e| e.under("storageClasses"))?),
            None => None,
        };
        let volume_binding = match raw.volume_binding {
            Some(vb) => Some(VolumeBinding::try_from(vb).map_err(|e| e.under("volumeBinding"))?),
            None => None,
        };
        Ok(Settings {
            storage_classes,
            replace_cluster_default: raw.replace_cluster_default.unwrap_or(true),
            volume_binding,
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({}), "at least one of storageClasses and volumeBinding is required")]
    #[case(json!({"onLookupError": "accept"}), "at least one of storageClasses and volumeBinding is required")]
    #[case(json!({"storageClasses": {}}), "storageClasses: the class allow-list needs at least one of")]
    #[case(json!({"storageClasses": {"selector": {}}}), "storageClasses.selector: an empty selector is ambiguous")]
    #[case(json!({"storageClasses": {"allowed": ["a"], "class": "b"}}), "storageClasses.class: unknown field")]
    #[case(json!({"storageClasses": {"selector": {"matchLabels": {"bad key": "x"}}}}), "storageClasses.selector.matchLabels[\"bad key\"]: invalid label key")]
    #[case(json!({"volumeBinding": {"tenantLabel": ""}}), "volumeBinding.tenantLabel: must not be empty")]
    #[case(json!({"volumeBinding": {"tenantLabel": "tenant name"}}), "volumeBinding.tenantLabel: \"tenant name\" is not a valid label key")]
    #[case(json!({"volumeBinding": {"pinSelector": "yes"}}), "volumeBinding.pinSelector: invalid type")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({"volumeBinding": {}})).unwrap();
        let vb = s.volume_binding.unwrap();
        assert_eq!(vb.tenant_label, DEFAULT_TENANT_LABEL);
        assert!(vb.pin_selector);
        assert!(!vb.allow_unlabelled_volumes);
        assert!(s.replace_cluster_default);
    }
}
