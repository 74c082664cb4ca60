#![no_main]
tenancy_policies_fuzz::fuzz_settings!(container_registry_policy::ContainerRegistryPolicy);
