#![no_main]
tenancy_policies_fuzz::fuzz_settings!(limit_range_policy::LimitRangePolicy);
