//! Settings of rbac-policy.

use policy_admission::cluster::OnLookupError;
use policy_decode::SettingsError;
use policy_decode::names::NameList;
use policy_decode::settings::Validated;
use policy_decode::settings::is_reread;
use serde::Deserialize;
use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
use tenancy_rules::principal::GlobSet;
use tenancy_rules::rbac::{Ceiling, Permissions, PolicyRule};

/// Subjects no binding may name by default: everyone, every anonymous request, the
/// break-glass group and every service account.
pub const DEFAULT_FORBIDDEN_SUBJECTS: [&str; 5] = [
    "system:authenticated",
    "system:unauthenticated",
    "system:anonymous",
    "system:masters",
    "system:serviceaccounts",
];

/// The kind of a referenced role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum RoleKind {
    /// A namespaced Role.
    Role,
    /// A ClusterRole.
    ClusterRole,
}

/// A role that may not be bound, as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoleRef {
    kind: RoleKind,
    name: String,
}

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    forbidden_rules: Vec<Permissions>,
    forbid_wildcards: Option<bool>,
    forbid_escalation_verbs: Option<bool>,
    forbid_aggregation: Option<bool>,
    #[serde(default)]
    forbidden_role_refs: Option<Vec<RawRoleRef>>,
    #[serde(default)]
    allowed_cluster_role_refs: Option<NameList>,
    #[serde(default)]
    forbidden_subjects: Option<NameList>,
    #[serde(default)]
    forbid_foreign_service_accounts: bool,
    #[serde(default)]
    ceiling: Option<Vec<PolicyRule>>,
    #[serde(default)]
    check_bound_roles: bool,
    #[serde(default)]
    exempt_principals: RawExemptPrincipals,
    #[serde(default)]
    on_lookup_error: OnLookupError,
}

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Permissions no rule may grant.
    pub forbidden_rules: Vec<Permissions>,
    /// No `*` in verbs, apiGroups or resources (`*/<sub>` included).
    pub forbid_wildcards: bool,
    /// No `escalate`/`bind` on roles, no `impersonate` on identities.
    pub forbid_escalation_verbs: bool,
    /// No aggregating ClusterRoles.
    pub forbid_aggregation: bool,
    /// Role names that may not be bound.
    pub forbidden_roles: GlobSet,
    /// ClusterRole names that may not be bound.
    pub forbidden_cluster_roles: GlobSet,
    /// ClusterRoles RoleBindings may reference (`None` = any not forbidden).
    pub allowed_cluster_role_refs: Option<GlobSet>,
    /// User and Group names (and service-account usernames) no binding may name.
    pub forbidden_subjects: GlobSet,
    /// No ServiceAccount of another namespace in RoleBindings.
    pub forbid_foreign_service_accounts: bool,
    /// Every granted permission must be covered by these rules.
    pub ceiling: Option<Ceiling>,
    /// Bindings: the bound role's rules must be under the ceiling (looked up).
    pub check_bound_roles: bool,
    /// Who is exempt.
    pub exempt_principals: ExemptPrincipals,
    /// What a failed lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

/// Globs of a settings list, refusing empty ones.
fn globs(field: &str, list: NameList) -> Result<GlobSet, SettingsError> {
    let set = GlobSet::new(list);
    set.refuse_empty(field)?;
    Ok(set)
}

/// `forbiddenRoleRefs` split by kind (default: ClusterRole cluster-admin).
fn role_refs(raw: Option<Vec<RawRoleRef>>) -> Result<(GlobSet, GlobSet), SettingsError> {
    let refs = raw.unwrap_or_else(|| {
        vec![RawRoleRef {
            kind: RoleKind::ClusterRole,
            name: "cluster-admin".to_owned(),
        }]
    });
    let (mut roles, mut cluster_roles) = (Vec::new(), Vec::new());
    for (i, r) in refs.into_iter().enumerate() {
        if r.name.is_empty() {
            return Err(SettingsError::new(
                format!("forbiddenRoleRefs[{i}].name"),
                "must not be empty",
            ));
        }
        match r.kind {
            RoleKind::Role => roles.push(r.name),
            RoleKind::ClusterRole => cluster_roles.push(r.name),
        }
    }
    Ok((
        GlobSet::new(roles.into()),
        GlobSet::new(cluster_roles.into()),
    ))
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        if !is_reread() {
            for (i, p) in raw.forbidden_rules.iter().enumerate() {
                p.check(&format!("forbiddenRules[{i}]"))?;
            }
        }
        let ceiling = match raw.ceiling {
            Some(rules) => Some(Ceiling::build(rules, "ceiling")?),
            None => None,
        };
        if raw.check_bound_roles && ceiling.is_none() {
            return Err(SettingsError::new(
                "checkBoundRoles",
                "needs a ceiling to compare the bound roles with",
            ));
        }
        let (forbidden_roles, forbidden_cluster_roles) = role_refs(raw.forbidden_role_refs)?;
        let forbidden_subjects = raw
            .forbidden_subjects
            .unwrap_or_else(|| DEFAULT_FORBIDDEN_SUBJECTS.into());
        Ok(Settings {
            forbidden_rules: raw.forbidden_rules,
            forbid_wildcards: raw.forbid_wildcards.unwrap_or(true),
            forbid_escalation_verbs: raw.forbid_escalation_verbs.unwrap_or(true),
            forbid_aggregation: raw.forbid_aggregation.unwrap_or(true),
            forbidden_roles,
            forbidden_cluster_roles,
            allowed_cluster_role_refs: match raw.allowed_cluster_role_refs {
                Some(list) => Some(globs("allowedClusterRoleRefs", list)?),
                None => None,
            },
            forbidden_subjects: globs("forbiddenSubjects", forbidden_subjects)?,
            forbid_foreign_service_accounts: raw.forbid_foreign_service_accounts,
            ceiling,
            check_bound_roles: raw.check_bound_roles,
            exempt_principals: ExemptPrincipals::build(raw.exempt_principals)
                .map_err(|e| e.under("exemptPrincipals"))?,
            on_lookup_error: raw.on_lookup_error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn settings(v: &Value) -> Result<Settings, SettingsError> {
        Settings::parse(v)
    }

    #[rstest]
    #[case(json!({"forbiddenRules": [{"apiGroups": [""], "resources": [], "verbs": ["get"]}]}), "forbiddenRules[0].resources: must not be empty (write \"*\" for any)")]
    #[case(json!({"forbiddenRules": [{"apiGroups": [""], "resources": ["pods"]}]}), "forbiddenRules[0]: missing field `verbs`")]
    #[case(json!({"forbiddenRules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["x"]}]}), "forbiddenRules[0].resourceNames: unknown field `resourceNames`")]
    #[case(json!({"forbidWildcards": "yes"}), "forbidWildcards: invalid type")]
    #[case(json!({"forbiddenRoleRefs": [{"kind": "Group", "name": "x"}]}), "forbiddenRoleRefs[0].kind: unknown variant `Group`")]
    #[case(json!({"forbiddenRoleRefs": [{"kind": "Role", "name": ""}]}), "forbiddenRoleRefs[0].name: must not be empty")]
    #[case(json!({"forbiddenRoleRefs": null}), "forbiddenRoleRefs: ")]
    #[case(json!({"allowedClusterRoleRefs": ["tools-user", ""]}), "allowedClusterRoleRefs[1]: must not be empty")]
    #[case(json!({"forbiddenSubjects": [""]}), "forbiddenSubjects[0]: must not be empty")]
    #[case(json!({"ceiling": [{"apiGroups": [""], "resources": ["pods"], "verbs": []}]}), "ceiling[0].verbs: must not be empty")]
    #[case(json!({"ceiling": [{"resources": ["pods"], "verbs": ["get"]}]}), "ceiling[0]: must name both apiGroups and resources")]
    #[case(json!({"ceiling": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "verb": ["x"]}]}), "ceiling[0].verb: unknown field `verb`")]
    #[case(json!({"checkBoundRoles": true}), "checkBoundRoles: needs a ceiling")]
    #[case(json!({"exemptPrincipals": {"clusterRoles": [""]}}), "exemptPrincipals.clusterRoles[0]: must not be empty")]
    #[case(json!({"onLookupError": "ignore"}), "onLookupError: unknown variant `ignore`")]
    #[case(json!({"forbiddenVerbs": []}), "forbiddenVerbs: unknown field `forbiddenVerbs`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let e = settings(&raw).unwrap_err().to_string();
        assert!(e.starts_with(message), "{e}");
    }

    #[test]
    fn defaults() {
        let s = settings(&json!({})).unwrap();
        assert!(s.forbid_wildcards && s.forbid_escalation_verbs && s.forbid_aggregation);
        assert!(s.forbidden_cluster_roles.matches("cluster-admin"));
        assert!(s.forbidden_roles.is_empty());
        assert!(s.forbidden_subjects.matches("system:masters"));
        assert!(
            !s.forbidden_subjects
                .matches("system:serviceaccounts:tool-x")
        );
        assert!(s.ceiling.is_none() && s.allowed_cluster_role_refs.is_none());
        let s = settings(&json!({"forbiddenRoleRefs": [], "forbiddenSubjects": []})).unwrap();
        assert!(s.forbidden_cluster_roles.is_empty() && s.forbidden_subjects.is_empty());
    }
}
