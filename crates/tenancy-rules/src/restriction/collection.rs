//! Collection primitives: Collection (emptiness), StringMap and StringList restrictions.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::scalar::{RawString, StringRestriction};
use super::{Restriction, found, list, non_nil, quote, violation};
use policy_admission::verdict::Violation;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::names::NameList;
use policy_decode::path::FieldPath;

/// Settings of a Collection restriction: `forbidEmpty`, `requireEmpty`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawCollection {
    /// An absent or empty collection is a violation.
    pub forbid_empty: Option<bool>,
    /// A non-empty collection is a violation.
    pub require_empty: Option<bool>,
}

/// What a collection restriction says about emptiness (absent, `null`, `[]` or `{}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Emptiness {
    /// Any size.
    #[default]
    Any,
    /// Must have at least one element (`forbidEmpty`).
    NonEmpty,
    /// Must be absent or empty (`requireEmpty`).
    Empty,
}

impl Emptiness {
    /// Validates `forbidEmpty`/`requireEmpty`; both true is refused.
    pub fn build(raw: &RawCollection) -> Result<Emptiness, SettingsError> {
        match (
            raw.forbid_empty.unwrap_or(false),
            raw.require_empty.unwrap_or(false),
        ) {
            (true, true) => Err(SettingsError::new(
                "requireEmpty",
                "cannot be combined with forbidEmpty",
            )),
            (true, false) => Ok(Emptiness::NonEmpty),
            (false, true) => Ok(Emptiness::Empty),
            (false, false) => Ok(Emptiness::Any),
        }
    }

    /// Records the emptiness violation of `value` (nil, a list or a map), if any.
    fn judge(&self, value: Option<&Value>, len: usize, path: &FieldPath, out: &mut Vec<Violation>) {
        match self {
            Emptiness::NonEmpty if len == 0 => {
                let shown = value.map_or_else(|| "nil".to_owned(), found);
                violation(out, path, format!("{shown}, a non-empty value is required"));
            }
            Emptiness::Empty if len > 0 => {
                let shown = value.map_or_else(String::new, found);
                violation(out, path, format!("{shown}, an empty value is required"));
            }
            _ => {}
        }
    }

    /// Refuses `requireEmpty` together with a field restricting the elements.
    fn exclusive(&self, others: &[(&str, bool)]) -> Result<(), SettingsError> {
        if *self == Emptiness::Empty
            && let Some((field, _)) = others.iter().find(|(_, set)| *set)
        {
            return Err(SettingsError::new(
                "requireEmpty",
                format!("cannot be combined with {field}"),
            ));
        }
        Ok(())
    }
}

/// A validated Collection restriction on a list or a map (e.g. the whole `volumes` list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectionRestriction {
    /// The emptiness rule.
    pub emptiness: Emptiness,
}

impl CollectionRestriction {
    /// Validates settings (see [`Emptiness::build`]).
    pub fn build(raw: RawCollection) -> Result<CollectionRestriction, SettingsError> {
        Ok(CollectionRestriction {
            emptiness: Emptiness::build(&raw)?,
        })
    }
}

impl Restriction for CollectionRestriction {
    /// A non-nil value must be a list or an object.
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let value = non_nil(value);
        let len = match value {
            None => 0,
            Some(Value::Array(a)) => a.len(),
            Some(Value::Object(o)) => o.len(),
            Some(_) => return Err(PolicyError::malformed(path, "expected a list or an object")),
        };
        self.emptiness.judge(value, len, path, out);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// StringMap
// ---------------------------------------------------------------------------------------

/// Settings of a StringMap restriction (labels, annotations, node selectors): collection +
/// `keyWhitelist`, `keyBlacklist`, `requiredKeys` (alias `requireKeys`), `values` (alias
/// `valueRestrictions`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawStringMap {
    /// An absent or empty map is a violation.
    pub forbid_empty: Option<bool>,
    /// A non-empty map is a violation.
    pub require_empty: Option<bool>,
    /// Allowed keys.
    pub key_whitelist: Option<NameList>,
    /// Refused keys.
    pub key_blacklist: Option<NameList>,
    /// Keys that must be present.
    #[serde(alias = "requireKeys")]
    pub required_keys: Option<NameList>,
    /// A String restriction per key, judging that key's value (absent key = nil).
    #[serde(alias = "valueRestrictions")]
    pub values: Option<BTreeMap<String, RawString>>,
}

/// A validated StringMap restriction.
///
/// Violations, in order: emptiness (at the map); for each key in document order, a
/// blacklisted key or a key outside the whitelist, then `values[key]` (at the key);
/// missing required keys (at the map); then `values[key]` for absent keys (nil), except keys
/// already reported as required.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringMapRestriction {
    emptiness: Emptiness,
    key_whitelist: Option<NameList>,
    key_blacklist: NameList,
    required_keys: NameList,
    values: BTreeMap<String, StringRestriction>,
}

impl StringMapRestriction {
    /// Validates settings. Refused: `forbidEmpty` with `requireEmpty`; `requireEmpty` with
    /// any key or value field; a required key or a `values` key that is blacklisted or
    /// outside a non-empty whitelist; invalid `values["k"]` settings. An empty
    /// `keyWhitelist: []` restricts nothing (pod-restriction README rule 6: only a key outside
    /// a non-empty whitelist is a violation).
    pub fn build(raw: RawStringMap) -> Result<StringMapRestriction, SettingsError> {
        let emptiness = Emptiness::build(&RawCollection {
            forbid_empty: raw.forbid_empty,
            require_empty: raw.require_empty,
        })?;
        emptiness.exclusive(&[
            ("keyWhitelist", raw.key_whitelist.is_some()),
            ("keyBlacklist", raw.key_blacklist.is_some()),
            ("requiredKeys", raw.required_keys.is_some()),
            ("values", raw.values.is_some()),
        ])?;
        // An empty key whitelist restricts nothing (pod-restriction README rule 6).
        let key_whitelist = raw.key_whitelist.filter(|w| !w.is_empty());
        let key_blacklist = raw.key_blacklist.unwrap_or_default();
        let key_problem = |key: &str| -> Option<String> {
            if key_blacklist.contains(key) {
                Some(format!("{} is in keyBlacklist", quote(key)))
            } else if key_whitelist.as_ref().is_some_and(|w| !w.contains(key)) {
                Some(format!("{} is not in keyWhitelist", quote(key)))
            } else {
                None
            }
        };
        let required_keys = raw.required_keys.unwrap_or_default();
        for (i, key) in required_keys.iter().enumerate() {
            if let Some(problem) = key_problem(key) {
                return Err(SettingsError::new(format!("requiredKeys[{i}]"), problem));
            }
        }
        let mut values = BTreeMap::new();
        for (key, raw_value) in raw.values.unwrap_or_default() {
            let at = format!("values[{}]", quote(&key));
            if let Some(problem) = key_problem(&key) {
                return Err(SettingsError::new(at, problem));
            }
            let restriction = StringRestriction::build(raw_value).map_err(|e| e.under(&at))?;
            values.insert(key, restriction);
        }
        Ok(StringMapRestriction {
            emptiness,
            key_whitelist,
            key_blacklist,
            required_keys,
            values,
        })
    }

    fn judge_map(
        &self,
        map: Option<&Map<String, Value>>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let empty = Map::new();
        let map = map.unwrap_or(&empty);
        for (key, value) in map {
            let at = path.key(key);
            let value = match value {
                Value::String(_) | Value::Null => value,
                _ => return Err(PolicyError::malformed(&at, "expected a string")),
            };
            if self.key_blacklist.contains(key) {
                violation(
                    out,
                    &at,
                    format!(
                        "key {} is in key blacklist {}",
                        quote(key),
                        list(&self.key_blacklist)
                    ),
                );
            } else if let Some(w) = &self.key_whitelist
                && !w.contains(key)
            {
                violation(
                    out,
                    &at,
                    format!("key {} is not in key whitelist {}", quote(key), list(w)),
                );
            }
            if let Some(r) = self.values.get(key) {
                r.check(Some(value), &at, out)?;
            }
        }
        for key in self.required_keys.iter() {
            if !map.contains_key(key) {
                violation(out, path, format!("key {} is required", quote(key)));
            }
        }
        for (key, r) in &self.values {
            if !map.contains_key(key) && !self.required_keys.contains(key) {
                r.check(None, &path.key(key), out)?;
            }
        }
        Ok(())
    }
}

impl Restriction for StringMapRestriction {
    /// A non-nil value must be an object whose values are strings.
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let value = non_nil(value);
        let map = match value {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(PolicyError::malformed(path, "expected an object")),
        };
        self.emptiness
            .judge(value, map.map_or(0, Map::len), path, out);
        self.judge_map(map, path, out)
    }
}

// ---------------------------------------------------------------------------------------
// StringList
// ---------------------------------------------------------------------------------------

/// Settings of a StringList restriction (capabilities `add`/`drop`): collection + `values`
/// (a String restriction per element) and `requiredValues`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawStringList {
    /// An absent or empty list is a violation.
    pub forbid_empty: Option<bool>,
    /// A non-empty list is a violation.
    pub require_empty: Option<bool>,
    /// The restriction every element must satisfy.
    pub values: Option<RawString>,
    /// Values that must be present.
    pub required_values: Option<Vec<String>>,
}

/// A validated StringList restriction.
///
/// Violations, in order: emptiness (at the list); each element judged by `values` (at
/// `list[i]`); each missing required value (at the list).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringListRestriction {
    emptiness: Emptiness,
    values: Option<StringRestriction>,
    required_values: Vec<String>,
}

impl StringListRestriction {
    /// Validates settings. Refused: `forbidEmpty` with `requireEmpty`; `requireEmpty` with
    /// `values` or `requiredValues`; invalid `values` settings; a required value that
    /// `values` refuses (`requiredValues[i]`).
    pub fn build(raw: RawStringList) -> Result<StringListRestriction, SettingsError> {
        let emptiness = Emptiness::build(&RawCollection {
            forbid_empty: raw.forbid_empty,
            require_empty: raw.require_empty,
        })?;
        emptiness.exclusive(&[
            ("values", raw.values.is_some()),
            ("requiredValues", raw.required_values.is_some()),
        ])?;
        let values = raw
            .values
            .map(StringRestriction::build)
            .transpose()
            .map_err(|e| e.under("values"))?;
        let required_values = raw.required_values.unwrap_or_default();
        if let Some(r) = &values {
            for (i, v) in required_values.iter().enumerate() {
                let mut scratch = Vec::new();
                r.check_str(Some(v), &FieldPath::empty(), &mut scratch);
                if let Some(first) = scratch.first() {
                    return Err(SettingsError::new(
                        format!("requiredValues[{i}]"),
                        format!("refused by values: {}", first.problem),
                    ));
                }
            }
        }
        Ok(StringListRestriction {
            emptiness,
            values,
            required_values,
        })
    }
}

impl Restriction for StringListRestriction {
    /// A non-nil value must be a list of strings.
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let value = non_nil(value);
        let items: &[Value] = match value {
            None => &[],
            Some(Value::Array(a)) => a,
            Some(_) => return Err(PolicyError::malformed(path, "expected a list")),
        };
        self.emptiness.judge(value, items.len(), path, out);
        let mut strings = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let s = item
                .as_str()
                .ok_or_else(|| PolicyError::malformed(&at, "expected a string"))?;
            if let Some(r) = &self.values {
                r.check_str(Some(s), &at, out);
            }
            strings.push(s);
        }
        if !self.required_values.is_empty() {
            let present: HashSet<&str> = strings.into_iter().collect();
            for required in &self.required_values {
                if !present.contains(required.as_str()) {
                    violation(out, path, format!("value {} is required", quote(required)));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn run(r: &impl Restriction, v: Option<Value>) -> Vec<String> {
        let mut out = Vec::new();
        r.check(v.as_ref(), &FieldPath::root("m"), &mut out)
            .unwrap();
        out.into_iter().map(|v| v.to_string()).collect()
    }

    // ----- Collection -----

    fn collection(settings: Value) -> CollectionRestriction {
        CollectionRestriction::build(serde_json::from_value(settings).unwrap()).unwrap()
    }

    #[rstest]
    #[case(json!({}), None, &[])]
    #[case(json!({}), Some(json!([1])), &[])]
    #[case(json!({"forbidEmpty": true}), None, &["m: nil, a non-empty value is required"])]
    #[case(json!({"forbidEmpty": true}), Some(json!(null)), &["m: nil, a non-empty value is required"])]
    #[case(json!({"forbidEmpty": true}), Some(json!([])), &["m: [], a non-empty value is required"])]
    #[case(json!({"forbidEmpty": true}), Some(json!({})), &["m: {}, a non-empty value is required"])]
    #[case(json!({"forbidEmpty": true}), Some(json!([{"name": "v"}])), &[])]
    #[case(json!({"requireEmpty": true}), None, &[])]
    #[case(json!({"requireEmpty": true}), Some(json!([])), &[])]
    #[case(json!({"requireEmpty": true}), Some(json!(["NET_ADMIN"])), &[r#"m: ["NET_ADMIN"], an empty value is required"#])]
    #[case(json!({"requireEmpty": true}), Some(json!({"a": "b"})), &[r#"m: {"a": "b"}, an empty value is required"#])]
    #[case(json!({"requireEmpty": true, "forbidEmpty": false}), Some(json!([1])), &["m: [1], an empty value is required"])]
    fn collection_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(run(&collection(settings), value), expected);
    }

    #[test]
    fn collection_refusals_and_types() {
        let raw =
            serde_json::from_value(json!({"forbidEmpty": true, "requireEmpty": true})).unwrap();
        assert_eq!(
            CollectionRestriction::build(raw).unwrap_err().to_string(),
            "requireEmpty: cannot be combined with forbidEmpty"
        );
        assert!(serde_json::from_value::<RawCollection>(json!({"forbidNil": true})).is_err());
        let err = collection(json!({}))
            .check(
                Some(&json!("x")),
                &FieldPath::root("volumes"),
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "volumes: expected a list or an object");
    }

    // ----- StringMap -----

    fn map(settings: Value) -> StringMapRestriction {
        StringMapRestriction::build(serde_json::from_value(settings).unwrap()).unwrap()
    }

    #[rstest]
    #[case(json!({}), Some(json!({"a": "1"})), &[])]
    #[case(json!({"forbidEmpty": true}), None, &["m: nil, a non-empty value is required"])]
    #[case(json!({"requireEmpty": true}), Some(json!({"a": "1"})), &[r#"m: {"a": "1"}, an empty value is required"#])]
    // key blacklist / whitelist
    #[case(json!({"keyBlacklist": ["x", "y"]}), Some(json!({"a": "1", "x": "2"})), &[r#"m["x"]: key "x" is in key blacklist [x, y]"#])]
    #[case(json!({"keyWhitelist": ["a", "b"]}), Some(json!({"a": "1", "c": "2"})), &[r#"m["c"]: key "c" is not in key whitelist [a, b]"#])]
    #[case(json!({"keyWhitelist": ["a", "b"]}), Some(json!({"a": "1", "b": "2"})), &[])]
    #[case(json!({"keyWhitelist": ["a"]}), None, &[])]
    #[case(json!({"keyWhitelist": []}), Some(json!({"any": "1", "other": "2"})), &[])]
    #[case(json!({"keyWhitelist": [], "requiredKeys": ["team"]}), Some(json!({"x": "1"})), &[r#"m: key "team" is required"#])]
    #[case(json!({"keyWhitelist": ["a"], "keyBlacklist": ["a"]}), Some(json!({"a": "1"})), &[r#"m["a"]: key "a" is in key blacklist [a]"#])]
    // required keys (and the alias)
    #[case(json!({"requiredKeys": ["team"]}), Some(json!({"app": "x"})), &[r#"m: key "team" is required"#])]
    #[case(json!({"requiredKeys": ["team"]}), None, &[r#"m: key "team" is required"#])]
    #[case(json!({"requireKeys": ["team", "app"]}), Some(json!({"app": "x"})), &[r#"m: key "team" is required"#])]
    #[case(json!({"requiredKeys": ["team"]}), Some(json!({"team": ""})), &[])]
    // values (and the alias): absent key is nil
    #[case(json!({"values": {"mode": {"whitelist": ["Reconcile", "EnsureExists"]}}}), Some(json!({"mode": "Reconcile"})), &[])]
    #[case(json!({"values": {"mode": {"whitelist": ["Reconcile", "EnsureExists"]}}}), Some(json!({"mode": "Other"})), &[r#"m["mode"]: "Other" is not in whitelist [Reconcile, EnsureExists]"#])]
    #[case(json!({"values": {"mode": {"whitelist": ["Reconcile"]}}}), Some(json!({})), &[])]
    #[case(json!({"values": {"mode": {"whitelist": ["Reconcile"]}}}), Some(json!({"mode": null})), &[])]
    #[case(json!({"valueRestrictions": {"mode": {"forbidNil": true}}}), Some(json!({"a": "b"})), &[r#"m["mode"]: nil, a value is required"#])]
    #[case(json!({"values": {"env": {"blacklist": ["prod"]}}}), Some(json!({"env": "prod"})), &[r#"m["env"]: "prod" is in blacklist [prod]"#])]
    // required key missing is reported once, not again as a nil value
    #[case(json!({"requiredKeys": ["mode"], "values": {"mode": {"forbidNil": true}}}), Some(json!({})), &[r#"m: key "mode" is required"#])]
    // the proposal's kube-system example
    #[case(
        json!({"requiredKeys": ["k8s-app", "addonmanager.kubernetes.io/mode"], "values": {"addonmanager.kubernetes.io/mode": {"whitelist": ["Reconcile", "EnsureExists"]}}}),
        Some(json!({"k8s-app": "dns", "addonmanager.kubernetes.io/mode": "Reconcile"})),
        &[]
    )]
    #[case(
        json!({"requiredKeys": ["k8s-app", "addonmanager.kubernetes.io/mode"], "values": {"addonmanager.kubernetes.io/mode": {"whitelist": ["Reconcile", "EnsureExists"]}}}),
        Some(json!({"addonmanager.kubernetes.io/mode": "Ignore"})),
        &[r#"m["addonmanager.kubernetes.io/mode"]: "Ignore" is not in whitelist [Reconcile, EnsureExists]"#, r#"m: key "k8s-app" is required"#]
    )]
    // document order: key problems and value problems per key, then required keys
    #[case(
        json!({"keyBlacklist": ["z"], "requiredKeys": ["r"], "values": {"a": {"whitelist": ["ok"]}}}),
        Some(json!({"z": "1", "a": "bad"})),
        &[r#"m["z"]: key "z" is in key blacklist [z]"#, r#"m["a"]: "bad" is not in whitelist [ok]"#, r#"m: key "r" is required"#]
    )]
    fn string_map_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(run(&map(settings), value), expected);
    }

    #[rstest]
    #[case(json!({"forbidEmpty": true, "requireEmpty": true}), "requireEmpty: cannot be combined with forbidEmpty")]
    #[case(json!({"requireEmpty": true, "requiredKeys": ["a"]}), "requireEmpty: cannot be combined with requiredKeys")]
    #[case(json!({"requireEmpty": true, "keyWhitelist": ["a"]}), "requireEmpty: cannot be combined with keyWhitelist")]
    #[case(json!({"requireEmpty": true, "keyBlacklist": ["a"]}), "requireEmpty: cannot be combined with keyBlacklist")]
    #[case(json!({"requireEmpty": true, "values": {}}), "requireEmpty: cannot be combined with values")]
    #[case(json!({"keyWhitelist": ["a"], "requiredKeys": ["a", "b"]}), r#"requiredKeys[1]: "b" is not in keyWhitelist"#)]
    #[case(json!({"keyBlacklist": ["a"], "requireKeys": ["a"]}), r#"requiredKeys[0]: "a" is in keyBlacklist"#)]
    #[case(json!({"keyBlacklist": ["a"], "values": {"a": {}}}), r#"values["a"]: "a" is in keyBlacklist"#)]
    #[case(json!({"keyWhitelist": ["a"], "values": {"b": {}}}), r#"values["b"]: "b" is not in keyWhitelist"#)]
    #[case(json!({"values": {"team": {"regex": ["x", "("]}}}), r#"values["team"].regex[1]: invalid regex "(""#)]
    #[case(json!({"valueRestrictions": {"team": {"forbidNil": true, "requireNil": true}}}), r#"values["team"].requireNil: cannot be combined with forbidNil"#)]
    fn string_map_refusals(#[case] settings: Value, #[case] message: &str) {
        let raw: RawStringMap = serde_json::from_value(settings).unwrap();
        let err = StringMapRestriction::build(raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[rstest]
    #[case(json!({"requiredKeys": ["a"], "requireKeys": ["b"]}))]
    #[case(json!({"values": {}, "valueRestrictions": {}}))]
    #[case(json!({"keys": ["a"]}))]
    #[case(json!({"values": {"a": {"whitelist": ["x"], "unknown": 1}}}))]
    fn string_map_settings_errors(#[case] settings: Value) {
        assert!(serde_json::from_value::<RawStringMap>(settings).is_err());
    }

    #[test]
    fn string_map_wrong_types_are_malformed() {
        let r = map(json!({"requiredKeys": ["a"]}));
        let path = FieldPath::root("metadata").field("labels");
        let err = r
            .check(Some(&json!(["a"])), &path, &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.to_string(), "metadata.labels: expected an object");
        let err = r
            .check(Some(&json!({"a": 1})), &path, &mut Vec::new())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"metadata.labels["a"]: expected a string"#
        );
    }

    // ----- StringList -----

    fn string_list(settings: Value) -> StringListRestriction {
        StringListRestriction::build(serde_json::from_value(settings).unwrap()).unwrap()
    }

    #[rstest]
    #[case(json!({}), Some(json!(["a"])), &[])]
    #[case(json!({"requireEmpty": true}), Some(json!(["NET_ADMIN"])), &[r#"m: ["NET_ADMIN"], an empty value is required"#])]
    #[case(json!({"requireEmpty": true}), None, &[])]
    #[case(json!({"forbidEmpty": true}), Some(json!([])), &["m: [], a non-empty value is required"])]
    #[case(json!({"requiredValues": ["ALL"]}), Some(json!(["ALL"])), &[])]
    #[case(json!({"requiredValues": ["ALL"]}), Some(json!(["NET_RAW"])), &[r#"m: value "ALL" is required"#])]
    #[case(json!({"requiredValues": ["ALL"]}), None, &[r#"m: value "ALL" is required"#])]
    #[case(json!({"requiredValues": ["A", "B"]}), Some(json!(["B"])), &[r#"m: value "A" is required"#])]
    #[case(json!({"values": {"whitelist": ["NET_BIND_SERVICE"]}}), Some(json!(["NET_BIND_SERVICE", "SYS_ADMIN"])), &[r#"m[1]: "SYS_ADMIN" is not in whitelist [NET_BIND_SERVICE]"#])]
    #[case(json!({"values": {"blacklist": ["SYS_ADMIN"]}}), Some(json!(["SYS_ADMIN", "NET_RAW", "SYS_ADMIN"])), &[r#"m[0]: "SYS_ADMIN" is in blacklist [SYS_ADMIN]"#, r#"m[2]: "SYS_ADMIN" is in blacklist [SYS_ADMIN]"#])]
    #[case(json!({"values": {"regex": "NET_.*"}}), Some(json!([])), &[])]
    #[case(json!({"forbidEmpty": true, "values": {"regex": "NET_.*"}, "requiredValues": ["NET_RAW"]}), Some(json!(["NET_ADMIN"])), &[r#"m: value "NET_RAW" is required"#])]
    fn string_list_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(run(&string_list(settings), value), expected);
    }

    #[rstest]
    #[case(json!({"forbidEmpty": true, "requireEmpty": true}), "requireEmpty: cannot be combined with forbidEmpty")]
    #[case(json!({"requireEmpty": true, "requiredValues": ["ALL"]}), "requireEmpty: cannot be combined with requiredValues")]
    #[case(json!({"requireEmpty": true, "values": {"whitelist": ["a"]}}), "requireEmpty: cannot be combined with values")]
    #[case(json!({"values": {"regex": "("}}), r#"values.regex: invalid regex "(""#)]
    #[case(json!({"values": {"whitelist": []}}), "values.whitelist: must not be empty")]
    #[case(json!({"values": {"whitelist": ["A"]}, "requiredValues": ["A", "ALL"]}), r#"requiredValues[1]: refused by values: "ALL" is not in whitelist [A]"#)]
    #[case(json!({"values": {"blacklist": ["ALL"]}, "requiredValues": ["ALL"]}), r#"requiredValues[0]: refused by values: "ALL" is in blacklist [ALL]"#)]
    fn string_list_refusals(#[case] settings: Value, #[case] message: &str) {
        let raw: RawStringList = serde_json::from_value(settings).unwrap();
        let err = StringListRestriction::build(raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn string_list_wrong_types_are_malformed() {
        let r = string_list(json!({"requiredValues": ["ALL"]}));
        let path = FieldPath::root("drop");
        let err = r
            .check(Some(&json!("ALL")), &path, &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.to_string(), "drop: expected a list");
        let err = r
            .check(Some(&json!(["ALL", 3])), &path, &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.to_string(), "drop[1]: expected a string");
        assert!(serde_json::from_value::<RawStringList>(json!({"values": ["a"]})).is_err());
        assert!(serde_json::from_value::<RawStringList>(json!({"requireValues": ["a"]})).is_err());
    }
}
