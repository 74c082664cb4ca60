#![no_main]
tenancy_policies_fuzz::fuzz_validate!(node_selector_policy::NodeSelectorPolicy);
