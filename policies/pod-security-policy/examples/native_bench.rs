//! Native cost of the `bench.yaml` requests through the core (`policy_admission::policy::evaluate`),
//! to set beside `testdrive bench` (wasm, fresh and reused instance). `make bench` runs it on
//! the payloads `testdrive bench --emit-payloads` writes:
//!
//! ```text
//! target/host/testdrive bench --emit-payloads target/bench-inputs
//! cargo run --profile host -p pod-security-policy --example native_bench -- target/bench-inputs/pod-security-policy.json
//! ```

policy_admission::native_bench_main!(pod_security_policy::PodSecurityPolicy);
