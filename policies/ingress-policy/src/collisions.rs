//! README rules 4–7: a (host, path) is published by one Ingress of the collision scope.
//!
//! The new Ingress's claims are indexed by host once; every candidate Ingress's rules are
//! then read once, each looking its host up in the index. A group of claims (one host, one
//! path, or every claim of a host) is marked when a candidate first hits it and never
//! visited again, so the cost is linear in the new Ingress plus the candidates
//! (`docs/semantics.md#cost`), never their product.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use kube_values::hostname::normalize;
use kube_values::labels::is_label_value;
use policy_admission::Verdict;
use policy_admission::cluster::{GetRequest, ListRequest, Lookups};
use policy_decode::{FieldPath, PolicyError};
use serde::Deserialize;
use tenancy_rules::class::skip_on_lookup_error;

use crate::ingress::{Claim, Rule};
use crate::report::{Part, Report};
use crate::settings::{CollisionScope, Settings};

/// The API version candidates are listed with (and declared in `contextAwareResources`).
pub const INGRESS_API_VERSION: &str = "networking.k8s.io/v1";

/// The Ingress being judged: where it lives and what it is called (empty on a CREATE with
/// `generateName`), so that it is never its own candidate.
#[derive(Clone, Copy, Debug)]
pub struct Me<'r> {
    /// Its namespace.
    pub namespace: &'r str,
    /// Its name.
    pub name: &'r str,
}

/// README rules 4–7: records a violation for each claim of `rules` another Ingress of the
/// scope already uses. A failed lookup rejects (500) or, with `onLookupError: accept`,
/// skips the check with a warning.
pub fn judge(
    rules: &[Rule<'_>],
    me: Me<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    report: &mut Report,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let mut claims = Claims::new(rules);
    if claims.keys.is_empty() {
        return Ok(());
    }
    if let Err(e) = scan_scope(&mut claims, me, settings, lookups) {
        return skip_on_lookup_error(e, &FieldPath::empty(), settings.on_lookup_error, verdict);
    }
    let mut naming = Naming::new(me, settings);
    for (key, collider) in claims.collisions() {
        let Some(rule) = rules.get(key.rule) else {
            continue;
        };
        let named = match naming.named(collider, lookups) {
            Ok(named) => named,
            Err(e) => {
                skip_on_lookup_error(e, &rule.path(), settings.on_lookup_error, verdict)?;
                false
            }
        };
        let who = match named {
            true => format!("Ingress {}/{}", collider.namespace, collider.name),
            false => "an Ingress in another namespace".to_owned(),
        };
        let host = rule.host.unwrap_or("");
        let problem = match key.path {
            Some(path) => format!("host {host:?} path {path:?} is already used by {who}"),
            None => format!("host {host:?} is already used by {who}"),
        };
        report.violation(Part::Rules(key.rule), &rule.path(), problem);
    }
    Ok(())
}

/// README rule 4: lists the candidates of the scope and scans each list.
fn scan_scope(
    claims: &mut Claims<'_>,
    me: Me<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<(), PolicyError> {
    let namespaces = match settings.hostname_collision_scope {
        CollisionScope::Disabled => return Ok(()),
        CollisionScope::Cluster => {
            claims.scan(&lookups.list_of(&ingresses(None))?, me);
            return Ok(());
        }
        CollisionScope::Namespace => vec![me.namespace.to_owned()],
        CollisionScope::Tenant => tenant_namespaces(me.namespace, &settings.tenant_label, lookups)?,
    };
    for namespace in &namespaces {
        claims.scan(&lookups.list_of(&ingresses(Some(namespace)))?, me);
    }
    Ok(())
}

/// The list of Ingresses of one namespace, or of every namespace; the host keeps and hands
/// over only their metadata and rules' hosts and paths (masks in sorted order, as kwctl
/// records them).
fn ingresses(namespace: Option<&str>) -> ListRequest {
    ListRequest {
        api_version: INGRESS_API_VERSION.to_owned(),
        kind: "Ingress".to_owned(),
        namespace: namespace.map(str::to_owned),
        label_selector: None,
        field_selector: None,
        field_masks: Some(vec![
            "spec.rules.host".to_owned(),
            "spec.rules.http.paths.path".to_owned(),
        ]),
    }
}

/// A candidate Ingress as the collision check reads it: its name, namespace and rules'
/// hosts and paths are decoded, everything else is skipped unparsed.
#[derive(Debug, Deserialize)]
struct Listed {
    metadata: ListedMetadata,
    spec: Option<ListedSpec>,
}

#[derive(Debug, Deserialize)]
struct ListedMetadata {
    namespace: String,
    name: String,
}

#[derive(Debug, Deserialize)]
struct ListedSpec {
    rules: Option<Vec<ListedRule>>,
}

#[derive(Debug, Deserialize)]
struct ListedRule {
    host: Option<String>,
    http: Option<ListedHttp>,
}

#[derive(Debug, Deserialize)]
struct ListedHttp {
    paths: Option<Vec<ListedPath>>,
}

#[derive(Debug, Deserialize)]
struct ListedPath {
    path: Option<String>,
}

impl ListedRule {
    /// README rule 5: what the rule claims, as for the new Ingress's rules.
    fn claim(&self) -> Claim<'_> {
        let paths = self.http.as_ref().and_then(|h| h.paths.as_ref());
        Claim::of_paths(paths.map(|paths| paths.iter().map(|p| p.path.as_deref())))
    }
}

/// The tenant of namespace `namespace`: the value of its tenant label (`None`: no label, an
/// empty one, or no such Namespace). `docs/semantics.md#tenants`.
fn tenant_of(
    namespace: &str,
    label: &str,
    lookups: &mut Lookups<'_>,
) -> Result<Option<String>, PolicyError> {
    let request = GetRequest::cluster_scoped("v1", "Namespace", namespace);
    let tenant = lookups.read(&request, |ns| Ok(ns.label(label)?.map(str::to_owned)))?;
    Ok(tenant.flatten().filter(|t| !t.is_empty()))
}

/// README rule 4, `Tenant`: the namespaces labelled with this namespace's tenant (this
/// namespace alone when it has no tenant, as in `Namespace` scope).
fn tenant_namespaces(
    namespace: &str,
    label: &str,
    lookups: &mut Lookups<'_>,
) -> Result<Vec<String>, PolicyError> {
    let Some(tenant) = tenant_of(namespace, label, lookups)? else {
        return Ok(vec![namespace.to_owned()]);
    };
    if !is_label_value(&tenant) {
        return Err(PolicyError::Lookup {
            what: GetRequest::cluster_scoped("v1", "Namespace", namespace).describe(),
            reason: format!("unexpected answer: label {label:?} has the invalid value {tenant:?}"),
        });
    }
    let request = ListRequest {
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        namespace: None,
        label_selector: Some(format!("{label}={tenant}")),
        field_selector: None,
        // only the names are read: the host drops the Namespaces' spec and status
        field_masks: Some(vec!["metadata.name".to_owned()]),
    };
    let items: Vec<NamedObject> = lookups.list_of(&request)?;
    let mut seen = HashSet::with_capacity(items.len() + 1);
    let mut names = Vec::with_capacity(items.len() + 1);
    for item in &items {
        if seen.insert(item.metadata.name.as_str()) {
            names.push(item.metadata.name.clone());
        }
    }
    if !seen.contains(namespace) {
        names.push(namespace.to_owned());
    }
    Ok(names)
}

/// An object of which only the name is read.
#[derive(Debug, Deserialize)]
struct NamedObject {
    metadata: ObjectName,
}

#[derive(Debug, Deserialize)]
struct ObjectName {
    name: String,
}

/// One claim of the new Ingress: rule `rule` claims `path` of its host (`None`: the whole
/// host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key<'a> {
    rule: usize,
    path: Option<&'a str>,
}

/// Another Ingress using a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Collider {
    namespace: String,
    name: String,
}

/// Claims (by their index in [`Claims::keys`]) that one kind of candidate claim hits; once
/// marked, every one of them has a collider and the group is not visited again.
#[derive(Debug, Default)]
struct Group {
    keys: Vec<usize>,
    done: bool,
}

/// The claims of the new Ingress on one host.
#[derive(Debug, Default)]
struct HostClaims<'a> {
    /// Every claim on the host (hit by a candidate claiming the whole host).
    all: Group,
    /// The claims of the whole host (hit by any candidate claim on the host).
    whole: Group,
    /// The claims of one path (hit by a candidate claiming that path).
    paths: HashMap<&'a str, Group>,
}

/// The colliders found so far: the first collider of each claim.
#[derive(Debug, Default)]
struct Found {
    by_key: Vec<Option<usize>>,
    colliders: Vec<Collider>,
}

/// The candidate being scanned; registered as a collider when it first hits a claim.
struct Candidate<'v> {
    namespace: &'v str,
    name: &'v str,
    id: Option<usize>,
}

impl Group {
    /// Gives every claim of the group without collider the candidate as collider.
    fn mark(&mut self, found: &mut Found, candidate: &mut Candidate<'_>) {
        if self.done {
            return;
        }
        self.done = true;
        let id = *candidate.id.get_or_insert_with(|| {
            found.colliders.push(Collider {
                namespace: candidate.namespace.to_owned(),
                name: candidate.name.to_owned(),
            });
            found.colliders.len() - 1
        });
        for &key in &self.keys {
            if let Some(slot @ None) = found.by_key.get_mut(key) {
                *slot = Some(id);
            }
        }
    }
}

/// The claims of the new Ingress, indexed by normalised host, and their colliders.
struct Claims<'a> {
    keys: Vec<Key<'a>>,
    hosts: HashMap<Cow<'a, str>, HostClaims<'a>>,
    found: Found,
}

impl<'a> Claims<'a> {
    /// README rule 5: the keys (host, path) of `rules`, the host normalised (a rule without
    /// host is `""`), each (rule, path) once.
    fn new(rules: &[Rule<'a>]) -> Self {
        let mut claims = Claims {
            keys: Vec::new(),
            hosts: HashMap::with_capacity(rules.len()),
            found: Found::default(),
        };
        for (i, rule) in rules.iter().enumerate() {
            let host = normalize(rule.host.unwrap_or(""));
            match &rule.claim {
                Claim::WholeHost => claims.add(
                    host,
                    Key {
                        rule: i,
                        path: None,
                    },
                ),
                Claim::Paths(paths) => {
                    for path in paths {
                        claims.add(
                            host.clone(),
                            Key {
                                rule: i,
                                path: Some(path),
                            },
                        );
                    }
                }
            }
        }
        claims.found.by_key = vec![None; claims.keys.len()];
        claims
    }

    fn add(&mut self, host: Cow<'a, str>, key: Key<'a>) {
        let id = self.keys.len();
        let entry = self.hosts.entry(host).or_default();
        let group = match key.path {
            None => &mut entry.whole,
            Some(path) => entry.paths.entry(path).or_default(),
        };
        // the same path twice in one rule is one claim
        let last = group.keys.last().and_then(|&k| self.keys.get(k));
        if last.is_some_and(|k| k.rule == key.rule) {
            return;
        }
        group.keys.push(id);
        entry.all.keys.push(id);
        self.keys.push(key);
    }

    /// Scans the Ingresses of one list answer.
    fn scan(&mut self, items: &[Listed], me: Me<'_>) {
        for item in items {
            self.scan_item(item, me);
        }
    }

    /// README rules 4 and 5 for one candidate: each of its rules is looked up by host, and
    /// only a rule whose host the new Ingress claims has its claim built.
    fn scan_item(&mut self, item: &Listed, me: Me<'_>) {
        let mut candidate = Candidate {
            namespace: &item.metadata.namespace,
            name: &item.metadata.name,
            id: None,
        };
        if (candidate.namespace, candidate.name) == (me.namespace, me.name) {
            return;
        }
        let rules = item.spec.iter().flat_map(|s| s.rules.iter().flatten());
        for rule in rules {
            let host = normalize(rule.host.as_deref().unwrap_or(""));
            let Some(entry) = self.hosts.get_mut(host.as_ref()) else {
                continue;
            };
            hit(entry, &rule.claim(), &mut self.found, &mut candidate);
        }
    }

    /// The claims with a collider, in document order.
    fn collisions(&self) -> impl Iterator<Item = (&Key<'a>, &Collider)> {
        self.keys
            .iter()
            .zip(&self.found.by_key)
            .filter_map(|(key, found)| {
                let collider = self.found.colliders.get((*found)?)?;
                Some((key, collider))
            })
    }
}

/// README rule 5: a candidate claim hits the new claims of its host — the whole host hits
/// them all; a path hits the same path and the claims of the whole host.
fn hit(
    entry: &mut HostClaims<'_>,
    claim: &Claim<'_>,
    found: &mut Found,
    candidate: &mut Candidate<'_>,
) {
    match claim {
        Claim::WholeHost => entry.all.mark(found, candidate),
        Claim::Paths(paths) => {
            for path in paths {
                if let Some(group) = entry.paths.get_mut::<str>(path) {
                    group.mark(found, candidate);
                }
            }
            entry.whole.mark(found, candidate);
        }
    }
}

/// README rule 6: whether a collider may be named. `Namespace` and `Tenant` scopes list
/// only this namespace's tenant (or this namespace), so every collider is named; in
/// `Cluster` scope a collider is named when it is in this namespace or in a namespace of
/// the same tenant (each Namespace read once, when a collision needs it; a failed read is
/// a failed lookup, `docs/semantics.md#lookups`).
struct Naming<'r> {
    me: Me<'r>,
    cluster: bool,
    tenant_label: &'r str,
    mine: Option<Option<String>>,
    same: HashMap<String, bool>,
}

impl<'r> Naming<'r> {
    fn new(me: Me<'r>, settings: &'r Settings) -> Self {
        Naming {
            me,
            cluster: settings.hostname_collision_scope == CollisionScope::Cluster,
            tenant_label: &settings.tenant_label,
            mine: None,
            same: HashMap::new(),
        }
    }

    fn named(
        &mut self,
        collider: &Collider,
        lookups: &mut Lookups<'_>,
    ) -> Result<bool, PolicyError> {
        if !self.cluster || collider.namespace == self.me.namespace {
            return Ok(true);
        }
        if let Some(&same) = self.same.get(&collider.namespace) {
            return Ok(same);
        }
        let label = self.tenant_label;
        if self.mine.is_none() {
            self.mine = Some(tenant_of(self.me.namespace, label, lookups)?);
        }
        let same = match self.mine.as_ref().and_then(Option::as_deref) {
            None => false,
            Some(mine) => tenant_of(&collider.namespace, label, lookups)?.as_deref() == Some(mine),
        };
        self.same.insert(collider.namespace.clone(), same);
        Ok(same)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingress::rules;
    use policy_decode::json::At;
    use serde_json::{Value, json};

    fn ingress(namespace: &str, name: &str, rules: Value) -> Value {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"namespace": namespace, "name": name}, "spec": {"rules": rules}})
    }

    fn rule(host: &str, paths: &[&str]) -> Value {
        let paths: Vec<Value> = paths
            .iter()
            .map(|p| json!({"path": p, "pathType": "Prefix"}))
            .collect();
        json!({"host": host, "http": {"paths": paths}})
    }

    /// The (rule, path, collider name) of each collision of `new` against `candidates`.
    fn collide(new: Value, candidates: &[Value]) -> Vec<(usize, Option<String>, String)> {
        let spec = At::new(&new["spec"], FieldPath::root("spec"));
        let rules = rules(&spec).unwrap();
        let mut claims = Claims::new(&rules);
        let me = Me {
            namespace: "solar-prod",
            name: "web",
        };
        let candidates: Vec<Listed> = candidates
            .iter()
            .map(|c| serde_json::from_value(c.clone()).unwrap())
            .collect();
        claims.scan(&candidates, me);
        claims
            .collisions()
            .map(|(k, c)| (k.rule, k.path.map(str::to_owned), c.name.clone()))
            .collect()
    }

    #[test]
    fn same_host_and_path_collide_other_paths_do_not() {
        let new = ingress(
            "solar-prod",
            "web",
            json!([rule("app.acme.com", &["/", "/api"])]),
        );
        let old = ingress("solar-dev", "web", json!([rule("App.Acme.com.", &["/"])]));
        assert_eq!(collide(new, &[old]), [(0, Some("/".into()), "web".into())]);
    }

    #[test]
    fn whole_host_claims_collide_both_ways() {
        let host_only = ingress("solar-dev", "h", json!([{"host": "app.acme.com"}]));
        let new = ingress("solar-prod", "web", json!([rule("app.acme.com", &["/x"])]));
        assert_eq!(
            collide(new, &[host_only]),
            [(0, Some("/x".into()), "h".into())]
        );
        let new = ingress("solar-prod", "web", json!([{"host": "app.acme.com"}]));
        let paths = ingress("solar-dev", "p", json!([rule("app.acme.com", &["/y"])]));
        assert_eq!(collide(new, &[paths]), [(0, None, "p".into())]);
    }

    #[test]
    fn itself_wildcards_and_other_hosts_never_collide() {
        let new = ingress(
            "solar-prod",
            "web",
            json!([rule("x.acme.com", &["/"]), rule("*.acme.com", &["/"])]),
        );
        let itself = new.clone();
        let wildcard = ingress("a", "w", json!([rule("*.acme.com", &["/a"])]));
        let other = ingress(
            "a",
            "o",
            json!([rule("y.acme.com", &["/"]), {"host": "z.acme.com"}]),
        );
        assert!(collide(new, &[itself, wildcard, other]).is_empty());
    }

    #[test]
    fn hostless_rules_collide_with_hostless_rules() {
        let new = ingress(
            "solar-prod",
            "web",
            json!([{"http": {"paths": [{"path": "/"}]}}]),
        );
        let old = ingress(
            "a",
            "catch-all",
            json!([{"host": "", "http": {"paths": [{"path": "/"}]}}]),
        );
        assert_eq!(
            collide(new, &[old]),
            [(0, Some("/".into()), "catch-all".into())]
        );
    }

    #[test]
    fn first_collider_is_kept_and_each_claim_reported_once() {
        let new = ingress(
            "solar-prod",
            "web",
            json!([rule("a.com", &["/", "/", "/b"]), rule("a.com", &["/"])]),
        );
        let first = ingress("x", "first", json!([rule("a.com", &["/"])]));
        let second = ingress("x", "second", json!([{"host": "a.com"}]));
        assert_eq!(
            collide(new, &[first, second]),
            [
                (0, Some("/".into()), "first".into()),
                (0, Some("/b".into()), "second".into()),
                (1, Some("/".into()), "first".into())
            ]
        );
    }

    #[test]
    fn malformed_candidates_are_failed_lookups() {
        use policy_admission::cluster::Objects;
        for (bad, reason) in [
            (
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "x"}}),
                "items[0].metadata: missing field `namespace`",
            ),
            (
                ingress("a", "b", json!({})),
                "items[0].spec.rules: invalid type: map, expected a sequence",
            ),
            (
                ingress("a", "b", json!([1])),
                "items[0].spec.rules[0]: invalid type: integer `1`, expected struct ListedRule",
            ),
            (
                ingress("a", "b", json!([{"host": 1}])),
                "items[0].spec.rules[0].host: invalid type: integer `1`, expected a string",
            ),
            (
                ingress(
                    "a",
                    "b",
                    json!([{"host": "a.com", "http": {"paths": [{"path": 1}]}}]),
                ),
                "items[0].spec.rules[0].http.paths[0].path: invalid type: integer `1`, expected a string",
            ),
        ] {
            let mut cluster = Objects::new(vec![bad]);
            let err = Lookups::new(&mut cluster)
                .list_of::<Listed>(&ingresses(None))
                .unwrap_err();
            assert_eq!(err.code(), 500);
            assert!(
                err.to_string()
                    .ends_with(&format!("unexpected answer: {reason}")),
                "{err}"
            );
        }
    }
}
