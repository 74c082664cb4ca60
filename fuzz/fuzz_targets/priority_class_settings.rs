#![no_main]
tenancy_policies_fuzz::fuzz_settings!(priority_class_policy::PriorityClassPolicy);
