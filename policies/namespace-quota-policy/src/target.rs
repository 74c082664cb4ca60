//! README rules 1 and 5: what a request asks to be counted for. A Namespace names its
//! organization by label; a ProjectRequest (whose labels the API server ignores) and an
//! unlabelled Namespace are counted against the requester's default organization. An
//! UPDATE is judged only when it adds or changes the label
//! (`docs/semantics.md#create-and-update`).

use policy_admission::gate::Admitted;
use policy_admission::request::Operation;
use policy_decode::{FieldPath, PolicyError};
use tenancy_rules::organization::named_by;

/// Where the organization comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source<'r> {
    /// The Namespace's organization label (non-empty).
    Label(&'r str),
    /// The requester's only owned tenant, else its default organization (read from its
    /// `User` when configured).
    Requester,
}

/// A request to count: its organization's source, the namespace not to count (on UPDATE,
/// itself) and the paths messages use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target<'r> {
    /// Where the organization comes from.
    pub source: Source<'r>,
    /// The namespace excluded from the count (UPDATE: the namespace itself).
    pub exclude: Option<&'r str>,
    /// Where a quota violation is reported: the label for a labelled Namespace, else
    /// `metadata.name`.
    pub path: FieldPath,
    /// Where "no organization" is reported: the missing label of a Namespace, or
    /// `metadata.name` of a ProjectRequest.
    pub missing_path: FieldPath,
    /// What an owner of several tenants must do (README rule 1).
    pub choose: &'static str,
}

/// What an owner of several tenants creating an unlabelled Namespace must do.
const LABEL_ONE: &str = "set the label to one of them";

/// The kind of the request, as far as the organization is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `v1 Namespace`.
    Namespace,
    /// A `project.openshift.io/v1 ProjectRequest`.
    ProjectRequest,
}

/// The object's `metadata.name` (a string when present, 400 otherwise), else the request's
/// name.
fn name_of<'r>(admitted: &Admitted<'r>) -> Result<Option<&'r str>, PolicyError> {
    let written = match admitted.object.get_object("metadata")? {
        Some(metadata) => metadata.get_str("name")?,
        None => None,
    };
    let name = written.unwrap_or(admitted.request.name.as_str());
    Ok(Some(name).filter(|n| !n.is_empty()))
}

/// README rules 1 and 5: the target of a request, or `None` when nothing is to be judged
/// (an UPDATE that does not add or change the label; a ProjectRequest UPDATE).
pub fn read<'r>(
    admitted: &Admitted<'r>,
    kind: Kind,
    label: &str,
) -> Result<Option<Target<'r>>, PolicyError> {
    let label_path = FieldPath::root("metadata").field("labels").key(label);
    let name_path = FieldPath::root("metadata").field("name");
    let update = admitted.request.operation == Operation::Update;
    if kind == Kind::ProjectRequest {
        // The API server ignores a ProjectRequest's labels: only the requester counts.
        return Ok((!update).then(|| Target {
            source: Source::Requester,
            exclude: None,
            path: name_path.clone(),
            missing_path: name_path,
            choose: "a ProjectRequest cannot name one (create a Namespace labelled with it)",
        }));
    }
    let new = named_by(&admitted.object, label)?;
    if update {
        let old = named_by(&admitted.request.old_object()?, label)?;
        // A removed label, or one left as it was, moves the namespace into no organization.
        if new.is_none() || new == old {
            return Ok(None);
        }
    }
    let exclude = if update { name_of(admitted)? } else { None };
    Ok(Some(match new {
        Some(org) => Target {
            source: Source::Label(org),
            exclude,
            path: label_path.clone(),
            missing_path: label_path,
            choose: LABEL_ONE,
        },
        None => Target {
            source: Source::Requester,
            exclude,
            path: name_path,
            missing_path: label_path,
            choose: LABEL_ONE,
        },
    }))
}
