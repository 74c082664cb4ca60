//! Lists of strings read from settings (allowed names, whitelists, principals), stored
//! compactly and tested for membership in time independent of their length (`docs/semantics.md#cost`).
//!
//! policy-server hands the settings to a fresh instance with every request, so a list of
//! 10,000 names is decoded for every request, usually to answer one or two membership
//! questions. A [`NameList`] therefore keeps its entries in one buffer (one allocation
//! instead of one per entry) and answers its first [`LINEAR_LOOKUPS`] questions by comparing
//! entries (a short list always does); a list asked more often builds a hash index, once.
//! In a fresh wasm instance building the index costs about as much as comparing every entry
//! ten times (hashing every entry and touching a new table), so either way the cost is
//! linear in the list plus the questions, never their product, and at most about twice
//! that of the better choice made in hindsight.
//!
//! ```
//! use policy_decode::names::NameList;
//! let list: NameList = serde_json::from_str(r#"["gold", "silver", "gold"]"#).unwrap();
//! assert_eq!(list.len(), 3);
//! assert!(list.contains("silver") && !list.contains("bronze"));
//! assert_eq!(list.first_duplicate(), Some(2));
//! assert_eq!(list.iter().collect::<Vec<_>>(), ["gold", "silver", "gold"]);
//! ```

use std::cell::{Cell, OnceCell};
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Membership questions answered by comparing entries (lengths first) before a hash index is
/// built.
pub const LINEAR_LOOKUPS: u32 = 8;

/// Lists of at most this many entries are always searched by comparing entries.
pub const SHORT_LIST: usize = 16;

/// The questions asked of a settings list so far: the first [`LINEAR_LOOKUPS`] (every one
/// for a list of at most [`SHORT_LIST`] entries) are answered by trying each entry, later
/// ones by an index built once. A copy starts counting again.
#[derive(Debug, Default)]
pub struct Questions(Cell<u32>);

impl Questions {
    /// Counts one more question about a list of `len` entries; whether to try each entry.
    pub fn linear(&self, len: usize) -> bool {
        let asked = self.0.get().saturating_add(1);
        self.0.set(asked);
        asked <= LINEAR_LOOKUPS || len <= SHORT_LIST
    }
}

impl Clone for Questions {
    fn clone(&self) -> Self {
        Questions::default()
    }
}

/// An ordered list of strings in one buffer, with membership tests that build a hash index
/// on demand.
#[derive(Default)]
pub struct NameList {
    text: String,
    ends: Ends,
    lookups: Questions,
    index: OnceCell<Box<Index>>,
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
        if self.index.get().is_some() {
            self.index = OnceCell::new();
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The list with every entry's ASCII letters lower-cased (in place: entries keep their
    /// lengths).
    ///
    /// ```
    /// let list = policy_decode::names::NameList::from(["Quay.IO", "ghcr.io"]).into_ascii_lowercase();
    /// assert_eq!(list.iter().collect::<Vec<_>>(), ["quay.io", "ghcr.io"]);
    /// ```
    pub fn into_ascii_lowercase(mut self) -> Self {
        self.text.make_ascii_lowercase();
        self.index = OnceCell::new();
        self
    }

    /// Whether the list has no entry.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `i`, if any.
    pub fn get(&self, i: usize) -> Option<&str> {
        let ends = self.ends.as_slice();
        let end = *ends.get(i)? as usize;
        let start = match i.checked_sub(1) {
            Some(p) => *ends.get(p)? as usize,
            None => 0,
        };
        self.text.get(start..end)
    }

    /// Whether entry `i` is `value`: lengths first, then bytes (no character-boundary
    /// checks on the way).
    fn is_at(&self, i: usize, value: &str) -> bool {
        let ends = self.ends.as_slice();
        let Some(&end) = ends.get(i) else {
            return false;
        };
        let start = match i.checked_sub(1) {
            Some(p) => ends.get(p).copied().unwrap_or(0),
            None => 0,
        };
        let (start, end) = (start as usize, end as usize);
        end.wrapping_sub(start) == value.len()
            && self.text.as_bytes().get(start..end) == Some(value.as_bytes())
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
        if self.lookups.linear(self.len()) {
            return (0..self.len()).find(|&i| self.is_at(i, value));
        }
        self.index
            .get_or_init(|| Box::new(Index::build(self)))
            .find(self, value)
    }

    /// The indices of every entry equal to `value`, in order.
    pub fn positions(&self, value: &str) -> Vec<usize> {
        let Some(first) = self.position(value) else {
            return Vec::new();
        };
        match self.index.get() {
            Some(index) => index.chain(self, first),
            None => (first..self.len())
                .filter(|&i| self.is_at(i, value))
                .collect(),
        }
    }

    /// The index of the first entry equal to an earlier one (one pass with a hash index).
    pub fn first_duplicate(&self) -> Option<usize> {
        let mut index = Index::with_capacity(self.len());
        (0..self.len()).find(|&i| !index.insert(self, i))
    }
}

/// The end offsets of a list's entries in its text. A list of one entry, the most common
/// list in settings (`allowedGroups: [tenant-a]`), needs no allocation for them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Ends {
    #[default]
    Empty,
    One(u32),
    Many(Vec<u32>),
}

impl Ends {
    fn push(&mut self, end: u32) {
        match self {
            Ends::Many(all) => all.push(end),
            Ends::One(first) => *self = Ends::Many(vec![*first, end]),
            Ends::Empty => *self = Ends::One(end),
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            Ends::Empty => &[],
            Ends::One(end) => std::slice::from_ref(end),
            Ends::Many(all) => all,
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn is_empty(&self) -> bool {
        matches!(self, Ends::Empty)
    }
}

/// Open-addressing hash table of entry numbers (`i + 1`; 0 is an empty slot), keyed by the
/// entries' text: one slot per distinct entry, its first occurrence. Collisions only cost
/// comparisons: every hit is confirmed on the text. The chains of repeated entries, which
/// only [`NameList::positions`] needs, are built the first time it asks.
struct Index {
    slots: Vec<u32>,
    /// For each entry, the next equal entry (`j + 1`; 0 when none), in list order.
    next: OnceCell<Vec<u32>>,
}

impl Index {
    /// An empty table for `n` entries, at most half full (a probe compares entry texts, so
    /// short probe sequences matter more than the table's size).
    fn with_capacity(n: usize) -> Self {
        let size = n.saturating_mul(2).max(4).next_power_of_two();
        Index {
            slots: vec![0; size],
            next: OnceCell::new(),
        }
    }

    fn build(list: &NameList) -> Self {
        let mut index = Index::with_capacity(list.len());
        for i in 0..list.len() {
            index.insert(list, i);
        }
        index
    }

    /// Entry `first` (the first occurrence of its value) and the entries equal to it after
    /// it.
    fn chain(&self, list: &NameList, first: usize) -> Vec<usize> {
        let next = self.next.get_or_init(|| self.chains(list));
        let mut out = vec![first];
        let mut at = first;
        while let Some(&following) = next.get(at) {
            if following == 0 {
                break;
            }
            at = following as usize - 1;
            out.push(at);
        }
        out
    }

    /// The `next` links of every entry, in one pass.
    fn chains(&self, list: &NameList) -> Vec<u32> {
        let n = list.len();
        let mut next = vec![0u32; n];
        // The last entry of each chain so far, by its first entry (`j + 1`; 0: the first).
        let mut tails = vec![0u32; n];
        for i in 0..n {
            let value = list.get(i).unwrap_or_default();
            let Some(head) = self.find(list, value).filter(|&h| h != i) else {
                continue;
            };
            let link = u32::try_from(i + 1).unwrap_or(0);
            let last = match tails.get(head).copied().unwrap_or(0) {
                0 => head,
                tail => tail as usize - 1,
            };
            if let Some(slot) = next.get_mut(last) {
                *slot = link;
            }
            if let Some(t) = tails.get_mut(head) {
                *t = link;
            }
        }
        next
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The first slot to probe for `value`.
    fn home(&self, value: &str) -> usize {
        hash(value) as usize & self.mask()
    }

    /// Inserts entry `i` unless an equal entry is present; returns whether it was inserted.
    fn insert(&mut self, list: &NameList, i: usize) -> bool {
        let value = list.get(i).unwrap_or_default();
        let mask = self.mask();
        let mut slot = self.home(value);
        loop {
            match self.slots.get(slot).copied() {
                Some(0) => {
                    if let Some(s) = self.slots.get_mut(slot) {
                        *s = u32::try_from(i + 1).unwrap_or(u32::MAX);
                    }
                    return true;
                }
                Some(j) if list.is_at(j as usize - 1, value) => return false,
                Some(_) => slot = (slot + 1) & mask,
                None => return false,
            }
        }
    }

    fn find(&self, list: &NameList, value: &str) -> Option<usize> {
        let mask = self.mask();
        let mut slot = self.home(value);
        loop {
            match self.slots.get(slot).copied()? {
                0 => return None,
                j if list.is_at(j as usize - 1, value) => return Some(j as usize - 1),
                _ => slot = (slot + 1) & mask,
            }
        }
    }
}

/// A fast, word-at-a-time hash of the bytes (FxHash's step, then a final mix so that the
/// low bits the table uses depend on every word). Entries come from the operator's
/// settings, not from requests, so the hash need not resist chosen collisions.
fn hash(value: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut chunks = value.as_bytes().chunks_exact(8);
    let mut h = value.len() as u64;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = step(h, u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    let mut word = [0u8; 8];
    if let Some(head) = word.get_mut(..rest.len()) {
        head.copy_from_slice(rest);
    }
    h = step(h, u64::from_le_bytes(word));
    (h ^ (h >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
}

impl Clone for NameList {
    fn clone(&self) -> Self {
        NameList {
            text: self.text.clone(),
            ends: self.ends.clone(),
            lookups: Questions::default(),
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
                while seq.next_element_seed(Entry(&mut list))?.is_some() {}
                Ok(list)
            }
        }
        deserializer.deserialize_seq(ListVisitor)
    }
}

/// A map of strings to strings read from settings (label pairs, node selectors), in
/// document order, stored as two [`NameList`]s: decoding allocates per map, not per entry,
/// and key lookups share the lists' on-demand index.
///
/// A JSON object with a repeated key keeps every occurrence; [`NameMap::get`] answers the
/// first and [`NameMap::first_duplicate`] finds the repetition so that settings
/// validation can refuse it.
///
/// ```
/// use policy_decode::names::NameMap;
/// let map: NameMap = serde_json::from_str(r#"{"pool": "renewable", "zone": "a"}"#).unwrap();
/// assert_eq!(map.get("zone"), Some("a"));
/// assert_eq!(map.iter().collect::<Vec<_>>(), [("pool", "renewable"), ("zone", "a")]);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    keys: NameList,
    values: NameList,
}

impl NameMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `key: value`.
    pub fn push(&mut self, key: &str, value: &str) {
        self.keys.push(key);
        self.values.push(value);
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The value of the first entry with `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(self.keys.position(key)?)
    }

    /// Whether an entry has `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// The entries in document order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.keys.iter().zip(self.values.iter())
    }

    /// The index of the first entry whose key repeats an earlier one.
    pub fn first_duplicate(&self) -> Option<usize> {
        self.keys.first_duplicate()
    }
}

impl fmt::Debug for NameMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for NameMap {
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(iter: I) -> Self {
        let mut map = NameMap::new();
        for (k, v) in iter {
            map.push(k, v);
        }
        map
    }
}

impl Serialize for NameMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for NameMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = NameMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings to strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<NameMap, A::Error> {
                let mut map = NameMap::new();
                while access.next_key_seed(Entry(&mut map.keys))?.is_some() {
                    access.next_value_seed(Entry(&mut map.values))?;
                }
                Ok(map)
            }
        }
        deserializer.deserialize_map(MapVisitor)
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
        for round in 0..LINEAR_LOOKUPS / 2 {
            assert_eq!(list.position("n-42"), Some(42), "round {round}");
            assert_eq!(list.position("n-100"), None);
        }
        assert!(
            list.index.get().is_none(),
            "{LINEAR_LOOKUPS} linear lookups"
        );
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
        let mut list = NameList::from(["k", "a", "k", "b", "k", "a"]);
        for i in 0..SHORT_LIST {
            list.push(&format!("filler-{i}"));
        }
        for _ in 0..=LINEAR_LOOKUPS + 1 {
            assert_eq!(list.positions("k"), [0, 2, 4]);
            assert_eq!(list.positions("a"), [1, 5]);
            assert_eq!(list.positions("b"), [3]);
            assert!(list.positions("z").is_empty());
        }
        assert!(list.index.get().is_some());
    }

    #[test]
    fn short_lists_are_never_indexed() {
        let list: NameList = (0..SHORT_LIST)
            .map(|i| format!("n-{i}"))
            .collect::<Vec<_>>()
            .into();
        for _ in 0..10 {
            assert!(list.contains("n-3") && !list.contains("x"));
        }
        assert!(list.index.get().is_none());
    }

    #[test]
    fn pushing_after_an_index_rebuilds_it() {
        let mut list: NameList = (0..=SHORT_LIST)
            .map(|i| format!("n-{i}"))
            .collect::<Vec<_>>()
            .into();
        for _ in 0..=LINEAR_LOOKUPS {
            assert!(!list.contains("b"));
        }
        assert!(list.index.get().is_some());
        list.push("b");
        assert!(list.contains("b"));
    }

    #[test]
    fn maps_keep_document_order_and_repeated_keys() {
        let map: NameMap =
            serde_json::from_str(r#"{"b": "1", "a": "2", "b": "3", "c": ""}"#).unwrap();
        assert_eq!(map.len(), 4);
        assert_eq!(
            map.iter().collect::<Vec<_>>(),
            [("b", "1"), ("a", "2"), ("b", "3"), ("c", "")]
        );
        assert_eq!(map.get("b"), Some("1"), "the first occurrence");
        assert_eq!(map.get("z"), None);
        assert!(map.contains_key("c") && !map.contains_key("z"));
        assert_eq!(map.first_duplicate(), Some(2));
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"b":"1","a":"2","b":"3","c":""}"#
        );
        let v = serde_json::json!({"m": {"a": "x", "b": 1}});
        #[derive(Debug, Deserialize)]
        struct S {
            #[allow(dead_code)]
            m: NameMap,
        }
        let err = serde_path_to_error::deserialize::<_, S>(&v).unwrap_err();
        assert_eq!(err.path().to_string(), "m.b");
        assert!(serde_json::from_str::<NameMap>(r#"["a"]"#).is_err());
        assert!(NameMap::new().is_empty());
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
