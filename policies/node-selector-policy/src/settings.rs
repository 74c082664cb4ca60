//! Settings of node-selector-policy.

use std::collections::BTreeMap;

use policy_core::SettingsError;
use policy_core::cluster::OnLookupError;
use policy_core::settings::{Raw, decode};
use serde::Deserialize;

use crate::labels::{is_label_key, is_label_value};

/// How default pairs are added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DefaultMode {
    /// Add each default key the Pod lacks (APPUiO's implementation).
    #[default]
    MissingKeys,
    /// Add the defaults only to Pods without nodeSelector (APPUiO's description).
    WhenEmpty,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSettings {
    #[serde(default)]
    required_node_selector: BTreeMap<String, String>,
    #[serde(default)]
    default_node_selector: BTreeMap<String, String>,
    default_node_selector_annotation: Option<String>,
    default_mode: Option<DefaultMode>,
    #[serde(default)]
    forbid_node_name: bool,
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Pairs every Pod must carry (merged on CREATE, conflicts rejected).
    pub required_node_selector: BTreeMap<String, String>,
    /// Pairs added when the Pod does not choose them.
    pub default_node_selector: BTreeMap<String, String>,
    /// Namespace annotation replacing `default_node_selector` there.
    pub default_node_selector_annotation: Option<String>,
    /// How defaults are added.
    pub default_mode: DefaultMode,
    /// Refuse `spec.nodeName` pinning.
    pub forbid_node_name: bool,
    /// What a failed Namespace or Node lookup does.
    pub on_lookup_error: OnLookupError,
}

fn check_map(name: &str, map: &BTreeMap<String, String>) -> Result<(), SettingsError> {
    for (k, v) in map {
        if !is_label_key(k) {
            return Err(SettingsError::new(
                format!("{name}[{k:?}]"),
                "invalid label key",
            ));
        }
        if !is_label_value(v) {
            return Err(SettingsError::new(
                format!("{name}[{k:?}]"),
                format!("invalid label value {v:?}"),
            ));
        }
    }
    Ok(())
}

impl Settings {
    /// Decodes and validates raw settings.
    pub fn parse<'a>(raw: impl Into<Raw<'a>>) -> Result<Self, SettingsError> {
        let raw: RawSettings = decode(raw)?;
        check_map("requiredNodeSelector", &raw.required_node_selector)?;
        check_map("defaultNodeSelector", &raw.default_node_selector)?;
        if let Some(a) = &raw.default_node_selector_annotation
            && !is_label_key(a)
        {
            return Err(SettingsError::new(
                "defaultNodeSelectorAnnotation",
                format!("{a:?} is not a valid annotation key"),
            ));
        }
        for (k, v) in &raw.default_node_selector {
            if let Some(r) = raw.required_node_selector.get(k)
                && r != v
            {
                return Err(SettingsError::new(
                    format!("defaultNodeSelector[{k:?}]"),
                    format!("{v:?} conflicts with requiredNodeSelector {k}={r}"),
                ));
            }
        }
        if raw.required_node_selector.is_empty()
            && raw.default_node_selector.is_empty()
            && raw.default_node_selector_annotation.is_none()
            && !raw.forbid_node_name
        {
            return Err(SettingsError::new(
                "",
                "nothing to enforce: configure requiredNodeSelector, defaultNodeSelector, defaultNodeSelectorAnnotation or forbidNodeName",
            ));
        }
        Ok(Settings {
            required_node_selector: raw.required_node_selector,
            default_node_selector: raw.default_node_selector,
            default_node_selector_annotation: raw.default_node_selector_annotation,
            default_mode: raw.default_mode.unwrap_or_default(),
            forbid_node_name: raw.forbid_node_name,
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
    #[case(json!({}), "nothing to enforce")]
    #[case(json!({"onLookupError": "accept"}), "nothing to enforce")]
    #[case(json!({"requiredNodeSelector": {"pool": "a b"}}), "requiredNodeSelector[\"pool\"]: invalid label value \"a b\"")]
    #[case(json!({"defaultNodeSelector": {"-x": "a"}}), "defaultNodeSelector[\"-x\"]: invalid label key")]
    #[case(json!({"requiredNodeSelector": {"pool": "a"}, "defaultNodeSelector": {"pool": "b"}}), "defaultNodeSelector[\"pool\"]: \"b\" conflicts with requiredNodeSelector pool=a")]
    #[case(json!({"forbidNodeName": true, "defaultMode": "always"}), "defaultMode: unknown variant `always`")]
    #[case(json!({"defaultNodeSelectorAnnotation": "not an annotation"}), "defaultNodeSelectorAnnotation: \"not an annotation\" is not a valid annotation key")]
    #[case(json!({"forbidNodeName": true, "nodeSelector": {}}), "nodeSelector: unknown field `nodeSelector`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn minimal() {
        let s = Settings::parse(&json!({"requiredNodeSelector": {"pool": "renewable"}})).unwrap();
        assert_eq!(s.default_mode, DefaultMode::MissingKeys);
    }
}
