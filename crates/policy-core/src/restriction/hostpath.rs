//! Path prefixes at component boundaries, for `hostPath.path` restrictions and
//! pod-security `allowedHostPaths`.

use crate::names::NameList;

/// Lexically cleans a slash-separated path, like Go's `path.Clean`: repeated and trailing
/// slashes collapse, `.` components disappear, `..` removes the previous component (and
/// stays at the root of an absolute path). Symlinks are, of course, not resolved.
///
/// ```
/// use policy_core::restriction::clean_path;
/// assert_eq!(clean_path("/data//x/"), "/data/x");
/// assert_eq!(clean_path("/data/../etc"), "/etc");
/// assert_eq!(clean_path("/../.."), "/");
/// assert_eq!(clean_path("a/./b/../../.."), "..");
/// assert_eq!(clean_path(""), ".");
/// ```
pub fn clean_path(path: &str) -> String {
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

/// Checks a host-path prefix from the settings: it must be absolute and have no `.` or `..`
/// component. PodSecurityPolicy refused back-steps in `allowedHostPaths`; cleaning them
/// instead would silently widen the prefix (`/data/..` is `/`, every path).
///
/// ```
/// use policy_core::restriction::check_path_prefix;
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
/// use policy_core::restriction::path_prefix_matches;
/// assert!(path_prefix_matches("/data", "/data/x"));
/// assert!(path_prefix_matches("/data/", "/data"));
/// assert!(!path_prefix_matches("/data", "/datax"));
/// assert!(!path_prefix_matches("/data", "/data/../etc"));
/// ```
pub fn path_prefix_matches(prefix: &str, path: &str) -> bool {
    let (prefix, path) = (clean_path(prefix), clean_path(path));
    if prefix.starts_with('/') != path.starts_with('/') {
        return false;
    }
    let components = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_owned)
            .collect()
    };
    let (pc, qc) = (components(&prefix), components(&path));
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

/// Path prefixes from settings, looked up by walking the ancestors of a path (a few hash
/// lookups) instead of comparing the path with every prefix.
///
/// ```
/// use policy_core::restriction::PrefixSet;
/// let set = PrefixSet::new(["/data", "/var/log/", "/data"]);
/// assert_eq!(set.matching("/data/app/../x"), [0, 2]);
/// assert_eq!(set.matching("/var/log"), [1]);
/// assert!(set.matching("/datax").is_empty() && set.matching("/data/../etc").is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefixSet {
    cleaned: NameList,
}

impl PrefixSet {
    /// The prefixes, in settings order.
    pub fn new<'a>(prefixes: impl IntoIterator<Item = &'a str>) -> Self {
        let cleaned = prefixes.into_iter().map(clean_path).collect::<Vec<_>>();
        PrefixSet {
            cleaned: cleaned.into(),
        }
    }

    /// The indices (in settings order) of the prefixes `path` is under, as
    /// [`path_prefix_matches`] decides.
    pub fn matching(&self, path: &str) -> Vec<usize> {
        if self.cleaned.is_empty() {
            return Vec::new();
        }
        let clean = clean_path(path);
        let mut out: Vec<usize> = ancestors(&clean)
            .flat_map(|a| self.cleaned.positions(a))
            .collect();
        out.sort_unstable();
        out
    }

    /// Whether `path` is under one of the prefixes.
    pub fn matches(&self, path: &str) -> bool {
        if self.cleaned.is_empty() {
            return false;
        }
        let clean = clean_path(path);
        ancestors(&clean).any(|a| self.cleaned.contains(a))
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
            prefixes in proptest::collection::vec("(/|\\.\\./|\\./)?([ab.]{1,2}/?){0,3}", 0..6),
            paths in proptest::collection::vec("(/|\\.\\./)?([ab.]{1,2}/){0,3}[ab.]{0,2}", 1..6),
        ) {
            let set = PrefixSet::new(prefixes.iter().map(String::as_str));
            for p in &paths {
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

        #[test]
        fn judged_on_the_cleaned_path(p in abs_path(), q in messy_path()) {
            let cleaned = clean_path(&q);
            prop_assert_eq!(path_prefix_matches(&p, &q), path_prefix_matches(&p, &cleaned));
            prop_assert_eq!(clean_path(&cleaned), cleaned.clone());
            prop_assert!(!cleaned.split('/').any(|c| c == ".." || c == "."));
        }
    }
}
