//! `capsule-check` and `capsule-footprint`: the capsule-bindings CLI's scenarios and
//! footprint, run by the test host.

use std::process::ExitCode;

use capsule_bindings::{Error, Hosts, Options, Result, parse_tenants};
use testdrive::capsule::scenario::{KwctlOptions, run_file, scenario_files};
use testdrive::capsule::{footprint, server};

use crate::cli::{CapsuleCheckArgs, CapsuleFootprintArgs};

/// The host's error for testdrive's `main`, the message unchanged.
pub(crate) fn host_error(e: Error) -> policy_host::Error {
    match e {
        Error::Host(host) => host,
        other => policy_host::Error::Invalid(other.to_string()),
    }
}

pub(crate) fn check(args: CapsuleCheckArgs) -> Result<ExitCode> {
    let files = scenario_files(&args.paths)?;
    if let Some(policy_server) = args.policy_server {
        let options = server::ServerOptions {
            policy_server,
            server_name: args.policy_server_name,
            install_dir: args.install_dir,
            modules_dir: args.modules_dir,
            work_dir: args.work_dir.join("policy-server"),
        };
        println!(
            "capsule-bindings check: every scenario request through {} ({} files)",
            server::describe(&options),
            files.len()
        );
        let mut hosts = Hosts::new(args.wasm_dir.clone());
        let report = server::check(&files, &mut hosts, &options)?;
        return Ok(if server::require_pass(&report).is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let kwctl = args.kwctl.map(|kwctl| KwctlOptions {
        kwctl,
        work_dir: args.work_dir,
        policies_dir: args.policies_dir,
    });
    match &kwctl {
        Some(k) => println!(
            "capsule-bindings e2e: every scenario request through {} ({} files)",
            testdrive::e2e::kwctl_version(&k.kwctl)?,
            files.len()
        ),
        None => println!(
            "capsule-bindings check: every scenario through the built wasm ({} files)",
            files.len()
        ),
    }
    let mut hosts = Hosts::new(args.wasm_dir.clone());
    let (mut passed, mut failed) = (0, 0);
    for file in &files {
        let report = run_file(
            file,
            &mut hosts,
            &args.wasm_dir,
            kwctl.as_ref(),
            args.filter.as_deref(),
        );
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "  {name}: {} passed, {} failed",
            report.passed,
            report.failures.len()
        );
        for (case, failures) in &report.failures {
            println!("    FAIL {case}");
            for failure in failures {
                println!("      {failure}");
            }
        }
        passed += report.passed;
        failed += report.failures.len();
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(crate) fn footprint(args: CapsuleFootprintArgs) -> Result<ExitCode> {
    let origin = args.tenant.display().to_string();
    let tenants = parse_tenants(
        &std::fs::read_to_string(&args.tenant).map_err(|e| Error::io(&args.tenant, e))?,
        &origin,
    )?;
    let [tenant] = tenants.as_slice() else {
        return Err(Error::Invalid(format!(
            "{origin}: one Tenant is copied, not {}",
            tenants.len()
        )));
    };
    let options = footprint::FootprintOptions {
        policy_server: args.policy_server,
        install_dir: args.install_dir,
        modules_dir: args.modules_dir,
        work_dir: args.work_dir,
    };
    let mut hosts = Hosts::new(args.wasm_dir);
    for count in args.tenants {
        let copies = footprint::copies(tenant, count);
        let measured = footprint::measure(&copies, &Options::default(), &mut hosts, &options)?;
        println!("{measured}");
    }
    Ok(ExitCode::SUCCESS)
}
