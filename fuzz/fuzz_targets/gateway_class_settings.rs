#![no_main]
tenancy_policies_fuzz::fuzz_settings!(gateway_class_policy::GatewayClassPolicy);
