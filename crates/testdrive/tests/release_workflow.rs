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

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::root;
use serde_json::Value;

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
    let release =
        std::fs::read_to_string(root().join("crates/testdrive/src/release/publish/release.rs"))
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

/// A test's scratch directory under the system's temporary directory, removed when the
/// test ends, whether it passed or not.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("release-workflow-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tempdir");
    Scratch(dir)
}

/// A fake kwctl release: the zip (a script printing its version, and a bundle) under a
/// `github.com/<repo>/releases/download/<version>/` tree, GitHub's release record of its
/// digest, a pin file and a cosign that logs its arguments and answers `cosign_ok`.
struct FakeRelease {
    dir: Scratch,
    digest: String,
}

impl FakeRelease {
    fn new(name: &str) -> FakeRelease {
        let dir = tempdir(name);
        let assets = dir.join("github.com/kubewarden/adm-controller/releases/download/v9.9.9");
        std::fs::create_dir_all(&assets).unwrap();
        let zip = assets.join("kwctl-linux-x86_64.zip");
        let made = Command::new("python3")
            .args(["-c", "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'w')\nz.writestr(zipfile.ZipInfo('kwctl-linux-x86_64'), '#!/bin/sh\\necho kwctl 9.9.9\\n')\nz.writestr('kwctl-linux-x86_64.bundle.sigstore', '{}')\nz.close()"])
            .arg(&zip)
            .status()
            .unwrap();
        assert!(made.success());
        let sum = Command::new("sha256sum").arg(&zip).output().unwrap();
        let digest = text(&sum.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned();
        FakeRelease { dir, digest }
    }

    /// Runs install-kwctl.sh with `pin` as KWCTL_SHA256 and `recorded` as GitHub's digest.
    fn install(&self, pin: &str, recorded: &str, cosign_ok: bool) -> (Output, PathBuf) {
        let tools = self.dir.join("tools.env");
        std::fs::write(
            &tools,
            format!(
                "KWCTL_VERSION=v9.9.9\nKWCTL_RELEASES=file://{}/github.com/kubewarden/adm-controller/releases/download\nKWCTL_SHA256={pin}\n",
                self.dir.display()
            ),
        )
        .unwrap();
        let tags = self
            .dir
            .join("api/repos/kubewarden/adm-controller/releases/tags");
        std::fs::create_dir_all(&tags).unwrap();
        std::fs::write(
            tags.join("v9.9.9"),
            format!("{{\"assets\": [{{\"name\": \"kwctl-linux-x86_64.zip\", \"digest\": \"{recorded}\"}}]}}"),
        )
        .unwrap();
        let cosign = self.dir.join("cosign");
        std::fs::write(
            &cosign,
            format!(
                "#!/bin/sh\necho \"$@\" > {}/cosign.args\nexit {}\n",
                self.dir.display(),
                if cosign_ok { 0 } else { 1 }
            ),
        )
        .unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(&cosign)
            .status()
            .unwrap();
        let target = self.dir.join("bin");
        let _ = std::fs::remove_dir_all(&target);
        let out = Command::new("bash")
            .arg(root().join(".github/scripts/install-kwctl.sh"))
            .arg(&target)
            .env("TOOLS_ENV", &tools)
            .env("GITHUB_API", format!("file://{}/api", self.dir.display()))
            .env("COSIGN", &cosign)
            .output()
            .unwrap();
        (out, target.join("kwctl"))
    }
}

#[test]
fn kwctl_is_installed_only_when_its_digest_and_signature_check() {
    let release = FakeRelease::new("kwctl");
    let digest = release.digest.clone();
    // not pinned: GitHub's record of the asset decides, then the Sigstore bundle
    let (out, kwctl) = release.install("", &format!("sha256:{digest}"), true);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("kwctl 9.9.9"));
    assert!(text(&out.stdout).contains(&format!("pin KWCTL_SHA256={digest}")));
    assert!(kwctl.is_file());
    let args = std::fs::read_to_string(release.dir.join("cosign.args")).unwrap();
    assert!(args.contains(
        "--certificate-identity=https://github.com/kubewarden/adm-controller/.github/workflows/build-kwctl.yml@refs/tags/v9.9.9"
    ));
    let (out, kwctl) = release.install("", &format!("sha256:{}", "0".repeat(64)), true);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("the release records"));
    assert!(!kwctl.exists());
    // pinned: the pin decides
    let (out, kwctl) = release.install(&digest, "", true);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(kwctl.is_file());
    let (out, kwctl) = release.install(&"f".repeat(64), &format!("sha256:{digest}"), true);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("pins ffff"));
    assert!(!kwctl.exists());
    // a bundle cosign does not verify installs nothing
    let (out, kwctl) = release.install(&digest, "", false);
    assert!(!out.status.success());
    assert!(!kwctl.exists());
}
