#![no_main]
tenancy_policies_fuzz::fuzz_validate!(run_once_deadline_policy::RunOnceDeadlinePolicy);
