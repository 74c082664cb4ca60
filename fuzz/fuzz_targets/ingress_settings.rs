#![no_main]
tenancy_policies_fuzz::fuzz_settings!(ingress_policy::IngressPolicy);
