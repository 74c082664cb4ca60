//! Organizations (APPUiO): the namespace label naming a namespace's organization, and a
//! user's default organization read from an annotation of a cluster-scoped object named
//! after the user (`docs/semantics.md#organizations`).

use kube_values::labels::is_label_key;
use policy_admission::cluster::{GetRequest, Lookups};
use policy_admission::metadata::string_map;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::json::At;

/// The default organization label, `appuio.io/organization`.
pub const DEFAULT_LABEL: &str = "appuio.io/organization";

/// The default annotation naming a user's default organization, `appuio.io/default-organization`.
pub const DEFAULT_ANNOTATION: &str = "appuio.io/default-organization";

/// The API version of OpenShift `User` objects.
pub const OPENSHIFT_USER_API_VERSION: &str = "user.openshift.io/v1";

/// The organization an object names: its label `label`, `None` when absent or empty.
/// `metadata.labels` must be a map of strings (400 naming the path otherwise).
///
/// ```
/// use policy_decode::json::At;
/// use tenancy_rules::organization::{DEFAULT_LABEL, named_by};
/// let ns = serde_json::json!({"metadata": {"labels": {"appuio.io/organization": "acme"}}});
/// let at = At::new(&ns, policy_decode::FieldPath::empty());
/// assert_eq!(named_by(&at, DEFAULT_LABEL).unwrap(), Some("acme"));
/// assert_eq!(named_by(&at, "other").unwrap(), None);
/// ```
pub fn named_by<'a>(object: &At<'a>, label: &str) -> Result<Option<&'a str>, PolicyError> {
    Ok(string_map(Some(object), "labels")?
        .and_then(|labels| labels.get(label))
        .and_then(serde_json::Value::as_str)
        .filter(|org| !org.is_empty()))
}

/// Checks a label or annotation key given in settings at `path`.
pub fn check_key(path: &str, key: &str) -> Result<(), SettingsError> {
    if is_label_key(key) {
        Ok(())
    } else {
        Err(SettingsError::new(
            path,
            format!("{key:?} is not a valid label or annotation key"),
        ))
    }
}

/// Where a user's default organization is read: the annotation `annotation` of the
/// cluster-scoped object of `api_version`/`kind` named after the user (OpenShift: the
/// `User`).
///
/// ```
/// use policy_admission::cluster::{Lookups, Objects};
/// use tenancy_rules::organization::DefaultOrganization;
/// let mut cluster = Objects::new(vec![serde_json::json!({"apiVersion": "user.openshift.io/v1",
///     "kind": "User", "metadata": {"name": "u", "annotations": {"appuio.io/default-organization": "acme"}}})]);
/// let mut lookups = Lookups::new(&mut cluster);
/// let source = DefaultOrganization::openshift_user("appuio.io/default-organization");
/// assert_eq!(source.of("u", &mut lookups).unwrap().as_deref(), Some("acme"));
/// assert_eq!(source.of("kube:admin", &mut lookups).unwrap(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultOrganization {
    /// API version of the object.
    pub api_version: String,
    /// Kind of the object.
    pub kind: String,
    /// Annotation holding the organization.
    pub annotation: String,
}

impl DefaultOrganization {
    /// The OpenShift `User`'s annotation `annotation`.
    pub fn openshift_user(annotation: &str) -> Self {
        DefaultOrganization {
            api_version: OPENSHIFT_USER_API_VERSION.to_owned(),
            kind: "User".to_owned(),
            annotation: annotation.to_owned(),
        }
    }

    /// The lookup of `username`'s object.
    fn request(&self, username: &str) -> GetRequest {
        GetRequest::cluster_scoped(&self.api_version, &self.kind, username)
    }

    /// The default organization of `username`: `None` when the object does not exist, or
    /// lacks the annotation or has it empty. A failed read, or an annotation that is not a
    /// string, is a failed lookup (500).
    pub fn of(
        &self,
        username: &str,
        lookups: &mut Lookups<'_>,
    ) -> Result<Option<String>, PolicyError> {
        let Some(user) = lookups.get(&self.request(username))? else {
            return Ok(None);
        };
        Ok(user
            .annotation(&self.annotation)?
            .filter(|s| !s.is_empty())
            .map(str::to_owned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use serde_json::json;

    #[test]
    fn default_organization_cases() {
        let user = |name: &str, annotations: serde_json::Value| {
            json!({"apiVersion": OPENSHIFT_USER_API_VERSION, "kind": "User",
                "metadata": {"name": name, "annotations": annotations}})
        };
        let mut cluster = Objects::new(vec![
            user("empty", json!({DEFAULT_ANNOTATION: ""})),
            user("none", json!({})),
            user("odd", json!({DEFAULT_ANNOTATION: 3})),
        ]);
        let mut lookups = Lookups::new(&mut cluster);
        let source = DefaultOrganization::openshift_user(DEFAULT_ANNOTATION);
        assert_eq!(source.of("empty", &mut lookups).unwrap(), None);
        assert_eq!(source.of("none", &mut lookups).unwrap(), None);
        assert_eq!(
            source.of("odd", &mut lookups).unwrap_err().to_string(),
            "cannot read User \"odd\": unexpected answer: metadata.annotations[\"appuio.io/default-organization\"]: expected a string"
        );
        let mut failing = Objects::default().failing("User");
        let mut lookups = Lookups::new(&mut failing);
        assert_eq!(source.of("u", &mut lookups).unwrap_err().code(), 500);
    }

    #[test]
    fn keys_are_checked() {
        assert!(check_key("organizationLabel", DEFAULT_LABEL).is_ok());
        assert_eq!(
            check_key("organizationLabel", "bad key")
                .unwrap_err()
                .to_string(),
            "organizationLabel: \"bad key\" is not a valid label or annotation key"
        );
    }
}
