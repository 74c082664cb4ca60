#![no_main]
tenancy_policies_fuzz::fuzz_validate!(runtime_class_policy::RuntimeClassPolicy);
