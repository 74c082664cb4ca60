//! `testdrive install-e2e`: the generated install, run as Kubewarden runs it.
//!
//! 1. the install directory is read (every YAML document directly in it): the PolicyServer
//!    under test gives its ServiceAccount, the ClusterRoles bound to that ServiceAccount its
//!    RBAC, and its bindings are loaded;
//! 2. every context-aware policy (non-empty `contextAwareResources` in its metadata) gets one
//!    more ClusterAdmissionPolicy built from its metadata (module reference, `mutating`,
//!    rules with every opt-in set of `optional-rules.yml`, `contextAwareResources`) with the settings of one of its declarative cases,
//!    chosen as `publish-local` chooses (a request case with an expected verdict that
//!    testdrive passes, whose recorded lookups agree with the other cases');
//! 3. the controller's step ([`crate::kube::controller`]) turns every binding of the PolicyServer
//!    into policies.yml, and the real policy-server runs on it, its lookups answered by a fake
//!    API server that serves the cases' recorded objects and refuses (403) every read the
//!    role does not grant;
//! 4. each case's request is sent as the API server sends it, to every webhook of the
//!    install plus the case's own binding whose rules and selectors match (the other
//!    cases' bindings are left out: their settings are other cases'); the case's own
//!    binding must be among them and answer as the case
//!    expects and as testdrive does; no webhook may fail, and no read may be refused.
//!
//! The last line is `install-e2e: N policies loaded as the controller would, N/N answered as
//! expected, RBAC enforced (N reads granted, N refused)`.

mod deployment;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

use crate::bench::server::PolicyBinding;
use crate::cases::{check_evaluation, policy_metadata};
use crate::e2e::host_disagreement;
use crate::kube::apiserver::{FakeApi, Rbac};
use crate::kube::controller::{
    Controller, ModulesDir, Namespaces, PolicyServerSpec, of_kind, read_objects,
};
pub use crate::release::publish::server::Pick;
use crate::release::publish::server::pick_case;
pub use deployment::{Admission, Deployment, Step};
use policy_host::error::{Error, Result};

/// The registry the generated bindings name (only the last path segment picks the module).
pub const MODULE_REGISTRY: &str = "registry://ghcr.io/tenancy-policies/tenancy-policies";

/// The id prefix of the bindings install-e2e adds (`clusterwide-install-e2e-<policy>`).
const CASE_BINDING_ID: &str = "clusterwide-install-e2e-";

/// A deliberate hole, to show that install-e2e catches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sabotage {
    /// Removes this resource (`priorityclasses`) from every ClusterRole rule.
    DropRoleResource(String),
    /// Removes the first `contextAwareResources` entry of this policy's generated binding.
    DropContextAware(String),
}

/// Options of [`run`].
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The policy-server binary.
    pub policy_server: PathBuf,
    /// The PolicyServer under test (default: the only one of the install).
    pub server_name: Option<String>,
    /// The install directory.
    pub deploy: PathBuf,
    /// The annotated modules (`<policy>.wasm`).
    pub modules_dir: PathBuf,
    /// The policy wasm files (testdrive judges each case first).
    pub wasm_dir: PathBuf,
    /// Where policies.yml, logs and request bodies go.
    pub work_dir: PathBuf,
    /// The policy directories.
    pub policy_dirs: Vec<PathBuf>,
    /// A hole to make on purpose.
    pub sabotage: Option<Sabotage>,
}

/// The outcome of [`run`].
#[derive(Debug, Clone, Default)]
pub struct InstallReport {
    /// Bindings loaded by the controller's step.
    pub loaded: usize,
    /// Context-aware policies with a case.
    pub cases: usize,
    /// Cases answered as expected.
    pub answered: usize,
    /// Reads the role granted.
    pub granted: usize,
    /// Reads it refused.
    pub refused: usize,
    /// Every problem, naming its policy.
    pub problems: Vec<String>,
}

impl InstallReport {
    /// Whether everything went as expected.
    pub fn passed(&self) -> bool {
        self.problems.is_empty() && self.answered == self.cases && self.refused == 0
    }

    /// The closing line.
    pub fn summary(&self) -> String {
        format!(
            "install-e2e: {} policies loaded as the controller would, {}/{} answered as expected, RBAC enforced ({} reads granted, {} refused)",
            self.loaded, self.answered, self.cases, self.granted, self.refused
        )
    }
}

/// The ServiceAccount's namespace: that of the ServiceAccount object of this name, else the
/// controller's.
fn service_account_namespace(objects: &[Value], name: &str) -> String {
    of_kind(objects, "ServiceAccount")
        .find(|sa| sa.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .and_then(|sa| sa.pointer("/metadata/namespace").and_then(Value::as_str))
        .unwrap_or(crate::kube::controller::DEFAULT_DEPLOYMENTS_NAMESPACE)
        .to_owned()
}

/// The PolicyServer under test among an install's `objects` (named `name`, else the only
/// one), deployed in its ServiceAccount's namespace, and that ServiceAccount's RBAC.
pub fn install_server(objects: &[Value], name: Option<&str>) -> Result<(PolicyServerSpec, Rbac)> {
    let mut server = PolicyServerSpec::find(objects, name)?;
    let sa = server
        .service_account
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    server.deployments_namespace = service_account_namespace(objects, &sa);
    let rbac = Rbac::for_service_account(objects, &server.deployments_namespace, &sa);
    Ok((server, rbac))
}

/// Removes `resource` from every ClusterRole rule of `objects`, and every rule left with
/// no resource (which the API server refuses).
fn drop_role_resource(objects: &mut [Value], resource: &str) {
    for role in objects
        .iter_mut()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterRole"))
    {
        let Some(rules) = role.get_mut("rules").and_then(Value::as_array_mut) else {
            continue;
        };
        for rule in rules.iter_mut() {
            if let Some(resources) = rule.get_mut("resources").and_then(Value::as_array_mut) {
                resources.retain(|r| r.as_str() != Some(resource));
            }
        }
        rules.retain(|r| {
            r.get("resources")
                .and_then(Value::as_array)
                .is_none_or(|a| !a.is_empty())
        });
    }
}

/// The ClusterAdmissionPolicy of a context-aware policy's case.
fn case_binding(binding: &PolicyBinding, dir: &Path, pick: &Pick, server: &str) -> Result<Value> {
    let metadata = policy_metadata(dir)?.unwrap_or_default();
    let version = crate::release::artifacthub::metadata_version(&metadata).unwrap_or("0.0.0");
    let short = binding.policy.trim_end_matches("-policy");
    let mut rules = metadata.rules.clone();
    rules.extend(optional_rules(dir)?);
    Ok(json!({
        "apiVersion": "policies.kubewarden.io/v1",
        "kind": "ClusterAdmissionPolicy",
        "metadata": {"name": format!("{}{short}", CASE_BINDING_ID.trim_start_matches("clusterwide-"))},
        "spec": {
            "policyServer": server,
            "module": format!("{MODULE_REGISTRY}/{}:v{version}", binding.policy),
            "mutating": metadata.mutating,
            "rules": rules,
            "contextAwareResources": binding.context_aware,
            "settings": pick.settings,
        }
    }))
}

/// Every opt-in rule set of the policy (`optional-rules.yml`: set name → rules), as a
/// binding on a cluster that serves them all carries them.
fn optional_rules(dir: &Path) -> Result<Vec<Value>> {
    let path = dir.join("optional-rules.yml");
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let sets: std::collections::BTreeMap<String, Vec<Value>> =
        serde_yaml::from_str(&text).map_err(|e| Error::parse(path.display(), e))?;
    Ok(sets.into_values().flatten().collect())
}

/// One context-aware policy's case and the id of its binding.
pub struct Entry {
    /// The policy.
    pub policy: String,
    /// Its case binding's policy id (`clusterwide-install-e2e-<short>`).
    pub id: String,
    /// The case.
    pub pick: Pick,
}

impl Entry {
    /// Whether the policy `id` is installed for this case: the install's own bindings and
    /// this case's (the other cases' bindings carry the other cases' settings).
    pub fn installed(&self, id: &str) -> bool {
        id == self.id || !id.starts_with(CASE_BINDING_ID)
    }
}

/// install-e2e's install, before anything runs: the install's objects plus a binding per
/// context-aware policy's case.
pub struct Prepared {
    /// The install's objects and the case bindings.
    pub objects: Vec<Value>,
    /// The PolicyServer under test.
    pub server: PolicyServerSpec,
    /// Its ServiceAccount's RBAC.
    pub rbac: Rbac,
    /// The cases.
    pub entries: Vec<Entry>,
    /// What the cases read, as the fake API server serves it.
    pub cluster: FakeApi,
    /// Policies without a case.
    pub problems: Vec<String>,
}

/// Reads the install and picks a case per context-aware policy (see the module docs).
pub fn prepare(options: &InstallOptions) -> Result<Prepared> {
    let mut objects = read_objects(std::slice::from_ref(&options.deploy))?;
    if let Some(Sabotage::DropRoleResource(resource)) = &options.sabotage {
        drop_role_resource(&mut objects, resource);
    }
    let (server, rbac) = install_server(&objects, options.server_name.as_deref())?;
    let mut problems = Vec::new();
    let mut cluster = FakeApi::default();
    let mut entries = Vec::new();
    for dir in &options.policy_dirs {
        let Some(metadata) = policy_metadata(dir)? else {
            continue;
        };
        if metadata.context_aware_resources.is_empty() {
            continue;
        }
        let binding = PolicyBinding::load(dir, &options.wasm_dir, &options.modules_dir)?;
        let pick = match pick_case(dir, &binding, &mut cluster) {
            Ok(pick) => pick,
            Err(why) => {
                problems.push(format!("{}: no case: {why}", binding.policy));
                continue;
            }
        };
        let mut manifest = case_binding(&binding, dir, &pick, &server.name)?;
        if let Some(Sabotage::DropContextAware(policy)) = &options.sabotage
            && *policy == binding.policy
            && let Some(resources) = manifest
                .pointer_mut("/spec/contextAwareResources")
                .and_then(Value::as_array_mut)
            && !resources.is_empty()
        {
            resources.remove(0);
        }
        let name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        objects.push(manifest);
        entries.push(Entry {
            policy: binding.policy.clone(),
            id: format!("clusterwide-{name}"),
            pick,
        });
    }
    Ok(Prepared {
        objects,
        server,
        rbac,
        entries,
        cluster,
        problems,
    })
}

/// Runs install-e2e; prints a line per policy and every problem, then the summary.
pub fn run(options: &InstallOptions) -> Result<InstallReport> {
    let started = Instant::now();
    let Prepared {
        objects,
        server,
        rbac,
        entries,
        cluster,
        problems,
    } = prepare(options)?;
    let mut report = InstallReport {
        problems,
        ..InstallReport::default()
    };
    report.cases = entries.len() + report.problems.len();
    let controller = Controller::load(&objects, &server)?;
    report.loaded = controller.policies.len();
    for note in &controller.notes {
        println!("note: {note}");
    }
    let namespaces = Namespaces::from_objects(&cluster.namespaces());
    let modules = ModulesDir::new(&options.modules_dir)?;
    let mut deployment = Deployment::start(
        controller,
        &modules,
        cluster.with_rbac(rbac),
        &options.policy_server,
        &options.work_dir,
    )?;
    for entry in &entries {
        // the install plus this case's binding: the other cases' bindings are not installed
        let admission =
            deployment.admit(&entry.pick.request, &namespaces, |id| entry.installed(id));
        let problems = judge(entry, &admission);
        if problems.is_empty() {
            report.answered += 1;
            println!(
                "{}: {} answered case {:?} as expected ({} lookups)",
                entry.policy, entry.id, entry.pick.name, entry.pick.lookups
            );
        }
        for problem in problems {
            println!("FAIL {}: {problem}", entry.policy);
            report.problems.push(format!("{}: {problem}", entry.policy));
        }
    }
    let reads = deployment.reads();
    report.granted = reads.iter().filter(|(_, granted)| *granted).count();
    report.refused = reads.len() - report.granted;
    for (access, _) in reads.iter().filter(|(_, granted)| !granted) {
        println!("403 Forbidden: {access}");
    }
    println!(
        "policies.yml and policy-server's log in {} ({:.1} s)",
        deployment.dir().display(),
        started.elapsed().as_secs_f64()
    );
    deployment.stop();
    println!("{}", report.summary());
    Ok(report)
}

/// Every way the admission of a case misses: its binding not called, its answer not the
/// case's or not testdrive's, another webhook failing, a read refused.
fn judge(entry: &Entry, admission: &Admission) -> Vec<String> {
    let case = format!("case {:?} ({})", entry.pick.name, entry.pick.file.display());
    let mut problems = Vec::new();
    for step in &admission.steps {
        for access in &step.refused {
            problems.push(format!(
                "{case}: {} read refused by the ClusterRole (403 Forbidden): {access}",
                step.id
            ));
        }
        match &step.answer {
            Err(why) => problems.push(format!("{case}: {}: {why}", step.id)),
            Ok(eval) if step.id != entry.id && eval.response.code() == Some(500) => {
                problems.push(format!(
                    "{case}: {} failed: {}",
                    step.id,
                    eval.response.message().unwrap_or_default()
                ));
            }
            Ok(_) => {}
        }
    }
    let Some(step) = admission.step(&entry.id) else {
        let called: Vec<&str> = admission.steps.iter().map(|s| s.id.as_str()).collect();
        problems.push(format!(
            "{case}: the request is not sent to {} (called: {called:?})",
            entry.id
        ));
        return problems;
    };
    if let Ok(eval) = &step.answer {
        let mut failures = Vec::new();
        check_evaluation(&entry.pick.expect, eval, &mut failures);
        if step.request == entry.pick.request {
            failures.extend(host_disagreement(
                "policy-server",
                eval,
                &entry.pick.testdrive,
            ));
        }
        problems.extend(
            failures
                .into_iter()
                .map(|f| format!("{case}: {}: {f}", entry.id)),
        );
    }
    problems
}

/// Fails with the report's problems when it did not pass.
pub fn require_pass(report: &InstallReport) -> Result<()> {
    if report.passed() {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{} problems: {}",
            report.problems.len(),
            report.problems.join("; ")
        )))
    }
}
