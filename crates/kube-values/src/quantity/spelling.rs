//! Quantities spelled canonically (`500m`, `2`, `10Gi`, `100Mi`), read without allocating:
//! a 1 MiB Pod holds thousands of them (`docs/semantics.md#cost`). Any other spelling is left
//! to [`Quantity::parse`].

use std::cell::OnceCell;

use super::Quantity;

/// The nano units of `text` and whether its suffix is binary, when `text` is digits without
/// a leading zero and one suffix, and is its own canonical form ([`Quantity::canonical`]):
/// the mantissa is not a multiple of 1000 (decimal) or 1024 (binary). `None` otherwise.
pub fn canonical_nanos(text: &str) -> Option<(i128, bool)> {
    if text.starts_with('0') {
        return None;
    }
    let (nanos, n, binary) = nanos(text)?;
    let canonical = match binary {
        true => n % 1024 != 0,
        false => n % 1000 != 0,
    };
    canonical.then_some((nanos, binary))
}

/// The nano units of `text` when it is digits and one suffix (any such spelling), with the
/// mantissa and whether the suffix is binary; `None` otherwise.
pub fn nanos(text: &str) -> Option<(i128, i128, bool)> {
    let digits_end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    if digits_end == 0 || digits_end > 18 {
        return None;
    }
    let (digits, suffix) = text.split_at(digits_end);
    let n: i128 = digits.parse().ok()?;
    let unit: i128 = 1_000_000_000;
    let (scale, binary): (i128, bool) = match suffix {
        "" => (unit, false),
        "m" => (unit / 1_000, false),
        "k" => (unit * 1_000, false),
        "M" => (unit * 1_000_000, false),
        "G" => (unit * 1_000_000_000, false),
        "T" => (unit * 1_000_000_000_000, false),
        "Ki" => (unit << 10, true),
        "Mi" => (unit << 20, true),
        "Gi" => (unit << 30, true),
        "Ti" => (unit << 40, true),
        "Pi" => (unit << 50, true),
        _ => return None,
    };
    Some((n.checked_mul(scale)?, n, binary))
}

thread_local! {
    /// Zero in each suffix family: a sum keeps its left operand's family.
    static ZEROS: OnceCell<(Quantity, Quantity)> = const { OnceCell::new() };
}

/// The quantity spelled `text`, built without allocating when [`canonical_nanos`] reads it
/// (it then displays as `text`); `None` otherwise.
pub fn quantity(text: &str) -> Option<Quantity> {
    let (nanos, binary) = canonical_nanos(text)?;
    ZEROS.with(|z| {
        let (decimal, binary_zero) = z.get_or_init(|| {
            let binary = Quantity::parse("0Ki").unwrap_or_else(|_| Quantity::zero());
            (Quantity::zero(), binary)
        });
        let zero = if binary { binary_zero } else { decimal };
        zero.checked_add(&Quantity::from_nanos(nanos))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantity::QuantityFormat;
    use proptest::prelude::*;

    proptest! {
        /// What the fast path reads is exactly what the parser reads, and displays as written.
        #[test]
        fn agrees_with_the_parser(
            digits in "[0-9]{1,20}",
            suffix in prop_oneof![Just(""), Just("m"), Just("k"), Just("M"), Just("G"), Just("T"),
                Just("P"), Just("E"), Just("Ki"), Just("Mi"), Just("Gi"), Just("Ti"), Just("Pi"),
                Just("Ei"), Just("e3"), Just(".5"), Just("u"), Just("n")],
        ) {
            let text = format!("{digits}{suffix}");
            if let Some((n, _, _)) = nanos(&text) {
                prop_assert_eq!(n, Quantity::parse(&text).unwrap().nanos());
            }
            if let Some(q) = quantity(&text) {
                let parsed = Quantity::parse(&text).unwrap();
                prop_assert_eq!(q.nanos(), parsed.nanos());
                prop_assert_eq!(q.to_string(), text.clone());
                prop_assert_eq!(q.format(), parsed.format());
                prop_assert_eq!(parsed.canonical(), text);
            }
        }
    }

    #[test]
    fn reads_canonical_spellings_only() {
        for text in ["500m", "2", "10Gi", "100Mi", "1500m", "999", "3Ki"] {
            assert_eq!(quantity(text).unwrap().to_string(), text, "{text}");
        }
        for text in [
            "1000", "2000m", "1024Mi", "0", "0m", "05", "1.5", "-1", "1e3", "", "1P",
        ] {
            assert!(quantity(text).is_none(), "{text}");
        }
        assert_eq!(quantity("2Gi").unwrap().format(), QuantityFormat::BinarySI);
    }
}
