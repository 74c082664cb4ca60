//! DNS hostnames as policies compare them (`docs/semantics.md#hostnames`): the normal form
//! used for every comparison, wildcard detection, validation of hostnames written in
//! settings, and an allow-list of exact names plus full-match regexes.
//!
//! A hostname names the same DNS name whatever the case of its letters and whether it
//! carries one trailing dot (the fully qualified form): `App.Acme.com.` and `app.acme.com`
//! are one host. Every comparison (allow-lists, collisions) is made on the normal form, so
//! neither spelling is a way around a rule, and a host allowed in one spelling is allowed in
//! the others.
//!
//! ```
//! use kube_values::hostname::{HostnameAllowList, is_wildcard, normalize};
//! use serde_json::json;
//! assert_eq!(normalize("App.Acme.com."), "app.acme.com");
//! assert!(is_wildcard("*.acme.com") && !is_wildcard("www.acme.com"));
//! let list = HostnameAllowList::parse(&json!({
//!     "allowed": ["solar.acme.com"], "allowedRegex": "[a-z0-9-]+\\.solar\\.acme\\.com"})).unwrap();
//! assert!(list.allows("SOLAR.acme.com."));
//! assert!(list.allows("web.solar.acme.com"));
//! assert!(!list.allows("web.solar.acme.com.evil.io"));
//! assert_eq!(list.describe(), "[solar.acme.com], regex [[a-z0-9-]+\\.solar\\.acme\\.com]");
//! ```

use std::borrow::Cow;

use serde::Deserialize;

use crate::labels::is_dns_subdomain;
use policy_decode::error::SettingsError;
use policy_decode::matcher::{OneOrMany, StringMatcher, regexes};
use policy_decode::message;
use policy_decode::names::NameList;
use policy_decode::settings::{Raw, decode, is_reread, no_duplicate_names};

/// The longest hostname (a DNS subdomain), wildcard included.
const MAX_HOSTNAME: usize = 253;

/// The normal form of a hostname for comparisons: ASCII letters lower-cased and one
/// trailing dot removed (`app.acme.com.` is the fully qualified spelling of
/// `app.acme.com`). A lone `.` is kept, so that no hostname becomes the empty one (the
/// empty host means "no host"). Anything else is kept as written: a value that is not a
/// DNS name stays different from every DNS name.
///
/// ```
/// use kube_values::hostname::normalize;
/// assert_eq!(normalize("WWW.Acme.COM"), "www.acme.com");
/// assert_eq!(normalize("www.acme.com."), "www.acme.com");
/// assert_eq!(normalize("www.acme.com.."), "www.acme.com.");
/// assert_eq!(normalize("."), ".");
/// ```
pub fn normalize(host: &str) -> Cow<'_, str> {
    let trimmed = match host.strip_suffix('.') {
        Some(rest) if !rest.is_empty() => rest,
        _ => host,
    };
    if trimmed.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(trimmed.to_ascii_lowercase())
    } else {
        Cow::Borrowed(trimmed)
    }
}

/// Whether `host` is a wildcard hostname: it starts with `*` (Kubernetes allows only
/// `*.` followed by a DNS subdomain; any leading `*` counts here).
pub fn is_wildcard(host: &str) -> bool {
    host.starts_with('*')
}

/// Checks a hostname written in settings: a DNS-1123 subdomain in its normal form
/// (lower-case, no trailing dot), or a wildcard `*.` followed by one. The error says what
/// is wrong and what to write instead.
///
/// ```
/// use kube_values::hostname::check_entry;
/// assert!(check_entry("solar.acme.com").is_ok() && check_entry("*.solar.acme.com").is_ok());
/// assert!(check_entry("Solar.acme.com").unwrap_err().contains("lower case"));
/// assert!(check_entry("solar.acme.com.").unwrap_err().contains("trailing dot"));
/// assert!(check_entry("*acme.com").unwrap_err().contains("wildcard"));
/// ```
pub fn check_entry(entry: &str) -> Result<(), String> {
    let invalid = |why: &str| format!("{entry:?} is not a valid hostname: {why}");
    if entry.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if entry.len() > MAX_HOSTNAME {
        return Err(invalid("longer than 253 characters"));
    }
    let (subdomain, wildcard) = match entry.strip_prefix("*.") {
        Some(rest) => (rest, true),
        None if is_wildcard(entry) => {
            return Err(invalid(
                "a wildcard is \"*.\" followed by a DNS subdomain, such as \"*.acme.com\"",
            ));
        }
        None => (entry, false),
    };
    if subdomain.len() > 1 && subdomain.ends_with('.') {
        return Err(invalid(
            "write it without the trailing dot (it names the same host)",
        ));
    }
    if entry.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(invalid(
            "write it in lower case (hostnames compare case-insensitively)",
        ));
    }
    if is_dns_subdomain(subdomain) {
        return Ok(());
    }
    Err(invalid(if wildcard {
        "after \"*.\" a DNS subdomain is expected: lower-case letters, digits, '-' and '.', labels of 1 to 63 characters starting and ending with a letter or digit"
    } else {
        "a DNS subdomain is expected: lower-case letters, digits, '-' and '.', labels of 1 to 63 characters starting and ending with a letter or digit"
    }))
}

/// An allow-list of hostnames as written in settings (`{allowed, allowedRegex}`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawHostnameAllowList {
    /// Exact hostnames (wildcards `*.a.com` are matched literally).
    #[serde(default)]
    pub allowed: Option<NameList>,
    /// Full-match regexes over the normal form of the hostname (a string or a list).
    #[serde(default)]
    pub allowed_regex: Option<OneOrMany>,
}

/// A validated hostname allow-list: exact names compared in their normal form
/// ([`normalize`]) and full-match regexes over the normal form.
#[derive(Clone, Debug, PartialEq)]
pub struct HostnameAllowList {
    matcher: StringMatcher,
}

impl HostnameAllowList {
    /// Decodes and validates an allow-list block (errors name the path inside the block).
    pub fn parse<'a>(raw: impl Into<Raw<'a>>) -> Result<Self, SettingsError> {
        Self::build(decode::<RawHostnameAllowList>(raw)?)
    }

    /// Validates decoded settings: a block with neither field is refused, every name must
    /// be a valid hostname ([`check_entry`]) listed once, every regex must compile. Name
    /// syntax and duplicates are not checked again when settings are re-read
    /// ([`policy_decode::settings::is_reread`]).
    pub fn build(raw: RawHostnameAllowList) -> Result<Self, SettingsError> {
        if raw.allowed.is_none() && raw.allowed_regex.is_none() {
            return Err(SettingsError::new(
                "",
                "the hostname allow-list needs allowed or allowedRegex (write `allowed: []` to forbid every hostname)",
            ));
        }
        let names = raw.allowed.unwrap_or_default();
        check_entries(&names)?;
        no_duplicate_names("allowed", &names)?;
        let compiled = match raw.allowed_regex {
            None => Vec::new(),
            Some(OneOrMany::One(pattern)) => regexes("allowedRegex", &[pattern])
                .map_err(|e| SettingsError::new("allowedRegex", e.problem))?,
            Some(OneOrMany::Many(patterns)) => regexes("allowedRegex", &patterns)?,
        };
        // Validated names are already lower-case; lower-casing in place (no allocation)
        // keeps the set case-insensitive for settings that skipped validation.
        Ok(HostnameAllowList {
            matcher: StringMatcher::new(names.into_ascii_lowercase(), compiled),
        })
    }

    /// Whether `host` is allowed: its normal form is listed or fully matches a regex.
    pub fn allows(&self, host: &str) -> bool {
        self.matcher.matches(&normalize(host))
    }

    /// What is allowed, in settings order, as rejections show it:
    /// `[a.com, b.com], regex [x\.a\.com]`, `regex [..]`, or `none`.
    pub fn describe(&self) -> String {
        let names = self.matcher.names();
        let patterns = self.matcher.regex_list();
        let regex = || {
            let shown = patterns.iter().map(|r| r.pattern());
            format!("regex {}", message::bracketed(shown))
        };
        match (names.is_empty(), patterns.is_empty()) {
            (true, true) => "none".to_owned(),
            (false, true) => message::bracketed(names.iter()),
            (true, false) => regex(),
            (false, false) => format!("{}, {}", message::bracketed(names.iter()), regex()),
        }
    }
}

/// Refuses the first invalid name at `allowed[i]` (skipped when settings are re-read).
fn check_entries(names: &NameList) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    for (i, name) in names.iter().enumerate() {
        check_entry(name).map_err(|e| SettingsError::new(format!("allowed[{i}]"), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case("app.acme.com", "app.acme.com")]
    #[case("APP.Acme.Com", "app.acme.com")]
    #[case("app.acme.com.", "app.acme.com")]
    #[case("App.acme.com.", "app.acme.com")]
    #[case("app.acme.com..", "app.acme.com.")]
    #[case("*.Acme.com", "*.acme.com")]
    #[case(".", ".")]
    #[case("", "")]
    #[case("ÄPP.acme.com", "Äpp.acme.com")]
    fn normal_form(#[case] host: &str, #[case] normal: &str) {
        assert_eq!(normalize(host), normal);
    }

    #[test]
    fn normal_form_borrows_what_needs_no_change() {
        assert!(matches!(normalize("app.acme.com"), Cow::Borrowed(_)));
        assert!(matches!(normalize("app.acme.com."), Cow::Borrowed(_)));
        assert!(matches!(normalize("App.acme.com"), Cow::Owned(_)));
    }

    #[rstest]
    #[case("solar.acme.com")]
    #[case("*.solar.acme.com")]
    #[case("localhost")]
    #[case("1-2.x")]
    fn valid_entries(#[case] entry: &str) {
        assert_eq!(check_entry(entry), Ok(()));
    }

    #[rstest]
    #[case("", "must not be empty")]
    #[case("Solar.acme.com", "lower case")]
    #[case("solar.acme.com.", "trailing dot")]
    #[case("*", "a wildcard is")]
    #[case("*acme.com", "a wildcard is")]
    #[case("*.", "after \"*.\" a DNS subdomain")]
    #[case("*.*.acme.com", "after \"*.\" a DNS subdomain")]
    #[case("a..b", "a DNS subdomain is expected")]
    #[case("-a.com", "a DNS subdomain is expected")]
    #[case("a_b.com", "a DNS subdomain is expected")]
    #[case("app.acme.com:443", "a DNS subdomain is expected")]
    #[case("ä.com", "a DNS subdomain is expected")]
    #[case(".", "a DNS subdomain is expected")]
    fn invalid_entries(#[case] entry: &str, #[case] why: &str) {
        let e = check_entry(entry).unwrap_err();
        assert!(e.contains(why), "{entry}: {e}");
        if !entry.is_empty() {
            assert!(e.starts_with(&format!("{entry:?} is not a valid hostname: ")));
        }
    }

    #[test]
    fn length_limit() {
        let label = "a".repeat(63);
        let long = [label.as_str(); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(check_entry(&long).unwrap_err().contains("longer than 253"));
        let fits = format!("*.{}", [label.as_str(); 3].join("."));
        assert!(check_entry(&fits).is_ok(), "{}", fits.len());
    }

    #[rstest]
    #[case(json!({}), "", "needs allowed or allowedRegex")]
    #[case(json!({"allowed": ["a.com", "Bad.com"]}), "allowed[1]", "lower case")]
    #[case(json!({"allowed": ["a.com", "a.com"]}), "allowed[1]", "duplicate entry \"a.com\"")]
    #[case(json!({"allowed": "a.com"}), "allowed", "invalid type")]
    #[case(json!({"allowedRegex": "("}), "allowedRegex", "invalid regex")]
    #[case(json!({"allowedRegex": ["a", "("]}), "allowedRegex[1]", "invalid regex")]
    #[case(json!({"hosts": []}), "hosts", "unknown field `hosts`")]
    fn refused(#[case] raw: Value, #[case] path: &str, #[case] problem: &str) {
        let e = HostnameAllowList::parse(&raw).unwrap_err();
        assert_eq!(e.path, path, "{e}");
        assert!(e.problem.contains(problem), "{e}");
    }

    #[test]
    fn reread_skips_syntax_and_still_compares_case_insensitively() {
        let list = policy_decode::settings::reread(|| {
            HostnameAllowList::parse(&json!({"allowed": ["App.acme.com", "App.acme.com"]}))
        })
        .unwrap();
        assert!(list.allows("app.ACME.com."));
    }

    #[test]
    fn exact_and_regex_mix() {
        let list = HostnameAllowList::parse(
            &json!({"allowed": ["a.acme.com"], "allowedRegex": ["b\\..*"]}),
        )
        .unwrap();
        assert!(list.allows("a.acme.com") && list.allows("b.acme.com"));
        assert!(!list.allows("c.acme.com"));
        // regexes see the normal form: lower-case, no trailing dot
        assert!(list.allows("B.ACME.com."));
    }

    #[test]
    fn regexes_are_anchored() {
        let list = HostnameAllowList::parse(&json!({"allowedRegex": ".*\\.acme\\.com"})).unwrap();
        assert!(list.allows("web.acme.com"));
        assert!(!list.allows("evilacme.com"));
        assert!(!list.allows("web.acme.com.evil.io"));
        // the documented Capsule pattern matches as written: its dot is any character
        let list = HostnameAllowList::parse(&json!({"allowedRegex": "^.*acmecorp.com$"})).unwrap();
        assert!(list.allows("evil-acmecorp.com"));
    }

    #[test]
    fn wildcards_match_literally() {
        let list = HostnameAllowList::parse(&json!({"allowed": ["*.acme.com"]})).unwrap();
        assert!(list.allows("*.acme.com"));
        assert!(!list.allows("www.acme.com"));
    }

    #[test]
    fn descriptions() {
        let d = |raw: Value| HostnameAllowList::parse(&raw).unwrap().describe();
        assert_eq!(d(json!({"allowed": []})), "none");
        assert_eq!(d(json!({"allowed": ["a.com", "b.com"]})), "[a.com, b.com]");
        assert_eq!(d(json!({"allowedRegex": "x\\.com"})), "regex [x\\.com]");
        assert_eq!(
            d(json!({"allowed": ["a.com"], "allowedRegex": ["x", "y"]})),
            "[a.com], regex [x, y]"
        );
        let many: Vec<String> = (0..30).map(|i| format!("h{i}.com")).collect();
        assert!(d(json!({"allowed": many})).ends_with("h19.com, ... (10 more)]"));
    }

    /// A DNS subdomain of one to four labels.
    fn subdomain() -> impl Strategy<Value = String> {
        proptest::collection::vec("[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", 1..5)
            .prop_map(|labels| labels.join("."))
    }

    /// Upper-cases the letters of `s` chosen by `mask`.
    fn recase(s: &str, mask: &[bool]) -> String {
        s.chars()
            .zip(mask.iter().cycle())
            .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c })
            .collect()
    }

    proptest! {
        #[test]
        fn valid_names_are_their_own_normal_form(host in subdomain()) {
            prop_assert_eq!(check_entry(&host), Ok(()));
            prop_assert_eq!(check_entry(&format!("*.{host}")), Ok(()));
            prop_assert_eq!(normalize(&host), host.as_str());
        }

        #[test]
        fn spellings_of_one_host_are_one_host(
            host in subdomain(),
            mask in proptest::collection::vec(any::<bool>(), 1..8),
            dot in any::<bool>(),
        ) {
            let mut spelled = recase(&host, &mask);
            if dot {
                spelled.push('.');
            }
            prop_assert_eq!(normalize(&spelled), host.as_str());
            let list = HostnameAllowList::parse(&json!({"allowed": [host]})).unwrap();
            prop_assert!(list.allows(&spelled));
            let regex = HostnameAllowList::parse(&json!({"allowedRegex": regex::escape(&host)})).unwrap();
            prop_assert!(regex.allows(&spelled));
        }

        #[test]
        fn membership_is_exactly_the_listed_hosts(
            hosts in proptest::collection::btree_set(subdomain(), 0..6),
            probe in subdomain(),
            suffix in "[a-z.]{0,3}",
        ) {
            let list = HostnameAllowList::parse(&json!({"allowed": hosts})).unwrap();
            prop_assert_eq!(list.allows(&probe), hosts.contains(&probe));
            let longer = format!("{probe}{suffix}");
            let normal = normalize(&longer).into_owned();
            prop_assert_eq!(list.allows(&longer), hosts.contains(&normal));
        }

        #[test]
        fn wildcard_is_a_leading_star(host in "\\PC{0,12}") {
            prop_assert_eq!(is_wildcard(&host), host.starts_with('*'));
            prop_assert_eq!(is_wildcard(&normalize(&host)), is_wildcard(&host));
        }
    }
}
