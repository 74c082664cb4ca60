//! Deadlines in seconds: the range the API server accepts, and the override annotation's
//! value, a positive whole number written as plain ASCII decimal digits.

/// The largest `activeDeadlineSeconds` the API server accepts: its validation allows 1 to
/// 2147483647 (`math.MaxInt32`, about 68 years) although the field is an int64.
pub const API_MAX_SECONDS: i64 = 2_147_483_647;

/// Reads `text` as a number of seconds: ASCII digits only (no sign, no spaces, no unit, no
/// exponent, no fraction) of a value of at least 1. `None` otherwise. Leading zeros are
/// decimal (`"0060"` is 60), as Go's `strconv.Atoi` reads them. Digits beyond int64 read as
/// `i64::MAX`: above every cap, so refused as too large, never wrapped.
///
/// ```
/// use run_once_deadline_policy::seconds::parse_seconds;
/// assert_eq!(parse_seconds("3600"), Some(3600));
/// assert_eq!(parse_seconds("60s"), None);
/// assert_eq!(parse_seconds("+60"), None);
/// assert_eq!(parse_seconds("0"), None);
/// ```
pub fn parse_seconds(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match text.parse::<i64>() {
        Ok(v) => Some(v).filter(|v| *v >= 1),
        // Only digits remain, so the one failure left is an overflow of int64.
        Err(_) => Some(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("1", Some(1))]
    #[case("3600", Some(3600))]
    #[case("0060", Some(60))]
    #[case("9223372036854775807", Some(i64::MAX))]
    #[case("9223372036854775808", Some(i64::MAX))]
    #[case("99999999999999999999", Some(i64::MAX))]
    #[case("0", None)]
    #[case("000", None)]
    #[case("", None)]
    #[case("+60", None)]
    #[case("-5", None)]
    #[case(" 60", None)]
    #[case("60 ", None)]
    #[case("60s", None)]
    #[case("1e3", None)]
    #[case("1.5", None)]
    #[case("٣", None)]
    #[case("６０", None)]
    fn seconds(#[case] text: &str, #[case] expected: Option<i64>) {
        assert_eq!(parse_seconds(text), expected);
    }
}
