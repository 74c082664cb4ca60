//! Settings of container-registry-policy (README "Settings"): the allow/deny lists, or
//! Capsule v0.14's `rules` alone.

use kube_values::image::ImageRef;
use kube_values::pull_policy::PullPolicies;
use policy_decode::SettingsError;
use policy_decode::matcher::{FullMatch, OneOrMany};
use policy_decode::names::NameList;
use policy_decode::settings::Validated;
use serde::Deserialize;
use tenancy_rules::registry::{RegistryEntry, RegistryList};

use crate::rules::{RawRule, RegistryRules};

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    allowed: Option<NameList>,
    #[serde(default)]
    allowed_regex: Option<OneOrMany>,
    #[serde(default)]
    allowed_repository_regex: Option<OneOrMany>,
    #[serde(default)]
    denied: Option<NameList>,
    #[serde(default)]
    denied_regex: Option<OneOrMany>,
    #[serde(default)]
    denied_repository_regex: Option<OneOrMany>,
    #[serde(default)]
    require_fully_qualified: Option<bool>,
    #[serde(default)]
    pull_policies: Option<Vec<RawPullPolicyRule>>,
    #[serde(default)]
    rules: Option<Vec<RawRule>>,
}

impl RawSettings {
    /// The list-form keys written, in settings order.
    fn list_keys(&self) -> Vec<&'static str> {
        [
            ("allowed", self.allowed.is_some()),
            ("allowedRegex", self.allowed_regex.is_some()),
            (
                "allowedRepositoryRegex",
                self.allowed_repository_regex.is_some(),
            ),
            ("denied", self.denied.is_some()),
            ("deniedRegex", self.denied_regex.is_some()),
            (
                "deniedRepositoryRegex",
                self.denied_repository_regex.is_some(),
            ),
            (
                "requireFullyQualified",
                self.require_fully_qualified.is_some(),
            ),
            ("pullPolicies", self.pull_policies.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, written)| written.then_some(key))
        .collect()
    }
}

/// One `pullPolicies` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPullPolicyRule {
    #[serde(default)]
    registry: Option<String>,
    #[serde(default)]
    registry_regex: Option<String>,
    allowed: Vec<String>,
}

/// What a `pullPolicies` entry applies to.
#[derive(Clone, Debug)]
pub enum RuleScope {
    /// Images matching the entry (a host, or a host and repository prefix).
    Registry(RegistryEntry),
    /// Images whose registry host fully matches the regex.
    RegistryRegex(FullMatch),
}

/// One `pullPolicies` entry: the pull policies allowed for the images it applies to
/// (README rule 6).
#[derive(Clone, Debug)]
pub struct PullPolicyRule {
    /// What it applies to.
    pub scope: RuleScope,
    /// The allowed effective pull policies.
    pub allowed: PullPolicies,
}

impl PullPolicyRule {
    /// How the rule names what it applies to in a message: `registry "registry.acme.io"`,
    /// `registry regex "registry\..*"`.
    pub fn describe(&self) -> String {
        match &self.scope {
            RuleScope::Registry(e) => format!("registry {:?}", e.to_string()),
            RuleScope::RegistryRegex(r) => format!("registry regex {:?}", r.pattern()),
        }
    }
}

/// The `pullPolicies` entries, indexed so that finding the first one that applies to an
/// image costs set lookups plus the regexes before it, never a scan of every entry.
#[derive(Clone, Debug, Default)]
pub struct PullPolicyRules {
    rules: Vec<PullPolicyRule>,
    /// The `registry` entries, and the rule index of each.
    entries: RegistryList,
    entry_rule: Vec<usize>,
    /// The rule indices of the `registryRegex` entries, in order.
    regex_rules: Vec<usize>,
}

impl PullPolicyRules {
    fn build(raw: Vec<RawPullPolicyRule>) -> Result<Self, SettingsError> {
        let mut out = PullPolicyRules::default();
        for (i, rule) in raw.into_iter().enumerate() {
            let path = format!("pullPolicies[{i}]");
            let allowed = PullPolicies::parse(&format!("{path}.allowed"), &rule.allowed)?;
            let scope = match (rule.registry, rule.registry_regex) {
                (Some(r), None) => {
                    let entry = RegistryEntry::parse(&r)
                        .map_err(|e| SettingsError::new(format!("{path}.registry"), e))?;
                    out.entries.push(&entry);
                    out.entry_rule.push(i);
                    RuleScope::Registry(entry)
                }
                (None, Some(re)) => {
                    out.regex_rules.push(i);
                    RuleScope::RegistryRegex(
                        FullMatch::new(&re)
                            .map_err(|e| SettingsError::new(format!("{path}.registryRegex"), e))?,
                    )
                }
                _ => {
                    return Err(SettingsError::new(
                        path,
                        "give exactly one of registry and registryRegex",
                    ));
                }
            };
            out.rules.push(PullPolicyRule { scope, allowed });
        }
        Ok(out)
    }

    /// The first entry (in settings order) that applies to `image`.
    pub fn rule_for(&self, image: &ImageRef) -> Option<&PullPolicyRule> {
        let mut best = self
            .entries
            .entry_match(image)
            .and_then(|i| self.entry_rule.get(i).copied());
        for &r in &self.regex_rules {
            if best.is_some_and(|b| b < r) {
                break;
            }
            if let Some(PullPolicyRule {
                scope: RuleScope::RegistryRegex(re),
                ..
            }) = self.rules.get(r)
                && re.is_match(&image.registry)
            {
                best = Some(r);
                break;
            }
        }
        best.and_then(|b| self.rules.get(b))
    }
}

/// Validated settings: one of two exclusive forms.
#[derive(Clone, Debug)]
pub enum Settings {
    /// The allow/deny lists, fully-qualified requirement and per-registry pull policies
    /// (README rules 1–6); boxed, as the larger form.
    Lists(Box<ListSettings>),
    /// Capsule v0.14's registry rules (README "Capsule v0.14 rules").
    Rules(RegistryRules),
}

/// Validated list-form settings.
#[derive(Clone, Debug)]
pub struct ListSettings {
    /// The allow-list; `None` when no `allowed*` key is written (every registry allowed).
    pub allowed: Option<RegistryList>,
    /// The deny-list (empty: nothing denied).
    pub denied: RegistryList,
    /// Whether images must name their registry (README rule 2).
    pub require_fully_qualified: bool,
    /// Per-registry pull policies (README rule 6).
    pub pull_policies: PullPolicyRules,
}

fn strings(raw: Option<OneOrMany>) -> Vec<String> {
    raw.map(OneOrMany::into_vec).unwrap_or_default()
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(mut raw: RawSettings) -> Result<Self, SettingsError> {
        let Some(rules) = raw.rules.take() else {
            return ListSettings::try_from(raw).map(|lists| Settings::Lists(Box::new(lists)));
        };
        let others = raw.list_keys();
        if !others.is_empty() {
            return Err(SettingsError::new(
                "rules",
                format!(
                    "cannot be combined with {}; give either rules alone or the list settings",
                    others.join(", ")
                ),
            ));
        }
        RegistryRules::build(rules).map(Settings::Rules)
    }
}

impl TryFrom<RawSettings> for ListSettings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let allow_list = raw.allowed.is_some()
            || raw.allowed_regex.is_some()
            || raw.allowed_repository_regex.is_some();
        if raw.list_keys().is_empty() {
            return Err(SettingsError::new(
                "",
                "give at least one of allowed, allowedRegex, allowedRepositoryRegex, denied, deniedRegex, deniedRepositoryRegex, requireFullyQualified, pullPolicies (or rules alone)",
            ));
        }
        let allowed = if allow_list {
            Some(RegistryList::build(
                "allowed",
                raw.allowed.unwrap_or_default(),
                &strings(raw.allowed_regex),
                &strings(raw.allowed_repository_regex),
            )?)
        } else {
            None
        };
        let denied = RegistryList::build(
            "denied",
            raw.denied.unwrap_or_default(),
            &strings(raw.denied_regex),
            &strings(raw.denied_repository_regex),
        )?;
        Ok(ListSettings {
            allowed,
            denied,
            require_fully_qualified: raw.require_fully_qualified.unwrap_or(false),
            pull_policies: PullPolicyRules::build(raw.pull_policies.unwrap_or_default())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::settings::parse;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn settings(raw: &Value) -> Result<Settings, SettingsError> {
        parse::<RawSettings, Settings>(raw)
    }

    /// The list-form settings of `raw`, which must be valid.
    fn lists(raw: Value) -> ListSettings {
        match settings(&raw) {
            Ok(Settings::Lists(lists)) => *lists,
            other => panic!("{raw} gave {other:?}"),
        }
    }

    #[rstest]
    #[case(json!({}), "give at least one of allowed")]
    #[case(json!(null), "give at least one of allowed")]
    #[case(json!({"allowed": null}), "allowed: invalid type: null")]
    #[case(json!({"allowed": ["https://docker.io"]}), "allowed[0]: \"https://docker.io\" has a scheme")]
    #[case(json!({"allowed": ["docker.io/library/nginx:1.25"]}), "allowed[0]: \"docker.io/library/nginx:1.25\" has a tag")]
    #[case(json!({"allowed": ["quay.io/Acme"]}), "allowed[0]: \"quay.io/Acme\": repository name must be lowercase")]
    #[case(json!({"allowed": ["library"]}), "allowed[0]: \"library\" is not a registry host")]
    #[case(json!({"allowed": ["docker.io", "DOCKER.IO"]}), "allowed[1]: docker.io is listed twice")]
    #[case(json!({"allowedRegex": "("}), "allowedRegex[0]: invalid regex \"(\"")]
    #[case(json!({"deniedRepositoryRegex": ["ok", "a)|(b"]}), "deniedRepositoryRegex[1]: invalid regex")]
    #[case(json!({"denied": ["quay.io@sha256:00"]}), "denied[0]: \"quay.io@sha256:00\" has a digest")]
    #[case(json!({"requireFullyQualified": "yes"}), "requireFullyQualified: invalid type: string")]
    #[case(json!({"pullPolicies": [{"allowed": ["Always"]}]}), "pullPolicies[0]: give exactly one of registry and registryRegex")]
    #[case(json!({"pullPolicies": [{"registry": "a.io", "registryRegex": "a", "allowed": ["Always"]}]}), "pullPolicies[0]: give exactly one")]
    #[case(json!({"pullPolicies": [{"registry": "a.io", "allowed": []}]}), "pullPolicies[0].allowed: must not be empty")]
    #[case(json!({"pullPolicies": [{"registry": "a.io", "allowed": ["Sometimes"]}]}), "pullPolicies[0].allowed[0]: \"Sometimes\" is not a pull policy")]
    #[case(json!({"pullPolicies": [{"registry": "a.io"}]}), "pullPolicies[0]: missing field `allowed`")]
    #[case(json!({"pullPolicies": [{"registry": "https://a.io", "allowed": ["Always"]}]}), "pullPolicies[0].registry: \"https://a.io\" has a scheme")]
    #[case(json!({"pullPolicies": [{"registryRegex": "(", "allowed": ["Always"]}]}), "pullPolicies[0].registryRegex: invalid regex")]
    #[case(json!({"registries": ["a.io"]}), "registries: unknown field `registries`")]
    #[case(json!({"rules": []}), "rules: must not be empty")]
    #[case(json!({"rules": null}), "rules: invalid type: null")]
    #[case(json!({"rules": {"action": "allow"}}), "rules: invalid type: map")]
    #[case(json!({"rules": [{"registries": [{"exp": "a"}]}], "allowed": ["docker.io"]}), "rules: cannot be combined with allowed; give either rules alone or the list settings")]
    #[case(json!({"rules": [{"registries": [{"exp": "a"}]}], "requireFullyQualified": false, "pullPolicies": []}), "rules: cannot be combined with requireFullyQualified, pullPolicies;")]
    #[case(json!({"rules": [{"registries": [{"exp": "("}]}]}), "rules[0].registries[0].exp: invalid regex \"(\"")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = settings(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn allow_list_is_active_when_any_allowed_key_is_written() {
        let s = lists(json!({"allowed": []}));
        assert!(s.allowed.is_some_and(|a| a.is_empty()));
        let s = lists(json!({"denied": ["quay.io"]}));
        assert!(s.allowed.is_none());
        let s = lists(json!({"allowedRepositoryRegex": "quay\\.io/acme/.*"}));
        assert!(s.allowed.is_some());
        let s = lists(json!({"requireFullyQualified": false}));
        assert!(s.allowed.is_none() && !s.require_fully_qualified);
    }

    #[test]
    fn rules_alone_are_the_rules_form() {
        let s = settings(
            &json!({"rules": [{"action": "allow", "registries": [{"exp": "^quay\\.io/"}]}]}),
        );
        assert!(matches!(s, Ok(Settings::Rules(_))), "{s:?}");
    }

    #[test]
    fn the_first_pull_policy_rule_in_settings_order_applies() {
        let s = lists(json!({"pullPolicies": [
            {"registryRegex": "registry\\..*", "allowed": ["IfNotPresent"]},
            {"registry": "registry.acme.io", "allowed": ["Always"]},
            {"registry": "ghcr.io/acme", "allowed": ["Always"]},
            {"registryRegex": "ghcr\\.io", "allowed": ["Never"]}]}));
        let rule = |i: &str| {
            s.pull_policies
                .rule_for(&ImageRef::parse(i).unwrap())
                .map(|r| (r.describe(), r.allowed.to_string()))
        };
        assert_eq!(
            rule("registry.acme.io/app:1"),
            Some((
                "registry regex \"registry\\\\..*\"".into(),
                "[IfNotPresent]".into()
            ))
        );
        assert_eq!(
            rule("ghcr.io/acme/app"),
            Some(("registry \"ghcr.io/acme\"".into(), "[Always]".into()))
        );
        assert_eq!(
            rule("ghcr.io/other/app"),
            Some(("registry regex \"ghcr\\\\.io\"".into(), "[Never]".into()))
        );
        assert_eq!(rule("nginx"), None);
    }
}
