#![no_main]
tenancy_policies_fuzz::fuzz_validate!(container_registry_policy::ContainerRegistryPolicy);
