#![no_main]
tenancy_policies_fuzz::fuzz_validate!(protected_objects_policy::ProtectedObjectsPolicy);
