#![no_main]
tenancy_policies_fuzz::fuzz_validate!(pod_restriction_policy::PodRestrictionPolicy);
