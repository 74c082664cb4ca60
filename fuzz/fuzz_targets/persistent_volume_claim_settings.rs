#![no_main]
tenancy_policies_fuzz::fuzz_settings!(persistent_volume_claim_policy::PersistentVolumeClaimPolicy);
