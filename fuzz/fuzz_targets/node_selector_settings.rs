#![no_main]
tenancy_policies_fuzz::fuzz_settings!(node_selector_policy::NodeSelectorPolicy);
