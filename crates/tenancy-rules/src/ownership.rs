//! Tenant owners (Capsule's `Tenant.spec.owners`) given in settings: which users, groups and
//! service accounts own which tenant, and the tenants a requester owns
//! (`docs/semantics.md#tenants`). Decoded in one pass; a requester's tenants are found in one
//! scan of the entries, each list answering by membership (`docs/semantics.md#cost`).

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use kube_values::labels::is_label_value;
use policy_decode::error::SettingsError;
use policy_decode::names::NameList;
use policy_decode::settings::is_reread;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The prefix of service-account usernames.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The fields of an `owners` entry.
const FIELDS: &[&str] = &[
    "tenant",
    "users",
    "groups",
    "serviceAccounts",
    "forceTenantPrefix",
];

/// One `owners` entry: its names are positions in the list's one buffer of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    tenant: usize,
    users: (usize, usize),
    groups: (usize, usize),
    service_accounts: (usize, usize),
    force_tenant_prefix: Option<bool>,
}

/// `owners` as written: every name of every entry (tenants, users, groups, service
/// accounts) in one [`NameList`], so that decoding 10,000 entries allocates a few buffers,
/// not tens of thousands of strings and lists (`docs/semantics.md#cost`). Unknown fields,
/// wrong types and `null` are refused with their path; validated by [`Owners::build`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawOwners {
    names: NameList,
    entries: Vec<Entry>,
}

/// Whether the entries of a policy's `owners` may carry `forceTenantPrefix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixField {
    /// `forceTenantPrefix` is a setting of the entry.
    Allowed,
    /// `forceTenantPrefix` is refused as an unknown field.
    Refused,
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
pub struct Owners(RawOwners);

impl RawOwners {
    /// Name `i` (every position stored in an entry was pushed).
    fn name(&self, i: usize) -> &str {
        self.names.get(i).unwrap_or_default()
    }

    /// The names of a range of positions.
    fn names(&self, (start, end): (usize, usize)) -> impl Iterator<Item = &str> + '_ {
        (start..end).map(|i| self.name(i))
    }

    /// Whether `username` (with `groups`, when known) owns `entry`.
    fn owned_by(&self, entry: &Entry, username: &str, groups: Option<&BTreeSet<String>>) -> bool {
        if self.names(entry.users).any(|u| u == username) {
            return true;
        }
        if let Some(groups) = groups
            && self.names(entry.groups).any(|g| groups.contains(g))
        {
            return true;
        }
        username.starts_with(SERVICE_ACCOUNT_PREFIX)
            && self.names(entry.service_accounts).any(|s| s == username)
    }
}

impl Owners {
    /// Validates the entries as written; errors name `[i].<field>` (place them with
    /// [`SettingsError::under`]). Checks are skipped when settings are re-read
    /// ([`is_reread`]): they were made when the policy was loaded.
    pub fn build(raw: RawOwners, prefix: PrefixField) -> Result<Self, SettingsError> {
        let check = !is_reread();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        if check {
            seen.reserve(raw.entries.len());
        }
        for (i, entry) in raw.entries.iter().enumerate() {
            if prefix == PrefixField::Refused && entry.force_tenant_prefix.is_some() {
                return Err(SettingsError::new(
                    format!("[{i}].forceTenantPrefix"),
                    "unknown field `forceTenantPrefix`, expected one of `tenant`, `users`, `groups`, `serviceAccounts`",
                ));
            }
            if !check {
                continue;
            }
            check_entry(&raw, i, entry)?;
            let tenant = raw.name(entry.tenant);
            if let Some(first) = seen.insert(tenant, i) {
                return Err(SettingsError::new(
                    format!("[{i}].tenant"),
                    format!(
                        "duplicate tenant {tenant:?} (already at owners[{first}]); list all its owners in one entry"
                    ),
                ));
            }
        }
        Ok(Owners(raw))
    }

    /// Decodes and validates `owners` from JSON (tests and examples); errors name
    /// `owners[i]…`.
    pub fn parse(value: &serde_json::Value, prefix: PrefixField) -> Result<Self, SettingsError> {
        let raw: RawOwners =
            policy_decode::settings::decode(value).map_err(|e| e.under("owners"))?;
        Owners::build(raw, prefix).map_err(|e| e.under("owners"))
    }

    /// Whether no tenant is listed.
    pub fn is_empty(&self) -> bool {
        self.0.entries.is_empty()
    }

    /// The tenants whose entry lists `username`, one of `groups` (when known: a Project's
    /// requester has none) or the service account `username`; sorted, without duplicates.
    /// One scan of the entries.
    pub fn tenants_of(&self, username: &str, groups: Option<&BTreeSet<String>>) -> Vec<&str> {
        let raw = &self.0;
        let mut tenants: Vec<&str> = raw
            .entries
            .iter()
            .filter(|e| raw.owned_by(e, username, groups))
            .map(|e| raw.name(e.tenant))
            .collect();
        tenants.sort_unstable();
        tenants.dedup();
        tenants
    }

    /// The `forceTenantPrefix` of `tenant`'s entry, when the entry exists and writes it (one
    /// scan).
    pub fn force_tenant_prefix(&self, tenant: &str) -> Option<bool> {
        let raw = &self.0;
        raw.entries
            .iter()
            .find(|e| raw.name(e.tenant) == tenant)
            .and_then(|e| e.force_tenant_prefix)
    }
}

/// The checks of entry `i`: a tenant that is a non-empty label value, non-empty names, full
/// service-account usernames, at least one owner.
fn check_entry(raw: &RawOwners, i: usize, entry: &Entry) -> Result<(), SettingsError> {
    let tenant = raw.name(entry.tenant);
    if tenant.is_empty() {
        return Err(SettingsError::new(
            format!("[{i}].tenant"),
            "must not be empty",
        ));
    }
    if !is_label_value(tenant) {
        return Err(SettingsError::new(
            format!("[{i}].tenant"),
            format!(
                "{tenant:?} is not a valid tenant (a label value: at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)"
            ),
        ));
    }
    for (field, range) in [("users", entry.users), ("groups", entry.groups)] {
        if let Some(j) = raw.names(range).position(str::is_empty) {
            return Err(SettingsError::new(
                format!("[{i}].{field}[{j}]"),
                "must not be empty",
            ));
        }
    }
    for (j, account) in raw.names(entry.service_accounts).enumerate() {
        let parts = account
            .strip_prefix(SERVICE_ACCOUNT_PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
        if parts.is_none() {
            return Err(SettingsError::new(
                format!("[{i}].serviceAccounts[{j}]"),
                format!(
                    "{account:?} is not a service account username; write system:serviceaccount:<namespace>:<name>"
                ),
            ));
        }
    }
    let empty = |(start, end): (usize, usize)| start == end;
    if empty(entry.users) && empty(entry.groups) && empty(entry.service_accounts) {
        return Err(SettingsError::new(
            format!("[{i}]"),
            format!(
                "tenant {tenant:?} lists no users, groups nor serviceAccounts (an entry must name at least one owner)"
            ),
        ));
    }
    Ok(())
}

/// The fields of an entry, as serde identifies them (unknown ones refused by name).
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    Tenant,
    Users,
    Groups,
    ServiceAccounts,
    ForceTenantPrefix,
}

impl<'de> Deserialize<'de> for RawOwners {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = RawOwners;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of owners entries")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawOwners, A::Error> {
                let mut raw = RawOwners::default();
                while let Some(entry) = seq.next_element_seed(EntrySeed(&mut raw.names))? {
                    raw.entries.push(entry);
                }
                Ok(raw)
            }
        }
        deserializer.deserialize_seq(ListVisitor)
    }
}

/// Reads one entry, its names pushed into the shared list.
struct EntrySeed<'n>(&'n mut NameList);

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = Entry;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Entry, D::Error> {
        deserializer.deserialize_struct("Owner", FIELDS, self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = Entry;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an owners entry {tenant, users, groups, serviceAccounts}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let names = self.0;
        let mut tenant = None;
        let mut users = None;
        let mut groups = None;
        let mut service_accounts = None;
        let mut force_tenant_prefix = None;
        fn once<T, E: de::Error>(slot: &Option<T>, field: &'static str) -> Result<(), E> {
            match slot {
                Some(_) => Err(E::duplicate_field(field)),
                None => Ok(()),
            }
        }
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Tenant => {
                    once(&tenant, "tenant")?;
                    tenant = Some(map.next_value_seed(NameSeed(names))?);
                }
                Field::Users => {
                    once(&users, "users")?;
                    users = Some(map.next_value_seed(NamesSeed(names))?);
                }
                Field::Groups => {
                    once(&groups, "groups")?;
                    groups = Some(map.next_value_seed(NamesSeed(names))?);
                }
                Field::ServiceAccounts => {
                    once(&service_accounts, "serviceAccounts")?;
                    service_accounts = Some(map.next_value_seed(NamesSeed(names))?);
                }
                Field::ForceTenantPrefix => {
                    once(&force_tenant_prefix, "forceTenantPrefix")?;
                    force_tenant_prefix = Some(map.next_value::<bool>()?);
                }
            }
        }
        let none = (names.len(), names.len());
        Ok(Entry {
            tenant: tenant.ok_or_else(|| de::Error::missing_field("tenant"))?,
            users: users.unwrap_or(none),
            groups: groups.unwrap_or(none),
            service_accounts: service_accounts.unwrap_or(none),
            force_tenant_prefix,
        })
    }
}

/// Reads one name into the shared list; its position.
struct NameSeed<'n>(&'n mut NameList);

impl<'de> DeserializeSeed<'de> for NameSeed<'_> {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed<'_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        self.0.push(v);
        Ok(self.0.len() - 1)
    }
}

/// Reads a list of names into the shared list; the range of their positions.
struct NamesSeed<'n>(&'n mut NameList);

impl<'de> DeserializeSeed<'de> for NamesSeed<'_> {
    type Value = (usize, usize);
    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<(usize, usize), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for NamesSeed<'_> {
    type Value = (usize, usize);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of strings")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(usize, usize), A::Error> {
        let names = self.0;
        let start = names.len();
        while seq.next_element_seed(NameSeed(names))?.is_some() {}
        Ok((start, names.len()))
    }
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
        assert_eq!(o.force_tenant_prefix("solar"), Some(true));
        assert_eq!(o.force_tenant_prefix("oil"), None);
        assert_eq!(o.force_tenant_prefix("gas"), None);
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
    #[case(json!([["solar", ["a"]]]), "owners[0]: invalid type: sequence")]
    #[case(json!([{"tenant": null, "users": ["a"]}]), "owners[0].tenant: invalid type: null (write a value, or leave the key out)")]
    #[case(json!([{"tenant": "solar", "users": [3]}]), "owners[0].users[0]: invalid type: integer `3`, expected a string")]
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
    fn a_field_written_twice_is_refused_by_the_reader() {
        // (settings decoding names the path from a parsed value, where the last one wins)
        let text = r#"[{"tenant": "solar", "users": ["a"], "users": ["b"]}]"#;
        let err = serde_json::from_str::<RawOwners>(text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("duplicate field `users`"), "{err}");
    }

    #[test]
    fn names_of_every_entry_share_one_list() {
        // users given after the tenant or before it, lists interleaved with names
        let o = owners(json!([
            {"users": ["u1", "u2"], "tenant": "t1", "groups": ["g1"]},
            {"tenant": "t2", "serviceAccounts": ["system:serviceaccount:n:s"], "users": ["u2"]},
        ]));
        assert_eq!(o.tenants_of("u2", None), ["t1", "t2"]);
        assert_eq!(o.tenants_of("u1", None), ["t1"]);
        assert_eq!(o.tenants_of("t1", None), Vec::<&str>::new());
        let groups: BTreeSet<String> = ["g1".into()].into();
        assert_eq!(o.tenants_of("x", Some(&groups)), ["t1"]);
        assert_eq!(o.tenants_of("system:serviceaccount:n:s", None), ["t2"]);
        // a group named like a service account is a group
        let sa_group: BTreeSet<String> = ["system:serviceaccount:n:s".into()].into();
        assert!(o.tenants_of("y", Some(&sa_group)).is_empty());
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
