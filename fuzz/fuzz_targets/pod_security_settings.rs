#![no_main]
tenancy_policies_fuzz::fuzz_settings!(pod_security_policy::PodSecurityPolicy);
