//! Principals (users, groups, service accounts), globs and trusted controllers (`docs/semantics.md#matchers`, `docs/semantics.md#principals`).

use serde::Deserialize;

use policy_admission::request::UserInfo;
use policy_decode::error::SettingsError;
use policy_decode::message;
use policy_decode::names::NameList;

/// A whole-string, case-sensitive glob: `*` is any run (possibly empty), `?` one character.
///
/// ```
/// use tenancy_rules::principal::Glob;
/// assert!(Glob::new("tenant-a-*").matches("tenant-a-dev"));
/// assert!(Glob::new("system:*").matches("system:nodes"));
/// assert!(!Glob::new("a?").matches("a"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    /// The characters of a glob with wildcards (empty for a literal glob).
    pattern: Vec<char>,
    literal: bool,
    text: String,
}

impl Glob {
    /// Builds a glob from its text.
    pub fn new(pattern: &str) -> Self {
        let literal = !has_wildcard(pattern);
        Glob {
            pattern: if literal {
                Vec::new()
            } else {
                pattern.chars().collect()
            },
            literal,
            text: pattern.to_owned(),
        }
    }

    /// Whether the glob has no wildcard (it matches only its own text).
    pub fn is_literal(&self) -> bool {
        self.literal
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the glob is made only of wildcards (`*`, `?`), i.e. matches almost anything.
    pub fn is_only_wildcards(&self) -> bool {
        !self.literal && self.pattern.iter().all(|c| *c == '*' || *c == '?')
    }

    /// Whether the whole of `s` matches.
    pub fn matches(&self, s: &str) -> bool {
        if self.literal {
            return self.text == s;
        }
        let text: Vec<char> = s.chars().collect();
        // Iterative wildcard matching with single backtrack point (linear-ish, no recursion).
        let (mut p, mut t) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match self.pattern.get(p) {
                Some('*') => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(c) if *c == '?' || Some(c) == text.get(t) => {
                    p += 1;
                    t += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        p = sp + 1;
                        t = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        self.pattern
            .get(p..)
            .unwrap_or_default()
            .iter()
            .all(|c| *c == '*')
    }
}

/// Whether a glob has a wildcard (`*` or `?`).
fn has_wildcard(pattern: &str) -> bool {
    pattern.bytes().any(|b| b == b'*' || b == b'?')
}

/// Globs from settings (usernames, groups, namespaces), matched without trying every entry:
/// a value equal to an entry matches it (every glob matches its own text), which a
/// [`NameList`] answers; only the entries with wildcards are tried one by one.
///
/// ```
/// use tenancy_rules::principal::GlobSet;
/// let set = GlobSet::new(["alice", "tenant-*", "b?b"].into());
/// assert!(set.matches("alice") && set.matches("tenant-a") && set.matches("bob"));
/// assert!(!set.matches("mallory"));
/// assert_eq!(set.iter().collect::<Vec<_>>(), ["alice", "tenant-*", "b?b"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GlobSet {
    all: NameList,
    wildcards: Vec<Glob>,
}

impl GlobSet {
    /// The globs of `entries` (in settings order).
    pub fn new(entries: NameList) -> Self {
        let wildcards = match entries.is_empty() {
            true => Vec::new(),
            false => entries
                .iter()
                .filter(|e| has_wildcard(e))
                .map(Glob::new)
                .collect(),
        };
        GlobSet {
            all: entries,
            wildcards,
        }
    }

    /// Whether a glob matches the whole of `value`.
    pub fn matches(&self, value: &str) -> bool {
        self.all.contains(value) || self.wildcards.iter().any(|g| g.matches(value))
    }

    /// Whether a glob matches one of `values`.
    pub fn matches_any<'v>(&self, values: impl IntoIterator<Item = &'v str>) -> bool {
        !self.is_empty() && values.into_iter().any(|v| self.matches(v))
    }

    /// Whether there is no glob.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The globs as written, in settings order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.all.iter()
    }

    /// Refuses an empty glob as `<field>[i]: must not be empty` (not when settings are
    /// re-read by `validate`: they were checked when the policy was loaded).
    pub fn refuse_empty(&self, field: &str) -> Result<(), SettingsError> {
        if policy_decode::settings::is_reread() {
            return Ok(());
        }
        match self.all.iter().position(str::is_empty) {
            Some(i) => Err(SettingsError::new(
                format!("{field}[{i}]"),
                "must not be empty",
            )),
            None => Ok(()),
        }
    }
}

/// A service-account pattern `<namespace>:<name>`, each part a glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccountPattern {
    namespace: Glob,
    name: Glob,
}

impl ServiceAccountPattern {
    /// Parses `ns:name` or `system:serviceaccount:ns:name`. A namespace part made only of
    /// wildcards is refused: any tenant can create an account of any name in its namespace.
    pub fn parse(entry: &str) -> Result<Self, String> {
        let rest = entry
            .strip_prefix("system:serviceaccount:")
            .unwrap_or(entry);
        let Some((ns, name)) = rest.split_once(':') else {
            return Err(format!(
                "{entry:?} is not a service account; write <namespace>:<name>"
            ));
        };
        if ns.is_empty() || name.is_empty() || name.contains(':') {
            return Err(format!(
                "{entry:?} is not a service account; write <namespace>:<name>"
            ));
        }
        let namespace = Glob::new(ns);
        if namespace.is_only_wildcards() {
            return Err(format!(
                "{entry:?}: the namespace part must not be only wildcards (any tenant could create such an account)"
            ));
        }
        Ok(ServiceAccountPattern {
            namespace,
            name: Glob::new(name),
        })
    }

    /// Whether the service account `ns`/`name` matches.
    pub fn matches(&self, ns: &str, name: &str) -> bool {
        self.namespace.matches(ns) && self.name.matches(name)
    }

    /// The pattern as `ns:name`.
    pub fn describe(&self) -> String {
        format!("{}:{}", self.namespace.as_str(), self.name.as_str())
    }
}

/// Principals as written in settings (`users`, `groups`, `serviceAccounts`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPrincipals {
    /// Username globs.
    #[serde(default)]
    pub users: NameList,
    /// Group globs.
    #[serde(default)]
    pub groups: NameList,
    /// Service-account patterns `ns:name`.
    #[serde(default)]
    pub service_accounts: NameList,
}

/// The users of [`Principals::platform`].
pub const PLATFORM_USERS: [&str; 3] = [
    "system:apiserver",
    "system:kube-controller-manager",
    "system:kube-scheduler",
];

/// The groups of [`Principals::platform`].
pub const PLATFORM_GROUPS: [&str; 3] = [
    "system:masters",
    "system:nodes",
    "system:serviceaccounts:kube-system",
];

/// Validated principals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Principals {
    users: GlobSet,
    groups: GlobSet,
    service_accounts: Vec<ServiceAccountPattern>,
}

impl Principals {
    /// Validates principals; errors name `users[i]`, `serviceAccounts[i]`, ...
    pub fn build(raw: RawPrincipals) -> Result<Self, SettingsError> {
        Self::from_parts(
            ["users", "groups", "serviceAccounts"],
            raw.users,
            raw.groups,
            &raw.service_accounts,
        )
    }

    /// Validates principals given as three lists whose settings names are `fields`
    /// (users, groups, service accounts), used in error paths.
    pub fn from_parts(
        fields: [&str; 3],
        users: NameList,
        groups: NameList,
        service_accounts: &NameList,
    ) -> Result<Self, SettingsError> {
        let (users, groups) = (GlobSet::new(users), GlobSet::new(groups));
        users.refuse_empty(fields[0])?;
        groups.refuse_empty(fields[1])?;
        let service_accounts = service_accounts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                ServiceAccountPattern::parse(s)
                    .map_err(|e| SettingsError::new(format!("{}[{i}]", fields[2]), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Principals {
            users,
            groups,
            service_accounts,
        })
    }

    /// The default trusted controllers of `docs/semantics.md#principals`.
    pub fn default_trusted_controllers() -> Self {
        let sas = [
            "replicaset-controller",
            "replication-controller",
            "deployment-controller",
            "statefulset-controller",
            "daemon-set-controller",
            "job-controller",
            "cronjob-controller",
        ];
        Principals {
            users: GlobSet::new(["system:kube-controller-manager"].into()),
            groups: GlobSet::default(),
            service_accounts: sas
                .iter()
                .map(|n| ServiceAccountPattern {
                    namespace: Glob::new("kube-system"),
                    name: Glob::new(n),
                })
                .collect(),
        }
    }

    /// The platform's own identities (`docs/semantics.md#principals`): the API server, the
    /// controller manager and the scheduler by username, the kubelets (`system:nodes`),
    /// `system:masters`, and every `kube-system` service account (the controllers run as
    /// them with `--use-service-account-credentials`: garbage collector, namespace
    /// controller, ...), by group and by username.
    ///
    /// ```
    /// use policy_admission::request::UserInfo;
    /// use tenancy_rules::principal::Principals;
    /// let gc = UserInfo { username: "system:serviceaccount:kube-system:generic-garbage-collector".into(), groups: Default::default() };
    /// assert!(Principals::platform().matches(&gc));
    /// let other = UserInfo { username: "system:serviceaccount:solar:generic-garbage-collector".into(), groups: Default::default() };
    /// assert!(!Principals::platform().matches(&other));
    /// ```
    pub fn platform() -> Self {
        Principals {
            users: GlobSet::new(PLATFORM_USERS.into()),
            groups: GlobSet::new(PLATFORM_GROUPS.into()),
            service_accounts: vec![ServiceAccountPattern {
                namespace: Glob::new("kube-system"),
                name: Glob::new("*"),
            }],
        }
    }

    /// Whether nobody is listed.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty() && self.service_accounts.is_empty()
    }

    /// Whether the requester matches a user glob, one of its groups matches a group glob, or
    /// it is a service account matching a pattern.
    pub fn matches(&self, user: &UserInfo) -> bool {
        if self.users.matches(&user.username) {
            return true;
        }
        if self
            .groups
            .matches_any(user.groups.iter().map(String::as_str))
        {
            return true;
        }
        match user.service_account() {
            Some((ns, name)) => self.service_accounts.iter().any(|p| p.matches(ns, name)),
            None => false,
        }
    }

    /// A description for messages: `users [a], groups [b], service accounts [ns:sa]`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.users.is_empty() {
            parts.push(format!("users {}", message::bracketed(self.users.iter())));
        }
        if !self.groups.is_empty() {
            parts.push(format!("groups {}", message::bracketed(self.groups.iter())));
        }
        if !self.service_accounts.is_empty() {
            let sas = self.service_accounts.iter().map(|s| s.describe());
            parts.push(format!("service accounts {}", message::bracketed(sas)));
        }
        if parts.is_empty() {
            "nobody".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// Whether the object has an ownerReference with `controller: true`.
pub fn has_controller_owner(object: &serde_json::Value) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("controller").and_then(serde_json::Value::as_bool) == Some(true))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;
    use std::collections::BTreeSet;

    const F: [&str; 3] = ["users", "groups", "serviceAccounts"];

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups
                .iter()
                .map(|g| g.to_string())
                .collect::<BTreeSet<_>>(),
        }
    }

    #[rstest]
    #[case("*", "", true)]
    #[case("*", "anything:at/all", true)]
    #[case("a*b", "ab", true)]
    #[case("a*b", "axxb", true)]
    #[case("a*b", "axxbc", false)]
    #[case("a?c", "abc", true)]
    #[case("a?c", "ac", false)]
    #[case("*-users", "tenantA-users", true)]
    #[case("tenantA", "tenanta", false)]
    #[case("a*b*c", "abxbxc", true)]
    #[case("", "", true)]
    #[case("", "a", false)]
    fn glob_matching(#[case] pattern: &str, #[case] text: &str, #[case] expected: bool) {
        assert_eq!(Glob::new(pattern).matches(text), expected);
    }

    #[rstest]
    #[case("team-a:deployer", true)]
    #[case("system:serviceaccount:team-a:deployer", true)]
    #[case("*:deployer", false)]
    #[case("?*:x", false)]
    #[case("deployer", false)]
    #[case("a:", false)]
    fn service_account_patterns(#[case] entry: &str, #[case] valid: bool) {
        assert_eq!(
            ServiceAccountPattern::parse(entry).is_ok(),
            valid,
            "{entry}"
        );
    }

    #[test]
    fn principals_match_users_groups_and_service_accounts() {
        let p = Principals::from_parts(
            ["users", "groups", "serviceAccounts"],
            ["joe"].into(),
            ["tenantA-*", "ops"].into(),
            &["tenant-a-*:deployer"].into(),
        )
        .unwrap();
        assert!(p.matches(&user("bob", &["x", "ops"])));
        assert!(p.matches(&user("joe", &[])));
        assert!(p.matches(&user("bob", &["tenantA-users"])));
        assert!(p.matches(&user("system:serviceaccount:tenant-a-dev:deployer", &[])));
        assert!(!p.matches(&user("system:serviceaccount:tenant-b:deployer", &[])));
        assert!(!p.matches(&user("bob", &["other"])));
    }

    #[test]
    fn settings_errors_name_the_entry() {
        let none = NameList::new;
        let err = Principals::from_parts(F, none(), none(), &["ok:a", "*:b"].into()).unwrap_err();
        assert!(err.to_string().starts_with("serviceAccounts[1]: "), "{err}");
        let err = Principals::from_parts(F, ["a", ""].into(), none(), &none()).unwrap_err();
        assert_eq!(err.to_string(), "users[1]: must not be empty");
        let err = Principals::from_parts(F, none(), [""].into(), &none()).unwrap_err();
        assert_eq!(err.to_string(), "groups[0]: must not be empty");
    }

    #[test]
    fn default_trusted_controllers() {
        let t = Principals::default_trusted_controllers();
        assert!(t.matches(&user(
            "system:serviceaccount:kube-system:replicaset-controller",
            &[]
        )));
        assert!(t.matches(&user("system:kube-controller-manager", &[])));
        assert!(!t.matches(&user(
            "system:serviceaccount:team:replicaset-controller",
            &[]
        )));
    }

    #[test]
    fn controller_owner_detection() {
        let o = serde_json::json!({"metadata": {"ownerReferences": [{"controller": false}, {"controller": true}]}});
        assert!(has_controller_owner(&o));
        let o = serde_json::json!({"metadata": {"ownerReferences": "junk"}});
        assert!(!has_controller_owner(&o));
    }

    proptest! {
        /// A glob set answers as trying every glob in turn would.
        #[test]
        fn glob_set_agrees_with_every_glob(
            globs in proptest::collection::vec("[ab*?]{0,3}", 0..8),
            probes in proptest::collection::vec("[ab]{0,3}|[ab*?]{0,3}", 1..10),
        ) {
            let set = GlobSet::new(globs.clone().into());
            for p in &probes {
                prop_assert_eq!(set.matches(p), globs.iter().any(|g| Glob::new(g).matches(p)), "{}", p);
            }
            prop_assert_eq!(
                set.matches_any(probes.iter().map(String::as_str)),
                probes.iter().any(|p| globs.iter().any(|g| Glob::new(g).matches(p)))
            );
        }

        #[test]
        fn literal_glob_is_equality(a in "[a-z:/-]{0,8}", b in "[a-z:/-]{0,8}") {
            prop_assert_eq!(Glob::new(&a).matches(&b), a == b);
        }

        #[test]
        fn star_suffix_is_prefix_match(a in "[a-z]{0,6}", b in "[a-z]{0,6}") {
            let g = Glob::new(&format!("{a}*"));
            prop_assert_eq!(g.matches(&b), b.starts_with(&a));
        }

        #[test]
        fn question_marks_match_length(n in 0usize..6, s in "[a-z]{0,8}") {
            let g = Glob::new(&"?".repeat(n));
            prop_assert_eq!(g.matches(&s), s.chars().count() == n);
        }
    }
}
