//! Native tests of the flows (README rules 1–6) against an in-memory cluster.

use super::*;
use policy_admission::cluster::Objects;
use policy_admission::policy::{ValidationResponse, evaluate};
use serde_json::json;

fn cluster() -> Objects {
    Objects::new(vec![
        json!({"apiVersion": "user.openshift.io/v1", "kind": "User",
            "metadata": {"name": "u", "annotations": {"appuio.io/default-organization": "acme"}}}),
        json!({"apiVersion": "user.openshift.io/v1", "kind": "User", "metadata": {"name": "v"}}),
        json!({"apiVersion": "user.openshift.io/v1", "kind": "Group",
            "metadata": {"name": "acme"}, "users": ["u", "kube:admin"]}),
        json!({"apiVersion": "user.openshift.io/v1", "kind": "Group",
            "metadata": {"name": "beta"}, "users": ["w"]}),
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "acme-ci", "labels": {"appuio.io/organization": "acme"}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}}),
    ])
}

fn namespace(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new", "labels": labels}})
}

fn run_in(
    objects: &mut Objects,
    kind: Value,
    op: &str,
    user: &str,
    object: Value,
    old: Value,
    settings: Value,
) -> ValidationResponse {
    let payload = json!({
        "request": {"kind": kind, "operation": op, "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": object, "oldObject": old},
        "settings": settings
    });
    evaluate::<NamespaceOrganizationPolicy>(&serde_json::to_vec(&payload).unwrap(), objects)
}

fn ns_kind() -> Value {
    json!({"group": "", "version": "v1", "kind": "Namespace"})
}

fn create(user: &str, object: Value) -> ValidationResponse {
    run_in(
        &mut cluster(),
        ns_kind(),
        "CREATE",
        user,
        object,
        Value::Null,
        json!({}),
    )
}

#[test]
fn user_flow_injects_the_default_and_checks_membership() {
    let r = create(
        "u",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}}),
    );
    assert!(r.accepted, "{:?}", r.message);
    let mutated = r.mutated_object.unwrap();
    assert_eq!(
        mutated["metadata"]["labels"],
        json!({"appuio.io/organization": "acme"})
    );
    let again = create("u", mutated);
    assert!(again.accepted && again.mutated_object.is_none());
    let r = create("u", namespace(json!({"appuio.io/organization": "beta"})));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: requester "u" is not a member of organization "beta""#
        )
    );
    let r = create("v", namespace(json!({})));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: no organization label and no default organization"#
        )
    );
    // kube:admin has no User object: never read when the label is set.
    let mut objects = cluster().failing("User");
    let r = run_in(
        &mut objects,
        ns_kind(),
        "CREATE",
        "kube:admin",
        namespace(json!({"appuio.io/organization": "acme"})),
        Value::Null,
        json!({}),
    );
    assert!(r.accepted && r.mutated_object.is_none(), "{:?}", r.message);
}

#[test]
fn service_account_flow() {
    let sa = "system:serviceaccount:acme-ci:deployer";
    let r = create(sa, namespace(json!({})));
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["appuio.io/organization"],
        "acme"
    );
    let r = create(sa, namespace(json!({"appuio.io/organization": "beta"})));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: service accounts may only use the organization of their namespace ("acme")"#
        )
    );
    let r = create("system:serviceaccount:plain:x", namespace(json!({})));
    assert_eq!(r.code, Some(403));
    let r = create("system:serviceaccount:a:b:c", namespace(json!({})));
    assert_eq!(r.code, Some(400));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"request.userInfo.username: "system:serviceaccount:a:b:c" is not a service account username (system:serviceaccount:<namespace>:<name>)"#
        )
    );
}

#[test]
fn projects_follow_their_requester() {
    let kind = json!({"group": "project.openshift.io", "version": "v1", "kind": "Project"});
    let project = |requester: Value| {
        json!({"apiVersion": "project.openshift.io/v1", "kind": "Project",
            "metadata": {"name": "p", "annotations": {"openshift.io/requester": requester}}})
    };
    let admin = "system:serviceaccount:openshift-apiserver:openshift-apiserver-sa";
    let r = run_in(
        &mut cluster(),
        kind.clone(),
        "CREATE",
        admin,
        project(json!("u")),
        Value::Null,
        json!({}),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["appuio.io/organization"],
        "acme"
    );
    let r = run_in(
        &mut cluster(),
        kind.clone(),
        "CREATE",
        admin,
        project(json!("system:serviceaccount:x:y")),
        Value::Null,
        json!({}),
    );
    assert!(
        r.message
            .unwrap()
            .contains("service accounts may not create projects")
    );
    let mut bare = project(json!("u"));
    bare["metadata"]["annotations"] = json!({});
    let r = run_in(
        &mut cluster(),
        kind.clone(),
        "CREATE",
        admin,
        bare,
        Value::Null,
        json!({}),
    );
    assert!(r.accepted && r.mutated_object.is_none());
    // An editor naming another requester on UPDATE is judged as the old requester.
    let mut old = project(json!("u"));
    old["metadata"]["labels"] = json!({"appuio.io/organization": "acme"});
    let mut new = project(json!("w"));
    new["metadata"]["labels"] = json!({"appuio.io/organization": "beta"});
    let r = run_in(&mut cluster(), kind, "UPDATE", "u", new, old, json!({}));
    assert!(
        r.message
            .unwrap()
            .contains(r#"requester "u" is not a member of organization "beta""#)
    );
}

#[test]
fn unchanged_organizations_are_not_judged_and_removals_are_refilled() {
    let old = namespace(json!({"appuio.io/organization": "acme"}));
    let mut failing = Objects::default()
        .failing("User")
        .failing("Group")
        .failing("Namespace");
    let r = run_in(
        &mut failing,
        ns_kind(),
        "UPDATE",
        "v",
        old.clone(),
        old.clone(),
        json!({}),
    );
    assert!(r.accepted && r.mutated_object.is_none());
    let r = run_in(
        &mut cluster(),
        ns_kind(),
        "UPDATE",
        "u",
        namespace(json!({})),
        old,
        json!({}),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["appuio.io/organization"],
        "acme"
    );
}

#[test]
fn failed_lookups_reject_or_skip_without_injection() {
    let mut failing = cluster().failing("Group");
    let r = run_in(
        &mut failing,
        ns_kind(),
        "CREATE",
        "u",
        namespace(json!({})),
        Value::Null,
        json!({}),
    );
    assert_eq!(r.code, Some(500));
    assert!(r.message.unwrap().starts_with("cannot read Group \"acme\""));
    let r = run_in(
        &mut failing,
        ns_kind(),
        "CREATE",
        "u",
        namespace(json!({})),
        Value::Null,
        json!({"onLookupError": "accept"}),
    );
    assert!(r.accepted && r.mutated_object.is_none());
    assert_eq!(r.warnings.map(|w| w.len()), Some(1));
}

#[test]
fn request_groups_membership() {
    let settings =
        json!({"membership": {"source": "RequestGroups", "nameTemplate": "org:{organization}"}});
    let payload = |groups: Value| {
        json!({"request": {"kind": ns_kind(), "operation": "CREATE",
            "userInfo": {"username": "u", "groups": groups},
            "object": namespace(json!({"appuio.io/organization": "acme"}))}, "settings": settings})
    };
    let run = |p: Value| {
        evaluate::<NamespaceOrganizationPolicy>(
            &serde_json::to_vec(&p).unwrap(),
            &mut Objects::default(),
        )
    };
    assert!(run(payload(json!(["org:acme"]))).accepted);
    assert!(!run(payload(json!(["acme"]))).accepted);
}
