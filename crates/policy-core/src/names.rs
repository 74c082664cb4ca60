//! Lists of strings read from settings (allowed names, whitelists, principals), stored
//! compactly and tested for membership in time independent of their length (SPEC 2.16).
//!
//! policy-server hands the settings to a fresh instance with every request, so a list of
//! 10,000 names is decoded for every request, usually to answer one or two membership
//! questions. A [`NameList`] therefore keeps its entries in one buffer (one allocation
//! instead of one per entry) and answers the first few questions by comparing entries; only
//! a list asked more often builds a hash index, once. Either way the cost is linear in the
//! list plus the questions, never their product.
//!
//! ```
//! use policy_core::names::NameList;
//! let list: NameList = serde_json::from_str(r#"["gold", "silver", "gold"]"#).unwrap();
//! assert_eq!(list.len(), 3);
//! assert!(list.contains("silver") && !list.contains("bronze"));
//! assert_eq!(list.first_duplicate(), Some(2));
//! assert_eq!(list.iter().collect::<Vec<_>>(), ["gold", "silver", "gold"]);
//! ```

use std::cell::{Cell, OnceCell};
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Membership questions answered by comparing entries before a hash index is built.
pub const LINEAR_LOOKUPS: u32 = 4;

/// An ordered list of strings in one buffer, with membership tests that build a hash index
/// on demand.
#[derive(Default)]
pub struct NameList {
    text: String,
    ends: Vec<u32>,
    lookups: Cell<u32>,
    index: OnceCell<Index>,
}

impl NameList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `entry`.
    pub fn push(&mut self, entry: &str) {
        self.text.push_str(entry);
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        // A pushed entry invalidates an index built earlier.
        self.index = OnceCell::new();
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the list has no entry.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `i`, if any.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = match i.checked_sub(1) {
            Some(p) => *self.ends.get(p)? as usize,
            None => 0,
        };
        self.text.get(start..end)
    }

    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }

    /// Whether `value` is an entry.
    pub fn contains(&self, value: &str) -> bool {
        self.position(value).is_some()
    }

    /// The index of the first entry equal to `value`.
    pub fn position(&self, value: &str) -> Option<usize> {
        if let Some(index) = self.index.get() {
            return index.find(self, value);
        }
        let asked = self.lookups.get().saturating_add(1);
        self.lookups.set(asked);
        if asked <= LINEAR_LOOKUPS {
            return self.iter().position(|e| e == value);
        }
        self.index
            .get_or_init(|| Index::build(self))
            .find(self, value)
    }

    /// The indices of every entry equal to `value`, in order.
    pub fn positions(&self, value: &str) -> Vec<usize> {
        let Some(first) = self.position(value) else {
            return Vec::new();
        };
        match self.index.get() {
            Some(index) => index.chain(first),
            None => (first..self.len())
                .filter(|&i| self.get(i) == Some(value))
                .collect(),
        }
    }

    /// The index of the first entry equal to an earlier one (one pass with a hash index).
    pub fn first_duplicate(&self) -> Option<usize> {
        let mut index = Index::with_capacity(self.len());
        (0..self.len()).find(|&i| !index.insert(self, i))
    }
}

/// Open-addressing hash table of entry numbers (`i + 1`; 0 is an empty slot), keyed by the
/// entries' text. Collisions only cost comparisons: every hit is confirmed on the text.
struct Index {
    slots: Vec<u32>,
    /// For each entry, the next equal entry (`j + 1`; 0 when none), in list order.
    next: Vec<u32>,
}

impl Index {
    fn with_capacity(n: usize) -> Self {
        let size = (n.max(4) * 2).next_power_of_two();
        Index {
            slots: vec![0; size],
            next: Vec::new(),
        }
    }

    fn build(list: &NameList) -> Self {
        let n = list.len();
        let mut index = Index::with_capacity(n);
        index.next = vec![0; n];
        // The last entry of each chain of equal entries, by its first entry.
        let mut tails: Vec<u32> = vec![0; n];
        for i in 0..n {
            if index.insert(list, i) {
                continue;
            }
            let value = list.get(i).unwrap_or_default();
            if let Some(head) = index.find(list, value) {
                let tail = tails.get(head).copied().unwrap_or(0);
                let last = if tail == 0 { head } else { tail as usize - 1 };
                if let Some(slot) = index.next.get_mut(last) {
                    *slot = u32::try_from(i + 1).unwrap_or(0);
                }
                if let Some(t) = tails.get_mut(head) {
                    *t = u32::try_from(i + 1).unwrap_or(0);
                }
            }
        }
        index
    }

    /// Entry `first` and the entries equal to it after it.
    fn chain(&self, first: usize) -> Vec<usize> {
        let mut out = vec![first];
        let mut at = first;
        while let Some(&next) = self.next.get(at) {
            if next == 0 {
                break;
            }
            at = next as usize - 1;
            out.push(at);
        }
        out
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Inserts entry `i` unless an equal entry is present; returns whether it was inserted.
    fn insert(&mut self, list: &NameList, i: usize) -> bool {
        let value = list.get(i).unwrap_or_default();
        let mask = self.mask();
        let mut slot = hash(value) as usize & mask;
        loop {
            match self.slots.get(slot).copied() {
                Some(0) => {
                    if let Some(s) = self.slots.get_mut(slot) {
                        *s = u32::try_from(i + 1).unwrap_or(u32::MAX);
                    }
                    return true;
                }
                Some(j) if list.get(j as usize - 1) == Some(value) => return false,
                Some(_) => slot = (slot + 1) & mask,
                None => return false,
            }
        }
    }

    fn find(&self, list: &NameList, value: &str) -> Option<usize> {
        let mask = self.mask();
        let mut slot = hash(value) as usize & mask;
        loop {
            match self.slots.get(slot).copied()? {
                0 => return None,
                j if list.get(j as usize - 1) == Some(value) => return Some(j as usize - 1),
                _ => slot = (slot + 1) & mask,
            }
        }
    }
}

/// FNV-1a over the bytes (entries come from the operator's settings, not from requests).
fn hash(value: &str) -> u64 {
    value.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Clone for NameList {
    fn clone(&self) -> Self {
        NameList {
            text: self.text.clone(),
            ends: self.ends.clone(),
            lookups: Cell::new(0),
            index: OnceCell::new(),
        }
    }
}

impl PartialEq for NameList {
    fn eq(&self, other: &Self) -> bool {
        self.ends == other.ends && self.text == other.text
    }
}

impl Eq for NameList {}

impl fmt::Debug for NameList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> FromIterator<&'a str> for NameList {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut list = NameList::new();
        for entry in iter {
            list.push(entry);
        }
        list
    }
}

impl From<Vec<String>> for NameList {
    fn from(entries: Vec<String>) -> Self {
        entries.iter().map(String::as_str).collect()
    }
}

impl<const N: usize> From<[&str; N]> for NameList {
    fn from(entries: [&str; N]) -> Self {
        entries.into_iter().collect()
    }
}

impl Serialize for NameList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for NameList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = NameList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of strings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NameList, A::Error> {
                let mut list = NameList::new();
                if let Some(n) = seq.size_hint() {
                    list.ends.reserve(n);
                }
                while seq.next_element_seed(Entry(&mut list))?.is_some() {}
                Ok(list)
            }
        }
        deserializer.deserialize_seq(ListVisitor)
    }
}

/// Deserializes one string straight into the list's buffer.
struct Entry<'l>(&'l mut NameList);

impl<'de> DeserializeSeed<'de> for Entry<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Entry<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_in_order_with_paths_of_wrong_entries() {
        let list: NameList = serde_json::from_str(r#"["a", "b\"c", "", "é"]"#).unwrap();
        assert_eq!(list.iter().collect::<Vec<_>>(), ["a", "b\"c", "", "é"]);
        assert_eq!(list.get(4), None);
        let v = serde_json::json!({"x": ["a", 1]});
        #[derive(Debug, Deserialize)]
        struct S {
            #[allow(dead_code)]
            x: NameList,
        }
        let err = serde_path_to_error::deserialize::<_, S>(&v).unwrap_err();
        assert_eq!(err.path().to_string(), "x[1]");
        assert!(err.to_string().contains("expected a string"), "{err}");
        assert!(serde_json::from_str::<NameList>(r#""a""#).is_err());
    }

    #[test]
    fn lookups_switch_to_the_index_and_agree() {
        let list: NameList = (0..100)
            .map(|i| format!("n-{i}"))
            .collect::<Vec<_>>()
            .into();
        for round in 0..3 {
            assert_eq!(list.position("n-42"), Some(42), "round {round}");
            assert_eq!(list.position("n-100"), None);
        }
        assert!(
            list.index.get().is_some(),
            "built after {LINEAR_LOOKUPS} lookups"
        );
        assert!(!list.contains(""));
        let empty = NameList::new();
        for _ in 0..10 {
            assert!(!empty.contains("x"));
        }
    }

    #[test]
    fn duplicates_name_the_second_occurrence() {
        assert_eq!(NameList::from(["a", "b", "c"]).first_duplicate(), None);
        assert_eq!(
            NameList::from(["a", "b", "b", "a"]).first_duplicate(),
            Some(2)
        );
        assert_eq!(NameList::from(["", ""]).first_duplicate(), Some(1));
        assert_eq!(NameList::new().first_duplicate(), None);
    }

    #[test]
    fn positions_of_equal_entries_in_order() {
        let list = NameList::from(["k", "a", "k", "b", "k", "a"]);
        for _ in 0..=LINEAR_LOOKUPS + 1 {
            assert_eq!(list.positions("k"), [0, 2, 4]);
            assert_eq!(list.positions("a"), [1, 5]);
            assert_eq!(list.positions("b"), [3]);
            assert!(list.positions("z").is_empty());
        }
        assert!(list.index.get().is_some());
    }

    #[test]
    fn pushing_after_an_index_rebuilds_it() {
        let mut list = NameList::from(["a"]);
        for _ in 0..=LINEAR_LOOKUPS {
            assert!(!list.contains("b"));
        }
        list.push("b");
        assert!(list.contains("b"));
    }

    proptest! {
        #[test]
        fn agrees_with_a_vector(
            entries in proptest::collection::vec("[a-c]{0,3}", 0..40),
            probes in proptest::collection::vec("[a-c]{0,3}", 0..12),
        ) {
            let list: NameList = entries.clone().into();
            prop_assert_eq!(list.len(), entries.len());
            for p in &probes {
                prop_assert_eq!(list.position(p), entries.iter().position(|e| e == p));
                let all: Vec<usize> = (0..entries.len()).filter(|&i| &entries[i] == p).collect();
                prop_assert_eq!(list.positions(p), all);
            }
            let dup = entries.iter().enumerate().find(|(i, e)| entries[..*i].contains(e)).map(|(i, _)| i);
            prop_assert_eq!(list.first_duplicate(), dup);
            let json = serde_json::to_string(&list).unwrap();
            prop_assert_eq!(serde_json::from_str::<NameList>(&json).unwrap(), list);
        }
    }
}
