//! Which organization (tenant) a Namespace or Project gets and whether its requester may use
//! it: the owners (README rule 4), the user flow (README rule 5) and the service-account flow
//! (README rule 6), the tenant prefix (README rule 7) and the writing of README rule 8.

use policy_admission::Verdict;
use policy_admission::cluster::{GetRequest, Lookups};
use policy_decode::{FieldPath, PolicyError, message};
use serde_json::Value;
use tenancy_rules::class::skip_on_lookup_error;

use crate::settings::{Membership, Settings};

/// Who a flow judges: the requesting user of a Namespace, or the requester named by a
/// Project's annotation (whose groups are unknown).
#[derive(Clone, Copy, Debug)]
pub struct Requester<'a> {
    /// The username.
    pub username: &'a str,
    /// The requester's groups; `None` for a Project's requester.
    pub groups: Option<&'a std::collections::BTreeSet<String>>,
}

/// What a flow decides about: the organization label of the new object (`None` when absent
/// or empty), where it is, and the object's name.
#[derive(Clone, Debug)]
pub struct Target<'a> {
    /// L, the organization the object names.
    pub organization: Option<&'a str>,
    /// `metadata.labels["<organizationLabel>"]`, for messages.
    pub path: FieldPath,
    /// The object's `metadata.name` (empty when absent).
    pub name: &'a str,
    /// Whether the request is a CREATE (README rule 7 judges only those).
    pub create: bool,
}

/// What a flow decided: the verdict so far and the organization to write, if any.
#[derive(Debug, Default)]
pub struct Decision {
    /// Violations and warnings.
    pub verdict: Verdict,
    /// The organization README rule 8 writes.
    pub write: Option<String>,
}

impl Decision {
    fn write(organization: &str) -> Self {
        Decision {
            verdict: Verdict::accept(),
            write: Some(organization.to_owned()),
        }
    }

    fn refuse(path: &FieldPath, problem: impl Into<String>) -> Self {
        let mut verdict = Verdict::accept();
        verdict.violation(path, problem);
        Decision {
            verdict,
            write: None,
        }
    }
}

/// README rules 4 to 8 for a requester that is not exempt. `account` is the requester's
/// service account (Namespaces only).
pub fn judge(
    requester: Requester<'_>,
    account: Option<(&str, &str)>,
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let owned = match &settings.owners {
        Some(owners) => owners.tenants_of(requester.username, requester.groups),
        None => Vec::new(),
    };
    let decision = match (target.organization, owned.as_slice()) {
        // README rule 4: an owned tenant, or the only one.
        (Some(l), _) if owned.contains(&l) => Decision::default(),
        (None, [only]) => Decision::write(only),
        (None, [_, _, ..]) => match by_prefix(&owned, target.name, settings) {
            Some(t) => Decision::write(t),
            None => Decision::refuse(
                &target.path,
                format!(
                    "requester {:?} owns several tenants ({}); set the label to one of them",
                    requester.username,
                    message::join(owned.iter())
                ),
            ),
        },
        // README rules 5 and 6: the existing flows.
        _ => match account {
            Some(account) => service_account(account, target, settings, lookups)?,
            None => user(requester, &owned, target, settings, lookups)?,
        },
    };
    let Decision {
        verdict: found,
        write,
    } = decision;
    let mut verdict = Verdict::accept();
    // README rule 7: the final tenant's prefix, on CREATE (`metadata.name` comes first in
    // document order).
    let tenant = target.organization.or(write.as_deref());
    if target.create
        && let Some(t) = tenant
        && settings.forces_prefix(t)
        && !has_prefix(target.name, t)
    {
        verdict.violation(
            &FieldPath::root("metadata").field("name"),
            format!(
                "{:?} must start with \"{t}-\": tenant {t:?} forces its prefix",
                target.name
            ),
        );
    }
    verdict.extend(found.violations().iter().cloned());
    for warning in found.warnings() {
        verdict.warn(warning.clone());
    }
    if let Some(org) = write
        && verdict.is_clean()
    {
        inject(&org, settings, &mut verdict);
    }
    Ok(verdict)
}

/// README rule 4: of several owned tenants, the only one whose prefix is forced and starts
/// the object's name (Capsule picks the tenant by the name's prefix).
fn by_prefix<'o>(owned: &[&'o str], name: &str, settings: &Settings) -> Option<&'o str> {
    let mut matching = owned
        .iter()
        .filter(|t| settings.forces_prefix(t) && has_prefix(name, t));
    match (matching.next(), matching.next()) {
        (Some(t), None) => Some(t),
        _ => None,
    }
}

/// Whether `name` starts with `<tenant>-`.
fn has_prefix(name: &str, tenant: &str) -> bool {
    name.strip_prefix(tenant)
        .is_some_and(|rest| rest.starts_with('-'))
}

/// README rule 8: the organization written into the object's labels (the map is created when
/// absent).
fn inject(organization: &str, settings: &Settings, verdict: &mut Verdict) {
    verdict.edit_set(
        &["metadata", "labels"],
        &settings.organization_label,
        Value::String(organization.to_owned()),
    );
}

/// What the requester owns, for messages: `owns: a, b`, or `owns no tenant`.
fn owns(owned: &[&str]) -> String {
    if owned.is_empty() {
        "owns no tenant".to_owned()
    } else {
        format!("owns: {}", message::join(owned.iter()))
    }
}

/// README rule 5: the user flow for `requester`, who owns `owned` (none of them L, nor the
/// only one). With L empty the default organization is read (the User object, only now, and
/// only when `defaultOrganization` is configured) and written after the membership check
/// (when `membership` is configured); with L set the User is not read and L needs
/// membership — without `membership`, L must be the default (read only then). A failed read
/// under `onLookupError: accept` skips the rule with a warning: nothing is written and no
/// membership is assumed (README "Decisions").
fn user(
    requester: Requester<'_>,
    owned: &[&str],
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Decision, PolicyError> {
    match &settings.membership {
        None => owners_only(requester, owned, target, settings, lookups),
        Some(membership) => {
            with_membership(requester, owned, membership, target, settings, lookups)
        }
    }
}

/// The requester's default organization, when `defaultOrganization` is configured.
fn default_of(
    requester: Requester<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Option<String>, PolicyError> {
    match &settings.default_organization {
        Some(source) => source.of(requester.username, lookups),
        None => Ok(None),
    }
}

/// A failed lookup: rejected (500), or with `onLookupError: accept` the rule skipped with a
/// warning and nothing written.
fn skipped(
    e: PolicyError,
    target: &Target<'_>,
    settings: &Settings,
) -> Result<Decision, PolicyError> {
    let mut verdict = Verdict::accept();
    skip_on_lookup_error(e, &target.path, settings.on_lookup_error, &mut verdict)?;
    Ok(Decision {
        verdict,
        write: None,
    })
}

/// README rule 5 without `membership`: only owners prove that L may be used, and the
/// requester's default (when configured) is written unchecked and accepted as written.
fn owners_only(
    requester: Requester<'_>,
    owned: &[&str],
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Decision, PolicyError> {
    let default = match default_of(requester, settings, lookups) {
        Err(e) => return skipped(e, target, settings),
        Ok(default) => default,
    };
    let Some(org) = target.organization else {
        return Ok(match default {
            Some(org) => Decision::write(&org),
            None => Decision::refuse(&target.path, no_tenant(requester, settings)),
        });
    };
    let not_owner = format!(
        "requester {:?} is not an owner of tenant {org:?} ({})",
        requester.username,
        owns(owned)
    );
    if settings.default_organization.is_none() {
        return Ok(Decision::refuse(&target.path, not_owner));
    }
    // The requester's default is accepted as written (rule 8 writes it: idempotence).
    Ok(match default {
        Some(d) if d == org => Decision::default(),
        d => Decision::refuse(
            &target.path,
            format!(
                "{not_owner} nor its default organization (default: {})",
                d.map_or_else(|| "none".to_owned(), |d| format!("{d:?}"))
            ),
        ),
    })
}

/// README rule 5 with `membership`: L, or the default written when L is empty, must be an
/// organization the requester is a member of (a Project's requester under `RequestGroups`:
/// its default only, README rule 2).
fn with_membership(
    requester: Requester<'_>,
    owned: &[&str],
    membership: &Membership,
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Decision, PolicyError> {
    let unprovable =
        requester.groups.is_none() && matches!(membership, Membership::RequestGroups { .. });
    let not_member = |org: &str| {
        if settings.owners.is_some() {
            format!(
                "requester {:?} is not an owner of tenant {org:?} ({}) nor a member of organization {org:?}",
                requester.username,
                owns(owned)
            )
        } else {
            format!(
                "requester {:?} is not a member of organization {org:?}",
                requester.username
            )
        }
    };
    let (org, write) = match target.organization {
        Some(org) if unprovable => {
            return Ok(match default_of(requester, settings, lookups) {
                Err(e) => return skipped(e, target, settings),
                Ok(Some(d)) if d == org => Decision::default(),
                Ok(d) => Decision::refuse(&target.path, unprovable_problem(requester, org, d)),
            });
        }
        Some(org) => (org.to_owned(), false),
        None => match default_of(requester, settings, lookups) {
            Err(e) => return skipped(e, target, settings),
            Ok(None) => {
                return Ok(Decision::refuse(
                    &target.path,
                    no_tenant(requester, settings),
                ));
            }
            Ok(Some(org)) if unprovable => return Ok(Decision::write(&org)),
            Ok(Some(org)) => (org, true),
        },
    };
    Ok(match is_member(requester, &org, membership, lookups) {
        Err(e) => return skipped(e, target, settings),
        Ok(false) => Decision::refuse(&target.path, not_member(&org)),
        Ok(true) if write => Decision::write(&org),
        Ok(true) => Decision::default(),
    })
}

/// The refusal of an unlabelled object whose requester owns no tenant and has no default
/// organization (README rules 4 and 5).
fn no_tenant(requester: Requester<'_>, settings: &Settings) -> String {
    match (
        settings.owners.is_some(),
        settings.default_organization.is_some(),
    ) {
        (true, true) => format!(
            "requester {:?} owns no tenant and has no default organization",
            requester.username
        ),
        (true, false) => format!("requester {:?} owns no tenant", requester.username),
        (false, true) => "no organization label and no default organization".to_owned(),
        (false, false) => {
            "no organization label (no default organization is configured)".to_owned()
        }
    }
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

/// Whether `requester` is a member of `org` (README rule 5): the membership object named by
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

/// README rule 6: the service account `namespace:name` may only use its Namespace's
/// organization, written when L is empty. No membership check.
fn service_account(
    (namespace, name): (&str, &str),
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Decision, PolicyError> {
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
            return Ok(Decision {
                verdict,
                write: None,
            });
        }
        Ok(found) => found,
    };
    let exists = found.is_some();
    let org = found.flatten();
    Ok(match (org, target.organization) {
        (None, _) => Decision::refuse(
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
        (Some(org), Some(l)) if l == org => Decision::default(),
        (Some(org), Some(_)) => Decision::refuse(
            &target.path,
            format!("service accounts may only use the organization of their namespace ({org:?})"),
        ),
        (Some(org), None) => Decision {
            verdict,
            write: Some(org),
        },
    })
}
