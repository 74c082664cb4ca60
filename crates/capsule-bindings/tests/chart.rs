//! The Helm chart `charts/tenancy-policies/` is what `capsule-bindings chart` writes.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files under `dir`, by path relative to it.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.insert(path.strip_prefix(base).unwrap().to_owned());
            }
        }
    }
    let mut out = BTreeSet::new();
    if dir.is_dir() {
        walk(dir, dir, &mut out);
    }
    out
}

#[test]
fn the_chart_is_what_capsule_bindings_chart_writes() {
    let fresh = std::env::temp_dir().join(format!("tenancy-policies-chart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let status = Command::new(env!("CARGO_BIN_EXE_capsule-bindings"))
        .arg("chart")
        .arg("--output")
        .arg(&fresh)
        .status()
        .unwrap();
    assert!(status.success(), "capsule-bindings chart: {status}");
    let committed = root().join("charts/tenancy-policies");
    let written = files(&fresh);
    let present = files(&committed);
    let mut stale: Vec<String> = written
        .iter()
        .filter(|f| {
            std::fs::read_to_string(committed.join(f)).ok()
                != Some(std::fs::read_to_string(fresh.join(f)).unwrap())
        })
        .map(|f| f.display().to_string())
        .collect();
    stale.extend(
        present
            .difference(&written)
            .map(|f| format!("{} (not written by the command)", f.display())),
    );
    std::fs::remove_dir_all(&fresh).unwrap();
    assert!(
        stale.is_empty(),
        "charts/tenancy-policies drifted from `capsule-bindings chart` in {stale:?}: run `make chart` and commit"
    );
    assert!(written.contains(Path::new("templates/baseline.yaml")));
}

/// What the chart's library writes is what the command writes (and the same twice).
#[test]
fn the_chart_is_deterministic() {
    assert_eq!(
        capsule_bindings::chart::chart().unwrap(),
        capsule_bindings::chart::chart().unwrap()
    );
}
