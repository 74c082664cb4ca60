//! The image pull policy a container runs with: its `imagePullPolicy` when written, else the
//! one the API server defaults from the image when the Pod is created — `Always` for the
//! tag `latest` and for an image with neither tag nor digest, `IfNotPresent` otherwise
//! (<https://kubernetes.io/docs/concepts/containers/images/#imagepullpolicy-defaulting>).
//!
//! Policies judge the effective policy, so that leaving the field out cannot sidestep a
//! rule on it.
//!
//! ```
//! use policy_core::pull_policy::{default_pull_policy, effective_pull_policy};
//! assert_eq!(default_pull_policy("nginx"), Some("Always"));
//! assert_eq!(default_pull_policy("nginx:1.25"), Some("IfNotPresent"));
//! let e = effective_pull_policy(None, Some("nginx:latest")).unwrap();
//! assert_eq!((e.policy, e.defaulted), ("Always", true));
//! let e = effective_pull_policy(Some("Never"), Some("nginx:latest")).unwrap();
//! assert_eq!((e.policy, e.defaulted), ("Never", false));
//! ```

use crate::image::ImageRef;

/// `Always`: the image is pulled at every container start.
pub const ALWAYS: &str = "Always";
/// `IfNotPresent`: the image is pulled only when the node does not have it.
pub const IF_NOT_PRESENT: &str = "IfNotPresent";

/// The pull policy Kubernetes defaults for `image` when `imagePullPolicy` is unset:
/// `Always` when the tag is `latest` or there is neither tag nor digest, else
/// `IfNotPresent`. `None` when the reference does not parse ([`ImageRef::parse`]).
pub fn default_pull_policy(image: &str) -> Option<&'static str> {
    let parsed = ImageRef::parse(image).ok()?;
    Some(default_for(&parsed))
}

/// The pull policy Kubernetes defaults for a parsed image (see [`default_pull_policy`]).
pub fn default_for(image: &ImageRef) -> &'static str {
    match (image.tag.as_deref(), image.digest.is_some()) {
        (Some("latest"), _) | (None, false) => ALWAYS,
        _ => IF_NOT_PRESENT,
    }
}

/// A container's pull policy as it applies, and whether it was defaulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectivePullPolicy<'a> {
    /// The policy (`Always`, `IfNotPresent`, `Never`, or whatever was written).
    pub policy: &'a str,
    /// Whether it is the default for the image rather than the written field.
    pub defaulted: bool,
}

/// The pull policy of a container whose `imagePullPolicy` is `written` and whose image is
/// `image`: the written one, else the default for the image. `None` when the field is unset
/// and there is no parseable image to default from.
pub fn effective_pull_policy<'a>(
    written: Option<&'a str>,
    image: Option<&str>,
) -> Option<EffectivePullPolicy<'a>> {
    match written {
        Some(policy) => Some(EffectivePullPolicy {
            policy,
            defaulted: false,
        }),
        None => image
            .and_then(default_pull_policy)
            .map(|policy| EffectivePullPolicy {
                policy,
                defaulted: true,
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("nginx", Some("Always"))]
    #[case("nginx:latest", Some("Always"))]
    #[case("nginx:1.25", Some("IfNotPresent"))]
    #[case(
        "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        Some("IfNotPresent")
    )]
    #[case(
        "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        Some("Always")
    )]
    #[case("Nginx", None)]
    fn defaults(#[case] image: &str, #[case] expected: Option<&str>) {
        assert_eq!(default_pull_policy(image), expected);
    }

    #[rstest]
    #[case(Some("Never"), Some("nginx"), Some(("Never", false)))]
    #[case(Some("Whatever"), None, Some(("Whatever", false)))]
    #[case(None, Some("nginx"), Some(("Always", true)))]
    #[case(None, Some("nginx:1"), Some(("IfNotPresent", true)))]
    #[case(None, Some("Nginx"), None)]
    #[case(None, None, None)]
    fn effective(
        #[case] written: Option<&str>,
        #[case] image: Option<&str>,
        #[case] expected: Option<(&str, bool)>,
    ) {
        let found = effective_pull_policy(written, image).map(|e| (e.policy, e.defaulted));
        assert_eq!(found, expected);
    }
}
