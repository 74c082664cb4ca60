//! The `rules` setting: Capsule v0.14's registry rules
//! (`Tenant.spec.rules[].enforce.workloads.registries`), and how they judge one image value
//! (README "Capsule v0.14 rules").
//!
//! A value is the image reference as written, trimmed, never normalised. For each rule whose
//! targets include the value's target, in order, the rule's matched entry is the first of its
//! `registries` that matches; an `audit` rule with a match is only reported, and the last
//! `allow` or `deny` rule with a match decides. Without a decision the value is refused when
//! a considered rule is an `allow` rule, else admitted.
//!
//! ```
//! use container_registry_policy::rules::{Decision, RegistryRules, Target};
//! let rules = RegistryRules::parse(&serde_json::json!([
//!     {"action": "allow", "registries": [{"exp": "^quay\\.io/"}]},
//!     {"registries": [{"exact": ["quay.io/acme/bad:1"]}]}]))
//! .unwrap();
//! let decide = |v: &str| rules.judge(Target::Containers, v).decision;
//! assert!(matches!(decide("quay.io/acme/app:1"), Decision::Allowed(_)));
//! assert!(matches!(decide("quay.io/acme/bad:1"), Decision::Denied(_)));
//! assert!(matches!(decide("nginx"), Decision::Unlisted));
//! ```

use std::fmt;

use kube_values::pull_policy::PullPolicies;
use policy_admission::pod::ContainerList;
use policy_decode::SettingsError;
use policy_decode::matcher::FullMatch;
use policy_decode::message;
use policy_decode::names::NameList;
use policy_decode::settings::{ExactName, exact_name};
use serde::{Deserialize, Deserializer};
use tenancy_rules::pulls::Puller;

/// What a rule does with a value one of its entries matches (`action`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Action {
    /// `allow`: admits the value, unless a later `deny` rule matches it too.
    Allow,
    /// `deny` (the default): refuses the value, unless a later `allow` rule matches it too.
    #[default]
    Deny,
    /// `audit`: reports the value in a warning; decides nothing.
    Audit,
}

impl ExactName for Action {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("allow", Action::Allow),
        ("deny", Action::Deny),
        ("audit", Action::Audit),
    ];
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        exact_name(d)
    }
}

/// Where a value comes from in a pod spec (`targets`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `pod/initcontainers`: `spec.initContainers[].image`.
    InitContainers,
    /// `pod/containers`: `spec.containers[].image`.
    Containers,
    /// `pod/ephemeralcontainers`: `spec.ephemeralContainers[].image`.
    EphemeralContainers,
    /// `pod/volumes`: `spec.volumes[].image.reference`.
    Volumes,
}

impl ExactName for Target {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("pod/initcontainers", Target::InitContainers),
        ("pod/containers", Target::Containers),
        ("pod/ephemeralcontainers", Target::EphemeralContainers),
        ("pod/volumes", Target::Volumes),
    ];
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        exact_name(d)
    }
}

impl Target {
    /// The target of the images `puller` pulls.
    pub fn of(puller: Puller) -> Target {
        match puller {
            Puller::Container(ContainerList::Init) => Target::InitContainers,
            Puller::Container(ContainerList::Regular) => Target::Containers,
            Puller::Container(ContainerList::Ephemeral) => Target::EphemeralContainers,
            Puller::ImageVolume => Target::Volumes,
        }
    }

    fn bit(self) -> u8 {
        match self {
            Target::InitContainers => 1,
            Target::Containers => 2,
            Target::EphemeralContainers => 4,
            Target::Volumes => 8,
        }
    }
}

/// The targets a rule considers: a set of [`Target`]s, never empty (`targets` absent or `[]`
/// is all four).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Targets(u8);

impl Targets {
    /// Every target.
    pub const ALL: Targets = Targets(1 | 2 | 4 | 8);

    fn from_written(written: &[Target]) -> Targets {
        match written.iter().fold(0, |bits, t| bits | t.bit()) {
            0 => Targets::ALL,
            bits => Targets(bits),
        }
    }

    /// Whether `target` is one of them.
    pub fn contains(self, target: Target) -> bool {
        self.0 & target.bit() != 0
    }
}

/// An unanchored regex search over a whole value, as Go's `MatchString` does: `harbor.io`
/// matches `evil.com/harbor.io/x`. The pattern is validated as written (so that `a)|(b` is
/// refused rather than read across the wrapping), then matched as the full match of
/// `(?:.|\n)*(?:pattern)(?:.|\n)*` ([`FullMatch`]: compiled when the settings are validated,
/// and when re-read by a request only if a value needs it).
#[derive(Clone, Debug)]
pub struct Search {
    within: FullMatch,
    pattern: String,
}

impl Search {
    /// The search for `pattern` (already trimmed).
    pub fn new(pattern: &str) -> Result<Self, String> {
        FullMatch::new(pattern)?;
        let within = FullMatch::new(format!("(?:.|\\n)*(?:{pattern})(?:.|\\n)*"))
            .map_err(|e| format!("invalid regex {pattern:?}: {e}"))?;
        Ok(Search {
            within,
            pattern: pattern.to_owned(),
        })
    }

    /// The pattern as written (trimmed).
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern matches somewhere in `value`.
    pub fn is_match(&self, value: &str) -> bool {
        self.within.is_match(value)
    }
}

/// What an entry compares a value with: at least one of `exact` and `exp`.
#[derive(Clone, Debug)]
enum Matcher {
    /// `exact` alone: the value is one of the references (case-sensitive).
    Exact(NameList),
    /// `exp` alone: the regex matches somewhere in the value.
    Exp(Search),
    /// Both: either holds.
    Either(NameList, Search),
}

impl Matcher {
    fn is_match(&self, value: &str) -> bool {
        match self {
            Matcher::Exact(exact) => exact.contains(value),
            Matcher::Exp(exp) => exp.is_match(value),
            Matcher::Either(exact, exp) => exact.contains(value) || exp.is_match(value),
        }
    }
}

/// One entry of a rule's `registries`: matches a value iff `(value ∈ exact || exp matches
/// value) XOR negate`, and, in an `allow` rule, restricts the pull policies of the values it
/// decides.
#[derive(Clone, Debug)]
pub struct RegistryPattern {
    matcher: Matcher,
    negate: bool,
    pull_policies: Option<PullPolicies>,
}

impl RegistryPattern {
    /// Whether the entry matches `value` (the trimmed reference as written).
    pub fn is_match(&self, value: &str) -> bool {
        self.matcher.is_match(value) != self.negate
    }

    /// The allowed effective pull policies, when the entry restricts them.
    pub fn pull_policies(&self) -> Option<&PullPolicies> {
        self.pull_policies.as_ref()
    }
}

impl fmt::Display for RegistryPattern {
    /// `exact: a`, `exact: [a, b]`, `exp: ^gcr\.io/`, `exact: a or exp: b`; negated:
    /// `not exact: a`, `not exact: a and not exp: b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let not = if self.negate { "not " } else { "" };
        let exact = |list: &NameList| match (list.len(), list.get(0)) {
            (1, Some(only)) => format!("{not}exact: {only}"),
            _ => format!("{not}exact: {}", message::bracketed(list.iter())),
        };
        let exp = |s: &Search| format!("{not}exp: {}", s.pattern());
        match &self.matcher {
            Matcher::Exact(list) => f.write_str(&exact(list)),
            Matcher::Exp(s) => f.write_str(&exp(s)),
            Matcher::Either(list, s) => {
                let joint = if self.negate { "and" } else { "or" };
                write!(f, "{} {joint} {}", exact(list), exp(s))
            }
        }
    }
}

/// One rule: its action, the targets it considers and its entries (never empty).
#[derive(Clone, Debug)]
pub struct Rule {
    /// What a match does.
    pub action: Action,
    /// The targets considered.
    pub targets: Targets,
    registries: Vec<RegistryPattern>,
}

impl Rule {
    /// The index of the first entry matching `value`.
    fn first_match(&self, value: &str) -> Option<usize> {
        self.registries.iter().position(|e| e.is_match(value))
    }
}

/// One entry of one rule: `rules[rule].registries[entry]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryRef {
    /// The rule's index in `rules`.
    pub rule: usize,
    /// The entry's index in the rule's `registries`.
    pub entry: usize,
}

impl fmt::Display for EntryRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rules[{}].registries[{}]", self.rule, self.entry)
    }
}

/// What the `allow` and `deny` rules decide for a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No rule decides and no considered rule allows: admitted.
    Unruled,
    /// No rule decides, and some considered rule is an `allow` rule: refused.
    Unlisted,
    /// The last deciding rule allows, through this entry (its first matching one).
    Allowed(EntryRef),
    /// The last deciding rule denies, through this entry.
    Denied(EntryRef),
}

/// How the rules judge one value: the decision and the audit matches, in rule order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// What the `allow` and `deny` rules decide.
    pub decision: Decision,
    /// The first matching entry of every considered `audit` rule that matches, in order.
    pub audits: Vec<EntryRef>,
}

/// The validated `rules` setting: a non-empty list of rules, in order.
#[derive(Clone, Debug)]
pub struct RegistryRules {
    rules: Vec<Rule>,
}

/// One rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawRule {
    #[serde(default)]
    action: Option<Action>,
    #[serde(default)]
    targets: Option<Vec<Target>>,
    registries: Vec<RawRegistryPattern>,
}

/// One `registries` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawRegistryPattern {
    #[serde(default)]
    exact: Option<Vec<String>>,
    #[serde(default)]
    exp: Option<String>,
    #[serde(default)]
    negate: Option<bool>,
    #[serde(default)]
    pull_policies: Option<Vec<String>>,
}

impl RawRegistryPattern {
    /// Validates the entry at settings path `path`.
    fn build(self, path: &str) -> Result<RegistryPattern, SettingsError> {
        let exact = match self.exact {
            Some(list) => Some(exact_list(&format!("{path}.exact"), &list)?),
            None => None,
        };
        let exp = match self.exp {
            Some(pattern) => {
                let at = format!("{path}.exp");
                let pattern = pattern.trim();
                if pattern.is_empty() {
                    return Err(SettingsError::new(
                        at,
                        "must not be empty (omit it, or write .* to match every value)",
                    ));
                }
                Some(Search::new(pattern).map_err(|e| SettingsError::new(at, e))?)
            }
            None => None,
        };
        let matcher = match (exact, exp) {
            (Some(exact), Some(exp)) => Matcher::Either(exact, exp),
            (Some(exact), None) => Matcher::Exact(exact),
            (None, Some(exp)) => Matcher::Exp(exp),
            (None, None) => {
                return Err(SettingsError::new(path, "give exact, exp, or both"));
            }
        };
        let pull_policies = match self.pull_policies {
            Some(p) => Some(PullPolicies::parse(&format!("{path}.pullPolicies"), &p)?),
            None => None,
        };
        Ok(RegistryPattern {
            matcher,
            negate: self.negate.unwrap_or(false),
            pull_policies,
        })
    }
}

/// The `exact` list at `path`: non-empty, each reference non-empty and without surrounding
/// whitespace (values are compared trimmed, so such a reference would never match).
fn exact_list(path: &str, raw: &[String]) -> Result<NameList, SettingsError> {
    if raw.is_empty() {
        return Err(SettingsError::new(path, "must not be empty (omit it)"));
    }
    let mut out = NameList::new();
    for (i, reference) in raw.iter().enumerate() {
        if reference.trim().is_empty() {
            return Err(SettingsError::new(
                format!("{path}[{i}]"),
                "must not be empty",
            ));
        }
        if reference.trim() != reference {
            return Err(SettingsError::new(
                format!("{path}[{i}]"),
                format!(
                    "{reference:?} has leading or trailing whitespace; image references are compared trimmed, so it would never match"
                ),
            ));
        }
        out.push(reference);
    }
    Ok(out)
}

impl RegistryRules {
    /// Validates the rules as written, at settings path `rules`.
    pub fn build(raw: Vec<RawRule>) -> Result<Self, SettingsError> {
        if raw.is_empty() {
            return Err(SettingsError::new(
                "rules",
                "must not be empty (give at least one rule)",
            ));
        }
        let mut rules = Vec::with_capacity(raw.len());
        for (i, rule) in raw.into_iter().enumerate() {
            let path = format!("rules[{i}]");
            if rule.registries.is_empty() {
                return Err(SettingsError::new(
                    format!("{path}.registries"),
                    "must not be empty (give at least one entry)",
                ));
            }
            let registries = rule
                .registries
                .into_iter()
                .enumerate()
                .map(|(j, e)| e.build(&format!("{path}.registries[{j}]")))
                .collect::<Result<Vec<_>, _>>()?;
            rules.push(Rule {
                action: rule.action.unwrap_or_default(),
                targets: Targets::from_written(rule.targets.as_deref().unwrap_or_default()),
                registries,
            });
        }
        Ok(RegistryRules { rules })
    }

    /// Decodes and validates the `rules` list alone (its paths start at `rules`).
    pub fn parse(raw: &serde_json::Value) -> Result<Self, SettingsError> {
        let written: Vec<RawRule> =
            policy_decode::settings::decode(raw).map_err(|e: SettingsError| e.under("rules"))?;
        Self::build(written)
    }

    /// How the rules judge `value` (the trimmed reference as written) from `target`: one
    /// pass over the rules from the last, each matched up to its first matching entry; once
    /// an `allow` or `deny` rule decides, only `audit` rules are still matched.
    pub fn judge(&self, target: Target, value: &str) -> Judgement {
        let mut decided: Option<(Action, EntryRef)> = None;
        let mut audits = Vec::new();
        let mut allow_considered = false;
        for (rule_index, rule) in self.rules.iter().enumerate().rev() {
            if !rule.targets.contains(target) {
                continue;
            }
            allow_considered |= rule.action == Action::Allow;
            if decided.is_some() && rule.action != Action::Audit {
                continue;
            }
            let Some(entry) = rule.first_match(value) else {
                continue;
            };
            let at = EntryRef {
                rule: rule_index,
                entry,
            };
            match rule.action {
                Action::Audit => audits.push(at),
                action => decided = Some((action, at)),
            }
        }
        audits.reverse();
        let decision = match decided {
            Some((Action::Allow, at)) => Decision::Allowed(at),
            Some((_, at)) => Decision::Denied(at),
            None if allow_considered => Decision::Unlisted,
            None => Decision::Unruled,
        };
        Judgement { decision, audits }
    }

    /// The entry `at`, if it exists.
    pub fn entry(&self, at: EntryRef) -> Option<&RegistryPattern> {
        self.rules.get(at.rule)?.registries.get(at.entry)
    }

    /// How a message names entry `at`: `rules[1].registries[0] (exact: nginx:1.25)`.
    pub fn describe(&self, at: EntryRef) -> String {
        match self.entry(at) {
            Some(entry) => format!("{at} ({entry})"),
            None => at.to_string(),
        }
    }

    /// The entries of the `allow` rules considered for `target`, as a message lists them
    /// (the first 20, then how many more).
    pub fn allowed_for(&self, target: Target) -> String {
        let allow_rules = || {
            self.rules
                .iter()
                .enumerate()
                .filter(move |(_, r)| r.action == Action::Allow && r.targets.contains(target))
        };
        let total = allow_rules().map(|(_, r)| r.registries.len()).sum();
        let entries = allow_rules().flat_map(|(rule, r)| {
            r.registries.iter().enumerate().map(move |(entry, e)| {
                let at = EntryRef { rule, entry };
                format!("{at} ({e})")
            })
        });
        message::join_counted(entries, total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn rules(raw: Value) -> RegistryRules {
        RegistryRules::parse(&raw).unwrap()
    }

    fn decide(rules: &RegistryRules, value: &str) -> Decision {
        rules.judge(Target::Containers, value).decision
    }

    fn at(rule: usize, entry: usize) -> EntryRef {
        EntryRef { rule, entry }
    }

    #[test]
    fn the_default_action_is_deny() {
        let r = rules(json!([{"registries": [{"exact": ["nginx"]}]}]));
        assert_eq!(decide(&r, "nginx"), Decision::Denied(at(0, 0)));
        // a deny rule alone makes nothing else refused
        assert_eq!(decide(&r, "nginx:1.25"), Decision::Unruled);
    }

    #[test]
    fn an_allow_rule_refuses_the_values_it_does_not_match() {
        let r = rules(json!([{"action": "allow", "registries": [{"exp": "^gcr\\.io/"}]}]));
        assert_eq!(decide(&r, "gcr.io/a/b:1"), Decision::Allowed(at(0, 0)));
        assert_eq!(decide(&r, "quay.io/a/b:1"), Decision::Unlisted);
        assert_eq!(
            r.allowed_for(Target::Containers),
            "rules[0].registries[0] (exp: ^gcr\\.io/)"
        );
    }

    #[test]
    fn the_last_matching_rule_wins() {
        let deny_then_allow = rules(json!([
            {"action": "deny", "registries": [{"exp": "^docker\\.io/"}]},
            {"action": "allow", "registries": [{"exact": ["docker.io/library/nginx:1.25"]}]}]));
        assert_eq!(
            decide(&deny_then_allow, "docker.io/library/nginx:1.25"),
            Decision::Allowed(at(1, 0))
        );
        assert_eq!(
            decide(&deny_then_allow, "docker.io/library/redis:7"),
            Decision::Denied(at(0, 0))
        );
        let allow_then_deny = rules(json!([
            {"action": "allow", "registries": [{"exp": "^docker\\.io/"}]},
            {"action": "deny", "registries": [{"exact": ["docker.io/library/nginx:1.25"]}]}]));
        assert_eq!(
            decide(&allow_then_deny, "docker.io/library/nginx:1.25"),
            Decision::Denied(at(1, 0))
        );
        assert_eq!(
            decide(&allow_then_deny, "docker.io/library/redis:7"),
            Decision::Allowed(at(0, 0))
        );
    }

    #[test]
    fn the_first_matching_entry_of_a_rule_is_its_match() {
        let r = rules(json!([{"action": "allow", "registries": [
            {"exp": "^quay\\.io/other/"}, {"exp": "^quay\\.io/"}, {"exp": "acme"}]}]));
        assert_eq!(decide(&r, "quay.io/acme/app"), Decision::Allowed(at(0, 1)));
    }

    #[rstest]
    #[case(json!({"exact": ["nginx"], "negate": true}), "nginx", false)]
    #[case(json!({"exact": ["nginx"], "negate": true}), "redis", true)]
    #[case(json!({"exp": "^quay\\.io/", "negate": true}), "quay.io/a", false)]
    #[case(json!({"exp": "^quay\\.io/", "negate": true}), "gcr.io/a", true)]
    #[case(json!({"exact": ["nginx"], "exp": "^quay\\.io/", "negate": true}), "nginx", false)]
    #[case(json!({"exact": ["nginx"], "exp": "^quay\\.io/", "negate": true}), "quay.io/a", false)]
    #[case(json!({"exact": ["nginx"], "exp": "^quay\\.io/", "negate": true}), "redis", true)]
    #[case(json!({"exact": ["nginx"], "exp": "^quay\\.io/"}), "quay.io/a", true)]
    // exp searches unanchored, as Go's MatchString
    #[case(json!({"exp": "harbor.io"}), "evil.com/harbor.io/x", true)]
    #[case(json!({"exp": "harbor\\.io$"}), "evil.com/harbor.io/x", false)]
    #[case(json!({"exp": "a|^b"}), "xa", true)]
    #[case(json!({"exp": "  ^b  "}), "b", true)]
    // exact compares whole references, case-sensitively, never normalised
    #[case(json!({"exact": ["docker.io"]}), "docker.io/library/nginx", false)]
    #[case(json!({"exact": ["docker.io/library/nginx"]}), "nginx", false)]
    #[case(json!({"exact": ["nginx"]}), "Nginx", false)]
    #[case(json!({"exact": ["a", "nginx"]}), "nginx", true)]
    fn entries_match(#[case] entry: Value, #[case] value: &str, #[case] matches: bool) {
        let r = rules(json!([{"registries": [entry]}]));
        let found = decide(&r, value) == Decision::Denied(at(0, 0));
        assert_eq!(found, matches, "{value}");
    }

    #[test]
    fn targets_restrict_a_rule() {
        let r = rules(json!([
            {"action": "allow", "targets": ["pod/containers"], "registries": [{"exp": "^quay\\.io/"}]},
            {"targets": ["pod/volumes", "pod/initcontainers"], "registries": [{"exact": ["busybox"]}]},
            {"targets": [], "registries": [{"exact": ["evil"]}]}]));
        assert_eq!(decide(&r, "busybox"), Decision::Unlisted);
        assert_eq!(
            r.judge(Target::InitContainers, "busybox").decision,
            Decision::Denied(at(1, 0))
        );
        assert_eq!(
            r.judge(Target::Volumes, "gcr.io/data").decision,
            Decision::Unruled
        );
        assert_eq!(
            r.judge(Target::EphemeralContainers, "evil").decision,
            Decision::Denied(at(2, 0))
        );
        assert_eq!(
            r.judge(Target::EphemeralContainers, "busybox").decision,
            Decision::Unruled
        );
    }

    #[test]
    fn audit_rules_only_report() {
        let r = rules(json!([
            {"action": "audit", "registries": [{"exp": "^docker\\.io/"}, {"exp": "nginx"}]},
            {"action": "audit", "registries": [{"exp": "nginx"}]},
            {"action": "audit", "targets": ["pod/volumes"], "registries": [{"exp": "nginx"}]}]));
        assert_eq!(
            r.judge(Target::Containers, "docker.io/library/nginx"),
            Judgement {
                decision: Decision::Unruled,
                audits: vec![at(0, 0), at(1, 0)]
            }
        );
        let after_allow = rules(json!([
            {"action": "allow", "registries": [{"exp": "^quay\\.io/"}]},
            {"action": "audit", "registries": [{"exp": "^gcr\\.io/"}]}]));
        assert_eq!(
            after_allow.judge(Target::Containers, "gcr.io/x"),
            Judgement {
                decision: Decision::Unlisted,
                audits: vec![at(1, 0)]
            }
        );
    }

    #[test]
    fn entries_describe_themselves() {
        let r = rules(json!([{"registries": [
            {"exact": ["a"]}, {"exact": ["a", "b"]}, {"exp": "^x"},
            {"exact": ["a"], "exp": "^x"}, {"exact": ["a"], "negate": true},
            {"exact": ["a"], "exp": "^x", "negate": true}, {"exp": "^x", "negate": true}]}]));
        let shown: Vec<String> = (0..7).map(|j| r.describe(at(0, j))).collect();
        assert_eq!(
            shown,
            [
                "rules[0].registries[0] (exact: a)",
                "rules[0].registries[1] (exact: [a, b])",
                "rules[0].registries[2] (exp: ^x)",
                "rules[0].registries[3] (exact: a or exp: ^x)",
                "rules[0].registries[4] (not exact: a)",
                "rules[0].registries[5] (not exact: a and not exp: ^x)",
                "rules[0].registries[6] (not exp: ^x)",
            ]
        );
    }

    #[test]
    fn long_allowed_lists_count_the_rest() {
        let entries: Vec<Value> = (0..25)
            .map(|i| json!({"exact": [format!("i{i}")]}))
            .collect();
        let r = rules(json!([{"action": "allow", "registries": entries}]));
        let shown = r.allowed_for(Target::Containers);
        assert!(
            shown.starts_with("rules[0].registries[0] (exact: i0), "),
            "{shown}"
        );
        assert!(
            shown.ends_with("rules[0].registries[19] (exact: i19), ... (5 more)"),
            "{shown}"
        );
    }

    #[test]
    fn pull_policies_belong_to_an_entry() {
        let r = rules(json!([{"action": "allow", "registries": [
            {"exp": "^quay\\.io/", "pullPolicies": ["always"]}, {"exp": "."}]}]));
        let allowed = r.entry(at(0, 0)).and_then(RegistryPattern::pull_policies);
        assert_eq!(
            allowed.map(ToString::to_string).as_deref(),
            Some("[Always]")
        );
        assert!(
            r.entry(at(0, 1))
                .and_then(RegistryPattern::pull_policies)
                .is_none()
        );
    }

    #[rstest]
    #[case(json!([]), "rules: must not be empty")]
    #[case(json!([{"registries": []}]), "rules[0].registries: must not be empty")]
    #[case(json!([{}]), "rules[0]: missing field `registries`")]
    #[case(json!([{"action": "permit", "registries": [{"exp": "a"}]}]), "rules[0].action: \"permit\" is not one of allow, deny, audit")]
    #[case(json!([{"action": "Allow", "registries": [{"exp": "a"}]}]), "rules[0].action: \"Allow\" is not one of")]
    #[case(json!([{"targets": ["pods"], "registries": [{"exp": "a"}]}]), "rules[0].targets[0]: \"pods\" is not one of pod/initcontainers, pod/containers, pod/ephemeralcontainers, pod/volumes")]
    #[case(json!([{"registries": [{"exp": "a"}, {}]}]), "rules[0].registries[1]: give exact, exp, or both")]
    #[case(json!([{"registries": [{"negate": true}]}]), "rules[0].registries[0]: give exact, exp, or both")]
    #[case(json!([{"registries": [{"exact": []}]}]), "rules[0].registries[0].exact: must not be empty")]
    #[case(json!([{"registries": [{"exact": ["a", ""]}]}]), "rules[0].registries[0].exact[1]: must not be empty")]
    #[case(json!([{"registries": [{"exact": [" a"]}]}]), "rules[0].registries[0].exact[0]: \" a\" has leading or trailing whitespace")]
    #[case(json!([{"registries": [{"exp": "("}]}]), "rules[0].registries[0].exp: invalid regex \"(\"")]
    #[case(json!([{"registries": [{"exp": "a)|(b"}]}]), "rules[0].registries[0].exp: invalid regex \"a)|(b\"")]
    #[case(json!([{"registries": [{"exp": "  "}]}]), "rules[0].registries[0].exp: must not be empty")]
    #[case(json!([{"registries": [{"exp": "a", "pullPolicies": ["Sometimes"]}]}]), "rules[0].registries[0].pullPolicies[0]: \"Sometimes\" is not a pull policy")]
    #[case(json!([{"registries": [{"exp": "a", "pullPolicies": []}]}]), "rules[0].registries[0].pullPolicies: must not be empty")]
    #[case(json!([{"registries": [{"exp": "a", "url": "b"}]}]), "rules[0].registries[0].url: unknown field `url`")]
    #[case(json!([{"registries": [{"exp": null}]}]), "rules[0].registries[0].exp: invalid type: null")]
    #[case(json!([{"registries": [{"exp": "a", "negate": "yes"}]}]), "rules[0].registries[0].negate: invalid type: string")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = RegistryRules::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }
}
