//! The user flow (README rule 4) and the service-account flow (README rule 5): which
//! organization a Namespace or Project gets, whether its requester may use it, and the
//! injection of README rule 6.

use policy_admission::Verdict;
use policy_admission::cluster::{GetRequest, Lookups};
use policy_decode::{FieldPath, PolicyError};
use serde_json::Value;
use tenancy_rules::class::skip_on_lookup_error;

use crate::settings::{Membership, Settings};

/// Who a user flow judges: the requesting user of a Namespace, or the requester named by a
/// Project's annotation (whose groups are unknown).
#[derive(Clone, Copy, Debug)]
pub struct Requester<'a> {
    /// The username.
    pub username: &'a str,
    /// The requester's groups; `None` for a Project's requester.
    pub groups: Option<&'a std::collections::BTreeSet<String>>,
}

/// What a flow decides about: the organization label of the new object (`None` when absent
/// or empty) and where it is.
#[derive(Clone, Debug)]
pub struct Target<'a> {
    /// L, the organization the object names.
    pub organization: Option<&'a str>,
    /// `metadata.labels["<organizationLabel>"]`, for messages.
    pub path: FieldPath,
}

/// README rule 6: the organization written into the object's labels (the map is created when
/// absent).
fn inject(organization: &str, settings: &Settings, verdict: &mut Verdict) {
    verdict.edit_set(
        &["metadata", "labels"],
        &settings.organization_label,
        Value::String(organization.to_owned()),
    );
}

/// README rule 4: the user flow for `requester`. With L empty the default organization is
/// read (the User object, only now) and written after the membership check; with L set the
/// User is not read. A failed read under `onLookupError: accept` skips the rule with a
/// warning: nothing is written and no membership is assumed (README "Decisions").
pub fn user(
    requester: Requester<'_>,
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    let on_error = settings.on_lookup_error;
    // README rule 2: a Project's requester has no known groups.
    let unprovable = requester.groups.is_none()
        && matches!(settings.membership, Membership::RequestGroups { .. });
    let default = |lookups: &mut Lookups<'_>| {
        settings
            .default_organization
            .of(requester.username, lookups)
    };
    match target.organization {
        Some(org) if unprovable => match default(lookups) {
            Err(e) => skip_on_lookup_error(e, &target.path, on_error, &mut verdict)?,
            Ok(Some(d)) if d == org => {}
            Ok(d) => verdict.violation(&target.path, unprovable_problem(requester, org, d)),
        },
        Some(org) => match is_member(requester, org, &settings.membership, lookups) {
            Err(e) => skip_on_lookup_error(e, &target.path, on_error, &mut verdict)?,
            Ok(true) => {}
            Ok(false) => verdict.violation(&target.path, not_member(requester, org)),
        },
        None => {
            let org = match default(lookups) {
                Err(e) => {
                    skip_on_lookup_error(e, &target.path, on_error, &mut verdict)?;
                    return Ok(verdict);
                }
                Ok(None) => {
                    verdict.violation(
                        &target.path,
                        "no organization label and no default organization",
                    );
                    return Ok(verdict);
                }
                Ok(Some(org)) => org,
            };
            if !unprovable {
                match is_member(requester, &org, &settings.membership, lookups) {
                    Err(e) => {
                        skip_on_lookup_error(e, &target.path, on_error, &mut verdict)?;
                        return Ok(verdict);
                    }
                    Ok(true) => {}
                    Ok(false) => {
                        verdict.violation(&target.path, not_member(requester, &org));
                        return Ok(verdict);
                    }
                }
            }
            inject(&org, settings, &mut verdict);
        }
    }
    Ok(verdict)
}

fn not_member(requester: Requester<'_>, org: &str) -> String {
    format!(
        "requester {:?} is not a member of organization {org:?}",
        requester.username
    )
}

fn unprovable_problem(requester: Requester<'_>, org: &str, default: Option<String>) -> String {
    let default = match default {
        Some(d) => format!("{d:?}"),
        None => "none".to_owned(),
    };
    format!(
        "membership of requester {:?} in organization {org:?} cannot be proven for a Project \
         (membership.source RequestGroups reads the request's groups); only the requester's \
         default organization is accepted (default: {default})",
        requester.username
    )
}

/// Whether `requester` is a member of `org` (README rule 4): the membership object named by
/// the template lists the username (a missing object has no members), or the rendered group
/// is one of the requester's groups.
pub fn is_member(
    requester: Requester<'_>,
    org: &str,
    membership: &Membership,
    lookups: &mut Lookups<'_>,
) -> Result<bool, PolicyError> {
    let name = membership.name_of(org);
    match membership {
        Membership::RequestGroups { .. } => Ok(requester.groups.is_some_and(|g| g.contains(&name))),
        Membership::GroupObject {
            api_version,
            kind,
            users_field,
            ..
        } => {
            let request = GetRequest::cluster_scoped(api_version, kind, &name);
            let member = lookups.read(&request, |group| {
                group.read(|at| {
                    let Some((last, parents)) = users_field.split_last() else {
                        return Ok(false);
                    };
                    let mut at = Some(at);
                    for step in parents {
                        at = match at {
                            Some(at) => at.get_object(step)?,
                            None => None,
                        };
                    }
                    let users = match at {
                        Some(at) => at.get_str_list(last)?,
                        None => Vec::new(),
                    };
                    Ok(users.contains(&requester.username))
                })
            })?;
            Ok(member.unwrap_or(false))
        }
    }
}

/// README rule 5: the service account `namespace:name` may only use its Namespace's
/// organization, written when L is empty. No membership check.
pub fn service_account(
    (namespace, name): (&str, &str),
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    let request = GetRequest::cluster_scoped("v1", "Namespace", namespace);
    let found = match lookups.read(&request, |ns| {
        Ok(ns
            .label(&settings.organization_label)?
            .filter(|s| !s.is_empty())
            .map(str::to_owned))
    }) {
        Err(e) => {
            skip_on_lookup_error(e, &target.path, settings.on_lookup_error, &mut verdict)?;
            return Ok(verdict);
        }
        Ok(found) => found,
    };
    let exists = found.is_some();
    let org = found.flatten();
    match (org.as_deref(), target.organization) {
        (None, _) => verdict.violation(
            &target.path,
            format!(
                "the namespace {namespace:?} of service account \"{namespace}:{name}\" {}",
                if exists {
                    "has no organization label"
                } else {
                    "does not exist"
                }
            ),
        ),
        (Some(org), Some(l)) if l == org => {}
        (Some(org), Some(_)) => verdict.violation(
            &target.path,
            format!("service accounts may only use the organization of their namespace ({org:?})"),
        ),
        (Some(org), None) => inject(org, settings, &mut verdict),
    }
    Ok(verdict)
}
