//! Native timing of the policy's decision (`make bench`); inputs come from `testdrive bench --emit-payloads`.
policy_admission::native_bench_main!(tenant_cordon_policy::TenantCordonPolicy);
