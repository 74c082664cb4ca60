//! The Artifact Hub branch rehearsed: `release.sh artifacthub` for every policy, then all
//! `release.sh artifacthub-push` at once into one local bare repository (so that pushes
//! collide and the script's rebase-and-retry loop runs), then the branch read back and every
//! package on it checked against its policy ([`crate::release::artifacthub`]).

use std::path::Path;
use std::process::{Child, Command};

use super::release::{Release, push_attempts, script_error};
use super::{Entry, Layout};
use crate::release::artifacthub::{package_problems, readme_problems};
use policy_host::error::{Error, Result, read_text};

/// The branch that Artifact Hub reads.
const BRANCH: &str = "artifacthub";

/// What the rehearsal found beyond each policy's own problems.
#[derive(Debug, Default)]
pub(super) struct BranchReport {
    /// Commits on the branch.
    pub(super) commits: usize,
    /// Problems of the branch itself (its artifacthub-repo.yml).
    pub(super) problems: Vec<String>,
}

/// Packages every policy, pushes them all concurrently and checks the branch; each entry
/// gets its push's attempts, whether its package is right on the branch, and its problems.
pub(super) fn rehearse(
    entries: &mut [Entry],
    release: &Release,
    layout: &Layout,
) -> Result<BranchReport> {
    for entry in entries.iter_mut() {
        let out = layout.packages.join(&entry.policy);
        if let Err(why) = release.artifacthub(&entry.policy, &out) {
            entry
                .problems
                .push(format!("release.sh artifacthub: {why}"));
        }
    }
    git(&["init", "-q", "--bare"], Some(&layout.remote), None)?;
    let mut children: Vec<(usize, Child)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let pkg = layout.packages.join(&entry.policy);
        if !pkg.is_dir() {
            continue;
        }
        let message = format!("Artifact Hub package {}/v{}", entry.policy, entry.version);
        let log = layout
            .logs
            .join(format!("artifacthub-push-{}", entry.policy));
        children.push((
            i,
            release.spawn_artifacthub_push(&pkg, &layout.remote, &message, &log)?,
        ));
    }
    for (i, mut child) in children {
        let status = child.wait().map_err(|e| Error::Invalid(e.to_string()))?;
        let Some(entry) = entries.get_mut(i) else {
            continue;
        };
        let log = layout
            .logs
            .join(format!("artifacthub-push-{}", entry.policy));
        let out = read_text(&log.with_extension("out")).unwrap_or_default();
        entry.attempts = push_attempts(&out);
        if !status.success() || entry.attempts.is_none() {
            let err = read_text(&log.with_extension("err")).unwrap_or_default();
            entry.problems.push(format!(
                "release.sh artifacthub-push ({status}): {}",
                script_error(&err)
            ));
        }
    }
    check_branch(
        entries,
        layout,
        &release.root().join("artifacthub/artifacthub-repo.yml"),
    )
}

/// Reads the branch back: artifacthub-repo.yml (as `repo_file`), and for every entry its
/// package and README.
fn check_branch(entries: &mut [Entry], layout: &Layout, repo_file: &Path) -> Result<BranchReport> {
    let mut report = BranchReport::default();
    let remote = layout.remote.as_path();
    let Ok(count) = git(&["rev-list", "--count", BRANCH], None, Some(remote)) else {
        report
            .problems
            .push(format!("{} has no {BRANCH} branch", remote.display()));
        return Ok(report);
    };
    report.commits = count.trim().parse().unwrap_or(0);
    match show(remote, "artifacthub-repo.yml") {
        None => report
            .problems
            .push(format!("the {BRANCH} branch has no artifacthub-repo.yml")),
        Some(text) if Some(&text) != read_text(repo_file).ok().as_ref() => {
            report.problems.push(format!(
                "artifacthub-repo.yml on the {BRANCH} branch differs from {}",
                repo_file.display()
            ))
        }
        Some(_) => {}
    }
    for entry in entries.iter_mut() {
        let at = format!("{}/{}", entry.policy, entry.version);
        let mut problems = match show(remote, &format!("{at}/artifacthub-pkg.yml")) {
            None => vec![format!(
                "no {at}/artifacthub-pkg.yml on the {BRANCH} branch"
            )],
            Some(package) => package_problems(&entry.policy, &entry.metadata, &package),
        };
        let source = read_text(&entry.dir.join("README.md"))?;
        problems.extend(readme_problems(
            show(remote, &format!("{at}/README.md")).as_deref(),
            &source,
        ));
        entry.packaged = problems.is_empty();
        entry.problems.extend(
            problems
                .into_iter()
                .map(|p| format!("{BRANCH} branch, {at}: {p}")),
        );
    }
    Ok(report)
}

/// A file of the branch, `None` when it is not there.
fn show(remote: &Path, path: &str) -> Option<String> {
    git(&["show", &format!("{BRANCH}:{path}")], None, Some(remote)).ok()
}

/// `git [--git-dir <git_dir>] <args> [<target>]`: its stdout, or why it failed.
fn git(args: &[&str], target: Option<&Path>, git_dir: Option<&Path>) -> Result<String> {
    let mut command = Command::new("git");
    if let Some(dir) = git_dir {
        command.arg("--git-dir").arg(dir);
    }
    command.args(args);
    if let Some(target) = target {
        command.arg(target);
    }
    let out = command
        .output()
        .map_err(|e| Error::Invalid(format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::Invalid(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
