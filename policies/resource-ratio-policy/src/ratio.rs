//! The memory-per-core arithmetic of README rules 5 and 6: bounds widened by the tolerance
//! (never stricter than configured), the exact comparison, and the message's renderings of
//! memory per core (Mi, rounded up) and of cores (`0.5 cores`, `1 core`).

use std::cmp::Ordering;

use kube_values::quantity::Quantity;

/// Nano units per unit (quantities are held as nanos).
const NANOS: i128 = 1_000_000_000;

/// Bytes in one Mi.
const MI: i128 = 1 << 20;

/// `min × tolerance`, rounded down to the nano unit (a lower bound is never raised by
/// rounding). `tolerance` is in (0, 1], so no intermediate value exceeds `min`.
///
/// ```
/// use kube_values::quantity::Quantity;
/// use resource_ratio_policy::ratio::widen_min;
/// let q = |s: &str| Quantity::parse(s).unwrap();
/// assert_eq!(widen_min(&q("4Gi"), &q("0.95")).nanos(), 4_080_218_931_200_000_000);
/// assert_eq!(widen_min(&q("1n"), &q("0.5")).nanos(), 0);
/// ```
pub fn widen_min(min: &Quantity, tolerance: &Quantity) -> Quantity {
    let (m, t) = (min.nanos(), tolerance.nanos());
    let whole = (m / NANOS).saturating_mul(t);
    let part = (m % NANOS).saturating_mul(t) / NANOS;
    Quantity::from_nanos(whole.saturating_add(part))
}

/// `max ÷ tolerance`, rounded up to the nano unit (an upper bound is never lowered by
/// rounding); saturated at the largest quantity.
///
/// ```
/// use kube_values::quantity::Quantity;
/// use resource_ratio_policy::ratio::widen_max;
/// let q = |s: &str| Quantity::parse(s).unwrap();
/// assert_eq!(widen_max(&q("8"), &q("0.5")), q("16"));
/// assert_eq!(widen_max(&q("1"), &q("0.3")).nanos(), 3_333_333_334);
/// ```
pub fn widen_max(max: &Quantity, tolerance: &Quantity) -> Quantity {
    let (m, t) = (max.nanos(), tolerance.nanos());
    if t <= 0 {
        return Quantity::from_nanos(i128::MAX);
    }
    // m / t = q + r / t; scaled by 10^9: q × 10^9 + ceil(r × 10^9 / t), with r < t ≤ 10^9.
    let (q, r) = (m / t, m % t);
    let scaled = r.saturating_mul(NANOS);
    let part = scaled / t + i128::from(scaled % t != 0);
    Quantity::from_nanos(q.saturating_mul(NANOS).saturating_add(part))
}

/// Where the memory per core `memory ÷ cpu` lies relative to the widened bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Within the bounds (or no bound applies).
    Within,
    /// Below the widened minimum.
    Below,
    /// Above the widened maximum.
    Above,
    /// Memory without any CPU request, while a maximum is set.
    Unbounded,
}

/// README rule 6: judges `memory ÷ cpu` (both non-negative) against the widened bounds. No
/// memory and no CPU is within; memory without CPU is unbounded, a violation only with a
/// maximum.
pub fn judge(
    memory: &Quantity,
    cpu: &Quantity,
    min: Option<&Quantity>,
    max: Option<&Quantity>,
    tolerance: &Quantity,
) -> Outcome {
    if cpu.is_zero() {
        return match (memory.is_zero(), max) {
            (false, Some(_)) => Outcome::Unbounded,
            _ => Outcome::Within,
        };
    }
    if let Some(min) = min
        && memory.ratio_cmp(cpu, &widen_min(min, tolerance)) == Some(Ordering::Less)
    {
        return Outcome::Below;
    }
    if let Some(max) = max
        && memory.ratio_cmp(cpu, &widen_max(max, tolerance)) == Some(Ordering::Greater)
    {
        return Outcome::Above;
    }
    Outcome::Within
}

/// Memory per core in whole Mi, rounded up, rendered with the largest binary suffix that
/// keeps it whole (`256Mi`, `10Gi`). `cpu` must not be zero.
///
/// ```
/// use kube_values::quantity::Quantity;
/// use resource_ratio_policy::ratio::per_core;
/// let q = |s: &str| Quantity::parse(s).unwrap();
/// assert_eq!(per_core(&q("1Gi"), &q("4")), "256Mi");
/// assert_eq!(per_core(&q("10Gi"), &q("1")), "10Gi");
/// assert_eq!(per_core(&q("1G"), &q("3")), "318Mi");
/// assert_eq!(per_core(&q("0"), &q("3")), "0");
/// ```
pub fn per_core(memory: &Quantity, cpu: &Quantity) -> String {
    let (m, c) = (memory.nanos(), cpu.nanos());
    // ceil(m / (c × 2^20)) Mi; a product beyond i128 means less than one Mi per core
    let mi = match c.checked_mul(MI) {
        Some(d) if d > 0 => m / d + i128::from(m % d != 0),
        _ => i128::from(m > 0),
    };
    // a binary quantity, so that whole Gi and Ti show as such
    Quantity::parse(&format!("{mi}Mi")).map_or_else(|_| format!("{mi}Mi"), |q| q.canonical())
}

/// A CPU quantity in cores: `1 core`, `4 cores`, `0.5 cores`, `1.25 cores`.
///
/// ```
/// use kube_values::quantity::Quantity;
/// use resource_ratio_policy::ratio::cores;
/// let q = |s: &str| Quantity::parse(s).unwrap();
/// assert_eq!(cores(&q("1")), "1 core");
/// assert_eq!(cores(&q("1000m")), "1 core");
/// assert_eq!(cores(&q("4")), "4 cores");
/// assert_eq!(cores(&q("500m")), "0.5 cores");
/// assert_eq!(cores(&q("1250m")), "1.25 cores");
/// assert_eq!(cores(&q("1n")), "0.000000001 cores");
/// ```
pub fn cores(cpu: &Quantity) -> String {
    let n = cpu.nanos();
    if n == NANOS {
        return "1 core".to_owned();
    }
    let (whole, fraction) = (n / NANOS, n % NANOS);
    if fraction == 0 {
        return format!("{whole} cores");
    }
    let digits = format!("{fraction:09}");
    format!("{whole}.{} cores", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[rstest]
    // README example 1: 1Gi for 4 cores is 256Mi/core, below 4Gi
    #[case("1Gi", "4", Some("4Gi"), None, "1", Outcome::Below)]
    #[case("4Gi", "1", Some("4Gi"), None, "1", Outcome::Within)]
    #[case("10Gi", "1", Some("3Gi"), Some("8Gi"), "1", Outcome::Above)]
    #[case("8Gi", "1", Some("3Gi"), Some("8Gi"), "1", Outcome::Within)]
    #[case("1Gi", "0", Some("3Gi"), Some("8Gi"), "1", Outcome::Unbounded)]
    #[case("1Gi", "0", Some("3Gi"), None, "1", Outcome::Within)]
    #[case("0", "0", Some("3Gi"), Some("8Gi"), "1", Outcome::Within)]
    #[case("0", "2", Some("3Gi"), None, "1", Outcome::Below)]
    // tolerance 0.95: 4Gi × 0.95 = 4080218931.2 bytes per core
    #[case("40802189312", "10", Some("4Gi"), None, "0.95", Outcome::Within)]
    #[case("40802189311", "10", Some("4Gi"), None, "0.95", Outcome::Below)]
    // 8Gi ÷ 0.5 = 16Gi
    #[case("16Gi", "1", None, Some("8Gi"), "0.5", Outcome::Within)]
    #[case("16385Mi", "1", None, Some("8Gi"), "0.5", Outcome::Above)]
    fn outcomes(
        #[case] memory: &str,
        #[case] cpu: &str,
        #[case] min: Option<&str>,
        #[case] max: Option<&str>,
        #[case] tolerance: &str,
        #[case] outcome: Outcome,
    ) {
        let (min, max) = (min.map(q), max.map(q));
        assert_eq!(
            judge(
                &q(memory),
                &q(cpu),
                min.as_ref(),
                max.as_ref(),
                &q(tolerance)
            ),
            outcome
        );
    }

    #[test]
    fn widening_is_never_stricter_than_the_bound() {
        // 1 × 0.333333333 rounds down; 1 ÷ 0.333333333 rounds up
        let t = q("0.333333333");
        assert_eq!(widen_min(&q("1"), &t).nanos(), 333_333_333);
        assert_eq!(widen_max(&q("1"), &t).nanos(), 3_000_000_004);
        assert_eq!(widen_min(&q("7n"), &q("0.5")).nanos(), 3);
        assert_eq!(widen_max(&q("7n"), &q("0.5")).nanos(), 14);
        // tolerance 1 changes nothing
        assert_eq!(widen_min(&q("4Gi"), &q("1")), q("4Gi"));
        assert_eq!(widen_max(&q("8Gi"), &q("1")), q("8Gi"));
        // the largest quantities saturate instead of overflowing
        let huge = Quantity::from_nanos(i128::MAX);
        assert_eq!(widen_max(&huge, &q("1n")).nanos(), i128::MAX);
        assert!(widen_min(&huge, &q("1")).nanos() > 0);
    }

    #[test]
    fn renderings() {
        assert_eq!(per_core(&q("1Gi"), &q("3")), "342Mi");
        assert_eq!(per_core(&q("1"), &q("1")), "1Mi");
        assert_eq!(per_core(&q("1536Mi"), &q("1")), "1536Mi");
        assert_eq!(per_core(&q("1Ei"), &q("1n")), "1000000000Ei");
        let huge = Quantity::from_nanos(i128::MAX);
        assert!(per_core(&huge, &q("1n")).ends_with("Mi"));
        assert_eq!(per_core(&q("1"), &huge), "1Mi");
        assert_eq!(cores(&q("2.5")), "2.5 cores");
        assert_eq!(cores(&q("0")), "0 cores");
    }
}
