//! Lists written into one string, comma-separated, as the API server and its admission
//! plugins read them from an object or a Namespace: the annotation
//! `service.beta.kubernetes.io/load-balancer-source-ranges` (`ValidateService`) and a
//! PodNodeSelector node selector `key=value[,key=value]`
//! (`labels.ConvertSelectorToLabelsMap`).
//!
//! Kubernetes refuses an empty element in both (`a,,b`, a leading or a trailing comma):
//! an empty source range is not a CIDR, an empty selector element has no `=`. So
//! [`comma_separated`] yields every element, the empty ones included, with its index, and
//! each reader judges an empty element as it judges any other and refuses it naming its
//! index. No reader skips one.
//!
//! ```
//! use kube_values::list::comma_separated;
//! let elements: Vec<(usize, &str)> = comma_separated("10.1.0.0/16,,10.2.0.0/16").collect();
//! assert_eq!(elements, [(0, "10.1.0.0/16"), (1, ""), (2, "10.2.0.0/16")]);
//! ```

/// The elements of the comma-separated list `text`, each with its index (0-based): the
/// value is trimmed, and a value empty after that has no element (Kubernetes accepts an
/// all-blank source-ranges annotation and an empty node selector); otherwise every piece
/// between commas, trimmed, is an element, an empty one (`""`) included. Whitespace is
/// Unicode whitespace, as Go's `strings.TrimSpace` trims it. One pass over `text`.
///
/// ```
/// use kube_values::list::comma_separated;
/// let elements: Vec<(usize, &str)> = comma_separated(" ,10.0.0.0/8 , 10.1.0.0/16,").collect();
/// assert_eq!(elements, [(0, ""), (1, "10.0.0.0/8"), (2, "10.1.0.0/16"), (3, "")]);
/// assert_eq!(comma_separated(" \t ").count(), 0);
/// assert_eq!(comma_separated(",").collect::<Vec<_>>(), [(0, ""), (1, "")]);
/// ```
pub fn comma_separated(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.trim();
    let pieces = (!text.is_empty()).then(|| text.split(','));
    pieces.into_iter().flatten().map(str::trim).enumerate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn elements(text: &str) -> Vec<(usize, &str)> {
        comma_separated(text).collect()
    }

    #[rstest]
    #[case("", &[])]
    #[case("   ", &[])]
    #[case("\u{a0}\n", &[])]
    #[case("a", &[(0, "a")])]
    #[case(" a ", &[(0, "a")])]
    #[case("a,b", &[(0, "a"), (1, "b")])]
    #[case("a, b ,c", &[(0, "a"), (1, "b"), (2, "c")])]
    #[case("a,,b", &[(0, "a"), (1, ""), (2, "b")])]
    #[case("a, ,b", &[(0, "a"), (1, ""), (2, "b")])]
    #[case("a,", &[(0, "a"), (1, "")])]
    #[case("a, ", &[(0, "a"), (1, "")])]
    #[case(",a", &[(0, ""), (1, "a")])]
    #[case(" , a", &[(0, ""), (1, "a")])]
    #[case(",", &[(0, ""), (1, "")])]
    #[case(",,", &[(0, ""), (1, ""), (2, "")])]
    fn empty_elements_are_kept_with_their_index(
        #[case] text: &str,
        #[case] want: &[(usize, &str)],
    ) {
        assert_eq!(elements(text), want);
    }

    proptest! {
        /// As Kubernetes reads a list: `strings.TrimSpace` of the value, nothing when it is
        /// empty, else `strings.Split(value, ",")` with every piece trimmed.
        #[test]
        fn reads_as_kubernetes_does(text in "[ a,\t]{0,12}") {
            let trimmed = text.trim();
            let want: Vec<(usize, &str)> = if trimmed.is_empty() {
                Vec::new()
            } else {
                trimmed.split(',').map(str::trim).enumerate().collect()
            };
            prop_assert_eq!(elements(&text), want);
        }

        /// Every comma of a non-blank value separates two elements.
        #[test]
        fn one_element_more_than_commas(text in "[ a,]{0,12}") {
            let commas = text.matches(',').count();
            let blank = text.trim().is_empty();
            prop_assert_eq!(elements(&text).len(), if blank { 0 } else { commas + 1 });
        }
    }
}
