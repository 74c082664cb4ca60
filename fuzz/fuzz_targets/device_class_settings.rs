#![no_main]
tenancy_policies_fuzz::fuzz_settings!(device_class_policy::DeviceClassPolicy);
