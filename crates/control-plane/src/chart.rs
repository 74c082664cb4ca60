//! The chart `charts/tenancy-policies` against `capsule-bindings install`, its one source of
//! truth: `helm lint --strict` for every set of values, `helm template` for each compared
//! object for object with install's output for the same options, then `helm install` into
//! the API server in place of deploy/, whose live objects must be deploy/'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::cluster::Cluster;
use crate::cluster::process::run;
use crate::error::{Result, write};
use crate::verdict::contains;
use capsule_bindings::chart::value_sets;
use capsule_bindings::install::install;

/// What the chart checks found.
#[derive(Debug, Default)]
pub struct ChartReport {
    /// Objects compared with install's, over every set of values.
    pub compared: usize,
    /// Value sets rendered.
    pub sets: usize,
    /// Objects helm installed.
    pub installed: usize,
    /// Every difference.
    pub problems: Vec<String>,
}

/// `kind/namespace/name` of an object.
fn identity(o: &Value) -> String {
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}/{}",
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name")
    )
}

fn by_identity(objects: Vec<Value>) -> BTreeMap<String, Value> {
    objects.into_iter().map(|o| (identity(&o), o)).collect()
}

/// The label helm sets on every object it installs (`Helm`), which deploy/ sets to
/// `capsule-bindings`.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// The release's namespace (install's ServiceAccount namespace).
const NAMESPACE: &str = "kubewarden";

/// Every check of the chart in `chart` (see the module docs).
pub fn check(
    cluster: &Cluster,
    helm_bin: &Path,
    chart: &Path,
    deploy: &Path,
) -> Result<ChartReport> {
    let mut report = ChartReport::default();
    let chart_arg = chart.display().to_string();
    for set in value_sets() {
        let values = cluster.dir.join(format!("values-{}.json", set.name));
        write(&values, serde_json::to_string_pretty(&set.values)?)?;
        let values_arg = values.display().to_string();
        if let Err(e) = run(
            helm_bin,
            &["lint", "--strict", &chart_arg, "-f", &values_arg],
        ) {
            report
                .problems
                .push(format!("helm lint ({} values): {e}", set.name));
        }
        let rendered = run(
            helm_bin,
            &[
                "template",
                "tenancy",
                &chart_arg,
                "--namespace",
                NAMESPACE,
                "-f",
                &values_arg,
            ],
        )?;
        let rendered = by_identity(policy_host::cluster::yaml_objects(
            &rendered,
            "helm template",
        )?);
        let expected = by_identity(
            install(&set.options)?
                .into_iter()
                .filter(|f| f.name != "kustomization.yaml")
                .flat_map(|f| f.manifests)
                .collect(),
        );
        report.sets += 1;
        for (id, want) in &expected {
            match rendered.get(id) {
                Some(got) if got == want => report.compared += 1,
                Some(got) => report.problems.push(format!(
                    "helm template ({} values): {id} differs from capsule-bindings install's:\n  chart:   {got}\n  install: {want}",
                    set.name
                )),
                None => report.problems.push(format!(
                    "helm template ({} values): no {id}, which capsule-bindings install writes",
                    set.name
                )),
            }
        }
        for id in rendered.keys().filter(|id| !expected.contains_key(*id)) {
            report.problems.push(format!(
                "helm template ({} values): {id}, which capsule-bindings install does not write",
                set.name
            ));
        }
    }
    install_in_place(cluster, helm_bin, &chart_arg, deploy, &mut report)?;
    Ok(report)
}

/// Removes deploy/'s objects, installs the chart with its default values, and compares the
/// live objects with deploy/'s.
fn install_in_place(
    cluster: &Cluster,
    helm_bin: &Path,
    chart: &str,
    deploy: &Path,
    report: &mut ChartReport,
) -> Result<()> {
    let deploy_arg = deploy.display().to_string();
    let rendered = cluster.admin.run(&["kustomize", &deploy_arg], None)?;
    let objects = policy_host::cluster::yaml_objects(&rendered, "kubectl kustomize deploy")?;
    cluster
        .admin
        .run(&["delete", "-k", &deploy_arg, "--wait=true"], None)?;
    let kubeconfig = cluster.admin.kubeconfig.display().to_string();
    run(
        helm_bin,
        &[
            "install",
            "tenancy",
            chart,
            "--namespace",
            NAMESPACE,
            "--kubeconfig",
            &kubeconfig,
            "--wait=false",
        ],
    )?;
    for object in &objects {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let resource = crate::state::resource(api_version, kind);
        let mut args = vec![resource.as_str(), name];
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let ns_arg;
        if let Some(ns) = namespace {
            ns_arg = format!("--namespace={ns}");
            args.push(&ns_arg);
        }
        // helm labels what it installs as its own, in place of the chart's label
        let mut want = object.clone();
        if let Some(labels) = want
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.insert(MANAGED_BY.into(), Value::String("Helm".into()));
        }
        match cluster.admin.get(&args) {
            Ok(live) if contains(&live, &want) => report.installed += 1,
            Ok(live) => report.problems.push(format!(
                "helm install: {} differs from deploy/'s:\n  live:    {live}\n  deploy/: {object}",
                identity(object)
            )),
            Err(e) => report
                .problems
                .push(format!("helm install: {}: {e}", identity(object))),
        }
    }
    Ok(())
}
