#![no_main]
tenancy_policies_fuzz::fuzz_settings!(protected_objects_policy::ProtectedObjectsPolicy);
