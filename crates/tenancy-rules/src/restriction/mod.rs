//! PodRestriction primitives (`policies/pod-restriction-policy/README.md`, "Primitive
//! types"): restrictions on one JSON value each, built from settings and checked against the
//! admitted object.
//!
//! Every primitive comes in two forms:
//!
//! * a **raw** settings struct (`Raw…`, serde, `deny_unknown_fields`, camelCase, with the
//!   proposal's aliases `allowNil`, `requireKeys`, `valueRestrictions`) that a policy embeds in
//!   its own settings types;
//! * a **validated** type built by `…Restriction::build(raw)`, which refuses conflicting or
//!   ambiguous settings with a [`SettingsError`] whose path is relative to the primitive
//!   (`ranges[1]`, `regex[0]`, `values["team"].whitelist`; nest it with
//!   [`SettingsError::under`]). Field names in those paths are the canonical ones, also when
//!   the settings used an alias.
//!
//! Validated restrictions implement [`Restriction`]: `check(value, path, out)` appends
//! [`Violation`]s to `out` and returns `Err(PolicyError::Malformed)` naming `path` when the
//! value has the wrong JSON type (a string restriction on a number, …): malformed input is a
//! 400, never a silent pass or a 403. Collecting into a `Vec` (not a [`Verdict`]) lets the
//! caller try alternatives ([`AnyOf`]) or decide how a restriction combines before reporting.
//!
//! **Nil** is an absent value or JSON `null`. Absent settings fields restrict nothing.
//!
//! **Messages** read `<value found>, <what is allowed>`: strings double-quoted, lists and
//! maps as `["a", "b"]` / `{"k": "v"}`, absent as `nil`:
//!
//! | Situation | Message |
//! |---|---|
//! | nil, `forbidNil` | `nil, a value is required` (Bool with `require`: `nil, required false`) |
//! | non-nil, `requireNil` | `"x", nil is required` |
//! | blacklisted | `"latest" is in blacklist [latest, dev]` |
//! | `blacklistRegex` | `"gpu-a" matches blacklistRegex "gpu-.*"` (the first pattern that matched) |
//! | not whitelisted | `"gcr.io" is not in whitelist [docker.io, quay.io]` (`… and does not match regex ["q.*"]`) |
//! | path prefixes | `"/datax" is not under whitelist [/data]`, `"/etc/x" is under blacklist [/etc]` |
//! | numeric | `1000 is outside ranges [1-999, 2000-]` (open ends empty, negatives in parentheses) |
//! | bool | `true, required false` |
//! | `forbidEmpty` | `nil, a non-empty value is required` / `[], …` / `{}, …` |
//! | `requireEmpty` | `["NET_ADMIN"], an empty value is required` |
//! | map keys | `key "x" is in key blacklist [x]`, `key "x" is not in key whitelist [a, b]`, `key "team" is required` |
//! | list values | `value "ALL" is required` |
//!
//! [`Verdict`]: policy_admission::verdict::Verdict
//!
//! ```
//! use policy_decode::path::FieldPath;
//! use tenancy_rules::restriction::{RawString, Restriction, StringRestriction};
//! use serde_json::json;
//!
//! let raw: RawString = serde_json::from_value(json!({"whitelist": ["docker.io", "quay.io"]})).unwrap();
//! let registry = StringRestriction::build(raw).unwrap();
//! let mut out = Vec::new();
//! let path = FieldPath::root("spec").field("containers").index(0).field("image");
//! registry.check(Some(&json!("gcr.io")), &path, &mut out).unwrap();
//! assert_eq!(out[0].to_string(), r#"spec.containers[0].image: "gcr.io" is not in whitelist [docker.io, quay.io]"#);
//! ```

mod any_of;
mod collection;
mod hostpath;
mod scalar;

pub use any_of::{AnyOf, OneOrList};
pub use collection::{
    CollectionRestriction, Emptiness, RawCollection, RawStringList, RawStringMap,
    StringListRestriction, StringMapRestriction,
};
pub use hostpath::{PrefixSet, SCANNED_PATHS, check_path_prefix, clean_path, path_prefix_matches};
pub use scalar::{
    BoolRestriction, NumericRestriction, Range, RawBool, RawNumeric, RawRange, RawString,
    StringMatch, StringRestriction,
};

use serde::Deserialize;
use serde_json::Value;

use policy_admission::verdict::Violation;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::path::FieldPath;

/// A validated restriction on one JSON value.
pub trait Restriction {
    /// Judges `value` (`None` = absent) found at `path`, appending violations to `out`.
    /// A value of the wrong JSON type is `Err(PolicyError::Malformed)` naming `path`.
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError>;

    /// Whether `value` satisfies the restriction (no violation).
    fn allows(&self, value: Option<&Value>, path: &FieldPath) -> Result<bool, PolicyError> {
        let mut out = Vec::new();
        self.check(value, path, &mut out)?;
        Ok(out.is_empty())
    }
}

/// The pointer settings shared by every scalar primitive: `forbidNil`, `requireNil` and the
/// proposal's `allowNil` (the negation of `forbidNil`).
///
/// Scalar raw structs repeat these fields (serde cannot flatten under
/// `deny_unknown_fields`) and convert with their `pointer()` method; a policy whose own
/// struct is "pointer + sub-fields" (`capabilities`, `seLinuxOptions`) builds one directly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPointer {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Proposal alias: `allowNil: x` means `forbidNil: !x`; contradicting `forbidNil` is refused.
    pub allow_nil: Option<bool>,
}

/// What a pointer restriction says about nil (absent or `null`) values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NilRule {
    /// Nil passes; non-nil values are judged by the other fields.
    #[default]
    Allow,
    /// Nil is a violation (`forbidNil: true` / `allowNil: false`).
    Forbid,
    /// Any non-nil value is a violation (`requireNil: true`).
    Require,
}

impl NilRule {
    /// Validates the pointer settings: `forbidNil` with `requireNil`, and `allowNil`
    /// contradicting `forbidNil` (or `allowNil: false` with `requireNil`), are refused.
    ///
    /// ```
    /// use tenancy_rules::restriction::{NilRule, RawPointer};
    /// let raw = RawPointer { allow_nil: Some(false), ..Default::default() };
    /// assert_eq!(NilRule::build(&raw).unwrap(), NilRule::Forbid);
    /// let raw = RawPointer { forbid_nil: Some(true), require_nil: Some(true), ..Default::default() };
    /// assert_eq!(NilRule::build(&raw).unwrap_err().to_string(), "requireNil: cannot be combined with forbidNil");
    /// ```
    pub fn build(raw: &RawPointer) -> Result<NilRule, SettingsError> {
        let forbid = match (raw.forbid_nil, raw.allow_nil) {
            (Some(f), Some(a)) if f == a => {
                return Err(SettingsError::new(
                    "allowNil",
                    format!("allowNil: {a} contradicts forbidNil: {f}"),
                ));
            }
            (Some(f), _) => f,
            (None, Some(a)) => !a,
            (None, None) => false,
        };
        let require = raw.require_nil.unwrap_or(false);
        match (forbid, require) {
            (true, true) if raw.forbid_nil == Some(true) => Err(SettingsError::new(
                "requireNil",
                "cannot be combined with forbidNil",
            )),
            (true, true) => Err(SettingsError::new(
                "requireNil",
                "cannot be combined with allowNil: false",
            )),
            (true, false) => Ok(NilRule::Forbid),
            (false, true) => Ok(NilRule::Require),
            (false, false) => Ok(NilRule::Allow),
        }
    }

    /// Applies the rule to `value`; returns the value when it is non-nil and should be judged
    /// further (`None` when it is nil or already refused by `requireNil`).
    pub fn judge<'v>(
        &self,
        value: Option<&'v Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Option<&'v Value> {
        let value = non_nil(value);
        let go_on = self.admit(
            value.is_none(),
            || value.map_or_else(String::new, found),
            path,
            out,
        );
        if go_on { value } else { None }
    }

    /// Records the nil violations for a value that is nil or not (rendered lazily by
    /// `found`); returns whether a non-nil value should be judged further.
    pub(crate) fn admit(
        &self,
        is_nil: bool,
        found: impl FnOnce() -> String,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> bool {
        self.admit_with(is_nil, found, "a value is required", path, out)
    }

    /// [`NilRule::admit`] with a custom "what is allowed" for a forbidden nil.
    pub(crate) fn admit_with(
        &self,
        is_nil: bool,
        found: impl FnOnce() -> String,
        nil_required: &str,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> bool {
        match (self, is_nil) {
            (NilRule::Forbid, true) => {
                violation(out, path, format!("nil, {nil_required}"));
                false
            }
            (NilRule::Require, false) => {
                violation(out, path, format!("{}, nil is required", found()));
                false
            }
            (_, true) => false,
            (_, false) => true,
        }
    }
}

/// A bare pointer restriction (`forbidNil`, `requireNil`, `allowNil`): judges only whether a
/// value is present; a non-nil value of any JSON type passes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PointerRestriction {
    /// The nil rule.
    pub nil: NilRule,
}

impl PointerRestriction {
    /// Validates the settings (see [`NilRule::build`]).
    pub fn build(raw: RawPointer) -> Result<PointerRestriction, SettingsError> {
        Ok(PointerRestriction {
            nil: NilRule::build(&raw)?,
        })
    }
}

impl Restriction for PointerRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.nil.judge(value, path, out);
        Ok(())
    }
}

/// `None` for absent and `null`.
pub(crate) fn non_nil(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

/// Renders a found value for messages: strings double-quoted, `null` as `nil`, lists and
/// maps element by element (`["a", "b"]`, `{"k": "v"}`).
pub fn found(value: &Value) -> String {
    match value {
        Value::Null => "nil".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(found).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", quote(k), found(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// A string double-quoted for messages.
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// `[a, b]` in settings order (long lists shortened, see [`policy_decode::message`]).
pub(crate) fn list(items: &policy_decode::names::NameList) -> String {
    policy_decode::message::bracketed(items.iter())
}

pub(crate) fn violation(out: &mut Vec<Violation>, path: &FieldPath, problem: String) {
    out.push(Violation {
        path: path.clone(),
        problem,
    });
}

/// The refusal of an explicitly empty allow-list, which would otherwise be ambiguous between
/// "allow nothing" and "restrict nothing".
pub(crate) fn empty_allow_list(field: &str, instead: &str) -> SettingsError {
    SettingsError::new(
        field,
        format!("must not be empty; omit it to allow any {instead}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn raw(v: Value) -> RawPointer {
        serde_json::from_value(v).unwrap()
    }

    fn run(r: &impl Restriction, v: Option<Value>) -> Vec<String> {
        let mut out = Vec::new();
        r.check(v.as_ref(), &FieldPath::root("f"), &mut out)
            .unwrap();
        out.into_iter().map(|v| v.to_string()).collect()
    }

    #[rstest]
    #[case(json!({}), NilRule::Allow)]
    #[case(json!({"forbidNil": true}), NilRule::Forbid)]
    #[case(json!({"forbidNil": false}), NilRule::Allow)]
    #[case(json!({"allowNil": false}), NilRule::Forbid)]
    #[case(json!({"allowNil": true}), NilRule::Allow)]
    #[case(json!({"allowNil": true, "forbidNil": false}), NilRule::Allow)]
    #[case(json!({"allowNil": false, "forbidNil": true}), NilRule::Forbid)]
    #[case(json!({"requireNil": true}), NilRule::Require)]
    #[case(json!({"requireNil": true, "allowNil": true}), NilRule::Require)]
    #[case(json!({"requireNil": true, "forbidNil": false}), NilRule::Require)]
    #[case(json!({"requireNil": false, "forbidNil": true}), NilRule::Forbid)]
    fn builds_nil_rules(#[case] settings: Value, #[case] rule: NilRule) {
        assert_eq!(NilRule::build(&raw(settings)).unwrap(), rule);
    }

    #[rstest]
    #[case(json!({"forbidNil": true, "requireNil": true}), "requireNil: cannot be combined with forbidNil")]
    #[case(json!({"allowNil": true, "forbidNil": true}), "allowNil: allowNil: true contradicts forbidNil: true")]
    #[case(json!({"allowNil": false, "forbidNil": false}), "allowNil: allowNil: false contradicts forbidNil: false")]
    #[case(json!({"allowNil": false, "requireNil": true}), "requireNil: cannot be combined with allowNil: false")]
    fn refuses_pointer_conflicts(#[case] settings: Value, #[case] message: &str) {
        assert_eq!(
            NilRule::build(&raw(settings)).unwrap_err().to_string(),
            message
        );
    }

    #[test]
    fn refuses_unknown_pointer_fields() {
        let err = serde_json::from_value::<RawPointer>(json!({"forbidnil": true})).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `forbidnil`"),
            "{err}"
        );
    }

    #[rstest]
    #[case(json!({}), None, &[])]
    #[case(json!({}), Some(json!({"a": 1})), &[])]
    #[case(json!({"forbidNil": true}), None, &["f: nil, a value is required"])]
    #[case(json!({"forbidNil": true}), Some(json!(null)), &["f: nil, a value is required"])]
    #[case(json!({"forbidNil": true}), Some(json!({})), &[])]
    #[case(json!({"requireNil": true}), None, &[])]
    #[case(json!({"requireNil": true}), Some(json!(null)), &[])]
    #[case(json!({"requireNil": true}), Some(json!({"user": "x"})), &[r#"f: {"user": "x"}, nil is required"#])]
    #[case(json!({"requireNil": true}), Some(json!("x")), &[r#"f: "x", nil is required"#])]
    fn pointer_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        let r = PointerRestriction::build(raw(settings)).unwrap();
        assert_eq!(run(&r, value), expected);
    }

    #[test]
    fn judge_returns_the_value_to_judge_further() {
        let mut out = Vec::new();
        let path = FieldPath::root("f");
        let v = json!(1);
        assert_eq!(NilRule::Allow.judge(Some(&v), &path, &mut out), Some(&v));
        assert_eq!(NilRule::Forbid.judge(Some(&v), &path, &mut out), Some(&v));
        assert_eq!(NilRule::Require.judge(Some(&v), &path, &mut out), None);
        assert_eq!(NilRule::Allow.judge(None, &path, &mut out), None);
        assert_eq!(out.len(), 1);
    }

    #[rstest]
    #[case(json!(null), "nil")]
    #[case(json!(true), "true")]
    #[case(json!(-3), "-3")]
    #[case(json!("a\"b"), r#""a\"b""#)]
    #[case(json!(["NET_ADMIN", "SYS_TIME"]), r#"["NET_ADMIN", "SYS_TIME"]"#)]
    #[case(json!({"k": "v", "n": [1]}), r#"{"k": "v", "n": [1]}"#)]
    #[case(json!([]), "[]")]
    #[case(json!({}), "{}")]
    fn renders_found_values(#[case] value: Value, #[case] rendered: &str) {
        assert_eq!(found(&value), rendered);
    }
}
