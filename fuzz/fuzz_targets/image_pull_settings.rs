#![no_main]
tenancy_policies_fuzz::fuzz_settings!(image_pull_policy::ImagePullPolicy);
