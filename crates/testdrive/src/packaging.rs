//! What Kubewarden's packaging tools need from a policy: `kwctl scaffold artifacthub`
//! refuses metadata without some annotations or with malformed ones, and builds the
//! Artifact Hub links from others. [`problems`] lists what would be refused or mislabelled in
//! `metadata.yml`, [`policy_problems`] adds the module's host capabilities and
//! `questions-ui.yml`, so that `testdrive check` fails before a release does.

use std::collections::BTreeSet;
use std::path::Path;

use policy_host::metadata::Metadata;
use serde_json::Value;

/// Annotations every policy's metadata carries (README "Packaging", docs/semantics.md#packaging).
pub const REQUIRED_ANNOTATIONS: [&str; 14] = [
    "io.kubewarden.policy.title",
    "io.kubewarden.policy.version",
    "io.kubewarden.policy.description",
    "io.kubewarden.policy.author",
    "io.kubewarden.policy.url",
    "io.kubewarden.policy.source",
    "io.kubewarden.policy.license",
    "io.kubewarden.policy.ociUrl",
    "io.kubewarden.policy.severity",
    "io.kubewarden.policy.category",
    "io.artifacthub.displayName",
    "io.artifacthub.resources",
    "io.artifacthub.keywords",
    "com.github.release.tag",
];

/// Severities Kubewarden's policy catalogue uses.
const SEVERITIES: [&str; 4] = ["low", "medium", "high", "critical"];

/// Why the metadata of policy directory `policy` would be refused or mislabelled by
/// `kwctl scaffold artifacthub` or Artifact Hub; empty when it is complete.
///
/// ```
/// let m = policy_host::Metadata::from_yaml_str("rules: []\n", "inline").unwrap();
/// let problems = testdrive::packaging::problems(&m, "foo-policy");
/// assert!(problems.iter().any(|p| p.contains("io.kubewarden.policy.ociUrl")));
/// assert!(problems.iter().any(|p| p.contains("hostCapabilities")));
/// ```
pub fn problems(metadata: &Metadata, policy: &str) -> Vec<String> {
    let get = Annotations(metadata);
    let mut out = Vec::new();
    for key in REQUIRED_ANNOTATIONS {
        if get.value(key).is_none() {
            out.push(format!("annotation {key} is missing or empty"));
        }
    }
    release_problems(&get, policy, &mut out);
    link_problems(&get, policy, &mut out);
    catalogue_problems(&get, &mut out);
    if metadata.host_capabilities.is_none() {
        out.push("hostCapabilities is missing (`[]` when the policy makes no host call)".into());
    }
    match metadata.minimum_kubewarden_version.as_deref() {
        None => out.push("minimumKubewardenVersion is missing".into()),
        Some(v) if !is_semver(v) => out.push(format!(
            "minimumKubewardenVersion {v:?} is not a semantic version"
        )),
        Some(_) => {}
    }
    out
}

/// The annotations of a metadata file, empty values counted as absent.
struct Annotations<'a>(&'a Metadata);

impl Annotations<'_> {
    /// The non-blank value of `key`.
    fn value(&self, key: &str) -> Option<&str> {
        self.0
            .annotations
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }
}

/// Title, version and release tag: what the release workflow and kwctl name the policy by.
fn release_problems(get: &Annotations<'_>, policy: &str, out: &mut Vec<String>) {
    if let Some(title) = get.value("io.kubewarden.policy.title")
        && title != policy
    {
        out.push(format!(
            "io.kubewarden.policy.title is {title:?}, expected the policy's name {policy:?}"
        ));
    }
    let version = get.value("io.kubewarden.policy.version");
    if let Some(v) = version
        && !is_semver(v)
    {
        out.push(format!(
            "io.kubewarden.policy.version {v:?} is not a semantic version"
        ));
    }
    if let (Some(v), Some(tag)) = (version, get.value("com.github.release.tag"))
        && tag != format!("{policy}/v{v}")
    {
        out.push(format!(
            "com.github.release.tag is {tag:?}, expected \"{policy}/v{v}\" (the release workflow's tag)"
        ));
    }
}

/// Author, URL, source and OCI repository: who made the policy and where it lives.
fn link_problems(get: &Annotations<'_>, policy: &str, out: &mut Vec<String>) {
    if let Some(author) = get.value("io.kubewarden.policy.author") {
        for person in author.split(',') {
            if !is_name_addr(person.trim()) {
                out.push(format!(
                    "io.kubewarden.policy.author: {:?} is not `Name <email>`",
                    person.trim()
                ));
            }
        }
    }
    if let Some(url) = get.value("io.kubewarden.policy.url")
        && !is_https(url)
    {
        out.push(format!(
            "io.kubewarden.policy.url {url:?} is not an https URL"
        ));
    }
    if let Some(source) = get.value("io.kubewarden.policy.source")
        && !is_github_repository(source)
    {
        out.push(format!(
            "io.kubewarden.policy.source {source:?} must be the repository, \
             https://github.com/<owner>/<repo>: kwctl appends /releases/download/<tag>/policy.wasm"
        ));
    }
    if let Some(oci) = get.value("io.kubewarden.policy.ociUrl") {
        let last = oci.rsplit('/').next().unwrap_or_default();
        if oci.contains("://") || oci.contains(char::is_whitespace) || last.contains(':') {
            out.push(format!(
                "io.kubewarden.policy.ociUrl {oci:?} must be a repository without scheme or tag"
            ));
        } else if last != policy {
            out.push(format!(
                "io.kubewarden.policy.ociUrl {oci:?} must end with the policy's name {policy:?}"
            ));
        }
    }
}

/// Keywords, resources and severity: how Artifact Hub and the catalogue list the policy.
fn catalogue_problems(get: &Annotations<'_>, out: &mut Vec<String>) {
    for key in ["io.artifacthub.keywords", "io.artifacthub.resources"] {
        if let Some(list) = get.value(key)
            && list.split(',').any(|item| item.trim().is_empty())
        {
            out.push(format!("{key} {list:?} has an empty item"));
        }
    }
    if let Some(severity) = get.value("io.kubewarden.policy.severity")
        && !SEVERITIES.contains(&severity)
    {
        out.push(format!(
            "io.kubewarden.policy.severity {severity:?} is not one of {}",
            SEVERITIES.join(", ")
        ));
    }
}

/// `MAJOR.MINOR.PATCH` with an optional `-prerelease`.
fn is_semver(v: &str) -> bool {
    let (core, pre) = match v.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (v, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && pre.is_none_or(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        })
}

/// `Name <local@domain.tld>` with a non-empty name.
fn is_name_addr(person: &str) -> bool {
    let Some((name, rest)) = person.split_once('<') else {
        return false;
    };
    let Some(email) = rest.strip_suffix('>') else {
        return false;
    };
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    !name.trim().is_empty()
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.contains(|c: char| c.is_whitespace() || c == '<' || c == '>')
        && !domain.contains('@')
}

fn is_https(url: &str) -> bool {
    url.strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains(char::is_whitespace))
}

/// `https://github.com/<owner>/<repo>`, nothing after.
fn is_github_repository(url: &str) -> bool {
    url.strip_prefix("https://github.com/").is_some_and(|path| {
        let parts: Vec<&str> = path.split('/').collect();
        parts.len() == 2 && parts.iter().all(|p| !p.is_empty()) && is_https(url)
    })
}

/// Why a policy would not package as Kubewarden's tools expect: its metadata
/// ([`problems`]), host capabilities that differ from the ones the module
/// can call (what `kwctl annotate` warns about), or no `questions-ui.yml` for Artifact Hub (or
/// one that is not YAML with a `questions` list).
pub fn policy_problems(
    policy_dir: &Path,
    policy: &str,
    wasm: &[u8],
    metadata: Option<&Metadata>,
) -> Vec<String> {
    let Some(metadata) = metadata else {
        return vec!["no metadata.yml".to_owned()];
    };
    let mut out = problems(metadata, policy);
    match policy_host::wasm::detected_host_capabilities(wasm) {
        Ok(detected) => {
            let declared: BTreeSet<String> = metadata
                .host_capabilities
                .iter()
                .flatten()
                .cloned()
                .collect();
            if metadata.host_capabilities.is_some() && detected != declared {
                out.push(format!(
                    "hostCapabilities {declared:?} differ from the calls the module can make {detected:?}"
                ));
            }
        }
        Err(e) => out.push(e.to_string()),
    }
    let questions = policy_dir.join("questions-ui.yml");
    match std::fs::read_to_string(&questions) {
        Ok(text) if !text.trim().is_empty() => {
            if let Some(why) = questions_problem(&text) {
                out.push(format!(
                    "{}: {why} (Artifact Hub and the Rancher UI read it)",
                    questions.display()
                ));
            }
        }
        _ => out.push(format!(
            "{} is missing or empty (kwctl scaffold artifacthub refuses an empty one)",
            questions.display()
        )),
    }
    out
}

/// Why a questions-ui document (`questions-ui.yml`, the `kubewarden/questions-ui`
/// annotation) would not load in the Rancher UI: not YAML, or no `questions` list.
pub fn questions_problem(text: &str) -> Option<String> {
    match serde_yaml::from_str::<Value>(text) {
        Err(e) => Some(format!("not YAML: {e}")),
        Ok(q) if !q.get("questions").is_some_and(Value::is_array) => {
            Some("no `questions` list".to_owned())
        }
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPLETE: &str = r#"
rules: []
hostCapabilities: []
minimumKubewardenVersion: 1.30.0
annotations:
  io.kubewarden.policy.title: foo-policy
  io.kubewarden.policy.version: 0.1.0
  io.kubewarden.policy.description: Does foo
  io.kubewarden.policy.author: Foo Team <foo@example.org>, Bar <bar@example.org>
  io.kubewarden.policy.url: https://github.com/o/r/tree/main/policies/foo-policy
  io.kubewarden.policy.source: https://github.com/o/r
  io.kubewarden.policy.license: Apache-2.0
  io.kubewarden.policy.ociUrl: ghcr.io/o/r/foo-policy
  io.kubewarden.policy.severity: medium
  io.kubewarden.policy.category: Multi-tenancy
  io.artifacthub.displayName: Foo
  io.artifacthub.resources: Pod, Deployment
  io.artifacthub.keywords: foo, bar
  com.github.release.tag: foo-policy/v0.1.0
"#;

    fn with(key: &str, value: &str) -> Metadata {
        let mut m = Metadata::from_yaml_str(COMPLETE, "t").unwrap();
        m.annotations.insert(key.to_owned(), value.to_owned());
        m
    }

    #[test]
    fn complete_metadata_has_no_problem() {
        let m = Metadata::from_yaml_str(COMPLETE, "t").unwrap();
        assert_eq!(problems(&m, "foo-policy"), Vec::<String>::new());
    }

    #[test]
    fn each_malformed_annotation_is_named() {
        for (key, value, fragment) in [
            (
                "io.kubewarden.policy.author",
                "Foo Team",
                "not `Name <email>`",
            ),
            (
                "io.kubewarden.policy.author",
                "Foo <foo@localhost>",
                "not `Name <email>`",
            ),
            (
                "io.kubewarden.policy.author",
                "<foo@example.org>",
                "not `Name <email>`",
            ),
            (
                "io.kubewarden.policy.version",
                "0.1",
                "not a semantic version",
            ),
            (
                "com.github.release.tag",
                "v0.1.0",
                "expected \"foo-policy/v0.1.0\"",
            ),
            (
                "io.kubewarden.policy.source",
                "https://github.com/o/r/tree/main",
                "must be the repository",
            ),
            (
                "io.kubewarden.policy.url",
                "http://example.org",
                "not an https URL",
            ),
            (
                "io.kubewarden.policy.ociUrl",
                "ghcr.io/o/r/foo-policy:v1",
                "without scheme or tag",
            ),
            (
                "io.kubewarden.policy.ociUrl",
                "https://ghcr.io/o/r/foo-policy",
                "without scheme or tag",
            ),
            (
                "io.kubewarden.policy.ociUrl",
                "ghcr.io/o/r/bar-policy",
                "must end with",
            ),
            ("io.artifacthub.keywords", "foo,,bar", "empty item"),
            ("io.kubewarden.policy.severity", "severe", "not one of"),
            (
                "io.kubewarden.policy.title",
                "bar-policy",
                "expected the policy's name",
            ),
            ("io.artifacthub.displayName", " ", "missing or empty"),
        ] {
            let found = problems(&with(key, value), "foo-policy");
            assert!(
                found.iter().any(|p| p.contains(fragment)),
                "{key}={value}: {found:?}"
            );
        }
    }

    #[test]
    fn host_capabilities_and_minimum_version_are_required() {
        let mut m = Metadata::from_yaml_str(COMPLETE, "t").unwrap();
        m.host_capabilities = None;
        m.minimum_kubewarden_version = Some("1.30".into());
        let found = problems(&m, "foo-policy");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("hostCapabilities is missing"));
        assert!(found[1].contains("minimumKubewardenVersion \"1.30\""));
    }

    #[test]
    fn semver_forms() {
        assert!(is_semver("1.36.0"));
        assert!(is_semver("1.36.0-beta.1"));
        assert!(!is_semver("1.36"));
        assert!(!is_semver("v1.36.0"));
        assert!(!is_semver("1.36.0-"));
    }

    #[test]
    fn questions_documents() {
        assert_eq!(questions_problem("questions: []\n"), None);
        assert_eq!(
            questions_problem("questions: {}\n").as_deref(),
            Some("no `questions` list")
        );
        let invalid = "questions:\n- description: Roles that may not be bound: a list\n";
        assert!(questions_problem(invalid).unwrap().starts_with("not YAML"));
    }
}
