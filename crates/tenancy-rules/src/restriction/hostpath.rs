//! Path prefixes at component boundaries, for `hostPath.path` restrictions and
//! pod-security `allowedHostPaths`.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};

use policy_decode::names::NameList;

/// Lexically cleans a slash-separated path, like Go's `path.Clean`: repeated and trailing
/// slashes collapse, `.` components disappear, `..` removes the previous component (and
/// stays at the root of an absolute path). Symlinks are, of course, not resolved.
///
/// ```
/// use tenancy_rules::restriction::clean_path;
/// assert_eq!(clean_path("/data//x/"), "/data/x");
/// assert_eq!(clean_path("/data/../etc"), "/etc");
/// assert_eq!(clean_path("/../.."), "/");
/// assert_eq!(clean_path("a/./b/../../.."), "..");
/// assert_eq!(clean_path(""), ".");
/// ```
///
/// A path that is already clean is returned as it is, without a copy.
pub fn clean_path(path: &str) -> Cow<'_, str> {
    if is_clean(path) {
        return Cow::Borrowed(path);
    }
    Cow::Owned(clean_components(path))
}

/// Whether `path` starts with `/`, does not end with `/`, and has no `/` followed by `/` or
/// `.`, looking at eight bytes at a time (such a path is clean).
fn is_plain_absolute(path: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `w` equal to `c` (exact: no false positives).
    let equal = |w: u64, c: u8| {
        let t = w ^ ONES.wrapping_mul(u64::from(c));
        !(((t & LOW).wrapping_add(LOW)) | t) & HIGH
    };
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') || bytes.last() == Some(&b'/') {
        return false;
    }
    let mut chunks = bytes.chunks_exact(8);
    let word = |chunk: &[u8]| {
        let mut w = [0u8; 8];
        if let Some(head) = w.get_mut(..chunk.len()) {
            head.copy_from_slice(chunk);
        }
        u64::from_le_bytes(w)
    };
    // Whether the last byte of the previous word was a slash.
    let mut carry = false;
    let mut plain = |w: u64| {
        let slash = equal(w, b'/');
        let next = slash | equal(w, b'.');
        let ok = (slash << 8) & next == 0 && !(carry && next & 0x80 != 0);
        carry = slash >> 63 != 0;
        ok
    };
    chunks.all(|c| plain(word(c))) && plain(word(chunks.remainder()))
}

/// [`clean_path`] component by component.
fn clean_components(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// Whether [`clean_path`] would return `path` unchanged: `/`, `.`, or non-empty components
/// other than `.` and `..` joined by single slashes (leading `..` allowed in a relative
/// path), without a trailing slash.
fn is_clean(path: &str) -> bool {
    if path == "/" || path == "." {
        return true;
    }
    // The usual prefix is absolute, without `//`, without a component starting with `.`
    // and without a trailing slash.
    if is_plain_absolute(path) {
        return true;
    }
    let relative = path.strip_prefix('/').unwrap_or(path);
    // Leading `..` components are clean in a relative path only.
    let mut leading = relative.len() == path.len();
    // One pass over the bytes, judging each component at the `/` (or end) that closes it
    // by its length and its last two bytes.
    let (mut len, mut last, mut before) = (0usize, 0u8, 0u8);
    for &b in relative.as_bytes().iter().chain(std::iter::once(&b'/')) {
        if b != b'/' {
            (len, before, last) = (len + 1, last, b);
            continue;
        }
        match (len, before, last) {
            (0, _, _) | (1, _, b'.') => return false,
            (2, b'.', b'.') if !leading => return false,
            (2, b'.', b'.') => {}
            _ => leading = false,
        }
        (len, last, before) = (0, 0, 0);
    }
    true
}

/// Checks a host-path prefix from the settings: it must be absolute and have no `.` or `..`
/// component. PodSecurityPolicy refused back-steps in `allowedHostPaths`; cleaning them
/// instead would silently widen the prefix (`/data/..` is `/`, every path).
///
/// ```
/// use tenancy_rules::restriction::check_path_prefix;
/// assert!(check_path_prefix("/data/project/").is_ok());
/// assert_eq!(check_path_prefix("data").unwrap_err(), "\"data\" is not an absolute path");
/// assert!(check_path_prefix("/data/..").is_err());
/// assert!(check_path_prefix("/data/./x").is_err());
/// ```
pub fn check_path_prefix(prefix: &str) -> Result<(), String> {
    if !prefix.starts_with('/') {
        return Err(format!("{prefix:?} is not an absolute path"));
    }
    if prefix.split('/').any(|c| c == "." || c == "..") {
        return Err(format!(
            "{prefix:?} must not contain \".\" or \"..\" components"
        ));
    }
    Ok(())
}

/// Whether `path` is `prefix` or below it, comparing whole components after
/// [`clean_path`]: `/data` matches `/data`, `/data/` and `/data/x`, not `/datax`;
/// `/data/../etc` is `/etc`. `/` matches every absolute path; an absolute prefix never
/// matches a relative path (and vice versa).
///
/// ```
/// use tenancy_rules::restriction::path_prefix_matches;
/// assert!(path_prefix_matches("/data", "/data/x"));
/// assert!(path_prefix_matches("/data/", "/data"));
/// assert!(!path_prefix_matches("/data", "/datax"));
/// assert!(!path_prefix_matches("/data", "/data/../etc"));
/// ```
pub fn path_prefix_matches(prefix: &str, path: &str) -> bool {
    let (prefix, path) = (clean_path(prefix), clean_path(path));
    let (prefix, path) = (prefix.as_ref(), path.as_ref());
    if prefix.starts_with('/') != path.starts_with('/') {
        return false;
    }
    let components = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_owned)
            .collect()
    };
    let (pc, qc) = (components(prefix), components(path));
    pc.len() <= qc.len() && pc.iter().zip(&qc).all(|(a, b)| a == b)
}

/// The cleaned path and each of its ancestors, longest first: `/a/b`, `/a`, `/` (a relative
/// path ends with `.`). A prefix matches a path exactly when its cleaned form is one of them.
fn ancestors(clean: &str) -> impl Iterator<Item = &str> {
    let root = if clean.starts_with('/') { "/" } else { "." };
    let mut next = Some(clean);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            _ if current == root => None,
            Some(0) => Some("/"),
            Some(i) => current.get(..i),
            None => Some("."),
        };
        Some(current)
    })
}

/// Whether the prefix `prefix`, as written, is `clean` (a [`clean_path`] result) or one of
/// its ancestors, as [`path_prefix_matches`] decides, comparing bytes: the repeated and
/// trailing slashes of the prefix are skipped. Most prefixes differ from the path in their
/// first bytes. For a prefix [`check_path_prefix`] accepts; a relative prefix, or one with
/// a `.` or `..` component before its first difference, is cleaned first.
fn is_prefix_of(prefix: &str, clean: &str) -> bool {
    let (p, q) = (prefix.as_bytes(), clean.as_bytes());
    let slow = || path_prefix_matches(prefix, clean);
    if p.first() != Some(&b'/') || q.first() != Some(&b'/') {
        return slow();
    }
    // Both at a `/`; `j` walks the clean path, whose components are separated by one `/`.
    let (mut i, mut j) = (0, 0);
    loop {
        while p.get(i) == Some(&b'/') {
            i += 1;
        }
        let Some(&first) = p.get(i) else {
            // The prefix is exhausted at a component boundary of the path.
            return j == q.len() || q.get(j) == Some(&b'/');
        };
        if q.get(j) == Some(&b'/') {
            j += 1;
        }
        // Most prefixes differ in their first byte (a `.` may start a `.` or `..`).
        if q.get(j) != Some(&first) && first != b'.' {
            return false;
        }
        let end = p
            .get(i..)
            .and_then(|rest| rest.iter().position(|&b| b == b'/'))
            .map_or(p.len(), |k| i + k);
        let Some(component) = p.get(i..end) else {
            return false;
        };
        if component == b"." || component == b".." {
            return slow();
        }
        if q.get(j..j + component.len()) != Some(component) {
            return false;
        }
        j += component.len();
        if j < q.len() && q.get(j) != Some(&b'/') {
            return false;
        }
        i = end;
    }
}

/// Path prefixes from settings: which of them a path is under.
///
/// The first [`SCANNED_PATHS`] paths asked about are compared with every prefix, byte by
/// byte (most prefixes differ in their first bytes); after that the prefixes are cleaned
/// once and each path's ancestors are looked up instead (a few hash lookups per path). The
/// cost is linear in the prefixes plus the paths, never their product.
///
/// ```
/// use tenancy_rules::restriction::PrefixSet;
/// let set = PrefixSet::new(["/data", "/var/log/", "/data"].into());
/// assert_eq!(set.matching("/data/app/../x"), [0, 2]);
/// assert_eq!(set.matching("/var/log"), [1]);
/// assert!(set.matching("/datax").is_empty() && set.matching("/data/../etc").is_empty());
/// assert_eq!(set.written().iter().nth(1), Some("/var/log/"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct PrefixSet {
    /// The prefixes as written, in settings order.
    written: NameList,
    /// After [`SCANNED_PATHS`] paths: the prefixes after [`clean_path`], when one of them
    /// changes (usually none does).
    cleaned: OnceCell<Option<NameList>>,
    /// Paths asked about so far.
    asked: Cell<u32>,
}

/// Paths compared with every prefix before the prefixes are looked up by ancestor.
pub const SCANNED_PATHS: u32 = 4;

impl PartialEq for PrefixSet {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}

impl Eq for PrefixSet {}

impl PrefixSet {
    /// The prefixes, in settings order. They must pass [`check_path_prefix`] (absolute, no
    /// `.` or `..` component), as settings validation requires; settings re-read by
    /// `validate` were checked when the policy was loaded.
    pub fn new(written: NameList) -> Self {
        PrefixSet {
            written,
            cleaned: OnceCell::new(),
            asked: Cell::new(0),
        }
    }

    /// The prefixes as written, in settings order.
    pub fn written(&self) -> &NameList {
        &self.written
    }

    /// The cleaned prefixes, for lookups by ancestor.
    fn cleaned(&self) -> &NameList {
        let cleaned = self.cleaned.get_or_init(|| {
            self.written.iter().any(|p| !is_clean(p)).then(|| {
                let mut cleaned = NameList::new();
                for prefix in self.written.iter() {
                    cleaned.push(&clean_path(prefix));
                }
                cleaned
            })
        });
        cleaned.as_ref().unwrap_or(&self.written)
    }

    /// Whether the next path is compared with every prefix.
    fn scan(&self) -> bool {
        let asked = self.asked.get().saturating_add(1);
        self.asked.set(asked);
        asked <= SCANNED_PATHS
    }

    /// The indices (in settings order) of the prefixes `path` is under, as
    /// [`path_prefix_matches`] decides.
    pub fn matching(&self, path: &str) -> Vec<usize> {
        if self.written.is_empty() {
            return Vec::new();
        }
        let clean = clean_path(path);
        if self.scan() {
            return (0..self.written.len())
                .filter(|&i| self.written.get(i).is_some_and(|p| is_prefix_of(p, &clean)))
                .collect();
        }
        let mut out: Vec<usize> = ancestors(&clean)
            .flat_map(|a| self.cleaned().positions(a))
            .collect();
        out.sort_unstable();
        out
    }

    /// Whether `path` is under one of the prefixes.
    pub fn matches(&self, path: &str) -> bool {
        if self.written.is_empty() {
            return false;
        }
        let clean = clean_path(path);
        if self.scan() {
            return self.written.iter().any(|p| is_prefix_of(p, &clean));
        }
        ancestors(&clean).any(|a| self.cleaned().contains(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case("/data", "/data", true)]
    #[case("/data", "/data/", true)]
    #[case("/data/", "/data", true)]
    #[case("/data///", "/data/x", true)]
    #[case("/data", "/data/x/y", true)]
    #[case("/data", "/datax", false)]
    #[case("/data", "/dat", false)]
    #[case("/data/x", "/data", false)]
    #[case("/data", "/data/../etc", false)]
    #[case("/data", "/data/./x", true)]
    #[case("/data", "//data//x", true)]
    #[case("/", "/", true)]
    #[case("/", "/etc/passwd", true)]
    #[case("/", "relative", false)]
    #[case("/data", "data", false)]
    #[case("data", "data/x", true)]
    #[case("/var/log", "/var/log/../../etc", false)]
    #[case("/etc", "/var/../etc/shadow", true)]
    #[case("/a/b", "/a/b/../b/c", true)]
    fn prefixes(#[case] prefix: &str, #[case] path: &str, #[case] expected: bool) {
        assert_eq!(
            path_prefix_matches(prefix, path),
            expected,
            "{prefix} vs {path}"
        );
    }

    #[rstest]
    #[case("/data", "/data/x", true)]
    #[case("//data//", "/data", true)]
    #[case("/data/", "/datax", false)]
    #[case("/", "/etc", true)]
    #[case("/etc/ssl", "/etc", false)]
    #[case("/.hidden", "/.hidden/x", true)]
    #[case("/./data", "/data", true)]
    #[case("data", "/data", false)]
    fn byte_comparison(#[case] prefix: &str, #[case] path: &str, #[case] expected: bool) {
        assert_eq!(
            is_prefix_of(prefix, &clean_path(path)),
            expected,
            "{prefix} vs {path}"
        );
        assert_eq!(path_prefix_matches(prefix, path), expected);
    }

    #[test]
    fn ancestors_longest_first() {
        fn all(p: &str) -> Vec<&str> {
            ancestors(p).collect()
        }
        assert_eq!(all("/a/b/c"), ["/a/b/c", "/a/b", "/a", "/"]);
        assert_eq!(all("/"), ["/"]);
        assert_eq!(all("a/b"), ["a/b", "a", "."]);
        assert_eq!(all(".."), ["..", "."]);
        assert_eq!(all("."), ["."]);
    }

    proptest! {
        /// The set answers as comparing the path with every prefix would.
        #[test]
        fn prefix_set_agrees_with_path_prefix_matches(
            prefixes in proptest::collection::vec("/([ab]{1,2}/{0,2}|\\.[ab]/){0,3}", 0..6),
            paths in proptest::collection::vec("(/|\\.\\./)?([ab.]{1,2}/){0,3}[ab.]{0,2}", 1..6),
        ) {
            let set = PrefixSet::new(prefixes.clone().into());
            // Scanned first, looked up by ancestor after SCANNED_PATHS paths.
            for p in paths.iter().chain(&paths).chain(&paths) {
                let expected: Vec<usize> = (0..prefixes.len())
                    .filter(|&i| path_prefix_matches(&prefixes[i], p))
                    .collect();
                prop_assert_eq!(set.matching(p), expected.clone(), "{}", p);
                prop_assert_eq!(set.matches(p), !expected.is_empty());
            }
        }
    }

    #[rstest]
    #[case("/", "/")]
    #[case("//", "/")]
    #[case("/a/b/", "/a/b")]
    #[case("/a/./b", "/a/b")]
    #[case("/a/../../b", "/b")]
    #[case("a/../..", "..")]
    #[case("../a", "../a")]
    #[case(".", ".")]
    fn cleans(#[case] raw: &str, #[case] clean: &str) {
        assert_eq!(clean_path(raw), clean);
    }

    #[rstest]
    #[case("/", true)]
    #[case(".", true)]
    #[case("/a/b", true)]
    #[case("a/b", true)]
    #[case("../a", true)]
    #[case("../../a", true)]
    #[case("..", true)]
    #[case("", false)]
    #[case("//", false)]
    #[case("/a/", false)]
    #[case("/a//b", false)]
    #[case("/a/./b", false)]
    #[case("/a/../b", false)]
    #[case("/..", false)]
    #[case("a/..", false)]
    #[case("./a", false)]
    #[case("/abcdefg/h", true)]
    #[case("/abcdefg//h", false)]
    #[case("/abcdef/.h", true)]
    #[case("/abcdefgh/.i", true)]
    #[case("/abcdefg/./i", false)]
    #[case("/abcdefgh/..", false)]
    #[case("/abcdefghijklmno/p", true)]
    #[case("/abcdefghijklmn//p", false)]
    #[case("/a.b/c.d/e", true)]
    fn clean_paths_are_not_copied(#[case] path: &str, #[case] clean: bool) {
        assert_eq!(is_clean(path), clean, "{path}");
        assert_eq!(
            matches!(clean_path(path), Cow::Borrowed(_)),
            clean,
            "{path}"
        );
    }

    fn abs_path() -> impl Strategy<Value = String> {
        proptest::collection::vec("[a-z]{1,3}", 1..4).prop_map(|c| format!("/{}", c.join("/")))
    }

    fn messy_path() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                "[a-z]{1,2}",
                Just(".".to_owned()),
                Just("..".to_owned()),
                Just(String::new())
            ],
            0..6,
        )
        .prop_map(|c| format!("/{}", c.join("/")))
    }

    proptest! {
        #[test]
        fn reflexive_and_children(p in abs_path(), c in "[a-z]{1,3}") {
            prop_assert!(path_prefix_matches(&p, &p));
            let child = format!("{p}/{c}");
            prop_assert!(path_prefix_matches(&p, &child));
            prop_assert!(!path_prefix_matches(&child, &p));
        }

        #[test]
        fn siblings_sharing_text_do_not_match(p in abs_path(), c in "[a-z0-9]{1,3}") {
            let sibling = format!("{p}{c}");
            prop_assert!(!path_prefix_matches(&p, &sibling));
        }

        #[test]
        fn trailing_slashes_do_not_matter(p in abs_path(), q in abs_path()) {
            let expected = path_prefix_matches(&p, &q);
            prop_assert_eq!(path_prefix_matches(&format!("{p}/"), &q), expected);
            prop_assert_eq!(path_prefix_matches(&p, &format!("{q}//")), expected);
        }

        #[test]
        fn matches_the_string_definition_on_clean_paths(p in abs_path(), q in abs_path()) {
            let expected = q == p || q.starts_with(&format!("{p}/"));
            prop_assert_eq!(path_prefix_matches(&p, &q), expected);
        }

        #[test]
        fn transitive(a in abs_path(), b in abs_path(), c in abs_path()) {
            if path_prefix_matches(&a, &b) && path_prefix_matches(&b, &c) {
                prop_assert!(path_prefix_matches(&a, &c));
            }
        }

        #[test]
        fn root_matches_every_absolute_path(q in messy_path()) {
            prop_assert!(path_prefix_matches("/", &q));
        }

        /// The byte comparison agrees with cleaning both paths.
        #[test]
        fn byte_comparison_agrees_with_cleaning(
            p in "/([ab]{1,2}/{0,2}|\\.[ab]/){0,3}",
            q in messy_path(),
        ) {
            let clean = clean_path(&q);
            prop_assert_eq!(is_prefix_of(&p, &clean), path_prefix_matches(&p, &q), "{} under {}", p, q);
        }

        /// The word-at-a-time test agrees with a byte-by-byte reading of its definition.
        #[test]
        fn plain_absolute_paths(p in "/[a-c./]{0,20}") {
            let b = p.as_bytes();
            let expected = !p.ends_with('/') && !b.windows(2).any(|w| w[0] == b'/' && (w[1] == b'/' || w[1] == b'.'));
            prop_assert_eq!(is_plain_absolute(&p), expected, "{}", p);
        }

        /// The one-pass test agrees with cleaning component by component.
        #[test]
        fn clean_means_unchanged_by_cleaning(p in "/?((\\.|\\.\\.|[ab.]{1,3}|)/){0,4}[ab.]{0,3}") {
            prop_assert_eq!(is_clean(&p), clean_components(&p) == p, "{}", p);
        }

        #[test]
        fn judged_on_the_cleaned_path(p in abs_path(), q in messy_path()) {
            let cleaned = clean_path(&q).into_owned();
            prop_assert_eq!(path_prefix_matches(&p, &q), path_prefix_matches(&p, &cleaned));
            prop_assert_eq!(clean_path(&cleaned), cleaned.as_str());
            prop_assert!(matches!(clean_path(&cleaned), Cow::Borrowed(_)), "a clean path is not copied");
            prop_assert!(!cleaned.split('/').any(|c| c == ".." || c == "."));
        }
    }
}
