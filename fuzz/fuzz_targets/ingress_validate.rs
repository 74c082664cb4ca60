#![no_main]
tenancy_policies_fuzz::fuzz_validate!(ingress_policy::IngressPolicy);
