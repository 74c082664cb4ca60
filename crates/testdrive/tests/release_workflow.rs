//! The release path as written: the workflows pin their actions by commit and keep the
//! signing job apart from the test suite; the release steps they call
//! (`.github/scripts/release.sh`) refuse a placeholder identity, a tag that is not the
//! metadata's version, and a `kwctl push` output without an immutable reference.

// A test file: its helpers index, unwrap and panic like the tests they serve.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn workflow(name: &str) -> Value {
    let path = root().join(".github/workflows").join(name);
    let text = std::fs::read_to_string(&path).expect("workflow readable");
    serde_yaml::from_str(&text).expect("workflow is YAML")
}

fn script(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join(".github/scripts/release.sh"))
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("bash runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every step of every job of a workflow.
fn steps(wf: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for (job, body) in wf["jobs"].as_object().expect("jobs") {
        for step in body["steps"].as_array().expect("steps") {
            out.push((job.clone(), step));
        }
    }
    out
}

#[test]
fn every_action_is_pinned_by_commit() {
    for name in ["release.yml", "test.yml"] {
        for (job, step) in steps(&workflow(name)) {
            if let Some(uses) = step["uses"].as_str() {
                let pinned = uses.rsplit_once('@').is_some_and(|(_, r)| {
                    r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit())
                });
                assert!(pinned, "{name} job {job}: {uses} is not pinned by commit");
            }
        }
    }
}

#[test]
fn the_job_that_signs_runs_no_tests_and_the_tested_job_cannot_sign() {
    let wf = workflow("release.yml");
    assert!(
        wf["permissions"].as_object().is_some_and(|p| p.is_empty()),
        "no default permissions"
    );
    let mut signing_jobs = 0;
    for (job, body) in wf["jobs"].as_object().expect("jobs") {
        let perms = &body["permissions"];
        let signs = perms["id-token"] == "write" || perms["packages"] == "write";
        let runs = |needle: &str| {
            body["steps"]
                .as_array()
                .expect("steps")
                .iter()
                .any(|s| s["run"].as_str().is_some_and(|r| r.contains(needle)))
        };
        if signs {
            signing_jobs += 1;
            assert!(
                !runs("make test") && !runs("cargo"),
                "job {job} signs and builds or tests"
            );
            assert!(
                runs("release.sh push"),
                "job {job} signs but does not push through release.sh"
            );
        }
        if runs("make test") {
            assert!(!signs, "job {job} runs the tests with signing permissions");
        }
    }
    assert_eq!(signing_jobs, 1);
}

#[test]
fn the_workflow_runs_the_release_script_and_serialises_the_artifacthub_branch() {
    let wf = workflow("release.yml");
    let runs: Vec<String> = steps(&wf)
        .iter()
        .filter_map(|(_, s)| s["run"].as_str().map(str::to_owned))
        .collect();
    for needle in [
        "release.sh tag",
        "release.sh identity --release",
        "release.sh push",
        "release.sh artifacthub ",
        "release.sh artifacthub-push",
        "install-kwctl.sh",
    ] {
        assert!(
            runs.iter().any(|r| r.contains(needle)),
            "release.yml never runs {needle}"
        );
    }
    assert!(
        !runs.iter().any(|r| r.contains(".digest")),
        "kwctl push prints no digest field"
    );
    let ah = &wf["jobs"]["artifacthub"];
    assert_eq!(ah["concurrency"]["group"], "artifacthub-branch");
    assert_eq!(ah["concurrency"]["cancel-in-progress"], false);
    // make publish-local runs testdrive publish-local, whose release steps are that script's
    let makefile = std::fs::read_to_string(root().join("Makefile")).expect("Makefile");
    assert!(makefile.contains("$(TESTDRIVE) publish-local"));
    let cli = std::fs::read_to_string(root().join("crates/testdrive/src/bin/testdrive/cli.rs"))
        .expect("cli.rs");
    assert!(cli.contains("default_value = \".github/scripts/release.sh\""));
    let release = std::fs::read_to_string(root().join("crates/testdrive/src/publish/release.rs"))
        .expect("release.rs");
    for subcommand in ["\"push\"", "\"artifacthub\"", "\"artifacthub-push\""] {
        assert!(
            release.contains(subcommand),
            "publish-local never runs release.sh {subcommand}"
        );
    }
}

#[test]
fn a_release_refuses_the_placeholder_identity_and_names_its_file() {
    let dir = tempdir("identity");
    let placeholder = dir.join("placeholder.env");
    std::fs::write(
        &placeholder,
        "REGISTRY=ghcr.io/o/r\nSOURCE_REPOSITORY=https://github.com/o/r\nAUTHOR_NAME=T\n\
         AUTHOR_EMAIL=t@x.invalid\nARTIFACTHUB_REPOSITORY_ID=00000000-0000-0000-0000-000000000000\n",
    )
    .expect("write");
    let out = script(
        &["identity", "--release"],
        &[("PUBLISHING_ENV", &placeholder)],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{} refuses a release", placeholder.display())),
        "{err}"
    );
    assert!(
        err.contains("AUTHOR_EMAIL t@x.invalid is a placeholder"),
        "{err}"
    );
    assert!(
        err.contains("ARTIFACTHUB_REPOSITORY_ID is the zero placeholder"),
        "{err}"
    );
    // outside a release the placeholders are fine (make publish-local, pull requests)
    assert!(
        script(&["identity"], &[("PUBLISHING_ENV", &placeholder)])
            .status
            .success()
    );
    let real = dir.join("real.env");
    std::fs::write(
        &real,
        "REGISTRY=ghcr.io/o/r\nSOURCE_REPOSITORY=https://github.com/o/r\nAUTHOR_NAME=T\n\
         AUTHOR_EMAIL=t@example.org\nARTIFACTHUB_REPOSITORY_ID=6f1c8a53-2a1e-4b9e-9d3c-0e3f4a5b6c7d\n",
    )
    .expect("write");
    let out = script(&["identity", "--release"], &[("PUBLISHING_ENV", &real)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("REGISTRY=ghcr.io/o/r\n"));
}

#[test]
fn the_tag_must_be_the_metadata_version() {
    let ok = script(&["tag", "priority-class-policy/v0.1.0"], &[]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert_eq!(
        text(&ok.stdout),
        "policy=priority-class-policy\nversion=0.1.0\nwasm=priority_class_policy.wasm\n"
    );
    let newer = script(&["tag", "priority-class-policy/v0.2.0"], &[]);
    assert!(!newer.status.success());
    assert!(
        text(&newer.stderr).contains("io.kubewarden.policy.version is '0.1.0', the tag says 0.2.0")
    );
    assert!(
        !script(&["tag", "no-such-policy/v0.1.0"], &[])
            .status
            .success()
    );
    assert!(
        !script(&["tag", "priority-class-policy/0.1.0"], &[])
            .status
            .success()
    );
}

#[test]
fn push_reads_the_immutable_ref_from_kwctl_json_and_nothing_else() {
    let dir = tempdir("push");
    let fake = |name: &str, json: &str| -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{json}'\n")).expect("write");
        Command::new("chmod")
            .arg("+x")
            .arg(&path)
            .status()
            .expect("chmod");
        path
    };
    let digest = "a".repeat(64);
    let good = fake(
        "good",
        &format!("{{\"immutable_ref\":\"r.example/p/x-policy@sha256:{digest}\"}}"),
    );
    let out = script(
        &["push", "m.wasm", "registry://r.example/p/x-policy:v1.0.0"],
        &[("KWCTL", &good)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("r.example/p/x-policy@sha256:{digest}\n")
    );
    // the field release.yml used to read
    let old = fake("old", &format!("{{\"digest\":\"sha256:{digest}\"}}"));
    let out = script(
        &["push", "m.wasm", "registry://r.example/p/x-policy:v1.0.0"],
        &[("KWCTL", &old)],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("printed no immutable_ref"));
    // a reference to another repository is not what was pushed
    let other = fake(
        "other",
        &format!("{{\"immutable_ref\":\"r.example/p/y-policy@sha256:{digest}\"}}"),
    );
    let out = script(
        &["push", "m.wasm", "registry://r.example/p/x-policy:v1.0.0"],
        &[("KWCTL", &other)],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("not r.example/p/x-policy@sha256:<digest>"));
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("release-workflow-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tempdir");
    dir
}
