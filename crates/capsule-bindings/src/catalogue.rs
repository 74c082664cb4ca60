//! The policies a Tenant translates into, with their `metadata.yml` built into the binary.

use testdrive::Metadata;

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
pub const POLICIES: [Policy; 12] = [
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
    fn finds_by_either_name() {
        assert_eq!(Policy::find("ingress").unwrap().name, "ingress-policy");
        assert_eq!(Policy::find("ingress-policy").unwrap().short, "ingress");
        assert!(Policy::find("rbac-policy").is_none());
        assert_eq!(POLICIES[1].wasm_file(), "priority_class_policy.wasm");
    }
}
