//! Settings of node-selector-policy.

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::names::NameMap;
use serde::Deserialize;

use policy_decode::settings::Validated;
use tenancy_rules::node_defaults::{check_annotation, check_pairs};

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

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    required_node_selector: NameMap,
    #[serde(default)]
    default_node_selector: NameMap,
    default_node_selector_annotation: Option<String>,
    default_mode: Option<DefaultMode>,
    #[serde(default)]
    forbid_node_name: bool,
    on_lookup_error: Option<OnLookupError>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Pairs every Pod must carry (merged on CREATE in this order, conflicts rejected).
    pub required_node_selector: NameMap,
    /// Pairs added when the Pod does not choose them, in this order.
    pub default_node_selector: NameMap,
    /// Namespace annotation replacing `default_node_selector` there.
    pub default_node_selector_annotation: Option<String>,
    /// How defaults are added.
    pub default_mode: DefaultMode,
    /// Refuse `spec.nodeName` pinning.
    pub forbid_node_name: bool,
    /// What a failed Namespace or Node lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        check_pairs("requiredNodeSelector", &raw.required_node_selector)?;
        check_pairs("defaultNodeSelector", &raw.default_node_selector)?;
        check_annotation(
            "defaultNodeSelectorAnnotation",
            raw.default_node_selector_annotation.as_deref(),
        )?;
        for (k, v) in raw.default_node_selector.iter() {
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
    use policy_decode::settings::Raw;
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
    #[case(json!({"requiredNodeSelector": {"pool": 1}}), "requiredNodeSelector.pool: invalid type: integer `1`, expected a string")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn repeated_keys_are_refused() {
        let raw = r#"{"requiredNodeSelector": {"pool": "a", "zone": "b", "pool": "c"}}"#;
        let err = Settings::parse(Raw::Json(raw)).unwrap_err().to_string();
        assert_eq!(err, "requiredNodeSelector[\"pool\"]: repeated key");
    }

    #[test]
    fn minimal() {
        let s = Settings::parse(&json!({"requiredNodeSelector": {"pool": "renewable"}})).unwrap();
        assert_eq!(s.default_mode, DefaultMode::MissingKeys);
    }
}
