//! The Kubernetes objects of an install: every YAML document of the files given, or of the
//! `.yaml`/`.yml`/`.json` files directly in the directories given (sub-directories such as
//! `examples/` are not read).

use std::path::{Path, PathBuf};

use serde_json::Value;

use policy_host::cluster::yaml_objects;
use policy_host::error::{Error, Result, read_text};

/// The files a path stands for: itself, or the manifest files directly in it, by name.
fn manifest_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::io(path, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every object of `paths` (files, or directories read one level deep), `kind: List` items
/// included, in file order.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("testdrive-manifests-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("examples")).unwrap();
/// std::fs::write(dir.join("a.yaml"), "kind: A\n---\nkind: List\nitems: [{kind: B}]\n").unwrap();
/// std::fs::write(dir.join("examples/c.yaml"), "kind: C\n").unwrap();
/// let objects = testdrive::kube::controller::read_objects(&[dir.clone()]).unwrap();
/// assert_eq!(objects.len(), 2);
/// # std::fs::remove_dir_all(dir).unwrap();
/// ```
pub fn read_objects(paths: &[PathBuf]) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    for path in paths {
        for file in manifest_files(path)? {
            let text = read_text(&file)?;
            let found = yaml_objects(&text, &file.display().to_string())?;
            // kustomization.yaml and other documents without a kind are not objects
            objects.extend(found.into_iter().filter(|o| o.get("kind").is_some()));
        }
    }
    Ok(objects)
}

/// The objects of `kind` among `objects`.
pub fn of_kind<'a>(objects: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> {
    objects
        .iter()
        .filter(move |o| o.get("kind").and_then(Value::as_str) == Some(kind))
}
