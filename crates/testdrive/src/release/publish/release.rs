//! The release script (`.github/scripts/release.sh`), called as the release workflow calls
//! it, and the reading of what it prints.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::e2e::{first_lines, plain_text};
use policy_host::error::{Error, Result};

/// How release.sh is run: the script, the kwctl it calls and the environment it gets.
#[derive(Debug, Clone)]
pub(super) struct Release {
    /// The script.
    pub(super) script: PathBuf,
    /// `KWCTL`.
    pub(super) kwctl: PathBuf,
    /// `XDG_CACHE_HOME` of kwctl (its policy store): kept out of the user's cache.
    pub(super) cache: PathBuf,
    /// `RELEASE_PUSH_ATTEMPTS` of `artifacthub-push` (`None`: the script's default, as the
    /// workflow runs it).
    pub(super) push_attempts: Option<u32>,
}

impl Release {
    /// The repository the script belongs to (`<root>/.github/scripts/release.sh`).
    pub(super) fn root(&self) -> PathBuf {
        self.script
            .ancestors()
            .nth(3)
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// `release.sh <args>` with the environment set.
    fn command(&self, args: &[&std::ffi::OsStr]) -> Command {
        let mut command = Command::new(&self.script);
        command
            .args(args)
            .env("KWCTL", &self.kwctl)
            .env("XDG_CACHE_HOME", &self.cache)
            .stdin(Stdio::null());
        if let Some(attempts) = self.push_attempts {
            command.env("RELEASE_PUSH_ATTEMPTS", attempts.to_string());
        }
        command
    }

    /// Runs `release.sh <args>`: its stdout, or why it failed (its own `release.sh:` lines).
    fn run(&self, args: &[&std::ffi::OsStr]) -> std::result::Result<String, String> {
        let out = self
            .command(args)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.script.display()))?;
        finished(&out)
    }

    /// `release.sh identity`: the value of `key` (REGISTRY, ...).
    pub(super) fn identity(&self, key: &str) -> Result<String> {
        let text = self.run(&["identity".as_ref()]).map_err(Error::Invalid)?;
        identity_value(&text, key).ok_or_else(|| {
            Error::Invalid(format!(
                "{} identity printed no {key}=",
                self.script.display()
            ))
        })
    }

    /// `release.sh push <wasm> <uri> --sources-path <sources>`: the immutable reference.
    pub(super) fn push(
        &self,
        wasm: &Path,
        uri: &str,
        sources: &Path,
    ) -> std::result::Result<String, String> {
        let text = self.run(&[
            "push".as_ref(),
            wasm.as_os_str(),
            uri.as_ref(),
            "--sources-path".as_ref(),
            sources.as_os_str(),
        ])?;
        let reference = text.lines().last().unwrap_or_default().trim();
        if reference.is_empty() {
            return Err("release.sh push printed no reference".to_owned());
        }
        Ok(reference.to_owned())
    }

    /// `release.sh artifacthub <policy> <out>`: the package under `<out>/<policy>/<version>/`
    /// and `<out>/artifacthub-repo.yml`.
    pub(super) fn artifacthub(&self, policy: &str, out: &Path) -> std::result::Result<(), String> {
        self.run(&["artifacthub".as_ref(), policy.as_ref(), out.as_os_str()])
            .map(drop)
    }

    /// Starts `release.sh artifacthub-push <pkg> <remote> <message>` in the background, its
    /// stdout and stderr going to `<log>.out` and `<log>.err`.
    pub(super) fn spawn_artifacthub_push(
        &self,
        pkg: &Path,
        remote: &Path,
        message: &str,
        log: &Path,
    ) -> Result<Child> {
        let out_path = log.with_extension("out");
        let err_path = log.with_extension("err");
        let out = std::fs::File::create(&out_path).map_err(|e| Error::io(&out_path, e))?;
        let err = std::fs::File::create(&err_path).map_err(|e| Error::io(&err_path, e))?;
        self.command(&[
            "artifacthub-push".as_ref(),
            pkg.as_os_str(),
            remote.as_os_str(),
            message.as_ref(),
        ])
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| Error::Invalid(format!("cannot run {}: {e}", self.script.display())))
    }
}

/// The stdout of a finished release.sh, or why it failed.
fn finished(out: &Output) -> std::result::Result<String, String> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "release.sh exited with {}: {}",
            out.status,
            script_error(&plain_text(&out.stderr))
        ))
    }
}

/// What release.sh said when it failed: its own `release.sh: ...` lines (after the tools'
/// logs), else the first useful lines.
pub(super) fn script_error(stderr: &str) -> String {
    let own: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("release.sh:"))
        .collect();
    if own.is_empty() {
        first_lines(stderr)
    } else {
        own.join(" | ")
    }
}

/// The value of `key` in `release.sh identity`'s `KEY=value` lines.
fn identity_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_owned())
}

/// The attempts `release.sh artifacthub-push` needed, from its closing line
/// `artifacthub-push: pushed after N attempt(s)`.
pub(super) fn push_attempts(stdout: &str) -> Option<u32> {
    stdout.lines().rev().find_map(|l| {
        l.trim()
            .strip_prefix("artifacthub-push: pushed after ")?
            .strip_suffix(" attempt(s)")?
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_identity() {
        let text =
            "REGISTRY=ghcr.io/o/r\nSOURCE_REPOSITORY=https://github.com/o/r\nAUTHOR_NAME=a=b\n";
        assert_eq!(
            identity_value(text, "REGISTRY").as_deref(),
            Some("ghcr.io/o/r")
        );
        assert_eq!(identity_value(text, "AUTHOR_NAME").as_deref(), Some("a=b"));
        assert_eq!(identity_value(text, "REG"), None);
    }

    #[test]
    fn reads_the_attempts_of_a_push() {
        assert_eq!(
            push_attempts("artifacthub-push: pushed after 1 attempt(s)\n"),
            Some(1)
        );
        assert_eq!(
            push_attempts("x\nartifacthub-push: pushed after 12 attempt(s)\n"),
            Some(12)
        );
        assert_eq!(
            push_attempts(
                "artifacthub-push: nothing to commit (the branch already holds these files)\n"
            ),
            None
        );
    }

    #[test]
    fn script_errors_are_its_own_lines() {
        let stderr = "2026 WARN kwctl::push: annotation is a multi-line string\nrelease.sh: push: kwctl push registry://x failed\n";
        assert_eq!(
            script_error(stderr),
            "release.sh: push: kwctl push registry://x failed"
        );
        assert_eq!(script_error("Error: boom\n"), "\"Error: boom\"");
    }
}
