#![no_main]
tenancy_policies_fuzz::fuzz_validate!(limit_range_policy::LimitRangePolicy);
