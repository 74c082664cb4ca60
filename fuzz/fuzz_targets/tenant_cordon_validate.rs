#![no_main]
tenancy_policies_fuzz::fuzz_validate!(tenant_cordon_policy::TenantCordonPolicy);
