//! install-e2e's cases through the API server: deploy/'s bindings plus, per context-aware
//! policy, a binding with one of its cases' settings (testdrive's choice, as `make
//! install-e2e` makes it), loaded into the real policy-server as kubewarden-controller loads
//! them, its lookups under deploy/'s ClusterRole as Kubernetes' RBAC enforces it; each
//! case's state written as real objects and its request sent as its user. The API server
//! calls deploy/'s baseline bindings too: the verdict expected is the case's and theirs, as
//! capsule-bindings judges them in testdrive (a baseline binding that refuses the request
//! there must be the one the API server names, with its message). Then the two
//! holes that must fail for real: the ClusterRole without `priorityclasses` (the API server
//! answers 403) and the binding without its `contextAwareResources` entry (policy-server
//! refuses the read).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::admission::{self, Outcome, Served, policy_id};
use crate::cluster::Cluster;
use crate::error::Result;
use crate::state::{State, for_request};
use crate::tally::Tally;
use crate::verdict::{describe_refusal, judge};
use capsule_bindings::{Binding, Hosts};
use policy_host::cluster::ClusterObjects;
use testdrive::install::{InstallOptions, Prepared, Sabotage, prepare};
use testdrive::kube::controller::BINDING_KINDS;
use testdrive::kube::controller::Controller;

/// What the cases need.
pub struct CasesOptions {
    /// policy-server.
    pub policy_server: PathBuf,
    /// The annotated modules.
    pub modules_dir: PathBuf,
    /// The policy wasm files.
    pub wasm_dir: PathBuf,
    /// The install directory.
    pub deploy: PathBuf,
    /// The policy directories.
    pub policy_dirs: Vec<PathBuf>,
}

/// The policy the holes are shown on, and how each must fail.
const HOLE_POLICY: &str = "priority-class-policy";

fn prepared(
    options: &CasesOptions,
    work: &Path,
    sabotage: Option<Sabotage>,
    dirs: Vec<PathBuf>,
) -> Result<Prepared> {
    Ok(prepare(&InstallOptions {
        policy_server: options.policy_server.clone(),
        server_name: None,
        deploy: options.deploy.clone(),
        modules_dir: options.modules_dir.clone(),
        wasm_dir: options.wasm_dir.clone(),
        work_dir: work.to_path_buf(),
        policy_dirs: dirs,
        sabotage,
    })?)
}

/// Loads `prepared` into a policy-server of its own (`name`), its token deploy/'s
/// ServiceAccount's.
fn start(
    cluster: &Cluster,
    options: &CasesOptions,
    prepared: &Prepared,
    name: &str,
) -> Result<(Controller, Served)> {
    let controller = Controller::load(&prepared.objects, &prepared.server)?;
    let served = admission::serve_controller(
        cluster,
        &options.policy_server,
        &options.modules_dir,
        &controller,
        name,
    )?;
    Ok((controller, served))
}

/// Every case through the API server; the holes after them.
pub fn run(
    cluster: &Cluster,
    options: &CasesOptions,
    state: &mut State,
    tally: &mut Tally,
) -> Result<()> {
    let work = cluster.dir.join("install-cases");
    let prepared = prepared(options, &work, None, options.policy_dirs.clone())?;
    tally.problems.extend(prepared.problems.iter().cloned());
    let (controller, served) = start(cluster, options, &prepared, "policy-server-install")?;
    admission::grant_requesters(cluster, prepared.entries.iter().map(|e| &e.pick.request))?;
    let objects = prepared.cluster.objects();
    let baseline: Vec<Binding> = prepared
        .objects
        .iter()
        .filter(|o| {
            o.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| BINDING_KINDS.contains(&k))
        })
        .filter(|o| {
            !o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with("install-e2e-"))
        })
        // the baseline bindings capsule-bindings can judge (its catalogue's policies): a
        // refusal by any other is a failure below, never passed over
        .filter_map(|o| Binding::from_manifest(o).ok())
        .collect();
    let mut hosts = Hosts::new(options.wasm_dir.clone());
    let cluster_objects = ClusterObjects::new(objects.clone())?;
    let (mut sent, mut passed) = (0, 0);
    for entry in &prepared.entries {
        let request = &entry.pick.request;
        let label = format!("install case {} › {:?}", entry.policy, entry.pick.name);
        if let Some(why) = admission::unsendable(request) {
            tally.unsendable.push(format!("{label}: {why}"));
            continue;
        }
        if let Err(e) = state.reach(cluster, &for_request(&objects, request)) {
            tally.fail(&label, vec![format!("its cluster state: {e}")]);
            continue;
        }
        let installed: Vec<_> = controller
            .policies
            .iter()
            .filter(|p| entry.installed(&p.id))
            .collect();
        admission::register(cluster, &installed, served.port)?;
        let outcome = admission::send(cluster, request)?;
        sent += 1;
        let refusing = baseline_refusals(&baseline, request, &cluster_objects, &mut hosts)?;
        let failures = if refusing.is_empty() {
            judge(
                &entry.id,
                &entry.pick.expect,
                &outcome,
                request.get("object"),
            )
        } else {
            judge_refused_by_baseline(&entry.id, &entry.pick.expect, &refusing, &outcome)
        };
        if failures.is_empty() {
            passed += 1;
        } else {
            tally.fail(&label, failures);
        }
    }
    tally.requests += sent;
    tally.as_expected += passed;
    println!(
        "install cases through the API server: {passed}/{sent} as expected, {} policies loaded by policy-server",
        controller.policies.len()
    );
    admission::unregister(cluster)?;
    served.stop();
    holes(cluster, options, state, tally)
}

/// The baseline bindings that refuse `request` in testdrive: `(policy id, message)`.
fn baseline_refusals(
    baseline: &[Binding],
    request: &Value,
    cluster: &ClusterObjects,
    hosts: &mut Hosts,
) -> Result<Vec<(String, String)>> {
    let admission = capsule_bindings::admit(baseline, request, cluster, hosts)?;
    Ok(admission
        .steps
        .iter()
        .filter(|s| !s.monitor && !s.evaluation.response.allowed)
        .map(|s| {
            (
                format!("clusterwide-{}", s.binding),
                s.evaluation
                    .response
                    .message()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect())
}

/// A case whose request a baseline binding refuses in testdrive: the API server must refuse
/// it, by that binding with its message, or by the case's own binding when the case expects
/// a refusal.
fn judge_refused_by_baseline(
    id: &str,
    expect: &testdrive::cases::schema::Expect,
    refusing: &[(String, String)],
    outcome: &Outcome,
) -> Vec<String> {
    let by = outcome.refused_by.as_deref().map(policy_id);
    if outcome.allowed {
        return vec![format!(
            "admitted, but {} refuses it in testdrive",
            refusing
                .iter()
                .map(|(id, _)| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )];
    }
    if by == Some(id) {
        return judge(id, expect, outcome, None);
    }
    match refusing.iter().find(|(rid, _)| Some(rid.as_str()) == by) {
        Some((_, message)) if outcome.message.contains(message.as_str()) => {
            println!(
                "note: {id}'s case is refused by the baseline binding {} first, as in testdrive: {message}",
                by.unwrap_or_default()
            );
            Vec::new()
        }
        _ => vec![format!(
            "refused{}, but testdrive's baseline refusals are {refusing:?}",
            describe_refusal(outcome)
        )],
    }
}

/// The two broken installs, each on the hole policy's case: both must refuse that request,
/// each for its own reason.
fn holes(
    cluster: &Cluster,
    options: &CasesOptions,
    state: &mut State,
    tally: &mut Tally,
) -> Result<()> {
    let dirs: Vec<PathBuf> = options
        .policy_dirs
        .iter()
        .filter(|d| d.ends_with(HOLE_POLICY))
        .cloned()
        .collect();
    for (sabotage, expected) in [
        (
            Sabotage::DropRoleResource("priorityclasses".into()),
            "is forbidden",
        ),
        (
            Sabotage::DropContextAware(HOLE_POLICY.into()),
            "has not been granted access",
        ),
    ] {
        let work = cluster.dir.join("hole");
        let prepared = prepared(options, &work, Some(sabotage.clone()), dirs.clone())?;
        let Some(entry) = prepared.entries.first() else {
            tally
                .problems
                .push(format!("hole {sabotage:?}: no case of {HOLE_POLICY}"));
            continue;
        };
        let role = if let Sabotage::DropRoleResource(_) = &sabotage {
            // the live ClusterRole without the resource, for real
            let roles: Vec<Value> = prepared
                .objects
                .iter()
                .filter(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterRole"))
                .filter(|o| {
                    o.pointer("/metadata/name").and_then(Value::as_str)
                        == Some(&format!("{}-lookups", prepared.server.name))
                })
                .cloned()
                .collect();
            cluster.admin.run(
                &["apply", "--server-side", "--force-conflicts", "-f", "-"],
                Some(
                    &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": roles})
                        .to_string(),
                ),
            )?;
            true
        } else {
            false
        };
        let (controller, served) = start(cluster, options, &prepared, "policy-server-hole")?;
        let objects = prepared.cluster.objects();
        state.reach(cluster, &for_request(&objects, &entry.pick.request))?;
        let installed: Vec<_> = controller
            .policies
            .iter()
            .filter(|p| p.id == entry.id)
            .collect();
        admission::register(cluster, &installed, served.port)?;
        let outcome = admission::send(cluster, &entry.pick.request)?;
        served.stop();
        admission::unregister(cluster)?;
        if role {
            cluster.admin.run(
                &[
                    "apply",
                    "-k",
                    &options.deploy.display().to_string(),
                    "--server-side",
                    "--force-conflicts",
                ],
                None,
            )?;
        }
        if !outcome.allowed && outcome.message.contains(expected) {
            tally
                .holes
                .push(format!("{sabotage:?} fails as it must: {expected}"));
            println!("hole {sabotage:?} fails as it must: {}", outcome.message);
        } else {
            tally.problems.push(format!(
                "hole {sabotage:?}: expected the request refused with {expected:?}, got allowed {} {:?}",
                outcome.allowed, outcome.message
            ));
        }
    }
    Ok(())
}
