//! Every Capsule scenario request through the API server: each scenario's Tenant converted
//! (its bindings renamed `s<NN>-<name>` and placed on deploy/'s PolicyServer, as `make
//! install-e2e` places them), all loaded into one real policy-server whose reads deploy/'s
//! ClusterRole allows or refuses; per scenario its webhooks registered, and per request its
//! cluster state written as real objects and the request sent as its user. The verdict, the
//! refusing binding and its message, and every expected mutation must be the scenario's.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use crate::admission::{self, Outcome, policy_id};
use crate::cluster::Cluster;
use crate::error::Result;
use crate::state::{State, for_request};
use crate::tally::Tally;
use crate::verdict::{describe_refusal, patch_missing};
use capsule_bindings::hosts::Hosts;
use testdrive::capsule::scenario::{AdmittedRequest, admit_scenario, scenario_files};
use testdrive::capsule::server::rename;
use testdrive::cases::judge::check_message;
use testdrive::install::install_server;
use testdrive::kube::controller::{BINDING_KINDS, Controller, read_objects};

/// What the scenarios need.
pub struct TenantsOptions {
    /// policy-server.
    pub policy_server: PathBuf,
    /// The annotated modules.
    pub modules_dir: PathBuf,
    /// The policy wasm files (testdrive judges each request first).
    pub wasm_dir: PathBuf,
    /// The install directory.
    pub deploy: PathBuf,
    /// Scenario files or directories of them.
    pub scenarios: Vec<PathBuf>,
    /// Generated scenario files: their requests are sent, not judged (Capsule judges them).
    pub generated: Vec<PathBuf>,
}

/// One scenario's bindings and requests.
struct Scenario {
    stem: String,
    tenant: PathBuf,
    reports: Vec<String>,
    refused: bool,
    ids: BTreeSet<String>,
    prefix: String,
    requests: Vec<AdmittedRequest>,
    /// Whether its requests' expectations are checked (not for generated scenarios).
    judged: bool,
}

/// A scenario request as sent, and what the API server answered.
#[derive(Debug, Clone)]
pub struct Sent {
    /// `<scenario> › <request>`.
    pub label: String,
    /// The request and its cluster state.
    pub admitted: AdmittedRequest,
    /// The bundle's answer, through the API server.
    pub outcome: Outcome,
}

/// A scenario's Tenant manifest and its requests as sent.
#[derive(Debug, Clone)]
pub struct SentScenario {
    /// The scenario file's stem.
    pub stem: String,
    /// Its Tenant manifest.
    pub tenant: PathBuf,
    /// What convert reported about it.
    pub reports: Vec<String>,
    /// Whether convert refused it.
    pub refused: bool,
    /// Its requests, in order.
    pub requests: Vec<Sent>,
}

/// Every request of every scenario through the API server; returns them with the answers.
pub fn run(
    cluster: &Cluster,
    options: &TenantsOptions,
    state: &mut State,
    tally: &mut Tally,
) -> Result<Vec<SentScenario>> {
    let install = read_objects(std::slice::from_ref(&options.deploy))?;
    let (server, _) = install_server(&install, None)?;
    let (objects, scenarios) = scenarios(options, install, &server.name, tally)?;
    let controller = Controller::load(&objects, &server)?;
    let served = admission::serve_controller(
        cluster,
        &options.policy_server,
        &options.modules_dir,
        &controller,
        "policy-server-tenants",
    )?;
    admission::grant_requesters(
        cluster,
        scenarios
            .iter()
            .flat_map(|s| s.requests.iter().map(|r| &r.request)),
    )?;
    let (mut sent, mut passed, mut unjudged) = (0, 0, 0);
    let mut answered = Vec::new();
    for scenario in &scenarios {
        let mut requests = Vec::new();
        let installed: Vec<_> = controller
            .policies
            .iter()
            .filter(|p| scenario.ids.contains(&p.id))
            .collect();
        admission::register(cluster, &installed, served.port)?;
        for admitted in &scenario.requests {
            let label = format!("{} › {}", scenario.stem, admitted.case.name);
            if let Some(why) = admission::unsendable(&admitted.request) {
                tally.unsendable.push(format!("{label}: {why}"));
                continue;
            }
            if let Err(e) = state.reach(cluster, &for_request(&admitted.objects, &admitted.request))
            {
                tally.fail(&label, vec![format!("its cluster state: {e}")]);
                continue;
            }
            let outcome = admission::send(cluster, &admitted.request)?;
            if scenario.judged {
                sent += 1;
                let failures = judge(scenario, admitted, &outcome);
                if failures.is_empty() {
                    passed += 1;
                } else {
                    tally.fail(&label, failures);
                }
            } else {
                unjudged += 1;
            }
            requests.push(Sent {
                label,
                admitted: admitted.clone(),
                outcome,
            });
        }
        answered.push(SentScenario {
            stem: scenario.stem.clone(),
            tenant: scenario.tenant.clone(),
            reports: scenario.reports.clone(),
            refused: scenario.refused,
            requests,
        });
    }
    admission::unregister(cluster)?;
    served.stop();
    tally.requests += sent;
    tally.as_expected += passed;
    let generated = if unjudged > 0 {
        format!(", and {unjudged} requests of generated scenarios sent")
    } else {
        String::new()
    };
    println!(
        "Capsule scenarios through the API server: {passed}/{sent} requests as expected, {} scenarios, {} bindings loaded by one policy-server{generated}",
        scenarios.len(),
        controller.policies.len()
    );
    Ok(answered)
}

/// deploy/'s objects but its bindings, with every scenario's bindings renamed and placed on
/// the PolicyServer `server`; and the scenarios.
fn scenarios(
    options: &TenantsOptions,
    install: Vec<Value>,
    server: &str,
    tally: &mut Tally,
) -> Result<(Vec<Value>, Vec<Scenario>)> {
    let written = scenario_files(&options.scenarios).map_err(crate::error::Error::Bindings)?;
    let files: Vec<(PathBuf, bool)> = written
        .into_iter()
        .map(|f| (f, true))
        .chain(options.generated.iter().map(|f| (f.clone(), false)))
        .collect();
    let mut hosts = Hosts::new(options.wasm_dir.clone());
    let mut objects: Vec<Value> = install
        .into_iter()
        .filter(|o| {
            !o.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| BINDING_KINDS.contains(&k))
        })
        .collect();
    let mut scenarios = Vec::new();
    for (n, (file, judged)) in files.iter().enumerate() {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let admitted = match admit_scenario(file, &mut hosts) {
            Ok(s) => s,
            Err(e) => {
                tally.problems.push(format!("{stem}: {e}"));
                continue;
            }
        };
        let prefix = format!("s{n:02}-");
        let (renamed, ids) = rename(admitted.manifests, &prefix, server);
        objects.extend(renamed);
        scenarios.push(Scenario {
            stem,
            tenant: admitted.tenant,
            reports: admitted.reports,
            refused: admitted.refused,
            ids,
            prefix: format!("clusterwide-{prefix}"),
            requests: admitted.requests,
            judged: *judged,
        });
    }
    Ok((objects, scenarios))
}

/// How the API server's answer differs from the scenario's expectations.
fn judge(scenario: &Scenario, admitted: &AdmittedRequest, outcome: &Outcome) -> Vec<String> {
    let expect = &admitted.case.expect;
    let mut failures = Vec::new();
    if expect.allowed != outcome.allowed {
        failures.push(format!(
            "allowed: expected {}, got {}{}",
            expect.allowed,
            outcome.allowed,
            describe_refusal(outcome)
        ));
        return failures;
    }
    if !outcome.allowed {
        let by = outcome
            .refused_by
            .as_deref()
            .map(policy_id)
            .and_then(|id| id.strip_prefix(&scenario.prefix));
        match by.and_then(|name| expect.policies.get(name).map(|e| (name, e))) {
            Some((_, own)) if own.allowed == Some(false) => {
                check_message(own, Some(&outcome.message), &mut failures);
            }
            _ => failures.push(format!(
                "refused by a binding the scenario does not expect to refuse{}",
                describe_refusal(outcome)
            )),
        }
        return failures;
    }
    if let (Some(sent), Some(object)) = (admitted.request.get("object"), &outcome.object) {
        for (name, own) in &expect.policies {
            if let Some(patch) = &own.patch {
                failures.extend(
                    patch_missing(patch, sent, object)
                        .into_iter()
                        .map(|f| format!("{name}: {f}")),
                );
            }
        }
    }
    failures
}
