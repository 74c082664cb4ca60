//! The image pull policy a container runs with: its `imagePullPolicy` when written, else the
//! one the API server defaults from the image when the Pod is created — `Always` for the
//! tag `latest` and for an image with neither tag nor digest, `IfNotPresent` otherwise
//! (<https://kubernetes.io/docs/concepts/containers/images/#imagepullpolicy-defaulting>).
//!
//! Policies judge the effective policy, so that leaving the field out cannot sidestep a
//! rule on it.
//!
//! ```
//! use kube_values::pull_policy::{default_pull_policy, effective_pull_policy};
//! assert_eq!(default_pull_policy("nginx"), Some("Always"));
//! assert_eq!(default_pull_policy("nginx:1.25"), Some("IfNotPresent"));
//! let e = effective_pull_policy(None, Some("nginx:latest")).unwrap();
//! assert_eq!((e.policy, e.defaulted), ("Always", true));
//! let e = effective_pull_policy(Some("Never"), Some("nginx:latest")).unwrap();
//! assert_eq!((e.policy, e.defaulted), ("Never", false));
//! ```

use std::fmt;

use crate::image::ImageRef;
use policy_decode::error::SettingsError;
use policy_decode::message;

/// `Always`: the image is pulled at every container start.
pub const ALWAYS: &str = "Always";
/// `IfNotPresent`: the image is pulled only when the node does not have it.
pub const IF_NOT_PRESENT: &str = "IfNotPresent";
/// `Never`: the image is never pulled; the node must have it.
pub const NEVER: &str = "Never";

/// One of the pull policies of the Kubernetes API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PullPolicy {
    /// `Always`
    Always,
    /// `IfNotPresent`
    IfNotPresent,
    /// `Never`
    Never,
}

impl PullPolicy {
    /// The API spelling (`IfNotPresent`).
    pub fn as_str(&self) -> &'static str {
        match self {
            PullPolicy::Always => ALWAYS,
            PullPolicy::IfNotPresent => IF_NOT_PRESENT,
            PullPolicy::Never => NEVER,
        }
    }

    /// The policy spelt `s` in any case (settings are canonicalised once,
    /// `docs/semantics.md#matchers`).
    ///
    /// ```
    /// use kube_values::pull_policy::PullPolicy;
    /// assert_eq!(PullPolicy::canonical("ifnotpresent"), Some(PullPolicy::IfNotPresent));
    /// assert_eq!(PullPolicy::canonical("sometimes"), None);
    /// ```
    pub fn canonical(s: &str) -> Option<Self> {
        [
            PullPolicy::Always,
            PullPolicy::IfNotPresent,
            PullPolicy::Never,
        ]
        .into_iter()
        .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }

    /// The policy spelt exactly `s` (as the API server stores it).
    pub fn exact(s: &str) -> Option<Self> {
        Self::canonical(s).filter(|p| p.as_str() == s)
    }
}

impl fmt::Display for PullPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A non-empty list of pull policies from the settings, canonicalised, in settings order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullPolicies(Vec<PullPolicy>);

impl PullPolicies {
    /// Reads the list at settings path `path`: non-empty, each entry one of `Always`,
    /// `IfNotPresent`, `Never` in any case, none twice.
    ///
    /// ```
    /// use kube_values::pull_policy::PullPolicies;
    /// let p = PullPolicies::parse("allowed", &["always".into(), "Never".into()]).unwrap();
    /// assert_eq!(p.to_string(), "[Always, Never]");
    /// assert!(p.allows("Always") && !p.allows("always") && !p.allows("IfNotPresent"));
    /// let e = PullPolicies::parse("allowed", &["Sometimes".into()]).unwrap_err();
    /// assert_eq!(e.to_string(), "allowed[0]: \"Sometimes\" is not a pull policy; expected one of [Always, IfNotPresent, Never]");
    /// ```
    pub fn parse(path: &str, raw: &[String]) -> Result<Self, SettingsError> {
        if raw.is_empty() {
            return Err(SettingsError::new(
                path,
                "must not be empty (omit the setting to allow every pull policy)",
            ));
        }
        let mut out: Vec<PullPolicy> = Vec::with_capacity(raw.len().min(3));
        for (i, entry) in raw.iter().enumerate() {
            let policy = PullPolicy::canonical(entry).ok_or_else(|| {
                SettingsError::new(
                    format!("{path}[{i}]"),
                    format!("{entry:?} is not a pull policy; expected one of [Always, IfNotPresent, Never]"),
                )
            })?;
            if out.contains(&policy) {
                return Err(SettingsError::new(
                    format!("{path}[{i}]"),
                    format!("{policy} is listed twice"),
                ));
            }
            out.push(policy);
        }
        Ok(PullPolicies(out))
    }

    /// Whether the effective policy `policy` (exact API spelling) is in the list.
    pub fn allows(&self, policy: &str) -> bool {
        PullPolicy::exact(policy).is_some_and(|p| self.0.contains(&p))
    }

    /// Whether `policy` is in the list.
    pub fn contains(&self, policy: PullPolicy) -> bool {
        self.0.contains(&policy)
    }
}

impl fmt::Display for PullPolicies {
    /// `[Always, IfNotPresent]`, in settings order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&message::bracketed(self.0.iter()))
    }
}

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
