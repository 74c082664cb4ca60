//! Inclusive integer ranges from settings (numeric restrictions, id ranges, host ports),
//! kept in settings order for messages and tested for membership without trying every
//! range once a list is asked often (README "What every policy guarantees": cost).

use std::cell::OnceCell;

use crate::names::Questions;

/// An inclusive range with its bounds as `i128` (open ends as `i128::MIN` / `i128::MAX`).
pub trait Bounds {
    /// The lowest and the highest value in the range.
    fn bounds(&self) -> (i128, i128);
}

impl Bounds for (i64, i64) {
    fn bounds(&self) -> (i128, i128) {
        (i128::from(self.0), i128::from(self.1))
    }
}

/// Ranges in settings order. The first questions try each range ([`Questions`]); after that
/// the ranges are sorted and merged once, and each question is a binary search.
///
/// ```
/// use policy_decode::ranges::RangeList;
/// let list = RangeList::new(vec![(1000, 1999), (1, 99), (50, 120)]);
/// for _ in 0..20 {
///     assert!(list.contains(1) && list.contains(120) && list.contains(1500));
///     assert!(!list.contains(0) && !list.contains(121) && !list.contains(2000));
/// }
/// assert_eq!(list.items(), [(1000, 1999), (1, 99), (50, 120)]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct RangeList<R> {
    items: Vec<R>,
    asked: Questions,
    /// Sorted by lower bound, overlapping ranges merged.
    merged: OnceCell<Vec<(i128, i128)>>,
}

impl<R: PartialEq> PartialEq for RangeList<R> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<R: Eq> Eq for RangeList<R> {}

impl<R: Bounds> RangeList<R> {
    /// The ranges, in settings order.
    pub fn new(items: Vec<R>) -> Self {
        RangeList {
            items,
            asked: Questions::default(),
            merged: OnceCell::new(),
        }
    }

    /// The ranges in settings order.
    pub fn items(&self) -> &[R] {
        &self.items
    }

    /// Whether there is no range.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether `v` lies in one of the ranges.
    pub fn contains(&self, v: i128) -> bool {
        if self.merged.get().is_none() && self.asked.linear(self.items.len()) {
            return self.items.iter().any(|r| {
                let (lo, hi) = r.bounds();
                lo <= v && v <= hi
            });
        }
        let merged = self.merged.get_or_init(|| merge(&self.items));
        let after = merged.partition_point(|(lo, _)| *lo <= v);
        after
            .checked_sub(1)
            .and_then(|i| merged.get(i))
            .is_some_and(|(_, hi)| v <= *hi)
    }
}

/// The ranges sorted by lower bound, overlapping ones merged.
fn merge<R: Bounds>(items: &[R]) -> Vec<(i128, i128)> {
    let mut sorted: Vec<(i128, i128)> = items.iter().map(Bounds::bounds).collect();
    sorted.sort_unstable();
    let mut merged: Vec<(i128, i128)> = Vec::with_capacity(sorted.len());
    for (lo, hi) in sorted {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every question gets the answer of trying each range, before and after the
        /// ranges are merged.
        #[test]
        fn agrees_with_trying_each_range(
            ranges in proptest::collection::vec((-50i64..50, 0i64..30), 0..40),
            probes in proptest::collection::vec(-60i64..90, 1..30),
        ) {
            let ranges: Vec<(i64, i64)> = ranges.into_iter().map(|(lo, len)| (lo, lo + len)).collect();
            let list = RangeList::new(ranges.clone());
            for round in 0..3 {
                for &p in &probes {
                    let expected = ranges.iter().any(|(lo, hi)| *lo <= p && p <= *hi);
                    prop_assert_eq!(list.contains(i128::from(p)), expected, "round {} probe {}", round, p);
                }
            }
        }
    }

    #[test]
    fn empty_and_extreme_bounds() {
        let empty: RangeList<(i64, i64)> = RangeList::new(Vec::new());
        for _ in 0..20 {
            assert!(!empty.contains(0));
        }
        let wide = RangeList::new(vec![(i64::MIN, i64::MAX)]);
        assert!(wide.contains(i128::from(i64::MIN)) && !wide.contains(i128::from(i64::MAX) + 1));
    }
}
