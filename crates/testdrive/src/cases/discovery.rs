//! A policy directory: its case files, wasm file name and metadata.

use std::path::{Path, PathBuf};

use policy_host::error::{Error, Result};
use policy_host::metadata::Metadata;

/// The case files of a policy directory: `cases/*.yaml|yml` (sorted) and
/// `cases.yaml`. `None` when the policy has neither.
pub fn case_files(policy_dir: &Path) -> Result<Option<Vec<PathBuf>>> {
    let mut files = Vec::new();
    let mut found = false;
    let single = policy_dir.join("cases.yaml");
    if single.is_file() {
        found = true;
        files.push(single);
    }
    let dir = policy_dir.join("cases");
    if dir.is_dir() {
        found = true;
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut in_dir = Vec::new();
        for entry in entries {
            let p = entry.map_err(|e| Error::io(&dir, e))?.path();
            if p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                in_dir.push(p);
            }
        }
        in_dir.sort();
        files.extend(in_dir);
    }
    Ok(found.then_some(files))
}

/// The policy's name: its directory's name (the whole path if it has none).
pub fn policy_name(policy_dir: &Path) -> String {
    policy_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| policy_dir.display().to_string())
}

/// The wasm file name of a policy directory: the `[package] name` of its
/// `Cargo.toml` (else the directory name) with `-` replaced by `_`.
pub fn wasm_file_name(policy_dir: &Path) -> String {
    /// The part of a Cargo manifest that names the package.
    #[derive(serde::Deserialize)]
    struct Manifest {
        package: Package,
    }
    /// A Cargo manifest's `[package]` table.
    #[derive(serde::Deserialize)]
    struct Package {
        name: String,
    }
    let from_manifest = std::fs::read_to_string(policy_dir.join("Cargo.toml"))
        .ok()
        .and_then(|text| toml::from_str::<Manifest>(&text).ok())
        .map(|m| m.package.name);
    let name = from_manifest.unwrap_or_else(|| policy_name(policy_dir));
    format!("{}.wasm", name.replace('-', "_"))
}

/// `metadata.yml` (or `metadata.yaml`) of a policy directory, if present.
pub fn policy_metadata(policy_dir: &Path) -> Result<Option<Metadata>> {
    for name in ["metadata.yml", "metadata.yaml"] {
        let p = policy_dir.join(name);
        if p.is_file() {
            return Metadata::from_file(&p).map(Some);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::report::{CheckOptions, check_policy};
    use super::super::scratch_dir as tmp;

    #[test]
    fn discovers_files_and_wasm_names() {
        let d = tmp("discover");
        let policy = d.join("foo-policy");
        std::fs::create_dir_all(policy.join("cases")).unwrap();
        std::fs::write(policy.join("cases/b.yaml"), "cases: []\n").unwrap();
        std::fs::write(policy.join("cases/a.yml"), "cases: []\n").unwrap();
        std::fs::write(policy.join("cases/notes.md"), "").unwrap();
        let files = case_files(&policy).unwrap().unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.yml", "b.yaml"]);
        assert_eq!(wasm_file_name(&policy), "foo_policy.wasm");
        std::fs::write(
            policy.join("Cargo.toml"),
            "[package]\nname = \"bar-policy\"\n",
        )
        .unwrap();
        assert_eq!(wasm_file_name(&policy), "bar_policy.wasm");
        assert_eq!(case_files(&d).unwrap(), None);

        // a policy with cases but no wasm is an error
        let report = check_policy(
            &policy,
            &CheckOptions {
                wasm_dir: d.join("nowhere"),
                ..Default::default()
            },
        );
        assert!(report.error.is_none(), "no case at all: nothing to run");
        std::fs::write(
            policy.join("cases/a.yml"),
            "cases:\n- {name: x, request: {uid: x}, expect: {allowed: true}}\n",
        )
        .unwrap();
        let report = check_policy(
            &policy,
            &CheckOptions {
                wasm_dir: d.join("nowhere"),
                ..Default::default()
            },
        );
        assert!(report.error.as_deref().unwrap().contains("cannot read"));
        assert_eq!(report.failed(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
