#![no_main]
tenancy_policies_fuzz::fuzz_settings!(tenant_cordon_policy::TenantCordonPolicy);
