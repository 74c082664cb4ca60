#![no_main]
tenancy_policies_fuzz::fuzz_settings!(namespace_metadata_policy::NamespaceMetadataPolicy);
