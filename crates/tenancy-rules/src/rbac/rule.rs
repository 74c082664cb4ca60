//! One RBAC `PolicyRule`: read strictly from an object or decoded from settings, and what it
//! grants. A rule grants (group g, resource r, verb v) when its verbs hold v or `*`, its
//! apiGroups g or `*`, and its resources r, `*`, or `*/<sub>` for r = `<x>/<sub>`.
//! `resourceNames` narrow a grant but never remove it.

use std::collections::HashSet;

use serde::Deserialize;

use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::json::At;
use policy_decode::names::NameList;
use policy_decode::path::FieldPath;
use serde_json::Value;

/// A rule as written in settings (`ceiling`), decoded strictly. Each list is one buffer
/// ([`NameList`]): a ceiling of 10,000 rules is decoded for every request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyRule {
    /// API groups (`""` is the core group).
    #[serde(default)]
    pub api_groups: NameList,
    /// Resources, `<resource>/<subresource>` for subresources.
    #[serde(default)]
    pub resources: NameList,
    /// Verbs.
    #[serde(default)]
    pub verbs: NameList,
    /// Object names the rule is narrowed to (empty = every object).
    #[serde(default)]
    pub resource_names: NameList,
    /// Non-resource URLs (`/healthz`, `/api/*`).
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: NameList,
}

impl PolicyRule {
    /// The rule as a view.
    pub fn view(&self) -> RuleView<'_> {
        fn strs(v: &NameList) -> Vec<&str> {
            v.iter().collect()
        }
        RuleView {
            api_groups: strs(&self.api_groups),
            resources: strs(&self.resources),
            verbs: strs(&self.verbs),
            resource_names: strs(&self.resource_names),
            non_resource_urls: strs(&self.non_resource_urls),
        }
    }

    /// Refuses a rule that grants nothing or mixes resources and non-resource URLs (as the
    /// API server refuses them); `field` is its settings path.
    pub fn check(&self, field: &str) -> Result<(), SettingsError> {
        if self.verbs.is_empty() {
            return Err(SettingsError::new(
                format!("{field}.verbs"),
                "must not be empty",
            ));
        }
        let resource_rule = !(self.api_groups.is_empty() && self.resources.is_empty());
        match (resource_rule, self.non_resource_urls.is_empty()) {
            (true, false) => Err(SettingsError::new(
                field,
                "a rule grants either resources or nonResourceURLs, not both",
            )),
            (false, true) => Err(SettingsError::new(
                field,
                "must name apiGroups and resources, or nonResourceURLs",
            )),
            (true, true) if self.api_groups.is_empty() || self.resources.is_empty() => Err(
                SettingsError::new(field, "must name both apiGroups and resources"),
            ),
            _ => Ok(()),
        }
    }
}

/// A rule's lists, borrowed from an object or from settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleView<'a> {
    /// `apiGroups`.
    pub api_groups: Vec<&'a str>,
    /// `resources`.
    pub resources: Vec<&'a str>,
    /// `verbs`.
    pub verbs: Vec<&'a str>,
    /// `resourceNames`.
    pub resource_names: Vec<&'a str>,
    /// `nonResourceURLs`.
    pub non_resource_urls: Vec<&'a str>,
}

impl<'a> RuleView<'a> {
    /// Reads the rule at `at` (an object of string lists); another type is malformed (400)
    /// naming its path.
    pub fn read(at: &At<'a>) -> Result<Self, PolicyError> {
        Self::read_value(at.value, &|| at.path.clone())
    }

    /// Reads the rule `value`, whose path `at` gives (built only for an error: a 1 MiB role
    /// has thousands of rules).
    pub fn read_value(value: &'a Value, at: &dyn Fn() -> FieldPath) -> Result<Self, PolicyError> {
        let map = value
            .as_object()
            .ok_or_else(|| PolicyError::malformed(&at(), "expected an object"))?;
        let list = |name: &str| -> Result<Vec<&'a str>, PolicyError> {
            let items = match map.get(name) {
                None | Some(Value::Null) => return Ok(Vec::new()),
                Some(Value::Array(items)) => items,
                Some(_) => {
                    return Err(PolicyError::malformed(&at().field(name), "expected a list"));
                }
            };
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().ok_or_else(|| {
                        PolicyError::malformed(&at().field(name).index(i), "expected a string")
                    })
                })
                .collect()
        };
        Ok(RuleView {
            api_groups: list("apiGroups")?,
            resources: list("resources")?,
            verbs: list("verbs")?,
            resource_names: list("resourceNames")?,
            non_resource_urls: list("nonResourceURLs")?,
        })
    }

    /// Whether any of verbs, apiGroups or resources holds a wildcard (`*` or `*/<sub>`); the
    /// first one found, with the list it is in.
    pub fn wildcard(&self) -> Option<(&'static str, &'a str)> {
        let lists: [(&'static str, &Vec<&'a str>); 3] = [
            ("verbs", &self.verbs),
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
        ];
        lists.into_iter().find_map(|(name, list)| {
            list.iter()
                .find(|v| **v == "*" || v.starts_with("*/"))
                .map(|v| (name, *v))
        })
    }

    /// The lists as sets, for testing what the rule grants.
    pub fn sets(&self) -> RuleSets<'_> {
        RuleSets {
            api_groups: Members::of(&self.api_groups),
            resources: Members::of(&self.resources),
            verbs: Members::of(&self.verbs),
        }
    }
}

/// A list tested for membership: compared in place when short (most rules list a few
/// values), hashed when long.
#[derive(Clone, Debug)]
enum Members<'a> {
    Few(&'a [&'a str]),
    Many(HashSet<&'a str>),
}

impl<'a> Members<'a> {
    fn of(list: &'a [&'a str]) -> Self {
        match list.len() <= 8 {
            true => Members::Few(list),
            false => Members::Many(list.iter().copied().collect()),
        }
    }

    fn contains(&self, value: &str) -> bool {
        match self {
            Members::Few(list) => list.contains(&value),
            Members::Many(set) => set.contains(value),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Members::Few(list) => list.is_empty(),
            Members::Many(set) => set.is_empty(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = &&'a str> + '_> {
        match self {
            Members::Few(list) => Box::new(list.iter()),
            Members::Many(set) => Box::new(set.iter()),
        }
    }
}

/// A rule's apiGroups, resources and verbs, for testing what it grants.
#[derive(Clone, Debug)]
pub struct RuleSets<'a> {
    api_groups: Members<'a>,
    resources: Members<'a>,
    verbs: Members<'a>,
}

impl RuleSets<'_> {
    /// Whether the rule grants verb `v` (`*` asks for any verb).
    fn verb(&self, v: &str) -> bool {
        match v {
            "*" => !self.verbs.is_empty(),
            _ => self.verbs.contains(v) || self.verbs.contains("*"),
        }
    }

    /// Whether the rule grants API group `g` (`*` asks for any group).
    fn group(&self, g: &str) -> bool {
        match g {
            "*" => !self.api_groups.is_empty(),
            _ => self.api_groups.contains(g) || self.api_groups.contains("*"),
        }
    }

    /// Whether the rule grants resource `r`: `*` asks for any resource, `<x>/*` for any
    /// subresource of `<x>`.
    fn resource(&self, r: &str) -> bool {
        if self.resources.contains("*") || self.resources.contains(r) {
            return true;
        }
        if r == "*" {
            return !self.resources.is_empty();
        }
        match r.split_once('/') {
            Some((parent, "*")) => {
                let prefix = format!("{parent}/");
                self.resources
                    .iter()
                    .any(|g| g.starts_with(&prefix) || g.starts_with("*/"))
            }
            Some((_, sub)) => match &self.resources {
                Members::Few(list) => list.iter().any(|g| g.strip_prefix("*/") == Some(sub)),
                Members::Many(set) => set.contains(format!("*/{sub}").as_str()),
            },
            None => false,
        }
    }
}

/// A set of permissions (API groups × resources × verbs) that rules may not grant; `*` in a
/// list stands for any value, a resource `<x>/*` for any subresource of `<x>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Permissions {
    /// API groups.
    pub api_groups: Vec<String>,
    /// Resources.
    pub resources: Vec<String>,
    /// Verbs.
    pub verbs: Vec<String>,
}

impl Permissions {
    /// A permission set from literal lists.
    pub fn of(api_groups: &[&str], resources: &[&str], verbs: &[&str]) -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        Permissions {
            api_groups: owned(api_groups),
            resources: owned(resources),
            verbs: owned(verbs),
        }
    }

    /// Refuses empty lists; `field` is its settings path.
    pub fn check(&self, field: &str) -> Result<(), SettingsError> {
        for (name, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("verbs", &self.verbs),
        ] {
            if list.is_empty() {
                return Err(SettingsError::new(
                    format!("{field}.{name}"),
                    "must not be empty (write \"*\" for any)",
                ));
            }
        }
        Ok(())
    }

    /// The first verb and the first resource of this set (in settings order) that `rule`
    /// grants, with the API group, when it grants any permission of the set.
    pub fn granted_by<'p>(&'p self, rule: &RuleSets<'_>) -> Option<(&'p str, &'p str, &'p str)> {
        let group = self.api_groups.iter().find(|g| rule.group(g))?;
        let resource = self.resources.iter().find(|r| rule.resource(r))?;
        let verb = self.verbs.iter().find(|v| rule.verb(v))?;
        Some((group, resource, verb))
    }
}

/// `"nodes"` for the core group, `"deployments" in API group "apps"` otherwise (`quoted`
/// quotes the resource).
pub fn describe_resource(group: &str, resource: &str, quoted: bool) -> String {
    let r = match quoted {
        true => format!("{resource:?}"),
        false => resource.to_owned(),
    };
    match group {
        "" => r,
        g => format!("{r} in API group {g:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(v: &Value) -> RuleView<'_> {
        RuleView::read(&At::new(v, FieldPath::dotted("rules[0]"))).unwrap()
    }

    fn granted(rule: Value, set: &Permissions) -> Option<(String, String, String)> {
        let v = view(&rule);
        set.granted_by(&v.sets())
            .map(|(g, r, v)| (g.to_owned(), r.to_owned(), v.to_owned()))
    }

    #[test]
    fn grants_follow_the_authorizer() {
        let bind = Permissions::of(
            &["rbac.authorization.k8s.io"],
            &["roles", "clusterroles"],
            &["escalate", "bind"],
        );
        // verbs * grants escalate (the first forbidden verb granted is named)
        let r = granted(
            json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["*"]}),
            &bind,
        );
        assert_eq!(r.unwrap().2, "escalate");
        // apiGroups * and resources * too
        assert!(
            granted(
                json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["bind"]}),
                &bind
            )
            .is_some()
        );
        // another group grants nothing of the set
        assert!(
            granted(
                json!({"apiGroups": [""], "resources": ["roles"], "verbs": ["bind"]}),
                &bind
            )
            .is_none()
        );
        // resourceNames narrow but do not remove the grant
        assert!(granted(json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["bind"], "resourceNames": ["x"]}), &bind).is_some());
        // */scale grants deployments/scale
        let scale = Permissions::of(&["apps"], &["deployments/scale"], &["update"]);
        assert!(
            granted(
                json!({"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]}),
                &scale
            )
            .is_some()
        );
        assert!(
            granted(
                json!({"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["update"]}),
                &scale
            )
            .is_none()
        );
        // userextras/* is any extra; */scopes is one of them
        let extras = Permissions::of(
            &["authentication.k8s.io"],
            &["userextras/*"],
            &["impersonate"],
        );
        assert!(granted(json!({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"], "verbs": ["impersonate"]}), &extras).is_some());
        assert!(granted(json!({"apiGroups": ["authentication.k8s.io"], "resources": ["*/scopes"], "verbs": ["impersonate"]}), &extras).is_some());
        assert!(granted(json!({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras"], "verbs": ["impersonate"]}), &extras).is_none());
        // a set with * asks for anything
        let any = Permissions::of(&["*"], &["secrets"], &["*"]);
        assert!(
            granted(
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
                &any
            )
            .is_some()
        );
        assert!(
            granted(
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": []}),
                &any
            )
            .is_none()
        );
    }

    #[test]
    fn wildcards_and_malformed_rules() {
        assert_eq!(
            view(&json!({"resources": ["pods", "*/scale"]})).wildcard(),
            Some(("resources", "*/scale"))
        );
        assert_eq!(
            view(&json!({"verbs": ["get"], "apiGroups": ["*"]})).wildcard(),
            Some(("apiGroups", "*"))
        );
        assert_eq!(
            view(&json!({"verbs": ["get"], "resources": ["pods/*"]})).wildcard(),
            None
        );
        let bad = json!({"verbs": "get"});
        let e = RuleView::read(&At::new(&bad, FieldPath::dotted("rules[2]"))).unwrap_err();
        assert!(e.to_string().contains("rules[2].verbs"), "{e}");
    }

    #[test]
    fn settings_rules_are_checked() {
        let rule = |v: Value| {
            serde_json::from_value::<PolicyRule>(v)
                .unwrap()
                .check("ceiling[0]")
        };
        assert!(rule(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]})).is_ok());
        assert!(rule(json!({"nonResourceURLs": ["/healthz"], "verbs": ["get"]})).is_ok());
        assert_eq!(
            rule(json!({"apiGroups": [""], "resources": ["pods"]}))
                .unwrap_err()
                .to_string(),
            "ceiling[0].verbs: must not be empty"
        );
        assert!(rule(json!({"apiGroups": [""], "resources": ["pods"], "nonResourceURLs": ["/x"], "verbs": ["get"]})).is_err());
        assert!(rule(json!({"resources": ["pods"], "verbs": ["get"]})).is_err());
        assert!(rule(json!({"verbs": ["get"]})).is_err());
        assert!(serde_json::from_value::<PolicyRule>(json!({"verb": ["get"]})).is_err());
    }
}
