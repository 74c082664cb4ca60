//! The publishing identity (`.github/publishing.env`) and everything derived from it: the
//! metadata annotations naming the author, the links and the OCI repository of every policy,
//! Artifact Hub's repository file, and the module references of the READMEs' manifests.
//! `testdrive identity` lists where the repository drifted from the file (`--write` rewrites
//! those places), so the file stays the only place these values are set.

use std::path::{Path, PathBuf};

use policy_host::error::{Error, Result, read_text};

/// Where the identity lives, relative to the repository root.
pub const IDENTITY_FILE: &str = ".github/publishing.env";

/// The metadata annotations derived from the identity.
pub const DERIVED_ANNOTATIONS: [&str; 4] = [
    "io.kubewarden.policy.author",
    "io.kubewarden.policy.url",
    "io.kubewarden.policy.source",
    "io.kubewarden.policy.ociUrl",
];

/// Who publishes the bundle and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// OCI repository prefix: policy `<name>` is `<registry>/<name>`.
    pub registry: String,
    /// `https://github.com/<owner>/<repo>`.
    pub source_repository: String,
    /// The author's (or team's) name.
    pub author_name: String,
    /// The author's address.
    pub author_email: String,
    /// Artifact Hub's repository id.
    pub artifacthub_repository_id: String,
}

impl Identity {
    /// Parses `KEY=value` lines (comments and blank lines skipped; unknown or missing keys
    /// refused), as `.github/scripts/release.sh` does.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let mut values: [Option<String>; 5] = Default::default();
        const KEYS: [&str; 5] = [
            "REGISTRY",
            "SOURCE_REPOSITORY",
            "AUTHOR_NAME",
            "AUTHOR_EMAIL",
            "ARTIFACTHUB_REPOSITORY_ID",
        ];
        for line in text.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| Error::parse(origin, format!("not a KEY=value line: {line}")))?;
            let slot = KEYS
                .iter()
                .position(|k| *k == key)
                .and_then(|i| values.get_mut(i))
                .ok_or_else(|| Error::parse(origin, format!("unknown key {key}")))?;
            *slot = Some(value.to_owned());
        }
        let mut take = |i: usize| -> Result<String> {
            values
                .get_mut(i)
                .and_then(Option::take)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    let key = KEYS.get(i).copied().unwrap_or_default();
                    Error::parse(origin, format!("{key} is missing or empty"))
                })
        };
        Ok(Identity {
            registry: take(0)?,
            source_repository: take(1)?,
            author_name: take(2)?,
            author_email: take(3)?,
            artifacthub_repository_id: take(4)?,
        })
    }

    /// Reads [`IDENTITY_FILE`] under `root`.
    pub fn from_root(root: &Path) -> Result<Self> {
        let path = root.join(IDENTITY_FILE);
        Identity::parse(&read_text(&path)?, &path.display().to_string())
    }

    /// The value of one of [`DERIVED_ANNOTATIONS`] for `policy`.
    pub fn annotation(&self, key: &str, policy: &str) -> Option<String> {
        match key {
            "io.kubewarden.policy.author" => {
                Some(format!("{} <{}>", self.author_name, self.author_email))
            }
            "io.kubewarden.policy.url" => Some(format!(
                "{}/tree/main/policies/{policy}",
                self.source_repository
            )),
            "io.kubewarden.policy.source" => Some(self.source_repository.clone()),
            "io.kubewarden.policy.ociUrl" => Some(format!("{}/{policy}", self.registry)),
            _ => None,
        }
    }

    /// The module reference of a released policy: `registry://<registry>/<policy>:v<version>`.
    pub fn module(&self, policy: &str, version: &str) -> String {
        format!("registry://{}/{policy}:v{version}", self.registry)
    }

    /// `artifacthub/artifacthub-repo.yml`.
    pub fn artifacthub_repo_yml(&self) -> String {
        format!(
            "# Artifact Hub repository metadata, written by `testdrive identity --write` from\n\
             # {IDENTITY_FILE}. The release workflow copies it to the root of the `artifacthub`\n\
             # branch, next to <policy>/<version>/artifacthub-pkg.yml and README.md; register that\n\
             # branch as a Kubewarden policies repository.\n\
             repositoryID: {}\n\
             owners:\n\
             - name: {}\n  email: {}\n\
             ignore: []\n",
            self.artifacthub_repository_id, self.author_name, self.author_email
        )
    }
}

/// One file that differs from what the identity says, with its new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// The file.
    pub path: PathBuf,
    /// What differs, one line per place.
    pub changes: Vec<String>,
    /// The file's text as the identity makes it.
    pub text: String,
}

/// Every file under `root` that differs from the identity: each policy's metadata.yml (the
/// [`DERIVED_ANNOTATIONS`]), `artifacthub/artifacthub-repo.yml`, and the module references
/// `registry://…/<policy>:` / `@` of the policy READMEs and of the root README.
pub fn drift(root: &Path, identity: &Identity) -> Result<Vec<Drift>> {
    let policies = policy_names(root)?;
    let mut out = Vec::new();
    for policy in &policies {
        let path = root.join("policies").join(policy).join("metadata.yml");
        let text = read_text(&path)?;
        let (new, changes) = metadata_text(&text, identity, policy);
        push_drift(&mut out, path, &text, new, changes);
    }
    let path = root.join("artifacthub/artifacthub-repo.yml");
    let text = read_text(&path).unwrap_or_default();
    let new = identity.artifacthub_repo_yml();
    if text != new {
        out.push(Drift {
            path,
            changes: vec!["differs from the identity's repository id and owners".into()],
            text: new,
        });
    }
    let mut readmes = vec![root.join("README.md")];
    readmes.extend(
        policies
            .iter()
            .map(|p| root.join("policies").join(p).join("README.md")),
    );
    for path in readmes {
        let text = read_text(&path)?;
        let (new, changes) = module_references(&text, &identity.registry, &policies);
        push_drift(&mut out, path, &text, new, changes);
    }
    Ok(out)
}

fn push_drift(out: &mut Vec<Drift>, path: PathBuf, old: &str, text: String, changes: Vec<String>) {
    if old != text {
        out.push(Drift {
            path,
            changes,
            text,
        });
    }
}

/// The policy directories' names under `root/policies`, sorted.
pub fn policy_names(root: &Path) -> Result<Vec<String>> {
    let dir = root.join("policies");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("metadata.yml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// `metadata.yml` with the derived annotation lines (`  <key>: <value>`) set.
fn metadata_text(text: &str, identity: &Identity, policy: &str) -> (String, Vec<String>) {
    let mut changes = Vec::new();
    let mut lines = Vec::new();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let replaced = DERIVED_ANNOTATIONS.iter().find_map(|key| {
            let rest = body
                .strip_prefix("  ")?
                .strip_prefix(key)?
                .strip_prefix(':')?;
            let want = identity.annotation(key, policy)?;
            let want_line = format!("  {key}: {}", yaml_scalar(&want));
            (unquote(rest.trim()) != want).then(|| {
                changes.push(format!("{key}: {} -> {want}", rest.trim()));
                want_line
            })
        });
        match replaced {
            Some(new) => {
                lines.push(new);
                if line.ends_with('\n') {
                    lines.push("\n".into());
                }
            }
            None => lines.push(line.to_owned()),
        }
    }
    (lines.concat(), changes)
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

/// A YAML scalar for `value`: double-quoted when a plain scalar would read differently.
fn yaml_scalar(value: &str) -> String {
    let special_start = value.starts_with([
        '<', '>', '{', '}', '[', ']', '&', '*', '!', '|', '\'', '"', '%', '@', '`', '#', ',', '?',
        '-',
    ]);
    if special_start || value.contains(": ") || value.contains(" #") || value.contains('<') {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        value.to_owned()
    }
}

/// `text` with every `registry://<anything>/<policy>` (followed by `:` or `@`) of a known
/// policy pointing at `registry`.
fn module_references(text: &str, registry: &str, policies: &[String]) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut changes = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("registry://") {
        let (before, from) = rest.split_at(start);
        out.push_str(before);
        let end = from
            .find(|c: char| c.is_whitespace() || c == '`' || c == '"' || c == '\'' || c == ')')
            .unwrap_or(from.len());
        let (reference, after) = from.split_at(end);
        out.push_str(&retarget(reference, registry, policies, &mut changes));
        rest = after;
    }
    out.push_str(rest);
    (out, changes)
}

/// One reference pointed at `registry` when it names a policy of the bundle.
fn retarget(
    reference: &str,
    registry: &str,
    policies: &[String],
    changes: &mut Vec<String>,
) -> String {
    let body = reference.trim_start_matches("registry://");
    let name_end = body.rfind([':', '@']).unwrap_or(body.len());
    let (path, tail) = body.split_at(name_end);
    let Some((prefix, policy)) = path.rsplit_once('/') else {
        return reference.to_owned();
    };
    if prefix == registry || !policies.iter().any(|p| p == policy) {
        return reference.to_owned();
    }
    let new = format!("registry://{registry}/{policy}{tail}");
    changes.push(format!("{reference} -> {new}"));
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment\n\nREGISTRY=ghcr.io/o/r\nSOURCE_REPOSITORY=https://github.com/o/r\n\
        AUTHOR_NAME=The Team\nAUTHOR_EMAIL=team@example.org\nARTIFACTHUB_REPOSITORY_ID=1234\n";

    fn identity() -> Identity {
        Identity::parse(FILE, "test").expect("valid")
    }

    #[test]
    fn parses_every_key_and_refuses_unknown_or_missing_ones() {
        let id = identity();
        assert_eq!(id.registry, "ghcr.io/o/r");
        assert_eq!(id.author_name, "The Team");
        let unknown = Identity::parse(&format!("{FILE}OWNER=x\n"), "f").unwrap_err();
        assert_eq!(unknown.to_string(), "f: unknown key OWNER");
        let missing =
            Identity::parse(&FILE.replace("AUTHOR_EMAIL=team@example.org\n", ""), "f").unwrap_err();
        assert_eq!(missing.to_string(), "f: AUTHOR_EMAIL is missing or empty");
        let empty = Identity::parse(&FILE.replace("=ghcr.io/o/r", "="), "f").unwrap_err();
        assert_eq!(empty.to_string(), "f: REGISTRY is missing or empty");
    }

    #[test]
    fn metadata_annotations_are_rewritten_in_place() {
        let text = "rules: []\nannotations:\n  # who\n  io.kubewarden.policy.author: \"Old <old@x.invalid>\"\n  io.kubewarden.policy.url: https://github.com/o/r/tree/main/policies/p\n  io.kubewarden.policy.ociUrl: ghcr.io/old/p\n  io.kubewarden.policy.title: p\n";
        let (new, changes) = metadata_text(text, &identity(), "p");
        assert_eq!(
            new,
            "rules: []\nannotations:\n  # who\n  io.kubewarden.policy.author: \"The Team <team@example.org>\"\n  io.kubewarden.policy.url: https://github.com/o/r/tree/main/policies/p\n  io.kubewarden.policy.ociUrl: ghcr.io/o/r/p\n  io.kubewarden.policy.title: p\n"
        );
        assert_eq!(changes.len(), 2);
        let (again, none) = metadata_text(&new, &identity(), "p");
        assert_eq!(again, new);
        assert!(none.is_empty());
    }

    #[test]
    fn module_references_of_known_policies_follow_the_registry() {
        let policies = vec!["a-policy".to_owned()];
        let text = "module: registry://<registry>/tenancy-policies/a-policy:v0.1.0\n\
                    `registry://ghcr.io/o/r/a-policy@sha256:ab` and registry://ghcr.io/kubewarden/policies/other:v1\n";
        let (new, changes) = module_references(text, "ghcr.io/o/r", &policies);
        assert_eq!(
            new,
            "module: registry://ghcr.io/o/r/a-policy:v0.1.0\n\
             `registry://ghcr.io/o/r/a-policy@sha256:ab` and registry://ghcr.io/kubewarden/policies/other:v1\n"
        );
        assert_eq!(changes.len(), 1);
    }

    #[test]
    fn the_repository_is_in_step_with_its_identity_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let identity = Identity::from_root(&root).expect("the identity file parses");
        let drifted: Vec<String> = drift(&root, &identity)
            .expect("the repository reads")
            .iter()
            .map(|d| format!("{}: {}", d.path.display(), d.changes.join("; ")))
            .collect();
        assert!(
            drifted.is_empty(),
            "run `testdrive identity --write`: {drifted:#?}"
        );
    }
}
