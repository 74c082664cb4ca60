//! Label keys and values (Kubernetes `IsQualifiedName` / `IsValidLabelValue`) and the
//! `key=value[,key=value]` node-selector annotation format.

use std::collections::HashMap;

use policy_core::names::NameMap;

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

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(f), Some(l)) => {
                    b.len() <= 63
                        && (f.is_ascii_lowercase() || f.is_ascii_digit())
                        && (l.is_ascii_lowercase() || l.is_ascii_digit())
                        && b.iter()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                }
                _ => false,
            }
        })
}

/// Whether `key` is a valid label key: `[prefix/]name`, prefix a DNS subdomain, name at most
/// 63 alphanumerics, `-`, `_`, `.` starting and ending alphanumeric.
pub fn is_label_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_name_part(name, 63),
        None => is_name_part(key, 63),
    }
}

/// Whether `value` is a valid label value (empty, or like a key's name part).
pub fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_name_part(value, 63)
}

/// Parses `k=v,k2=v2` (whitespace around items, keys and values trimmed). `None` when an
/// item lacks `=`, uses `==`, or has an invalid key or value. A repeated key keeps its last
/// value at the position of its first occurrence (as Kubernetes'
/// `labels.ConvertSelectorToLabelsMap`, which APPUiO and PodNodeSelector use).
pub fn parse_selector(text: &str) -> Option<NameMap> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    let mut positions: HashMap<&str, usize> = HashMap::new();
    for item in text.split(',') {
        let (k, v) = item.split_once('=')?;
        let (k, v) = (k.trim(), v.trim());
        if !(is_label_key(k) && is_label_value(v)) {
            return None;
        }
        match positions.get(k).and_then(|&i| pairs.get_mut(i)) {
            Some(pair) => pair.1 = v,
            None => {
                positions.insert(k, pairs.len());
                pairs.push((k, v));
            }
        }
    }
    Some(pairs.into_iter().collect())
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
    #[case("Example.com/x", false)]
    #[case("a/b/c", false)]
    #[case("x/", false)]
    fn keys(#[case] key: &str, #[case] ok: bool) {
        assert_eq!(is_label_key(key), ok);
    }

    fn pairs(text: &str) -> Option<Vec<(String, String)>> {
        parse_selector(text).map(|m| {
            m.iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
    }

    #[test]
    fn selectors() {
        let owned = |v: &[(&str, &str)]| {
            Some(
                v.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            pairs("appuio.io/node-class=plus, zone=a"),
            owned(&[("appuio.io/node-class", "plus"), ("zone", "a")])
        );
        assert_eq!(pairs("a="), owned(&[("a", "")]));
        assert_eq!(pairs("bad"), None);
        assert_eq!(pairs("a==b"), None);
        assert_eq!(pairs("a=b,"), None);
        assert_eq!(pairs("a=b c"), None);
        assert_eq!(pairs("a=b=c"), None);
        assert_eq!(pairs(" a = b "), owned(&[("a", "b")]));
        assert_eq!(pairs("a=b,c=d,a=e"), owned(&[("a", "e"), ("c", "d")]));
    }

    #[test]
    fn repeated_keys_in_a_long_selector_are_merged_in_one_pass() {
        let text: Vec<String> = (0..20_000).map(|i| format!("k{}=v{i}", i % 100)).collect();
        let map = parse_selector(&text.join(",")).unwrap();
        assert_eq!(map.len(), 100);
        assert_eq!(map.get("k7"), Some("v19907"));
    }
}
