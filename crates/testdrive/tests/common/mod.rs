//! What the integration tests share: where the workspace is, and the built module a test
//! loads or a note that the test is skipped.

// each test binary uses part of it
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The workspace's root directory.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The built wasm of `policy` (`priority-class-policy`) under `target/wasm32-wasip1/release`,
/// whether it exists or not.
pub fn wasm(policy: &str) -> PathBuf {
    root()
        .join("target/wasm32-wasip1/release")
        .join(format!("{}.wasm", policy.replace('-', "_")))
}

/// The built wasm of `policy`, or `None` with a note on stderr when it is missing, for a
/// test that skips then: `make test` builds the modules before the tests.
pub fn built_module(policy: &str) -> Option<PathBuf> {
    let path = wasm(policy);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("skipped: {} is missing (make policies)", path.display());
        None
    }
}
