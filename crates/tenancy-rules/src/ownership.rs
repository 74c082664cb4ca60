//! Tenant owners (Capsule's `Tenant.spec.owners`) given in settings: which users, groups and
//! service accounts own which tenant, and the tenants a requester owns
//! (`docs/semantics.md#tenants`). Decoded in one pass; a requester's tenants are found in one
//! scan of the entries, each list answering by membership (`docs/semantics.md#cost`).

use std::collections::{BTreeSet, HashMap};

use kube_values::labels::is_label_value;
use policy_decode::error::SettingsError;
use policy_decode::names::NameList;
use policy_decode::settings::is_reread;
use serde::Deserialize;

/// The prefix of service-account usernames.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// One `owners` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawOwner {
    /// The tenant (a label value).
    tenant: String,
    /// Exact usernames.
    #[serde(default)]
    users: NameList,
    /// Exact group names, matched against the request's groups.
    #[serde(default)]
    groups: NameList,
    /// Full service-account usernames, `system:serviceaccount:<namespace>:<name>`.
    #[serde(default)]
    service_accounts: NameList,
    /// Capsule's `forceTenantPrefix` for this tenant (only where a policy allows it).
    #[serde(default)]
    force_tenant_prefix: Option<bool>,
}

/// Whether the entries of a policy's `owners` may carry `forceTenantPrefix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixField {
    /// `forceTenantPrefix` is a setting of the entry.
    Allowed,
    /// `forceTenantPrefix` is refused as an unknown field.
    Refused,
}

/// The owners of one tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    /// The tenant.
    pub tenant: String,
    users: NameList,
    groups: NameList,
    service_accounts: NameList,
    /// The entry's `forceTenantPrefix`, when written.
    pub force_tenant_prefix: Option<bool>,
}

impl Owner {
    /// Whether `username` (with `groups`, when known) is one of this tenant's owners.
    fn owned_by(&self, username: &str, groups: Option<&BTreeSet<String>>) -> bool {
        if self.users.contains(username) {
            return true;
        }
        if let Some(groups) = groups
            && self.groups.iter().any(|g| groups.contains(g))
        {
            return true;
        }
        username.starts_with(SERVICE_ACCOUNT_PREFIX) && self.service_accounts.contains(username)
    }
}

/// Validated `owners`, in settings order.
///
/// ```
/// use tenancy_rules::ownership::{Owners, PrefixField};
/// let owners = Owners::parse(&serde_json::json!([
///     {"tenant": "solar", "users": ["alice"], "groups": ["solar-admins"]},
///     {"tenant": "oil", "users": ["alice"]},
///     {"tenant": "wind", "serviceAccounts": ["system:serviceaccount:wind-system:robot"]},
/// ]), PrefixField::Refused).unwrap();
/// assert_eq!(owners.tenants_of("alice", None), ["oil", "solar"]);
/// let groups = ["solar-admins".to_owned()].into();
/// assert_eq!(owners.tenants_of("bob", Some(&groups)), ["solar"]);
/// assert_eq!(owners.tenants_of("system:serviceaccount:wind-system:robot", None), ["wind"]);
/// assert!(owners.tenants_of("carol", None).is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Owners {
    entries: Vec<Owner>,
}

impl Owners {
    /// Validates the entries as written; errors name `[i].<field>` (place them with
    /// [`SettingsError::under`]). Checks are skipped when settings are re-read
    /// ([`is_reread`]): they were made when the policy was loaded.
    pub fn build(raw: Vec<RawOwner>, prefix: PrefixField) -> Result<Self, SettingsError> {
        let check = !is_reread();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        if check {
            seen.reserve(raw.len());
        }
        for (i, owner) in raw.iter().enumerate() {
            if prefix == PrefixField::Refused && owner.force_tenant_prefix.is_some() {
                return Err(SettingsError::new(
                    format!("[{i}].forceTenantPrefix"),
                    "unknown field `forceTenantPrefix`, expected one of `tenant`, `users`, `groups`, `serviceAccounts`",
                ));
            }
            if !check {
                continue;
            }
            check_owner(i, owner)?;
            if let Some(first) = seen.insert(&owner.tenant, i) {
                return Err(SettingsError::new(
                    format!("[{i}].tenant"),
                    format!(
                        "duplicate tenant {:?} (already at owners[{first}]); list all its owners in one entry",
                        owner.tenant
                    ),
                ));
            }
        }
        let entries = raw
            .into_iter()
            .map(|r| Owner {
                tenant: r.tenant,
                users: r.users,
                groups: r.groups,
                service_accounts: r.service_accounts,
                force_tenant_prefix: r.force_tenant_prefix,
            })
            .collect();
        Ok(Owners { entries })
    }

    /// Decodes and validates `owners` from JSON (tests and examples); errors name
    /// `owners[i]…`.
    pub fn parse(value: &serde_json::Value, prefix: PrefixField) -> Result<Self, SettingsError> {
        let raw: Vec<RawOwner> =
            policy_decode::settings::decode(value).map_err(|e| e.under("owners"))?;
        Owners::build(raw, prefix).map_err(|e| e.under("owners"))
    }

    /// Whether no tenant is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tenants whose entry lists `username`, one of `groups` (when known: a Project's
    /// requester has none) or the service account `username`; sorted, without duplicates.
    /// One scan of the entries.
    pub fn tenants_of(&self, username: &str, groups: Option<&BTreeSet<String>>) -> Vec<&str> {
        let mut tenants: Vec<&str> = self
            .entries
            .iter()
            .filter(|e| e.owned_by(username, groups))
            .map(|e| e.tenant.as_str())
            .collect();
        tenants.sort_unstable();
        tenants.dedup();
        tenants
    }

    /// The entry of `tenant`, if listed (one scan).
    pub fn entry(&self, tenant: &str) -> Option<&Owner> {
        self.entries.iter().find(|e| e.tenant == tenant)
    }
}

/// The checks of one entry at `[i]`: a tenant that is a non-empty label value, non-empty
/// names, full service-account usernames, at least one owner.
fn check_owner(i: usize, owner: &RawOwner) -> Result<(), SettingsError> {
    let at = |field: &str| format!("[{i}].{field}");
    if owner.tenant.is_empty() {
        return Err(SettingsError::new(at("tenant"), "must not be empty"));
    }
    if !is_label_value(&owner.tenant) {
        return Err(SettingsError::new(
            at("tenant"),
            format!(
                "{:?} is not a valid tenant (a label value: at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)",
                owner.tenant
            ),
        ));
    }
    for (field, list) in [("users", &owner.users), ("groups", &owner.groups)] {
        if let Some(j) = list.iter().position(str::is_empty) {
            return Err(SettingsError::new(
                format!("[{i}].{field}[{j}]"),
                "must not be empty",
            ));
        }
    }
    for (j, account) in owner.service_accounts.iter().enumerate() {
        let parts = account
            .strip_prefix(SERVICE_ACCOUNT_PREFIX)
            .and_then(|rest| {
                rest.split_once(':')
                    .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'))
            });
        if parts.is_none() {
            return Err(SettingsError::new(
                format!("[{i}].serviceAccounts[{j}]"),
                format!(
                    "{account:?} is not a service account username; write system:serviceaccount:<namespace>:<name>"
                ),
            ));
        }
    }
    if owner.users.is_empty() && owner.groups.is_empty() && owner.service_accounts.is_empty() {
        return Err(SettingsError::new(
            format!("[{i}]"),
            format!(
                "tenant {:?} lists no users, groups nor serviceAccounts (an entry must name at least one owner)",
                owner.tenant
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn owners(value: Value) -> Owners {
        Owners::parse(&value, PrefixField::Allowed).unwrap()
    }

    #[test]
    fn users_groups_and_service_accounts_own_their_tenants() {
        let o = owners(json!([
            {"tenant": "solar", "users": ["alice"], "groups": ["solar-admins"]},
            {"tenant": "oil", "users": ["alice", "carol"]},
            {"tenant": "wind", "serviceAccounts": ["system:serviceaccount:wind-system:robot"]},
            {"tenant": "gas", "groups": ["gas-admins", "energy"]},
        ]));
        assert_eq!(o.tenants_of("alice", None), ["oil", "solar"]);
        assert_eq!(o.tenants_of("carol", None), ["oil"]);
        let groups: BTreeSet<String> = ["energy".into(), "solar-admins".into()].into();
        assert_eq!(o.tenants_of("dave", Some(&groups)), ["gas", "solar"]);
        // a Project's requester: groups unknown
        assert!(o.tenants_of("dave", None).is_empty());
        assert_eq!(
            o.tenants_of("system:serviceaccount:wind-system:robot", None),
            ["wind"]
        );
        // a user named like the account's short form owns nothing
        assert!(o.tenants_of("wind-system:robot", None).is_empty());
        assert!(o.tenants_of("mallory", Some(&groups.clone())).len() == 2);
        assert!(o.tenants_of("mallory", Some(&BTreeSet::new())).is_empty());
    }

    #[test]
    fn a_user_and_its_group_in_one_entry_count_once() {
        let o = owners(json!([{"tenant": "solar", "users": ["alice"], "groups": ["g"]}]));
        let groups: BTreeSet<String> = ["g".into()].into();
        assert_eq!(o.tenants_of("alice", Some(&groups)), ["solar"]);
    }

    #[test]
    fn entries_carry_their_force_tenant_prefix() {
        let o = owners(json!([
            {"tenant": "solar", "users": ["alice"], "forceTenantPrefix": true},
            {"tenant": "oil", "users": ["alice"]},
        ]));
        assert_eq!(o.entry("solar").unwrap().force_tenant_prefix, Some(true));
        assert_eq!(o.entry("oil").unwrap().force_tenant_prefix, None);
        assert!(o.entry("gas").is_none());
        assert!(!o.is_empty() && Owners::default().is_empty());
    }

    #[rstest]
    #[case(json!([{"tenant": "solar", "users": ["a"]}, {"tenant": "solar", "groups": ["g"]}]),
        "owners[1].tenant: duplicate tenant \"solar\" (already at owners[0]); list all its owners in one entry")]
    #[case(json!([{"tenant": "solar"}]),
        "owners[0]: tenant \"solar\" lists no users, groups nor serviceAccounts (an entry must name at least one owner)")]
    #[case(json!([{"tenant": "solar", "users": [], "groups": []}]),
        "owners[0]: tenant \"solar\" lists no users, groups nor serviceAccounts")]
    #[case(json!([{"tenant": "", "users": ["a"]}]), "owners[0].tenant: must not be empty")]
    #[case(json!([{"tenant": "So lar", "users": ["a"]}]), "owners[0].tenant: \"So lar\" is not a valid tenant")]
    #[case(json!([{"tenant": "solar", "users": ["a", ""]}]), "owners[0].users[1]: must not be empty")]
    #[case(json!([{"tenant": "solar", "groups": [""]}]), "owners[0].groups[0]: must not be empty")]
    #[case(json!([{"tenant": "solar", "serviceAccounts": ["solar-system:robot"]}]),
        "owners[0].serviceAccounts[0]: \"solar-system:robot\" is not a service account username; write system:serviceaccount:<namespace>:<name>")]
    #[case(json!([{"tenant": "solar", "serviceAccounts": ["system:serviceaccount:a:b:c"]}]),
        "owners[0].serviceAccounts[0]: \"system:serviceaccount:a:b:c\" is not a service account username")]
    #[case(json!([{"tenant": "solar", "users": ["a"], "kind": "User"}]), "owners[0].kind: unknown field `kind`")]
    #[case(json!([{"users": ["a"]}]), "owners[0]: missing field `tenant`")]
    #[case(json!([{"tenant": "solar", "users": null}]), "owners[0].users: invalid type: null")]
    #[case(json!([{"tenant": "solar", "users": "alice"}]), "owners[0].users: invalid type: string")]
    #[case(json!({"tenant": "solar"}), "owners: invalid type: map")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Owners::parse(&raw, PrefixField::Allowed)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn force_tenant_prefix_is_refused_where_the_policy_has_none() {
        let raw = json!([{"tenant": "solar", "users": ["a"], "forceTenantPrefix": true}]);
        assert!(Owners::parse(&raw, PrefixField::Allowed).is_ok());
        assert_eq!(
            Owners::parse(&raw, PrefixField::Refused)
                .unwrap_err()
                .to_string(),
            "owners[0].forceTenantPrefix: unknown field `forceTenantPrefix`, expected one of `tenant`, `users`, `groups`, `serviceAccounts`"
        );
    }

    #[test]
    fn rereading_skips_the_checks_and_keeps_the_entries() {
        let raw = json!([{"tenant": "solar", "users": ["a"]}, {"tenant": "solar", "users": ["b"]}]);
        assert!(Owners::parse(&raw, PrefixField::Allowed).is_err());
        let o =
            policy_decode::settings::reread(|| Owners::parse(&raw, PrefixField::Allowed)).unwrap();
        // duplicates are reported once
        assert_eq!(o.tenants_of("a", None), ["solar"]);
        assert_eq!(o.tenants_of("b", None), ["solar"]);
    }
}
