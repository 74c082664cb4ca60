//! The install command of every policy README, run: the `kwctl scaffold manifest` command of
//! its ```` ```console ```` block, pointed at the local registry instead of the published one,
//! run with the real kwctl from the policy's directory (so that `example-settings.yml`
//! resolves), its manifest written to `<out>/<policy>.yaml`.

use std::path::Path;
use std::process::Command;

use super::Entry;
use crate::e2e::{first_lines, plain_text};
use policy_host::error::{Error, Result, read_text};

/// The command every README shows, as its first words.
const COMMAND: [&str; 3] = ["kwctl", "scaffold", "manifest"];

/// How the README commands are run.
pub(super) struct ScaffoldSetup<'a> {
    /// The kwctl binary (absolute: kwctl runs in the policy's directory).
    pub(super) kwctl: &'a Path,
    /// kwctl's `XDG_CACHE_HOME` (its policy store).
    pub(super) cache: &'a Path,
    /// The published registry prefix the READMEs name (`REGISTRY` of the identity).
    pub(super) published: &'a str,
    /// What replaces it: the local registry's repository prefix.
    pub(super) local: &'a str,
    /// The sources file that makes the local registry insecure.
    pub(super) sources: &'a Path,
    /// The empty Sigstore trust configuration (no trust root fetched from the network).
    pub(super) trust: &'a Path,
    /// Where the manifests go.
    pub(super) out: &'a Path,
}

/// Runs every entry's README command; marks the entries whose manifest was written.
pub(super) fn scaffold_all(entries: &mut [Entry], setup: &ScaffoldSetup<'_>) -> Result<()> {
    std::fs::create_dir_all(setup.out).map_err(|e| Error::io(setup.out, e))?;
    for entry in entries.iter_mut() {
        match scaffold(entry, setup) {
            Ok(()) => entry.scaffolded = true,
            Err(problems) => entry.problems.extend(
                problems
                    .into_iter()
                    .map(|p| format!("README kwctl scaffold manifest: {p}")),
            ),
        }
    }
    Ok(())
}

/// One entry's README command, run; its problems when it is missing, wrong or fails.
fn scaffold(entry: &Entry, setup: &ScaffoldSetup<'_>) -> std::result::Result<(), Vec<String>> {
    let readme_path = entry.dir.join("README.md");
    let readme = read_text(&readme_path).map_err(|e| vec![e.to_string()])?;
    let command = manifest_command(&readme).ok_or_else(|| {
        vec![format!(
            "{} has no ```console block with a `kwctl scaffold manifest` command",
            readme_path.display()
        )]
    })?;
    let expected = Reference {
        published: setup.published,
        local: setup.local,
        rest: &format!("{}:v{}", entry.policy, entry.version),
    };
    let context_aware = !entry.metadata.context_aware_resources.is_empty();
    let args = local_arguments(&command, &expected, context_aware)?;
    let out = Command::new(setup.kwctl)
        .args(&args)
        .arg("--sources-path")
        .arg(setup.sources)
        .arg("--sigstore-trust-config")
        .arg(setup.trust)
        .current_dir(&entry.dir)
        .env("XDG_CACHE_HOME", setup.cache)
        .output()
        .map_err(|e| vec![format!("cannot run {}: {e}", setup.kwctl.display())])?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(vec![format!(
            "kwctl {} exited with {}: {}",
            args.join(" "),
            out.status,
            first_lines(&plain_text(&out.stderr))
        )]);
    }
    let path = setup.out.join(format!("{}.yaml", entry.policy));
    std::fs::write(&path, &out.stdout).map_err(|e| vec![format!("{}: {e}", path.display())])
}

/// The first `kwctl scaffold manifest` command of a ```` ```console ```` block of `readme`:
/// the line starting with it, joined with the lines it continues on (a trailing `\`),
/// split into words.
pub(super) fn manifest_command(readme: &str) -> Option<Vec<String>> {
    let mut lines = readme.lines();
    // Some(true) inside a console block, Some(false) inside another fenced block
    let mut fence: Option<bool> = None;
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(info.trim() == "console"),
            };
            continue;
        }
        if fence != Some(true) || !trimmed.starts_with(&COMMAND.join(" ")) {
            continue;
        }
        let mut text = String::new();
        let mut current = trimmed;
        while let Some(continued) = current.strip_suffix('\\') {
            text.push_str(continued);
            text.push(' ');
            match lines.next().map(str::trim) {
                Some(next) if !next.starts_with("```") => current = next,
                _ => {
                    current = "";
                    break;
                }
            }
        }
        text.push_str(current);
        return Some(text.split_whitespace().map(str::to_owned).collect());
    }
    None
}

/// The module reference a README command must name, and what it becomes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reference<'a> {
    /// The published repository prefix (`ghcr.io/<owner>/<repo>`).
    pub(super) published: &'a str,
    /// The local one (`127.0.0.1:<port>/<namespace>`).
    pub(super) local: &'a str,
    /// What follows the prefix: `<policy>:v<version>`.
    pub(super) rest: &'a str,
}

/// kwctl's arguments for a README `command` (`kwctl` dropped): its one
/// `registry://<published>/<rest>` module pointed at the local prefix. The problems when the
/// command names another module, quotes words (not interpreted here), or has
/// `--allow-context-aware` although the policy reads no cluster (or lacks it although it
/// does).
pub(super) fn local_arguments(
    command: &[String],
    reference: &Reference<'_>,
    context_aware: bool,
) -> std::result::Result<Vec<String>, Vec<String>> {
    let mut problems = Vec::new();
    let args = command.get(1..).unwrap_or_default();
    if args.iter().any(|a| a.contains(['"', '\''])) {
        problems.push("quoted words are not supported in the command".to_owned());
    }
    let published = format!("registry://{}/{}", reference.published, reference.rest);
    let modules: Vec<&String> = args.iter().filter(|a| a.contains("://")).collect();
    if modules.len() != 1 || modules.first().is_none_or(|m| **m != published) {
        let found: Vec<&str> = modules.iter().map(|m| m.as_str()).collect();
        problems.push(format!(
            "the command must name the module {published}, it names {found:?}"
        ));
    }
    let allows = args.iter().any(|a| a == "--allow-context-aware");
    if allows && !context_aware {
        problems.push("--allow-context-aware is given, but the policy reads no cluster".into());
    } else if !allows && context_aware {
        problems.push("--allow-context-aware is missing: the policy reads the cluster".into());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let local = format!("registry://{}/{}", reference.local, reference.rest);
    Ok(args
        .iter()
        .map(|a| {
            if *a == published {
                local.clone()
            } else {
                a.clone()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "# foo-policy\n\n```yaml\nkwctl scaffold manifest not this\n```\n\n\
        ```console\nkwctl pull registry://ghcr.io/o/r/foo-policy:v0.1.0\n\
        kwctl scaffold manifest --type ClusterAdmissionPolicy --allow-context-aware \\\n  \
        --settings-path example-settings.yml \\\n  registry://ghcr.io/o/r/foo-policy:v0.1.0\n```\n";

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    const REFERENCE: Reference<'static> = Reference {
        published: "ghcr.io/o/r",
        local: "127.0.0.1:5000/tenancy-policies",
        rest: "foo-policy:v0.1.0",
    };

    #[test]
    fn finds_the_command_of_a_console_block_over_continued_lines() {
        assert_eq!(
            manifest_command(README),
            Some(words(
                "kwctl scaffold manifest --type ClusterAdmissionPolicy --allow-context-aware \
                 --settings-path example-settings.yml registry://ghcr.io/o/r/foo-policy:v0.1.0"
            ))
        );
        assert_eq!(manifest_command("kwctl scaffold manifest x\n"), None);
        assert_eq!(
            manifest_command("```yaml\nkwctl scaffold manifest x\n```\n"),
            None
        );
        // a command cut by the end of its block keeps what it had
        assert_eq!(
            manifest_command("```console\nkwctl scaffold manifest -t X \\\n```\n"),
            Some(words("kwctl scaffold manifest -t X"))
        );
    }

    #[test]
    fn points_the_command_at_the_local_registry() {
        let command = manifest_command(README).unwrap();
        assert_eq!(
            local_arguments(&command, &REFERENCE, true),
            Ok(words(
                "scaffold manifest --type ClusterAdmissionPolicy --allow-context-aware \
                 --settings-path example-settings.yml \
                 registry://127.0.0.1:5000/tenancy-policies/foo-policy:v0.1.0"
            ))
        );
    }

    #[test]
    fn names_every_problem_of_a_command() {
        let command = words(
            "kwctl scaffold manifest --allow-context-aware --settings-path 'a b.yml' \
             registry://ghcr.io/o/r/bar-policy:v0.1.0",
        );
        let problems = local_arguments(&command, &REFERENCE, false).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("quoted"));
        assert!(problems[1].contains("[\"registry://ghcr.io/o/r/bar-policy:v0.1.0\"]"));
        assert!(problems[2].contains("reads no cluster"));
        let command = words("kwctl scaffold manifest registry://ghcr.io/o/r/foo-policy:v0.1.0");
        let problems = local_arguments(&command, &REFERENCE, true).unwrap_err();
        assert_eq!(
            problems,
            ["--allow-context-aware is missing: the policy reads the cluster"]
        );
        let problems =
            local_arguments(&words("kwctl scaffold manifest"), &REFERENCE, false).unwrap_err();
        assert!(problems[0].contains("it names []"), "{problems:?}");
    }
}
