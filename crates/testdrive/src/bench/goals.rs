//! The goals `testdrive bench-server` reports, met or missed, per run (README "Performance
//! in policy-server"). They are reported, not enforced: a loaded 2-core machine moves them.

use super::load::Measurement;

/// What a row's scenario costs besides judging: the floor share it is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Neither lookup nor mutation.
    Judged,
    /// One lookup, or a mutation, or both.
    OneLookupOrMutation,
    /// More than one lookup: no floor goal.
    Lookups(usize),
}

impl Cost {
    /// The cost of a scenario making `lookups` host calls, mutating or not.
    pub fn of(lookups: usize, mutates: bool) -> Cost {
        match lookups {
            0 if !mutates => Cost::Judged,
            0 | 1 => Cost::OneLookupOrMutation,
            n => Cost::Lookups(n),
        }
    }
}

/// Share of the floor for scenarios with neither lookup nor mutation.
pub const FLOOR_JUDGED: f64 = 0.92;
/// Share of the floor with one lookup or a mutation.
pub const FLOOR_LOOKUP_OR_MUTATION: f64 = 0.80;
/// Share of the floor at 1,000 settings entries.
pub const FLOOR_AT_1000: f64 = 0.75;
/// Times the Kubewarden equivalent, at every size.
pub const TIMES_KUBEWARDEN: f64 = 1.1;

/// The floor share a scenario is held to, if any: by its entry count when scaled, else by
/// its cost (none at 10,000 entries, nor with several lookups).
pub fn floor_goal(entries: Option<usize>, cost: Cost) -> Option<f64> {
    match entries {
        Some(n) if n >= 10_000 => None,
        Some(n) if n >= 1_000 => Some(FLOOR_AT_1000),
        _ => match cost {
            Cost::Judged => Some(FLOOR_JUDGED),
            Cost::OneLookupOrMutation => Some(FLOOR_LOOKUP_OR_MUTATION),
            Cost::Lookups(_) => None,
        },
    }
}

/// One run of a row: ours, its floor, and each Kubewarden equivalent.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Our policy.
    pub ours: Measurement,
    /// Its floor.
    pub floor: Measurement,
    /// Kubewarden's equivalents, by module.
    pub theirs: Vec<(String, Measurement)>,
    /// The no-op guest on the same request (bench/noop.rs), measured beside Kubewarden's.
    pub noop: Option<Measurement>,
}

/// A goal and whether each run met it.
#[derive(Debug)]
struct Goal {
    text: String,
    met: Vec<bool>,
}

/// Every goal of a bench-server run, and the floor check.
#[derive(Debug, Default)]
pub struct Goals {
    goals: Vec<Goal>,
    /// Rows whose floor was measured above the policy it bounds, with the numbers.
    floor_above: Vec<String>,
    rows: usize,
}

impl Goals {
    /// Records the goals of row `name` over its runs.
    pub fn record(&mut self, name: &str, entries: Option<usize>, cost: Cost, runs: &[RunResult]) {
        self.rows += 1;
        let share = |r: &RunResult| {
            r.ours.throughput.requests_per_second / r.floor.throughput.requests_per_second
        };
        if let Some(goal) = floor_goal(entries, cost) {
            let shares: Vec<String> = runs
                .iter()
                .map(|r| format!("{:.0}%", 100.0 * share(r)))
                .collect();
            self.goals.push(Goal {
                text: format!(
                    "{name}: {} of the floor (goal ≥ {:.0}%)",
                    shares.join(" / "),
                    100.0 * goal
                ),
                met: runs.iter().map(|r| share(r) >= goal).collect(),
            });
        }
        let modules = runs.first().map(|r| r.theirs.len()).unwrap_or(0);
        for k in 0..modules {
            let ratios: Vec<(String, f64)> = runs
                .iter()
                .filter_map(|r| r.theirs.get(k).map(|(m, t)| (m.clone(), ratio(&r.ours, t))))
                .collect();
            let module = ratios.first().map(|(m, _)| m.clone()).unwrap_or_default();
            let shown: Vec<String> = ratios.iter().map(|(_, x)| format!("{x:.2}×")).collect();
            let ceiling = noop_ratios(runs, k);
            let ceiling = if ceiling.is_empty() {
                String::new()
            } else {
                format!("; a no-op guest: {}", ceiling.join(" / "))
            };
            self.goals.push(Goal {
                text: format!(
                    "{name}: {} {module} (goal ≥ {TIMES_KUBEWARDEN}×{ceiling})",
                    shown.join(" / ")
                ),
                met: ratios.iter().map(|(_, x)| *x >= TIMES_KUBEWARDEN).collect(),
            });
        }
        for r in runs {
            if let Some(above) = floor_above(r) {
                self.floor_above.push(format!("{name}: {above}"));
            }
        }
    }

    /// Prints every goal, the floor check and the counts.
    pub fn print(&self) {
        println!("goals (each run; reported, not enforced):");
        let mut met = 0;
        for goal in &self.goals {
            let n = goal.met.iter().filter(|m| **m).count();
            let verdict = if n == goal.met.len() {
                met += 1;
                "met   ".to_owned()
            } else if n == 0 {
                "MISSED".to_owned()
            } else {
                format!("met in {n} of {} runs:", goal.met.len())
            };
            println!("  {verdict} {}", goal.text);
        }
        println!(
            "{met} of {} goals met in every run, {} missed in at least one",
            self.goals.len(),
            self.goals.len() - met
        );
        if self.floor_above.is_empty() {
            println!(
                "floor check: in all {} rows the floor cost less per request than the policy it bounds",
                self.rows
            );
        } else {
            println!(
                "floor check: the floor cost more than the policy it bounds in {} run(s):",
                self.floor_above.len()
            );
            for line in &self.floor_above {
                println!("  {line}");
            }
        }
    }
}

/// The no-op guest's ratio to the `k`th Kubewarden equivalent in each run that measured it
/// (`1.42×`): the most any policy reaches against that module.
pub fn noop_ratios(runs: &[RunResult], k: usize) -> Vec<String> {
    runs.iter()
        .filter_map(|r| {
            Some(format!(
                "{:.2}×",
                ratio(r.noop.as_ref()?, &r.theirs.get(k)?.1)
            ))
        })
        .collect()
}

/// ours ÷ theirs in requests per second.
pub fn ratio(ours: &Measurement, theirs: &Measurement) -> f64 {
    ours.throughput.requests_per_second / theirs.throughput.requests_per_second
}

/// How the floor exceeded the policy in a run, if it did: its CPU time per request when
/// perf counted (the floor does a part of the policy's work), else its throughput.
fn floor_above(run: &RunResult) -> Option<String> {
    match (run.ours.per_request, run.floor.per_request) {
        (Some(ours), Some(floor)) => (floor.task_clock_ms > ours.task_clock_ms).then(|| {
            format!(
                "floor {:.0} µs CPU/request > ours {:.0} µs",
                1e3 * floor.task_clock_ms,
                1e3 * ours.task_clock_ms
            )
        }),
        _ => (run.floor.throughput.requests_per_second < run.ours.throughput.requests_per_second)
            .then(|| {
                format!(
                    "floor {:.0} req/s < ours {:.0} req/s",
                    run.floor.throughput.requests_per_second,
                    run.ours.throughput.requests_per_second
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::load::{Counters, Throughput};

    fn m(rps: f64, cpu_ms: Option<f64>) -> Measurement {
        Measurement {
            throughput: Throughput {
                requests_per_second: rps,
                requests: 1000,
            },
            per_request: cpu_ms.map(|c| Counters {
                page_faults: 10.0,
                task_clock_ms: c,
                instructions: None,
            }),
        }
    }

    #[test]
    fn the_floor_goal_follows_the_entries_then_the_cost() {
        assert_eq!(floor_goal(None, Cost::of(0, false)), Some(FLOOR_JUDGED));
        assert_eq!(floor_goal(Some(10), Cost::of(0, false)), Some(FLOOR_JUDGED));
        assert_eq!(
            floor_goal(None, Cost::of(0, true)),
            Some(FLOOR_LOOKUP_OR_MUTATION)
        );
        assert_eq!(
            floor_goal(None, Cost::of(1, true)),
            Some(FLOOR_LOOKUP_OR_MUTATION)
        );
        assert_eq!(floor_goal(None, Cost::of(3, false)), None);
        assert_eq!(
            floor_goal(Some(1000), Cost::of(3, false)),
            Some(FLOOR_AT_1000)
        );
        assert_eq!(floor_goal(Some(10_000), Cost::of(0, false)), None);
    }

    #[test]
    fn goals_are_judged_per_run_and_the_floor_checked() {
        let mut goals = Goals::default();
        let runs = [
            RunResult {
                ours: m(930.0, Some(0.2)),
                floor: m(1000.0, Some(0.18)),
                theirs: vec![("kw".into(), m(800.0, None))],
                noop: Some(m(1040.0, None)),
            },
            RunResult {
                ours: m(900.0, Some(0.2)),
                floor: m(1000.0, Some(0.21)),
                theirs: vec![("kw".into(), m(800.0, None))],
                noop: Some(m(1000.0, None)),
            },
        ];
        goals.record("p › s", None, Cost::Judged, &runs);
        assert_eq!(goals.goals.len(), 2);
        assert_eq!(goals.goals[0].met, vec![true, false]);
        assert!(goals.goals[0].text.contains("93% / 90% of the floor"));
        // 930/800 = 1.16, 900/800 = 1.125; the no-op guest 1040/800, 1000/800
        assert_eq!(goals.goals[1].met, vec![true, true]);
        assert_eq!(
            goals.goals[1].text,
            "p › s: 1.16× / 1.12× kw (goal ≥ 1.1×; a no-op guest: 1.30× / 1.25×)"
        );
        assert_eq!(goals.floor_above.len(), 1);
        assert!(goals.floor_above[0].contains("floor 210 µs CPU/request > ours 200 µs"));
    }
}
