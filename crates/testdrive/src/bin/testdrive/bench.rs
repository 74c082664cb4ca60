//! `bench` (latency in testdrive, cost budgets) and `bench-server` (throughput in policy-server).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use policy_host::Host;
use policy_host::error::{Error, Result};
use testdrive::bench::{
    BenchOptions, BenchResult, BudgetCheck, bench_scenario, budget_checks, load_bench_file,
};

use crate::cli::{BenchArgs, BenchServerArgs};
use crate::evaluate::read;
use crate::policies::policy_dirs;

pub(crate) fn bench_server(a: BenchServerArgs) -> Result<ExitCode> {
    let anchors_dir = a.anchors_dir.unwrap_or_else(|| {
        a.policy_server
            .parent()
            .and_then(Path::parent)
            .map(|root| root.join("anchors"))
            .unwrap_or_else(|| PathBuf::from("anchors"))
    });
    let options = testdrive::bench::server::ServerBenchOptions {
        policy_server: a.policy_server,
        anchors_dir,
        wasm_dir: a.wasm_dir,
        annotated_dir: a.annotated_dir,
        work_dir: a.work_dir,
        seconds: a.seconds.max(1),
        connections: a.connections.max(1),
        port: a.port,
    };
    // the goals are reported, not enforced: they depend on the machine
    testdrive::bench::server::run(&policy_dirs(a.dirs)?, &options)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn bench(a: BenchArgs) -> Result<ExitCode> {
    let options = BenchOptions {
        fresh_iterations: a.iterations.max(1),
        reused_iterations: a.reused_iterations.unwrap_or(a.iterations * 10).max(1),
        budget: std::time::Duration::from_secs_f64(a.budget_secs.max(0.1)),
    };
    let mut errors = 0;
    let mut budgets: Vec<BudgetCheck> = Vec::new();
    if a.emit_payloads.is_none() {
        print_bench_header();
    }
    for dir in policy_dirs(a.dirs)? {
        let bench_file = dir.join("bench.yaml");
        if !bench_file.is_file() {
            continue;
        }
        let policy = testdrive::cases::policy_name(&dir);
        let outcome = match &a.emit_payloads {
            Some(out_dir) => emit_payloads(&bench_file, &policy, out_dir)
                .map(|path| println!("{}", path.display())),
            None => bench_policy(&dir, &policy, &a.wasm_dir, &options).map(|(failed, checks)| {
                errors += failed;
                budgets.extend(checks);
            }),
        };
        if let Err(e) = outcome {
            errors += 1;
            println!("ERROR {policy}: {e}");
        }
    }
    if !budgets.is_empty() {
        print_budgets(&budgets);
    }
    let over = budgets.iter().filter(|b| !b.ok()).count();
    Ok(if errors == 0 && over == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Writes a policy's bench payloads as one JSON document for its native benchmark; returns
/// the file written.
fn emit_payloads(bench_file: &Path, policy: &str, out_dir: &Path) -> Result<PathBuf> {
    let benches = load_bench_file(bench_file)?;
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let path = out_dir.join(format!("{policy}.json"));
    let doc = testdrive::bench::native_inputs(&benches);
    std::fs::write(&path, doc.to_string()).map_err(|e| Error::io(path.clone(), e))?;
    Ok(path)
}

/// Benchmarks every scenario of one policy, printing a row each; returns the number of
/// scenarios that failed and the policy's cost budgets.
fn bench_policy(
    dir: &Path,
    policy: &str,
    wasm_dir: &Path,
    options: &BenchOptions,
) -> Result<(usize, Vec<BudgetCheck>)> {
    let benches = load_bench_file(&dir.join("bench.yaml"))?;
    let wasm = read(&wasm_dir.join(testdrive::cases::wasm_file_name(dir)))?;
    let host = Host::load(&wasm, testdrive::cases::policy_metadata(dir)?)?;
    let mut failed = 0;
    let mut results = Vec::new();
    for b in &benches {
        match bench_scenario(&host, b, &options.for_kind(&b.kind)) {
            Ok(r) => {
                print_bench_row(policy, &host, &r);
                results.push((b, r));
            }
            Err(e) => {
                failed += 1;
                println!("ERROR {policy} › {}: {e}", b.name);
            }
        }
    }
    let pairs: Vec<_> = results.iter().map(|(b, r)| (*b, r)).collect();
    Ok((failed, budget_checks(policy, &pairs)))
}

/// One row of the latency table.
fn print_bench_row(policy: &str, host: &Host, r: &BenchResult) {
    println!(
        "{:<28} {:<32} {:>20} {:>8.1}ms {:>9} {:>22} {:>22}",
        policy,
        r.name,
        format!(
            "{} B ({:.1} KiB)",
            host.wasm_size(),
            host.wasm_size() as f64 / 1024.0
        ),
        host.compile_time().as_secs_f64() * 1e3,
        if r.allowed { "allowed" } else { "rejected" },
        format!(
            "{:.1} / {:.1} (n={})",
            r.fresh.median_us, r.fresh.mean_us, r.fresh.iterations
        ),
        format!(
            "{:.1} / {:.1} (n={})",
            r.reused.median_us, r.reused.mean_us, r.reused.iterations
        ),
    );
}

/// The cost budgets (docs/semantics.md#cost): one line per grown object and per scaled setting, with
/// the host floor (the same payloads, accepted before the settings are read).
pub(crate) fn print_budgets(budgets: &[BudgetCheck]) {
    println!();
    println!(
        "== cost budgets, fresh instance, median µs; floor = same payload, {} ==",
        testdrive::bench::FLOOR_OPERATION
    );
    println!(
        "{:<30} {:<44} {:>26} {:>26} {:>17} {:>24} {:>9} {:>5}",
        "policy", "scenario", "µs fresh", "µs floor", "t(N)/t(n) (floor)", "budget", "measured", ""
    );
    let join = |v: &[f64]| {
        v.iter()
            .map(|t| format!("{t:.1}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    for b in budgets {
        let measured = if b.budget.starts_with('<') {
            format!("{:.1} ms", b.measured)
        } else {
            format!("{:.2}×", b.measured)
        };
        let growth = match b.growth {
            Some((policy, floor)) => format!("{policy:.2}× ({floor:.2}×)"),
            None => String::new(),
        };
        println!(
            "{:<30} {:<44} {:>26} {:>26} {:>17} {:>24} {:>9} {:>5}",
            b.policy,
            b.scenario,
            join(&b.fresh_us),
            join(&b.floor_us),
            growth,
            b.budget,
            measured,
            if b.ok() { "OK" } else { "OVER" }
        );
    }
    let over = budgets.iter().filter(|b| !b.ok()).count();
    println!("{} budgets OK, {over} OVER", budgets.len() - over);
}

pub(crate) fn print_bench_header() {
    println!(
        "{:<28} {:<32} {:>20} {:>10} {:>9} {:>22} {:>22}",
        "policy",
        "bench",
        "wasm size",
        "compile",
        "verdict",
        "fresh µs median/mean",
        "reused µs median/mean"
    );
}
