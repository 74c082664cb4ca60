#![no_main]
tenancy_policies_fuzz::fuzz_validate!(image_pull_policy::ImagePullPolicy);
