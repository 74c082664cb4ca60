#![no_main]
tenancy_policies_fuzz::fuzz_validate!(persistent_volume_claim_policy::PersistentVolumeClaimPolicy);
