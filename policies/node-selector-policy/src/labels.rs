//! Label keys and values (Kubernetes `IsQualifiedName` / `IsValidLabelValue`) and the
//! `key=value[,key=value]` node-selector annotation format.

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
pub fn parse_selector(text: &str) -> Option<Vec<(String, String)>> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in text.split(',') {
        let (k, v) = item.split_once('=')?;
        let (k, v) = (k.trim(), v.trim());
        if !(is_label_key(k) && is_label_value(v)) {
            return None;
        }
        match pairs.iter_mut().find(|(key, _)| key == k) {
            Some(pair) => pair.1 = v.to_owned(),
            None => pairs.push((k.to_owned(), v.to_owned())),
        }
    }
    Some(pairs)
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

    #[test]
    fn selectors() {
        assert_eq!(
            parse_selector("appuio.io/node-class=plus, zone=a"),
            Some(vec![
                ("appuio.io/node-class".into(), "plus".into()),
                ("zone".into(), "a".into())
            ])
        );
        assert_eq!(parse_selector("a="), Some(vec![("a".into(), "".into())]));
        assert_eq!(parse_selector("bad"), None);
        assert_eq!(parse_selector("a==b"), None);
        assert_eq!(parse_selector("a=b,"), None);
        assert_eq!(parse_selector("a=b c"), None);
        assert_eq!(parse_selector("a=b=c"), None);
        assert_eq!(
            parse_selector(" a = b "),
            Some(vec![("a".into(), "b".into())])
        );
        assert_eq!(
            parse_selector("a=b,c=d,a=e"),
            Some(vec![("a".into(), "e".into()), ("c".into(), "d".into())])
        );
    }
}
