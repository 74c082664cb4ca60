#![no_main]
tenancy_policies_fuzz::fuzz_validate!(priority_class_policy::PriorityClassPolicy);
