//! Roles and ClusterRoles (README rules 1, 2 and 4): what each rule grants, aggregation.

use std::collections::HashSet;
use std::sync::LazyLock;

use policy_admission::Verdict;
use policy_admission::metadata::string_map;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::{At, canonical_text};
use policy_decode::{FieldPath, PolicyError};
use tenancy_rules::rbac::ceiling::MAX_ATOMS;
use tenancy_rules::rbac::{Permissions, RuleView, ceiling_problems, describe_resource};

use crate::settings::Settings;

/// The label prefix that aggregates a ClusterRole into the built-in `admin`, `edit` and
/// `view` (and any aggregating ClusterRole selecting it).
pub const AGGREGATE_LABEL_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// Permissions that let their holder escalate: `escalate` and `bind` on roles,
/// `impersonate` on every identity kind.
static ESCALATION: LazyLock<[Permissions; 3]> = LazyLock::new(|| {
    [
        Permissions::of(
            &["rbac.authorization.k8s.io"],
            &["roles", "clusterroles"],
            &["escalate", "bind"],
        ),
        Permissions::of(
            &[""],
            &["users", "groups", "serviceaccounts"],
            &["impersonate"],
        ),
        Permissions::of(
            &["authentication.k8s.io"],
            &["uids", "userextras/*"],
            &["impersonate"],
        ),
    ]
});

/// Judges a Role (`cluster = false`) or ClusterRole being created or updated.
pub fn judge(
    request: &AdmissionRequest,
    object: &At<'_>,
    cluster: bool,
    settings: &Settings,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let old = match request.operation {
        Operation::Update => Some(request.old_object()?),
        _ => None,
    };
    if cluster && settings.forbid_aggregation {
        aggregation(object, old.as_ref(), verdict)?;
    }
    // README rule 4: on UPDATE only the rules the old object lacks are judged.
    let old_rules: HashSet<String> = match &old {
        Some(o) => o
            .get_list("rules")?
            .iter()
            .map(|r| canonical_text(r.value))
            .collect(),
        None => HashSet::new(),
    };
    let Some(list) = object.get("rules")? else {
        return Ok(());
    };
    let items = list
        .value
        .as_array()
        .ok_or_else(|| PolicyError::malformed(&list.path, "expected a list"))?;
    let mut budget = MAX_ATOMS;
    for (i, value) in items.iter().enumerate() {
        // paths are built only for a refusal: a 1 MiB role has thousands of rules
        let path = || list.path.index(i);
        let rule = RuleView::read_value(value, &path)?;
        if !old_rules.is_empty() && old_rules.contains(&canonical_text(value)) {
            continue;
        }
        let problems = judge_rule(&rule, cluster, settings, &mut budget);
        if !problems.is_empty() {
            let path = path();
            for (field, problem) in problems {
                match field {
                    Some(f) => verdict.violation(&path.field(f), problem),
                    None => verdict.violation(&path, problem),
                }
            }
        }
    }
    Ok(())
}

/// README rule 2: `aggregationRule` and `aggregate-to-*` labels (on UPDATE, those added).
fn aggregation(
    object: &At<'_>,
    old: Option<&At<'_>>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let before = string_map(old, "labels")?;
    for key in string_map(Some(object), "labels")?
        .into_iter()
        .flat_map(|m| m.keys())
    {
        if let Some(target) = key.strip_prefix(AGGREGATE_LABEL_PREFIX)
            && !before.is_some_and(|b| b.contains_key(key))
        {
            verdict.violation(
                &FieldPath::dotted("metadata.labels").key(key),
                format!(
                    "aggregates this ClusterRole's rules into the ClusterRoles selecting it (such as {target:?}, bound to every tenant), which is not allowed"
                ),
            );
        }
    }
    let rule = |o: &At<'_>| -> Result<Option<String>, PolicyError> {
        Ok(o.get("aggregationRule")?.map(|a| canonical_text(a.value)))
    };
    let added = rule(object)?;
    if added.is_some() && added != old.map(rule).transpose()?.flatten() {
        verdict.violation(
            &FieldPath::dotted("aggregationRule"),
            "aggregates the rules of other ClusterRoles, which is not allowed",
        );
    }
    Ok(())
}

/// README rule 1 for one rule: its problems, each with the field of the rule it is about
/// (`None`: the rule itself).
fn judge_rule(
    rule: &RuleView<'_>,
    cluster: bool,
    settings: &Settings,
    budget: &mut usize,
) -> Vec<(Option<&'static str>, String)> {
    let mut problems = Vec::new();
    if settings.forbid_wildcards
        && let Some((list, value)) = rule.wildcard()
    {
        problems.push((
            None,
            format!("{value:?} in {list} is a wildcard, which is not allowed"),
        ));
    }
    let sets = rule.sets();
    if settings.forbid_escalation_verbs {
        for set in ESCALATION.iter() {
            if let Some((group, resource, verb)) = set.granted_by(&sets) {
                let on = describe_resource(group, resource, false);
                problems.push((
                    None,
                    format!("grants {verb:?} on {on}, which allows privilege escalation"),
                ));
            }
        }
    }
    for set in &settings.forbidden_rules {
        if let Some((group, resource, verb)) = set.granted_by(&sets) {
            let on = describe_resource(group, resource, false);
            problems.push((None, format!("grants {verb:?} on {on}, which is forbidden")));
        }
    }
    if !cluster && !rule.non_resource_urls.is_empty() {
        problems.push((
            Some("nonResourceURLs"),
            format!(
                "a Role cannot grant non-resource URLs ({:?})",
                rule.non_resource_urls.first().copied().unwrap_or_default()
            ),
        ));
    }
    if let Some(ceiling) = &settings.ceiling {
        for problem in ceiling_problems(ceiling, rule, budget) {
            problems.push((None, problem));
        }
    }
    problems
}
