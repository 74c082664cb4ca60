#![no_main]
tenancy_policies_fuzz::fuzz_settings!(runtime_class_policy::RuntimeClassPolicy);
