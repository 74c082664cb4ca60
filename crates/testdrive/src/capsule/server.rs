//! Scenario requests through the real policy-server, configured as kubewarden-controller
//! configures it from the Tenant's ClusterAdmissionPolicies.
//!
//! Every scenario's bindings are renamed `s<NN>-<name>` (one policy-server hosts all the
//! scenarios) and placed on the PolicyServer of the install directory, whose ClusterRole the
//! fake API server enforces; the install's own bindings are not loaded. Each request is sent
//! to the webhooks of its own scenario whose rules and selectors match, as the API server
//! sends it ([`crate::install::Deployment::admit`]); the bindings called, the verdict,
//! each binding's message and patch must be the scenario's expectations and testdrive's.
//! The fake API server serves what testdrive read while judging the requests; requests
//! whose cluster states disagree go to separate policy-servers.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cases::check_evaluation;
use crate::e2e::host_disagreement;
use crate::install::{Admission as ServerAdmission, Deployment, install_server};
use crate::kube::apiserver::FakeApi;
use crate::kube::controller::{Controller, ModulesDir, Namespaces, read_objects};
use policy_host::replay::Exchange;
use serde_json::Value;

use crate::capsule::scenario::{AdmittedRequest, admit_scenario};
use capsule_bindings::error::{Error, Result};
use capsule_bindings::hosts::Hosts;

/// Options of [`check`].
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The policy-server binary.
    pub policy_server: PathBuf,
    /// The PolicyServer under test (default: the only one of the install directory).
    pub server_name: Option<String>,
    /// The install directory (PolicyServer, ServiceAccount, ClusterRole and its binding).
    pub install_dir: PathBuf,
    /// The annotated modules (`<policy>.wasm`).
    pub modules_dir: PathBuf,
    /// Where policies.yml, the logs and the request bodies go.
    pub work_dir: PathBuf,
}

/// The outcome of [`check`].
#[derive(Debug, Clone, Default)]
pub struct ServerReport {
    /// Bindings loaded (all scenarios).
    pub loaded: usize,
    /// Requests sent.
    pub requests: usize,
    /// Requests answered as expected.
    pub passed: usize,
    /// policy-servers started.
    pub servers: usize,
    /// Reads granted, reads refused.
    pub reads: (usize, usize),
    /// Failures: scenario › request, and why.
    pub failures: Vec<(String, Vec<String>)>,
}

/// One request with what its policy-server needs.
struct Unit {
    /// `<file> › <request>`.
    label: String,
    /// The scenario's number.
    scenario: usize,
    /// Its bindings' ids.
    ids: BTreeSet<String>,
    /// The id prefix of its bindings (`clusterwide-s<NN>-`).
    prefix: String,
    admitted: AdmittedRequest,
    namespaces: Namespaces,
    api: FakeApi,
}

/// A policy-server's share: the units whose cluster states agree.
#[derive(Default)]
struct Batch {
    api: FakeApi,
    units: Vec<Unit>,
}

/// The cluster state testdrive's steps read, as the fake API server serves it.
fn recorded_state(admitted: &AdmittedRequest) -> Result<FakeApi> {
    let mut api = FakeApi::default();
    for step in &admitted.admission.steps {
        let exchanges: Vec<Exchange> = if step.session.trim().is_empty() {
            Vec::new()
        } else {
            serde_yaml::from_str::<Option<Vec<Exchange>>>(&step.session)
                .map_err(|e| Error::Invalid(format!("{}'s reads: {e}", step.binding)))?
                .unwrap_or_default()
        };
        let state = FakeApi::from_exchanges(&exchanges)?;
        if !api.merge(&state) {
            return Err(Error::Invalid(format!(
                "{}'s reads disagree with the other bindings'",
                step.binding
            )));
        }
    }
    Ok(api)
}

/// The scenarios of `files`: each one's bindings (renamed `s<NN>-<name>`, on `server`), and
/// their requests batched by agreeing cluster states; a scenario or request that cannot run
/// is a failure in `report`.
fn collect(
    files: &[PathBuf],
    hosts: &mut Hosts,
    server: &str,
    report: &mut ServerReport,
) -> (Vec<Vec<Value>>, Vec<Batch>) {
    let mut manifests: Vec<Vec<Value>> = Vec::new();
    let mut batches: Vec<Batch> = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let scenario = match admit_scenario(file, hosts) {
            Ok(s) => s,
            Err(e) => {
                report.failures.push((stem, vec![e.to_string()]));
                manifests.push(Vec::new());
                continue;
            }
        };
        let prefix = format!("s{n:02}-");
        let (renamed, ids) = rename(scenario.manifests, &prefix, server);
        manifests.push(renamed);
        for admitted in scenario.requests {
            let label = format!("{stem} › {}", admitted.case.name);
            let api = match recorded_state(&admitted) {
                Ok(api) => api,
                Err(e) => {
                    report.failures.push((label, vec![e.to_string()]));
                    continue;
                }
            };
            let unit = Unit {
                label,
                scenario: n,
                ids: ids.clone(),
                prefix: format!("clusterwide-{prefix}"),
                namespaces: Namespaces::from_objects(&admitted.objects),
                admitted,
                api,
            };
            match batches.iter_mut().find(|b| b.api.clone().merge(&unit.api)) {
                Some(batch) => {
                    batch.api.merge(&unit.api);
                    batch.units.push(unit);
                }
                None => batches.push(Batch {
                    api: unit.api.clone(),
                    units: vec![unit],
                }),
            }
        }
    }
    (manifests, batches)
}

/// The bindings named `<prefix><name>` on PolicyServer `server`, and their policy ids.
pub fn rename(manifests: Vec<Value>, prefix: &str, server: &str) -> (Vec<Value>, BTreeSet<String>) {
    let mut ids = BTreeSet::new();
    let renamed = manifests
        .into_iter()
        .map(|mut m| {
            let name = m
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            ids.insert(format!("clusterwide-{prefix}{name}"));
            if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("name".into(), Value::String(format!("{prefix}{name}")));
            }
            if let Some(spec) = m.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("policyServer".into(), Value::String(server.to_owned()));
            }
            m
        })
        .collect();
    (renamed, ids)
}

/// Runs every request of `files` through policy-server; prints every failure and the
/// summary line.
pub fn check(
    files: &[PathBuf],
    hosts: &mut Hosts,
    options: &ServerOptions,
) -> Result<ServerReport> {
    let started = Instant::now();
    let install = read_objects(std::slice::from_ref(&options.install_dir))?;
    let (server, rbac) = install_server(&install, options.server_name.as_deref())?;
    // the install's RBAC and PolicyServer, not its bindings
    let base: Vec<Value> = install
        .into_iter()
        .filter(|o| {
            !o.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| crate::kube::controller::BINDING_KINDS.contains(&k))
        })
        .collect();
    let mut report = ServerReport::default();
    let (manifests, batches) = collect(files, hosts, &server.name, &mut report);
    let modules = ModulesDir::new(&options.modules_dir)?;
    for (b, batch) in batches.into_iter().enumerate() {
        let scenarios: BTreeSet<usize> = batch.units.iter().map(|u| u.scenario).collect();
        let mut objects = base.clone();
        for n in &scenarios {
            objects.extend(manifests.get(*n).cloned().unwrap_or_default());
        }
        let controller = Controller::load(&objects, &server)?;
        report.loaded += controller.policies.len();
        let mut deployment = Deployment::start(
            controller,
            &modules,
            batch.api.with_rbac(rbac.clone()),
            &options.policy_server,
            &options.work_dir.join(format!("server-{b}")),
        )?;
        report.servers += 1;
        for unit in &batch.units {
            report.requests += 1;
            let answer = deployment.admit(&unit.admitted.request, &unit.namespaces, |id| {
                unit.ids.contains(id)
            });
            let failures = judge(unit, &answer);
            if failures.is_empty() {
                report.passed += 1;
            } else {
                report.failures.push((unit.label.clone(), failures));
            }
        }
        let reads = deployment.reads();
        let granted = reads.iter().filter(|(_, g)| *g).count();
        report.reads.0 += granted;
        report.reads.1 += reads.len() - granted;
        deployment.stop();
    }
    print(&report, started);
    Ok(report)
}

/// Every failure, then the summary line.
fn print(report: &ServerReport, started: Instant) {
    for (label, failures) in &report.failures {
        println!("FAIL {label}");
        for f in failures {
            println!("    {f}");
        }
    }
    println!(
        "capsule-bindings check through policy-server: {} bindings loaded as the controller would, {}/{} requests answered as expected, {} policy-server(s), RBAC enforced ({} reads granted, {} refused), {:.0} s",
        report.loaded,
        report.passed,
        report.requests,
        report.servers,
        report.reads.0,
        report.reads.1,
        started.elapsed().as_secs_f64()
    );
}

/// How policy-server's admission differs from the scenario's expectations and testdrive's.
fn judge(unit: &Unit, answer: &ServerAdmission) -> Vec<String> {
    let mut failures = Vec::new();
    let expect = &unit.admitted.case.expect;
    let name_of = |id: &str| id.strip_prefix(&unit.prefix).unwrap_or(id).to_owned();
    let called: BTreeSet<String> = answer.steps.iter().map(|s| name_of(&s.id)).collect();
    let expected: BTreeSet<String> = expect.policies.keys().cloned().collect();
    if called != expected {
        failures.push(format!(
            "bindings the API server calls: expected {expected:?}, got {called:?}"
        ));
    }
    if answer.allowed() != expect.allowed {
        failures.push(format!(
            "allowed: expected {}, got {}",
            expect.allowed,
            answer.allowed()
        ));
    }
    for step in &answer.steps {
        let name = name_of(&step.id);
        for access in &step.refused {
            failures.push(format!(
                "{name}: read refused by the ClusterRole (403 Forbidden): {access}"
            ));
        }
        let eval = match &step.answer {
            Ok(eval) => eval,
            Err(why) => {
                failures.push(format!("{name}: {why}"));
                continue;
            }
        };
        if let Some(own) = expect.policies.get(&name) {
            let mut found = Vec::new();
            check_evaluation(own, eval, &mut found);
            failures.extend(found.into_iter().map(|f| format!("{name}: {f}")));
        }
        if let Some(ours) = unit
            .admitted
            .admission
            .steps
            .iter()
            .find(|s| s.binding == name)
            && ours.request == step.request
            && let Some(d) = host_disagreement("policy-server", eval, &ours.evaluation)
        {
            failures.push(format!("{name}: {d}"));
        }
    }
    failures
}

/// Fails unless every request passed.
pub fn require_pass(report: &ServerReport) -> Result<()> {
    if report.failures.is_empty() && report.passed == report.requests {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{} requests failed through policy-server",
            report.failures.len()
        )))
    }
}

/// The install directory's path as given, for messages.
pub fn describe(options: &ServerOptions) -> String {
    format!(
        "{} on the PolicyServer of {}",
        options.policy_server.display(),
        Path::new(&options.install_dir).display()
    )
}
