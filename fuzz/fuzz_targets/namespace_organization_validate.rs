#![no_main]
tenancy_policies_fuzz::fuzz_validate!(namespace_organization_policy::NamespaceOrganizationPolicy);
