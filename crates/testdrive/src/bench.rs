//! `testdrive bench`: per-request latency with a fresh instance per request
//! (what policy-server does) and with one reused instance (what `kwctl
//! bench` does).
//!
//! `bench.yaml` in a policy directory is a list of entries:
//!
//! ```yaml
//! - name: toleration exists
//!   settings: {protectedTaints: [{key: dedicated, value: tenantA}]}
//!   request: ../../test_data/requests/pod-toleration-exists.json
//!   override: {userInfo: {username: bob}}    # optional
//!   replay: session.yml                        # optional, or cluster: [...]
//! ```

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::cases::{CaseDefaults, RequestSpec, Scenario, resolve_scenario};
use crate::error::{Error, Result, read_text};
use crate::host::Host;

/// One entry of `bench.yaml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchEntry {
    /// Short name shown in the table.
    pub name: String,
    /// Policy settings (default `{}`).
    #[serde(default)]
    pub settings: Option<Value>,
    /// The admission request (path relative to `bench.yaml`, or inline).
    pub request: RequestSpec,
    /// RFC 7386 merge patch applied to the request.
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// kwctl replay session file.
    #[serde(default)]
    pub replay: Option<String>,
    /// Objects that exist in the cluster.
    #[serde(default)]
    pub cluster: Option<Vec<Value>>,
}

/// A resolved bench entry.
#[derive(Debug, Clone)]
pub struct BenchScenario {
    /// Entry name.
    pub name: String,
    /// Its inputs.
    pub scenario: Scenario,
}

/// Parses and resolves a `bench.yaml`.
pub fn load_bench_file(path: &Path) -> Result<Vec<BenchScenario>> {
    let entries: Vec<BenchEntry> =
        serde_yaml::from_str(&read_text(path)?).map_err(|e| Error::parse(path.display(), e))?;
    entries
        .into_iter()
        .map(|e| {
            let fields = CaseDefaults {
                settings: e.settings,
                request: Some(e.request),
                override_: None,
                replay: e.replay,
                cluster: e.cluster,
            };
            let overrides: Vec<&Value> = e.override_.iter().collect();
            let scenario = resolve_scenario(path, &CaseDefaults::default(), &fields, &overrides)
                .map_err(|err| {
                    Error::Invalid(format!("{}: bench `{}`: {err}", path.display(), e.name))
                })?;
            Ok(BenchScenario {
                name: e.name,
                scenario,
            })
        })
        .collect()
}

/// The bench entries as inputs of a policy's native benchmark
/// (`policy_core::bench::BenchInput`): `[{name, payload: {request, settings}, cluster}]`.
pub fn native_inputs(benches: &[BenchScenario]) -> Value {
    Value::Array(
        benches
            .iter()
            .map(|b| {
                let cluster = match &b.scenario.cluster {
                    crate::cases::ClusterState::None => Vec::new(),
                    crate::cases::ClusterState::Replay(r) => r.objects(),
                    crate::cases::ClusterState::Objects(o) => o.objects().to_vec(),
                };
                serde_json::json!({
                    "name": b.name,
                    "payload": {"request": b.scenario.request, "settings": b.scenario.settings},
                    "cluster": cluster,
                })
            })
            .collect(),
    )
}

/// Latency statistics of one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Number of timed iterations.
    pub iterations: usize,
    /// Median, in microseconds.
    pub median_us: f64,
    /// Mean, in microseconds.
    pub mean_us: f64,
}

impl Stats {
    fn from_samples(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        let n = samples.len();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let at = |i: usize| samples.get(i).copied().map_or(0.0, us);
        let median_us = match n {
            0 => 0.0,
            _ if n % 2 == 1 => at(n / 2),
            _ => (at(n / 2 - 1) + at(n / 2)) / 2.0,
        };
        let mean_us = if n == 0 {
            0.0
        } else {
            samples.iter().copied().map(us).sum::<f64>() / n as f64
        };
        Stats {
            iterations: n,
            median_us,
            mean_us,
        }
    }
}

/// Result of benchmarking one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// Entry name.
    pub name: String,
    /// Verdict of the first evaluation (sanity check).
    pub allowed: bool,
    /// Fresh instance per request (instantiate + validate).
    pub fresh: Stats,
    /// One reused instance (validate only).
    pub reused: Stats,
}

/// Iteration counts and time budget of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchOptions {
    /// Iterations with a fresh instance each.
    pub fresh_iterations: usize,
    /// Iterations on one reused instance.
    pub reused_iterations: usize,
    /// Each measurement stops early once this much time was spent.
    pub budget: Duration,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            fresh_iterations: 200,
            reused_iterations: 2000,
            budget: Duration::from_secs(5),
        }
    }
}

/// Benchmarks one scenario. Settings are validated first (an invalid
/// configuration is an error, not a number).
pub fn bench_scenario(
    host: &Host,
    bench: &BenchScenario,
    options: &BenchOptions,
) -> Result<BenchResult> {
    let s = &bench.scenario;
    let settings = host.validate_settings(&s.settings)?;
    if !settings.valid {
        return Err(Error::Invalid(format!(
            "bench `{}`: settings rejected: {}",
            bench.name,
            settings.message.unwrap_or_default()
        )));
    }
    let request = s
        .request
        .as_ref()
        .ok_or_else(|| Error::Invalid(format!("bench `{}`: no request", bench.name)))?;
    let callbacks = s.cluster.callbacks();
    let reset = || {
        if let Ok(mut cb) = callbacks.lock() {
            cb.reset();
        }
    };

    // sanity run (also warms up caches)
    let first = host.validate(request, &s.settings, callbacks.clone())?;
    if let Ok(cb) = callbacks.lock()
        && let Some(p) = cb.problems().first()
    {
        return Err(Error::Invalid(format!("bench `{}`: {p}", bench.name)));
    }

    let mut fresh = Vec::with_capacity(options.fresh_iterations);
    let started = Instant::now();
    for _ in 0..options.fresh_iterations {
        reset();
        let t = Instant::now();
        let instance = host.instantiate()?;
        instance.validate(request, &s.settings, callbacks.clone())?;
        fresh.push(t.elapsed());
        if started.elapsed() > options.budget {
            break;
        }
    }

    let instance = host.instantiate()?;
    reset();
    instance.validate(request, &s.settings, callbacks.clone())?;
    let mut reused = Vec::with_capacity(options.reused_iterations);
    let started = Instant::now();
    for _ in 0..options.reused_iterations {
        reset();
        let t = Instant::now();
        instance.validate(request, &s.settings, callbacks.clone())?;
        reused.push(t.elapsed());
        if started.elapsed() > options.budget {
            break;
        }
    }

    Ok(BenchResult {
        name: bench.name.clone(),
        allowed: first.response.allowed,
        fresh: Stats::from_samples(fresh),
        reused: Stats::from_samples(reused),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats() {
        let s = Stats::from_samples(vec![
            Duration::from_micros(30),
            Duration::from_micros(10),
            Duration::from_micros(20),
        ]);
        assert_eq!(s.iterations, 3);
        assert!((s.median_us - 20.0).abs() < 1e-9);
        assert!((s.mean_us - 20.0).abs() < 1e-9);
        let s = Stats::from_samples(vec![Duration::from_micros(10), Duration::from_micros(20)]);
        assert!((s.median_us - 15.0).abs() < 1e-9);
        assert_eq!(Stats::from_samples(vec![]).iterations, 0);
    }

    #[test]
    fn parses_bench_file() {
        let d = std::env::temp_dir().join(format!("testdrive-bench-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("r.json"), r#"{"uid":"1","operation":"CREATE"}"#).unwrap();
        std::fs::write(
            d.join("bench.yaml"),
            "- name: a\n  request: r.json\n  override: {operation: UPDATE}\n- name: b\n  settings: {x: 1}\n  request: {uid: '2'}\n  cluster: []\n",
        )
        .unwrap();
        let b = load_bench_file(&d.join("bench.yaml")).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[0].scenario.request.as_ref().unwrap()["operation"],
            "UPDATE"
        );
        assert_eq!(b[1].scenario.settings["x"], 1);
        std::fs::write(
            d.join("bench.yaml"),
            "- name: a\n  request: r.json\n  iterations: 3\n",
        )
        .unwrap();
        assert!(load_bench_file(&d.join("bench.yaml")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
