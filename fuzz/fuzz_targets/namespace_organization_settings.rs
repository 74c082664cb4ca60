#![no_main]
tenancy_policies_fuzz::fuzz_settings!(namespace_organization_policy::NamespaceOrganizationPolicy);
