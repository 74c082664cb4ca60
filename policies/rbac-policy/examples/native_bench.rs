//! Native timing of the policy's decision (`make bench`); inputs come from `testdrive bench --emit-payloads`.
policy_core::native_bench_main!(rbac_policy::RbacPolicy);
