//! Native timing of a policy's decision, for comparison with the wasm numbers of
//! `testdrive bench`: a policy's `examples/native_bench.rs` is `policy_admission::native_bench_main!(P);`.

use std::time::Instant;

use serde_json::Value;

use crate::cluster::Objects;
use crate::policy::{Policy, evaluate};

/// One benchmark input: a `validate` payload plus the objects the cluster holds.
#[derive(Debug, serde::Deserialize)]
pub struct BenchInput {
    /// Name shown in the output.
    #[serde(default)]
    pub name: String,
    /// The `validate` payload (`{"request": ..., "settings": ...}`).
    pub payload: Value,
    /// Objects answering lookups.
    #[serde(default)]
    pub cluster: Vec<Value>,
    /// At most this many iterations for this input (large generated inputs get few);
    /// otherwise `BENCH_ITERATIONS` or 20,000.
    #[serde(default)]
    pub iterations: Option<u32>,
}

/// Mean microseconds per evaluation of `input` over `iterations` runs (settings parsing and
/// payload decoding included, as in wasm).
pub fn time_native<P: Policy>(input: &BenchInput, iterations: u32) -> Result<f64, String> {
    let bytes = serde_json::to_vec(&input.payload).map_err(|e| e.to_string())?;
    let iterations = iterations.max(1);
    let mut cluster = Objects::new(input.cluster.clone());
    // Warm-up, and a sanity check that the payload is judged at all.
    let first = evaluate::<P>(&bytes, &mut cluster);
    if first.code == Some(400) {
        return Err(format!(
            "payload rejected as malformed: {}",
            first.message.unwrap_or_default()
        ));
    }
    let start = Instant::now();
    for _ in 0..iterations {
        let mut cluster = Objects::new(input.cluster.clone());
        std::hint::black_box(evaluate::<P>(std::hint::black_box(&bytes), &mut cluster));
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(iterations))
}

/// Entry point of a policy's native benchmark: every argument is a JSON file holding a
/// [`BenchInput`] or a list of them; prints one line per input.
pub fn main_for<P: Policy>() -> i32 {
    let iterations: u32 = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let mut status = 0;
    for path in std::env::args().skip(1) {
        let inputs: Vec<BenchInput> = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
            .and_then(|v| {
                if v.is_array() {
                    serde_json::from_value(v).map_err(|e| e.to_string())
                } else {
                    serde_json::from_value(v)
                        .map(|one| vec![one])
                        .map_err(|e| e.to_string())
                }
            }) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("{path}: {e}");
                status = 1;
                continue;
            }
        };
        for input in &inputs {
            match time_native::<P>(
                input,
                input.iterations.map_or(iterations, |n| n.min(iterations)),
            ) {
                Ok(us) => println!("{} | {} | native {:.2} µs/request", P::NAME, input.name, us),
                Err(e) => {
                    eprintln!("{} | {} | {e}", P::NAME, input.name);
                    status = 1;
                }
            }
        }
    }
    status
}

/// Defines `main` for a policy's native benchmark example.
#[macro_export]
macro_rules! native_bench_main {
    ($policy:ty) => {
        fn main() {
            std::process::exit($crate::bench::main_for::<$policy>());
        }
    };
}
