//! How rejection messages show settings lists ("what is allowed"; README "What every policy
//! guarantees": cost).
//!
//! A message names what is allowed in settings order, but a tenant reading a rejection
//! needs the first few entries, not all 10,000 of an operator's list: lists longer than
//! [`LISTED`] show their first [`LISTED`] entries and count the rest. This also keeps the
//! cost of a rejection independent of the length of the settings.

use std::fmt::{Display, Write};

/// The entries of a settings list a message shows before counting the rest.
pub const LISTED: usize = 20;

/// The entries joined by `", "`, at most [`LISTED`] of them, then `... (N more)`.
///
/// ```
/// use policy_decode::message::join;
/// assert_eq!(join(["a", "b"].iter()), "a, b");
/// let many: Vec<String> = (0..25).map(|i| i.to_string()).collect();
/// assert!(join(many.iter()).ends_with("18, 19, ... (5 more)"));
/// ```
pub fn join<T: Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    let total = items.len();
    join_counted(items, total)
}

/// [`join`] of `total` entries from any iterator (two lists chained, say).
pub fn join_counted<T: Display>(items: impl Iterator<Item = T>, total: usize) -> String {
    let mut out = String::new();
    for (i, item) in items.take(LISTED).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        // Writing into a String cannot fail.
        let _ = write!(out, "{item}");
    }
    if total > LISTED {
        let _ = write!(out, ", ... ({} more)", total - LISTED);
    }
    out
}

/// [`join`] between brackets: `[a, b]`.
pub fn bracketed<T: Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    format!("[{}]", join(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lists_are_shown_whole() {
        assert_eq!(join(std::iter::empty::<&str>()), "");
        assert_eq!(join(["a"].iter()), "a");
        let twenty: Vec<usize> = (0..LISTED).collect();
        assert_eq!(join(twenty.iter()).matches(", ").count(), LISTED - 1);
        assert!(!join(twenty.iter()).contains("more"));
        assert_eq!(bracketed(["x", "y"].iter()), "[x, y]");
    }

    #[test]
    fn long_lists_count_what_is_not_shown() {
        let names: Vec<String> = (0..10_000).map(|i| format!("class-{i}")).collect();
        let shown = join(names.iter());
        assert!(shown.starts_with("class-0, class-1, "), "{shown}");
        assert!(shown.ends_with("class-19, ... (9980 more)"), "{shown}");
        assert!(!shown.contains("class-20"));
    }
}
