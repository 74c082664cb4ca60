#![no_main]
tenancy_policies_fuzz::fuzz_validate!(tenant_metadata_policy::TenantMetadataPolicy);
