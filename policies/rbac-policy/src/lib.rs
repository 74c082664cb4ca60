//! rbac-policy: tenant Roles and ClusterRoles stay under a ceiling of permissions and grant
//! no wildcard, escalation or forbidden permission; bindings grant no forbidden role to
//! anyone and no role to forbidden subjects (README rules 1–5).

pub mod bindings;
pub mod roles;
pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::gate::{Gate, HandledKind};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::PolicyError;

pub use settings::Settings;

const RBAC: &str = "rbac.authorization.k8s.io";

/// `rbac.authorization.k8s.io/v1 Role`.
pub const ROLE: HandledKind = HandledKind {
    group: RBAC,
    versions: &["v1"],
    kind: "Role",
};
/// `rbac.authorization.k8s.io/v1 ClusterRole`.
pub const CLUSTER_ROLE: HandledKind = HandledKind {
    group: RBAC,
    versions: &["v1"],
    kind: "ClusterRole",
};
/// `rbac.authorization.k8s.io/v1 RoleBinding`.
pub const ROLE_BINDING: HandledKind = HandledKind {
    group: RBAC,
    versions: &["v1"],
    kind: "RoleBinding",
};
/// `rbac.authorization.k8s.io/v1 ClusterRoleBinding`.
pub const CLUSTER_ROLE_BINDING: HandledKind = HandledKind {
    group: RBAC,
    versions: &["v1"],
    kind: "ClusterRoleBinding",
};

/// The kinds handled and the operations judged.
const GATE: Gate = Gate {
    kinds: &[ROLE, CLUSTER_ROLE, ROLE_BINDING, CLUSTER_ROLE_BINDING],
    operations: &[Operation::Create, Operation::Update],
};

/// The policy.
pub struct RbacPolicy;

impl Policy for RbacPolicy {
    const NAME: &'static str = "rbac-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_AND_LIST_ALL;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(admitted) = GATE.admit(Self::NAME, request)? else {
            return Ok(Verdict::accept());
        };
        // README rule 5: exempt principals are accepted; ClusterRoleBindings are read only
        // when the request would be refused (docs/semantics.md#exemptions).
        settings.exempt_principals.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |lookups| {
                let mut verdict = Verdict::accept();
                let object = &admitted.object;
                match admitted.kind.kind {
                    "Role" => roles::judge(request, object, false, settings, &mut verdict)?,
                    "ClusterRole" => roles::judge(request, object, true, settings, &mut verdict)?,
                    "RoleBinding" => {
                        let namespace = Some(request.namespace()?);
                        bindings::judge(
                            request,
                            object,
                            namespace,
                            settings,
                            lookups,
                            &mut verdict,
                        )?
                    }
                    _ => bindings::judge(request, object, None, settings, lookups, &mut verdict)?,
                }
                Ok(verdict)
            },
        )
    }
}

policy_admission::export_policy!(RbacPolicy);

policy_admission::robustness_tests!(
    RbacPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "forbiddenRules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["deletecollection"]}],
            "ceiling": [{"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": ["get", "list"]}],
            "checkBoundRoles": true,
            "forbidForeignServiceAccounts": true,
            "allowedClusterRoleRefs": ["tools-user"],
            "exemptPrincipals": {"users": ["root"], "clusterRoles": ["cluster-admin"]}
        }),
        kinds: &[
            ("rbac.authorization.k8s.io", "v1", "Role"),
            ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
            ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
        ],
        strings: &[
            "rules",
            "verbs",
            "apiGroups",
            "resources",
            "resourceNames",
            "nonResourceURLs",
            "roleRef",
            "subjects",
            "kind",
            "name",
            "namespace",
            "aggregationRule",
            "*",
            "get",
            "pods",
            "ClusterRole",
            "Role",
            "User",
            "Group",
            "ServiceAccount",
            "tools-user",
            "cluster-admin",
            "system:authenticated"
        ],
        reads: &[
            "rbac.authorization.k8s.io/v1/ClusterRole",
            "rbac.authorization.k8s.io/v1/Role",
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding"
        ],
        mutating: false,
        objects: vec![
            serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r", "namespace": "tool-x"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "b", "namespace": "tool-x"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tools-user"},
                "subjects": [{"kind": "User", "name": "x"}]})
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "tools-user"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
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
    use policy_admission::policy::evaluate;
    use serde_json::{Value, json};

    const TOOLS_USER: &str =
        include_str!("../../../test_data/rbac-policy/toolforge/tools-user.yaml");

    fn tools_user() -> Value {
        serde_yaml::from_str(TOOLS_USER).unwrap()
    }

    /// The README's Toolforge settings: the whole tools-user role as the ceiling.
    fn toolforge() -> Value {
        json!({
            "forbiddenRules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["deletecollection"]}],
            "ceiling": tools_user()["rules"],
            "exemptPrincipals": {"clusterRoles": ["cluster-admin"]}
        })
    }

    fn review(
        kind: &str,
        operation: &str,
        object: Value,
        old: Option<Value>,
        settings: Value,
        user: &str,
    ) -> Vec<u8> {
        let resource = format!("{}s", kind.to_lowercase());
        let mut request = json!({
            "uid": "u", "kind": {"group": RBAC, "version": "v1", "kind": kind},
            "resource": {"group": RBAC, "version": "v1", "resource": resource},
            "operation": operation, "namespace": "tool-x",
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": object
        });
        if let Some(old) = old {
            request["oldObject"] = old;
        }
        serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap()
    }

    fn role(rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "namespace": "tool-x"}, "rules": rules})
    }

    fn run(payload: Vec<u8>, cluster: Vec<Value>) -> (bool, Option<String>) {
        let r = evaluate::<RbacPolicy>(&payload, &mut Objects::new(cluster));
        (r.accepted, r.message)
    }

    #[test]
    fn every_permission_of_the_toolforge_table_is_accepted_alone() {
        let rules = tools_user()["rules"].as_array().unwrap().clone();
        let mut judged = 0;
        for rule in rules {
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        let forbidden = verb == "deletecollection"
                            && (resource == "configmaps" || resource == "secrets");
                        let one = json!([{"apiGroups": [group], "resources": [resource], "verbs": [verb]}]);
                        let (accepted, message) = run(
                            review("Role", "CREATE", role(one), None, toolforge(), "x"),
                            vec![],
                        );
                        assert_eq!(
                            accepted, !forbidden,
                            "{group} {resource} {verb}: {message:?}"
                        );
                        judged += 1;
                    }
                }
            }
        }
        assert_eq!(judged, 293);
        // the whole tools-user role is under its own ceiling, except deletecollection
        let (accepted, message) = run(
            review(
                "ClusterRole",
                "CREATE",
                tools_user(),
                None,
                toolforge(),
                "x",
            ),
            vec![],
        );
        assert!(!accepted);
        assert_eq!(
            message.as_deref(),
            Some("rules[1]: grants \"deletecollection\" on configmaps, which is forbidden")
        );
    }

    #[test]
    fn spec_examples_of_rules() {
        let settings = toolforge();
        let check = |rules: Value| {
            run(
                review("Role", "CREATE", role(rules), None, settings.clone(), "x"),
                vec![],
            )
        };
        let (ok, m) = check(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
        assert!(!ok);
        let m = m.unwrap();
        assert!(m.starts_with("rules[0]: \"*\" in verbs is a wildcard, which is not allowed; rules[0]: grants \"escalate\" on roles in API group \"rbac.authorization.k8s.io\", which allows privilege escalation; rules[0]: grants \"impersonate\" on users"), "{m}");
        assert!(
            m.contains("rules[0]: grants \"deletecollection\" on configmaps, which is forbidden"),
            "{m}"
        );
        assert!(
            m.ends_with(
                "rules[0]: \"*\" on \"*\" in API group \"*\" is outside the tenant ceiling"
            ),
            "{m}"
        );
        let (ok, m) =
            check(json!([{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}]));
        assert!(
            !ok && m.unwrap().starts_with(
                "rules[0]: grants \"impersonate\" on users, which allows privilege escalation"
            )
        );
        let (ok, _) = check(
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]),
        );
        assert!(ok);
        let (ok, m) = check(json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]));
        assert!(!ok);
        assert_eq!(
            m.as_deref(),
            Some("rules[0]: \"get\" on \"nodes\" is outside the tenant ceiling")
        );
        let (ok, m) =
            check(json!([{"apiGroups": [""], "nonResourceURLs": ["/metrics"], "verbs": ["get"]}]));
        assert!(
            !ok && m.unwrap().starts_with(
                "rules[0].nonResourceURLs: a Role cannot grant non-resource URLs (\"/metrics\")"
            )
        );
    }

    #[test]
    fn cluster_admins_are_exempt_through_their_binding() {
        let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "root"}, "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "name": "root"}]});
        let wild = role(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
        let (ok, _) = run(
            review("Role", "CREATE", wild.clone(), None, toolforge(), "root"),
            vec![crb.clone()],
        );
        assert!(ok);
        let (ok, _) = run(
            review("Role", "CREATE", wild, None, toolforge(), "x"),
            vec![crb],
        );
        assert!(!ok);
    }

    #[test]
    fn updates_judge_only_new_rules_and_subjects() {
        let old_rules = json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]);
        let mut new_rules = old_rules.clone();
        new_rules
            .as_array_mut()
            .unwrap()
            .push(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}));
        let (ok, m) = run(
            review(
                "Role",
                "UPDATE",
                role(new_rules),
                Some(role(old_rules.clone())),
                toolforge(),
                "x",
            ),
            vec![],
        );
        assert!(ok, "{m:?}");
        new_rules = old_rules.clone();
        new_rules
            .as_array_mut()
            .unwrap()
            .push(json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}));
        let (ok, m) = run(
            review(
                "Role",
                "UPDATE",
                role(new_rules),
                Some(role(old_rules)),
                toolforge(),
                "x",
            ),
            vec![],
        );
        assert!(!ok);
        assert_eq!(
            m.as_deref(),
            Some("rules[1]: \"list\" on \"nodes\" is outside the tenant ceiling")
        );
        let binding = |subjects: Value| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "tool-x"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": subjects})
        };
        let old = binding(json!([{"kind": "User", "name": "a"}]));
        let relabelled = {
            let mut b = old.clone();
            b["metadata"]["labels"] = json!({"x": "y"});
            b
        };
        let (ok, _) = run(
            review(
                "RoleBinding",
                "UPDATE",
                relabelled,
                Some(old.clone()),
                json!({}),
                "x",
            ),
            vec![],
        );
        assert!(ok, "a binding that predates the policy can be relabelled");
        let added = binding(
            json!([{"kind": "User", "name": "a"}, {"kind": "Group", "name": "system:authenticated"}]),
        );
        let (ok, m) = run(
            review("RoleBinding", "UPDATE", added, Some(old), json!({}), "x"),
            vec![],
        );
        assert!(!ok);
        assert_eq!(
            m.as_deref(),
            Some(
                "roleRef: binding ClusterRole \"cluster-admin\" is not allowed; subjects[1]: binding to group \"system:authenticated\" is not allowed"
            )
        );
    }
}
