#![no_main]
tenancy_policies_fuzz::fuzz_settings!(service_policy::ServicePolicy);
