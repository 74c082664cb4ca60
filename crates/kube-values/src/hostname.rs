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
        let fields = ("allowed", "allowedRegex");
        Ok(HostnameAllowList {
            matcher: hostname_matcher(raw.allowed, raw.allowed_regex, fields)?,
        })
    }

    /// Whether `host` is allowed: its normal form is listed or fully matches a regex.
    pub fn allows(&self, host: &str) -> bool {
        self.matcher.matches(&normalize(host))
    }

    /// What is allowed, in settings order, as rejections show it:
    /// `[a.com, b.com], regex [x\.a\.com]`, `regex [..]`, or `none`.
    pub fn describe(&self) -> String {
        describe(&self.matcher)
    }
}

/// A deny-list of hostnames as written in settings (`{denied, deniedRegex}`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawHostnameDenyList {
    /// Exact hostnames (wildcards `*.a.com` are matched literally).
    #[serde(default)]
    pub denied: Option<NameList>,
    /// Full-match regexes over the normal form of the hostname (a string or a list).
    #[serde(default)]
    pub denied_regex: Option<OneOrMany>,
}

/// A validated hostname deny-list, matched as [`HostnameAllowList`] is: exact names in
/// their normal form ([`normalize`]), full-match regexes over the normal form.
///
/// ```
/// use kube_values::hostname::HostnameDenyList;
/// use serde_json::json;
/// let list = HostnameDenyList::parse(&json!({
///     "denied": ["admin.acme.com"], "deniedRegex": ".*\\.internal\\.acme\\.com"})).unwrap();
/// assert!(list.denies("Admin.acme.com.") && list.denies("db.internal.acme.com"));
/// assert!(!list.denies("www.acme.com") && !list.denies("internal.acme.com"));
/// assert_eq!(list.describe(), "[admin.acme.com], regex [.*\\.internal\\.acme\\.com]");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HostnameDenyList {
    matcher: StringMatcher,
}

impl HostnameDenyList {
    /// Decodes and validates a deny-list block (errors name the path inside the block).
    pub fn parse<'a>(raw: impl Into<Raw<'a>>) -> Result<Self, SettingsError> {
        Self::build(decode::<RawHostnameDenyList>(raw)?)
    }

    /// Validates decoded settings as [`HostnameAllowList::build`] does: a block with
    /// neither field is refused (it would deny nothing), names valid and listed once,
    /// regexes compiled.
    pub fn build(raw: RawHostnameDenyList) -> Result<Self, SettingsError> {
        if raw.denied.is_none() && raw.denied_regex.is_none() {
            return Err(SettingsError::new(
                "",
                "the hostname deny-list needs denied or deniedRegex (leave the block out to deny no hostname)",
            ));
        }
        let fields = ("denied", "deniedRegex");
        Ok(HostnameDenyList {
            matcher: hostname_matcher(raw.denied, raw.denied_regex, fields)?,
        })
    }

    /// Whether `host` is denied: its normal form is listed or fully matches a regex.
    pub fn denies(&self, host: &str) -> bool {
        self.matcher.matches(&normalize(host))
    }

    /// What is denied, in settings order, as rejections show it (as
    /// [`HostnameAllowList::describe`]).
    pub fn describe(&self) -> String {
        describe(&self.matcher)
    }
}

/// The matcher of a hostname list whose names are the field `fields.0` and whose regexes
/// are `fields.1`: names valid and listed once (not checked when settings are re-read),
/// regexes compiled.
fn hostname_matcher(
    names: Option<NameList>,
    patterns: Option<OneOrMany>,
    fields: (&str, &str),
) -> Result<StringMatcher, SettingsError> {
    let (names_field, regex_field) = fields;
    let names = names.unwrap_or_default();
    check_entries(names_field, &names)?;
    no_duplicate_names(names_field, &names)?;
    let compiled = match patterns {
        None => Vec::new(),
        Some(OneOrMany::One(pattern)) => regexes(regex_field, &[pattern])
            .map_err(|e| SettingsError::new(regex_field, e.problem))?,
        Some(OneOrMany::Many(patterns)) => regexes(regex_field, &patterns)?,
    };
    // Validated names are already lower-case; lower-casing in place (no allocation)
    // keeps the set case-insensitive for settings that skipped validation.
    Ok(StringMatcher::new(names.into_ascii_lowercase(), compiled))
}

/// A hostname list in settings order: `[a.com, b.com], regex [x\.a\.com]`, `regex [..]`,
/// or `none`.
fn describe(matcher: &StringMatcher) -> String {
    let names = matcher.names();
    let patterns = matcher.regex_list();
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

/// Refuses the first invalid name at `field[i]` (skipped when settings are re-read).
fn check_entries(field: &str, names: &NameList) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    for (i, name) in names.iter().enumerate() {
        check_entry(name).map_err(|e| SettingsError::new(format!("{field}[{i}]"), e))?;
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

    #[rstest]
    #[case(json!({}), "", "needs denied or deniedRegex")]
    #[case(json!({"denied": ["a.com", "Bad.com"]}), "denied[1]", "lower case")]
    #[case(json!({"denied": ["a.com", "a.com"]}), "denied[1]", "duplicate entry \"a.com\"")]
    #[case(json!({"denied": "a.com"}), "denied", "invalid type")]
    #[case(json!({"deniedRegex": "("}), "deniedRegex", "invalid regex")]
    #[case(json!({"deniedRegex": ["a", "("]}), "deniedRegex[1]", "invalid regex")]
    #[case(json!({"allowed": []}), "allowed", "unknown field `allowed`")]
    fn deny_list_refused(#[case] raw: Value, #[case] path: &str, #[case] problem: &str) {
        let e = HostnameDenyList::parse(&raw).unwrap_err();
        assert_eq!(e.path, path, "{e}");
        assert!(e.problem.contains(problem), "{e}");
    }

    #[test]
    fn deny_list_matches_the_normal_form_and_wildcards_literally() {
        let list = HostnameDenyList::parse(
            &json!({"denied": ["admin.acme.com", "*.acme.com"], "deniedRegex": "db-[0-9]+\\.acme\\.com"}),
        )
        .unwrap();
        assert!(list.denies("ADMIN.acme.com.") && list.denies("*.acme.com"));
        assert!(list.denies("db-7.acme.com") && list.denies("DB-7.acme.com."));
        // wildcards are not expanded, regexes are anchored
        assert!(!list.denies("www.acme.com") && !list.denies("db-7.acme.com.evil.io"));
        assert_eq!(
            list.describe(),
            "[admin.acme.com, *.acme.com], regex [db-[0-9]+\\.acme\\.com]"
        );
        let none = HostnameDenyList::parse(&json!({"denied": []})).unwrap();
        assert!(!none.denies("admin.acme.com"));
        assert_eq!(none.describe(), "none");
    }

    #[test]
    fn deny_list_reread_skips_syntax_and_still_compares_case_insensitively() {
        let raw = json!({"denied": ["Admin.acme.com", "Admin.acme.com"]});
        assert!(HostnameDenyList::parse(&raw).is_err());
        let list = policy_decode::settings::reread(|| HostnameDenyList::parse(&raw)).unwrap();
        assert!(list.denies("admin.ACME.com."));
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
