#![no_main]
tenancy_policies_fuzz::fuzz_validate!(service_policy::ServicePolicy);
