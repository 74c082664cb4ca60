//! Scalar primitives: String, Numeric and Bool restrictions.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use super::hostpath::{PrefixSet, check_path_prefix, clean_path};
use super::{NilRule, RawPointer, Restriction, empty_allow_list, list, quote, violation};
use policy_admission::verdict::Violation;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::matcher::{FullMatch, OneOrMany, PatternList, regexes};
use policy_decode::names::NameList;
use policy_decode::path::FieldPath;
use policy_decode::ranges::{Bounds, RangeList};

// ---------------------------------------------------------------------------------------
// String
// ---------------------------------------------------------------------------------------

/// Settings of a String restriction: pointer + `whitelist`, `blacklist`, `regex`,
/// `blacklistRegex`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawString {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Proposal alias: negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// Allowed values (with `regex`: allowed if listed or matching).
    pub whitelist: Option<NameList>,
    /// Refused values (checked first).
    pub blacklist: Option<NameList>,
    /// Full-match regexes of allowed values (a string or a list).
    pub regex: Option<OneOrMany>,
    /// Full-match regexes of refused values (a string or a list; checked after `blacklist`).
    pub blacklist_regex: Option<OneOrMany>,
}

impl RawString {
    /// The pointer part of these settings.
    pub fn pointer(&self) -> RawPointer {
        RawPointer {
            forbid_nil: self.forbid_nil,
            require_nil: self.require_nil,
            allow_nil: self.allow_nil,
        }
    }
}

/// How a String restriction compares values with its `whitelist`/`blacklist` entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StringMatch {
    /// Case-sensitive equality (the default).
    #[default]
    Exact,
    /// ASCII case-insensitive equality (registry hosts, DNS names); regexes match the
    /// lower-cased value.
    CaseInsensitive,
    /// Entries are absolute path prefixes matched at component boundaries
    /// ([`path_prefix_matches`](super::path_prefix_matches)); regexes fully match the lexically cleaned path
    /// ([`clean_path`]), so `/data/../etc` is judged as `/etc`. For `hostPath.path`.
    PathPrefix,
}

/// A validated String restriction.
///
/// A non-nil value must be a string. It is refused if blacklisted or fully matching a
/// `blacklistRegex`; when a whitelist or regexes are set it must be whitelisted or fully
/// match one regex.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringRestriction {
    nil: NilRule,
    lists: Lists,
    regex: Vec<FullMatch>,
    /// `blacklistRegex` (empty when not given): tried in turn for the first values, then
    /// indexed ([`PatternList`]).
    deny_regex: PatternList,
    /// Whether `whitelist`/`regex` restrict the value (at least one of them non-empty).
    restricted: bool,
    mode: StringMatch,
}

/// The whitelist and blacklist (empty when not given), as their matching mode needs them.
#[derive(Debug, Clone, PartialEq)]
enum Lists {
    /// Equal values ([`StringMatch::Exact`]; lower-cased in
    /// [`StringMatch::CaseInsensitive`] mode).
    Names {
        whitelist: NameList,
        blacklist: NameList,
    },
    /// [`StringMatch::PathPrefix`].
    Prefixes {
        whitelist: PrefixSet,
        blacklist: PrefixSet,
    },
}

impl Default for Lists {
    fn default() -> Self {
        Lists::Names {
            whitelist: NameList::new(),
            blacklist: NameList::new(),
        }
    }
}

impl Lists {
    /// Whether `value` is blacklisted and whether it is whitelisted.
    fn membership(&self, value: &str) -> (bool, bool) {
        match self {
            Lists::Names {
                whitelist,
                blacklist,
            } => (blacklist.contains(value), whitelist.contains(value)),
            Lists::Prefixes {
                whitelist,
                blacklist,
            } => (blacklist.matches(value), whitelist.matches(value)),
        }
    }

    /// The whitelist and blacklist as written, for messages.
    fn written(&self) -> (&NameList, &NameList) {
        match self {
            Lists::Names {
                whitelist,
                blacklist,
            } => (whitelist, blacklist),
            Lists::Prefixes {
                whitelist,
                blacklist,
            } => (whitelist.written(), blacklist.written()),
        }
    }
}

impl StringRestriction {
    /// Validates settings with exact matching; see [`StringRestriction::build_with`].
    pub fn build(raw: RawString) -> Result<StringRestriction, SettingsError> {
        StringRestriction::build_with(raw, StringMatch::Exact)
    }

    /// Validates settings for the given matching mode. Refused: pointer conflicts
    /// ([`NilRule::build`]); `requireNil` with `whitelist`, `blacklist`, `regex` or
    /// `blacklistRegex`; invalid regexes (`regex[i]`, or `regex` for a single string; the
    /// same for `blacklistRegex`); a `whitelist: []` or `regex: []`
    /// with nothing else allowed (ambiguous: omit it to allow anything, use `requireNil` to
    /// allow only nil); in [`StringMatch::PathPrefix`] mode, entries that are not absolute.
    pub fn build_with(
        raw: RawString,
        mode: StringMatch,
    ) -> Result<StringRestriction, SettingsError> {
        let nil = NilRule::build(&raw.pointer())?;
        if nil == NilRule::Require {
            for (field, set) in [
                ("whitelist", raw.whitelist.is_some()),
                ("blacklist", raw.blacklist.is_some()),
                ("regex", raw.regex.is_some()),
                ("blacklistRegex", raw.blacklist_regex.is_some()),
            ] {
                if set {
                    return Err(SettingsError::new(
                        "requireNil",
                        format!("cannot be combined with {field}"),
                    ));
                }
            }
        }
        let regex = raw.regex.map(|r| regex_setting("regex", r)).transpose()?;
        let deny_regex = raw
            .blacklist_regex
            .map(|r| regex_setting("blacklistRegex", r))
            .transpose()?
            .unwrap_or_default();
        let has_whitelist = raw.whitelist.as_ref().is_some_and(|w| !w.is_empty());
        let has_regex = regex.as_ref().is_some_and(|r| !r.is_empty());
        if !has_whitelist && !has_regex {
            if raw.whitelist.is_some() {
                return Err(empty_allow_list("whitelist", "value, or use requireNil"));
            }
            if regex.is_some() {
                return Err(empty_allow_list("regex", "value, or use requireNil"));
            }
        }
        let normalise = |field: &str, entries: NameList| -> Result<NameList, SettingsError> {
            match mode {
                StringMatch::Exact => Ok(entries),
                StringMatch::CaseInsensitive => Ok(entries.into_ascii_lowercase()),
                // Settings re-read by `validate` were checked when the policy was loaded.
                StringMatch::PathPrefix if policy_decode::settings::is_reread() => Ok(entries),
                StringMatch::PathPrefix => {
                    for (i, e) in entries.iter().enumerate() {
                        check_path_prefix(e).map_err(|problem| {
                            SettingsError::new(format!("{field}[{i}]"), problem)
                        })?;
                    }
                    Ok(entries)
                }
            }
        };
        let whitelist = normalise("whitelist", raw.whitelist.unwrap_or_default())?;
        let blacklist = normalise("blacklist", raw.blacklist.unwrap_or_default())?;
        let lists = match mode {
            StringMatch::PathPrefix => Lists::Prefixes {
                whitelist: PrefixSet::new(whitelist),
                blacklist: PrefixSet::new(blacklist),
            },
            StringMatch::Exact | StringMatch::CaseInsensitive => Lists::Names {
                whitelist,
                blacklist,
            },
        };
        Ok(StringRestriction {
            nil,
            lists,
            regex: regex.unwrap_or_default(),
            deny_regex: PatternList::new(deny_regex),
            restricted: has_whitelist || has_regex,
            mode,
        })
    }

    /// The nil rule.
    pub fn nil_rule(&self) -> NilRule {
        self.nil
    }

    /// Judges a string value (`None` = nil) found at `path`: the typed entry point for
    /// values computed by the policy (parsed image parts, effective values).
    pub fn check_str(&self, value: Option<&str>, path: &FieldPath, out: &mut Vec<Violation>) {
        let Some(v) = value else {
            self.nil.admit(true, String::new, path, out);
            return;
        };
        if !self.nil.admit(false, || quote(v), path, out) {
            return;
        }
        if let Some(problem) = self.judge(v) {
            violation(out, path, problem);
        }
    }

    /// The problem with a non-nil value, if any.
    fn judge(&self, value: &str) -> Option<String> {
        let lowered;
        let cleaned;
        let subject = match self.mode {
            StringMatch::Exact => value,
            StringMatch::CaseInsensitive => {
                lowered = value.to_ascii_lowercase();
                &lowered
            }
            StringMatch::PathPrefix => {
                cleaned = clean_path(value);
                &cleaned
            }
        };
        // Membership: a hash lookup per entry list, or per ancestor of a path.
        let (black, white) = self.lists.membership(subject);
        let (whitelist, blacklist) = self.lists.written();
        let (is, is_not) = match self.mode {
            StringMatch::PathPrefix => ("is under", "is not under"),
            _ => ("is in", "is not in"),
        };
        if black {
            return Some(format!(
                "{} {is} blacklist {}",
                quote(value),
                list(blacklist)
            ));
        }
        if let Some(denying) = self.deny_regex.first_denying(subject) {
            return Some(format!(
                "{} matches blacklistRegex {}",
                quote(value),
                quote(denying.pattern())
            ));
        }
        if !self.restricted {
            return None;
        }
        if white || self.regex.iter().any(|r| r.is_match(subject)) {
            return None;
        }
        let regexes = || {
            let r = self.regex.iter().map(|r| quote(r.pattern()));
            format!(
                "does not match regex {}",
                policy_decode::message::bracketed(r)
            )
        };
        Some(match (whitelist.is_empty(), self.regex.is_empty()) {
            (false, true) => format!("{} {is_not} whitelist {}", quote(value), list(whitelist)),
            (true, false) => format!("{} {}", quote(value), regexes()),
            _ => format!(
                "{} {is_not} whitelist {} and {}",
                quote(value),
                list(whitelist),
                regexes()
            ),
        })
    }
}

/// A regex setting (`regex`, `blacklistRegex`): one pattern (errors at `name`) or a list
/// (errors at `name[i]`), each validated.
fn regex_setting(name: &str, raw: OneOrMany) -> Result<Vec<FullMatch>, SettingsError> {
    match raw {
        OneOrMany::One(p) => Ok(vec![
            FullMatch::new(&p).map_err(|e| SettingsError::new(name, e))?,
        ]),
        OneOrMany::Many(ps) => regexes(name, &ps),
    }
}

impl Restriction for StringRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        match value {
            None | Some(Value::Null) => self.check_str(None, path, out),
            Some(Value::String(s)) => self.check_str(Some(s), path, out),
            Some(_) => return Err(PolicyError::malformed(path, "expected a string")),
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Numeric
// ---------------------------------------------------------------------------------------

/// One inclusive range of a Numeric restriction's settings; a missing bound is open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawRange {
    /// Smallest allowed value.
    pub min: Option<i64>,
    /// Largest allowed value.
    pub max: Option<i64>,
}

/// Settings of a Numeric restriction: pointer + `ranges`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawNumeric {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Proposal alias: negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// Allowed inclusive ranges (any of them); absent = any integer.
    pub ranges: Option<Vec<RawRange>>,
}

impl RawNumeric {
    /// The pointer part of these settings.
    pub fn pointer(&self) -> RawPointer {
        RawPointer {
            forbid_nil: self.forbid_nil,
            require_nil: self.require_nil,
            allow_nil: self.allow_nil,
        }
    }
}

/// A validated inclusive integer range with `min <= max` (open ends allowed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    min: Option<i64>,
    max: Option<i64>,
}

impl Range {
    /// The range `[min, max]`; refused when `min > max`.
    pub fn new(min: Option<i64>, max: Option<i64>) -> Result<Range, String> {
        match (min, max) {
            (Some(lo), Some(hi)) if lo > hi => Err(format!("min {lo} is greater than max {hi}")),
            _ => Ok(Range { min, max }),
        }
    }

    /// Whether `v` lies in the range.
    pub fn contains(&self, v: i128) -> bool {
        self.min.is_none_or(|lo| v >= i128::from(lo))
            && self.max.is_none_or(|hi| v <= i128::from(hi))
    }

    /// The lower bound.
    pub fn min(&self) -> Option<i64> {
        self.min
    }

    /// The upper bound.
    pub fn max(&self) -> Option<i64> {
        self.max
    }
}

impl Bounds for Range {
    fn bounds(&self) -> (i128, i128) {
        (
            self.min.map_or(i128::MIN, i128::from),
            self.max.map_or(i128::MAX, i128::from),
        )
    }
}

impl fmt::Display for Range {
    /// `1-999`, `2000-`, `-999`, `any`; negative bounds in parentheses (`(-5)-5`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bound = |b: i64| {
            if b < 0 {
                format!("({b})")
            } else {
                b.to_string()
            }
        };
        match (self.min, self.max) {
            (None, None) => f.write_str("any"),
            (lo, hi) => write!(
                f,
                "{}-{}",
                lo.map(bound).unwrap_or_default(),
                hi.map(bound).unwrap_or_default()
            ),
        }
    }
}

/// A validated Numeric restriction: a non-nil value must be an integer in one of the
/// ranges (any integer when no ranges are set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumericRestriction {
    nil: NilRule,
    ranges: Option<RangeList<Range>>,
}

impl NumericRestriction {
    /// Validates settings. Refused: pointer conflicts; `requireNil` with `ranges`;
    /// `ranges: []` (ambiguous); a range with `min > max` (`ranges[i]`).
    pub fn build(raw: RawNumeric) -> Result<NumericRestriction, SettingsError> {
        let nil = NilRule::build(&raw.pointer())?;
        let ranges = match raw.ranges {
            None => None,
            Some(_) if nil == NilRule::Require => {
                return Err(SettingsError::new(
                    "requireNil",
                    "cannot be combined with ranges",
                ));
            }
            Some(rs) if rs.is_empty() => {
                return Err(empty_allow_list("ranges", "integer, or use requireNil"));
            }
            Some(rs) => Some(RangeList::new(
                rs.iter()
                    .enumerate()
                    .map(|(i, r)| {
                        Range::new(r.min, r.max)
                            .map_err(|e| SettingsError::new(format!("ranges[{i}]"), e))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            )),
        };
        Ok(NumericRestriction { nil, ranges })
    }

    /// The nil rule.
    pub fn nil_rule(&self) -> NilRule {
        self.nil
    }

    /// Judges an integer (`None` = nil) found at `path` (effective values, list elements).
    pub fn check_int(&self, value: Option<i128>, path: &FieldPath, out: &mut Vec<Violation>) {
        let Some(v) = value else {
            self.nil.admit(true, String::new, path, out);
            return;
        };
        if !self.nil.admit(false, || v.to_string(), path, out) {
            return;
        }
        let Some(ranges) = &self.ranges else { return };
        if ranges.contains(v) {
            return;
        }
        let shown = policy_decode::message::bracketed(ranges.items().iter());
        let noun = if ranges.items().len() == 1 {
            "range"
        } else {
            "ranges"
        };
        violation(out, path, format!("{v} is outside {noun} {shown}"));
    }
}

/// The integer in a JSON value, or a malformed-input error at `path`.
pub(crate) fn integer(value: &Value, path: &FieldPath) -> Result<i128, PolicyError> {
    value
        .as_i64()
        .map(i128::from)
        .or_else(|| value.as_u64().map(i128::from))
        .ok_or_else(|| PolicyError::malformed(path, "expected an integer"))
}

impl Restriction for NumericRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let v = match value {
            None | Some(Value::Null) => None,
            Some(v) => Some(integer(v, path)?),
        };
        self.check_int(v, path, out);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Bool
// ---------------------------------------------------------------------------------------

/// Settings of a Bool restriction: pointer + `require`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawBool {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Proposal alias: negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// The only allowed non-nil value.
    pub require: Option<bool>,
}

impl RawBool {
    /// The pointer part of these settings.
    pub fn pointer(&self) -> RawPointer {
        RawPointer {
            forbid_nil: self.forbid_nil,
            require_nil: self.require_nil,
            allow_nil: self.allow_nil,
        }
    }
}

/// A validated Bool restriction: a non-nil value must be a boolean equal to `require`; nil
/// passes unless `forbidNil` ("explicitly false" = `forbidNil: true, require: false`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoolRestriction {
    nil: NilRule,
    require: Option<bool>,
}

impl BoolRestriction {
    /// Validates settings. Refused: pointer conflicts; `requireNil` with `require`.
    pub fn build(raw: RawBool) -> Result<BoolRestriction, SettingsError> {
        let nil = NilRule::build(&raw.pointer())?;
        if nil == NilRule::Require && raw.require.is_some() {
            return Err(SettingsError::new(
                "requireNil",
                "cannot be combined with require",
            ));
        }
        Ok(BoolRestriction {
            nil,
            require: raw.require,
        })
    }

    /// The nil rule.
    pub fn nil_rule(&self) -> NilRule {
        self.nil
    }

    /// The required value, if any.
    pub fn required(&self) -> Option<bool> {
        self.require
    }

    /// Judges a boolean (`None` = nil) found at `path` (effective values).
    pub fn check_bool(&self, value: Option<bool>, path: &FieldPath, out: &mut Vec<Violation>) {
        let nil_required = match self.require {
            Some(b) => format!("required {b}"),
            None => "a value is required".to_owned(),
        };
        let is_nil = value.is_none();
        let shown = || value.map(|b| b.to_string()).unwrap_or_default();
        if !self.nil.admit_with(is_nil, shown, &nil_required, path, out) {
            return;
        }
        if let (Some(v), Some(required)) = (value, self.require)
            && v != required
        {
            violation(out, path, format!("{v}, required {required}"));
        }
    }
}

impl Restriction for BoolRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let v = match value {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(PolicyError::malformed(path, "expected a boolean")),
        };
        self.check_bool(v, path, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;
    use serde_json::json;

    fn string(settings: Value) -> StringRestriction {
        StringRestriction::build(serde_json::from_value(settings).unwrap()).unwrap()
    }

    fn run(r: &impl Restriction, v: Option<Value>) -> Vec<String> {
        let mut out = Vec::new();
        r.check(v.as_ref(), &FieldPath::root("f"), &mut out)
            .unwrap();
        out.into_iter().map(|v| v.problem).collect()
    }

    // ----- String -----

    #[rstest]
    // no restriction
    #[case(json!({}), None, &[])]
    #[case(json!({}), Some(json!("anything")), &[])]
    // pointer
    #[case(json!({"forbidNil": true}), None, &["nil, a value is required"])]
    #[case(json!({"forbidNil": true}), Some(json!(null)), &["nil, a value is required"])]
    #[case(json!({"allowNil": false, "whitelist": ["a"]}), None, &["nil, a value is required"])]
    #[case(json!({"requireNil": true}), Some(json!("x")), &[r#""x", nil is required"#])]
    #[case(json!({"requireNil": true}), None, &[])]
    // whitelist: nil passes, listed passes
    #[case(json!({"whitelist": ["docker.io", "quay.io"]}), None, &[])]
    #[case(json!({"whitelist": ["docker.io", "quay.io"]}), Some(json!("quay.io")), &[])]
    #[case(json!({"whitelist": ["docker.io", "quay.io"]}), Some(json!("gcr.io")), &[r#""gcr.io" is not in whitelist [docker.io, quay.io]"#])]
    #[case(json!({"whitelist": ["docker.io"]}), Some(json!("Docker.io")), &[r#""Docker.io" is not in whitelist [docker.io]"#])]
    // blacklist
    #[case(json!({"blacklist": ["latest", "dev"]}), Some(json!("latest")), &[r#""latest" is in blacklist [latest, dev]"#])]
    #[case(json!({"blacklist": ["latest", "dev"]}), Some(json!("v1")), &[])]
    #[case(json!({"blacklist": []}), Some(json!("v1")), &[])]
    #[case(json!({"blacklist": ["x"], "whitelist": ["x", "y"]}), Some(json!("x")), &[r#""x" is in blacklist [x]"#])]
    #[case(json!({"blacklist": ["x"], "whitelist": ["x", "y"]}), Some(json!("y")), &[])]
    // regex: full match, single string or list
    #[case(json!({"regex": "q.*"}), Some(json!("quay.io")), &[])]
    #[case(json!({"regex": "quay\\.io"}), Some(json!("quay.io.evil.com")), &[r#""quay.io.evil.com" does not match regex ["quay\\.io"]"#])]
    #[case(json!({"regex": ["a.*", "b.*"]}), Some(json!("bx")), &[])]
    #[case(json!({"regex": ["a.*", "b.*"]}), Some(json!("cx")), &[r#""cx" does not match regex ["a.*", "b.*"]"#])]
    // whitelist or regex
    #[case(json!({"whitelist": ["docker.io"], "regex": "q.*"}), Some(json!("docker.io")), &[])]
    #[case(json!({"whitelist": ["docker.io"], "regex": "q.*"}), Some(json!("quay.io")), &[])]
    #[case(json!({"whitelist": ["docker.io"], "regex": "q.*"}), Some(json!("gcr.io")), &[r#""gcr.io" is not in whitelist [docker.io] and does not match regex ["q.*"]"#])]
    #[case(json!({"whitelist": [], "regex": "q.*"}), Some(json!("quay.io")), &[])]
    #[case(json!({"whitelist": ["a"], "regex": []}), Some(json!("b")), &[r#""b" is not in whitelist [a]"#])]
    // blacklist beats regex
    #[case(json!({"blacklist": ["quay.io"], "regex": "q.*"}), Some(json!("quay.io")), &[r#""quay.io" is in blacklist [quay.io]"#])]
    // forbidNil and whitelist together
    #[case(json!({"forbidNil": true, "whitelist": ["RuntimeDefault", "Localhost"]}), Some(json!("Unconfined")), &[r#""Unconfined" is not in whitelist [RuntimeDefault, Localhost]"#])]
    #[case(json!({"forbidNil": true, "whitelist": ["RuntimeDefault", "Localhost"]}), None, &["nil, a value is required"])]
    // blacklistRegex: full match, single string or list, the first matching pattern named
    #[case(json!({"blacklistRegex": "default-.*"}), Some(json!("default-scheduler")), &[r#""default-scheduler" matches blacklistRegex "default-.*""#])]
    #[case(json!({"blacklistRegex": "default"}), Some(json!("default-scheduler")), &[])]
    #[case(json!({"blacklistRegex": ["x[0-9]+", "x1", ".*"]}), Some(json!("x1")), &[r#""x1" matches blacklistRegex "x[0-9]+""#])]
    #[case(json!({"blacklistRegex": ["a.*", "b.*"]}), Some(json!("cx")), &[])]
    #[case(json!({"blacklistRegex": []}), Some(json!("cx")), &[])]
    #[case(json!({"blacklistRegex": ".*"}), None, &[])]
    #[case(json!({"blacklistRegex": ".*", "forbidNil": true}), None, &["nil, a value is required"])]
    // blacklistRegex beats whitelist and regex; blacklist is reported first
    #[case(json!({"blacklistRegex": "gpu-.*", "whitelist": ["gpu-a"]}), Some(json!("gpu-a")), &[r#""gpu-a" matches blacklistRegex "gpu-.*""#])]
    #[case(json!({"blacklistRegex": "gpu-.*", "regex": "[a-z-]+"}), Some(json!("gpu-a")), &[r#""gpu-a" matches blacklistRegex "gpu-.*""#])]
    #[case(json!({"blacklistRegex": "gpu-.*", "regex": "[a-z-]+"}), Some(json!("cpu-a")), &[])]
    #[case(json!({"blacklistRegex": "gpu-.*", "regex": "[a-z-]+"}), Some(json!("GPU")), &[r#""GPU" does not match regex ["[a-z-]+"]"#])]
    #[case(json!({"blacklistRegex": "x.*", "blacklist": ["x"]}), Some(json!("x")), &[r#""x" is in blacklist [x]"#])]
    fn string_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(run(&string(settings), value), expected);
    }

    #[rstest]
    #[case(json!({"forbidNil": true, "requireNil": true}), "requireNil: cannot be combined with forbidNil")]
    #[case(json!({"allowNil": true, "forbidNil": true}), "allowNil: allowNil: true contradicts forbidNil: true")]
    #[case(json!({"requireNil": true, "whitelist": ["a"]}), "requireNil: cannot be combined with whitelist")]
    #[case(json!({"requireNil": true, "blacklist": ["a"]}), "requireNil: cannot be combined with blacklist")]
    #[case(json!({"requireNil": true, "regex": "a"}), "requireNil: cannot be combined with regex")]
    #[case(json!({"regex": ["ok", "("]}), "regex[1]: invalid regex \"(\"")]
    #[case(json!({"regex": "("}), "regex: invalid regex \"(\"")]
    #[case(json!({"whitelist": []}), "whitelist: must not be empty; omit it to allow any value, or use requireNil")]
    #[case(json!({"regex": []}), "regex: must not be empty; omit it to allow any value, or use requireNil")]
    #[case(json!({"whitelist": [], "regex": []}), "whitelist: must not be empty; omit it to allow any value, or use requireNil")]
    #[case(json!({"requireNil": true, "blacklistRegex": "a"}), "requireNil: cannot be combined with blacklistRegex")]
    #[case(json!({"blacklistRegex": "("}), "blacklistRegex: invalid regex \"(\"")]
    #[case(json!({"blacklistRegex": ["ok", "a)|(b"]}), "blacklistRegex[1]: invalid regex \"a)|(b\"")]
    fn string_refusals(#[case] settings: Value, #[case] message: &str) {
        let raw: RawString = serde_json::from_value(settings).unwrap();
        let err = StringRestriction::build(raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[rstest]
    #[case(json!({"whitelist": "a"}))]
    #[case(json!({"whiteList": ["a"]}))]
    #[case(json!({"regex": 3}))]
    #[case(json!({"forbidNil": "yes"}))]
    #[case(json!({"blacklistRegex": 3}))]
    #[case(json!({"blacklistRegex": [3]}))]
    #[case(json!({"blacklistRegexes": "a"}))]
    fn string_settings_type_errors(#[case] settings: Value) {
        assert!(serde_json::from_value::<RawString>(settings).is_err());
    }

    #[test]
    fn string_wrong_type_is_malformed() {
        let r = string(json!({"whitelist": ["a"]}));
        let mut out = Vec::new();
        let err = r
            .check(
                Some(&json!(3)),
                &FieldPath::root("spec").field("x"),
                &mut out,
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "spec.x: expected a string");
        assert!(
            r.check(Some(&json!(["a"])), &FieldPath::root("f"), &mut out)
                .is_err()
        );
    }

    #[rstest]
    #[case(json!({"whitelist": ["Docker.IO"]}), "docker.io", true)]
    #[case(json!({"whitelist": ["docker.io"]}), "DOCKER.io", true)]
    #[case(json!({"blacklist": ["GCR.io"]}), "gcr.IO", false)]
    #[case(json!({"regex": "quay\\.io"}), "QUAY.io", true)]
    #[case(json!({"whitelist": ["docker.io"]}), "quay.io", false)]
    #[case(json!({"blacklistRegex": "gcr\\.io"}), "GCR.io", false)]
    #[case(json!({"blacklistRegex": "gcr\\.io"}), "quay.io", true)]
    fn case_insensitive_strings(
        #[case] settings: Value,
        #[case] value: &str,
        #[case] allowed: bool,
    ) {
        let raw = serde_json::from_value(settings).unwrap();
        let r = StringRestriction::build_with(raw, StringMatch::CaseInsensitive).unwrap();
        let mut out = Vec::new();
        r.check_str(Some(value), &FieldPath::root("f"), &mut out);
        assert_eq!(out.is_empty(), allowed, "{out:?}");
    }

    #[rstest]
    #[case(json!({"whitelist": ["/data"]}), "/data", &[])]
    #[case(json!({"whitelist": ["/data"]}), "/data/x", &[])]
    #[case(json!({"whitelist": ["/data/"]}), "/data/x/", &[])]
    #[case(json!({"whitelist": ["/data"]}), "/datax", &[r#""/datax" is not under whitelist [/data]"#])]
    #[case(json!({"whitelist": ["/data"]}), "/data/../etc", &[r#""/data/../etc" is not under whitelist [/data]"#])]
    #[case(json!({"whitelist": ["/"]}), "/anything", &[])]
    #[case(json!({"blacklist": ["/etc"]}), "/etc/kubernetes", &[r#""/etc/kubernetes" is under blacklist [/etc]"#])]
    #[case(json!({"blacklist": ["/etc"]}), "/data/../etc/x", &[r#""/data/../etc/x" is under blacklist [/etc]"#])]
    #[case(json!({"blacklist": ["/etc"]}), "/etcd", &[])]
    #[case(json!({"regex": "/var/log/.*"}), "/var/log/pods", &[])]
    #[case(json!({"regex": "/var/log/.*"}), "/var/log/../../etc", &[r#""/var/log/../../etc" does not match regex ["/var/log/.*"]"#])]
    #[case(json!({"whitelist": ["/data"], "regex": "/var/log/.*"}), "/var/log/x", &[])]
    #[case(json!({"blacklistRegex": "/etc(/.*)?"}), "/data/../etc/x", &[r#""/data/../etc/x" matches blacklistRegex "/etc(/.*)?""#])]
    #[case(json!({"blacklistRegex": "/etc(/.*)?"}), "/etcd", &[])]
    fn path_prefix_strings(
        #[case] settings: Value,
        #[case] value: &str,
        #[case] expected: &[&str],
    ) {
        let raw = serde_json::from_value(settings).unwrap();
        let r = StringRestriction::build_with(raw, StringMatch::PathPrefix).unwrap();
        assert_eq!(run(&r, Some(json!(value))), expected);
    }

    #[test]
    fn path_prefix_entries_must_be_absolute() {
        let raw = serde_json::from_value(json!({"whitelist": ["/a", "data"]})).unwrap();
        let err = StringRestriction::build_with(raw, StringMatch::PathPrefix).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"whitelist[1]: "data" is not an absolute path"#
        );
        let raw = serde_json::from_value(json!({"blacklist": ["etc"]})).unwrap();
        let err = StringRestriction::build_with(raw, StringMatch::PathPrefix).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"blacklist[0]: "etc" is not an absolute path"#
        );
    }

    // ----- Numeric -----

    fn numeric(settings: Value) -> NumericRestriction {
        NumericRestriction::build(serde_json::from_value(settings).unwrap()).unwrap()
    }

    #[rstest]
    #[case(json!({}), Some(json!(-5)), &[])]
    #[case(json!({}), None, &[])]
    #[case(json!({"forbidNil": true}), None, &["nil, a value is required"])]
    #[case(json!({"forbidNil": true, "ranges": [{"min": 1}]}), Some(json!(0)), &["0 is outside range [1-]"])]
    #[case(json!({"forbidNil": true, "ranges": [{"min": 1}]}), Some(json!(1)), &[])]
    #[case(json!({"ranges": [{"min": 1}]}), None, &[])]
    #[case(json!({"requireNil": true}), Some(json!(0)), &["0, nil is required"])]
    #[case(json!({"ranges": [{"min": 1, "max": 999}, {"min": 2000}]}), Some(json!(1000)), &["1000 is outside ranges [1-999, 2000-]"])]
    #[case(json!({"ranges": [{"min": 1, "max": 999}, {"min": 2000}]}), Some(json!(999)), &[])]
    #[case(json!({"ranges": [{"min": 1, "max": 999}, {"min": 2000}]}), Some(json!(2000)), &[])]
    #[case(json!({"ranges": [{"min": 1, "max": 999}, {"min": 2000}]}), Some(json!(u64::MAX)), &[])]
    #[case(json!({"ranges": [{"max": 10}]}), Some(json!(11)), &["11 is outside range [-10]"])]
    #[case(json!({"ranges": [{"max": 10}]}), Some(json!(i64::MIN)), &[])]
    #[case(json!({"ranges": [{"min": -5, "max": -1}]}), Some(json!(0)), &["0 is outside range [(-5)-(-1)]"])]
    #[case(json!({"ranges": [{"min": 3, "max": 3}]}), Some(json!(3)), &[])]
    #[case(json!({"ranges": [{}]}), Some(json!(42)), &[])]
    #[case(json!({"ranges": [{"min": 0, "max": 0}]}), Some(json!(u64::MAX)), &["18446744073709551615 is outside range [0-0]"])]
    fn numeric_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(run(&numeric(settings), value), expected);
    }

    #[rstest]
    #[case(json!({"ranges": [{"min": 1}, {"min": 5, "max": 3}]}), "ranges[1]: min 5 is greater than max 3")]
    #[case(json!({"ranges": []}), "ranges: must not be empty; omit it to allow any integer, or use requireNil")]
    #[case(json!({"requireNil": true, "ranges": [{"min": 1}]}), "requireNil: cannot be combined with ranges")]
    #[case(json!({"requireNil": true, "forbidNil": true}), "requireNil: cannot be combined with forbidNil")]
    #[case(json!({"allowNil": false, "forbidNil": false}), "allowNil: allowNil: false contradicts forbidNil: false")]
    fn numeric_refusals(#[case] settings: Value, #[case] message: &str) {
        let raw: RawNumeric = serde_json::from_value(settings).unwrap();
        assert_eq!(
            NumericRestriction::build(raw).unwrap_err().to_string(),
            message
        );
    }

    #[rstest]
    #[case(json!({"ranges": [{"min": 1, "maximum": 2}]}))]
    #[case(json!({"ranges": [{"min": 1.5}]}))]
    #[case(json!({"ranges": {"min": 1}}))]
    fn numeric_settings_type_errors(#[case] settings: Value) {
        assert!(serde_json::from_value::<RawNumeric>(settings).is_err());
    }

    #[rstest]
    #[case(json!("1000"))]
    #[case(json!(1.5))]
    #[case(json!(true))]
    fn numeric_wrong_type_is_malformed(#[case] value: Value) {
        let r = numeric(json!({"ranges": [{"min": 1}]}));
        let err = r
            .check(Some(&value), &FieldPath::root("runAsUser"), &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.to_string(), "runAsUser: expected an integer");
    }

    #[rstest]
    #[case(Range { min: Some(1), max: Some(999) }, "1-999")]
    #[case(Range { min: Some(2000), max: None }, "2000-")]
    #[case(Range { min: None, max: Some(7) }, "-7")]
    #[case(Range { min: None, max: None }, "any")]
    #[case(Range { min: Some(-3), max: None }, "(-3)-")]
    fn renders_ranges(#[case] r: Range, #[case] shown: &str) {
        assert_eq!(r.to_string(), shown);
    }

    // ----- Bool -----

    fn boolean(settings: Value) -> BoolRestriction {
        BoolRestriction::build(serde_json::from_value(settings).unwrap()).unwrap()
    }

    #[rstest]
    #[case(json!({}), Some(json!(true)), &[])]
    #[case(json!({"require": false}), Some(json!(true)), &["true, required false"])]
    #[case(json!({"require": false}), Some(json!(false)), &[])]
    #[case(json!({"require": false}), None, &[])]
    #[case(json!({"require": true}), Some(json!(false)), &["false, required true"])]
    #[case(json!({"forbidNil": true, "require": false}), None, &["nil, required false"])]
    #[case(json!({"forbidNil": true, "require": false}), Some(json!(null)), &["nil, required false"])]
    #[case(json!({"forbidNil": true, "require": false}), Some(json!(false)), &[])]
    #[case(json!({"forbidNil": true}), None, &["nil, a value is required"])]
    #[case(json!({"forbidNil": true}), Some(json!(true)), &[])]
    #[case(json!({"allowNil": false, "require": true}), None, &["nil, required true"])]
    #[case(json!({"requireNil": true}), Some(json!(false)), &["false, nil is required"])]
    #[case(json!({"requireNil": true}), None, &[])]
    fn bool_checks(
        #[case] settings: Value,
        #[case] value: Option<Value>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(run(&boolean(settings), value), expected);
    }

    #[rstest]
    #[case(json!({"requireNil": true, "require": false}), "requireNil: cannot be combined with require")]
    #[case(json!({"requireNil": true, "forbidNil": true}), "requireNil: cannot be combined with forbidNil")]
    #[case(json!({"allowNil": true, "forbidNil": true}), "allowNil: allowNil: true contradicts forbidNil: true")]
    fn bool_refusals(#[case] settings: Value, #[case] message: &str) {
        let raw: RawBool = serde_json::from_value(settings).unwrap();
        assert_eq!(
            BoolRestriction::build(raw).unwrap_err().to_string(),
            message
        );
    }

    #[test]
    fn bool_wrong_type_is_malformed() {
        let r = boolean(json!({"require": false}));
        let err = r
            .check(
                Some(&json!("false")),
                &FieldPath::root("privileged"),
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "privileged: expected a boolean");
        assert!(serde_json::from_value::<RawBool>(json!({"require": "false"})).is_err());
        assert!(serde_json::from_value::<RawBool>(json!({"required": false})).is_err());
    }

    // ----- properties -----

    fn raw_range() -> impl Strategy<Value = RawRange> {
        (
            proptest::option::of(-50i64..50),
            proptest::option::of(-50i64..50),
        )
            .prop_map(|(min, max)| RawRange { min, max })
    }

    proptest! {
        #[test]
        fn range_membership_is_the_inequalities(r in raw_range(), v in -60i128..60) {
            match Range::new(r.min, r.max) {
                Ok(range) => {
                    let expected = r.min.is_none_or(|lo| v >= i128::from(lo))
                        && r.max.is_none_or(|hi| v <= i128::from(hi));
                    prop_assert_eq!(range.contains(v), expected);
                }
                Err(_) => prop_assert!(matches!((r.min, r.max), (Some(lo), Some(hi)) if lo > hi)),
            }
        }

        #[test]
        fn ranges_are_a_union(a in proptest::collection::vec(raw_range(), 1..4), b in proptest::collection::vec(raw_range(), 1..4), v in -60i64..60) {
            let build = |rs: Vec<RawRange>| NumericRestriction::build(RawNumeric { ranges: Some(rs), ..Default::default() });
            if let (Ok(ra), Ok(rb), Ok(rab)) = (build(a.clone()), build(b.clone()), build([a, b].concat())) {
                let path = FieldPath::root("f");
                let allows = |r: &NumericRestriction| r.allows(Some(&json!(v)), &path).unwrap();
                prop_assert_eq!(allows(&rab), allows(&ra) || allows(&rb));
            }
        }

        #[test]
        fn min_above_max_is_always_refused(lo in any::<i64>(), hi in any::<i64>()) {
            let raw = RawNumeric { ranges: Some(vec![RawRange { min: Some(lo), max: Some(hi) }]), ..Default::default() };
            prop_assert_eq!(NumericRestriction::build(raw).is_err(), lo > hi);
        }

        #[test]
        fn whitelisted_strings_pass(list in proptest::collection::vec("[a-z]{1,4}", 1..5), probe in "[a-z]{1,4}") {
            let raw = RawString { whitelist: Some(list.clone().into()), ..Default::default() };
            let r = StringRestriction::build(raw).unwrap();
            let ok = r.allows(Some(&json!(probe)), &FieldPath::root("f")).unwrap();
            prop_assert_eq!(ok, list.contains(&probe));
        }

        /// `blacklistRegex` names the first matching pattern, for the first values (tried in
        /// turn) and the later ones (indexed) alike.
        #[test]
        fn deny_regexes_agree_with_scanning(
            patterns in proptest::collection::vec("[ab]{0,2}(\\.\\*|[ab]|\\[ab\\])?", 1..6),
            probes in proptest::collection::vec("[ab]{0,3}", 1..20),
        ) {
            let raw = RawString { blacklist_regex: Some(OneOrMany::Many(patterns.clone())), ..Default::default() };
            let Ok(r) = StringRestriction::build(raw) else { return Ok(()) };
            for p in &probes {
                let first = patterns.iter().find(|x| FullMatch::new(x.as_str()).unwrap().is_match(p));
                let mut out = Vec::new();
                r.check_str(Some(p), &FieldPath::root("f"), &mut out);
                let expected: Vec<String> = first
                    .map(|x| format!("f: {} matches blacklistRegex {}", quote(p), quote(x)))
                    .into_iter()
                    .collect();
                prop_assert_eq!(out.iter().map(|v| v.to_string()).collect::<Vec<_>>(), expected);
            }
        }

        /// Prefix lookups by ancestors judge as comparing with every prefix would, for the
        /// first lookups (entries compared) and the later ones (hashed) alike.
        #[test]
        fn path_prefix_lists_agree_with_scanning(
            white in proptest::collection::vec("/([ab]{1,2}/?){0,3}", 1..6),
            black in proptest::collection::vec("/([ab]{1,2}/?){0,3}", 0..3),
            probes in proptest::collection::vec("/?([ab.]{1,2}/){0,3}[ab.]{0,2}", 1..12),
        ) {
            let raw = RawString {
                whitelist: Some(white.clone().into()),
                blacklist: Some(black.clone().into()),
                ..Default::default()
            };
            let Ok(r) = StringRestriction::build_with(raw, StringMatch::PathPrefix) else {
                return Ok(());
            };
            for p in &probes {
                let under = |l: &[String]| l.iter().any(|x| crate::restriction::path_prefix_matches(x, p));
                let expected = !under(&black) && under(&white);
                let ok = r.allows(Some(&json!(p)), &FieldPath::root("f")).unwrap();
                prop_assert_eq!(ok, expected, "{}", p);
            }
        }
    }
}
