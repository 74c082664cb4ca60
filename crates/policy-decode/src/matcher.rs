//! Full-match string matchers: exact sets and regexes anchored as `^(?:re)$` (`docs/semantics.md#matchers`).
//!
//! A settings regex is validated as written (so that `a)|(b`, which only parses once
//! wrapped, is refused rather than silently unanchored), then compiled wrapped, with explicit
//! size limits, when `validate_settings` reads the settings: a pattern too large to compile
//! is refused with its settings path. When `validate` re-reads the settings (a fresh instance
//! per request, `docs/semantics.md#cost`) a regex is only stored and compiled, with the same limits, the
//! first time a value needs it.
//!
//! Compiling is most of what a regex costs per request, so a pattern is compiled with
//! `regex-lite` (about ten times cheaper to build) whenever that engine's matches are those
//! of `regex`: the two differ only in Unicode-aware features (`\d \s \w \b` and their
//! negations, `\p{..}`, case-insensitive folding), which `lite_matches_alike` detects in the
//! pattern text. Any other pattern, or one `regex-lite` refuses, is compiled with `regex`.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::collections::{BTreeSet, HashMap};

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
/// A pattern that cannot be compiled (possible only for settings that skipped
/// `validate_settings`) matches nothing in an allow-list ([`FullMatch::is_match`]), which
/// refuses the value, and everything in a deny-list ([`FullMatch::denies`]), which refuses
/// it too.
#[derive(Debug, Clone)]
pub struct FullMatch {
    pattern: String,
    /// The pattern as a literal, or a literal followed by `.*`, when it is one: matched
    /// without compiling anything.
    simple: Option<Simple>,
    /// The pattern as `.*` followed by a literal (and perhaps `.*` again), when it is one:
    /// matched without compiling anything, though not indexed as [`Simple`] patterns are.
    after_any: Option<AfterAny>,
    /// Boxed: most patterns of a long list are never compiled, and the list stays small.
    compiled: OnceCell<Option<Box<Compiled>>>,
}

/// A pattern that needs no regex engine: literal characters (some backslash-escaped),
/// optionally followed by `.*`. It keeps only where its text ends in the pattern, which it
/// reads in place: indexing a list of 10,000 patterns copies nothing until the list is
/// indexed ([`PatternList`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Simple {
    /// Bytes of the pattern that spell the text (all of it, or all but a final `.*`).
    body: usize,
    /// Whether the body holds escapes, so that its text is not the body as written.
    escaped: bool,
    /// Whether the text is followed by `.*`: any run without a line feed.
    prefix: bool,
}

impl Simple {
    /// Reads `pattern` as literal characters (letters, digits, `-_/:=@,%!<>;'"` and
    /// backslash-escaped ASCII punctuation), optionally ending in an unescaped `.*`.
    fn parse(pattern: &str) -> Option<Simple> {
        let (body, prefix) = match pattern.strip_suffix(".*") {
            // `\.*` ends in an escaped dot, not in `.*`
            Some(body) if !ends_in_escape(body) => (body, true),
            _ => (pattern, false),
        };
        // every character kept is ASCII, so the pattern is read byte by byte
        let mut escaped = false;
        let mut bytes = body.bytes();
        while let Some(b) = bytes.next() {
            match b {
                b'\\' => match bytes.next() {
                    // `\<` and `\>` are word boundaries
                    Some(e) if e.is_ascii_punctuation() && e != b'<' && e != b'>' => escaped = true,
                    _ => return None,
                },
                b if is_literal(b) => {}
                _ => return None,
            }
        }
        Some(Simple {
            body: body.len(),
            escaped,
            prefix,
        })
    }

    /// The bytes of the text `pattern` (the pattern this was parsed from) spells, escapes
    /// removed: one ASCII byte per character.
    fn text_bytes<'p>(&self, pattern: &'p str) -> impl Iterator<Item = u8> + 'p {
        let mut bytes = pattern
            .as_bytes()
            .get(..self.body)
            .unwrap_or_default()
            .iter()
            .copied();
        std::iter::from_fn(move || match bytes.next()? {
            b'\\' => bytes.next(),
            b => Some(b),
        })
    }

    /// The text `pattern` (the pattern this was parsed from) spells, escapes removed.
    fn text<'p>(&self, pattern: &'p str) -> Cow<'p, str> {
        match self.escaped {
            false => Cow::Borrowed(pattern.get(..self.body).unwrap_or_default()),
            true => Cow::Owned(self.text_bytes(pattern).map(char::from).collect()),
        }
    }

    /// What follows the text in `s`, when `s` starts with it.
    fn strip_text<'s>(&self, pattern: &str, s: &'s str) -> Option<&'s str> {
        if !self.escaped {
            return s.strip_prefix(pattern.get(..self.body)?);
        }
        let mut rest = s.as_bytes();
        for b in self.text_bytes(pattern) {
            match rest.split_first() {
                Some((&first, tail)) if first == b => rest = tail,
                _ => return None,
            }
        }
        // the text is ASCII, so what it leaves starts on a character boundary
        s.get(s.len() - rest.len()..)
    }

    fn is_match(&self, pattern: &str, s: &str) -> bool {
        match self.strip_text(pattern, s) {
            Some(rest) if self.prefix => !rest.contains('\n'),
            Some(rest) => rest.is_empty(),
            None => false,
        }
    }
}

/// A pattern `.*text` (a value ending in the text) or `.*text.*` (a value holding it),
/// where `text` is a literal as [`Simple`] reads it: `.` matches any character but a line
/// feed, which the text (ASCII letters, digits and punctuation) cannot hold.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AfterAny {
    /// The text, escapes removed.
    text: String,
    /// Whether `.*` follows the text too.
    anywhere: bool,
}

impl AfterAny {
    fn parse(pattern: &str) -> Option<AfterAny> {
        let rest = pattern.strip_prefix(".*")?;
        let simple = Simple::parse(rest)?;
        Some(AfterAny {
            text: simple.text(rest).into_owned(),
            anywhere: simple.prefix,
        })
    }

    fn is_match(&self, s: &str) -> bool {
        if self.anywhere {
            return !s.contains('\n') && s.contains(self.text.as_str());
        }
        s.strip_suffix(self.text.as_str())
            .is_some_and(|head| !head.contains('\n'))
    }
}

/// Whether `b` stands for itself in a pattern: letters, digits and `-_/:=@,%!<>;'"`.
fn is_literal(b: u8) -> bool {
    LITERAL.get(usize::from(b)).is_some_and(|&literal| literal)
}

/// [`is_literal`] by byte.
// indexing in a constant: an index out of range fails the build, not a request
#[allow(clippy::indexing_slicing)]
const LITERAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0u8;
    while c < 128 {
        table[c as usize] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'_'
                    | b'/'
                    | b':'
                    | b'='
                    | b'@'
                    | b','
                    | b'%'
                    | b'!'
                    | b'<'
                    | b'>'
                    | b';'
                    | b'\''
                    | b'"'
            );
        c += 1;
    }
    table
};

/// Whether `body` ends in an unfinished escape (an odd run of trailing backslashes).
fn ends_in_escape(body: &str) -> bool {
    body.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

/// A compiled pattern, by the engine that compiled it.
#[derive(Debug, Clone)]
enum Compiled {
    /// `regex-lite`, for patterns whose matches it gives exactly as `regex` does.
    Lite(regex_lite::Regex),
    /// `regex`, for every other pattern.
    Full(Regex),
}

impl Compiled {
    fn is_match(&self, s: &str) -> bool {
        match self {
            Compiled::Lite(re) => re.is_match(s),
            Compiled::Full(re) => re.is_match(s),
        }
    }
}

impl FullMatch {
    /// Validates `pattern` as written and compiles it anchored; when settings are re-read
    /// by `validate` ([`crate::settings::is_reread`]) it is only stored and compiled on
    /// first use.
    ///
    /// ```
    /// use policy_decode::matcher::FullMatch;
    /// let re = FullMatch::new("internal\\.registry\\.io").unwrap();
    /// assert!(re.is_match("internal.registry.io"));
    /// assert!(!re.is_match("internal.registry.io.evil.com"));
    /// assert!(FullMatch::new("a)|(b").is_err());
    /// ```
    pub fn new(pattern: impl Into<String>) -> Result<Self, String> {
        let pattern: String = pattern.into();
        let compiled = OnceCell::new();
        if !crate::settings::is_reread() {
            let invalid = |problem: String| format!("invalid regex {pattern:?}: {problem}");
            regex_syntax::ParserBuilder::new()
                .nest_limit(REGEX_NEST_LIMIT)
                .build()
                .parse(&pattern)
                .map_err(|e| invalid(first_line(&e.to_string())))?;
            let regex = compile_full(&pattern).map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => invalid(format!(
                    "too large to compile (limit {REGEX_SIZE_LIMIT} bytes)"
                )),
                other => invalid(first_line(&other.to_string())),
            })?;
            // keep the engine a request would compile, so that what was checked here is
            // what evaluates
            let engine = compile_lite(&pattern).unwrap_or(Compiled::Full(regex));
            let _ = compiled.set(Some(Box::new(engine)));
        }
        let simple = Simple::parse(&pattern);
        Ok(FullMatch {
            after_any: simple
                .is_none()
                .then(|| AfterAny::parse(&pattern))
                .flatten(),
            simple,
            pattern,
            compiled,
        })
    }

    /// The pattern as written in the settings.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `s` matches the pattern.
    pub fn is_match(&self, s: &str) -> bool {
        self.matches(s, false)
    }

    /// Whether the whole of `s` matches the pattern, for deny-lists: a pattern that cannot
    /// be compiled (settings that skipped `validate_settings`) matches every value, so a
    /// deny-list fails closed.
    pub fn denies(&self, s: &str) -> bool {
        self.matches(s, true)
    }

    /// Whether `s` matches, for a pattern that needs no regex engine (`None` for any other).
    fn simple_match(&self, s: &str) -> Option<bool> {
        self.simple.map(|simple| simple.is_match(&self.pattern, s))
    }

    /// Whether `s` matches; `invalid` is the answer for a pattern that cannot be compiled.
    fn matches(&self, s: &str, invalid: bool) -> bool {
        if let Some(matched) = self.simple_match(s) {
            return matched;
        }
        if let Some(after_any) = &self.after_any {
            return after_any.is_match(s);
        }
        self.compiled
            .get_or_init(|| compile(&self.pattern).map(Box::new))
            .as_ref()
            .map_or(invalid, |re| re.is_match(s))
    }
}

/// Compiles `pattern` anchored as `^(?:pattern)$`, within the size limits, with the cheaper
/// engine when it matches alike; `None` when neither engine compiles it.
fn compile(pattern: &str) -> Option<Compiled> {
    compile_lite(pattern).or_else(|| compile_full(pattern).ok().map(Compiled::Full))
}

/// `pattern` compiled anchored with `regex-lite`, when its matches are provably those of
/// `regex` and it compiles within the limits.
fn compile_lite(pattern: &str) -> Option<Compiled> {
    if !lite_matches_alike(pattern) {
        return None;
    }
    regex_lite::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .nest_limit(REGEX_NEST_LIMIT)
        .build()
        .ok()
        .map(Compiled::Lite)
}

/// `pattern` compiled anchored with `regex`, within the size limits.
fn compile_full(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .nest_limit(REGEX_NEST_LIMIT)
        .build()
}

/// Whether `regex-lite` matches `pattern` exactly as `regex` (Unicode mode) does: every
/// `(?` opens a group without flags (`(?:`, `(?P<`, `(?<`), so no `(?i)` or `(?u)`, and the
/// pattern uses none of the escapes whose meaning is Unicode-aware in `regex` and ASCII in
/// `regex-lite` (`\d \s \w \b \p`, their upper-case negations, `\<` and `\>`).
/// Conservative: an escaped backslash followed by such a letter also answers `false`.
/// Everything else (literals, `.`, classes of listed characters, POSIX classes, repetitions,
/// alternations, anchors) matches code point by code point in both.
fn lite_matches_alike(pattern: &str) -> bool {
    let flagless_groups = pattern.match_indices("(?").all(|(i, _)| {
        let rest = pattern.get(i + 2..).unwrap_or_default();
        rest.starts_with(':') || rest.starts_with("P<") || rest.starts_with('<')
    });
    flagless_groups
        && !pattern
            .as_bytes()
            .windows(2)
            .any(|w| matches!(w, [b'\\', c] if b"dDsSwWbBpP<>".contains(c)))
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
/// Patterns given by value are moved into their [`FullMatch`], not copied.
pub fn regexes<S: Into<String>>(
    path: &str,
    patterns: impl IntoIterator<Item = S>,
) -> Result<Vec<FullMatch>, SettingsError> {
    patterns
        .into_iter()
        .enumerate()
        .map(|(i, p)| FullMatch::new(p).map_err(|e| SettingsError::new(format!("{path}[{i}]"), e)))
        .collect()
}

/// How many values a [`PatternList`] judges by trying its patterns in turn before it indexes
/// them.
const SCANS_BEFORE_INDEX: u32 = 8;

/// Full-match regexes from settings, matched without trying each in turn where their text
/// allows. The first few values are judged by trying the patterns in turn (literal and
/// `prefix.*` patterns first, without a regex engine): settings are parsed on every request,
/// and most requests judge a few values, for which an index costs more than the scans. From
/// the ninth value on, literal patterns are a set and `prefix.*` patterns a
/// set of prefixes looked up by the value's own prefixes of the lengths present; only the
/// other patterns are tried one by one. A request matching many values (every label key of
/// an object) against many patterns so costs the values plus the patterns, not their product
/// (`docs/semantics.md#cost`).
///
/// ```
/// use policy_decode::matcher::{PatternList, regexes};
/// let list = PatternList::new(regexes("allowedLabels", ["team", "custom\\.io/.*", "x[0-9]+"]).unwrap());
/// for _ in 0..10 {
///     assert!(list.is_match("team") && list.is_match("custom.io/a") && list.is_match("x12"));
///     assert!(!list.is_match("teams") && !list.is_match("custom.io.evil/a") && !list.is_match("x"));
/// }
/// assert_eq!(list.patterns().collect::<Vec<_>>(), ["team", "custom\\.io/.*", "x[0-9]+"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct PatternList {
    all: Vec<FullMatch>,
    /// Values judged by trying the patterns in turn.
    scans: Cell<u32>,
    /// The index, built once the scans are spent.
    index: OnceCell<Index>,
}

/// The literal and `prefix.*` patterns of a [`PatternList`] by their text.
#[derive(Debug, Clone, Default)]
struct Index {
    /// Literal patterns, each with the index of its first occurrence in the list.
    literals: HashMap<String, usize>,
    /// `prefix.*` patterns, each with the index of its first occurrence in the list.
    prefixes: HashMap<String, usize>,
    /// The distinct lengths (bytes) of `prefixes`.
    prefix_lengths: BTreeSet<usize>,
    /// Indices of the patterns neither literal nor `prefix.*`.
    others: Vec<usize>,
}

impl Index {
    fn new(patterns: &[FullMatch]) -> Self {
        let mut index = Index::default();
        // sized once: growing the maps pattern by pattern rehashes them ~log2(n) times
        let (mut literals, mut prefixes) = (0, 0);
        for p in patterns {
            match p.simple {
                Some(Simple { prefix: false, .. }) => literals += 1,
                Some(Simple { prefix: true, .. }) => prefixes += 1,
                None => {}
            }
        }
        index.literals.reserve(literals);
        index.prefixes.reserve(prefixes);
        for (i, p) in patterns.iter().enumerate() {
            match p.simple {
                Some(simple) => {
                    let text = simple.text(&p.pattern).into_owned();
                    let map = match simple.prefix {
                        true => {
                            index.prefix_lengths.insert(text.len());
                            &mut index.prefixes
                        }
                        false => &mut index.literals,
                    };
                    map.entry(text).or_insert(i);
                }
                None => index.others.push(i),
            }
        }
        index
    }

    /// The index of the `prefix.*` pattern matching `s` by its first `n` bytes, if any.
    fn prefix_at(&self, s: &str, n: usize) -> Option<usize> {
        let i = s.get(..n).and_then(|head| self.prefixes.get(head))?;
        (!s.get(n..).unwrap_or_default().contains('\n')).then_some(*i)
    }

    /// The first literal or `prefix.*` pattern matching `s`, in list order.
    fn first_simple(&self, s: &str) -> Option<usize> {
        self.literals
            .get(s)
            .copied()
            .into_iter()
            .chain(
                self.prefix_lengths
                    .iter()
                    .filter_map(|&n| self.prefix_at(s, n)),
            )
            .min()
    }
}

impl PartialEq for PatternList {
    fn eq(&self, other: &Self) -> bool {
        self.all == other.all
    }
}

impl PatternList {
    /// The patterns (in settings order), not indexed yet.
    pub fn new(patterns: Vec<FullMatch>) -> Self {
        PatternList {
            all: patterns,
            ..Default::default()
        }
    }

    /// The index, once [`SCANS_BEFORE_INDEX`] values were judged by scans.
    fn index(&self) -> Option<&Index> {
        if let Some(index) = self.index.get() {
            return Some(index);
        }
        if self.scans.get() < SCANS_BEFORE_INDEX {
            self.scans.set(self.scans.get() + 1);
            return None;
        }
        Some(self.index.get_or_init(|| Index::new(&self.all)))
    }

    /// The first literal or `prefix.*` pattern matching `s`, in list order.
    fn first_simple(&self, s: &str) -> Option<usize> {
        match self.index() {
            Some(index) => index.first_simple(s),
            None => self
                .all
                .iter()
                .position(|p| p.simple_match(s) == Some(true)),
        }
    }

    /// The patterns neither literal nor `prefix.*`, with their indices, in list order.
    fn others(&self) -> impl Iterator<Item = (usize, &FullMatch)> {
        let index = self.index.get();
        let indexed = index.map(|index| {
            index
                .others
                .iter()
                .filter_map(|&i| self.all.get(i).map(|p| (i, p)))
        });
        let scanned = index.is_none().then(|| {
            self.all
                .iter()
                .enumerate()
                .filter(|(_, p)| p.simple.is_none())
        });
        indexed
            .into_iter()
            .flatten()
            .chain(scanned.into_iter().flatten())
    }

    /// Whether a pattern matches the whole of `s`.
    pub fn is_match(&self, s: &str) -> bool {
        !self.all.is_empty()
            && (self.first_simple(s).is_some() || self.others().any(|(_, p)| p.is_match(s)))
    }

    /// The first pattern, in settings order, that matches the whole of `s`, for deny-lists:
    /// a pattern that cannot be compiled matches every value ([`FullMatch::denies`]). Costs
    /// as [`PatternList::is_match`]: the other patterns are tried only before the first
    /// literal or prefix that matches.
    ///
    /// ```
    /// use policy_decode::matcher::{PatternList, regexes};
    /// let list = PatternList::new(regexes("blacklistRegex", ["x[0-9]+", "x1", "x.*"]).unwrap());
    /// for _ in 0..10 {
    ///     assert_eq!(list.first_denying("x1").map(|p| p.pattern()), Some("x[0-9]+"));
    ///     assert_eq!(list.first_denying("xa").map(|p| p.pattern()), Some("x.*"));
    ///     assert!(list.first_denying("y").is_none());
    /// }
    /// ```
    pub fn first_denying(&self, s: &str) -> Option<&FullMatch> {
        if self.all.is_empty() {
            return None;
        }
        let simple = self.first_simple(s);
        let other = self
            .others()
            .take_while(|&(i, _)| simple.is_none_or(|first| i < first))
            .find(|(_, p)| p.denies(s))
            .map(|(i, _)| i);
        other.or(simple).and_then(|i| self.all.get(i))
    }

    /// Whether there is no pattern.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The patterns as written, in settings order.
    pub fn patterns(&self) -> impl ExactSizeIterator<Item = &str> {
        self.all.iter().map(FullMatch::pattern)
    }

    /// The patterns, in settings order.
    pub fn as_slice(&self) -> &[FullMatch] {
        &self.all
    }
}

/// Exact names plus full-match regexes: a value matches if it is listed or a regex matches.
/// Names are a [`NameList`]: membership costs no more than reading the list once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringMatcher {
    exact: NameList,
    /// The lower-cased names of a case-insensitive matcher.
    lower: Option<NameList>,
    regexes: PatternList,
}

impl StringMatcher {
    /// A case-sensitive matcher.
    pub fn new(exact: impl Into<NameList>, regexes: Vec<FullMatch>) -> Self {
        StringMatcher {
            exact: exact.into(),
            lower: None,
            regexes: PatternList::new(regexes),
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
            regexes: PatternList::new(regexes),
        }
    }

    /// Whether `value` is listed or fully matches one of the regexes.
    pub fn matches(&self, value: &str) -> bool {
        match &self.lower {
            Some(lower_names) => {
                let lower = value.to_ascii_lowercase();
                lower_names.contains(&lower) || self.regexes.is_match(&lower)
            }
            None => self.exact.contains(value) || self.regexes.is_match(value),
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
        self.regexes.as_slice()
    }

    /// A human description for messages: `names [a, b], regexes ["x.*"]`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.exact.is_empty() {
            parts.push(format!("names {}", message::bracketed(self.exact.iter())));
        }
        if !self.regexes.is_empty() {
            let r = self.regexes.patterns().map(|p| format!("{p:?}"));
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

    /// `patterns` as a list whose scans are spent: every value is judged through its index.
    fn indexed(patterns: Vec<FullMatch>) -> PatternList {
        let list = PatternList::new(patterns);
        list.scans.set(SCANS_BEFORE_INDEX);
        list
    }

    proptest! {
        /// Literal and `prefix.*` patterns, matched without a regex, answer as the regex.
        #[test]
        fn simple_patterns_match_as_the_regex(
            pattern in r"[a\\.*/+-]{0,6}",
            probes in proptest::collection::vec("[a./+\n-]{0,5}", 1..6),
        ) {
            if let (Ok(m), Ok(re)) = (FullMatch::new(&pattern), compile_full(&pattern)) {
                for p in &probes {
                    prop_assert_eq!(m.is_match(p), re.is_match(p), "{:?} {:?}", pattern, p);
                }
            }
        }
    }

    proptest! {
        /// An indexed list answers as trying every pattern in turn would.
        #[test]
        fn pattern_list_agrees_with_every_pattern(
            patterns in proptest::collection::vec(r"[ab\\.*/-]{0,4}", 0..8),
            probes in proptest::collection::vec("[ab./\n-]{0,5}", 1..8),
        ) {
            let compiled: Vec<FullMatch> = patterns.iter().filter_map(|p| FullMatch::new(p).ok()).collect();
            let scanned = PatternList::new(compiled.clone());
            let indexed = indexed(compiled.clone());
            for p in &probes {
                let expected = compiled.iter().any(|r| r.is_match(p));
                prop_assert_eq!(scanned.is_match(p), expected, "scanned {:?}", p);
                prop_assert_eq!(indexed.is_match(p), expected, "indexed {:?}", p);
            }
        }
    }

    proptest! {
        /// The first denying pattern is the first in settings order that matches, as a scan
        /// would find it.
        #[test]
        fn first_denying_is_the_first_match(
            patterns in proptest::collection::vec(r"[ab\\.*/-]{0,4}", 0..8),
            probes in proptest::collection::vec("[ab./\n-]{0,5}", 1..8),
        ) {
            let compiled: Vec<FullMatch> = patterns.iter().filter_map(|p| FullMatch::new(p).ok()).collect();
            let scanned = PatternList::new(compiled.clone());
            let indexed = indexed(compiled.clone());
            for p in &probes {
                let expected = compiled.iter().find(|r| r.is_match(p)).map(FullMatch::pattern);
                prop_assert_eq!(scanned.first_denying(p).map(FullMatch::pattern), expected, "scanned {:?}", p);
                prop_assert_eq!(indexed.first_denying(p).map(FullMatch::pattern), expected, "indexed {:?}", p);
            }
        }
    }

    #[test]
    fn uncompilable_patterns_allow_nothing_and_deny_everything() {
        // only settings that skipped validation can hold one: re-read ones are not checked
        let broken = crate::settings::reread(|| FullMatch::new("a(").unwrap());
        assert!(!broken.is_match("a("));
        assert!(broken.denies("anything"));
        let patterns = vec![FullMatch::new("b").unwrap(), broken];
        for list in [PatternList::new(patterns.clone()), indexed(patterns)] {
            assert_eq!(list.first_denying("b").map(FullMatch::pattern), Some("b"));
            assert_eq!(list.first_denying("c").map(FullMatch::pattern), Some("a("));
            assert!(!list.is_match("c"));
        }
    }

    /// The text and kind a simple pattern is read as (`None`: not simple).
    fn simple(pattern: &str) -> Option<(String, bool)> {
        Simple::parse(pattern).map(|s| (s.text(pattern).into_owned(), s.prefix))
    }

    #[test]
    fn simple_patterns_are_recognised() {
        assert_eq!(
            simple("custom\\.appuio\\.io/.*"),
            Some(("custom.appuio.io/".into(), true))
        );
        assert_eq!(simple("default"), Some(("default".into(), false)));
        assert_eq!(simple("a\\.*"), None);
        assert_eq!(simple("a\\<"), None);
        assert_eq!(simple("kube-.*"), Some(("kube-".into(), true)));
        assert_eq!(simple("a\\\\b\\-"), Some(("a\\b-".into(), false)));
        assert_eq!(simple("a|b"), None);
        assert_eq!(simple("a.b"), None);
        assert_eq!(simple("\\d"), None);
        // non-ASCII text, escaped or not, is left to the regex engine
        assert_eq!(simple("café"), None);
        assert_eq!(simple("a\\é.*"), None);
        assert_eq!(
            simple("o'k;<x>=\"%!@,:_"),
            Some(("o'k;<x>=\"%!@,:_".into(), false))
        );
    }

    #[test]
    fn literal_bytes_are_letters_digits_and_listed_punctuation() {
        for b in 0..=u8::MAX {
            let expected = b.is_ascii_alphanumeric() || b"-_/:=@,%!<>;'\"".contains(&b);
            assert_eq!(is_literal(b), expected, "byte {b}");
        }
    }

    #[test]
    fn escaped_patterns_match_in_place() {
        let m = FullMatch::new("a\\.b\\\\c/.*").unwrap();
        assert!(m.is_match("a.b\\c/"));
        assert!(m.is_match("a.b\\c/x.y"));
        assert!(!m.is_match("a.b\\c/x\ny"));
        assert!(!m.is_match("axb\\c/"));
        assert!(!m.is_match("a.b\\c"));
        assert!(!m.is_match("a.b"));
        let literal = FullMatch::new("a\\.b").unwrap();
        assert!(literal.is_match("a.b"));
        assert!(!literal.is_match("a.bc") && !literal.is_match("a.") && !literal.is_match("a.é"));
    }

    #[test]
    fn lists_index_after_their_scans() {
        let list = PatternList::new(regexes("l", ["a", "b\\..*", "c[0-9]"]).unwrap());
        for i in 0..SCANS_BEFORE_INDEX {
            assert!(list.index.get().is_none(), "scan {i}");
            assert!(list.is_match("b.x"));
        }
        assert!(list.is_match("c1") && list.index.get().is_some());
        let index = list.index.get().unwrap();
        assert_eq!(index.literals.get("a"), Some(&0));
        assert_eq!(index.prefixes.get("b."), Some(&1));
        assert_eq!(index.others, [2]);
        assert!(list.is_match("a") && list.is_match("b.") && !list.is_match("b"));
        // an empty list never counts a scan
        let empty = PatternList::new(Vec::new());
        for _ in 0..=SCANS_BEFORE_INDEX {
            assert!(!empty.is_match("a") && empty.first_denying("a").is_none());
        }
        assert!(empty.index.get().is_none());
    }

    #[test]
    fn cheap_engine_only_for_patterns_it_matches_alike() {
        for p in [
            "web-[0-9]+",
            "app-.*",
            "(?:a|b)c",
            "(?P<x>a)",
            "[[:alpha:]]+",
            "\\.",
        ] {
            assert!(lite_matches_alike(p), "{p}");
            assert!(matches!(compile(p), Some(Compiled::Lite(_))), "{p}");
        }
        for p in [
            "\\d+",
            "\\w",
            "(?i)k",
            "a(?u:.)",
            "\\bx",
            "\\p{Greek}",
            "\\<a",
        ] {
            assert!(!lite_matches_alike(p), "{p}");
            assert!(matches!(compile(p), Some(Compiled::Full(_))), "{p}");
        }
        // Unicode-aware in regex: the full engine keeps them so
        assert!(FullMatch::new("\\d").unwrap().is_match("\u{1815}"));
        assert!(FullMatch::new("(?i)k").unwrap().is_match("\u{212a}"));
        // nested classes are refused by regex-lite: the full engine compiles them
        assert!(matches!(compile("[a[0-9]]"), Some(Compiled::Full(_))));
    }

    /// Pattern pieces, Unicode and ASCII, for the differential test of the two engines.
    const PIECES: &[&str] = &[
        "a",
        "δ",
        "-",
        ".",
        "[a-z]",
        "[^a]",
        "[δ-ζ]",
        "[[:alpha:]]",
        "[[:^digit:]]",
        "\\.",
        "\\x41",
        "\\u{3b4}",
        "\\t",
        "\\A",
        "\\z",
        "^",
        "$",
        "*",
        "+",
        "?",
        "*?",
        "{2}",
        "{1,3}",
        "{2,}",
        "{,2}",
        "|",
        "(",
        ")",
        "(?:",
        "[",
        "]",
        "\\d",
        "(?i)",
        "\\w",
        "K",
        "k",
    ];

    proptest! {
        #[test]
        fn cheap_engine_matches_as_the_full_one(
            pieces in proptest::collection::vec(0..PIECES.len(), 1..8),
            hay in "[aδkK\\-\\.A\\t0-9\u{212a}\u{1815}]{0,6}",
        ) {
            let pattern: String = pieces.iter().filter_map(|&i| PIECES.get(i).copied()).collect();
            if let (Some(Compiled::Lite(lite)), Ok(full)) = (compile(&pattern), compile_full(&pattern)) {
                prop_assert_eq!(lite.is_match(&hay), full.is_match(&hay), "{} on {:?}", pattern, hay);
            }
        }
    }

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
        let err = regexes("allowedRegex", ["ok", "("]).unwrap_err();
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
        let err = regexes("allowedRegex", ["ok", "\\w{1000}{1000}"]).unwrap_err();
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
            let r = FullMatch::new(regex::escape(&s)).unwrap();
            prop_assert!(r.is_match(&s));
            prop_assert_eq!(r.is_match(&t), s == t);
            let with_suffix = format!("{s}{t}");
            prop_assert_eq!(r.is_match(&with_suffix), t.is_empty());
        }

        #[test]
        fn patterns_after_dot_star_match_as_the_regex_does(
            text in "[a-z.\\-/]{0,4}",
            anywhere: bool,
            s in "[a-z.\\-/\n]{0,8}",
        ) {
            let pattern = format!(".*{}{}", regex::escape(&text), if anywhere { ".*" } else { "" });
            let fast = FullMatch::new(pattern.as_str()).unwrap();
            prop_assert!(
                fast.after_any.is_some() || fast.simple.is_some(),
                "{} is read without a regex", pattern
            );
            let regex = compile_full(&pattern).unwrap();
            prop_assert_eq!(fast.is_match(&s), regex.is_match(&s), "{} on {:?}", pattern, s);
            prop_assert_eq!(fast.denies(&s), regex.is_match(&s));
        }

        #[test]
        fn exact_set_membership(names in proptest::collection::vec("[a-z]{1,5}", 0..6), probe in "[a-z]{1,5}") {
            let m = StringMatcher::new(names.clone(), vec![]);
            prop_assert_eq!(m.matches(&probe), names.contains(&probe));
        }
    }
}
