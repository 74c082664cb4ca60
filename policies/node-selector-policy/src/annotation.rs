//! The `key=value[,key=value]` node-selector annotation format (as Kubernetes'
//! `labels.ConvertSelectorToLabelsMap`), with keys and values checked by
//! [`policy_core::labels`].

use std::collections::HashMap;

use policy_core::labels::{is_label_key, is_label_value};
use policy_core::names::NameMap;

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
