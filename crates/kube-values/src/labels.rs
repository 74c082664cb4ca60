//! Kubernetes label keys and values and DNS subdomain names (`IsQualifiedName`,
//! `IsValidLabelValue`, `IsDNS1123Subdomain`), checked in settings
//! (`docs/semantics.md#selectors`, `docs/semantics.md#settings`).
//!
//! These are syntax checks: they cannot change a verdict, so settings validators run them
//! only when the settings are validated, not when `validate` re-reads them
//! ([`policy_decode::settings::is_reread`]).
//!
//! ```
//! use kube_values::labels::{is_dns_subdomain, is_label_key, is_label_value};
//! assert!(is_label_key("appuio.io/node-class") && !is_label_key("bad key"));
//! assert!(is_label_value("") && is_label_value("gold") && !is_label_value("-gold"));
//! assert!(is_dns_subdomain("example.com") && !is_dns_subdomain("Example.com"));
//! ```

use policy_decode::error::SettingsError;

/// The longest name part of a label key, and the longest label value.
const MAX_NAME: usize = 63;
/// The longest DNS subdomain (a label key's prefix).
const MAX_SUBDOMAIN: usize = 253;

/// Whether `s` is a name of at most `max` alphanumerics, `-`, `_`, `.`, starting and ending
/// alphanumeric.
fn is_name_part(s: &str, max: usize) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    s.len() <= max
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Whether `s` is one DNS label: at most 63 lowercase alphanumerics and `-`, starting and
/// ending alphanumeric.
fn is_dns_label(label: &str) -> bool {
    let b = label.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            b.len() <= MAX_NAME
                && (f.is_ascii_lowercase() || f.is_ascii_digit())
                && (l.is_ascii_lowercase() || l.is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        }
        _ => false,
    }
}

/// Whether `s` is a DNS subdomain: at most 253 characters of dot-separated DNS labels.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= MAX_SUBDOMAIN && !s.is_empty() && s.split('.').all(is_dns_label)
}

/// Whether `key` is a valid label key: `[prefix/]name`, prefix a DNS subdomain, name at most
/// 63 alphanumerics, `-`, `_`, `.` starting and ending alphanumeric.
pub fn is_label_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_name_part(name, MAX_NAME),
        None => is_name_part(key, MAX_NAME),
    }
}

/// Whether `key` is a valid annotation key: a label key once lower-cased (the API server
/// accepts upper-case letters in an annotation key's prefix, not in a label key's).
///
/// ```
/// use kube_values::labels::{is_annotation_key, is_label_key};
/// assert!(is_annotation_key("Example.com/Note") && !is_label_key("Example.com/Note"));
/// assert!(!is_annotation_key("a b"));
/// ```
pub fn is_annotation_key(key: &str) -> bool {
    is_label_key(&key.to_ascii_lowercase())
}

/// Whether `value` is a valid label value (empty, or like a key's name part).
pub fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_name_part(value, MAX_NAME)
}

/// Refuses an invalid pair of a label map setting at `<map>["<key>"]`: `invalid label key`,
/// or `invalid label value "<value>"`.
pub fn check_label(map: &str, key: &str, value: &str) -> Result<(), SettingsError> {
    if !is_label_key(key) {
        return Err(SettingsError::new(
            format!("{map}[{key:?}]"),
            "invalid label key",
        ));
    }
    if !is_label_value(value) {
        return Err(SettingsError::new(
            format!("{map}[{key:?}]"),
            format!("invalid label value {value:?}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("pool", true)]
    #[case("appuio.io/node-class", true)]
    #[case("a_b.c-d", true)]
    #[case("", false)]
    #[case("-a", false)]
    #[case("bad key", false)]
    #[case("Example.com/x", false)]
    #[case("a/b/c", false)]
    #[case("x/", false)]
    #[case("/x", false)]
    fn keys(#[case] key: &str, #[case] ok: bool) {
        assert_eq!(is_label_key(key), ok);
    }

    #[rstest]
    #[case("", true)]
    #[case("gold", true)]
    #[case("a.b_c-D", true)]
    #[case("-gold", false)]
    #[case("gold ", false)]
    #[case("a/b", false)]
    fn values(#[case] value: &str, #[case] ok: bool) {
        assert_eq!(is_label_value(value), ok);
    }

    #[test]
    fn lengths() {
        assert!(is_label_value(&"a".repeat(63)) && !is_label_value(&"a".repeat(64)));
        let label = "a".repeat(63);
        assert!(is_dns_subdomain(&[label.as_str(); 3].join(".")));
        assert!(!is_dns_subdomain(&"a".repeat(64)));
        assert!(!is_dns_subdomain(&[label.as_str(); 5].join(".")));
        assert!(!is_dns_subdomain("a..b") && !is_dns_subdomain(""));
    }

    #[test]
    fn refusals_name_the_pair() {
        assert_eq!(
            check_label("matchLabels", "bad key", "x")
                .unwrap_err()
                .to_string(),
            "matchLabels[\"bad key\"]: invalid label key"
        );
        assert_eq!(
            check_label("matchLabels", "k", "bad value")
                .unwrap_err()
                .to_string(),
            "matchLabels[\"k\"]: invalid label value \"bad value\""
        );
        assert!(check_label("matchLabels", "k", "").is_ok());
    }
}
