//! Settings of resource-ratio-policy (README "Settings"): `mode`, the fair-use `ratios`
//! (memory per CPU core, first matching entry applies), the node selector assumed for Pods
//! without one, the namespace opt-out annotation, `tolerance`, `exemptPrincipals`,
//! `trustedControllers`, `onLookupError`.

use std::collections::BTreeMap;

use kube_values::quantity::Quantity;
use kube_values::selector::{LabelSelector, RawLabelSelector, RawRequirement};
use policy_admission::Mode;
use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::names::NameMap;
use policy_decode::settings::Validated;
use policy_decode::settings::{converted, is_reread};
use policy_decode::strict::Nullable;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
use tenancy_rules::node_defaults::{check_annotation, check_pairs};
use tenancy_rules::principal::{Principals, RawPrincipals};

/// The namespace annotation that turns the policy off when it is `true` (APPUiO's).
pub const DEFAULT_DISABLE_ANNOTATION: &str = "validate-request-ratio.appuio.io/disable";

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    mode: Option<Mode>,
    // Each entry is validated as it is decoded (see `Ratio`'s `Deserialize`).
    #[serde(default)]
    ratios: Option<Vec<Ratio>>,
    #[serde(default)]
    default_node_selector: Option<NameMap>,
    #[serde(default)]
    default_node_selector_annotation: Option<String>,
    // absent: the default annotation; null: no opt-out
    #[serde(default)]
    disable_annotation: Nullable<String>,
    #[serde(default)]
    tolerance: Option<Tolerance>,
    #[serde(default)]
    exempt_principals: Option<RawExemptPrincipals>,
    #[serde(default)]
    trusted_controllers: Option<RawPrincipals>,
    #[serde(default)]
    on_lookup_error: Option<OnLookupError>,
}

/// One `ratios` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRatio {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    node_selector: Option<RawEntrySelector>,
    #[serde(default)]
    min: Option<Bound>,
    #[serde(default)]
    max: Option<Bound>,
}

/// A bound of memory per core as written (`4Gi`, or a JSON number of bytes), with its value:
/// a bound that is no quantity is refused while the settings are decoded, re-read or not, so
/// settings `validate` accepts never fail later. Its range (above zero, `min ≤ max`) is
/// checked when the settings are validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound(Quantity);

impl Bound {
    /// The bound as written, for messages.
    pub fn text(&self) -> &str {
        self.0.as_written().unwrap_or_default()
    }

    /// The bound's value.
    pub fn quantity(&self) -> &Quantity {
        &self.0
    }

    /// The bound `text`, when it is a quantity.
    fn parse<E: serde::de::Error>(text: &str) -> Result<Bound, E> {
        match Quantity::parse(text) {
            Ok(q) => Ok(Bound(q)),
            Err(e) => Err(E::custom(e)),
        }
    }
}

impl<'de> Deserialize<'de> for Bound {
    /// A string, or a JSON number read from its decimal text (as Kubernetes reads quantities).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BoundVisitor;

        impl serde::de::Visitor<'_> for BoundVisitor {
            type Value = Bound;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a quantity (a string such as \"4Gi\" or a number)")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bound, E> {
                Bound::parse(v)
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bound, E> {
                Bound::parse(&v.to_string())
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bound, E> {
                Bound::parse(&v.to_string())
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Bound, E> {
                match v.is_finite() {
                    true => Bound::parse(&v.to_string()),
                    false => Err(E::custom("a quantity must be finite")),
                }
            }
        }

        deserializer.deserialize_any(BoundVisitor)
    }
}

/// One fair-use ratio: memory per CPU core between `min` and `max` for the Pods its node
/// selector matches.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    /// The node class named in messages (`node class "plus"`); unnamed entries are named by
    /// their position (`ratios[1]`).
    pub name: Option<String>,
    /// Over the Pod's node-selector map; `None` matches every Pod.
    pub node_selector: Option<EntrySelector>,
    /// The least memory per core (bytes per core).
    pub min: Option<Bound>,
    /// The most memory per core (bytes per core).
    pub max: Option<Bound>,
}

/// An entry's node selector as written: a label selector whose `matchLabels` are kept as
/// pairs in document order (a map per entry would cost more than the pairs).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEntrySelector {
    #[serde(default, deserialize_with = "pairs")]
    match_labels: Option<Vec<(String, String)>>,
    #[serde(default)]
    match_expressions: Option<Vec<RawRequirement>>,
}

/// Reads a JSON object of strings as its pairs, in document order.
fn pairs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(String, String)>>, D::Error> {
    struct PairsVisitor;

    impl<'de> serde::de::Visitor<'de> for PairsVisitor {
        type Value = Option<Vec<(String, String)>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of label keys to values")
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(1));
            while let Some(pair) = map.next_entry::<String, String>()? {
                pairs.push(pair);
            }
            Ok(Some(pairs))
        }
    }

    d.deserialize_any(PairsVisitor)
}

/// An entry's node selector. When the settings are validated the core builds (and checks)
/// every selector; when `validate` re-reads them, a selector of `matchLabels` only is kept as
/// decoded and matched by equality, without building a core selector: settings may list
/// many node classes (`docs/semantics.md#cost`).
#[derive(Clone, Debug, PartialEq)]
pub enum EntrySelector {
    /// `matchLabels` only (re-read settings).
    Labels(Vec<(String, String)>),
    /// Any selector, built by the core.
    Core(LabelSelector),
}

impl EntrySelector {
    /// Validates a selector (errors relative to it); see the type's docs for re-reads.
    fn build(raw: RawEntrySelector) -> Result<Self, SettingsError> {
        let no_expressions = raw.match_expressions.as_ref().is_none_or(Vec::is_empty);
        match raw.match_labels {
            Some(labels) if is_reread() && no_expressions && !labels.is_empty() => {
                Ok(EntrySelector::Labels(labels))
            }
            labels => {
                let raw = RawLabelSelector {
                    match_labels: labels.map(|l| l.into_iter().collect::<BTreeMap<_, _>>()),
                    match_expressions: raw.match_expressions,
                };
                LabelSelector::build(&raw).map(EntrySelector::Core)
            }
        }
    }

    /// Whether a node-selector map (`labels` answers its values) satisfies the selector.
    pub fn matches<'a>(&self, labels: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            EntrySelector::Labels(pairs) => {
                pairs.iter().all(|(k, v)| labels(k) == Some(v.as_str()))
            }
            EntrySelector::Core(selector) => selector.matches(labels),
        }
    }
}

/// Parses a bound and refuses one that is not above zero (errors relative to the bound).
fn positive(bound: Option<&Bound>) -> Result<Option<Quantity>, SettingsError> {
    let Some(bound) = bound else {
        return Ok(None);
    };
    let q = bound.quantity().clone();
    if q.is_negative() || q.is_zero() {
        return Err(SettingsError::new(
            "",
            format!("must be greater than 0, found {:?}", bound.text()),
        ));
    }
    Ok(Some(q))
}

/// Checks the bounds of an entry: quantities above zero, `min ≤ max` (skipped when settings
/// are re-read: `validate_settings` made them, and the bounds are parsed when they apply).
fn check_bounds(min: Option<&Bound>, max: Option<&Bound>) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    let low = positive(min).map_err(|e| e.under("min"))?;
    let high = positive(max).map_err(|e| e.under("max"))?;
    if let (Some(low), Some(high)) = (low, high)
        && low > high
    {
        return Err(SettingsError::new(
            "",
            format!(
                "min {} is greater than max {}",
                min.map(Bound::text).unwrap_or_default(),
                max.map(Bound::text).unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// Validates one entry; error paths are relative to it (`nodeSelector`, `min`).
impl TryFrom<RawRatio> for Ratio {
    type Error = SettingsError;

    fn try_from(raw: RawRatio) -> Result<Self, SettingsError> {
        if raw.name.as_deref() == Some("") {
            return Err(SettingsError::new("name", "must not be empty"));
        }
        let node_selector = match raw.node_selector {
            Some(s) => Some(EntrySelector::build(s).map_err(|e| e.under("nodeSelector"))?),
            None => None,
        };
        if raw.min.is_none() && raw.max.is_none() {
            return Err(SettingsError::new(
                "",
                "give min, max or both (memory per CPU core)",
            ));
        }
        check_bounds(raw.min.as_ref(), raw.max.as_ref())?;
        Ok(Ratio {
            name: raw.name,
            node_selector,
            min: raw.min,
            max: raw.max,
        })
    }
}

/// Entries are validated as they are decoded; errors name the entry (`ratios[1].min`).
impl<'de> Deserialize<'de> for Ratio {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        converted(Ratio::try_from(RawRatio::deserialize(deserializer)?))
    }
}

/// `tolerance`: a decimal number in (0, 1], written as a JSON number (`0.95`) or a string of
/// digits with an optional fraction (`"0.95"`); quantity suffixes (`950m`) are refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Tolerance(pub Quantity);

impl Tolerance {
    /// Reads a tolerance from its JSON value.
    fn read(value: &Value) -> Result<Self, SettingsError> {
        let refused = |found: String| {
            SettingsError::new(
                "",
                format!("must be a decimal number in (0, 1], found {found}"),
            )
        };
        let quantity = match value {
            Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
            Value::String(s) if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') => {
                Quantity::parse(s).ok()
            }
            _ => None,
        };
        match quantity {
            Some(q) if q.nanos() > 0 && q.nanos() <= 1_000_000_000 => Ok(Tolerance(q)),
            _ => Err(refused(value.to_string())),
        }
    }
}

impl<'de> Deserialize<'de> for Tolerance {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        converted(Tolerance::read(&Value::deserialize(deserializer)?))
    }
}

/// Validated settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `warn` (default) or `enforce`.
    pub mode: Mode,
    /// The fair-use ratios, in settings order (the first matching one applies).
    pub ratios: Vec<Ratio>,
    /// The node selector assumed for Pods without one.
    pub default_node_selector: NameMap,
    /// Namespace annotation (`k=v,k2=v2`) replacing `default_node_selector` there.
    pub default_node_selector_annotation: Option<String>,
    /// Namespace annotation that turns the policy off when `true` (any case); `None`: no
    /// opt-out.
    pub disable_annotation: Option<String>,
    /// Factor in (0, 1] the bounds are widened by.
    pub tolerance: Quantity,
    /// Requesters never judged.
    pub exempt_principals: ExemptPrincipals,
    /// Controllers whose controlled objects are not judged in `warn` mode.
    pub trusted_controllers: Principals,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let ratios = raw.ratios.unwrap_or_default();
        if ratios.is_empty() {
            return Err(SettingsError::new(
                "ratios",
                "at least one entry is required",
            ));
        }
        let default_node_selector = raw.default_node_selector.unwrap_or_default();
        check_pairs("defaultNodeSelector", &default_node_selector)?;
        check_annotation(
            "defaultNodeSelectorAnnotation",
            raw.default_node_selector_annotation.as_deref(),
        )?;
        let disable_annotation = match raw.disable_annotation {
            Nullable::Absent => Some(DEFAULT_DISABLE_ANNOTATION.to_owned()),
            Nullable::Null => None,
            Nullable::Value(a) => Some(a),
        };
        check_annotation("disableAnnotation", disable_annotation.as_deref())?;
        let exempt_principals = ExemptPrincipals::build(raw.exempt_principals.unwrap_or_default())
            .map_err(|e| e.under("exemptPrincipals"))?;
        let trusted_controllers = match raw.trusted_controllers {
            Some(t) => Principals::build(t).map_err(|e| e.under("trustedControllers"))?,
            None => Principals::default_trusted_controllers(),
        };
        Ok(Settings {
            mode: raw.mode.unwrap_or(Mode::Warn),
            ratios,
            default_node_selector,
            default_node_selector_annotation: raw.default_node_selector_annotation,
            disable_annotation,
            tolerance: raw.tolerance.map_or_else(|| Quantity::from_int(1), |t| t.0),
            exempt_principals,
            trusted_controllers,
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn ratios() -> Value {
        json!([{"name": "plus", "nodeSelector": {"matchLabels": {"appuio.io/node-class": "plus"}}, "min": "4Gi"},
               {"name": "flex", "min": "3Gi", "max": "8Gi"}])
    }

    #[rstest]
    #[case(json!({}), "ratios: at least one entry is required")]
    #[case(json!({"ratios": []}), "ratios: at least one entry is required")]
    #[case(json!({"ratios": null}), "ratios: invalid type: null")]
    #[case(json!({"ratios": [{"min": "8Gi", "max": "4Gi"}]}), "ratios[0]: min 8Gi is greater than max 4Gi")]
    #[case(json!({"ratios": [{"min": "1Gi"}, {"nodeSelector": {}, "min": "1Gi"}]}), "ratios[1].nodeSelector: an empty selector is ambiguous")]
    #[case(json!({"ratios": [{"name": "x"}]}), "ratios[0]: give min, max or both")]
    #[case(json!({"ratios": [{"min": "0"}]}), "ratios[0].min: must be greater than 0, found \"0\"")]
    #[case(json!({"ratios": [{"max": "-1Gi"}]}), "ratios[0].max: must be greater than 0, found \"-1Gi\"")]
    #[case(json!({"ratios": [{"min": "lots"}]}), "ratios[0].min: \"lots\" is not a quantity")]
    #[case(json!({"ratios": [{"min": "1Gi", "name": ""}]}), "ratios[0].name: must not be empty")]
    #[case(json!({"ratios": [{"min": "1Gi", "class": "x"}]}), "ratios[0].class: unknown field `class`")]
    #[case(json!({"ratios": [{"min": "1Gi", "nodeSelector": {"matchLabels": {"a": "b c"}}}]}), "ratios[0].nodeSelector.matchLabels[\"a\"]: invalid label value")]
    #[case(json!({"ratios": ratios(), "mode": "audit"}), "mode: unknown variant `audit`")]
    #[case(json!({"ratios": ratios(), "tolerance": 0}), "tolerance: must be a decimal number in (0, 1], found 0")]
    #[case(json!({"ratios": ratios(), "tolerance": -0.5}), "tolerance: must be a decimal number in (0, 1], found -0.5")]
    #[case(json!({"ratios": ratios(), "tolerance": 1.5}), "tolerance: must be a decimal number in (0, 1], found 1.5")]
    #[case(json!({"ratios": ratios(), "tolerance": "950m"}), "tolerance: must be a decimal number in (0, 1], found \"950m\"")]
    #[case(json!({"ratios": ratios(), "tolerance": "high"}), "tolerance: must be a decimal number in (0, 1], found \"high\"")]
    #[case(json!({"ratios": ratios(), "tolerance": true}), "tolerance: must be a decimal number in (0, 1], found true")]
    #[case(json!({"ratios": ratios(), "tolerance": null}), "tolerance: invalid type: null (write a value, or leave the key out)")]
    #[case(json!({"ratios": ratios(), "disableAnnotation": "not an annotation"}), "disableAnnotation: \"not an annotation\" is not a valid annotation key")]
    #[case(json!({"ratios": ratios(), "disableAnnotation": ""}), "disableAnnotation: \"\" is not a valid annotation key")]
    #[case(json!({"ratios": ratios(), "defaultNodeSelectorAnnotation": "a b"}), "defaultNodeSelectorAnnotation: \"a b\" is not a valid annotation key")]
    #[case(json!({"ratios": ratios(), "defaultNodeSelector": {"-x": "a"}}), "defaultNodeSelector[\"-x\"]: invalid label key")]
    #[case(json!({"ratios": ratios(), "exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"ratios": ratios(), "exemptPrincipals": {"roles": ["x"]}}), "exemptPrincipals.roles: unknown field `roles`")]
    #[case(json!({"ratios": ratios(), "trustedControllers": {"serviceAccounts": ["*:deployer"]}}), "trustedControllers.serviceAccounts[0]: ")]
    #[case(json!({"ratios": ratios(), "onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"ratios": ratios(), "ratio": []}), "ratio: unknown field `ratio`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let e = Settings::parse(&raw).unwrap_err().to_string();
        assert!(e.starts_with(message), "{e}");
    }

    #[test]
    fn defaults() {
        let s = Settings::parse(&json!({"ratios": [{"min": "4Gi"}]})).unwrap();
        assert_eq!(s.mode, Mode::Warn);
        assert_eq!(s.tolerance, Quantity::from_int(1));
        assert_eq!(
            s.disable_annotation.as_deref(),
            Some(DEFAULT_DISABLE_ANNOTATION)
        );
        assert_eq!(
            s.trusted_controllers,
            Principals::default_trusted_controllers()
        );
        assert!(s.exempt_principals.is_empty());
        assert_eq!(s.on_lookup_error, OnLookupError::Reject);
    }

    #[rstest]
    #[case(json!(0.95), "950m")]
    #[case(json!("0.95"), "950m")]
    #[case(json!(1), "1")]
    #[case(json!("1"), "1")]
    #[case(json!(".5"), "500m")]
    #[case(json!(1e-3), "1m")]
    fn tolerances(#[case] tolerance: Value, #[case] expected: &str) {
        let s = Settings::parse(&json!({"ratios": ratios(), "tolerance": tolerance})).unwrap();
        assert_eq!(s.tolerance, Quantity::parse(expected).unwrap());
    }

    #[test]
    fn disable_annotation_null_turns_the_opt_out_off() {
        let s = Settings::parse(&json!({"ratios": ratios(), "disableAnnotation": null})).unwrap();
        assert_eq!(s.disable_annotation, None);
        let s =
            Settings::parse(&json!({"ratios": ratios(), "disableAnnotation": "example.com/off"}))
                .unwrap();
        assert_eq!(s.disable_annotation.as_deref(), Some("example.com/off"));
    }

    #[test]
    fn entries_keep_settings_order_and_equal_bounds_are_allowed() {
        let s = Settings::parse(&json!({"ratios": [
            {"name": "b", "min": "4Gi", "max": "4Gi"}, {"name": "a", "max": 8}]}))
        .unwrap();
        let names: Vec<_> = s.ratios.iter().map(|r| r.name.as_deref()).collect();
        assert_eq!(names, [Some("b"), Some("a")]);
        assert_eq!(s.ratios[1].max, Some(Bound(Quantity::parse("8").unwrap())));
    }

    #[test]
    fn re_read_selectors_of_labels_only_match_like_core_selectors() {
        let raw = json!({"ratios": [
            {"nodeSelector": {"matchLabels": {"a": "1", "b": "2"}}, "min": "1"},
            {"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, "min": "1"},
            {"nodeSelector": {}, "min": "1"}]});
        let built =
            Settings::parse(&json!({"ratios": [raw["ratios"][0], raw["ratios"][1]]})).unwrap();
        let reread = policy_decode::settings::reread(|| {
            Settings::parse(&json!({"ratios": [raw["ratios"][0], raw["ratios"][1]]}))
        })
        .unwrap();
        assert!(matches!(
            reread.ratios[0].node_selector,
            Some(EntrySelector::Labels(_))
        ));
        assert!(matches!(
            built.ratios[0].node_selector,
            Some(EntrySelector::Core(_))
        ));
        assert!(matches!(
            reread.ratios[1].node_selector,
            Some(EntrySelector::Core(_))
        ));
        let maps: [&[(&str, &str)]; 4] = [
            &[("a", "1"), ("b", "2")],
            &[("a", "1")],
            &[("b", "2"), ("a", "1"), ("c", "3")],
            &[],
        ];
        for map in maps {
            let get = |k: &str| map.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
            for i in 0..2 {
                let (b, r) = (
                    built.ratios[i].node_selector.as_ref().unwrap(),
                    reread.ratios[i].node_selector.as_ref().unwrap(),
                );
                assert_eq!(b.matches(get), r.matches(get), "{map:?} {i}");
            }
        }
        // an empty selector is refused when re-read too
        let e = policy_decode::settings::reread(|| Settings::parse(&raw)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("ratios[2].nodeSelector: an empty selector"),
            "{e}"
        );
    }
}
