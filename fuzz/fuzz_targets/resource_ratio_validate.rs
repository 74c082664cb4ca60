#![no_main]
tenancy_policies_fuzz::fuzz_validate!(resource_ratio_policy::ResourceRatioPolicy);
