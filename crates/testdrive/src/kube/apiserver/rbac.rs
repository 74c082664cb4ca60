//! The reads a ServiceAccount may make, from the ClusterRoles bound to it, and the API
//! server's `403 Forbidden` answer to the others.

use serde_json::{Value, json};

use super::Answer;
use policy_host::kube::{listed, strings};

/// One rule of a ClusterRole.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    api_groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    resource_names: Vec<String>,
}

/// A read of the API: its verb and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `get`, `list` or `watch`.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource, with its subresource (`pods/status`).
    pub resource: String,
    /// The namespace of the request (`None`: cluster scope).
    pub namespace: Option<String>,
    /// The object's name (gets only).
    pub name: Option<String>,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core".to_owned()
        } else {
            self.group.clone()
        };
        write!(f, "{} {}/{}", self.verb, group, self.resource)?;
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        if let Some(name) = &self.name {
            write!(f, " named {name}")?;
        }
        Ok(())
    }
}

impl Access {
    /// The read a request target makes, `None` for discovery and other non-resource paths.
    pub fn of_target(path: &str, watch: bool) -> Option<Access> {
        let (group, rest) = if let Some(rest) = path.strip_prefix("/api/v1/") {
            (String::new(), rest)
        } else {
            let rest = path.strip_prefix("/apis/")?;
            let mut parts = rest.splitn(3, '/');
            let group = parts.next()?;
            let _version = parts.next()?;
            (group.to_owned(), parts.next()?)
        };
        let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        let (namespace, parts) = match parts.as_slice() {
            ["namespaces", ns, resource, tail @ ..] => (Some((*ns).to_owned()), {
                let mut v = vec![*resource];
                v.extend_from_slice(tail);
                v
            }),
            // a Namespace object: the API server names its own namespace as the request's
            ["namespaces", ns] => (Some((*ns).to_owned()), vec!["namespaces", ns]),
            other => (None, other.to_vec()),
        };
        let (resource, name) = match parts.as_slice() {
            [resource] => ((*resource).to_owned(), None),
            [resource, name] => ((*resource).to_owned(), Some((*name).to_owned())),
            [resource, name, sub] => (format!("{resource}/{sub}"), Some((*name).to_owned())),
            _ => return None,
        };
        let verb = match (&name, watch) {
            (Some(_), _) => "get",
            (None, true) => "watch",
            (None, false) => "list",
        };
        Some(Access {
            verb: verb.to_owned(),
            group,
            resource,
            namespace,
            name,
        })
    }
}

/// What one ServiceAccount may read: the rules of every ClusterRole a ClusterRoleBinding
/// binds to it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rbac {
    user: String,
    rules: Vec<Rule>,
}

impl Rbac {
    /// The permissions of ServiceAccount `namespace`/`name` among `objects` (ClusterRoles and
    /// ClusterRoleBindings; other kinds are ignored).
    pub fn for_service_account(objects: &[Value], namespace: &str, name: &str) -> Rbac {
        let kind = |o: &Value| o.get("kind").and_then(Value::as_str).map(str::to_owned);
        let bound: Vec<String> = objects
            .iter()
            .filter(|o| kind(o).as_deref() == Some("ClusterRoleBinding"))
            .filter(|b| {
                b.get("subjects")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|s| {
                        s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                            && s.get("name").and_then(Value::as_str) == Some(name)
                            && s.get("namespace").and_then(Value::as_str) == Some(namespace)
                    })
            })
            .filter(|b| b.pointer("/roleRef/kind").and_then(Value::as_str) == Some("ClusterRole"))
            .filter_map(|b| b.pointer("/roleRef/name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let rules = objects
            .iter()
            .filter(|o| kind(o).as_deref() == Some("ClusterRole"))
            .filter(|r| {
                r.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| bound.iter().any(|b| b == n))
            })
            .flat_map(|r| r.get("rules").and_then(Value::as_array).cloned())
            .flatten()
            .map(|r| Rule {
                api_groups: strings(&r, "apiGroups"),
                resources: strings(&r, "resources"),
                verbs: strings(&r, "verbs"),
                resource_names: strings(&r, "resourceNames"),
            })
            .collect();
        Rbac {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            rules,
        }
    }

    /// The user name the API server gives the ServiceAccount.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Whether a rule grants `access` (`resourceNames` narrow a rule to gets of those names).
    pub fn grants(&self, access: &Access) -> bool {
        self.rules.iter().any(|r| {
            listed(&r.api_groups, &access.group)
                && listed(&r.verbs, &access.verb)
                && (listed(&r.resources, &access.resource)
                    || access.resource.split_once('/').is_some_and(|(res, _)| {
                        r.resources.iter().any(|x| x == &format!("{res}/*"))
                    }))
                && (r.resource_names.is_empty()
                    || access
                        .name
                        .as_ref()
                        .is_some_and(|n| r.resource_names.contains(n)))
        })
    }

    /// The API server's answer to a read the role does not grant.
    pub(super) fn forbidden(&self, access: &Access) -> Answer {
        let qualified = if access.group.is_empty() {
            access.resource.clone()
        } else {
            format!("{}.{}", access.resource, access.group)
        };
        let scope = match &access.namespace {
            Some(ns) => format!("in the namespace {ns:?}"),
            None => "at the cluster scope".to_owned(),
        };
        let reason = format!(
            "User {:?} cannot {} resource {:?} in API group {:?} {scope}",
            self.user, access.verb, access.resource, access.group
        );
        let message = match &access.name {
            Some(name) => format!("{qualified} {name:?} is forbidden: {reason}"),
            None => format!("{qualified} is forbidden: {reason}"),
        };
        let mut details = serde_json::Map::new();
        if let Some(name) = &access.name {
            details.insert("name".into(), json!(name));
        }
        if !access.group.is_empty() {
            details.insert("group".into(), json!(access.group));
        }
        details.insert("kind".into(), json!(access.resource));
        Answer {
            status: 403,
            body: json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure", "message": message, "reason": "Forbidden",
                "details": details, "code": 403})
            .to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;

    fn rbac() -> Rbac {
        let objects = policy_host::cluster::yaml_objects(
            r#"
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: lookups}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
- {apiGroups: [scheduling.k8s.io], resources: [priorityclasses], verbs: [get]}
- {apiGroups: [""], resources: [configmaps], verbs: [get], resourceNames: [settings]}
---
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: unbound}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: lookups}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lookups}
subjects:
- {kind: ServiceAccount, name: ps, namespace: kubewarden}
---
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: other}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: unbound}
subjects:
- {kind: ServiceAccount, name: other, namespace: kubewarden}
"#,
            "t",
        )
        .unwrap();
        Rbac::for_service_account(&objects, "kubewarden", "ps")
    }

    fn access(path: &str, watch: bool) -> Access {
        Access::of_target(path, watch).unwrap()
    }

    #[test]
    fn reads_the_access_of_a_target() {
        let a = access(
            "/apis/networking.k8s.io/v1/namespaces/a/ingresses/web",
            false,
        );
        assert_eq!(
            (a.verb.as_str(), a.group.as_str(), a.resource.as_str()),
            ("get", "networking.k8s.io", "ingresses")
        );
        assert_eq!(
            (a.namespace.as_deref(), a.name.as_deref()),
            (Some("a"), Some("web"))
        );
        let ns = access("/api/v1/namespaces/team-a", false);
        assert_eq!(
            (ns.resource.as_str(), ns.namespace.as_deref()),
            ("namespaces", Some("team-a"))
        );
        assert_eq!(access("/api/v1/namespaces", true).verb, "watch");
        assert_eq!(access("/api/v1/pods", false).verb, "list");
        assert_eq!(
            access("/api/v1/namespaces/a/pods/p/status", false).resource,
            "pods/status"
        );
        assert!(Access::of_target("/api/v1", false).is_none());
        assert!(Access::of_target("/apis/apps/v1", false).is_none());
        assert!(Access::of_target("/version", false).is_none());
    }

    #[test]
    fn grants_only_the_bound_roles_rules() {
        let rbac = rbac();
        assert_eq!(rbac.user(), "system:serviceaccount:kubewarden:ps");
        assert!(rbac.grants(&access("/api/v1/namespaces", true)));
        assert!(rbac.grants(&access(
            "/apis/scheduling.k8s.io/v1/priorityclasses/gold",
            false
        )));
        assert!(!rbac.grants(&access("/apis/scheduling.k8s.io/v1/priorityclasses", false)));
        assert!(!rbac.grants(&access("/api/v1/namespaces/a/pods", false)));
        assert!(rbac.grants(&access("/api/v1/namespaces/a/configmaps/settings", false)));
        assert!(!rbac.grants(&access("/api/v1/namespaces/a/configmaps/other", false)));
        assert!(!rbac.grants(&access("/api/v1/namespaces/a/configmaps", false)));
    }

    #[test]
    fn refuses_as_the_api_server_does() {
        let rbac = rbac();
        let answer = rbac.forbidden(&access("/apis/scheduling.k8s.io/v1/priorityclasses", false));
        assert_eq!(answer.status, 403);
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(
            body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "priorityclasses.scheduling.k8s.io is forbidden: User \"system:serviceaccount:kubewarden:ps\" cannot list resource \"priorityclasses\" in API group \"scheduling.k8s.io\" at the cluster scope",
                "reason": "Forbidden", "details": {"group": "scheduling.k8s.io", "kind": "priorityclasses"}, "code": 403})
        );
        let body: Value = serde_json::from_str(
            &rbac
                .forbidden(&access("/api/v1/namespaces/team-a/pods/web", false))
                .body,
        )
        .unwrap();
        assert_eq!(
            body["message"],
            "pods \"web\" is forbidden: User \"system:serviceaccount:kubewarden:ps\" cannot get resource \"pods\" in API group \"\" in the namespace \"team-a\""
        );
        assert_eq!(body["details"], json!({"name": "web", "kind": "pods"}));
    }
}
