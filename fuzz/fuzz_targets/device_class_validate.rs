#![no_main]
tenancy_policies_fuzz::fuzz_validate!(device_class_policy::DeviceClassPolicy);
