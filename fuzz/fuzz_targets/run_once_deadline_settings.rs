#![no_main]
tenancy_policies_fuzz::fuzz_settings!(run_once_deadline_policy::RunOnceDeadlinePolicy);
