//! namespace-quota-policy: an organization may have only a limited number of namespaces
//! (APPUiO). A Namespace CREATE, a ProjectRequest, or a Namespace UPDATE that moves it into
//! another organization is refused when the organization already has its limit (README
//! rules 1–5).

pub mod count;
pub mod limit;
pub mod settings;
pub mod target;

use std::borrow::Cow;

use kube_values::labels::is_label_value;
use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::gate::{Gate, HandledKind, NAMESPACE, PROJECT_REQUEST};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, UserInfo};
use policy_decode::{PolicyError, message};
use tenancy_rules::class::skip_on_lookup_error;

pub use crate::settings::Settings;
use crate::target::{Kind, Source, Target};

/// The policy.
pub struct NamespaceQuotaPolicy;

/// The kinds handled: `v1 Namespace` and `project.openshift.io/v1 ProjectRequest`.
const KINDS: [HandledKind; 2] = [NAMESPACE, PROJECT_REQUEST];

/// The kinds handled and the operations judged.
fn gate() -> Gate {
    Gate {
        kinds: &KINDS,
        operations: NamespaceQuotaPolicy::OPERATIONS,
    }
}

impl Policy for NamespaceQuotaPolicy {
    const NAME: &'static str = "namespace-quota-policy";
    // `get_resource` (ConfigMap, User) and `list_resources_all` (Namespaces,
    // ClusterRoleBindings); nothing is listed by namespace.
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
        let kind = match admitted.kind.kind {
            "ProjectRequest" => Kind::ProjectRequest,
            _ => Kind::Namespace,
        };
        // The envelope was checked (the core, and the kind step above); exempt requesters are
        // accepted before anything of the object is read, and a malformed object is a 400
        // for everybody else, exempt through a ClusterRoleBinding or not
        // (docs/semantics.md#request-handling).
        settings.exempt.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |lookups| {
                let label = &settings.organization_label;
                let Some(target) = target::read(&admitted, kind, label)? else {
                    return Ok(Verdict::accept());
                };
                judge(&target, &request.user_info, settings, lookups)
            },
        )
    }
}

/// README rule 1: the target's organization — its label, else the requester's only owned
/// tenant, else its default organization (read only then, and only when configured).
/// `None` when there is none, with the violation or the skipped lookup's warning in
/// `verdict`.
fn organization<'t>(
    target: &Target<'t>,
    user: &'t UserInfo,
    settings: &'t Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<Option<Cow<'t, str>>, PolicyError> {
    let username = user.username.as_str();
    let owned = match target.source {
        Source::Label(org) => return Ok(Some(Cow::Borrowed(org))),
        Source::Requester => settings.owners.tenants_of(username, Some(&user.groups)),
    };
    if let [only] = owned.as_slice() {
        return Ok(Some(Cow::Borrowed(*only)));
    }
    if !owned.is_empty() {
        verdict.violation(
            &target.missing_path,
            format!(
                "requester {username:?} owns several tenants ({}); {}",
                message::join(owned.iter()),
                target.choose
            ),
        );
        return Ok(None);
    }
    let default = match &settings.default_organization {
        Some(source) => source.of(username, lookups),
        None => Ok(None),
    };
    match default {
        Ok(Some(org)) => Ok(Some(Cow::Owned(org))),
        Ok(None) => {
            let problem = if settings.owners.is_empty() {
                format!("no organization label and no default organization for user {username:?}")
            } else {
                format!(
                    "no organization label; requester {username:?} owns no tenant and has no default organization"
                )
            };
            verdict.violation(&target.missing_path, problem);
            Ok(None)
        }
        Err(e) => {
            skip_on_lookup_error(e, &target.path, settings.on_lookup_error, verdict)?;
            Ok(None)
        }
    }
}

/// README rules 1–4 for one target: its organization (its label, the requester's only owned
/// tenant or default organization), the organization's limit and count.
/// A failed lookup rejects (500) or, with `onLookupError: accept`, skips the check with a
/// warning.
pub fn judge(
    target: &Target<'_>,
    user: &UserInfo,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    let on_error = settings.on_lookup_error;
    // Rule 1.
    let Some(org) = organization(target, user, settings, lookups, &mut verdict)? else {
        return Ok(verdict);
    };
    if !is_label_value(&org) {
        // Never a label the count could select by (a comma would add selector terms).
        verdict.violation(
            &target.path,
            format!("organization {org:?} is not a valid label value"),
        );
        return Ok(verdict);
    }
    // Rule 2.
    let limit = match limit::of(&org, settings, lookups) {
        Ok(Ok(limit)) => limit.0,
        Ok(Err(problem)) => {
            verdict.violation(&target.path, problem);
            return Ok(verdict);
        }
        Err(e) => {
            skip_on_lookup_error(e, &target.path, on_error, &mut verdict)?;
            return Ok(verdict);
        }
    };
    // Rule 3.
    let label = &settings.organization_label;
    let existing = match count::count(label, &org, target.exclude, lookups) {
        Ok(n) => n,
        Err(e) => {
            skip_on_lookup_error(e, &target.path, on_error, &mut verdict)?;
            return Ok(verdict);
        }
    };
    // Rule 4.
    if existing >= limit {
        verdict.violation(
            &target.path,
            format!(
                "You cannot create more than {limit} namespaces for organization {org:?} ({existing} exist). \
                 Ask your platform team to raise the quota."
            ),
        );
    }
    Ok(verdict)
}

policy_admission::export_policy!(NamespaceQuotaPolicy);

policy_admission::robustness_tests!(
    NamespaceQuotaPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "defaultQuota": 2,
            "userDefaultOrganizationAnnotation": "appuio.io/default-organization",
            "owners": [{"tenant": "solar", "users": ["alice"]}, {"tenant": "oil", "users": ["alice", "carol"]}],
            "overrides": {"beta": 0},
            "overrideConfigMap": {"namespace": "appuio-cloud", "namePrefix": "override-", "key": "namespaceQuota"},
            "exemptPrincipals": {"users": ["root"], "clusterRoles": ["cluster-admin"]}
        }),
        kinds: &[
            ("", "v1", "Namespace"),
            ("project.openshift.io", "v1", "ProjectRequest")
        ],
        strings: &[
            "metadata",
            "labels",
            "name",
            "appuio.io/organization",
            "acme",
            "beta",
            "u",
            "root",
            "alice",
            "carol"
        ],
        reads: &[
            "v1/Namespace",
            "v1/ConfigMap",
            "user.openshift.io/v1/User",
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding"
        ],
        mutating: false,
        objects: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "acme-dev", "labels": {"appuio.io/organization": "acme"}}}),
            serde_json::json!({"apiVersion": "project.openshift.io/v1", "kind": "ProjectRequest",
                "metadata": {"name": "acme-dev"}, "displayName": "Acme dev"})
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "acme-1", "labels": {"appuio.io/organization": "acme"}}}),
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "override-acme", "namespace": "appuio-cloud"}, "data": {"namespaceQuota": "3"}}),
            serde_json::json!({"apiVersion": "user.openshift.io/v1", "kind": "User",
                "metadata": {"name": "u", "annotations": {"appuio.io/default-organization": "acme"}}}),
            serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "admins"}, "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "User", "name": "admin"}]})
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::{Value, json};

    const LABEL: &str = "appuio.io/organization";

    fn ns(name: &str, org: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {LABEL: org}}})
    }

    fn user(name: &str, org: &str) -> Value {
        json!({"apiVersion": "user.openshift.io/v1", "kind": "User",
            "metadata": {"name": name, "annotations": {"appuio.io/default-organization": org}}})
    }

    /// A cluster where acme has `n` namespaces and u's default organization is acme.
    fn cluster(n: usize) -> Vec<Value> {
        let mut objects: Vec<Value> = (0..n).map(|i| ns(&format!("acme-{i}"), "acme")).collect();
        objects.push(user("u", "acme"));
        objects
    }

    /// APPUiO's configuration: the `User` default unless `settings` name owners (opt-in).
    fn run(request: Value, mut settings: Value, cluster: Vec<Value>) -> ValidationResponse {
        if let Some(map) = settings.as_object_mut()
            && !map.contains_key("owners")
        {
            map.entry("userDefaultOrganizationAnnotation")
                .or_insert(json!("appuio.io/default-organization"));
        }
        let payload = json!({"request": request, "settings": settings});
        evaluate::<NamespaceQuotaPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::new(cluster),
        )
    }

    fn create(object: Value) -> Value {
        json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
            "operation": "CREATE", "userInfo": {"username": "u"}, "object": object})
    }

    #[test]
    fn a_limit_of_n_admits_the_nth_and_refuses_the_next() {
        let new = ns("acme-new", "acme");
        for (existing, allowed) in [(0, true), (2, true), (3, false), (4, false)] {
            let r = run(
                create(new.clone()),
                json!({"defaultQuota": 3}),
                cluster(existing),
            );
            assert_eq!(r.accepted, allowed, "{existing} existing");
        }
        let r = run(create(new.clone()), json!({"defaultQuota": 3}), cluster(3));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"appuio.io/organization\"]: You cannot create more than 3 namespaces for organization \"acme\" (3 exist). Ask your platform team to raise the quota."
            )
        );
        let r = run(create(new), json!({"overrides": {"acme": 0}}), cluster(0));
        assert!(!r.accepted);
    }

    #[test]
    fn unlabelled_namespaces_and_project_requests_count_against_the_default() {
        let unlabelled =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        let r = run(
            create(unlabelled.clone()),
            json!({"defaultQuota": 1}),
            cluster(1),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.name: You cannot create more than 1 namespaces for organization \"acme\" (1 exist). Ask your platform team to raise the quota."
            )
        );
        let mut pr = create(
            json!({"apiVersion": "project.openshift.io/v1", "kind": "ProjectRequest",
            "metadata": {"name": "x", "labels": {LABEL: "beta"}}}),
        );
        pr["kind"] =
            json!({"group": "project.openshift.io", "version": "v1", "kind": "ProjectRequest"});
        let r = run(pr, json!({"defaultQuota": 1}), cluster(1));
        assert!(
            r.message
                .unwrap()
                .contains("organization \"acme\" (1 exist)")
        );
        let r = run(create(unlabelled), json!({}), vec![]);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"appuio.io/organization\"]: no organization label and no default organization for user \"u\""
            )
        );
    }

    #[test]
    fn updates_are_judged_only_when_the_label_is_added_or_changed() {
        let update = |old: Value, new: Value| {
            let mut r = create(new);
            r["operation"] = json!("UPDATE");
            r["oldObject"] = old;
            r
        };
        let full = json!({"defaultQuota": 1});
        // Moved into beta, which is full.
        let mut objects = cluster(1);
        objects.push(ns("beta-1", "beta"));
        let r = run(
            update(ns("a", "acme"), ns("a", "beta")),
            full.clone(),
            objects.clone(),
        );
        assert!(
            r.message
                .unwrap()
                .contains("organization \"beta\" (1 exist)")
        );
        // The namespace itself is not counted: re-labelling beta-1 beta → beta is no change,
        // and from no label to beta it is excluded from beta's count.
        let unlabelled =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "beta-1"}});
        let r = run(
            update(unlabelled, ns("beta-1", "beta")),
            full.clone(),
            objects.clone(),
        );
        assert!(r.accepted, "{:?}", r.message);
        // Removed label, unchanged label: no lookup at all.
        let mut failing = Objects::new(vec![]).failing("Namespace").failing("User");
        for (old, new) in [
            (ns("a", "acme"), json!({"metadata": {"name": "a"}})),
            (ns("a", "acme"), ns("a", "acme")),
        ] {
            let payload = json!({"request": update(old, new), "settings": full});
            let r = evaluate::<NamespaceQuotaPolicy>(
                &serde_json::to_vec(&payload).unwrap(),
                &mut failing,
            );
            assert!(r.accepted);
        }
    }

    #[test]
    fn failed_lookups_reject_or_warn() {
        let new = ns("acme-new", "acme");
        let payload = json!({"request": create(new.clone()), "settings": {}});
        let bytes = serde_json::to_vec(&payload).unwrap();
        let mut failing = Objects::new(vec![]).failing("Namespace");
        let r = evaluate::<NamespaceQuotaPolicy>(&bytes, &mut failing);
        assert_eq!(r.code, Some(500));
        assert_eq!(
            r.message.as_deref(),
            Some("cannot read Namespace list: connection refused")
        );
        let payload = json!({"request": create(new), "settings": {"onLookupError": "accept"}});
        let r =
            evaluate::<NamespaceQuotaPolicy>(&serde_json::to_vec(&payload).unwrap(), &mut failing);
        assert!(r.accepted);
        assert_eq!(
            r.warnings.unwrap_or_default(),
            [
                "cannot read Namespace list: connection refused; metadata.labels[\"appuio.io/organization\"] was not checked (onLookupError: accept)"
            ]
        );
    }

    #[test]
    fn an_unlabelled_namespace_counts_against_the_requesters_only_tenant() {
        let owners = json!([
            {"tenant": "acme", "users": ["alice", "carol"], "groups": ["acme-admins"]},
            {"tenant": "beta", "users": ["carol"]}
        ]);
        let unlabelled =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        let as_user = |user: &str, groups: Value| {
            let mut r = create(unlabelled.clone());
            r["userInfo"] = json!({"username": user, "groups": groups});
            r
        };
        // acme is full: alice's unlabelled Namespace counts against acme, no User read
        let settings = json!({"defaultQuota": 1, "owners": owners});
        let mut failing_user = Objects::new(cluster(1)).failing("User");
        let payload = json!({"request": as_user("alice", json!([])), "settings": settings});
        let r = evaluate::<NamespaceQuotaPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut failing_user,
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.name: You cannot create more than 1 namespaces for organization \"acme\" (1 exist). Ask your platform team to raise the quota."
            )
        );
        // by group
        let r = run(
            as_user("bob", json!(["acme-admins"])),
            settings.clone(),
            cluster(1),
        );
        assert!(
            r.message
                .unwrap()
                .contains("organization \"acme\" (1 exist)")
        );
        // several tenants
        let r = run(as_user("carol", json!([])), settings.clone(), cluster(0));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"appuio.io/organization\"]: requester \"carol\" owns several tenants (acme, beta); set the label to one of them"
            )
        );
        // none, without a default annotation: the User is not read
        let r = run(as_user("dave", json!([])), settings.clone(), cluster(0));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"appuio.io/organization\"]: no organization label; requester \"dave\" owns no tenant and has no default organization"
            )
        );
        // none, with the annotation: u's default acme
        let with_default = json!({"defaultQuota": 1, "owners": owners,
            "userDefaultOrganizationAnnotation": "appuio.io/default-organization"});
        let r = run(as_user("u", json!([])), with_default, cluster(1));
        assert!(
            r.message
                .unwrap()
                .contains("organization \"acme\" (1 exist)")
        );
        // a labelled Namespace is judged by its label, owners aside
        let r = run(
            create(ns("y", "beta")),
            json!({"defaultQuota": 1, "owners": owners}),
            cluster(1),
        );
        assert!(r.accepted, "{:?}", r.message);
    }

    #[test]
    fn without_the_annotation_the_user_is_never_read() {
        let unlabelled =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        let payload = json!({"request": create(unlabelled), "settings": {}});
        let mut failing = Objects::new(vec![]).failing("User");
        let r =
            evaluate::<NamespaceQuotaPolicy>(&serde_json::to_vec(&payload).unwrap(), &mut failing);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"appuio.io/organization\"]: no organization label and no default organization for user \"u\""
            )
        );
        assert_eq!(r.code, Some(403));
    }
}
