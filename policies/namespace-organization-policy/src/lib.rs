//! namespace-organization-policy: every user Namespace and OpenShift Project belongs to an
//! organization (a tenant) its requester may use — a tenant it owns (Capsule), a member's
//! organization for users, the organization of its own namespace for service accounts — and
//! gets the requester's only tenant, or its default organization, written when it names none
//! (APPUiO and Capsule, README rules 1–8).

pub mod flows;
pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::gate::{Admitted, Gate, HandledKind, NAMESPACE, PROJECT};
use policy_admission::metadata::string_map;
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError};
use serde_json::Value;
use tenancy_rules::organization::named_by;

use crate::flows::{Requester, Target};
pub use crate::settings::Settings;

/// The policy.
pub struct NamespaceOrganizationPolicy;

/// The prefix of service-account usernames.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The kinds handled (Namespaces, OpenShift Projects) and the operations judged.
fn gate() -> Gate {
    const KINDS: [HandledKind; 2] = [NAMESPACE, PROJECT];
    Gate {
        kinds: &KINDS,
        operations: NamespaceOrganizationPolicy::OPERATIONS,
    }
}

impl Policy for NamespaceOrganizationPolicy {
    const NAME: &'static str = "namespace-organization-policy";
    // Users, membership objects and Namespaces by name; ClusterRoleBindings listed.
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_AND_LIST_ALL;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(admitted) = gate().admit(Self::NAME, request)? else {
            return Ok(Verdict::accept());
        };
        // README rule 2: a Project is judged for the requester its annotation names, never
        // exempt.
        if admitted.kind == &PROJECT {
            return judge(&admitted, settings, lookups);
        }
        // README rule 3: exempt requesters of a Namespace are accepted once the request is
        // well-formed, before anything of the object is read; a malformed object is a 400
        // for everybody else (docs/semantics.md#request-handling).
        settings.exempt_principals.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |lookups| judge(&admitted, settings, lookups),
        )
    }
}

/// README rules 1 to 8 for a judged request: the organization label of the object (and on
/// UPDATE of the old object), then the Project's or the Namespace's flows.
fn judge(
    admitted: &Admitted<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let request = admitted.request;
    let label = settings.organization_label.as_str();
    let target = Target {
        organization: named_by(&admitted.object, label)?,
        path: FieldPath::root("metadata").field("labels").key(label),
        name: name_of(admitted)?,
        create: request.operation == Operation::Create,
    };
    let old = match request.operation {
        Operation::Update => Some(request.old_object()?),
        _ => None,
    };
    // README rule 1: an UPDATE that keeps the organization is not judged (no lookup).
    if let Some(old) = &old
        && named_by(old, label)? == target.organization
    {
        return Ok(Verdict::accept());
    }
    if admitted.kind == &PROJECT {
        project(admitted, old.as_ref(), &target, settings, lookups)
    } else {
        namespace(request, &target, settings, lookups)
    }
}

/// README rule 2: a Project is judged for the requester its annotation names (on UPDATE the
/// old object's: an editor cannot name another requester); never exempt.
fn project(
    admitted: &Admitted<'_>,
    old: Option<&At<'_>>,
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let annotation = settings.requester_annotation.as_str();
    let source = old.unwrap_or(&admitted.object);
    // the new object's annotations must be well-formed too
    string_map(Some(&admitted.object), "annotations")?;
    let requester = string_map(Some(source), "annotations")?
        .and_then(|annotations| annotations.get(annotation))
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty());
    let Some(requester) = requester else {
        return Ok(Verdict::accept());
    };
    if requester.starts_with(SERVICE_ACCOUNT_PREFIX) {
        let mut verdict = Verdict::accept();
        verdict.violation(
            &FieldPath::root("metadata")
                .field("annotations")
                .key(annotation),
            format!("service accounts may not create projects (requester {requester:?})"),
        );
        return Ok(verdict);
    }
    let requester = Requester {
        username: requester,
        groups: None,
    };
    flows::judge(requester, None, target, settings, lookups)
}

/// README rule 3: a Namespace of a requester that is not exempt (the exemption is the
/// caller's) is judged by its owners, the service-account flow or the user flow.
fn namespace(
    request: &AdmissionRequest,
    target: &Target<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let user = &request.user_info;
    let account = service_account(&user.username)?;
    let requester = Requester {
        username: &user.username,
        groups: Some(&user.groups),
    };
    flows::judge(requester, account, target, settings, lookups)
}

/// The object's `metadata.name` (a string when present, 400 otherwise), else the request's
/// name; empty when neither is given.
fn name_of<'r>(admitted: &Admitted<'r>) -> Result<&'r str, PolicyError> {
    let written = match admitted.object.get_object("metadata")? {
        Some(metadata) => metadata.get_str("name")?,
        None => None,
    };
    Ok(written.unwrap_or(admitted.request.name.as_str()))
}

/// The namespace and name of a service-account username: exactly four `:`-separated
/// non-empty parts (400 otherwise); `None` for any other username, which must not be empty.
fn service_account(username: &str) -> Result<Option<(&str, &str)>, PolicyError> {
    let path = FieldPath::root("request")
        .field("userInfo")
        .field("username");
    if username.is_empty() {
        return Err(PolicyError::malformed(&path, "missing"));
    }
    let Some(rest) = username.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
        return Ok(None);
    };
    match rest.split_once(':') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains(':') => {
            Ok(Some((ns, name)))
        }
        _ => Err(PolicyError::malformed(
            &path,
            format!(
                "{username:?} is not a service account username \
                 (system:serviceaccount:<namespace>:<name>)"
            ),
        )),
    }
}

policy_admission::export_policy!(NamespaceOrganizationPolicy);

#[cfg(test)]
mod tests;

policy_admission::robustness_tests!(
    NamespaceOrganizationPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"defaultOrganization": {}, "membership": {},
            "owners": [{"tenant": "solar", "users": ["alice"], "forceTenantPrefix": true},
                {"tenant": "oil", "users": ["alice"]}],
            "exemptPrincipals": {"clusterRoles": ["cluster-admin"]}}),
        kinds: &[
            ("", "v1", "Namespace"),
            ("project.openshift.io", "v1", "Project")
        ],
        mutating: true,
        reads: &[
            "user.openshift.io/v1/User",
            "user.openshift.io/v1/Group",
            "v1/Namespace",
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding"
        ],
        strings: &[
            "labels",
            "annotations",
            "appuio.io/organization",
            "openshift.io/requester",
            "acme",
            "beta",
            "u",
            "system:serviceaccount:acme-ci:deployer",
            "system:serviceaccount:a:b:c",
            "kube:admin",
            "alice",
            "solar",
            "solar-dev"
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "user.openshift.io/v1", "kind": "User",
                "metadata": {"name": "u", "annotations": {"appuio.io/default-organization": "acme"}}}),
            serde_json::json!({"apiVersion": "user.openshift.io/v1", "kind": "Group",
                "metadata": {"name": "acme"}, "users": ["u", "kube:admin"]}),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "acme-ci", "labels": {"appuio.io/organization": "acme"}}}),
        ],
        ..Default::default()
    }
);
