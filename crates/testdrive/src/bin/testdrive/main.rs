//! `testdrive`: run Kubewarden waPC policies locally (see the library docs).

mod bench;
mod capsule;
mod cli;
mod evaluate;
mod policies;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => evaluate::run(a),
        Command::Check(a) => policies::check(a),
        Command::Shapes(a) => policies::shapes(a),
        Command::Bench(a) => bench::bench(a),
        Command::Annotate(a) => evaluate::annotate(a),
        Command::Record(a) => evaluate::record(a),
        Command::Seeds(a) => policies::seeds(a),
        Command::E2e(a) => policies::e2e(a),
        Command::BenchServer(a) => bench::bench_server(a),
        Command::Manifests(a) => policies::manifests(a),
        Command::Identity(a) => policies::identity(a),
        Command::PublishLocal(a) => policies::publish_local(a),
        Command::Audit(a) => policies::audit(a),
        Command::InstallE2e(a) => policies::install_e2e(a),
        Command::CapsuleCheck(a) => capsule::check(a).map_err(capsule::host_error),
        Command::CapsuleFootprint(a) => capsule::footprint(a).map_err(capsule::host_error),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("testdrive: error: {e}");
            ExitCode::from(2)
        }
    }
}
