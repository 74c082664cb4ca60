//! Native tests of the flows (README rules 1–8) against an in-memory cluster.

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
        "settings": appuio(settings)
    });
    evaluate::<NamespaceOrganizationPolicy>(&serde_json::to_vec(&payload).unwrap(), objects)
}

/// APPUiO's configuration: the `User` default and `GroupObject` membership unless `settings`
/// say otherwise (they are opt-in).
fn appuio(mut settings: Value) -> Value {
    if let Some(map) = settings.as_object_mut() {
        map.entry("defaultOrganization").or_insert(json!({}));
        if !map.contains_key("owners") {
            map.entry("membership").or_insert(json!({}));
        }
    }
    settings
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
            "object": namespace(json!({"appuio.io/organization": "acme"}))}, "settings": appuio(settings.clone())})
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

/// Capsule's owners on vanilla Kubernetes: the tenant label, no `User`, no Group objects.
fn owners_settings(extra: Value) -> Value {
    let mut settings = json!({
        "organizationLabel": "capsule.clastix.io/tenant",
        "owners": [
            {"tenant": "solar", "users": ["alice", "carol"], "groups": ["solar-admins"]},
            {"tenant": "oil", "users": ["carol"], "forceTenantPrefix": true},
            {"tenant": "wind", "serviceAccounts": ["system:serviceaccount:wind-system:robot"]}
        ]
    });
    if let (Some(map), Some(extra)) = (settings.as_object_mut(), extra.as_object()) {
        map.extend(extra.clone());
    }
    settings
}

fn capsule(
    op: &str,
    user: &str,
    groups: Value,
    object: Value,
    old: Value,
    settings: Value,
) -> ValidationResponse {
    let payload = json!({
        "request": {"kind": ns_kind(), "operation": op, "userInfo": {"username": user, "groups": groups},
            "object": object, "oldObject": old},
        "settings": settings
    });
    // Nothing may be read: no User, no Group, no Namespace exists.
    let mut empty = Objects::default()
        .failing("User")
        .failing("Group")
        .failing("Namespace");
    evaluate::<NamespaceOrganizationPolicy>(&serde_json::to_vec(&payload).unwrap(), &mut empty)
}

fn tenant_ns(name: &str, tenant: Option<&str>) -> Value {
    match tenant {
        Some(t) => json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"capsule.clastix.io/tenant": t}}}),
        None => json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    }
}

const TENANT: &str = r#"metadata.labels["capsule.clastix.io/tenant"]"#;

#[test]
fn the_only_owned_tenant_is_written_without_any_lookup() {
    let r = capsule(
        "CREATE",
        "alice",
        json!([]),
        tenant_ns("dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert!(r.accepted, "{:?}", r.message);
    let mutated = r.mutated_object.unwrap();
    assert_eq!(
        mutated["metadata"]["labels"],
        json!({"capsule.clastix.io/tenant": "solar"})
    );
    // idempotent: the written object is accepted unchanged
    let again = capsule(
        "CREATE",
        "alice",
        json!([]),
        mutated,
        Value::Null,
        owners_settings(json!({})),
    );
    assert!(again.accepted && again.mutated_object.is_none());
    // by group and by service account
    let r = capsule(
        "CREATE",
        "bob",
        json!(["solar-admins"]),
        tenant_ns("dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["capsule.clastix.io/tenant"],
        "solar"
    );
    let r = capsule(
        "CREATE",
        "system:serviceaccount:wind-system:robot",
        json!([]),
        tenant_ns("dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["capsule.clastix.io/tenant"],
        "wind"
    );
}

#[test]
fn several_tenants_need_the_label_or_a_forced_prefix() {
    let r = capsule(
        "CREATE",
        "carol",
        json!([]),
        tenant_ns("dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.message.as_deref(),
        Some(
            format!(
                "{TENANT}: requester \"carol\" owns several tenants (oil, solar); set the label to one of them"
            )
            .as_str()
        )
    );
    // oil forces its prefix: oil-dev picks oil
    let r = capsule(
        "CREATE",
        "carol",
        json!([]),
        tenant_ns("oil-dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["capsule.clastix.io/tenant"],
        "oil"
    );
    // solar does not force its prefix: solar-dev picks nothing
    let r = capsule(
        "CREATE",
        "carol",
        json!([]),
        tenant_ns("solar-dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert!(!r.accepted);
    // with the global switch, solar-dev picks solar
    let r = capsule(
        "CREATE",
        "carol",
        json!([]),
        tenant_ns("solar-dev", None),
        Value::Null,
        owners_settings(json!({"forceTenantPrefix": true})),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["capsule.clastix.io/tenant"],
        "solar"
    );
    // the label chooses: accepted unchanged
    let r = capsule(
        "CREATE",
        "carol",
        json!([]),
        tenant_ns("dev", Some("solar")),
        Value::Null,
        owners_settings(json!({})),
    );
    assert!(r.accepted && r.mutated_object.is_none(), "{:?}", r.message);
}

#[test]
fn a_tenant_not_owned_is_refused_naming_what_is_owned() {
    let r = capsule(
        "CREATE",
        "alice",
        json!([]),
        tenant_ns("dev", Some("oil")),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.message.unwrap(),
        format!(
            "metadata.name: \"dev\" must start with \"oil-\": tenant \"oil\" forces its prefix; \
             {TENANT}: requester \"alice\" is not an owner of tenant \"oil\" (owns: solar)"
        )
    );
    let r = capsule(
        "CREATE",
        "bob",
        json!([]),
        tenant_ns("dev", Some("solar")),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.message.unwrap(),
        format!("{TENANT}: requester \"bob\" is not an owner of tenant \"solar\" (owns no tenant)")
    );
    let r = capsule(
        "CREATE",
        "bob",
        json!([]),
        tenant_ns("dev", None),
        Value::Null,
        owners_settings(json!({})),
    );
    assert_eq!(
        r.message.unwrap(),
        format!("{TENANT}: requester \"bob\" owns no tenant")
    );
    assert_eq!(r.code, Some(403));
}

#[test]
fn the_forced_prefix_is_judged_on_create_only() {
    let r = capsule(
        "CREATE",
        "alice",
        json!([]),
        tenant_ns("dev", None),
        Value::Null,
        owners_settings(json!({"forceTenantPrefix": true})),
    );
    assert_eq!(
        r.message.as_deref(),
        Some(
            "metadata.name: \"dev\" must start with \"solar-\": tenant \"solar\" forces its prefix"
        )
    );
    assert!(r.mutated_object.is_none());
    // the entry's own setting wins over the top-level one
    let mut settings = owners_settings(json!({"forceTenantPrefix": true}));
    settings["owners"][0]["forceTenantPrefix"] = json!(false);
    let r = capsule(
        "CREATE",
        "alice",
        json!([]),
        tenant_ns("dev", None),
        Value::Null,
        settings,
    );
    assert!(r.accepted, "{:?}", r.message);
    // UPDATE moving dev into solar: owned, no prefix rule
    let r = capsule(
        "UPDATE",
        "alice",
        json!([]),
        tenant_ns("dev", Some("solar")),
        tenant_ns("dev", None),
        owners_settings(json!({"forceTenantPrefix": true})),
    );
    assert!(r.accepted && r.mutated_object.is_none(), "{:?}", r.message);
    // "solar" alone is not "solar-": the prefix needs its dash
    let r = capsule(
        "CREATE",
        "alice",
        json!([]),
        tenant_ns("solarium", Some("solar")),
        Value::Null,
        owners_settings(json!({"forceTenantPrefix": true})),
    );
    assert!(!r.accepted);
}

#[test]
fn updates_keep_rule_one_and_rewrite_a_removed_label() {
    let settings = owners_settings(json!({}));
    // unchanged label: accepted with no lookup even for a non-owner
    let r = capsule(
        "UPDATE",
        "bob",
        json!([]),
        tenant_ns("dev", Some("oil")),
        tenant_ns("dev", Some("oil")),
        settings.clone(),
    );
    assert!(r.accepted && r.mutated_object.is_none());
    // removed label: written back from the owner's only tenant
    let r = capsule(
        "UPDATE",
        "alice",
        json!([]),
        tenant_ns("dev", None),
        tenant_ns("dev", Some("solar")),
        settings.clone(),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["capsule.clastix.io/tenant"],
        "solar"
    );
    // changed to a tenant not owned
    let r = capsule(
        "UPDATE",
        "alice",
        json!([]),
        tenant_ns("dev", Some("oil")),
        tenant_ns("dev", Some("solar")),
        settings,
    );
    assert!(!r.accepted);
}

#[test]
fn owners_first_then_membership_and_the_default() {
    // APPUiO and owners together: u owns nothing, its default and Group acme still work;
    // alice owns solar without any lookup.
    let settings = json!({"owners": [{"tenant": "solar", "users": ["alice"]}],
        "defaultOrganization": {}, "membership": {}});
    let run = |user: &str, object: Value| {
        run_in(
            &mut cluster(),
            ns_kind(),
            "CREATE",
            user,
            object,
            Value::Null,
            settings.clone(),
        )
    };
    let r = run("u", namespace(json!({})));
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["appuio.io/organization"],
        "acme"
    );
    let r = run("alice", namespace(json!({})));
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["appuio.io/organization"],
        "solar"
    );
    let r = run("u", namespace(json!({"appuio.io/organization": "beta"})));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: requester "u" is not an owner of tenant "beta" (owns no tenant) nor a member of organization "beta""#
        )
    );
    let r = run("v", namespace(json!({})));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: requester "v" owns no tenant and has no default organization"#
        )
    );
}

#[test]
fn without_default_organization_the_user_is_never_read() {
    // membership only: the User of u is not read (it would fail)
    let payload = json!({
        "request": {"kind": ns_kind(), "operation": "CREATE", "userInfo": {"username": "u"},
            "object": namespace(json!({}))},
        "settings": {"membership": {}}
    });
    let mut objects = Objects::default().failing("User");
    let r = evaluate::<NamespaceOrganizationPolicy>(
        &serde_json::to_vec(&payload).unwrap(),
        &mut objects,
    );
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: no organization label (no default organization is configured)"#
        )
    );
}

#[test]
fn projects_use_owners_by_username_only() {
    let kind = json!({"group": "project.openshift.io", "version": "v1", "kind": "Project"});
    let project = |requester: &str| {
        json!({"apiVersion": "project.openshift.io/v1", "kind": "Project",
            "metadata": {"name": "dev", "annotations": {"openshift.io/requester": requester}}})
    };
    let payload = |requester: &str| {
        json!({"request": {"kind": kind, "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:openshift-infra:project-controller", "groups": ["solar-admins"]},
            "object": project(requester)}, "settings": owners_settings(json!({}))})
    };
    let r = evaluate::<NamespaceOrganizationPolicy>(
        &serde_json::to_vec(&payload("alice")).unwrap(),
        &mut Objects::default(),
    );
    assert_eq!(
        r.mutated_object.unwrap()["metadata"]["labels"]["capsule.clastix.io/tenant"],
        "solar"
    );
    // the groups of the creating identity are not the requester's
    let r = evaluate::<NamespaceOrganizationPolicy>(
        &serde_json::to_vec(&payload("bob")).unwrap(),
        &mut Objects::default(),
    );
    assert_eq!(
        r.message.unwrap(),
        format!("{TENANT}: requester \"bob\" owns no tenant")
    );
}

#[test]
fn a_default_written_without_membership_is_accepted_again() {
    // owners and the default, no membership: u owns nothing, acme is written unchecked and
    // the written object is accepted (README rule 5, idempotence); another label is refused.
    let settings = json!({"owners": [{"tenant": "solar", "users": ["alice"]}],
        "defaultOrganization": {}});
    let run = |object: Value| {
        let payload = json!({
            "request": {"kind": ns_kind(), "operation": "CREATE", "userInfo": {"username": "u"},
                "object": object},
            "settings": settings
        });
        evaluate::<NamespaceOrganizationPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut cluster(),
        )
    };
    let r = run(namespace(json!({})));
    let mutated = r.mutated_object.unwrap();
    assert_eq!(
        mutated["metadata"]["labels"]["appuio.io/organization"],
        "acme"
    );
    let again = run(mutated);
    assert!(
        again.accepted && again.mutated_object.is_none(),
        "{:?}",
        again.message
    );
    let r = run(namespace(json!({"appuio.io/organization": "beta"})));
    assert_eq!(
        r.message.as_deref(),
        Some(
            r#"metadata.labels["appuio.io/organization"]: requester "u" is not an owner of tenant "beta" (owns no tenant) nor its default organization (default: "acme")"#
        )
    );
}
