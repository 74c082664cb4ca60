//! Image restrictions (README "Image"): the parts of a parsed image reference — registry,
//! repository, tag, digest — for container images and for image volumes.

use kube_values::image::ImageRef;
use policy_admission::Violation;
use policy_decode::{FieldPath, SettingsError};
use serde::Deserialize;
use tenancy_rules::restriction::{RawString, StringMatch, StringRestriction};

use super::{labelled, opt};

/// Image restriction settings (parts of the parsed reference).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawImage {
    /// Registry host (case-insensitive; `docker.io` for Docker Hub).
    pub registry: Option<RawString>,
    /// Normalised repository (`library/nginx`).
    pub image: Option<RawString>,
    /// Tag (nil when absent).
    pub tag: Option<RawString>,
    /// Digest (`sha256:…`, nil when absent).
    pub digest: Option<RawString>,
}

/// Image restriction (parts of the parsed reference).
#[derive(Debug, Clone, Default)]
pub(crate) struct ImageRestriction {
    registry: Option<StringRestriction>,
    image: Option<StringRestriction>,
    tag: Option<StringRestriction>,
    digest: Option<StringRestriction>,
}

impl TryFrom<RawImage> for ImageRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawImage) -> Result<Self, SettingsError> {
        Ok(ImageRestriction {
            registry: opt(raw.registry, "registry", |r| {
                StringRestriction::build_with(r, StringMatch::CaseInsensitive)
            })?,
            image: opt(raw.image, "image", StringRestriction::build)?,
            tag: opt(raw.tag, "tag", StringRestriction::build)?,
            digest: opt(raw.digest, "digest", StringRestriction::build)?,
        })
    }
}

impl ImageRestriction {
    /// Judges the parsed image (`None` when the container has no image: every part nil);
    /// each problem names the part (`registry "gcr.io" is not in whitelist [docker.io]`).
    pub(crate) fn check(
        &self,
        image: Option<&ImageRef>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) {
        let parts = [
            (
                "registry",
                &self.registry,
                image.map(|i| i.registry.as_str()),
            ),
            (
                "repository",
                &self.image,
                image.map(|i| i.repository.as_str()),
            ),
            ("tag", &self.tag, image.and_then(|i| i.tag.as_deref())),
            (
                "digest",
                &self.digest,
                image.and_then(|i| i.digest.as_deref()),
            ),
        ];
        for (label, r, value) in parts {
            if let Some(r) = r {
                labelled(label, out, |scratch| r.check_str(value, path, scratch));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{refusal, violations};
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(
        json!({"spec": {"containers": {"image": {"registry": {"whitelist": ["docker.io"]}}}}}),
        json!({"spec": {"containers": [{"image": "nginx"}], "initContainers": [{"image": "gcr.io/X:1"}, {"image": "GCR.io/x:1"}]}}),
        &[r#"spec.initContainers[0].image: invalid image reference "gcr.io/X:1": repository name must be lowercase"#,
          r#"spec.initContainers[1].image: registry "gcr.io" is not in whitelist [docker.io]"#]
    )]
    #[case(
        json!({"spec": {"containers": {"image": {"registry": {"whitelist": ["docker.io"]}}}}}),
        json!({"spec": {"containers": [{"image": "nginx"}], "volumes": [{"name": "m", "image": {"reference": "quay.io/a/b:1"}}]}}),
        &[r#"spec.volumes[0].image.reference: registry "quay.io" is not in whitelist [docker.io]"#]
    )]
    fn checks(#[case] settings: Value, #[case] pod: Value, #[case] expected: &[&str]) {
        assert_eq!(violations(settings, pod), expected);
    }

    #[test]
    fn refusals_name_the_setting() {
        let err = refusal(json!({"spec": {"initContainers": {"image": {"tag": {"regex": "("}}}}}));
        assert!(
            err.starts_with("spec.initContainers.image.tag.regex: invalid regex"),
            "{err}"
        );
    }
}
