//! Full-match string matchers: exact sets and regexes anchored as `^(?:re)$` (SPEC 2.3).
//!
//! Regexes are syntax-checked (parsed, not compiled) when settings are read and compiled
//! lazily on first use, because policy-server builds a fresh instance for every request and
//! reads the settings again each time: compiling every regex of the settings per request
//! would cost milliseconds.

use std::cell::OnceCell;
use std::collections::BTreeSet;

use regex::Regex;
use serde::Deserialize;

use crate::error::SettingsError;

/// One full-match regex, compiled on first use.
#[derive(Debug, Clone)]
pub struct FullMatch {
    pattern: String,
    compiled: OnceCell<Option<Regex>>,
}

impl FullMatch {
    /// Checks `pattern` and wraps it (not compiled until first use).
    ///
    /// ```
    /// use policy_core::matcher::FullMatch;
    /// let re = FullMatch::new("internal\\.registry\\.io").unwrap();
    /// assert!(re.is_match("internal.registry.io"));
    /// assert!(!re.is_match("internal.registry.io.evil.com"));
    /// ```
    pub fn new(pattern: &str) -> Result<Self, String> {
        regex_syntax::Parser::new()
            .parse(&anchor(pattern))
            .map_err(|e| format!("invalid regex {pattern:?}: {}", first_line(&e.to_string())))?;
        Ok(Self::unchecked(pattern))
    }

    /// Wraps `pattern` without checking it: for settings already validated by the host.
    /// An invalid pattern then matches nothing.
    pub fn unchecked(pattern: &str) -> Self {
        FullMatch {
            pattern: pattern.to_owned(),
            compiled: OnceCell::new(),
        }
    }

    /// The pattern as written in the settings.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `s` matches the pattern.
    pub fn is_match(&self, s: &str) -> bool {
        self.compiled
            .get_or_init(|| Regex::new(&anchor(&self.pattern)).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(s))
    }
}

impl PartialEq for FullMatch {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

/// The error summary of a regex-syntax message (which spans several lines with a caret
/// diagram); the pattern itself is already quoted by the caller.
fn first_line(message: &str) -> String {
    message
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("error:"))
        .map(|l| l.trim().to_owned())
        .unwrap_or_else(|| message.lines().next().unwrap_or("").to_owned())
}

fn anchor(pattern: &str) -> String {
    format!("^(?:{pattern})$")
}

/// A setting that is either one string or a list of strings (`allowedRegex: "a"` or `[a, b]`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany {
    /// A single string.
    One(String),
    /// A list of strings.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The strings, in order.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

impl Default for OneOrMany {
    fn default() -> Self {
        OneOrMany::Many(Vec::new())
    }
}

/// Compiles (checks) a list of regex settings; errors name `path[i]`.
pub fn regexes(path: &str, patterns: &[String]) -> Result<Vec<FullMatch>, SettingsError> {
    patterns
        .iter()
        .enumerate()
        .map(|(i, p)| FullMatch::new(p).map_err(|e| SettingsError::new(format!("{path}[{i}]"), e)))
        .collect()
}

/// Exact names plus full-match regexes: a value matches if it is listed or a regex matches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringMatcher {
    exact: BTreeSet<String>,
    exact_order: Vec<String>,
    regexes: Vec<FullMatch>,
    case_insensitive: bool,
}

impl StringMatcher {
    /// A case-sensitive matcher.
    pub fn new(exact: Vec<String>, regexes: Vec<FullMatch>) -> Self {
        StringMatcher {
            exact: exact.iter().cloned().collect(),
            exact_order: exact,
            regexes,
            case_insensitive: false,
        }
    }

    /// A matcher whose exact entries compare case-insensitively (registry hosts, DNS names).
    /// Regexes still match the lower-cased value.
    pub fn case_insensitive(exact: Vec<String>, regexes: Vec<FullMatch>) -> Self {
        StringMatcher {
            exact: exact.iter().map(|s| s.to_ascii_lowercase()).collect(),
            exact_order: exact,
            regexes,
            case_insensitive: true,
        }
    }

    /// Whether `value` is listed or fully matches one of the regexes.
    pub fn matches(&self, value: &str) -> bool {
        if self.case_insensitive {
            let lower = value.to_ascii_lowercase();
            self.exact.contains(&lower) || self.regexes.iter().any(|r| r.is_match(&lower))
        } else {
            self.exact.contains(value) || self.regexes.iter().any(|r| r.is_match(value))
        }
    }

    /// Whether the matcher has neither names nor regexes (matches nothing).
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.regexes.is_empty()
    }

    /// The exact names in settings order.
    pub fn names(&self) -> &[String] {
        &self.exact_order
    }

    /// The regexes in settings order.
    pub fn regex_list(&self) -> &[FullMatch] {
        &self.regexes
    }

    /// A human description for messages: `names [a, b], regexes ["x.*"]`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.exact_order.is_empty() {
            parts.push(format!("names [{}]", self.exact_order.join(", ")));
        }
        if !self.regexes.is_empty() {
            let r: Vec<String> = self
                .regexes
                .iter()
                .map(|r| format!("{:?}", r.pattern()))
                .collect();
            parts.push(format!("regexes [{}]", r.join(", ")));
        }
        if parts.is_empty() {
            "nothing".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn regex_is_full_match() {
        let r = FullMatch::new("^.*acmecorp.com$").unwrap();
        assert!(r.is_match("www.acmecorp.com"));
        let r = FullMatch::new("acmecorp\\.com").unwrap();
        assert!(!r.is_match("evil-acmecorp.com"));
        let r = FullMatch::new("a|b").unwrap();
        assert!(!r.is_match("ab"), "alternation is anchored as a whole");
    }

    #[test]
    fn invalid_regex_refused() {
        let err = regexes("allowedRegex", &["ok".into(), "(".into()]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("allowedRegex[1]: invalid regex \"(\"")
        );
    }

    #[test]
    fn unchecked_invalid_matches_nothing() {
        assert!(!FullMatch::unchecked("(").is_match("("));
    }

    #[test]
    fn case_insensitive_hosts() {
        let m = StringMatcher::case_insensitive(vec!["Docker.io".into()], vec![]);
        assert!(m.matches("docker.IO"));
        let m = StringMatcher::new(vec!["Docker.io".into()], vec![]);
        assert!(!m.matches("docker.io"));
        assert!(m.matches("Docker.io"));
    }

    #[test]
    fn describe_lists_in_settings_order() {
        let m = StringMatcher::new(
            vec!["b".into(), "a".into()],
            vec![FullMatch::new("x.*").unwrap()],
        );
        assert_eq!(m.describe(), "names [b, a], regexes [\"x.*\"]");
    }

    proptest! {
        #[test]
        fn literal_regex_matches_only_itself(s in "[a-z0-9.-]{1,12}", t in "[a-z0-9.-]{0,12}") {
            let r = FullMatch::new(&regex::escape(&s)).unwrap();
            prop_assert!(r.is_match(&s));
            prop_assert_eq!(r.is_match(&t), s == t);
            let with_suffix = format!("{s}{t}");
            prop_assert_eq!(r.is_match(&with_suffix), t.is_empty());
        }

        #[test]
        fn exact_set_membership(names in proptest::collection::vec("[a-z]{1,5}", 0..6), probe in "[a-z]{1,5}") {
            let m = StringMatcher::new(names.clone(), vec![]);
            prop_assert_eq!(m.matches(&probe), names.contains(&probe));
        }
    }
}
