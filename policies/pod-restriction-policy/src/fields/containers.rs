//! Container restrictions (README "Container"): a container's `name`, its `image`, its
//! effective `imagePullPolicy` and the dispatch to its security context.

use kube_values::image::ImageRef;
use kube_values::pull_policy::effective_pull_policy;
use policy_admission::Violation;
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde::Deserialize;
use tenancy_rules::restriction::{AnyOf, OneOrList, RawString, StringRestriction};

use super::image::{ImageRestriction, RawImage};
use super::security_context::{RawSecurityContext, SecurityContextRestriction};
use super::{check_field, opt};

/// Container restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawContainer {
    /// `name`.
    pub name: Option<RawString>,
    /// Image restrictions (any-of).
    pub image: Option<OneOrList<RawImage>>,
    /// The effective `imagePullPolicy`.
    pub image_pull_policy: Option<RawString>,
    /// SecurityContext restriction.
    pub security_context: Option<Box<RawSecurityContext>>,
}

/// Container restriction.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContainerRestriction {
    name: Option<StringRestriction>,
    image: AnyOf<ImageRestriction>,
    image_pull_policy: Option<StringRestriction>,
    security_context: Option<SecurityContextRestriction>,
}

impl TryFrom<RawContainer> for ContainerRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawContainer) -> Result<Self, SettingsError> {
        Ok(ContainerRestriction {
            name: opt(raw.name, "name", StringRestriction::build)?,
            image: AnyOf::build(raw.image, ImageRestriction::try_from)
                .map_err(|e| e.under("image"))?,
            image_pull_policy: opt(
                raw.image_pull_policy,
                "imagePullPolicy",
                StringRestriction::build,
            )?,
            security_context: opt(
                raw.security_context.map(|b| *b),
                "securityContext",
                SecurityContextRestriction::try_from,
            )?,
        })
    }
}

impl ContainerRestriction {
    /// Judges one container (`c`) of a Pod whose security context is `pod_context`.
    pub(crate) fn check(
        &self,
        c: &At<'_>,
        pod_context: Option<&At<'_>>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        check_field(self.name.as_ref(), Some(c), &c.path, "name", out)?;
        let image = c.get_str("image")?;
        self.check_image(image, &c.path.field("image"), out)?;
        self.check_image_pull_policy(c, image, out)?;
        if let Some(r) = &self.security_context {
            r.check(c, pod_context, out)?;
        }
        Ok(())
    }

    /// Judges an image reference found at `path` (a container's `image`, or an image
    /// volume's `reference`) against the image restrictions; `None` = no image. An
    /// unparseable reference is a violation wherever images are restricted.
    pub(crate) fn check_image(
        &self,
        image: Option<&str>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        if self.image.is_unrestricted() {
            return Ok(());
        }
        match image.map(ImageRef::parse).transpose() {
            Err(e) => out.push(Violation {
                path: path.clone(),
                problem: e.to_string(),
            }),
            Ok(parsed) => {
                self.image.check_with(out, |alternative, scratch| {
                    alternative.check(parsed.as_ref(), path, scratch);
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// `imagePullPolicy`: the effective policy ([`effective_pull_policy`]), the one
    /// Kubernetes defaults from the image when the field is unset; a violation of a
    /// defaulted policy says `(defaulted from the image tag)` (README rule 7).
    fn check_image_pull_policy(
        &self,
        c: &At<'_>,
        image: Option<&str>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let Some(r) = &self.image_pull_policy else {
            return Ok(());
        };
        let path = c.path.field("imagePullPolicy");
        match effective_pull_policy(c.get_str("imagePullPolicy")?, image) {
            Some(written) if !written.defaulted => r.check_str(Some(written.policy), &path, out),
            defaulted => {
                let mut scratch = Vec::new();
                r.check_str(defaulted.map(|d| d.policy), &path, &mut scratch);
                out.extend(scratch.into_iter().map(|v| Violation {
                    path: v.path,
                    problem: format!("{} (defaulted from the image tag)", v.problem),
                }));
            }
        }
        Ok(())
    }
}

/// Image volumes are images of the Pod (README rule 14): each `volumes[].image.reference` is
/// judged by the image restrictions of the `containers` list, as if it were the image of a
/// container, so that a registry whitelist cannot be sidestepped by mounting an image
/// instead of running it.
pub(crate) fn check_image_volumes(
    containers: &AnyOf<ContainerRestriction>,
    spec: &At<'_>,
    out: &mut Vec<Violation>,
) -> Result<(), PolicyError> {
    if containers.is_unrestricted() {
        return Ok(());
    }
    for volume in spec.get_list("volumes")? {
        let Some(image) = volume.get_object("image")? else {
            continue;
        };
        let reference = image.get_str("reference")?;
        let path = image.path.field("reference");
        containers.check_with(out, |alternative, scratch| {
            alternative.check_image(reference, &path, scratch)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::violations;
    use serde_json::json;

    #[test]
    fn pull_policies_are_effective() {
        assert_eq!(
            violations(
                json!({"spec": {"containers": {"imagePullPolicy": {"whitelist": ["Always"]}}}}),
                json!({"spec": {"containers": [{"image": "nginx"}, {"image": "nginx:1.25"}, {"image": "a:1", "imagePullPolicy": "Never"}]}}),
            ),
            [
                r#"spec.containers[1].imagePullPolicy: "IfNotPresent" is not in whitelist [Always] (defaulted from the image tag)"#,
                r#"spec.containers[2].imagePullPolicy: "Never" is not in whitelist [Always]"#
            ]
        );
    }

    #[test]
    fn names() {
        assert_eq!(
            violations(
                json!({"spec": {"containers": {"name": {"blacklist": ["debug"]}}}}),
                json!({"spec": {"containers": [{"name": "app"}], "initContainers": [{"name": "debug"}]}}),
            ),
            [r#"spec.initContainers[0].name: "debug" is in blacklist [debug]"#]
        );
    }
}
