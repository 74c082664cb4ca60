//! `testdrive seeds`: every declarative case of a policy as fuzzing seeds for the
//! `cargo fuzz` targets (`fuzz/`): the `validate` payload the case sends (settings, request
//! and overrides resolved, as the host builds it) and its settings document.
//!
//! Files are `<out>/<policy>/validate/<hash>.json` and `<out>/<policy>/settings/<hash>.json`,
//! named by a hash of their content, so identical seeds are written once and re-running
//! rewrites the same files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cases::{case_files, load_case_file};
use policy_host::error::{Error, Result};
use policy_host::request::{canonical, validate_payload};

/// What [`write_seeds`] wrote for one policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedCount {
    /// The policy directory name.
    pub policy: String,
    /// Distinct `validate` payloads written.
    pub payloads: usize,
    /// Distinct settings documents written.
    pub settings: usize,
    /// Cases that could not be resolved (missing file, contradictory case), not written.
    pub skipped: usize,
}

/// 64-bit FNV-1a of `bytes`, as 16 hex digits (a stable content name, not a security hash).
fn content_name(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}.json")
}

/// Writes `doc` into `dir` under its content name; whether the file is new in this run.
fn write_doc(
    dir: &Path,
    doc: &Value,
    seen: &mut std::collections::BTreeSet<String>,
) -> Result<bool> {
    let bytes = doc.to_string().into_bytes();
    let name = content_name(&bytes);
    if !seen.insert(name.clone()) {
        return Ok(false);
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| Error::io(path, e))?;
    Ok(true)
}

/// Writes the seeds of every case of `policy_dir` below `out/<policy>/`. A policy without
/// cases gets none; a case file that does not parse is an error.
pub fn write_seeds(policy_dir: &Path, out: &Path) -> Result<SeedCount> {
    let policy = policy_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            Error::Invalid(format!("{}: not a policy directory", policy_dir.display()))
        })?;
    let mut count = SeedCount {
        policy: policy.clone(),
        ..SeedCount::default()
    };
    let base: PathBuf = out.join(&policy);
    let (validate_dir, settings_dir) = (base.join("validate"), base.join("settings"));
    let (mut seen_payloads, mut seen_settings) = Default::default();
    for file in case_files(policy_dir)?.unwrap_or_default() {
        for case in load_case_file(&file)? {
            let Ok(scenario) = case.scenario else {
                count.skipped += 1;
                continue;
            };
            if write_doc(
                &settings_dir,
                &canonical(&scenario.settings),
                &mut seen_settings,
            )? {
                count.settings += 1;
            }
            if let Some(request) = &scenario.request {
                let payload = validate_payload(request, &scenario.settings);
                if write_doc(&validate_dir, &payload, &mut seen_payloads)? {
                    count.payloads += 1;
                }
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_seed_per_distinct_payload_and_settings() {
        let d = std::env::temp_dir().join(format!("testdrive-seeds-{}", std::process::id()));
        let policy = d.join("demo-policy");
        std::fs::create_dir_all(policy.join("cases")).unwrap();
        std::fs::write(
            policy.join("cases/a.yaml"),
            r#"
defaults:
  settings: {b: 1, a: 2}
  request: {uid: x, operation: CREATE, object: {kind: Pod}}
cases:
- {name: one, expect: {allowed: true}}
- {name: same payload, expect: {allowed: false}}
- {name: other user, override: {userInfo: {username: bob}}, expect: {allowed: true}}
- {name: invalid settings, settings: {a: 3}, expect: {settingsValid: false}}
- {name: unresolvable, request: missing.json, expect: {allowed: true}}
"#,
        )
        .unwrap();
        let out = d.join("out");
        let count = write_seeds(&policy, &out).unwrap();
        assert_eq!(
            count,
            SeedCount {
                policy: "demo-policy".into(),
                payloads: 3,
                settings: 2,
                skipped: 1
            }
        );
        let read_dir = |sub: &str| -> Vec<Value> {
            let mut docs: Vec<Value> = std::fs::read_dir(out.join("demo-policy").join(sub))
                .unwrap()
                .map(|e| {
                    serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap()
                })
                .collect();
            docs.sort_by_key(|d| d.to_string());
            docs
        };
        let payloads = read_dir("validate");
        assert_eq!(payloads.len(), 3);
        let with = |settings: Value, user: Option<&str>| {
            payloads
                .iter()
                .filter(|p| {
                    p["settings"] == settings
                        && p["request"]["operation"] == "CREATE"
                        && p["request"]["userInfo"]["username"].as_str() == user
                })
                .count()
        };
        let defaults = serde_json::json!({"a": 2, "b": 1});
        assert_eq!(with(defaults.clone(), None), 1);
        assert_eq!(with(defaults, Some("bob")), 1, "overrides are applied");
        assert_eq!(with(serde_json::json!({"a": 3}), None), 1);
        assert_eq!(read_dir("settings").len(), 2);
        // Re-running rewrites the same files.
        write_seeds(&policy, &out).unwrap();
        assert_eq!(read_dir("validate").len(), 3);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
