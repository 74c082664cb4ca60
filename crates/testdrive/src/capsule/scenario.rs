//! Scenario cases: a Tenant converted, then requests judged by the bindings it produced.
//!
//! A scenario file (`crates/capsule-bindings/cases/*.yaml`) names a Tenant manifest, what its
//! conversion must give (binding names, reports in order, settings, refusals) and requests
//! with the verdict of every binding that must see them. Each request runs through the
//! bindings with [`capsule_bindings::admission::admit`] in testdrive; with kwctl, every binding's
//! evaluation is run again by `kwctl run` (annotated module, the same settings, the request
//! as that binding saw it, the recorded cluster reads) and must agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::cases::{Expect, RequestSpec, check_evaluation};
use crate::e2e::{KwctlInputs, annotate, disagreement, in_parallel, kwctl_run, prepare_work_dir};
use policy_host::ClusterObjects;
use policy_host::Metadata;
use policy_host::request::{merge_patch, unwrap_review};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use capsule_bindings::admission::{Admission, Step, admit};
use capsule_bindings::binding::Binding;
use capsule_bindings::catalogue::Policy;
use capsule_bindings::convert::convert;
use capsule_bindings::error::{Error, Result};
use capsule_bindings::hosts::Hosts;
use capsule_bindings::tenant::parse_tenants;
use capsule_bindings::translate::Options;

/// kwctl processes run at a time.
const KWCTL_JOBS: usize = 2;

/// A scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScenarioFile {
    /// The Tenant manifest, relative to the scenario file.
    pub tenant: String,
    /// Conversion options.
    #[serde(default)]
    pub options: ScenarioOptions,
    /// What the conversion must give.
    pub expect: ConversionExpect,
    /// A YAML file of objects in the cluster for every request, relative to the scenario
    /// file (the one `make run` shows the requests with).
    #[serde(default)]
    pub cluster_file: Option<String>,
    /// Objects in the cluster for every request (the Namespaces with their labels first),
    /// after those of `clusterFile`.
    #[serde(default)]
    pub cluster: Vec<Value>,
    /// Requests and the verdicts of the bindings.
    #[serde(default)]
    pub requests: Vec<RequestCase>,
}

/// Conversion options of a scenario.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScenarioOptions {
    /// The tenant label (default `capsule.clastix.io/tenant`).
    #[serde(default)]
    pub tenant_label: Option<String>,
}

/// The expected conversion.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConversionExpect {
    /// Exactly the names of the bindings whose settings validated.
    pub bindings: Vec<String>,
    /// One substring per report, in order; exactly as many reports.
    #[serde(default)]
    pub reports: Vec<String>,
    /// Exact settings of some bindings.
    #[serde(default)]
    pub settings: BTreeMap<String, Value>,
    /// Bindings whose settings the policy must refuse, with a substring of its message; no
    /// other error is allowed.
    #[serde(default)]
    pub refused: BTreeMap<String, String>,
}

/// One request and the verdicts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestCase {
    /// What the case shows.
    pub name: String,
    /// The AdmissionRequest (or review), by path relative to the file or inline.
    pub request: RequestSpec,
    /// RFC 7386 merge patch applied to the request.
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// Objects added to the file's cluster for this request.
    #[serde(default)]
    pub cluster: Vec<Value>,
    /// The verdicts.
    pub expect: RequestExpect,
}

/// The verdicts of one request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestExpect {
    /// The API server's verdict (every binding that saw it allowed it).
    pub allowed: bool,
    /// Exactly the bindings that judged the request, each with the expectations of the
    /// policies' case files.
    #[serde(default)]
    pub policies: BTreeMap<String, Expect>,
}

/// Where kwctl is and where its inputs go.
#[derive(Debug, Clone)]
pub struct KwctlOptions {
    /// The kwctl binary.
    pub kwctl: PathBuf,
    /// Where annotated modules and inputs are written.
    pub work_dir: PathBuf,
    /// The policies' folders (metadata.yml and README.md for `kwctl annotate`).
    pub policies_dir: PathBuf,
}

/// The outcome of one scenario file.
#[derive(Debug, Clone, Default)]
pub struct FileReport {
    /// The file.
    pub file: PathBuf,
    /// Cases passed (the conversion counts as one, each request as one).
    pub passed: usize,
    /// Failed cases: name and failures.
    pub failures: Vec<(String, Vec<String>)>,
}

/// kwctl, ready to run annotated modules.
struct Kwctl<'a> {
    options: &'a KwctlOptions,
    /// The absolute work directory.
    work_dir: PathBuf,
    trust: PathBuf,
    /// Annotated module and metadata of each policy, made on first use.
    modules: BTreeMap<&'static str, (PathBuf, Metadata)>,
}

impl<'a> Kwctl<'a> {
    fn new(options: &'a KwctlOptions) -> Result<Self> {
        let (work_dir, trust) = prepare_work_dir(&options.work_dir)?;
        Ok(Kwctl {
            options,
            work_dir,
            trust,
            modules: BTreeMap::new(),
        })
    }

    /// Annotates `policy`'s module once.
    fn annotate(
        &mut self,
        policy: &'static Policy,
        wasm_dir: &Path,
    ) -> std::result::Result<(), String> {
        if self.modules.contains_key(policy.name) {
            return Ok(());
        }
        let dir = self.options.policies_dir.join(policy.name);
        let module = self
            .work_dir
            .join(format!("{}.annotated.wasm", policy.name));
        annotate(
            &self.options.kwctl,
            &wasm_dir.join(policy.wasm_file()),
            &dir.join("metadata.yml"),
            &dir.join("README.md"),
            &module,
        )?;
        let metadata = policy.metadata().map_err(|e| e.to_string())?;
        self.modules.insert(policy.name, (module, metadata));
        Ok(())
    }

    /// kwctl's disagreement with each step, if any, in the steps' order; the steps run
    /// [`KWCTL_JOBS`] at a time, after their modules are annotated.
    fn check(&mut self, admission: &Admission, case_dir: &Path, wasm_dir: &Path) -> Vec<String> {
        let mut failures = Vec::new();
        for step in &admission.steps {
            if let Err(e) = self.annotate(step.policy, wasm_dir) {
                failures.push(format!("{}: {e}", step.binding));
            }
        }
        let this = &*self;
        let steps: Vec<(usize, &Step)> = admission.steps.iter().enumerate().collect();
        let outcomes = in_parallel(&steps, KWCTL_JOBS, |&(i, step)| {
            // a module that could not be annotated is reported above
            let (module, metadata) = this.modules.get(step.policy.name)?;
            let dir = case_dir.join(format!("{i}-{}", step.binding));
            match this.run_step(step, module, metadata, &dir) {
                Ok(None) => None,
                Ok(Some(difference)) => Some(format!("{}: {difference}", step.binding)),
                Err(e) => Some(format!("{}: {e}", step.binding)),
            }
        });
        failures.extend(outcomes.into_iter().flatten().flatten());
        failures
    }

    /// kwctl's disagreement with one step, if any.
    fn run_step(
        &self,
        step: &Step,
        module: &Path,
        metadata: &Metadata,
        dir: &Path,
    ) -> std::result::Result<Option<String>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let write = |name: &str, text: String| -> std::result::Result<PathBuf, String> {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(path)
        };
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": step.request});
        let settings = write("settings.json", step.settings.to_string())?;
        let request = write("request.json", review.to_string())?;
        let session = write("session.yml", step.session.clone())?;
        let inputs = KwctlInputs {
            settings: &settings,
            request: &request,
            session: &session,
        };
        let theirs = kwctl_run(&self.options.kwctl, &self.trust, module, &inputs, metadata)?;
        Ok(disagreement(&theirs, &step.evaluation))
    }
}

/// The scenario files of `dirs` (each a file or a folder of `*.yaml`), sorted.
pub fn scenario_files(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in dirs {
        if dir.is_file() {
            files.push(dir.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::io(dir, e))?.path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Runs one scenario file: its conversion, then its requests (also through kwctl when given).
pub fn run_file(
    file: &Path,
    hosts: &mut Hosts,
    wasm_dir: &Path,
    kwctl: Option<&KwctlOptions>,
    filter: Option<&str>,
) -> FileReport {
    let mut report = FileReport {
        file: file.to_owned(),
        ..Default::default()
    };
    let conversion_case = "conversion".to_owned();
    let scenario = match load(file) {
        Ok(s) => s,
        Err(e) => {
            report.failures.push((conversion_case, vec![e.to_string()]));
            return report;
        }
    };
    let base = file.parent().unwrap_or(Path::new("."));
    let cluster = match cluster_objects(&scenario, base) {
        Ok(c) => c,
        Err(e) => {
            report.failures.push((conversion_case, vec![e.to_string()]));
            return report;
        }
    };
    let bindings = match convert_scenario(&scenario, base, hosts) {
        Ok(c) if c.failures.is_empty() => {
            report.passed += 1;
            c.bindings
        }
        Ok(c) => {
            report.failures.push((conversion_case, c.failures));
            c.bindings
        }
        Err(e) => {
            report.failures.push((conversion_case, vec![e.to_string()]));
            return report;
        }
    };
    let mut kwctl = match kwctl.map(Kwctl::new).transpose() {
        Ok(k) => k,
        Err(e) => {
            report.failures.push(("kwctl".into(), vec![e.to_string()]));
            return report;
        }
    };
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (n, case) in scenario.requests.iter().enumerate() {
        if filter.is_some_and(|f| !case.name.contains(f) && !stem.contains(f)) {
            continue;
        }
        let mut failures = Vec::new();
        match run_request(case, &cluster, base, &bindings, hosts) {
            Ok(admission) => {
                judge(case, &admission, &mut failures);
                if let Some(kwctl) = kwctl.as_mut() {
                    let case_dir = kwctl.work_dir.join(&stem).join(format!("request-{n:03}"));
                    failures.extend(kwctl.check(&admission, &case_dir, wasm_dir));
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
        if failures.is_empty() {
            report.passed += 1;
        } else {
            report.failures.push((case.name.clone(), failures));
        }
    }
    report
}

/// One request of a scenario, judged in testdrive.
#[derive(Debug, Clone)]
pub struct AdmittedRequest {
    /// The case.
    pub case: RequestCase,
    /// The AdmissionRequest (overrides applied).
    pub request: Value,
    /// The cluster's objects for it.
    pub objects: Vec<Value>,
    /// The bindings' answers in testdrive, with the reads each made.
    pub admission: Admission,
}

/// A scenario's bindings (as written by the conversion) and its requests judged in testdrive.
#[derive(Debug, Clone)]
pub struct AdmittedScenario {
    /// The Tenant manifest.
    pub tenant: PathBuf,
    /// The ClusterAdmissionPolicies of the conversion.
    pub manifests: Vec<Value>,
    /// What convert reported about the Tenant (`<field path>: <what changes>`).
    pub reports: Vec<String>,
    /// Whether convert refused the Tenant (wrote nothing).
    pub refused: bool,
    /// Every request, with testdrive's admission (a request that could not run is left out
    /// and reported by [`run_file`]).
    pub requests: Vec<AdmittedRequest>,
}

/// Converts a scenario's Tenant and judges each request in testdrive, for another host to
/// answer the same requests.
pub fn admit_scenario(file: &Path, hosts: &mut Hosts) -> Result<AdmittedScenario> {
    let scenario = load(file)?;
    let base = file.parent().unwrap_or(Path::new("."));
    let cluster = cluster_objects(&scenario, base)?;
    let converted = convert_scenario(&scenario, base, hosts)?;
    let mut requests = Vec::new();
    for case in &scenario.requests {
        let Ok(admission) = run_request(case, &cluster, base, &converted.bindings, hosts) else {
            continue;
        };
        let objects: Vec<Value> = cluster.iter().chain(&case.cluster).cloned().collect();
        let request = load_case_request(case, base)?;
        requests.push(AdmittedRequest {
            case: case.clone(),
            request,
            objects,
            admission,
        });
    }
    Ok(AdmittedScenario {
        tenant: base.join(&scenario.tenant),
        manifests: converted.manifests,
        reports: converted.reports,
        refused: converted.refused,
        requests,
    })
}

/// The AdmissionRequest of a case, overrides applied.
fn load_case_request(case: &RequestCase, base: &Path) -> Result<Value> {
    let mut request = match &case.request {
        RequestSpec::Path(rel) => policy_host::request::load_request(&base.join(rel))?,
        RequestSpec::Inline(map) => unwrap_review(Value::Object(Map::clone(map)), &case.name)?,
    };
    if let Some(patch) = &case.override_ {
        merge_patch(&mut request, patch);
    }
    Ok(request)
}

/// The objects of `clusterFile`, then those of `cluster`.
fn cluster_objects(scenario: &ScenarioFile, base: &Path) -> Result<Vec<Value>> {
    let mut objects = match &scenario.cluster_file {
        Some(rel) => ClusterObjects::from_file(&base.join(rel))?
            .objects()
            .to_vec(),
        None => Vec::new(),
    };
    objects.extend(scenario.cluster.iter().cloned());
    Ok(objects)
}

fn load(file: &Path) -> Result<ScenarioFile> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    serde_yaml::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", file.display())))
}

/// A scenario's Tenant converted.
struct Converted {
    /// The bindings, as testdrive runs them.
    bindings: Vec<Binding>,
    /// The ClusterAdmissionPolicies.
    manifests: Vec<Value>,
    /// How the conversion differs from the scenario's expectation.
    failures: Vec<String>,
    /// What convert reported (`<field path>: <what changes>`).
    reports: Vec<String>,
    /// Whether convert refused the Tenant (wrote nothing).
    refused: bool,
}

/// Converts the scenario's Tenant and compares the conversion with the expectation.
fn convert_scenario(scenario: &ScenarioFile, base: &Path, hosts: &mut Hosts) -> Result<Converted> {
    let path = base.join(&scenario.tenant);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let tenants = parse_tenants(&text, &path.display().to_string())?;
    let mut options = Options::default();
    if let Some(label) = &scenario.options.tenant_label {
        options.tenant_label = label.clone();
    }
    let conversion = convert(&tenants, &options, hosts)?;
    let expect = &scenario.expect;
    let mut failures = Vec::new();
    let name_of = |m: &Value| {
        m.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let names: BTreeSet<String> = conversion.bindings.iter().map(name_of).collect();
    let expected: BTreeSet<String> = expect.bindings.iter().cloned().collect();
    if names != expected {
        failures.push(format!("bindings: expected {expected:?}, got {names:?}"));
    }
    let reports: Vec<String> = conversion.reports.iter().map(ToString::to_string).collect();
    let matched = reports.len() == expect.reports.len()
        && reports
            .iter()
            .zip(&expect.reports)
            .all(|(r, fragment)| r.contains(fragment.as_str()));
    if !matched {
        failures.push(format!(
            "reports: expected {} containing {:?} in order, got {}:\n      {}",
            expect.reports.len(),
            expect.reports,
            reports.len(),
            reports.join("\n      ")
        ));
    }
    for (name, settings) in &expect.settings {
        let actual = conversion
            .bindings
            .iter()
            .find(|m| &name_of(m) == name)
            .and_then(|m| m.pointer("/spec/settings"));
        if actual != Some(settings) {
            failures.push(format!(
                "settings of {name}: expected {settings}, got {}",
                actual.map_or("no binding".to_owned(), Value::to_string)
            ));
        }
    }
    let errors: Vec<String> = conversion.errors.iter().map(ToString::to_string).collect();
    for (name, fragment) in &expect.refused {
        let found = errors
            .iter()
            .any(|e| e.contains(&format!("binding {name}:")) && e.contains(fragment.as_str()));
        if !found {
            failures.push(format!(
                "refused: expected {name} refused with {fragment:?}, errors: {errors:?}"
            ));
        }
    }
    let written = conversion.output()?.is_some();
    if written != expect.refused.is_empty() {
        failures.push(format!(
            "output: expected {}, got {}",
            if expect.refused.is_empty() {
                "the bindings written"
            } else {
                "nothing written"
            },
            if written {
                "the bindings written"
            } else {
                "nothing written"
            }
        ));
    }
    if errors.len() != expect.refused.len() {
        failures.push(format!(
            "errors: expected {}, got {}: {errors:?}",
            expect.refused.len(),
            errors.len()
        ));
    }
    let bindings = conversion
        .bindings
        .iter()
        .map(Binding::from_manifest)
        .collect::<Result<Vec<_>>>()?;
    Ok(Converted {
        bindings,
        manifests: conversion.bindings,
        failures,
        reports,
        refused: !written,
    })
}

fn run_request(
    case: &RequestCase,
    cluster: &[Value],
    base: &Path,
    bindings: &[Binding],
    hosts: &mut Hosts,
) -> Result<Admission> {
    let request = load_case_request(case, base)?;
    let objects = ClusterObjects::new(cluster.iter().chain(&case.cluster).cloned().collect())?;
    admit(bindings, &request, &objects, hosts)
}

/// Adds how `admission` differs from the case's expectations.
fn judge(case: &RequestCase, admission: &Admission, failures: &mut Vec<String>) {
    let seen: BTreeSet<&str> = admission.steps.iter().map(|s| s.binding.as_str()).collect();
    let expected: BTreeSet<&str> = case.expect.policies.keys().map(String::as_str).collect();
    if seen != expected {
        failures.push(format!(
            "bindings that judged the request: expected {expected:?}, got {seen:?}"
        ));
    }
    if admission.allowed() != case.expect.allowed {
        failures.push(format!(
            "allowed: expected {}, got {}",
            case.expect.allowed,
            admission.allowed()
        ));
    }
    for step in &admission.steps {
        if let Some(expect) = case.expect.policies.get(&step.binding) {
            let mut own = Vec::new();
            check_evaluation(expect, &step.evaluation, &mut own);
            failures.extend(own.into_iter().map(|f| format!("{}: {f}", step.binding)));
        }
    }
}
