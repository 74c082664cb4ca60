//! Full-match string matchers: exact sets and regexes anchored as `^(?:re)$` (SPEC 2.3).
//!
//! A settings regex is validated as written (so that `a)|(b`, which only parses once
//! wrapped, is refused rather than silently unanchored), then compiled wrapped, with explicit
//! size limits, when `validate_settings` reads the settings: a pattern too large to compile
//! is refused with its settings path. When `validate` re-reads the settings (a fresh instance
//! per request, SPEC 2.16) a regex is only stored and compiled, with the same limits, the
//! first time a value needs it.

use std::cell::OnceCell;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use crate::error::SettingsError;
use crate::message;
use crate::names::NameList;

/// Largest compiled program a settings regex may have (bytes); see [`RegexBuilder::size_limit`].
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Largest lazy-DFA cache a settings regex may use (bytes); see
/// [`RegexBuilder::dfa_size_limit`].
pub const REGEX_DFA_SIZE_LIMIT: usize = 1 << 20;
/// Deepest nesting of groups and repetitions a settings regex may have.
pub const REGEX_NEST_LIMIT: u32 = 64;

/// One full-match regex over a whole value.
///
/// Settings regexes are allow-list entries only: a value is allowed when a regex matches it.
/// A pattern that cannot be compiled (possible only for settings that skipped
/// `validate_settings`) therefore matches nothing, which refuses the value.
#[derive(Debug, Clone)]
pub struct FullMatch {
    pattern: String,
    compiled: OnceCell<Option<Regex>>,
}

impl FullMatch {
    /// Validates `pattern` as written and compiles it anchored; when settings are re-read
    /// by `validate` ([`crate::settings::is_reread`]) it is only stored and compiled on
    /// first use.
    ///
    /// ```
    /// use policy_core::matcher::FullMatch;
    /// let re = FullMatch::new("internal\\.registry\\.io").unwrap();
    /// assert!(re.is_match("internal.registry.io"));
    /// assert!(!re.is_match("internal.registry.io.evil.com"));
    /// assert!(FullMatch::new("a)|(b").is_err());
    /// ```
    pub fn new(pattern: &str) -> Result<Self, String> {
        let compiled = OnceCell::new();
        if !crate::settings::is_reread() {
            let invalid = |problem: String| format!("invalid regex {pattern:?}: {problem}");
            regex_syntax::ParserBuilder::new()
                .nest_limit(REGEX_NEST_LIMIT)
                .build()
                .parse(pattern)
                .map_err(|e| invalid(first_line(&e.to_string())))?;
            let regex = compile(pattern).map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => invalid(format!(
                    "too large to compile (limit {REGEX_SIZE_LIMIT} bytes)"
                )),
                other => invalid(first_line(&other.to_string())),
            })?;
            let _ = compiled.set(Some(regex));
        }
        Ok(FullMatch {
            pattern: pattern.to_owned(),
            compiled,
        })
    }

    /// The pattern as written in the settings.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `s` matches the pattern.
    pub fn is_match(&self, s: &str) -> bool {
        self.compiled
            .get_or_init(|| compile(&self.pattern).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(s))
    }
}

/// Compiles `pattern` anchored as `^(?:pattern)$`, within the size limits.
fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .nest_limit(REGEX_NEST_LIMIT)
        .build()
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
/// Names are a [`NameList`]: membership costs no more than reading the list once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringMatcher {
    exact: NameList,
    /// The lower-cased names of a case-insensitive matcher.
    lower: Option<NameList>,
    regexes: Vec<FullMatch>,
}

impl StringMatcher {
    /// A case-sensitive matcher.
    pub fn new(exact: impl Into<NameList>, regexes: Vec<FullMatch>) -> Self {
        StringMatcher {
            exact: exact.into(),
            lower: None,
            regexes,
        }
    }

    /// A matcher whose exact entries compare case-insensitively (registry hosts, DNS names).
    /// Regexes still match the lower-cased value.
    pub fn case_insensitive(exact: impl Into<NameList>, regexes: Vec<FullMatch>) -> Self {
        let exact = exact.into();
        let lower = exact
            .iter()
            .map(|s| s.to_ascii_lowercase())
            .collect::<Vec<_>>();
        StringMatcher {
            exact,
            lower: Some(lower.into()),
            regexes,
        }
    }

    /// Whether `value` is listed or fully matches one of the regexes.
    pub fn matches(&self, value: &str) -> bool {
        match &self.lower {
            Some(lower_names) => {
                let lower = value.to_ascii_lowercase();
                lower_names.contains(&lower) || self.regexes.iter().any(|r| r.is_match(&lower))
            }
            None => self.exact.contains(value) || self.regexes.iter().any(|r| r.is_match(value)),
        }
    }

    /// Whether the matcher has neither names nor regexes (matches nothing).
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.regexes.is_empty()
    }

    /// The exact names in settings order.
    pub fn names(&self) -> &NameList {
        &self.exact
    }

    /// The regexes in settings order.
    pub fn regex_list(&self) -> &[FullMatch] {
        &self.regexes
    }

    /// A human description for messages: `names [a, b], regexes ["x.*"]`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.exact.is_empty() {
            parts.push(format!("names {}", message::bracketed(self.exact.iter())));
        }
        if !self.regexes.is_empty() {
            let r = self.regexes.iter().map(|r| format!("{:?}", r.pattern()));
            parts.push(format!("regexes {}", message::bracketed(r)));
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
    fn pattern_is_validated_as_written_before_wrapping() {
        // Each balances its parentheses only once wrapped as `^(?:re)$`; accepted, it would
        // match unanchored (`a)|(b` would admit "xb").
        for p in ["a)|(b", ".*)|(.*", "(?x)a#)|(b", ")("] {
            let err = FullMatch::new(p).unwrap_err();
            assert!(err.starts_with(&format!("invalid regex {p:?}: ")), "{err}");
        }
    }

    #[test]
    fn too_large_pattern_is_refused_with_its_path() {
        let err = regexes("allowedRegex", &["ok".into(), "\\w{1000}{1000}".into()]).unwrap_err();
        assert_eq!(err.path, "allowedRegex[1]");
        assert!(err.problem.contains("too large to compile"), "{err}");
        let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        let err = FullMatch::new(&deep).unwrap_err();
        assert!(err.contains("nest"), "{err}");
    }

    #[test]
    fn reread_defers_compilation_and_still_fails_closed() {
        let re = crate::settings::reread(|| FullMatch::new("silver-.*")).unwrap();
        assert!(
            re.compiled.get().is_none(),
            "not compiled until a value needs it"
        );
        assert!(re.is_match("silver-1"));
        // A pattern that skipped validate_settings and cannot compile matches nothing.
        let broken = crate::settings::reread(|| FullMatch::new("(")).unwrap();
        assert!(!broken.is_match("("));
    }

    #[test]
    fn case_insensitive_hosts() {
        let m = StringMatcher::case_insensitive(["Docker.io"], vec![]);
        assert!(m.matches("docker.IO"));
        let m = StringMatcher::new(["Docker.io"], vec![]);
        assert!(!m.matches("docker.io"));
        assert!(m.matches("Docker.io"));
        // past the first lookups the names are hashed; the answers stay the same
        for _ in 0..10 {
            assert!(m.matches("Docker.io") && !m.matches("docker.io"));
        }
    }

    #[test]
    fn describe_lists_in_settings_order() {
        let m = StringMatcher::new(["b", "a"], vec![FullMatch::new("x.*").unwrap()]);
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
