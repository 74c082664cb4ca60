//! Commands on one module: `run`, `record`, `annotate`, and what they share.

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use policy_host::error::{Error, Result};
use policy_host::request::load_request;
use policy_host::{
    ClusterObjects, Host, Metadata, NoCluster, Recorder, ReplaySession, SharedCallbacks, shared,
};
use testdrive::cases::{ClusterState, load_case_file};

use crate::cli::{AnnotateArgs, RecordArgs, RunArgs, SettingsArgs};

pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

pub(crate) fn load_settings(args: &SettingsArgs) -> Result<Value> {
    if let Some(json) = &args.settings_json {
        return serde_json::from_str(json).map_err(|e| Error::parse("--settings-json", e));
    }
    if let Some(path) = &args.settings_path {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let v: Option<Value> =
            serde_yaml::from_str(&text).map_err(|e| Error::parse(path.display(), e))?;
        return Ok(v.unwrap_or_else(|| Value::Object(Default::default())));
    }
    Ok(Value::Object(Default::default()))
}

pub(crate) fn load_host(module: &Path, metadata: Option<&Path>) -> Result<Host> {
    let wasm = read(module)?;
    let metadata = match metadata {
        Some(p) => Some(Metadata::from_file(p)?),
        None => {
            // like `check`: a metadata.yml next to the module, if any
            let sibling = module.with_file_name("metadata.yml");
            if sibling.is_file() {
                Some(Metadata::from_file(&sibling)?)
            } else {
                None
            }
        }
    };
    let given = metadata.is_some();
    let host = Host::load(&wasm, metadata)?;
    if host.is_annotated() && given {
        eprintln!("testdrive: note: the module is annotated; its embedded metadata is used");
    }
    if host.metadata().is_none() {
        eprintln!(
            "testdrive: note: no metadata (module not annotated, no --metadata): \
             Kubernetes reads are refused, mutations allowed"
        );
    }
    Ok(host)
}

pub(crate) fn ensure_valid_settings(host: &Host, settings: &Value) -> Result<()> {
    let v = host.validate_settings(settings)?;
    if v.valid {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "Provided settings are not valid: {}",
            v.message.unwrap_or_default()
        )))
    }
}

pub(crate) fn print_evaluation(eval: &policy_host::Evaluation, problems: &[String]) -> Result<()> {
    let text =
        serde_json::to_string_pretty(&eval.response).map_err(|e| Error::Invalid(e.to_string()))?;
    println!("{text}");
    if let Some(patch) = &eval.patch {
        let pretty =
            serde_json::to_string_pretty(patch).map_err(|e| Error::Invalid(e.to_string()))?;
        eprintln!("testdrive: decoded patch:\n{pretty}");
    }
    for e in &eval.host_call_errors {
        eprintln!("testdrive: host-call error returned to the policy: {e}");
    }
    for p in problems {
        eprintln!("testdrive: warning: {p}");
    }
    Ok(())
}

pub(crate) fn callback_report(callbacks: &SharedCallbacks) -> Vec<String> {
    match callbacks.lock() {
        Ok(cb) => cb.problems().into_iter().chain(cb.unused()).collect(),
        Err(_) => vec!["callbacks lock poisoned".to_owned()],
    }
}

pub(crate) fn run(a: RunArgs) -> Result<ExitCode> {
    let mut host = load_host(&a.module, a.metadata.as_deref())?;
    host.set_verbose(a.verbose);
    let settings = load_settings(&a.settings)?;
    let request = load_request(&a.request_path)?;
    let callbacks: SharedCallbacks = match (&a.replay_host_capabilities_interactions, &a.cluster) {
        (Some(p), _) => shared(ReplaySession::from_file(p)?),
        (None, Some(p)) => shared(ClusterObjects::from_file(p)?),
        (None, None) => shared(NoCluster::default()),
    };
    ensure_valid_settings(&host, &settings)?;
    let eval = host.validate(&request, &settings, callbacks.clone())?;
    print_evaluation(&eval, &callback_report(&callbacks))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn annotate(a: AnnotateArgs) -> Result<ExitCode> {
    let wasm = read(&a.module)?;
    let metadata = Metadata::from_file(&a.metadata)?;
    let usage = match &a.usage {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?),
        None => None,
    };
    let host = Host::load(&wasm, None)?;
    let version = host.protocol_version()?;
    let annotated = policy_host::metadata::annotate(&wasm, metadata, &version, usage.as_deref())?;
    // the result must still compile and expose its metadata
    let check = Host::load(&annotated, None)?;
    if !check.is_annotated() {
        return Err(Error::Invalid("annotated module lost its metadata".into()));
    }
    std::fs::write(&a.output, &annotated).map_err(|e| Error::io(&a.output, e))?;
    eprintln!(
        "testdrive: wrote {} ({} bytes, protocol {version})",
        a.output.display(),
        annotated.len()
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn record(a: RecordArgs) -> Result<ExitCode> {
    let host = load_host(&a.module, a.metadata.as_deref())?;
    let (settings, request, objects) = match (&a.case, &a.name) {
        (Some(file), Some(name)) => {
            let case = load_case_file(file)?
                .into_iter()
                .find(|c| &c.name == name)
                .ok_or_else(|| {
                    Error::Invalid(format!("no case named `{name}` in {}", file.display()))
                })?;
            let s = case.scenario.map_err(Error::Invalid)?;
            let ClusterState::Objects(objects) = s.cluster else {
                return Err(Error::Invalid(format!(
                    "case `{name}` has no `cluster:` objects"
                )));
            };
            let request = s
                .request
                .ok_or_else(|| Error::Invalid(format!("case `{name}` has no request")))?;
            (s.settings, request, objects)
        }
        _ => {
            let (Some(req), Some(cluster)) = (&a.request_path, &a.cluster) else {
                return Err(Error::Invalid(
                    "give --request-path and --cluster, or --case and --name".into(),
                ));
            };
            (
                load_settings(&a.settings)?,
                load_request(req)?,
                ClusterObjects::from_file(cluster)?,
            )
        }
    };
    ensure_valid_settings(&host, &settings)?;
    let recorder = shared(Recorder::new(objects));
    let eval = host.validate(&request, &settings, recorder.clone())?;
    print_evaluation(&eval, &[])?;
    let yaml = recorder
        .lock()
        .map_err(|_| Error::Invalid("recorder lock poisoned".into()))?
        .session_yaml()?;
    std::fs::write(&a.out, yaml).map_err(|e| Error::io(&a.out, e))?;
    eprintln!("testdrive: session written to {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
