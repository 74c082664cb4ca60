//! Path prefixes at component boundaries, for `hostPath.path` restrictions and
//! pod-security `allowedHostPaths`.

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
