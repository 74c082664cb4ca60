//! Commands over policy directories: `check`, `shapes`, `e2e`, `seeds`, `publish-local`,
//! `audit`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use policy_host::error::{Error, Result};
use testdrive::cases::{CheckOptions, check_policy};

use crate::cli::{
    AuditArgs, CheckArgs, E2eArgs, IdentityArgs, InstallE2eArgs, ManifestsArgs, PublishLocalArgs,
    SeedsArgs, ShapesArgs,
};

pub(crate) fn policy_dirs(dirs: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    if !dirs.is_empty() {
        return Ok(dirs);
    }
    let root = Path::new("policies");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let p = entry.map_err(|e| Error::io(root, e))?.path();
        if p.is_dir() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn check(a: CheckArgs) -> Result<ExitCode> {
    let options = CheckOptions {
        wasm_dir: a.wasm_dir,
        filter: a.filter,
        verbose: a.verbose,
    };
    let reports: Vec<_> = policy_dirs(a.dirs)?
        .iter()
        .map(|dir| check_policy(dir, &options))
        .collect();
    Ok(print_reports(&reports))
}

/// The default number of jobs at once: one per core.
fn one_per_core() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// `testdrive shapes`: probes every policy, prints each failure, a line per policy and the
/// closing line `shapes: N probes of N cases, N failed`.
pub(crate) fn shapes(a: ShapesArgs) -> Result<ExitCode> {
    let dirs = policy_dirs(a.dirs)?;
    let jobs = a.jobs.unwrap_or_else(one_per_core);
    let reports = testdrive::e2e::in_parallel(&dirs, jobs, |dir| {
        testdrive::cases::shapes::probe_policy(dir, &a.wasm_dir)
    });
    let (mut probes, mut cases, mut failed) = (0usize, 0usize, 0usize);
    for report in reports.into_iter().flatten() {
        for f in &report.failures {
            println!("FAIL {} › {f}", report.policy);
        }
        if let Some(e) = &report.error {
            println!("ERROR {}: {e}", report.policy);
            failed += 1;
        }
        if report.probes > 0 {
            println!(
                "{}: {} probes of {} cases, {} failed",
                report.policy,
                report.probes,
                report.cases,
                report.failures.len()
            );
        }
        probes += report.probes;
        cases += report.cases;
        failed += report.failures.len();
    }
    println!("shapes: {probes} probes of {cases} cases, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prints each policy's failures and counts, then the closing line `N passed, N failed`.
pub(crate) fn print_reports(reports: &[testdrive::cases::PolicyReport]) -> ExitCode {
    let (mut passed, mut failed) = (0usize, 0usize);
    for report in reports {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
        for f in &report.failures {
            let mut lines = f.failures.iter();
            let first = lines.next().map(String::as_str).unwrap_or("failed");
            println!(
                "FAIL {} › {} [{}]: {first}",
                report.policy,
                f.name,
                f.file.display()
            );
            for line in lines {
                println!("    {line}");
            }
        }
        if let Some(e) = &report.error {
            println!("ERROR {e}");
        }
        if report.passed + report.failed() > 0 {
            println!(
                "{}: {} passed, {} failed",
                report.policy,
                report.passed,
                report.failed()
            );
        }
        passed += report.passed;
        failed += report.failed();
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(crate) fn e2e(a: E2eArgs) -> Result<ExitCode> {
    let version = testdrive::e2e::kwctl_version(&a.kwctl)?;
    let jobs = a.jobs.unwrap_or_else(one_per_core);
    println!(
        "e2e: every case through {} ({}), {jobs} at a time",
        a.kwctl.display(),
        if version.is_empty() {
            "version unknown"
        } else {
            &version
        }
    );
    let options = testdrive::e2e::E2eOptions {
        kwctl: a.kwctl,
        wasm_dir: a.wasm_dir,
        work_dir: a.work_dir,
        jobs,
        filter: a.filter,
    };
    let reports = testdrive::e2e::run(&policy_dirs(a.dirs)?, &options)?;
    Ok(print_reports(&reports))
}

pub(crate) fn seeds(a: SeedsArgs) -> Result<ExitCode> {
    for dir in policy_dirs(a.dirs)? {
        let c = testdrive::cases::seeds::write_seeds(&dir, &a.out)?;
        println!(
            "{}: {} payloads, {} settings, {} cases skipped",
            c.policy, c.payloads, c.settings, c.skipped
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `testdrive manifests`: prints every problem, then the closing lines (manifests, example
/// settings, questions-ui, identity); fails when any problem was found.
pub(crate) fn manifests(a: ManifestsArgs) -> Result<ExitCode> {
    let root = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let report = testdrive::manifests::run(&testdrive::manifests::ManifestsOptions {
        root,
        wasm_dir: a.wasm_dir,
        generated: a.generated,
    })?;
    for p in &report.problems {
        println!("FAIL {p}");
    }
    let total = report.documented + report.generated;
    println!(
        "manifests: {total} Kubewarden manifests in {} files ({} documented, {} generated; {} \
         members of other publishers), {} valid, {} with problems (their CRD schemas: make cluster-e2e)",
        report.files,
        report.documented,
        report.generated,
        report.foreign_modules,
        total - report.failed,
        report.failed,
    );
    println!(
        "install: {} Kubernetes objects of deploy/ checked against their types, kustomization \
         lists {} of {} files",
        report.install.objects, report.install.listed, report.install.files
    );
    let (ok, all) = report.examples_valid;
    println!("example settings: {ok}/{all} accepted by their policy");
    let (ok, all) = report.questions_valid;
    println!("questions-ui: {ok}/{all} valid");
    println!(
        "identity: {} files drifted from {}",
        report.drifted,
        testdrive::release::identity::IDENTITY_FILE
    );
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `testdrive identity [--write]`: lists (or rewrites) every file drifted from the identity.
pub(crate) fn identity(a: IdentityArgs) -> Result<ExitCode> {
    let root = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let identity = testdrive::release::identity::Identity::from_root(&root)?;
    let drifted = testdrive::release::identity::drift(&root, &identity)?;
    for d in &drifted {
        let shown = d
            .path
            .strip_prefix(&root)
            .unwrap_or(&d.path)
            .display()
            .to_string();
        for change in &d.changes {
            println!("{shown}: {change}");
        }
        if a.write {
            std::fs::write(&d.path, &d.text).map_err(|e| Error::io(&d.path, e))?;
        }
    }
    let verb = if a.write { "rewritten" } else { "drifted" };
    println!(
        "identity: {} files {verb} from {}",
        drifted.len(),
        testdrive::release::identity::IDENTITY_FILE
    );
    Ok(if drifted.is_empty() || a.write {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `testdrive publish-local`: the release rehearsed against a local OCI registry.
pub(crate) fn publish_local(a: PublishLocalArgs) -> Result<ExitCode> {
    let options = testdrive::release::publish::PublishOptions {
        kwctl: a.kwctl,
        policy_server: a.policy_server,
        registry: a.registry,
        release_script: a.release_script,
        wasm_dir: a.wasm_dir,
        annotated_dir: a.annotated_dir,
        work_dir: a.work_dir,
        push_attempts: a.push_attempts,
    };
    let passed = testdrive::release::publish::run(&policy_dirs(a.dirs)?, &options)?;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `testdrive audit`: a line per audited policy (its reports through testdrive and, when it
/// ran, policy-server), every problem, and the closing line
/// `audit: N objects of N policies, N pass, N fail, as expected through <hosts>` (or how many
/// problems there were).
pub(crate) fn audit(a: AuditArgs) -> Result<ExitCode> {
    let options = testdrive::audit::AuditOptions {
        wasm_dir: a.wasm_dir,
        policy_server: a.policy_server,
        annotated_dir: a.annotated_dir,
        work_dir: a.work_dir,
        test_data: a.test_data,
    };
    let (mut objects, mut policies, mut pass, mut fail, mut problems) = (0, 0, 0, 0, 0);
    for dir in policy_dirs(a.dirs)? {
        let Some(report) = testdrive::audit::audit_policy(&dir, &options)? else {
            continue;
        };
        for p in &report.problems {
            println!("FAIL {} › {p}", report.policy);
        }
        let server = match report.server {
            Some((p, f)) => format!("; policy-server: {p} pass, {f} fail"),
            None => String::new(),
        };
        println!(
            "{}: {} objects, testdrive: {} pass, {} fail{server}",
            report.policy, report.objects, report.pass, report.fail
        );
        policies += 1;
        objects += report.objects;
        pass += report.pass;
        fail += report.fail;
        problems += report.problems.len();
    }
    let hosts = match options.policy_server {
        Some(_) => "testdrive and policy-server",
        None => "testdrive",
    };
    if problems == 0 {
        println!(
            "audit: {objects} objects of {policies} policies, {pass} pass, {fail} fail, as expected through {hosts}"
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "audit: {objects} objects of {policies} policies, {pass} pass, {fail} fail through testdrive; {problems} problems"
        );
        Ok(ExitCode::FAILURE)
    }
}

/// `testdrive install-e2e`: fails unless every case was answered as expected with no read
/// refused.
pub(crate) fn install_e2e(a: InstallE2eArgs) -> Result<ExitCode> {
    use testdrive::install::{InstallOptions, Sabotage};
    let sabotage = match (a.drop_role_resource, a.drop_context_aware) {
        (Some(_), Some(_)) => {
            return Err(Error::Invalid(
                "--drop-role-resource and --drop-context-aware: one hole at a time".into(),
            ));
        }
        (Some(resource), None) => Some(Sabotage::DropRoleResource(resource)),
        (None, Some(policy)) => Some(Sabotage::DropContextAware(policy)),
        (None, None) => None,
    };
    let options = InstallOptions {
        policy_server: a.policy_server,
        server_name: a.policy_server_name,
        deploy: a.deploy,
        modules_dir: a.modules_dir,
        wasm_dir: a.wasm_dir,
        work_dir: a.work_dir,
        policy_dirs: policy_dirs(a.dirs)?,
        sabotage,
    };
    let report = testdrive::install::run(&options)?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
