//! RoleBindings and ClusterRoleBindings (README rules 3 and 4): the role they grant and the
//! subjects they grant it to.

use std::collections::HashSet;

use policy_admission::Verdict;
use policy_admission::cluster::{GetRequest, Lookups};
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::{At, canonical_text};
use policy_decode::message::bracketed;
use policy_decode::{FieldPath, PolicyError};
use tenancy_rules::class::skip_on_lookup_error;
use tenancy_rules::rbac::ceiling::MAX_ATOMS;
use tenancy_rules::rbac::{RuleView, ceiling_problems};

use crate::settings::Settings;

/// The prefix of a service account's username.
const SA_USER: &str = "system:serviceaccount:";
/// The prefix of the group of a namespace's service accounts.
const SA_GROUP: &str = "system:serviceaccounts:";

/// One subject as written.
struct Subject<'a> {
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
}

impl<'a> Subject<'a> {
    fn read(at: &At<'a>) -> Result<Self, PolicyError> {
        at.object()?;
        let required = |field: &str| -> Result<&'a str, PolicyError> {
            at.get_str(field)?
                .ok_or_else(|| PolicyError::malformed(&at.path.field(field), "missing"))
        };
        Ok(Subject {
            kind: required("kind")?,
            name: required("name")?,
            namespace: at.get_str("namespace")?.filter(|n| !n.is_empty()),
        })
    }
}

/// The role a binding references.
struct RoleRef<'a> {
    kind: &'a str,
    name: &'a str,
}

/// Judges a RoleBinding (`namespace` is its namespace) or ClusterRoleBinding (`None`).
pub fn judge(
    request: &AdmissionRequest,
    object: &At<'_>,
    namespace: Option<&str>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let role_at = policy_admission::gate::required(object, "roleRef")?;
    let role = RoleRef {
        kind: role_at
            .get_str("kind")?
            .ok_or_else(|| PolicyError::malformed(&role_at.path.field("kind"), "missing"))?,
        name: role_at
            .get_str("name")?
            .ok_or_else(|| PolicyError::malformed(&role_at.path.field("name"), "missing"))?,
    };
    // README rule 4: on UPDATE only the subjects the old binding lacks are judged, and the
    // role only when there are such subjects (roleRef is immutable).
    let old: HashSet<String> = match request.operation {
        Operation::Update => request
            .old_object()?
            .get_list("subjects")?
            .iter()
            .map(|s| canonical_text(s.value))
            .collect(),
        _ => HashSet::new(),
    };
    let mut new_subjects = Vec::new();
    for at in object.get_list("subjects")? {
        let subject = Subject::read(&at)?;
        if !old.contains(&canonical_text(at.value)) {
            new_subjects.push((at.path, subject));
        }
    }
    if request.operation == Operation::Update && new_subjects.is_empty() {
        return Ok(());
    }
    judge_role_ref(&role, namespace, settings, verdict);
    for (path, subject) in &new_subjects {
        judge_subject(path, subject, namespace, settings, verdict);
    }
    if settings.check_bound_roles {
        bound_role(&role, namespace, settings, lookups, verdict)?;
    }
    Ok(())
}

/// README rule 3: forbidden roles, and ClusterRoles a RoleBinding may not reference.
fn judge_role_ref(
    role: &RoleRef<'_>,
    namespace: Option<&str>,
    settings: &Settings,
    verdict: &mut Verdict,
) {
    let path = FieldPath::dotted("roleRef");
    let forbidden = match role.kind {
        "Role" => &settings.forbidden_roles,
        _ => &settings.forbidden_cluster_roles,
    };
    if forbidden.matches(role.name) {
        verdict.violation(
            &path,
            format!("binding {} {:?} is not allowed", role.kind, role.name),
        );
        return;
    }
    if let (Some(_), "ClusterRole", Some(allowed)) =
        (namespace, role.kind, &settings.allowed_cluster_role_refs)
        && !allowed.matches(role.name)
    {
        verdict.violation(
            &path,
            format!(
                "ClusterRole {:?} may not be bound in a namespace; allowed: {}",
                role.name,
                bracketed(allowed.iter())
            ),
        );
    }
}

/// README rule 3: forbidden subjects and, in RoleBindings, service accounts of other
/// namespaces (as ServiceAccount, as their username, or as their namespace's group).
fn judge_subject(
    path: &FieldPath,
    subject: &Subject<'_>,
    namespace: Option<&str>,
    settings: &Settings,
    verdict: &mut Verdict,
) {
    let (what, identity) = match subject.kind {
        "ServiceAccount" => {
            let ns = subject.namespace.or(namespace).unwrap_or_default();
            ("service account", format!("{SA_USER}{ns}:{}", subject.name))
        }
        "Group" => ("group", subject.name.to_owned()),
        _ => ("user", subject.name.to_owned()),
    };
    if settings.forbidden_subjects.matches(&identity) {
        verdict.violation(
            path,
            format!(
                "binding to {what} {:?} is not allowed",
                display(subject, &identity)
            ),
        );
        return;
    }
    let Some(own) = namespace.filter(|_| settings.forbid_foreign_service_accounts) else {
        return;
    };
    let foreign = match subject.kind {
        "Group" => identity
            .strip_prefix(SA_GROUP)
            .filter(|ns| *ns != own)
            .map(|ns| format!("group {identity:?} holds the service accounts of namespace {ns:?}")),
        _ => identity
            .strip_prefix(SA_USER)
            .and_then(|rest| rest.split_once(':'))
            .filter(|(ns, _)| *ns != own)
            .map(|(ns, name)| format!("{what} \"{ns}/{name}\" belongs to namespace {ns:?}")),
    };
    if let Some(problem) = foreign {
        verdict.violation(
            path,
            format!("{problem}, not to the RoleBinding's namespace {own:?}"),
        );
    }
}

/// A subject for messages: `ns/name` for service accounts, the name otherwise.
fn display(subject: &Subject<'_>, identity: &str) -> String {
    match subject.kind {
        "ServiceAccount" => identity
            .strip_prefix(SA_USER)
            .map(|rest| rest.replacen(':', "/", 1))
            .unwrap_or_else(|| identity.to_owned()),
        _ => identity.to_owned(),
    }
}

/// README rule 3, `checkBoundRoles`: the bound role must exist and its rules be under the
/// ceiling.
fn bound_role(
    role: &RoleRef<'_>,
    namespace: Option<&str>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let Some(ceiling) = &settings.ceiling else {
        return Ok(());
    };
    let path = FieldPath::dotted("roleRef");
    let api = "rbac.authorization.k8s.io/v1";
    let request = match (role.kind, namespace) {
        ("Role", Some(ns)) => GetRequest::namespaced(api, "Role", ns, role.name),
        _ => GetRequest::cluster_scoped(api, "ClusterRole", role.name),
    };
    let mut budget = MAX_ATOMS;
    let mut problems = Vec::new();
    let read = lookups.read(&request, |found| {
        found.read(|at| {
            for rule_at in at.get_list("rules")? {
                let rule = RuleView::read(&rule_at)?;
                for problem in ceiling_problems(ceiling, &rule, &mut budget) {
                    problems.push(format!(
                        "{} {:?} {}: {problem}",
                        role.kind, role.name, rule_at.path
                    ));
                }
            }
            Ok(())
        })
    });
    match read {
        Err(e) => return skip_on_lookup_error(e, &path, settings.on_lookup_error, verdict),
        Ok(None) => {
            let place = match (role.kind, namespace) {
                ("Role", Some(ns)) => format!(" in namespace {ns:?}"),
                _ => String::new(),
            };
            verdict.violation(
                &path,
                format!("{} {:?} does not exist{place}", role.kind, role.name),
            );
        }
        Ok(Some(())) => {
            for problem in problems {
                verdict.violation(&path, problem);
            }
        }
    }
    Ok(())
}
