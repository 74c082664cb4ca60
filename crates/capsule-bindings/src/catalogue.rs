//! The policies a Tenant translates into, and every policy of the bundle, with their
//! `metadata.yml` (and opt-in rules, `optional-rules.yml`) built into the binary.

use policy_host::Metadata;
use policy_host::metadata::{OptionalRules, optional_rules_from_yaml_str};
use serde_json::Value;

use crate::error::{Error, Result};

/// One policy of the bundle a Tenant field can translate into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The policy's name (`priority-class-policy`): folder, OCI repository and wasm name.
    pub name: &'static str,
    /// The name without `-policy`, the suffix of binding names (`solar-priority-class`).
    pub short: &'static str,
    /// What the policy enforces for a tenant, for listings.
    pub enforces: &'static str,
    /// The policy's `metadata.yml`, as in the repository.
    metadata_yml: &'static str,
}

impl Policy {
    /// The policy's metadata (rules, `mutating`, context-aware resources).
    pub fn metadata(&self) -> Result<Metadata> {
        Metadata::from_yaml_str(self.metadata_yml, self.name).map_err(Error::from)
    }

    /// The rules of the opt-in sets named in `opt_in` this policy has (`optional-rules.yml`).
    pub fn opt_in_rules(&self, opt_in: &[String]) -> Result<Vec<Value>> {
        match BundlePolicy::find(self.name) {
            Some(bundled) => bundled.opt_in_rules(opt_in),
            None => Ok(Vec::new()),
        }
    }

    /// The file name of the built module (`priority_class_policy.wasm`).
    pub fn wasm_file(&self) -> String {
        format!("{}.wasm", self.name.replace('-', "_"))
    }

    /// The policy called `name` (with or without `-policy`).
    pub fn find(name: &str) -> Option<&'static Policy> {
        POLICIES.iter().find(|p| p.name == name || p.short == name)
    }
}

/// The policies, in the order their bindings are written.
pub const POLICIES: [Policy; 18] = [
    Policy {
        name: "node-selector-policy",
        short: "node-selector",
        enforces: "the tenant's node pool (`nodeSelector`)",
        metadata_yml: include_str!("../../../policies/node-selector-policy/metadata.yml"),
    },
    Policy {
        name: "priority-class-policy",
        short: "priority-class",
        enforces: "allowed and default PriorityClasses",
        metadata_yml: include_str!("../../../policies/priority-class-policy/metadata.yml"),
    },
    Policy {
        name: "runtime-class-policy",
        short: "runtime-class",
        enforces: "allowed and default RuntimeClasses",
        metadata_yml: include_str!("../../../policies/runtime-class-policy/metadata.yml"),
    },
    Policy {
        name: "device-class-policy",
        short: "device-class",
        enforces: "DeviceClasses of ResourceClaims",
        metadata_yml: include_str!("../../../policies/device-class-policy/metadata.yml"),
    },
    Policy {
        name: "persistent-volume-claim-policy",
        short: "persistent-volume-claim",
        enforces: "StorageClasses and cross-tenant PersistentVolume binding",
        metadata_yml: include_str!("../../../policies/persistent-volume-claim-policy/metadata.yml"),
    },
    Policy {
        name: "limit-range-policy",
        short: "limit-range",
        enforces: "LimitRange items",
        metadata_yml: include_str!("../../../policies/limit-range-policy/metadata.yml"),
    },
    Policy {
        name: "image-pull-policy",
        short: "image-pull",
        enforces: "allowed image pull policies",
        metadata_yml: include_str!("../../../policies/image-pull-policy/metadata.yml"),
    },
    Policy {
        name: "container-registry-policy",
        short: "container-registry",
        enforces: "allowed registries",
        metadata_yml: include_str!("../../../policies/container-registry-policy/metadata.yml"),
    },
    Policy {
        name: "service-policy",
        short: "service",
        enforces: "Service types, external IPs, forbidden labels and annotations",
        metadata_yml: include_str!("../../../policies/service-policy/metadata.yml"),
    },
    Policy {
        name: "ingress-policy",
        short: "ingress",
        enforces: "Ingress classes, hostnames, wildcards and collisions",
        metadata_yml: include_str!("../../../policies/ingress-policy/metadata.yml"),
    },
    Policy {
        name: "gateway-class-policy",
        short: "gateway-class",
        enforces: "allowed and default GatewayClasses",
        metadata_yml: include_str!("../../../policies/gateway-class-policy/metadata.yml"),
    },
    Policy {
        name: "protected-objects-policy",
        short: "protected-objects",
        enforces: "the tenant's NetworkPolicies",
        metadata_yml: include_str!("../../../policies/protected-objects-policy/metadata.yml"),
    },
    Policy {
        name: "namespace-quota-policy",
        short: "namespace-quota",
        enforces: "the tenant's namespace quota (`namespaceOptions.quota`)",
        metadata_yml: include_str!("../../../policies/namespace-quota-policy/metadata.yml"),
    },
    Policy {
        name: "namespace-metadata-policy",
        short: "namespace-metadata",
        enforces: "forbidden labels and annotations of the tenant's namespaces",
        metadata_yml: include_str!("../../../policies/namespace-metadata-policy/metadata.yml"),
    },
    Policy {
        name: "tenant-metadata-policy",
        short: "tenant-metadata",
        enforces: "labels and annotations written into or required of the tenant's objects",
        metadata_yml: include_str!("../../../policies/tenant-metadata-policy/metadata.yml"),
    },
    Policy {
        name: "tenant-cordon-policy",
        short: "tenant-cordon",
        enforces: "a cordoned tenant's namespaces frozen (`cordoned`)",
        metadata_yml: include_str!("../../../policies/tenant-cordon-policy/metadata.yml"),
    },
    Policy {
        name: "pod-restriction-policy",
        short: "pod-restriction",
        enforces: "QoS classes and schedulers of a rule's workloads",
        metadata_yml: include_str!("../../../policies/pod-restriction-policy/metadata.yml"),
    },
    Policy {
        name: "namespace-organization-policy",
        short: "namespace-organization",
        enforces: "which tenant a new namespace belongs to (every Tenant's owners, one cluster-wide binding)",
        metadata_yml: include_str!("../../../policies/namespace-organization-policy/metadata.yml"),
    },
];

/// One policy of the bundle, for the install directory (`capsule-bindings install`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundlePolicy {
    /// The policy's name (`rbac-policy`).
    pub name: &'static str,
    metadata_yml: &'static str,
    optional_rules_yml: &'static str,
}

impl BundlePolicy {
    /// The policy's metadata.
    pub fn metadata(&self) -> Result<Metadata> {
        Metadata::from_yaml_str(self.metadata_yml, self.name).map_err(Error::from)
    }

    /// The policy's opt-in rule sets, by name.
    pub fn optional_rules(&self) -> Result<OptionalRules> {
        optional_rules_from_yaml_str(self.optional_rules_yml, self.name).map_err(Error::from)
    }

    /// The rules of the sets named in `opt_in` that this policy has, in set order.
    pub fn opt_in_rules(&self, opt_in: &[String]) -> Result<Vec<Value>> {
        let sets = self.optional_rules()?;
        Ok(opt_in
            .iter()
            .filter_map(|name| sets.get(name))
            .flatten()
            .cloned()
            .collect())
    }

    /// The policy called `name`.
    pub fn find(name: &str) -> Option<&'static BundlePolicy> {
        BUNDLE.iter().find(|p| p.name == name)
    }
}

/// The names of every opt-in rule set of the bundle.
pub fn opt_in_sets() -> Result<Vec<String>> {
    let mut names = std::collections::BTreeSet::new();
    for policy in &BUNDLE {
        names.extend(policy.optional_rules()?.into_keys());
    }
    Ok(names.into_iter().collect())
}

macro_rules! bundled {
    ($name:literal) => {
        BundlePolicy {
            name: $name,
            metadata_yml: include_str!(concat!("../../../policies/", $name, "/metadata.yml")),
            optional_rules_yml: "",
        }
    };
    ($name:literal, optional) => {
        BundlePolicy {
            name: $name,
            metadata_yml: include_str!(concat!("../../../policies/", $name, "/metadata.yml")),
            optional_rules_yml: include_str!(concat!(
                "../../../policies/",
                $name,
                "/optional-rules.yml"
            )),
        }
    };
}

/// Every policy of the bundle (the folders under `policies/`), by name.
pub const BUNDLE: [BundlePolicy; 23] = [
    bundled!("container-registry-policy"),
    bundled!("device-class-policy"),
    bundled!("gateway-class-policy"),
    bundled!("image-pull-policy"),
    bundled!("ingress-policy", optional),
    bundled!("limit-range-policy"),
    bundled!("namespace-metadata-policy", optional),
    bundled!("namespace-organization-policy", optional),
    bundled!("namespace-quota-policy", optional),
    bundled!("node-selector-policy"),
    bundled!("persistent-volume-claim-policy"),
    bundled!("pod-restriction-policy"),
    bundled!("pod-security-policy"),
    bundled!("pod-toleration-policy"),
    bundled!("priority-class-policy"),
    bundled!("protected-objects-policy"),
    bundled!("rbac-policy"),
    bundled!("resource-ratio-policy"),
    bundled!("run-once-deadline-policy"),
    bundled!("runtime-class-policy"),
    bundled!("service-policy"),
    bundled!("tenant-cordon-policy"),
    bundled!("tenant-metadata-policy"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metadata_reads() {
        for policy in &POLICIES {
            let metadata = policy.metadata().unwrap();
            assert!(!metadata.rules.is_empty(), "{}", policy.name);
        }
    }

    #[test]
    fn the_bundle_is_every_policy_folder_with_its_opt_in_rules() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
        let mut folders: Vec<(String, bool)> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("metadata.yml").is_file())
            .map(|p| {
                let optional = p.join("optional-rules.yml").is_file();
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    optional,
                )
            })
            .collect();
        folders.sort();
        let bundle: Vec<(String, bool)> = BUNDLE
            .iter()
            .map(|p| (p.name.to_owned(), !p.optional_rules_yml.is_empty()))
            .collect();
        assert_eq!(bundle, folders);
        for policy in &BUNDLE {
            policy.metadata().unwrap();
            policy.optional_rules().unwrap();
        }
        assert_eq!(opt_in_sets().unwrap(), ["legacy-ingress", "openshift"]);
        let ingress = Policy::find("ingress").unwrap();
        assert_eq!(
            ingress
                .opt_in_rules(&["legacy-ingress".into()])
                .unwrap()
                .len(),
            2
        );
        assert!(
            ingress
                .opt_in_rules(&["openshift".into()])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn finds_by_either_name() {
        assert_eq!(Policy::find("ingress").unwrap().name, "ingress-policy");
        assert_eq!(Policy::find("ingress-policy").unwrap().short, "ingress");
        assert!(Policy::find("rbac-policy").is_none());
        assert_eq!(POLICIES[1].wasm_file(), "priority_class_policy.wasm");
    }
}
