//! Settings of namespace-organization-policy: the organization label, the tenants' owners and
//! Capsule's `forceTenantPrefix`, where a user's default organization is read (opt-in), how
//! membership is proven (opt-in), the Project requester annotation, `exemptPrincipals` and
//! `onLookupError` (README "Settings").

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::settings::Validated;
use policy_decode::settings::{ExactName, exact_name, is_reread};
use serde::Deserialize;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
use tenancy_rules::organization::{
    DEFAULT_ANNOTATION, DEFAULT_LABEL, DefaultOrganization, OPENSHIFT_USER_API_VERSION, check_key,
};
use tenancy_rules::ownership::{Owners, PrefixField, RawOwners};

/// The default Project annotation naming who requested the Project, `openshift.io/requester`.
pub const DEFAULT_REQUESTER_ANNOTATION: &str = "openshift.io/requester";

/// The placeholder of `membership.nameTemplate`.
pub const PLACEHOLDER: &str = "{organization}";

/// How a requester's membership of an organization is proven (README rule 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// A cluster-scoped object per organization lists its members' usernames (APPUiO:
    /// OpenShift Groups synchronised with organizations).
    #[default]
    GroupObject,
    /// The rendered name is one of the requester's groups (identity providers that put
    /// organizations into the user's groups).
    RequestGroups,
}

impl ExactName for Source {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("GroupObject", Source::GroupObject),
        ("RequestGroups", Source::RequestGroups),
    ];
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        exact_name(deserializer)
    }
}

/// `defaultOrganization` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawDefaultOrganization {
    api_version: Option<String>,
    kind: Option<String>,
    annotation: Option<String>,
}

/// `membership` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawMembership {
    source: Option<Source>,
    api_version: Option<String>,
    kind: Option<String>,
    users_field: Option<String>,
    name_template: Option<String>,
}

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    organization_label: Option<String>,
    owners: Option<RawOwners>,
    force_tenant_prefix: Option<bool>,
    default_organization: Option<RawDefaultOrganization>,
    membership: Option<RawMembership>,
    requester_annotation: Option<String>,
    exempt_principals: Option<RawExemptPrincipals>,
    on_lookup_error: Option<OnLookupError>,
}

/// How membership is proven, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Membership {
    /// The object `api_version`/`kind` named by the template lists the members at `users_field`.
    GroupObject {
        /// API version of the membership object.
        api_version: String,
        /// Kind of the membership object (cluster-scoped).
        kind: String,
        /// The dot-separated path of the list of member usernames (`users`).
        users_field: Vec<String>,
        /// The name template, with `{organization}` exactly once.
        name_template: String,
    },
    /// The rendered group must be one of the requester's groups.
    RequestGroups {
        /// The group template, with `{organization}` exactly once.
        name_template: String,
    },
}

impl Membership {
    /// The object or group name of `organization`.
    pub fn name_of(&self, organization: &str) -> String {
        let template = match self {
            Membership::GroupObject { name_template, .. }
            | Membership::RequestGroups { name_template } => name_template,
        };
        template.replacen(PLACEHOLDER, organization, 1)
    }
}

/// Validated settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The label naming a Namespace's or Project's organization (the tenant label).
    pub organization_label: String,
    /// Who owns which tenant (README rule 4); `None` when not configured.
    pub owners: Option<Owners>,
    /// Capsule's global `forceTenantPrefix` (an `owners` entry's own setting wins).
    pub force_tenant_prefix: bool,
    /// Where a user's default organization is read; `None`: never (the `User` is not read).
    pub default_organization: Option<DefaultOrganization>,
    /// How membership is proven; `None`: only `owners` prove it.
    pub membership: Option<Membership>,
    /// The Project annotation naming the requester.
    pub requester_annotation: String,
    /// Requesters whose Namespace requests are accepted unchanged (never for Projects).
    pub exempt_principals: ExemptPrincipals,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

/// A label or annotation key setting at `path`, `default` when absent.
fn key(path: &str, raw: Option<String>, default: &str) -> Result<String, SettingsError> {
    let Some(key) = raw else {
        return Ok(default.to_owned());
    };
    if !is_reread() {
        check_key(path, &key)?;
    }
    Ok(key)
}

/// A non-empty string setting without blanks (API versions, kinds) at `path`.
fn word(path: &str, raw: Option<String>, default: &str) -> Result<String, SettingsError> {
    let Some(value) = raw else {
        return Ok(default.to_owned());
    };
    if value.is_empty() {
        return Err(SettingsError::new(path, "must not be empty"));
    }
    if value.chars().any(char::is_whitespace) {
        return Err(SettingsError::new(
            path,
            format!("{value:?} must not contain blanks"),
        ));
    }
    Ok(value)
}

fn default_organization(raw: RawDefaultOrganization) -> Result<DefaultOrganization, SettingsError> {
    let under = |e: SettingsError| e.under("defaultOrganization");
    Ok(DefaultOrganization {
        api_version: word("apiVersion", raw.api_version, OPENSHIFT_USER_API_VERSION)
            .map_err(under)?,
        kind: word("kind", raw.kind, "User").map_err(under)?,
        annotation: key("annotation", raw.annotation, DEFAULT_ANNOTATION).map_err(under)?,
    })
}

/// `membership.nameTemplate`: `{organization}` exactly once.
fn name_template(raw: Option<String>) -> Result<String, SettingsError> {
    let template = raw.unwrap_or_else(|| PLACEHOLDER.to_owned());
    let count = template.matches(PLACEHOLDER).count();
    if count != 1 {
        return Err(SettingsError::new(
            "nameTemplate",
            format!("{template:?} must contain {PLACEHOLDER} exactly once (found {count})"),
        ));
    }
    Ok(template)
}

/// `membership.usersField`: a dot-separated path of field names.
fn users_field(raw: Option<String>) -> Result<Vec<String>, SettingsError> {
    let field = raw.unwrap_or_else(|| "users".to_owned());
    let steps: Vec<String> = field.split('.').map(str::to_owned).collect();
    if steps.iter().any(String::is_empty) {
        return Err(SettingsError::new(
            "usersField",
            format!("{field:?} is not a dot-separated path of field names"),
        ));
    }
    Ok(steps)
}

fn membership(raw: RawMembership) -> Result<Membership, SettingsError> {
    let under = |e: SettingsError| e.under("membership");
    let name_template = name_template(raw.name_template).map_err(under)?;
    match raw.source.unwrap_or_default() {
        Source::GroupObject => Ok(Membership::GroupObject {
            api_version: word("apiVersion", raw.api_version, OPENSHIFT_USER_API_VERSION)
                .map_err(under)?,
            kind: word("kind", raw.kind, "Group").map_err(under)?,
            users_field: users_field(raw.users_field).map_err(under)?,
            name_template,
        }),
        Source::RequestGroups => {
            let dangling = [
                ("apiVersion", raw.api_version.is_some()),
                ("kind", raw.kind.is_some()),
                ("usersField", raw.users_field.is_some()),
            ];
            if let Some((field, _)) = dangling.iter().find(|(_, set)| *set) {
                return Err(SettingsError::new(
                    format!("membership.{field}"),
                    "has no effect with source RequestGroups (no object is read)",
                ));
            }
            Ok(Membership::RequestGroups { name_template })
        }
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let exempt_principals = ExemptPrincipals::build(raw.exempt_principals.unwrap_or_default())
            .map_err(|e| e.under("exemptPrincipals"))?;
        let owners = raw
            .owners
            .map(|o| Owners::build(o, PrefixField::Allowed).map_err(|e| e.under("owners")))
            .transpose()?;
        let settings = Settings {
            organization_label: key("organizationLabel", raw.organization_label, DEFAULT_LABEL)?,
            owners,
            force_tenant_prefix: raw.force_tenant_prefix.unwrap_or(false),
            default_organization: raw
                .default_organization
                .map(default_organization)
                .transpose()?,
            membership: raw.membership.map(membership).transpose()?,
            requester_annotation: key(
                "requesterAnnotation",
                raw.requester_annotation,
                DEFAULT_REQUESTER_ANNOTATION,
            )?,
            exempt_principals,
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        };
        // Who may use an organization must be said: by owners, by membership, or both.
        if settings.owners.is_none() && settings.membership.is_none() {
            return Err(SettingsError::new(
                "",
                "neither owners nor membership is given: write owners (who owns which tenant), \
                 membership (how membership of an organization is proven; {} for OpenShift Groups), \
                 or both",
            ));
        }
        Ok(settings)
    }
}

impl Settings {
    /// Whether `tenant` must prefix the names of its namespaces (README rule 7): its `owners`
    /// entry's `forceTenantPrefix` when written, else the top-level one.
    pub fn forces_prefix(&self, tenant: &str) -> bool {
        self.owners
            .as_ref()
            .and_then(|o| o.force_tenant_prefix(tenant))
            .unwrap_or(self.force_tenant_prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({"organizationLabel": ""}), "organizationLabel: \"\" is not a valid label or annotation key")]
    #[case(json!({"organizationLabel": "a b"}), "organizationLabel: \"a b\" is not a valid label or annotation key")]
    #[case(json!({"organizationLabel": 3}), "organizationLabel: invalid type")]
    #[case(json!({"defaultOrganization": {"annotation": "-x"}}), "defaultOrganization.annotation: \"-x\" is not a valid label or annotation key")]
    #[case(json!({"defaultOrganization": {"apiVersion": ""}}), "defaultOrganization.apiVersion: must not be empty")]
    #[case(json!({"defaultOrganization": {"kind": "Us er"}}), "defaultOrganization.kind: \"Us er\" must not contain blanks")]
    #[case(json!({"defaultOrganization": {"name": "x"}}), "defaultOrganization.name: unknown field `name`")]
    #[case(json!({"membership": {"source": "groupObject"}}), "membership.source: \"groupObject\" is not one of GroupObject, RequestGroups")]
    #[case(json!({"membership": {"nameTemplate": "org"}}), "membership.nameTemplate: \"org\" must contain {organization} exactly once (found 0)")]
    #[case(json!({"membership": {"nameTemplate": "{organization}-{organization}"}}), "membership.nameTemplate: \"{organization}-{organization}\" must contain {organization} exactly once (found 2)")]
    #[case(json!({"membership": {"usersField": "spec..users"}}), "membership.usersField: \"spec..users\" is not a dot-separated path of field names")]
    #[case(json!({"membership": {"usersField": ""}}), "membership.usersField: \"\" is not a dot-separated path")]
    #[case(json!({"membership": {"kind": ""}}), "membership.kind: must not be empty")]
    #[case(json!({"membership": {"source": "RequestGroups", "kind": "Group"}}), "membership.kind: has no effect with source RequestGroups")]
    #[case(json!({"membership": {"source": "RequestGroups", "usersField": "users"}}), "membership.usersField: has no effect with source RequestGroups")]
    #[case(json!({"membership": {"groups": []}}), "membership.groups: unknown field `groups`")]
    #[case(json!({"requesterAnnotation": "a/b/c"}), "requesterAnnotation: \"a/b/c\" is not a valid label or annotation key")]
    #[case(json!({"exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"exemptPrincipals": {"serviceAccounts": ["*:deployer"]}}), "exemptPrincipals.serviceAccounts[0]: ")]
    #[case(json!({"exemptPrincipals": {"roles": []}}), "exemptPrincipals.roles: unknown field `roles`")]
    #[case(json!({"onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"organisationLabel": "x"}), "organisationLabel: unknown field `organisationLabel`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[rstest]
    #[case(json!({}))]
    #[case(json!({"defaultOrganization": {}}))]
    #[case(json!({"organizationLabel": "capsule.clastix.io/tenant", "forceTenantPrefix": true}))]
    fn neither_owners_nor_membership_is_refused(#[case] raw: Value) {
        assert_eq!(
            Settings::parse(&raw).unwrap_err().to_string(),
            "neither owners nor membership is given: write owners (who owns which tenant), \
             membership (how membership of an organization is proven; {} for OpenShift Groups), \
             or both"
        );
    }

    #[test]
    fn defaults_written_out_are_the_defaults() {
        let written = Settings::parse(&json!({
            "organizationLabel": "appuio.io/organization",
            "defaultOrganization": {"apiVersion": "user.openshift.io/v1", "kind": "User",
                "annotation": "appuio.io/default-organization"},
            "membership": {"source": "GroupObject", "apiVersion": "user.openshift.io/v1",
                "kind": "Group", "usersField": "users", "nameTemplate": "{organization}"},
            "requesterAnnotation": "openshift.io/requester",
            "forceTenantPrefix": false,
            "exemptPrincipals": {},
            "onLookupError": "reject"
        }))
        .unwrap();
        let defaults =
            Settings::parse(&json!({"defaultOrganization": {}, "membership": {}})).unwrap();
        assert_eq!(written, defaults);
        assert_eq!(
            defaults.default_organization,
            Some(DefaultOrganization::openshift_user(DEFAULT_ANNOTATION))
        );
        assert_eq!(defaults.membership.unwrap().name_of("acme"), "acme");
        assert!(defaults.owners.is_none() && !defaults.force_tenant_prefix);
    }

    #[test]
    fn owners_alone_read_no_user_and_prove_no_membership() {
        let s =
            Settings::parse(&json!({"owners": [{"tenant": "solar", "users": ["alice"]}]})).unwrap();
        assert_eq!(s.default_organization, None);
        assert_eq!(s.membership, None);
        assert_eq!(s.owners.unwrap().tenants_of("alice", None), ["solar"]);
        // an empty list is given: nobody owns a tenant
        assert!(Settings::parse(&json!({"owners": []})).is_ok());
    }

    #[test]
    fn the_entry_force_tenant_prefix_wins_over_the_top_level_one() {
        let s = Settings::parse(&json!({"forceTenantPrefix": true, "owners": [
            {"tenant": "solar", "users": ["alice"], "forceTenantPrefix": false},
            {"tenant": "oil", "users": ["alice"]},
        ]}))
        .unwrap();
        assert!(!s.forces_prefix("solar"));
        assert!(s.forces_prefix("oil"));
        assert!(s.forces_prefix("unlisted"));
        let s = Settings::parse(&json!({"owners": [
            {"tenant": "solar", "users": ["alice"], "forceTenantPrefix": true},
            {"tenant": "oil", "users": ["alice"]},
        ]}))
        .unwrap();
        assert!(s.forces_prefix("solar"));
        assert!(!s.forces_prefix("oil"));
    }

    #[rstest]
    #[case(json!({"owners": [{"tenant": "solar", "users": ["a"]}, {"tenant": "solar", "users": ["b"]}]}),
        "owners[1].tenant: duplicate tenant \"solar\" (already at owners[0])")]
    #[case(json!({"owners": [{"tenant": "solar"}]}), "owners[0]: tenant \"solar\" lists no users, groups nor serviceAccounts")]
    #[case(json!({"owners": [{"tenant": "solar", "users": ["a"], "forceTenantPrefix": "yes"}]}), "owners[0].forceTenantPrefix: invalid type: string")]
    #[case(json!({"owners": {"solar": ["a"]}}), "owners: invalid type: map")]
    #[case(json!({"owners": null}), "owners: invalid type: null")]
    #[case(json!({"owners": [], "forceTenantPrefix": "true"}), "forceTenantPrefix: invalid type: string")]
    fn owners_refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn request_groups_render_the_group() {
        let s = Settings::parse(&json!({"membership": {"source": "RequestGroups",
            "nameTemplate": "org:{organization}"}}))
        .unwrap();
        let membership = s.membership.unwrap();
        assert_eq!(
            membership,
            Membership::RequestGroups {
                name_template: "org:{organization}".into()
            }
        );
        assert_eq!(membership.name_of("acme"), "org:acme");
    }

    #[test]
    fn custom_membership_objects() {
        let s = Settings::parse(&json!({"membership": {"apiVersion": "example.io/v1",
            "kind": "Organization", "usersField": "spec.members", "nameTemplate": "org-{organization}"}}))
        .unwrap();
        assert_eq!(
            s.membership.unwrap(),
            Membership::GroupObject {
                api_version: "example.io/v1".into(),
                kind: "Organization".into(),
                users_field: vec!["spec".into(), "members".into()],
                name_template: "org-{organization}".into(),
            }
        );
    }
}
