//! The install path applied for real: `kubectl apply -k deploy/ --server-side`, then every
//! manifest the repository documents (README blocks, docs/, deploy/'s examples) and every
//! generated file (each test Tenant's conversion, `capsule-bindings install` with every
//! flag, kwctl scaffold output) applied with a server-side dry run, so that the API server's
//! own validation (the CRDs' structural schemas and CEL rules, names, RBAC objects) judges
//! them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::error::{Error, Result, read};

/// What was applied, and every refusal.
#[derive(Debug, Default)]
pub struct Applied {
    /// Objects applied (for real or dry run).
    pub objects: usize,
    /// Documented Kubewarden manifests applied.
    pub documented: usize,
    /// Generated files applied.
    pub generated_files: usize,
    /// `<origin>: <what the API server said>`.
    pub problems: Vec<String>,
}

/// Lines of `kubectl apply` output naming an object applied.
fn applied_lines(out: &str) -> usize {
    out.lines()
        .filter(|l| l.contains(" serverside-applied") || l.ends_with(" applied"))
        .count()
}

/// Creates every namespace `objects` are in (through the setup server), so that a dry run
/// of a namespaced object is judged on the object, not on its namespace.
pub fn ensure_namespaces<'a>(
    cluster: &Cluster,
    objects: impl IntoIterator<Item = &'a Value>,
) -> Result<()> {
    let names: BTreeSet<&str> = objects
        .into_iter()
        .filter_map(|o| o.pointer("/metadata/namespace").and_then(Value::as_str))
        .collect();
    let namespaces: Vec<Value> = names
        .into_iter()
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
        .collect();
    if !namespaces.is_empty() {
        cluster.setup.apply(&namespaces, "control-plane")?;
    }
    Ok(())
}

/// `kubectl apply -k deploy --server-side` (its namespace created first).
pub fn deploy(cluster: &Cluster, deploy: &Path, applied: &mut Applied) -> Result<()> {
    let rendered = cluster
        .admin
        .run(&["kustomize", &deploy.display().to_string()], None)?;
    let objects = policy_host::cluster::yaml_objects(&rendered, "kubectl kustomize deploy")?;
    ensure_namespaces(cluster, &objects)?;
    let out = cluster.admin.run(
        &[
            "apply",
            "-k",
            &deploy.display().to_string(),
            "--server-side",
        ],
        None,
    )?;
    let n = applied_lines(&out);
    if n != objects.len() {
        applied.problems.push(format!(
            "kubectl apply -k {}: {n} objects applied of {}:\n{out}",
            deploy.display(),
            objects.len()
        ));
    }
    applied.objects += n;
    Ok(())
}

fn dry_run(cluster: &Cluster, text: &str) -> Result<std::result::Result<usize, String>> {
    let answer = cluster.admin.answer(
        &[
            "apply",
            "--dry-run=server",
            "--server-side",
            "--force-conflicts",
            "--field-manager=docs",
            "-f",
            "-",
        ],
        Some(text),
    )?;
    Ok(if answer.ok {
        Ok(applied_lines(&answer.stdout))
    } else {
        Err(answer.stderr.trim().to_owned())
    })
}

/// Every documented Kubewarden manifest, one by one, and every generated YAML file, whole,
/// through a server-side dry run.
pub fn manifests(
    cluster: &Cluster,
    root: &Path,
    generated: &[PathBuf],
    applied: &mut Applied,
) -> Result<()> {
    let written = testdrive::manifests::written(root, &[])?;
    let docs: Vec<(String, Value)> = written
        .into_iter()
        .flat_map(|(found, _)| found)
        .filter_map(|w| match w.value {
            Ok(v) => Some((w.origin, v)),
            Err(e) => {
                applied.problems.push(format!("{}: {e}", w.origin));
                None
            }
        })
        .collect();
    ensure_namespaces(cluster, docs.iter().map(|(_, v)| v))?;
    for (origin, value) in &docs {
        match dry_run(cluster, &value.to_string())? {
            Ok(n) => {
                applied.documented += 1;
                applied.objects += n;
            }
            Err(e) => applied.problems.push(format!("{origin}: {e}")),
        }
    }
    for file in generated_files(generated)? {
        let text = read(&file)?;
        let objects = policy_host::cluster::yaml_objects(&text, &file.display().to_string())?;
        ensure_namespaces(cluster, &objects)?;
        match dry_run(cluster, &text)? {
            Ok(n) if n == objects.len() => {
                applied.generated_files += 1;
                applied.objects += n;
            }
            Ok(n) => applied.problems.push(format!(
                "{}: {n} objects applied of {}",
                file.display(),
                objects.len()
            )),
            Err(e) => applied.problems.push(format!("{}: {e}", file.display())),
        }
    }
    Ok(())
}

/// The YAML files of `paths` (files, or directories searched recursively), sorted.
fn generated_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            for entry in std::fs::read_dir(&p).map_err(|e| Error::io(&p, e))? {
                stack.push(entry.map_err(|e| Error::io(&p, e))?.path());
            }
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml")
            // kustomize's input, not an object: the files it lists are applied themselves
            && p.file_name().is_none_or(|n| n != "kustomization.yaml")
        {
            out.push(p);
        } else if !p.exists() {
            return Err(Error::Invalid(format!(
                "{}: no such file or directory",
                p.display()
            )));
        }
    }
    out.sort();
    Ok(out)
}
