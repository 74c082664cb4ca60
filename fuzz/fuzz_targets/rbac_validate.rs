#![no_main]
tenancy_policies_fuzz::fuzz_validate!(rbac_policy::RbacPolicy);
