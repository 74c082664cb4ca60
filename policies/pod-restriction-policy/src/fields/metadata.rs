//! ObjectMeta restrictions (README "ObjectMeta"): the Pod's or template's `name`, `labels`
//! and `annotations`.

use policy_admission::Violation;
use policy_decode::{PolicyError, SettingsError};
use serde::Deserialize;
use tenancy_rules::restriction::{
    RawString, RawStringMap, Restriction, StringMapRestriction, StringRestriction,
};

use super::{Template, check_field, field, opt};

/// ObjectMeta restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawObjectMeta {
    /// `metadata.name` (nil in templates).
    pub name: Option<RawString>,
    /// `metadata.labels`.
    pub labels: Option<RawStringMap>,
    /// `metadata.annotations`.
    pub annotations: Option<RawStringMap>,
}

/// ObjectMeta restriction.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectMetaRestriction {
    name: Option<StringRestriction>,
    labels: Option<StringMapRestriction>,
    annotations: Option<StringMapRestriction>,
}

impl TryFrom<RawObjectMeta> for ObjectMetaRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawObjectMeta) -> Result<Self, SettingsError> {
        Ok(ObjectMetaRestriction {
            name: opt(raw.name, "name", StringRestriction::build)?,
            labels: opt(raw.labels, "labels", StringMapRestriction::build)?,
            annotations: opt(raw.annotations, "annotations", StringMapRestriction::build)?,
        })
    }
}

impl ObjectMetaRestriction {
    /// Judges the metadata of one template.
    pub(crate) fn check(
        &self,
        t: &Template<'_>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.check_name(t, out)?;
        let meta = t.metadata.as_ref();
        check_field(self.labels.as_ref(), meta, &t.metadata_path, "labels", out)?;
        check_field(
            self.annotations.as_ref(),
            meta,
            &t.metadata_path,
            "annotations",
            out,
        )
    }

    /// `name`: nil in templates, whatever they write (README rule 12).
    fn check_name(&self, t: &Template<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        if let Some(r) = &self.name {
            let (value, path) = field(t.metadata.as_ref(), &t.metadata_path, "name");
            r.check(if t.is_template { None } else { value }, &path, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{refusal, spec, violations};
    use super::*;
    use policy_decode::FieldPath;
    use serde_json::json;

    #[test]
    fn names_labels_and_annotations() {
        assert_eq!(
            violations(
                json!({"metadata": {"labels": {"requiredKeys": ["team"]}, "name": {"regex": "web-.*"}}}),
                json!({"metadata": {"name": "db", "labels": {"app": "x"}}, "spec": {}}),
            ),
            [
                r#"metadata.name: "db" does not match regex ["web-.*"]"#,
                r#"metadata.labels: key "team" is required"#
            ]
        );
    }

    #[test]
    fn template_names_are_nil() {
        let r = spec(json!({"metadata": {"name": {"forbidNil": true}}}));
        let obj = json!({"metadata": {"name": "x"}, "spec": {}});
        let t = Template::read(&obj, FieldPath::root("spec").field("template")).unwrap();
        let mut out = Vec::new();
        r.check(&t, &mut out).unwrap();
        assert_eq!(
            out[0].to_string(),
            "spec.template.metadata.name: nil, a value is required"
        );
    }

    #[test]
    fn refusals_name_the_setting() {
        let err =
            refusal(json!({"metadata": {"labels": {"forbidEmpty": true, "requireEmpty": true}}}));
        assert!(
            err.starts_with("metadata.labels.requireEmpty: cannot be combined with forbidEmpty"),
            "{err}"
        );
    }
}
