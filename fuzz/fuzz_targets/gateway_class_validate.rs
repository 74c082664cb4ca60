#![no_main]
tenancy_policies_fuzz::fuzz_validate!(gateway_class_policy::GatewayClassPolicy);
