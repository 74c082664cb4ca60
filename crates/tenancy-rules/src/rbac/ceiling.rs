//! A ceiling of rules, indexed so that each atomic permission of a role is judged with a
//! constant number of lookups, and coverage as the API server's escalation check decides:
//! a role's rule is broken into atomic values (a literal `*` is a value); a ceiling rule
//! covers one when its verbs hold `*` or the verb, its apiGroups `*` or the group, its
//! resources `*`, the resource or `*/<sub>`, and its `resourceNames` are empty or hold the
//! name (an atom without a name needs a ceiling rule without names). A non-resource URL is
//! covered by an equal entry, or by an entry ending in `*` that prefixes it.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::rule::{PolicyRule, RuleView, describe_resource};
use policy_decode::error::SettingsError;
use policy_decode::names::NameList;

/// The most (API group, resource) pairs a ceiling may index: a ceiling is a handful of rules;
/// a larger one is refused in settings rather than indexed on every request.
pub const MAX_CEILING_PAIRS: usize = 100_000;

/// The most atomic permissions (API group × resource × verb × resource name, and URL × verb)
/// judged per object; a role beyond it is refused as too large to judge.
pub const MAX_ATOMS: usize = 100_000;

/// The most uncovered (group, resource) pairs a rule reports one by one; the rest are counted.
const REPORTED_PER_RULE: usize = 20;

/// The verbs every standard request uses, kept as bits (a ceiling rule lists them again and
/// again; sets of strings per entry would dominate the cost of indexing it).
pub const STANDARD_VERBS: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The bit of a standard verb.
fn standard_bit(verb: &str) -> Option<u8> {
    STANDARD_VERBS
        .iter()
        .position(|v| *v == verb)
        .map(|i| 1u8 << i)
}

/// FNV-1a over the bytes of a key: the index's keys are the operator's settings, a role's
/// values are only looked up, and SipHash would cost more than the rest of a lookup.
#[derive(Clone, Copy, Debug)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A map keyed by strings, hashed with [`Fnv`].
type Map<V> = HashMap<String, V, BuildHasherDefault<Fnv>>;

/// Verbs a ceiling entry covers.
#[derive(Clone, Debug, Default)]
struct Verbs {
    all: bool,
    standard: u8,
    other: HashSet<String>,
}

impl Verbs {
    fn add(&mut self, verbs: &NameList) {
        for v in verbs.iter() {
            match (v, standard_bit(v)) {
                ("*", _) => self.all = true,
                (_, Some(bit)) => self.standard |= bit,
                (_, None) => {
                    self.other.insert(v.to_owned());
                }
            }
        }
    }

    fn covers(&self, verb: &str) -> bool {
        self.all
            || match standard_bit(verb) {
                Some(bit) => self.standard & bit != 0,
                None => self.other.contains(verb),
            }
    }
}

/// What the ceiling grants on one (group, resource) key: verbs on every object, and verbs on
/// named objects only.
#[derive(Clone, Debug, Default)]
struct Entry {
    unnamed: Verbs,
    named: Map<Verbs>,
}

impl Entry {
    fn add(&mut self, rule: &PolicyRule) {
        match rule.resource_names.is_empty() {
            true => self.unnamed.add(&rule.verbs),
            false => {
                for name in rule.resource_names.iter() {
                    self.named
                        .entry(name.to_owned())
                        .or_default()
                        .add(&rule.verbs);
                }
            }
        }
    }

    fn covers(&self, verb: &str, name: Option<&str>) -> bool {
        self.unnamed.covers(verb)
            || name
                .and_then(|n| self.named.get(n))
                .is_some_and(|v| v.covers(verb))
    }
}

/// The ceiling's entries of one API group (or of `*`): by resource, by subresource for
/// `*/<sub>` entries, and the `*` entry.
#[derive(Clone, Debug, Default)]
struct Group {
    resources: Map<Entry>,
    subresources: Map<Entry>,
    any: Option<Entry>,
}

impl Group {
    fn add(&mut self, resource: &str, rule: &PolicyRule) {
        let entry = match (resource, resource.strip_prefix("*/")) {
            ("*", _) => self.any.get_or_insert_with(Entry::default),
            (_, Some(sub)) => entry_of(&mut self.subresources, sub),
            _ => entry_of(&mut self.resources, resource),
        };
        entry.add(rule);
    }

    /// The entries that may cover `resource`: its own, `*`, and `*/<sub>`.
    fn entries(&self, resource: &str) -> [Option<&Entry>; 3] {
        [
            self.resources.get(resource),
            self.any.as_ref(),
            resource
                .split_once('/')
                .and_then(|(_, sub)| self.subresources.get(sub)),
        ]
    }
}

/// The entry of `key`, created empty when new.
fn entry_of<'m, T: Default>(map: &'m mut Map<T>, key: &str) -> &'m mut T {
    map.entry(key.to_owned()).or_default()
}

/// The ceiling, indexed by API group (`*` included) and resource (`*` and `*/<sub>`
/// included), and by non-resource URL (exact, and prefixes of entries ending in `*`).
#[derive(Clone, Debug, Default)]
struct Index {
    groups: Map<Group>,
    urls: Map<Verbs>,
    url_prefixes: Map<Verbs>,
    /// Distinct prefix lengths, to look a URL's prefixes up instead of trying each entry.
    prefix_lengths: BTreeSet<usize>,
}

/// The ceiling: its rules, and their index, built the first time a request judges more
/// than `SCANNED_ATOMS` atomic permissions (a small role is compared with the rules
/// directly, so a large ceiling costs a small role no index).
#[derive(Clone, Debug, Default)]
pub struct Ceiling {
    rules: Vec<PolicyRule>,
    index: OnceCell<Index>,
    scanned: Cell<usize>,
}

/// Atomic permissions per request compared with the ceiling's rules one by one before the
/// index is built.
const SCANNED_ATOMS: usize = 64;

impl Ceiling {
    /// The ceiling of `rules` (settings `field`); refuses a rule that grants nothing and a
    /// ceiling over [`MAX_CEILING_PAIRS`] pairs.
    pub fn build(rules: Vec<PolicyRule>, field: &str) -> Result<Self, SettingsError> {
        let mut pairs = 0usize;
        for (i, rule) in rules.iter().enumerate() {
            if !policy_decode::settings::is_reread() {
                rule.check(&format!("{field}[{i}]"))?;
            }
            pairs =
                pairs.saturating_add(rule.api_groups.len().saturating_mul(rule.resources.len()));
            if pairs > MAX_CEILING_PAIRS {
                return Err(SettingsError::new(
                    field,
                    format!(
                        "more than {MAX_CEILING_PAIRS} (API group, resource) pairs; a ceiling is a handful of rules"
                    ),
                ));
            }
        }
        Ok(Ceiling {
            rules,
            index: OnceCell::new(),
            scanned: Cell::new(0),
        })
    }

    /// The index, built on first use.
    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut index = Index::default();
            for rule in &self.rules {
                index.add(rule);
            }
            index
        })
    }

    /// The index when `atoms` more atomic permissions are to be judged and the rules have
    /// been compared one by one often enough this request; `None`: compare the rules.
    fn index_for(&self, atoms: usize) -> Option<&Index> {
        if self.index.get().is_none() {
            let scanned = self.scanned.get().saturating_add(atoms);
            if scanned <= SCANNED_ATOMS {
                self.scanned.set(scanned);
                return None;
            }
        }
        Some(self.index())
    }
}

impl Index {
    fn add(&mut self, rule: &PolicyRule) {
        for url in rule.non_resource_urls.iter() {
            let (map, key) = match url.strip_suffix('*') {
                Some(prefix) => {
                    self.prefix_lengths.insert(prefix.len());
                    (&mut self.url_prefixes, prefix)
                }
                None => (&mut self.urls, url),
            };
            entry_of(map, key).add(&rule.verbs);
        }
        for group in rule.api_groups.iter() {
            let group = entry_of(&mut self.groups, group);
            for resource in rule.resources.iter() {
                group.add(resource, rule);
            }
        }
    }

    /// Whether the index covers `verb` on `resource` of `group` (on object `name`).
    #[cfg(test)]
    fn covers(&self, group: &str, resource: &str, verb: &str, name: Option<&str>) -> bool {
        self.entries(group, resource)
            .iter()
            .flatten()
            .any(|e| e.covers(verb, name))
    }

    /// The entries that may cover `resource` of `group` (found once per pair, then asked
    /// for each verb and name).
    fn entries(&self, group: &str, resource: &str) -> [Option<&Entry>; 6] {
        let of = |g: &str| match self.groups.get(g) {
            Some(g) => g.entries(resource),
            None => [None; 3],
        };
        let [a, b, c] = of(group);
        let [d, e, f] = match group {
            "*" => [None; 3],
            _ => of("*"),
        };
        [a, b, c, d, e, f]
    }

    /// Whether the index covers `verb` on the non-resource URL `url`.
    fn covers_url(&self, url: &str, verb: &str) -> bool {
        if self.urls.get(url).is_some_and(|v| v.covers(verb)) {
            return true;
        }
        self.prefix_lengths
            .iter()
            .take_while(|l| **l <= url.len())
            .any(|l| {
                url.get(..*l)
                    .and_then(|p| self.url_prefixes.get(p))
                    .is_some_and(|v| v.covers(verb))
            })
    }
}

impl Ceiling {
    /// The permissions of `rule` the ceiling does not cover, one entry per (group, resource,
    /// name) or URL with its uncovered verbs, in the rule's order; `budget` is the number
    /// of atoms still to be judged in this object, reduced by this rule's.
    pub fn uncovered(
        &self,
        rule: &RuleView<'_>,
        budget: &mut usize,
    ) -> Result<Vec<Uncovered>, usize> {
        let groups = distinct(&rule.api_groups);
        let resources = distinct(&rule.resources);
        let verbs = distinct(&rule.verbs);
        let names = distinct(&rule.resource_names);
        let urls = distinct(&rule.non_resource_urls);
        let atoms = groups
            .len()
            .saturating_mul(resources.len())
            .saturating_mul(verbs.len())
            .saturating_mul(names.len().max(1))
            .saturating_add(urls.len().saturating_mul(verbs.len()));
        if atoms > *budget {
            return Err(atoms);
        }
        *budget -= atoms;
        let mut out = Vec::new();
        // the names judged: each one, or no name when the rule names none
        let named = (0..names.len().max(1)).map(|i| names.get(i).copied());
        let index = self.index_for(atoms);
        for g in groups.iter() {
            for r in resources.iter() {
                let entries = index.map(|i| i.entries(g, r));
                let covers = |v: &str, n: Option<&str>| match &entries {
                    Some(entries) => entries.iter().flatten().any(|e| e.covers(v, n)),
                    None => self.rules.iter().any(|c| rule_covers(c, g, r, v, n)),
                };
                for n in named.clone() {
                    let missing: Vec<String> = verbs
                        .iter()
                        .filter(|v| !covers(v, n))
                        .map(|v| (*v).to_owned())
                        .collect();
                    if !missing.is_empty() {
                        out.push(Uncovered::Resource {
                            group: (*g).to_owned(),
                            resource: (*r).to_owned(),
                            name: n.map(str::to_owned),
                            verbs: missing,
                        });
                    }
                }
            }
        }
        for u in urls.iter() {
            let missing: Vec<String> = verbs
                .iter()
                .filter(|v| match index {
                    Some(i) => !i.covers_url(u, v),
                    None => !self.rules.iter().any(|c| rule_covers_url(c, u, v)),
                })
                .map(|v| (*v).to_owned())
                .collect();
            if !missing.is_empty() {
                out.push(Uncovered::Url {
                    url: (*u).to_owned(),
                    verbs: missing,
                });
            }
        }
        Ok(out)
    }
}

/// Whether the ceiling rule `c` covers `verb` on `resource` of `group` (on object `name`).
fn rule_covers(
    c: &PolicyRule,
    group: &str,
    resource: &str,
    verb: &str,
    name: Option<&str>,
) -> bool {
    let has = |list: &NameList, x: &str| list.iter().any(|e| e == x || e == "*");
    has(&c.verbs, verb)
        && has(&c.api_groups, group)
        && (has(&c.resources, resource)
            || resource.split_once('/').is_some_and(|(_, sub)| {
                c.resources
                    .iter()
                    .any(|e| e.strip_prefix("*/") == Some(sub))
            }))
        && (c.resource_names.is_empty()
            || name.is_some_and(|n| c.resource_names.iter().any(|e| e == n)))
}

/// Whether the ceiling rule `c` covers `verb` on the non-resource URL `url`.
fn rule_covers_url(c: &PolicyRule, url: &str, verb: &str) -> bool {
    c.verbs.iter().any(|v| v == verb || v == "*")
        && c.non_resource_urls
            .iter()
            .any(|e| match e.strip_suffix('*') {
                Some(prefix) => url.starts_with(prefix),
                None => e == url,
            })
}

/// `list` without repeats, in first-occurrence order.
fn distinct<'l, 'a>(list: &'l [&'a str]) -> Cow<'l, [&'a str]> {
    if list.len() <= SMALL {
        // most lists have no repeat: kept as they are
        let repeats = list
            .iter()
            .enumerate()
            .any(|(i, v)| list.get(..i).is_some_and(|before| before.contains(v)));
        if !repeats {
            return Cow::Borrowed(list);
        }
    }
    let mut seen = HashSet::with_capacity(list.len());
    Cow::Owned(list.iter().copied().filter(|v| seen.insert(*v)).collect())
}

/// Lists up to this length are deduplicated by comparison, longer ones with a set.
const SMALL: usize = 8;

/// Permissions a rule grants beyond the ceiling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uncovered {
    /// Verbs on a resource (of a named object).
    Resource {
        /// API group.
        group: String,
        /// Resource.
        resource: String,
        /// Object name, when the rule names objects.
        name: Option<String>,
        /// The uncovered verbs.
        verbs: Vec<String>,
    },
    /// Verbs on a non-resource URL.
    Url {
        /// The URL.
        url: String,
        /// The uncovered verbs.
        verbs: Vec<String>,
    },
}

impl Uncovered {
    /// `"get", "list" on "nodes"` (`named "x"`, `in API group "apps"`).
    pub fn describe(&self) -> String {
        let (verbs, what) = match self {
            Uncovered::Resource {
                group,
                resource,
                name,
                verbs,
            } => {
                let named = name
                    .as_ref()
                    .map(|n| format!(" named {n:?}"))
                    .unwrap_or_default();
                let res = describe_resource("", resource, true);
                let group = match group.as_str() {
                    "" => String::new(),
                    g => format!(" in API group {g:?}"),
                };
                (verbs, format!("{res}{named}{group}"))
            }
            Uncovered::Url { url, verbs } => (verbs, format!("{url:?}")),
        };
        let list: Vec<String> = verbs.iter().map(|v| format!("{v:?}")).collect();
        format!("{} on {what}", list.join(", "))
    }

    /// Whether more than one verb is uncovered.
    pub fn plural(&self) -> bool {
        match self {
            Uncovered::Resource { verbs, .. } | Uncovered::Url { verbs, .. } => verbs.len() > 1,
        }
    }
}

/// The violations of `rule` at `path` against `ceiling`: one per uncovered (group,
/// resource, name) or URL, at most `REPORTED_PER_RULE` then a count, or one saying the
/// rule is too large to judge.
pub fn ceiling_problems(ceiling: &Ceiling, rule: &RuleView<'_>, budget: &mut usize) -> Vec<String> {
    match ceiling.uncovered(rule, budget) {
        Err(atoms) => vec![format!(
            "grants {atoms} atomic permissions (API groups × resources × verbs × resource names), more than the {MAX_ATOMS} per object this policy compares with the ceiling; split the role"
        )],
        Ok(list) => {
            let mut out: Vec<String> = list
                .iter()
                .take(REPORTED_PER_RULE)
                .map(|u| {
                    let be = if u.plural() { "are" } else { "is" };
                    format!("{} {be} outside the tenant ceiling", u.describe())
                })
                .collect();
            if list.len() > REPORTED_PER_RULE {
                out.push(format!(
                    "and {} more permissions outside the tenant ceiling",
                    list.len() - REPORTED_PER_RULE
                ));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::json::At;
    use policy_decode::path::FieldPath;
    use serde_json::{Value, json};

    fn ceiling(rules: Value) -> Ceiling {
        let rules: Vec<PolicyRule> = serde_json::from_value(rules).unwrap();
        Ceiling::build(rules, "ceiling").unwrap()
    }

    fn problems(c: &Ceiling, rule: Value) -> Vec<String> {
        let view = RuleView::read(&At::new(&rule, FieldPath::dotted("rules[0]"))).unwrap();
        ceiling_problems(c, &view, &mut MAX_ATOMS.clone())
    }

    #[test]
    fn coverage_is_the_escalation_check() {
        let c = ceiling(json!([
            {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["db", "tls"]},
            {"apiGroups": ["*"], "resources": ["events"], "verbs": ["*"]},
            {"nonResourceURLs": ["/healthz", "/api/*"], "verbs": ["get"]}
        ]));
        assert!(problems(&c, json!({"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["list", "get"]})).is_empty());
        assert_eq!(
            problems(
                &c,
                json!({"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "watch"]})
            ),
            [
                "\"watch\" on \"pods\" is outside the tenant ceiling",
                "\"get\", \"watch\" on \"nodes\" are outside the tenant ceiling"
            ]
        );
        // */scale covers deployments/scale and the literal */scale
        assert!(problems(&c, json!({"apiGroups": ["apps"], "resources": ["deployments/scale", "*/scale"], "verbs": ["update"]})).is_empty());
        assert_eq!(
            problems(
                &c,
                json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update"]})
            ),
            ["\"update\" on \"deployments\" in API group \"apps\" is outside the tenant ceiling"]
        );
        // a literal * is a value: verbs ["*"] is not covered by a list of verbs
        assert_eq!(
            problems(
                &c,
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]})
            ),
            ["\"*\" on \"pods\" is outside the tenant ceiling"]
        );
        // names: a subset is covered, no names needs a ceiling without names
        assert!(problems(&c, json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["db"]})).is_empty());
        assert_eq!(
            problems(
                &c,
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["db", "other"]})
            ),
            ["\"get\" on \"secrets\" named \"other\" is outside the tenant ceiling"]
        );
        assert_eq!(
            problems(
                &c,
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})
            )
            .len(),
            1
        );
        // group and verb wildcards of the ceiling
        assert!(problems(&c, json!({"apiGroups": ["events.k8s.io", ""], "resources": ["events"], "verbs": ["*", "delete"]})).is_empty());
        // URLs: equal or prefixed by an entry ending in *
        assert!(
            problems(
                &c,
                json!({"nonResourceURLs": ["/healthz", "/api/v1", "/api/*"], "verbs": ["get"]})
            )
            .is_empty()
        );
        assert_eq!(
            problems(
                &c,
                json!({"nonResourceURLs": ["/healthz/ready", "/apis"], "verbs": ["get"]})
            ),
            [
                "\"get\" on \"/healthz/ready\" is outside the tenant ceiling",
                "\"get\" on \"/apis\" is outside the tenant ceiling"
            ]
        );
    }

    #[test]
    fn repeats_are_judged_once_and_large_rules_are_bounded() {
        let c = ceiling(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]));
        let many: Vec<String> = (0..50_000).map(|_| "get".to_owned()).collect();
        assert!(
            problems(
                &c,
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": many})
            )
            .is_empty()
        );
        let groups: Vec<String> = (0..1000).map(|i| format!("g{i}")).collect();
        let resources: Vec<String> = (0..1000).map(|i| format!("r{i}")).collect();
        let p = problems(
            &c,
            json!({"apiGroups": groups, "resources": resources, "verbs": ["get"]}),
        );
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("grants 1000000 atomic permissions"),
            "{}",
            p[0]
        );
        let resources: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
        let p = problems(
            &c,
            json!({"apiGroups": [""], "resources": resources, "verbs": ["get"]}),
        );
        assert_eq!(p.len(), REPORTED_PER_RULE + 1);
        assert_eq!(
            p[REPORTED_PER_RULE],
            "and 10 more permissions outside the tenant ceiling"
        );
    }

    #[test]
    fn comparing_the_rules_and_the_index_agree() {
        let c = ceiling(json!([
            {"apiGroups": ["", "apps"], "resources": ["pods", "pods/log", "*/scale"], "verbs": ["get", "list", "use"]},
            {"apiGroups": ["*"], "resources": ["events"], "verbs": ["*"]},
            {"apiGroups": ["batch"], "resources": ["*"], "verbs": ["delete"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["db"]},
            {"nonResourceURLs": ["/healthz", "/api/*", "*"], "verbs": ["head"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
        ]));
        let groups = ["", "apps", "batch", "*", "x.io"];
        let resources = [
            "pods",
            "pods/log",
            "deployments/scale",
            "*/scale",
            "events",
            "*",
            "secrets",
            "jobs",
        ];
        let verbs = ["get", "list", "use", "delete", "*", "patch"];
        for g in groups {
            for r in resources {
                for v in verbs {
                    for n in [None, Some("db"), Some("other")] {
                        let scanned = c.rules.iter().any(|rule| rule_covers(rule, g, r, v, n));
                        assert_eq!(scanned, c.index().covers(g, r, v, n), "{g} {r} {v} {n:?}");
                    }
                }
            }
        }
        for u in [
            "/healthz",
            "/healthz/x",
            "/api",
            "/api/v1",
            "/metrics",
            "/other",
        ] {
            for v in ["get", "head", "post"] {
                let scanned = c.rules.iter().any(|rule| rule_covers_url(rule, u, v));
                assert_eq!(scanned, c.index().covers_url(u, v), "{u} {v}");
            }
        }
    }

    #[test]
    fn oversized_ceilings_are_refused() {
        let groups: Vec<String> = (0..1000).map(|i| format!("g{i}")).collect();
        let resources: Vec<String> = (0..1000).map(|i| format!("r{i}")).collect();
        let rules: Vec<PolicyRule> = serde_json::from_value(
            json!([{"apiGroups": groups, "resources": resources, "verbs": ["get"]}]),
        )
        .unwrap();
        let e = Ceiling::build(rules, "ceiling").unwrap_err();
        assert!(
            e.to_string().starts_with("ceiling: more than 100000"),
            "{e}"
        );
    }
}
