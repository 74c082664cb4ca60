//! kubectl (the one built from e2e/cluster/kube) against one kubeconfig.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::error::{Error, Result};

/// kubectl with a kubeconfig.
#[derive(Debug, Clone)]
pub struct Kubectl {
    /// The binary.
    pub bin: PathBuf,
    /// The kubeconfig it uses.
    pub kubeconfig: PathBuf,
}

/// What kubectl answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Whether it exited 0.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Answer {
    fn from(out: Output) -> Answer {
        Answer {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Kubectl {
    /// kubectl for `kubeconfig`.
    pub fn new(bin: &Path, kubeconfig: &Path) -> Kubectl {
        Kubectl {
            bin: bin.to_path_buf(),
            kubeconfig: kubeconfig.to_path_buf(),
        }
    }

    /// Runs kubectl with `args`, `stdin` on its standard input.
    pub fn answer(&self, args: &[&str], stdin: Option<&str>) -> Result<Answer> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let program = || format!("kubectl {}", args.join(" "));
        let mut child = cmd.spawn().map_err(|e| Error::Command {
            program: program(),
            detail: e.to_string(),
        })?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes())
                .map_err(|e| Error::Command {
                    program: program(),
                    detail: format!("writing its input: {e}"),
                })?;
        }
        let out = child.wait_with_output().map_err(|e| Error::Command {
            program: program(),
            detail: e.to_string(),
        })?;
        Ok(Answer::from(out))
    }

    /// Runs kubectl with `args` and fails unless it succeeds; returns its output.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let answer = self.answer(args, stdin)?;
        if answer.ok {
            Ok(answer.stdout)
        } else {
            Err(Error::Command {
                program: format!("kubectl {}", args.join(" ")),
                detail: answer.stderr.trim().to_owned(),
            })
        }
    }

    /// `kubectl get <args> -o json`, decoded.
    pub fn get(&self, args: &[&str]) -> Result<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        Ok(serde_json::from_str(&self.run(&all, None)?)?)
    }

    /// Applies `objects` (server-side, as `manager`), for real.
    pub fn apply(&self, objects: &[Value], manager: &str) -> Result<String> {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
        self.run(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager",
                manager,
                "-f",
                "-",
            ],
            Some(&list.to_string()),
        )
    }
}
