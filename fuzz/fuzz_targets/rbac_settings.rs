#![no_main]
tenancy_policies_fuzz::fuzz_settings!(rbac_policy::RbacPolicy);
