#![no_main]
tenancy_policies_fuzz::fuzz_settings!(pod_restriction_policy::PodRestrictionPolicy);
