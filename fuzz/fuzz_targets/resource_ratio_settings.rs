#![no_main]
tenancy_policies_fuzz::fuzz_settings!(resource_ratio_policy::ResourceRatioPolicy);
