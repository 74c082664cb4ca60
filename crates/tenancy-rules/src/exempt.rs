//! `exemptPrincipals`: principals plus ClusterRoles, whose bindings are read only when a
//! request would otherwise be refused or changed (`docs/semantics.md#exemptions`).

use serde::Deserialize;

use crate::principal::{GlobSet, Principals, RawPrincipals};
use policy_admission::cluster::{ListRequest, Lookups, OnLookupError};
use policy_admission::request::UserInfo;
use policy_admission::verdict::Verdict;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::names::NameList;

/// The API version ClusterRoleBindings are listed with (declared in `contextAwareResources`).
pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// `exemptPrincipals` as written.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawExemptPrincipals {
    /// Username globs.
    #[serde(default)]
    pub users: NameList,
    /// Group globs.
    #[serde(default)]
    pub groups: NameList,
    /// Service-account patterns `ns:name`.
    #[serde(default)]
    pub service_accounts: NameList,
    /// ClusterRole globs: whoever a ClusterRoleBinding to a matching ClusterRole names is exempt.
    #[serde(default)]
    pub cluster_roles: NameList,
}

/// Validated `exemptPrincipals`.
///
/// ```
/// use tenancy_rules::exempt::{ExemptPrincipals, RawExemptPrincipals};
/// let raw = RawExemptPrincipals { users: ["admin"].into(), cluster_roles: ["cluster-admin"].into(), ..Default::default() };
/// let exempt = ExemptPrincipals::build(raw).unwrap();
/// assert!(!exempt.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExemptPrincipals {
    principals: Principals,
    cluster_roles: GlobSet,
}

impl ExemptPrincipals {
    /// Validates the lists; errors name the entry (`clusterRoles[1]: must not be empty`),
    /// relative to `exemptPrincipals`.
    pub fn build(raw: RawExemptPrincipals) -> Result<Self, SettingsError> {
        let principals = Principals::build(RawPrincipals {
            users: raw.users,
            groups: raw.groups,
            service_accounts: raw.service_accounts,
        })?;
        let cluster_roles = GlobSet::new(raw.cluster_roles);
        cluster_roles.refuse_empty("clusterRoles")?;
        Ok(ExemptPrincipals {
            principals,
            cluster_roles,
        })
    }

    /// Whether nobody can be exempt.
    pub fn is_empty(&self) -> bool {
        self.principals.is_empty() && self.cluster_roles.is_empty()
    }

    /// Whether the requester is listed by name, group or service account (no lookup).
    fn lists(&self, user: &UserInfo) -> bool {
        self.principals.matches(user)
    }

    /// Whether a ClusterRoleBinding to a matching ClusterRole names the requester: a User
    /// subject by username, a Group by membership, a ServiceAccount by its full username.
    /// Reads the ClusterRoleBindings (masked to their role and subjects) only when
    /// `clusterRoles` is set.
    fn bound(&self, user: &UserInfo, lookups: &mut Lookups<'_>) -> Result<bool, PolicyError> {
        if self.cluster_roles.is_empty() {
            return Ok(false);
        }
        let bindings: Vec<Binding> = lookups.list_of(&cluster_role_bindings())?;
        let account = user.service_account();
        Ok(bindings.iter().any(|b| {
            b.role_ref.kind == "ClusterRole"
                && self.cluster_roles.matches(&b.role_ref.name)
                && b.subjects.iter().flatten().any(|s| s.names(user, account))
        }))
    }

    /// Judges the request unless its requester is exempt (`docs/semantics.md#exemptions`):
    /// a listed requester is accepted before `judge` runs; otherwise `judge` runs, and only
    /// when its verdict refuses, changes the object or fails are the ClusterRoleBindings
    /// read, an exempt requester then being accepted unchanged. When that read fails, the
    /// request is rejected (500), or with `onLookupError: accept` judged as not exempt, with
    /// a warning.
    ///
    /// The order of `docs/semantics.md#request-handling`: call it once the envelope is
    /// checked (the core checks the objects' shapes and the namespace; the policy its kind),
    /// and read the object only inside `judge`, so that a listed requester is accepted before
    /// anything of it is read; a malformed object found by `judge` (400) is never overridden
    /// by a ClusterRoleBinding.
    pub fn judge_unless_exempt(
        &self,
        user: &UserInfo,
        lookups: &mut Lookups<'_>,
        on_error: OnLookupError,
        judge: impl FnOnce(&mut Lookups<'_>) -> Result<Verdict, PolicyError>,
    ) -> Result<Verdict, PolicyError> {
        if self.lists(user) {
            return Ok(Verdict::accept());
        }
        let judged = judge(lookups);
        let untouched =
            matches!(&judged, Ok(v) if v.is_clean() && !v.has_edits() && v.mutated().is_none());
        let overridable = matches!(&judged, Ok(_) | Err(PolicyError::Lookup { .. }));
        if untouched || !overridable || self.cluster_roles.is_empty() {
            return judged;
        }
        match self.bound(user, lookups) {
            Ok(true) => Ok(Verdict::accept()),
            Ok(false) => judged,
            Err(e @ PolicyError::Lookup { .. }) if on_error == OnLookupError::Accept => {
                let mut verdict = judged?;
                verdict.warn_once(format!(
                    "{e}; the requester was judged as not exempt (onLookupError: accept)"
                ));
                Ok(verdict)
            }
            Err(e) => Err(e),
        }
    }
}

/// The ClusterRoleBinding list: every binding's role and subjects, nothing else (masks in
/// sorted order, as kwctl records them).
pub fn cluster_role_bindings() -> ListRequest {
    ListRequest {
        api_version: RBAC_API_VERSION.to_owned(),
        kind: "ClusterRoleBinding".to_owned(),
        namespace: None,
        label_selector: None,
        field_selector: None,
        field_masks: Some(vec![
            "roleRef.kind".to_owned(),
            "roleRef.name".to_owned(),
            "subjects.kind".to_owned(),
            "subjects.name".to_owned(),
            "subjects.namespace".to_owned(),
        ]),
    }
}

/// A ClusterRoleBinding as the exemption reads it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Binding {
    role_ref: RoleRef,
    subjects: Option<Vec<Subject>>,
}

#[derive(Debug, Deserialize)]
struct RoleRef {
    kind: String,
    name: String,
}

#[derive(Debug, Deserialize)]
struct Subject {
    kind: String,
    name: String,
    namespace: Option<String>,
}

impl Subject {
    /// Whether the subject names the requester (`account`: its service account, if any).
    fn names(&self, user: &UserInfo, account: Option<(&str, &str)>) -> bool {
        match self.kind.as_str() {
            "User" => self.name == user.username,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                account == Some((self.namespace.as_deref().unwrap_or(""), self.name.as_str()))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_decode::path::FieldPath;
    use serde_json::{Value, json};

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn exempt(raw: Value) -> ExemptPrincipals {
        let raw: RawExemptPrincipals = serde_json::from_value(raw).unwrap();
        ExemptPrincipals::build(raw).unwrap()
    }

    fn crb(name: &str, role: &str, subjects: Value) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects})
    }

    fn cluster() -> Objects {
        Objects::new(vec![
            crb(
                "admins",
                "cluster-admin",
                json!([{"kind": "User", "name": "root"},
                {"kind": "Group", "name": "ops"},
                {"kind": "ServiceAccount", "name": "argocd", "namespace": "gitops"}]),
            ),
            crb(
                "viewers",
                "view",
                json!([{"kind": "User", "name": "alice"}]),
            ),
            crb("empty", "cluster-admin", Value::Null),
            json!({"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "solar"},
                "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}, "subjects": [{"kind": "User", "name": "alice"}]}),
        ])
    }

    fn refusing(lookups: &mut Lookups<'_>) -> Result<Verdict, PolicyError> {
        let _ = lookups;
        let mut v = Verdict::accept();
        v.violation(&FieldPath::root("metadata"), "refused");
        Ok(v)
    }

    #[test]
    fn cluster_role_bindings_exempt_users_groups_and_service_accounts() {
        let e = exempt(json!({"clusterRoles": ["cluster-*"]}));
        let mut objects = cluster();
        let mut lookups = Lookups::new(&mut objects);
        for (who, groups, expected) in [
            ("root", &[][..], true),
            ("bob", &["ops"][..], true),
            ("system:serviceaccount:gitops:argocd", &[][..], true),
            ("system:serviceaccount:other:argocd", &[][..], false),
            ("alice", &[][..], false), // bound to view, and to cluster-admin only by a RoleBinding
            ("argocd", &[][..], false),
        ] {
            assert_eq!(
                e.bound(&user(who, groups), &mut lookups).unwrap(),
                expected,
                "{who}"
            );
        }
    }

    #[test]
    fn listed_requesters_are_accepted_without_judging() {
        let e = exempt(json!({"users": ["admin"], "clusterRoles": ["cluster-admin"]}));
        let mut objects = Objects::default().failing("ClusterRoleBinding");
        let mut lookups = Lookups::new(&mut objects);
        let v = e
            .judge_unless_exempt(
                &user("admin", &[]),
                &mut lookups,
                OnLookupError::Reject,
                |_| panic!("judged"),
            )
            .unwrap();
        assert!(v.is_clean());
    }

    #[test]
    fn bindings_are_read_only_for_a_refusal() {
        let e = exempt(json!({"clusterRoles": ["cluster-admin"]}));
        // The bindings cannot be read: an accepted request never asks for them.
        let mut objects = Objects::default().failing("ClusterRoleBinding");
        let mut lookups = Lookups::new(&mut objects);
        let v = e
            .judge_unless_exempt(&user("u", &[]), &mut lookups, OnLookupError::Reject, |_| {
                Ok(Verdict::accept())
            })
            .unwrap();
        assert!(v.is_clean());
        let err = e
            .judge_unless_exempt(
                &user("u", &[]),
                &mut lookups,
                OnLookupError::Reject,
                refusing,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read ClusterRoleBinding list: connection refused"
        );
        let v = e
            .judge_unless_exempt(
                &user("u", &[]),
                &mut lookups,
                OnLookupError::Accept,
                refusing,
            )
            .unwrap();
        assert_eq!(v.message(), "metadata: refused");
        assert_eq!(
            v.warnings(),
            [
                "cannot read ClusterRoleBinding list: connection refused; the requester was judged as not exempt (onLookupError: accept)"
            ]
        );
    }

    #[test]
    fn exempt_requesters_escape_refusals_edits_and_failed_lookups() {
        let e = exempt(json!({"clusterRoles": ["cluster-admin"]}));
        let mut objects = cluster();
        let mut lookups = Lookups::new(&mut objects);
        let root = user("root", &[]);
        let v = e
            .judge_unless_exempt(&root, &mut lookups, OnLookupError::Reject, refusing)
            .unwrap();
        assert!(v.is_clean());
        let v = e
            .judge_unless_exempt(&root, &mut lookups, OnLookupError::Reject, |_| {
                let mut v = Verdict::accept();
                v.edit_set(&["metadata"], "labels", json!({}));
                Ok(v)
            })
            .unwrap();
        assert!(!v.has_edits());
        let v = e.judge_unless_exempt(&root, &mut lookups, OnLookupError::Reject, |_| {
            Err(PolicyError::Lookup {
                what: "Group \"acme\"".into(),
                reason: "timeout".into(),
            })
        });
        assert!(v.unwrap().is_clean());
        // A malformed request stays malformed, exempt or not.
        let v = e.judge_unless_exempt(&root, &mut lookups, OnLookupError::Reject, |_| {
            Err(PolicyError::malformed(&FieldPath::root("metadata"), "bad"))
        });
        assert_eq!(v.unwrap_err().code(), 400);
        let v = e
            .judge_unless_exempt(
                &user("alice", &[]),
                &mut lookups,
                OnLookupError::Reject,
                refusing,
            )
            .unwrap();
        assert_eq!(v.message(), "metadata: refused");
    }

    #[test]
    fn settings_errors_name_the_entry() {
        let build =
            |raw: Value| ExemptPrincipals::build(serde_json::from_value(raw).unwrap()).map(|_| ());
        assert_eq!(
            build(json!({"clusterRoles": ["a", ""]}))
                .unwrap_err()
                .to_string(),
            "clusterRoles[1]: must not be empty"
        );
        assert!(
            build(json!({"serviceAccounts": ["*:x"]}))
                .unwrap_err()
                .to_string()
                .starts_with("serviceAccounts[0]: ")
        );
        assert!(serde_json::from_value::<RawExemptPrincipals>(json!({"roles": []})).is_err());
        assert!(exempt(json!({})).is_empty());
    }
}
