//! Kubernetes `resource.Quantity` values (`docs/semantics.md#parsers`): parsing, exact comparison and
//! arithmetic, never floating point.
//!
//! Grammar (as in `k8s.io/apimachinery/pkg/api/resource`):
//!
//! ```text
//! quantity ::= [sign] number [suffix]
//! number   ::= digits | digits "." | digits "." digits | "." digits
//! suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei            (binary, 2^10 .. 2^60)
//!            | n | u | m | k | M | G | T | P | E      (decimal, 10^-9 .. 10^18)
//!            | ("e" | "E") [sign] digits              (decimal exponent)
//! ```
//!
//! **Representation and range.** A quantity is held exactly as a signed count of nano units
//! (`10^-9`) in an `i128`: every value with `|v| <= i128::MAX × 10^-9` (about `1.7 × 10^29`,
//! i.e. about `1.4 × 10^11 Ei`) is exact. Larger values are refused with
//! [`QuantityError::Overflow`] (Kubernetes itself caps binary quantities at `2^63 - 1`, far
//! below our range, so we never refuse what the API server stores). Like Kubernetes, a
//! non-zero value finer than one nano unit is rounded **away from zero** to the next nano
//! unit (`1e-12` is `1n`): "if you ask for some resources you get some".
//!
//! ```
//! use kube_values::quantity::Quantity;
//! let gi: Quantity = "1Gi".parse().unwrap();
//! let g: Quantity = "1G".parse().unwrap();
//! assert!(gi > g);
//! assert_eq!("1000m".parse::<Quantity>().unwrap(), "1".parse().unwrap());
//! assert_eq!("0.5".parse::<Quantity>().unwrap(), "500m".parse().unwrap());
//! assert_eq!(gi.to_string(), "1Gi");
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use serde_json::Value;

use policy_decode::error::PolicyError;
use policy_decode::json::At;

pub mod spelling;

/// Nano units per base unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The empty string.
    #[error("empty quantity")]
    Empty,
    /// No digits where the number should be (`"Mi"`, `"."`, `"abc"`).
    #[error("{0:?} is not a quantity: expected a number")]
    NoNumber(String),
    /// Text after the number that is no known suffix (`"1KB"`, `"1.2.3"`, `"1 Gi"`).
    #[error("{input:?} is not a quantity: unknown suffix {suffix:?}")]
    BadSuffix {
        /// The whole input.
        input: String,
        /// The text after the number.
        suffix: String,
    },
    /// Two suffixes one after the other (`"1KiMi"`, `"1e3k"`).
    #[error("{input:?} is not a quantity: two suffixes in {suffix:?}")]
    TwoSuffixes {
        /// The whole input.
        input: String,
        /// The text after the number.
        suffix: String,
    },
    /// A decimal exponent that is not a 64-bit integer.
    #[error("{0:?} is not a quantity: exponent out of range")]
    BadExponent(String),
    /// The value does not fit the exact representation (see the module docs).
    #[error("{0:?} is out of range (at most about 1.7e29 in magnitude)")]
    Overflow(String),
    /// A JSON value that is neither a string nor a number.
    #[error("expected a quantity (a string or a number), found {0}")]
    NotAQuantity(&'static str),
}

/// The suffix family a quantity was written with; arithmetic keeps the left operand's
/// format and [`Quantity::canonical`] renders in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantityFormat {
    /// Binary suffixes (`Ki`, `Mi`, …).
    BinarySI,
    /// Decimal suffixes (`m`, `k`, `M`, …) or none.
    DecimalSI,
    /// Decimal exponents (`1e3`).
    DecimalExponent,
}

/// An exact Kubernetes quantity.
///
/// Equality, ordering and hashing compare the numeric value only (`1000m == 1`,
/// `1Gi > 1G`); [`Display`](fmt::Display) shows the text as written when the quantity was
/// parsed, or [`Quantity::canonical`] for computed values.
#[derive(Debug, Clone)]
pub struct Quantity {
    nanos: i128,
    format: QuantityFormat,
    written: Option<Box<str>>,
}

impl Quantity {
    /// Parses a quantity string (`"500m"`, `"1.5Gi"`, `"-2e3"`).
    ///
    /// ```
    /// use kube_values::quantity::{Quantity, QuantityError};
    /// assert_eq!(Quantity::parse("1Ki").unwrap().nanos(), 1024 * 1_000_000_000);
    /// assert!(matches!(Quantity::parse("1KB"), Err(QuantityError::BadSuffix { .. })));
    /// ```
    pub fn parse(input: &str) -> Result<Quantity, QuantityError> {
        let (nanos, format) = parse_nanos(input)?;
        Ok(Quantity {
            nanos,
            format,
            written: Some(input.into()),
        })
    }

    /// Reads a quantity from JSON: a string is parsed, a number is read from its decimal
    /// text (as Kubernetes does), anything else is [`QuantityError::NotAQuantity`].
    pub fn from_json(value: &Value) -> Result<Quantity, QuantityError> {
        match value {
            Value::String(s) => Quantity::parse(s),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            Value::Null => Err(QuantityError::NotAQuantity("null")),
            Value::Bool(_) => Err(QuantityError::NotAQuantity("a boolean")),
            Value::Array(_) => Err(QuantityError::NotAQuantity("a list")),
            Value::Object(_) => Err(QuantityError::NotAQuantity("an object")),
        }
    }

    /// Reads the quantity at a path of the admitted object; an unparseable value is a
    /// [`PolicyError::Malformed`] naming that path.
    pub fn from_at(at: &At<'_>) -> Result<Quantity, PolicyError> {
        Quantity::from_json(at.value).map_err(|e| PolicyError::malformed(&at.path, e.to_string()))
    }

    /// The quantity of `nanos` nano units (`10^-9`), in decimal format.
    pub fn from_nanos(nanos: i128) -> Quantity {
        Quantity {
            nanos,
            format: QuantityFormat::DecimalSI,
            written: None,
        }
    }

    /// The integer quantity `n`, in decimal format.
    pub fn from_int(n: i64) -> Quantity {
        Quantity::from_nanos(i128::from(n) * NANOS_PER_UNIT)
    }

    /// Zero.
    pub fn zero() -> Quantity {
        Quantity::from_nanos(0)
    }

    /// The exact value as a count of nano units.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The suffix family the quantity was written with.
    pub fn format(&self) -> QuantityFormat {
        self.format
    }

    /// The text as written, for parsed quantities.
    pub fn as_written(&self) -> Option<&str> {
        self.written.as_deref()
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// `self + other`, or `None` out of range. The result keeps `self`'s format.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        Some(self.computed(self.nanos.checked_add(other.nanos)?))
    }

    /// `self - other`, or `None` out of range. The result keeps `self`'s format.
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        Some(self.computed(self.nanos.checked_sub(other.nanos)?))
    }

    /// `self × k`, or `None` out of range. The result keeps `self`'s format.
    ///
    /// ```
    /// use kube_values::quantity::Quantity;
    /// let req = Quantity::parse("256Mi").unwrap();
    /// assert_eq!(req.checked_mul_int(4).unwrap(), Quantity::parse("1Gi").unwrap());
    /// ```
    pub fn checked_mul_int(&self, k: i64) -> Option<Quantity> {
        Some(self.computed(self.nanos.checked_mul(i128::from(k))?))
    }

    /// Compares the ratio `self / denominator` with the dimensionless `ratio`, exactly
    /// (256-bit products, no rounding). `None` when the denominator is zero.
    ///
    /// This is the check "limit / request ≤ maxLimitRequestRatio":
    ///
    /// ```
    /// use kube_values::quantity::Quantity;
    /// use std::cmp::Ordering;
    /// let q = |s: &str| Quantity::parse(s).unwrap();
    /// assert_eq!(q("3Gi").ratio_cmp(&q("2Gi"), &q("1.5")), Some(Ordering::Equal));
    /// assert_eq!(q("1").ratio_cmp(&q("3"), &q("0.333333333")), Some(Ordering::Greater));
    /// assert_eq!(q("1").ratio_cmp(&q("0"), &q("2")), None);
    /// ```
    pub fn ratio_cmp(&self, denominator: &Quantity, ratio: &Quantity) -> Option<Ordering> {
        // self/den - ratio/1e9 has the sign of (self*1e9 - ratio*den) * sign(den).
        let den = denominator.nanos;
        if den == 0 {
            return None;
        }
        let lhs = Wide::mul(self.nanos, NANOS_PER_UNIT);
        let rhs = Wide::mul(ratio.nanos, den);
        let ord = lhs.cmp(&rhs);
        Some(if den < 0 { ord.reverse() } else { ord })
    }

    /// The value rendered canonically in its format: the largest suffix that keeps an
    /// integer mantissa (`1536Mi`, `1500m`, `2k`, `3e3`; binary values that are not whole
    /// bytes fall back to decimal).
    ///
    /// ```
    /// use kube_values::quantity::Quantity;
    /// let q = |s: &str| Quantity::parse(s).unwrap();
    /// assert_eq!(q("1.5Gi").canonical(), "1536Mi");
    /// assert_eq!(q("0.5").canonical(), "500m");
    /// assert_eq!(q("2000").canonical(), "2k");
    /// assert_eq!(q("3000e0").canonical(), "3e3");
    /// ```
    pub fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".to_owned();
        }
        if self.format == QuantityFormat::BinarySI && self.nanos % NANOS_PER_UNIT == 0 {
            let units = self.nanos / NANOS_PER_UNIT;
            for (i, suffix) in BINARY_SUFFIXES.iter().enumerate().rev() {
                let div = 1i128 << (10 * (i + 1));
                if units % div == 0 {
                    return format!("{}{suffix}", units / div);
                }
            }
            return units.to_string();
        }
        // Decimal: exponents 18, 15, …, -9 (relative to base units).
        let mut exp: i32 = 18;
        while exp > -9 {
            let div = pow10((exp + 9) as u32);
            if div.is_some_and(|d| self.nanos % d == 0) {
                break;
            }
            exp -= 3;
        }
        let mantissa = pow10((exp + 9) as u32).map_or(self.nanos, |d| self.nanos / d);
        match self.format {
            QuantityFormat::DecimalExponent if exp != 0 => format!("{mantissa}e{exp}"),
            QuantityFormat::DecimalExponent => mantissa.to_string(),
            _ => format!("{mantissa}{}", decimal_suffix(exp)),
        }
    }

    fn computed(&self, nanos: i128) -> Quantity {
        Quantity {
            nanos,
            format: self.format,
            written: None,
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.written {
            Some(w) => f.write_str(w),
            None => f.write_str(&self.canonical()),
        }
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    /// Accepts a string or a JSON number (settings such as `maxRatio: 1.5`).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct QuantityVisitor;

        impl Visitor<'_> for QuantityVisitor {
            type Value = Quantity;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity (a string such as \"500m\" or a number)")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v).map_err(E::custom)
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
                if !v.is_finite() {
                    return Err(E::custom("a quantity must be finite"));
                }
                // Rust prints the shortest decimal that reads back as `v`, without exponent.
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }
        }

        deserializer.deserialize_any(QuantityVisitor)
    }
}

const BINARY_SUFFIXES: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

fn decimal_suffix(exp: i32) -> &'static str {
    match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

fn pow10(e: u32) -> Option<i128> {
    10i128.checked_pow(e)
}

/// A parsed suffix: a power of ten and a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Suffix {
    exp10: i64,
    exp2: u32,
    format: QuantityFormat,
}

enum SuffixParse {
    Ok(Suffix),
    BadExponent,
    Unknown,
}

fn fixed_suffix(s: &str) -> Option<Suffix> {
    let dec = |exp10| {
        Some(Suffix {
            exp10,
            exp2: 0,
            format: QuantityFormat::DecimalSI,
        })
    };
    let bin = |exp2| {
        Some(Suffix {
            exp10: 0,
            exp2,
            format: QuantityFormat::BinarySI,
        })
    };
    match s {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => None,
    }
}

fn parse_suffix(s: &str) -> SuffixParse {
    if let Some(sfx) = fixed_suffix(s) {
        return SuffixParse::Ok(sfx);
    }
    let Some(rest) = s.strip_prefix(['e', 'E']) else {
        return SuffixParse::Unknown;
    };
    let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return SuffixParse::Unknown;
    }
    match rest.parse::<i64>() {
        Ok(exp10) => SuffixParse::Ok(Suffix {
            exp10,
            exp2: 0,
            format: QuantityFormat::DecimalExponent,
        }),
        Err(_) => SuffixParse::BadExponent,
    }
}

/// Whether `s` is two valid suffixes written one after the other.
fn is_two_suffixes(s: &str) -> bool {
    (1..s.len()).any(|i| {
        s.is_char_boundary(i)
            && fixed_suffix(&s[..i]).is_some()
            && matches!(parse_suffix(&s[i..]), SuffixParse::Ok(_) | SuffixParse::BadExponent)
    }) || (1..s.len()).any(|i| {
        // an exponent followed by a suffix: "e3k"
        s.is_char_boundary(i)
            && matches!(parse_suffix(&s[..i]), SuffixParse::Ok(x) if x.format == QuantityFormat::DecimalExponent)
            && fixed_suffix(&s[i..]).is_some_and(|x| x.exp10 != 0 || x.exp2 != 0)
    })
}

fn parse_nanos(input: &str) -> Result<(i128, QuantityFormat), QuantityError> {
    // digits and one plain suffix (`4Gi`, `500m`, `2`): read without the digit-vector
    // arithmetic below, which costs a settings list of thousands of quantities dearly
    if let Some((nanos, _, binary)) = spelling::nanos(input) {
        let format = match binary {
            true => QuantityFormat::BinarySI,
            false => QuantityFormat::DecimalSI,
        };
        return Ok((nanos, format));
    }
    parse_general(input)
}

/// Any quantity spelling, with exact digit arithmetic.
fn parse_general(input: &str) -> Result<(i128, QuantityFormat), QuantityError> {
    if input.is_empty() {
        return Err(QuantityError::Empty);
    }
    let bytes = input.as_bytes();
    let mut pos = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            pos += 1;
            true
        }
        Some(b'+') => {
            pos += 1;
            false
        }
        _ => false,
    };
    let int_start = pos;
    let digit_at = |p: usize| bytes.get(p).is_some_and(u8::is_ascii_digit);
    while digit_at(pos) {
        pos += 1;
    }
    let int_digits = &input[int_start..pos];
    let mut frac_digits = "";
    if bytes.get(pos) == Some(&b'.') {
        pos += 1;
        let frac_start = pos;
        while digit_at(pos) {
            pos += 1;
        }
        frac_digits = &input[frac_start..pos];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(QuantityError::NoNumber(input.to_owned()));
    }
    let suffix_text = &input[pos..];
    let suffix = match parse_suffix(suffix_text) {
        SuffixParse::Ok(s) => s,
        SuffixParse::BadExponent => return Err(QuantityError::BadExponent(input.to_owned())),
        SuffixParse::Unknown if is_two_suffixes(suffix_text) => {
            return Err(QuantityError::TwoSuffixes {
                input: input.to_owned(),
                suffix: suffix_text.to_owned(),
            });
        }
        SuffixParse::Unknown => {
            return Err(QuantityError::BadSuffix {
                input: input.to_owned(),
                suffix: suffix_text.to_owned(),
            });
        }
    };

    // Significant digits: integer and fraction digits without leading zeros.
    let all_digits = int_digits.bytes().chain(frac_digits.bytes());
    let mut digits: Vec<u8> = all_digits
        .skip_while(|&b| b == b'0')
        .map(|b| b - b'0')
        .collect();
    if digits.is_empty() {
        return Ok((0, suffix.format));
    }
    // value = digits × 2^exp2 × 10^(exp10 - frac_len) base units = … × 10^(… + 9) nanos.
    mul_pow2(&mut digits, suffix.exp2);
    let exp10 = i128::from(suffix.exp10) - frac_digits.len() as i128 + 9;
    let magnitude =
        scale_to_int(&digits, exp10).ok_or_else(|| QuantityError::Overflow(input.to_owned()))?;
    Ok((if negative { -magnitude } else { magnitude }, suffix.format))
}

/// Multiplies a big-endian decimal digit vector by `2^exp2` in place.
fn mul_pow2(digits: &mut Vec<u8>, mut exp2: u32) {
    while exp2 > 0 {
        let step = exp2.min(30);
        exp2 -= step;
        let m = 1u64 << step;
        let mut carry = 0u64;
        for d in digits.iter_mut().rev() {
            let x = u64::from(*d) * m + carry;
            *d = (x % 10) as u8;
            carry = x / 10;
        }
        let mut head = Vec::new();
        while carry > 0 {
            head.push((carry % 10) as u8);
            carry /= 10;
        }
        head.reverse();
        digits.splice(0..0, head);
    }
}

/// `ceil(digits × 10^exp10)` as an `i128` (digits: no leading zero, not all zero).
fn scale_to_int(digits: &[u8], exp10: i128) -> Option<i128> {
    let to_int = |ds: &[u8]| -> Option<i128> {
        ds.iter().try_fold(0i128, |acc, &d| {
            acc.checked_mul(10)?.checked_add(i128::from(d))
        })
    };
    if exp10 >= 0 {
        // The leading digit is non-zero, so the value is at least 10^(len - 1 + exp10).
        if digits.len() as i128 + exp10 > 39 {
            return None;
        }
        let e = u32::try_from(exp10).ok()?;
        to_int(digits)?.checked_mul(pow10(e)?)
    } else {
        let drop = usize::try_from(-exp10).unwrap_or(usize::MAX);
        if drop >= digits.len() {
            return Some(1); // non-zero and below one nano unit: round up
        }
        let (keep, rest) = digits.split_at(digits.len() - drop);
        let int = to_int(keep)?;
        if rest.iter().any(|&d| d != 0) {
            int.checked_add(1)
        } else {
            Some(int)
        }
    }
}

/// A signed 256-bit product of two `i128`, for exact ratio comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wide {
    negative: bool,
    hi: u128,
    lo: u128,
}

impl Wide {
    fn mul(a: i128, b: i128) -> Wide {
        let (hi, lo) = mul_u128(a.unsigned_abs(), b.unsigned_abs());
        let zero = hi == 0 && lo == 0;
        Wide {
            negative: !zero && ((a < 0) != (b < 0)),
            hi,
            lo,
        }
    }
}

impl PartialOrd for Wide {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Wide {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => (self.hi, self.lo).cmp(&(other.hi, other.lo)),
            (true, true) => (other.hi, other.lo).cmp(&(self.hi, self.lo)),
        }
    }
}

/// Full 256-bit product of two `u128` as `(high, low)`.
fn mul_u128(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & MASK);
    let (b1, b0) = (b >> 64, b & MASK);
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 64) + (p01 & MASK) + (p10 & MASK);
    let lo = (p00 & MASK) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;
    use serde_json::json;

    const N: i128 = NANOS_PER_UNIT;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[rstest]
    #[case("0", 0)]
    #[case("1", N)]
    #[case("+1", N)]
    #[case("-1", -N)]
    #[case("1.", N)]
    #[case(".5", N / 2)]
    #[case("0.5", N / 2)]
    #[case("-0", 0)]
    #[case("0Mi", 0)]
    #[case("000012", 12 * N)]
    #[case("1n", 1)]
    #[case("1u", 1_000)]
    #[case("1m", 1_000_000)]
    #[case("500m", N / 2)]
    #[case("1k", 1_000 * N)]
    #[case("1M", 1_000_000 * N)]
    #[case("1G", 1_000_000_000 * N)]
    #[case("1T", 1_000_000_000_000 * N)]
    #[case("1P", 1_000_000_000_000_000 * N)]
    #[case("1E", 1_000_000_000_000_000_000 * N)]
    #[case("1Ki", 1024 * N)]
    #[case("1Mi", (1 << 20) * N)]
    #[case("1Gi", (1 << 30) * N)]
    #[case("1Ti", (1 << 40) * N)]
    #[case("1Pi", (1 << 50) * N)]
    #[case("1Ei", (1 << 60) * N)]
    #[case("1.5Gi", 3 * (1 << 29) * N)]
    #[case("0.5Ki", 512 * N)]
    #[case("1e3", 1_000 * N)]
    #[case("1E3", 1_000 * N)]
    #[case("1e+3", 1_000 * N)]
    #[case("1e-3", 1_000_000)]
    #[case("1.5e0", 3 * N / 2)]
    #[case("1e-9", 1)]
    #[case("1e-12", 1)]
    #[case("-1e-12", -1)]
    #[case("0.0000000001", 1)]
    #[case("1.0000000001", N + 1)]
    #[case("0.0000000001Ki", 103)]
    #[case("0e999999999", 0)]
    #[case("1e-999999999", 1)]
    #[case("1.000000000000000000000000000000000000000000000000000", N)]
    #[case("100000000000000000000000000000000000000000000000e-40", 10_000_000 * N)]
    #[case("147000Ei", 147_000 * (1 << 60) * N)]
    #[case("1e29", 100_000_000_000_000_000_000_000_000_000 * N)]
    fn parses_exact_values(#[case] input: &str, #[case] nanos: i128) {
        assert_eq!(q(input).nanos(), nanos, "{input}");
    }

    #[rstest]
    #[case("", QuantityError::Empty)]
    #[case("Mi", QuantityError::NoNumber("Mi".into()))]
    #[case(".", QuantityError::NoNumber(".".into()))]
    #[case("-", QuantityError::NoNumber("-".into()))]
    #[case("abc", QuantityError::NoNumber("abc".into()))]
    #[case(" 1", QuantityError::NoNumber(" 1".into()))]
    #[case("1e99999999999999999999", QuantityError::BadExponent("1e99999999999999999999".into()))]
    #[case("1e40", QuantityError::Overflow("1e40".into()))]
    #[case("200000000000Ei", QuantityError::Overflow("200000000000Ei".into()))]
    #[case("2e29", QuantityError::Overflow("2e29".into()))]
    #[case("--1", QuantityError::NoNumber("--1".into()))]
    #[case("999999999999999999999999999999999999999999", QuantityError::Overflow("999999999999999999999999999999999999999999".into()))]
    fn refuses(#[case] input: &str, #[case] err: QuantityError) {
        assert_eq!(Quantity::parse(input).unwrap_err(), err);
    }

    #[rstest]
    #[case("1KB", "KB")]
    #[case("1K", "K")]
    #[case("1ki", "ki")]
    #[case("1 Gi", " Gi")]
    #[case("1Gi ", "Gi ")]
    #[case("1.2.3", ".3")]
    #[case("1e", "e")]
    #[case("1e+", "e+")]
    #[case("1e3.5", "e3.5")]
    #[case("1-2", "-2")]
    #[case("1é", "é")]
    fn refuses_bad_suffixes(#[case] input: &str, #[case] suffix: &str) {
        match Quantity::parse(input) {
            Err(QuantityError::BadSuffix { suffix: s, .. }) => assert_eq!(s, suffix),
            other => panic!("{input}: {other:?}"),
        }
    }

    #[rstest]
    #[case("1KiMi")]
    #[case("1mm")]
    #[case("1kM")]
    #[case("1e3k")]
    #[case("1ke3")]
    #[case("1Gie-3")]
    fn refuses_two_suffixes(#[case] input: &str) {
        assert!(
            matches!(
                Quantity::parse(input),
                Err(QuantityError::TwoSuffixes { .. })
            ),
            "{input}: {:?}",
            Quantity::parse(input)
        );
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            Quantity::parse("1KB").unwrap_err().to_string(),
            r#""1KB" is not a quantity: unknown suffix "KB""#
        );
        assert_eq!(
            Quantity::parse("1KiMi").unwrap_err().to_string(),
            r#""1KiMi" is not a quantity: two suffixes in "KiMi""#
        );
        assert_eq!(
            Quantity::parse("").unwrap_err().to_string(),
            "empty quantity"
        );
    }

    #[rstest]
    #[case("1Gi", "1G", Ordering::Greater)]
    #[case("1000m", "1", Ordering::Equal)]
    #[case("0.5", "500m", Ordering::Equal)]
    #[case("1Ki", "1k", Ordering::Greater)]
    #[case("1024", "1Ki", Ordering::Equal)]
    #[case("1e3", "1k", Ordering::Equal)]
    #[case("-1", "1m", Ordering::Less)]
    #[case("100m", "0.1", Ordering::Equal)]
    #[case("1n", "0", Ordering::Greater)]
    fn compares(#[case] a: &str, #[case] b: &str, #[case] ord: Ordering) {
        assert_eq!(q(a).cmp(&q(b)), ord);
        assert_eq!(q(a) == q(b), ord == Ordering::Equal);
    }

    #[test]
    fn json_numbers_and_strings() {
        assert_eq!(Quantity::from_json(&json!("2Gi")).unwrap(), q("2Gi"));
        assert_eq!(Quantity::from_json(&json!(2)).unwrap(), q("2"));
        assert_eq!(Quantity::from_json(&json!(-3)).unwrap(), q("-3"));
        assert_eq!(Quantity::from_json(&json!(1.5)).unwrap(), q("1500m"));
        assert_eq!(Quantity::from_json(&json!(0.1)).unwrap(), q("100m"));
        assert_eq!(Quantity::from_json(&json!(1e21)).unwrap(), q("1e21"));
        assert_eq!(
            Quantity::from_json(&json!(true)).unwrap_err().to_string(),
            "expected a quantity (a string or a number), found a boolean"
        );
        assert!(Quantity::from_json(&json!(null)).is_err());
        assert!(Quantity::from_json(&json!([1])).is_err());
    }

    #[test]
    fn from_at_names_the_path() {
        use policy_decode::path::FieldPath;
        let v = json!({"cpu": "lots"});
        let at = At::new(&v["cpu"], FieldPath::root("limits").key("cpu"));
        let err = Quantity::from_at(&at).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"limits["cpu"]: "lots" is not a quantity: expected a number"#
        );
    }

    #[test]
    fn deserializes_from_settings() {
        #[derive(serde::Deserialize)]
        struct S {
            a: Quantity,
            b: Quantity,
            c: Quantity,
        }
        let s: S = serde_json::from_value(json!({"a": "1Gi", "b": 1.5, "c": 3})).unwrap();
        assert_eq!(s.a, q("1Gi"));
        assert_eq!(s.b, q("1.5"));
        assert_eq!(s.c, q("3"));
        let err = serde_json::from_value::<S>(json!({"a": "x", "b": 1, "c": 1}))
            .err()
            .unwrap();
        assert!(err.to_string().contains("\"x\" is not a quantity"), "{err}");
        let err = serde_json::from_value::<S>(json!({"a": true, "b": 1, "c": 1}))
            .err()
            .unwrap();
        assert!(err.to_string().contains("expected a quantity"), "{err}");
        assert_eq!(serde_json::to_value(q("1.5Gi")).unwrap(), json!("1.5Gi"));
    }

    #[test]
    fn arithmetic() {
        let sum = q("1Gi").checked_add(&q("512Mi")).unwrap();
        assert_eq!(sum, q("1.5Gi"));
        assert_eq!(sum.to_string(), "1536Mi");
        assert_eq!(q("1").checked_sub(&q("250m")).unwrap().to_string(), "750m");
        assert_eq!(q("100m").checked_mul_int(10).unwrap(), q("1"));
        assert!(
            Quantity::from_nanos(i128::MAX)
                .checked_add(&q("1n"))
                .is_none()
        );
        assert!(Quantity::from_nanos(i128::MAX).checked_mul_int(2).is_none());
        assert!(q("0").is_zero());
        assert!(q("-0.0m").is_zero());
        assert!(q("-1m").is_negative());
        assert_eq!(Quantity::from_int(3), q("3"));
        assert_eq!(Quantity::zero(), q("0Ki"));
    }

    #[rstest]
    #[case("1.5Gi", "1536Mi")]
    #[case("1Gi", "1Gi")]
    #[case("1025Ki", "1025Ki")]
    #[case("0.5Ki", "512")]
    #[case("0.5", "500m")]
    #[case("1000m", "1")]
    #[case("2000", "2k")]
    #[case("1.5k", "1500")]
    #[case("12345678n", "12345678n")]
    #[case("1e3", "1e3")]
    #[case("1.5e3", "1500")]
    #[case("0.001e3", "1")]
    #[case("1e-3", "1e-3")]
    #[case("-2M", "-2M")]
    #[case("0Gi", "0")]
    #[case("1E", "1E")]
    fn canonical_forms(#[case] input: &str, #[case] canonical: &str) {
        assert_eq!(q(input).canonical(), canonical);
        assert_eq!(q(canonical), q(input));
    }

    #[test]
    fn display_keeps_the_written_text() {
        assert_eq!(q("2048Mi").to_string(), "2048Mi");
        assert_eq!(q("2048Mi").as_written(), Some("2048Mi"));
        assert_eq!(q("2048Mi").canonical(), "2Gi");
        assert_eq!(Quantity::from_nanos(5).to_string(), "5n");
    }

    #[rstest]
    #[case("4", "2", "2", Ordering::Equal)]
    #[case("4", "2", "1.5", Ordering::Greater)]
    #[case("4", "2", "3", Ordering::Less)]
    #[case("3Gi", "2Gi", "1.5", Ordering::Equal)]
    #[case("1", "3", "0.333333333", Ordering::Greater)]
    #[case("1", "3", "0.333333334", Ordering::Less)]
    #[case("2Gi", "1G", "2", Ordering::Greater)]
    #[case("-4", "2", "-2", Ordering::Equal)]
    #[case("4", "-2", "-1", Ordering::Less)]
    #[case("0", "5", "0", Ordering::Equal)]
    #[case("147000Ei", "1n", "147000Ei", Ordering::Greater)]
    fn ratios(#[case] a: &str, #[case] b: &str, #[case] r: &str, #[case] ord: Ordering) {
        assert_eq!(q(a).ratio_cmp(&q(b), &q(r)), Some(ord), "{a}/{b} vs {r}");
    }

    #[test]
    fn wide_multiplication() {
        assert_eq!(mul_u128(u128::MAX, u128::MAX), (u128::MAX - 1, 1));
        assert_eq!(mul_u128(1 << 64, 1 << 64), (1, 0));
        assert_eq!(mul_u128(3, 5), (0, 15));
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let _ = Quantity::parse(&s);
        }

        /// The plain-spelling fast path reads exactly what the general parser reads.
        #[test]
        fn fast_path_agrees_with_the_general_parser(
            s in "[-+]?[0-9]{0,22}(\\.[0-9]{0,3})?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|e3)?"
        ) {
            let fast = parse_nanos(&s).map_err(|e| e.to_string());
            let general = parse_general(&s).map_err(|e| e.to_string());
            prop_assert_eq!(fast, general);
        }

        #[test]
        fn parse_never_panics_on_quantity_like_text(s in "[-+]?[0-9]{0,45}(\\.[0-9]{0,45})?([eE][-+]?[0-9]{0,22}|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?[a-zA-Z]{0,3}") {
            let _ = Quantity::parse(&s);
        }

        #[test]
        fn ordering_matches_integers(a in any::<i64>(), b in any::<i64>()) {
            let (qa, qb) = (q(&a.to_string()), q(&b.to_string()));
            prop_assert_eq!(qa.cmp(&qb), a.cmp(&b));
            prop_assert_eq!(qa.nanos(), i128::from(a) * N);
        }

        #[test]
        fn suffixes_scale_exactly(a in -1_000_000i64..1_000_000, i in 0usize..6) {
            let bin = q(&format!("{a}{}", BINARY_SUFFIXES[i]));
            prop_assert_eq!(bin.nanos(), i128::from(a) * (1i128 << (10 * (i + 1))) * N);
            let milli = q(&format!("{a}m"));
            prop_assert_eq!(milli.nanos(), i128::from(a) * 1_000_000);
            let exp = q(&format!("{a}e-3"));
            prop_assert_eq!(exp, milli);
        }

        #[test]
        fn fractions_match_milli(int in 0u32..100_000, frac in 0u32..1000) {
            let dec = q(&format!("{int}.{frac:03}"));
            let milli = q(&format!("{}m", u64::from(int) * 1000 + u64::from(frac)));
            prop_assert_eq!(dec, milli);
        }

        #[test]
        fn addition_of_non_negatives_grows(a in 0i128..(i128::MAX / 2), b in 0i128..(i128::MAX / 2)) {
            let (qa, qb) = (Quantity::from_nanos(a), Quantity::from_nanos(b));
            let sum = qa.checked_add(&qb).unwrap();
            prop_assert!(sum >= qa);
            prop_assert!(sum >= qb);
            prop_assert_eq!(sum.checked_sub(&qb).unwrap(), qa);
        }

        #[test]
        fn canonical_round_trips(nanos in -i128::MAX..=i128::MAX, f in 0usize..3) {
            let format = [QuantityFormat::BinarySI, QuantityFormat::DecimalSI, QuantityFormat::DecimalExponent][f];
            let x = Quantity { nanos, format, written: None };
            prop_assert_eq!(q(&x.canonical()).nanos(), nanos);
        }

        #[test]
        fn ratio_matches_multiplication(a in -1_000_000i64..1_000_000, b in 1i64..1000, k in -1000i64..1000) {
            // a/b vs k  <=>  a vs k*b (b > 0)
            let ord = Quantity::from_int(a).ratio_cmp(&Quantity::from_int(b), &Quantity::from_int(k));
            prop_assert_eq!(ord, Some(a.cmp(&(k * b))));
        }

        #[test]
        fn wide_product_matches_checked(a in any::<i64>(), b in any::<i64>()) {
            let w = Wide::mul(i128::from(a), i128::from(b));
            let p = i128::from(a) * i128::from(b);
            prop_assert_eq!(w.negative, p < 0);
            prop_assert_eq!((w.hi, w.lo), (0, p.unsigned_abs()));
        }
    }
}
