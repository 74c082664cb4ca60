//! The bundle's install directory (`deploy/`, `kubectl apply -k deploy/`): the dedicated
//! PolicyServer, its ServiceAccount, the ClusterRole granting exactly the reads every policy's
//! `contextAwareResources` names (and its binding), the cluster-wide baseline bindings, the
//! ClusterRoles aggregating the Gateway API into `view`, `edit` and `admin`
//! ([`crate::ceiling`]), and the kustomization listing them (README "Installing").

use std::collections::{BTreeMap, BTreeSet};

use policy_host::kube::plural;
use serde_json::{Value, json};

use crate::binding::{ModuleSource, to_yaml};
use crate::catalogue::{BUNDLE, BundlePolicy};
use crate::ceiling::{gateway_api_roles, tenant_ceiling};
use crate::error::{Error, Result};
pub use crate::placement::{KUBEWARDEN_NAMESPACE, SYSTEM_NAMESPACES};
use crate::placement::{Placement, Written, labels, skip_selector};
use crate::translate::CAPSULE_TENANT_LABEL;

/// The policy-server image the install runs: Kubewarden 1.36's, where its own chart
/// `kubewarden-defaults` 3.14.1 takes it from (`make e2e` tests the same release).
pub const POLICY_SERVER_IMAGE: &str = "ghcr.io/kubewarden/adm-controller/policy-server:v1.36.0";

/// What the install directory is written for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallOptions {
    /// PolicyServer, mode, failure policy, timeout and opt-in rules of every binding.
    pub placement: Placement,
    /// Where the modules are published.
    pub source: ModuleSource,
    /// The namespace of the PolicyServer's ServiceAccount (Kubewarden's controller's).
    pub namespace: String,
    /// The policy-server image.
    pub image: String,
    /// PolicyServer replicas.
    pub replicas: u32,
    /// Namespaces the baseline bindings skip (`namespaceSelector`); the install's namespace
    /// is added.
    pub skip_namespaces: Vec<String>,
    /// The Namespace label naming the tenant, which namespace-metadata-policy protects.
    pub tenant_label: String,
}

impl Default for InstallOptions {
    fn default() -> Self {
        InstallOptions {
            placement: Placement::default(),
            source: ModuleSource {
                registry: "ghcr.io/tenancy-policies".into(),
                version: concat!("v", env!("CARGO_PKG_VERSION")).into(),
            },
            namespace: KUBEWARDEN_NAMESPACE.into(),
            image: POLICY_SERVER_IMAGE.into(),
            replicas: 2,
            skip_namespaces: SYSTEM_NAMESPACES.iter().map(|s| (*s).to_owned()).collect(),
            tenant_label: CAPSULE_TENANT_LABEL.into(),
        }
    }
}

/// One file of the install directory.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallFile {
    /// Its name in the directory.
    pub name: &'static str,
    /// Its objects.
    pub manifests: Vec<Value>,
}

impl InstallFile {
    /// The file's text: a header saying how it was written, then the YAML stream.
    pub fn text(&self) -> Result<String> {
        Ok(format!(
            "# Written by `capsule-bindings install` (`make deploy`); a test regenerates it and \
             compares.\n{}",
            to_yaml(&self.manifests)?
        ))
    }
}

/// The name of the ClusterRole granting the policies' reads.
pub fn lookup_role_name(options: &InstallOptions) -> String {
    format!("{}-lookups", options.placement.policy_server)
}

/// The files of the install directory, kustomization last.
pub fn install(options: &InstallOptions) -> Result<Vec<InstallFile>> {
    options.placement.validate()?;
    let server = &options.placement.policy_server;
    let account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": server, "namespace": options.namespace, "labels": labels("policy-server")},
    });
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": lookup_role_name(options), "labels": labels("policy-server")},
        "rules": lookup_rules()?,
    });
    let role_binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": lookup_role_name(options), "labels": labels("policy-server")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": lookup_role_name(options)},
        "subjects": [{"kind": "ServiceAccount", "name": server, "namespace": options.namespace}],
    });
    let policy_server = json!({
        "apiVersion": "policies.kubewarden.io/v1",
        "kind": "PolicyServer",
        "metadata": {"name": server, "labels": labels("policy-server")},
        "spec": {
            "image": options.image,
            "replicas": options.replicas,
            "minAvailable": 1,
            "serviceAccountName": server,
            // sized for 1,000 tenants (make install-footprint): their 12,003 bindings hold
            // 222 MiB once loaded, 285 MiB at the peak of loading
            "requests": {"cpu": "250m", "memory": "256Mi"},
            "limits": {"memory": "512Mi"},
            "env": [{"name": "KUBEWARDEN_LOG_LEVEL", "value": "info"}],
        },
    });
    let files = vec![
        InstallFile {
            name: "service-account.yaml",
            manifests: vec![account],
        },
        InstallFile {
            name: "cluster-role.yaml",
            manifests: vec![role],
        },
        InstallFile {
            name: "cluster-role-binding.yaml",
            manifests: vec![role_binding],
        },
        InstallFile {
            name: "policy-server.yaml",
            manifests: vec![policy_server],
        },
        InstallFile {
            name: "baseline.yaml",
            manifests: baseline(options)?,
        },
        InstallFile {
            name: "gateway-api-roles.yaml",
            manifests: gateway_api_roles("baseline"),
        },
    ];
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": files.iter().map(|f| f.name).collect::<Vec<_>>(),
    });
    let mut files = files;
    files.push(InstallFile {
        name: "kustomization.yaml",
        manifests: vec![kustomization],
    });
    Ok(files)
}

/// The ClusterRole rules: `get`, `list`, `watch` on every resource some policy's
/// `contextAwareResources` names, one rule per API group, nothing more.
pub fn lookup_rules() -> Result<Vec<Value>> {
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for policy in &BUNDLE {
        for resource in policy.metadata()?.context_aware_resources {
            let group = match resource.api_version.split_once('/') {
                Some((group, _)) => group.to_owned(),
                None => String::new(),
            };
            groups
                .entry(group)
                .or_default()
                .insert(plural(&resource.kind));
        }
    }
    Ok(groups
        .into_iter()
        .map(|(group, resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": ["get", "list", "watch"]})
        })
        .collect())
}

/// The cluster-wide bindings every tenancy installation needs: namespace-metadata
/// protecting the tenant label and ownerReferences, rbac-policy with a tenant ceiling, and
/// protected-objects keeping the platform's objects in tenant namespaces.
pub fn baseline(options: &InstallOptions) -> Result<Vec<Value>> {
    let cluster_admins = json!({"clusterRoles": ["cluster-admin"]});
    let bindings = [
        (
            "namespace-metadata-policy",
            json!({
                "protectedLabels": [options.tenant_label],
                "protectOwnerReferences": true,
                "exemptPrincipals": cluster_admins,
            }),
        ),
        (
            "rbac-policy",
            json!({
                "ceiling": tenant_ceiling(),
                "exemptPrincipals": {
                    "clusterRoles": ["cluster-admin"],
                    "users": ["system:apiserver", "system:kube-controller-manager"],
                    "serviceAccounts": ["kube-system:clusterrole-aggregation-controller"],
                },
            }),
        ),
        (
            "protected-objects-policy",
            json!({"exemptPrincipals": cluster_admins}),
        ),
    ];
    bindings
        .into_iter()
        .map(|(name, settings)| {
            let policy = BundlePolicy::find(name)
                .ok_or_else(|| Error::Invalid(format!("{name}: not a policy of the bundle")))?;
            baseline_binding(policy, settings, options)
        })
        .collect()
}

/// One baseline binding: the policy's metadata, placed, over every namespace but the skipped.
fn baseline_binding(
    policy: &BundlePolicy,
    settings: Value,
    options: &InstallOptions,
) -> Result<Value> {
    let metadata = policy.metadata()?;
    let short = policy.name.trim_end_matches("-policy");
    let mut rules = metadata.rules.clone();
    rules.extend(policy.opt_in_rules(&options.placement.opt_in)?);
    let skipped = options
        .skip_namespaces
        .iter()
        .chain([&options.namespace])
        .map(String::as_str);
    let written = Written {
        name: format!("tenancy-{short}"),
        labels: labels("baseline"),
        module: format!(
            "registry://{}/tenancy-policies/{}:{}",
            options.source.registry.trim_end_matches('/'),
            policy.name,
            options.source.version
        ),
        mutating: metadata.mutating,
        rules,
        namespace_selector: skip_selector(skipped),
        settings,
        mode: None,
        match_conditions: Vec::new(),
    };
    Ok(options.placement.binding(written, &metadata))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::Mode;

    fn find<'a>(files: &'a [InstallFile], name: &str) -> &'a [Value] {
        &files.iter().find(|f| f.name == name).unwrap().manifests
    }

    #[test]
    fn the_role_reads_what_the_policies_declare_in_their_groups() {
        let rules = lookup_rules().unwrap();
        let core = rules
            .iter()
            .find(|r| r["apiGroups"] == json!([""]))
            .unwrap();
        assert_eq!(
            core["resources"],
            json!(["configmaps", "namespaces", "nodes", "persistentvolumes"])
        );
        assert_eq!(core["verbs"], json!(["get", "list", "watch"]));
        let openshift = rules
            .iter()
            .find(|r| r["apiGroups"] == json!(["user.openshift.io"]))
            .unwrap();
        assert_eq!(openshift["resources"], json!(["groups", "users"]));
    }

    #[test]
    fn everything_written_is_placed_labelled_and_listed() {
        let options = InstallOptions {
            placement: Placement {
                mode: Mode::Monitor,
                opt_in: vec!["openshift".into()],
                ..Placement::default()
            },
            skip_namespaces: vec!["kube-system".into()],
            ..InstallOptions::default()
        };
        let files = install(&options).unwrap();
        let kustomization = &find(&files, "kustomization.yaml")[0];
        assert_eq!(
            kustomization["resources"],
            json!([
                "service-account.yaml",
                "cluster-role.yaml",
                "cluster-role-binding.yaml",
                "policy-server.yaml",
                "baseline.yaml",
                "gateway-api-roles.yaml"
            ])
        );
        for file in files.iter().filter(|f| f.name != "kustomization.yaml") {
            for m in &file.manifests {
                assert_eq!(
                    m["metadata"]["labels"]["app.kubernetes.io/part-of"], "tenancy-policies",
                    "{}",
                    file.name
                );
            }
        }
        let baseline = find(&files, "baseline.yaml");
        let names: Vec<&str> = baseline
            .iter()
            .map(|b| b["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "tenancy-namespace-metadata",
                "tenancy-rbac",
                "tenancy-protected-objects"
            ]
        );
        for b in baseline {
            assert_eq!(b["spec"]["mode"], "monitor");
            assert_eq!(b["spec"]["policyServer"], "tenancy-policies");
            assert_eq!(b["spec"]["failurePolicy"], "Fail");
            assert_eq!(
                b["spec"]["namespaceSelector"]["matchExpressions"][0]["values"],
                json!(["kube-system", "kubewarden"])
            );
            assert!(
                b["metadata"]["annotations"]["io.kubewarden.policy.severity"].is_string(),
                "{b}"
            );
        }
        let namespaces = &baseline[0]["spec"];
        assert_eq!(
            namespaces["settings"]["protectedLabels"],
            json!(["capsule.clastix.io/tenant"])
        );
        assert!(
            namespaces["rules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["apiGroups"] == json!(["project.openshift.io"])),
            "the openshift opt-in adds Projects"
        );
        let server = &find(&files, "policy-server.yaml")[0];
        assert_eq!(server["spec"]["serviceAccountName"], "tenancy-policies");
        let binding = &find(&files, "cluster-role-binding.yaml")[0];
        assert_eq!(binding["subjects"][0]["namespace"], "kubewarden");
        assert_eq!(binding["roleRef"]["name"], "tenancy-policies-lookups");
    }

    #[test]
    fn without_opt_in_only_served_versions_are_routed() {
        let files = install(&InstallOptions::default()).unwrap();
        for binding in find(&files, "baseline.yaml") {
            for rule in binding["spec"]["rules"].as_array().unwrap() {
                assert_ne!(
                    rule["apiGroups"],
                    json!(["project.openshift.io"]),
                    "{binding}"
                );
                assert_eq!(rule["apiVersions"], json!(["v1"]), "{binding}");
            }
        }
    }

    #[test]
    fn a_bad_placement_writes_nothing() {
        let options = InstallOptions {
            placement: Placement {
                opt_in: vec!["helm".into()],
                ..Placement::default()
            },
            ..InstallOptions::default()
        };
        assert!(install(&options).is_err());
    }
}
