//! What an Artifact Hub package of a policy must say: the `artifacthub-pkg.yml` that
//! `kwctl scaffold artifacthub` writes (and the release commits to the `artifacthub` branch
//! under `<policy>/<version>/`) checked against the policy's own metadata, with the README
//! Artifact Hub shows beside it.
//!
//! ```
//! let metadata = policy_host::Metadata::from_yaml_str(
//!     "rules: []\nmutating: false\nannotations:\n  io.kubewarden.policy.version: 0.1.0\n",
//!     "inline",
//! )?;
//! let package = "name: foo-policy\nversion: 0.1.0\n";
//! let problems = testdrive::release::artifacthub::package_problems("foo-policy", &metadata, package);
//! assert!(problems.iter().any(|p| p.contains("containersImages")));
//! # Ok::<(), policy_host::Error>(())
//! ```

use serde_json::Value;

use policy_host::metadata::{ContextAwareResource, Metadata};

use crate::packaging::questions_problem;

/// The metadata annotation holding the policy's version.
pub const VERSION_ANNOTATION: &str = "io.kubewarden.policy.version";

/// The policy's version from its metadata (`io.kubewarden.policy.version`), if set.
pub fn metadata_version(metadata: &Metadata) -> Option<&str> {
    metadata
        .annotations
        .get(VERSION_ANNOTATION)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
}

/// Every way the package text `package` of `policy` differs from what its `metadata` says:
/// not YAML; `name` not the policy; `version` not the metadata's; `containersImages[0].image`
/// not ending with `/<policy>:v<version>`; annotations `kubewarden/mutation` not the
/// metadata's `mutating`, `kubewarden/rules` and `kubewarden/contextAwareResources` not
/// (YAML for) the metadata's, `kubewarden/questions-ui` not YAML with a `questions` list,
/// `kubewarden/resources` missing. Empty when the package is right.
pub fn package_problems(policy: &str, metadata: &Metadata, package: &str) -> Vec<String> {
    let doc: Value = match serde_yaml::from_str(package) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => return vec![format!("not a YAML mapping but {}", kind(&other))],
        Err(e) => return vec![format!("not YAML: {e}")],
    };
    let mut out = Vec::new();
    let version = metadata_version(metadata);
    if version.is_none() {
        out.push(format!("the metadata has no {VERSION_ANNOTATION}"));
    }
    let text = |pointer: &str| doc.pointer(pointer).and_then(Value::as_str);
    if text("/name") != Some(policy) {
        out.push(format!(
            "name is {}, expected {policy:?}",
            shown(&doc, "/name")
        ));
    }
    if let Some(version) = version {
        if text("/version") != Some(version) {
            out.push(format!(
                "version is {}, expected {version:?}",
                shown(&doc, "/version")
            ));
        }
        let suffix = format!("/{policy}:v{version}");
        if !text("/containersImages/0/image").is_some_and(|i| i.ends_with(&suffix)) {
            out.push(format!(
                "containersImages[0].image is {}, expected one ending with {suffix:?}",
                shown(&doc, "/containersImages/0/image")
            ));
        }
    }
    install_problems(text("/install"), policy, metadata, &mut out);
    annotation_problems(&doc, metadata, &mut out);
    out
}

/// The install text must give a binding that works: kwctl's own scaffolds `settings: {}`
/// and, for a context-aware policy, no `contextAwareResources`; release.sh replaces it with the
/// README's command, fed the released example settings.
fn install_problems(
    install: Option<&str>,
    policy: &str,
    metadata: &Metadata,
    out: &mut Vec<String>,
) {
    let install = install.unwrap_or_default();
    let mut missing = vec![
        "kwctl scaffold manifest",
        "--settings-path example-settings.yml",
    ];
    if !metadata.context_aware_resources.is_empty() {
        missing.push("--allow-context-aware");
    }
    let download = format!("/releases/download/{policy}%2Fv");
    missing.retain(|needle| !install.contains(needle));
    if !install.contains(&download) || !install.contains("/example-settings.yml") {
        missing.push("the download of the released example-settings.yml");
    }
    if !missing.is_empty() {
        out.push(format!(
            "install does not show a working binding: it lacks {}",
            missing.join(", ")
        ));
    }
}

/// `rule` without its `scope`, as Artifact Hub's `kubewarden/rules` annotation carries it.
fn without_scope(rule: &Value) -> Value {
    let mut rule = rule.clone();
    if let Some(fields) = rule.as_object_mut() {
        fields.remove("scope");
    }
    rule
}

/// The problems of the package's `annotations` (see [`package_problems`]).
fn annotation_problems(doc: &Value, metadata: &Metadata, out: &mut Vec<String>) {
    let Some(annotations) = doc.get("annotations").and_then(Value::as_object) else {
        out.push("annotations is missing or not a mapping".to_owned());
        return;
    };
    let get = |key: &str| annotations.get(key).and_then(Value::as_str);
    let mutation = if metadata.mutating { "true" } else { "false" };
    if get("kubewarden/mutation") != Some(mutation) {
        out.push(format!(
            "annotation kubewarden/mutation is {}, expected {mutation:?} (metadata mutating)",
            shown(doc, "/annotations/kubewarden~1mutation")
        ));
    }
    // kwctl scaffold artifacthub writes each rule's groups, versions, resources and
    // operations; a rule's `scope` is not part of Artifact Hub's annotation
    let rules = Value::Array(metadata.rules.iter().map(without_scope).collect());
    match get("kubewarden/rules").map(parse_yaml) {
        None => out.push("annotation kubewarden/rules is missing".to_owned()),
        Some(Err(e)) => out.push(format!("annotation kubewarden/rules is not YAML: {e}")),
        Some(Ok(found)) if found != rules => out.push(format!(
            "annotation kubewarden/rules differs from the metadata's rules: {found} ≠ {rules}"
        )),
        Some(Ok(_)) => {}
    }
    context_aware_problems(get("kubewarden/contextAwareResources"), metadata, out);
    match get("kubewarden/questions-ui").map(questions_problem) {
        None => out.push("annotation kubewarden/questions-ui is missing".to_owned()),
        Some(Some(why)) => out.push(format!("annotation kubewarden/questions-ui: {why}")),
        Some(None) => {}
    }
    if get("kubewarden/resources").is_none_or(|r| r.trim().is_empty()) {
        out.push("annotation kubewarden/resources is missing or empty".to_owned());
    }
}

/// `kubewarden/contextAwareResources` must list the metadata's resources, in any order (kwctl
/// sorts them; absent, empty or null when the metadata has none).
fn context_aware_problems(annotation: Option<&str>, metadata: &Metadata, out: &mut Vec<String>) {
    let mut expected = metadata.context_aware_resources.clone();
    expected.sort();
    let found = match annotation.map(parse_yaml) {
        None => Value::Null,
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            out.push(format!(
                "annotation kubewarden/contextAwareResources is not YAML: {e}"
            ));
            return;
        }
    };
    let listed = match &found {
        Value::Null => Some(Vec::new()),
        _ => serde_json::from_value::<Vec<ContextAwareResource>>(found.clone()).ok(),
    };
    let same = listed.is_some_and(|mut l| {
        l.sort();
        l == expected
    });
    if !same {
        out.push(format!(
            "annotation kubewarden/contextAwareResources is {found}, expected the metadata's {}",
            serde_json::to_value(&metadata.context_aware_resources).unwrap_or_default()
        ));
    }
}

/// Why the README beside a package is not the policy's own `source` README.
pub fn readme_problems(beside: Option<&str>, source: &str) -> Vec<String> {
    match beside {
        None => vec!["README.md is missing beside artifacthub-pkg.yml".to_owned()],
        Some(text) if text != source => {
            vec!["README.md beside artifacthub-pkg.yml differs from the policy's README.md".into()]
        }
        Some(_) => Vec::new(),
    }
}

/// A YAML document as JSON (an empty document is null).
fn parse_yaml(text: &str) -> Result<Value, serde_yaml::Error> {
    serde_yaml::from_str(text)
}

/// The value at `pointer`, for messages.
fn shown(doc: &Value, pointer: &str) -> String {
    doc.pointer(pointer)
        .map_or_else(|| "missing".to_owned(), Value::to_string)
}

/// The JSON kind of a value, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "an empty document",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = r#"
rules:
- apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods"]
  operations: ["CREATE", "UPDATE"]
mutating: true
contextAwareResources:
- apiVersion: v1
  kind: Namespace
annotations:
  io.kubewarden.policy.version: 0.2.0
"#;

    /// A package as `kwctl scaffold artifacthub` writes it for [`METADATA`], with the install
    /// text of release.sh.
    const PACKAGE: &str = r#"
version: 0.2.0
name: foo-policy
install: |
  curl -fsSLO https://github.com/o/r/releases/download/foo-policy%2Fv0.2.0/example-settings.yml
  kwctl scaffold manifest --type ClusterAdmissionPolicy --allow-context-aware \
    --settings-path example-settings.yml \
    registry://ghcr.io/o/r/foo-policy:v0.2.0
containersImages:
- name: policy
  image: ghcr.io/o/r/foo-policy:v0.2.0
annotations:
  kubewarden/contextAwareResources: |
    - apiVersion: v1
      kind: Namespace
  kubewarden/mutation: 'true'
  kubewarden/questions-ui: |
    questions:
    - variable: x
  kubewarden/resources: Pod
  kubewarden/rules: |
    - apiGroups:
      - ''
      apiVersions:
      - v1
      resources:
      - pods
      operations:
      - CREATE
      - UPDATE
"#;

    fn metadata() -> Metadata {
        Metadata::from_yaml_str(METADATA, "t").unwrap()
    }

    #[test]
    fn a_rule_scope_is_not_part_of_the_annotation() {
        let scoped = METADATA.replace(
            "  operations: [\"CREATE\", \"UPDATE\"]\n",
            "  operations: [\"CREATE\", \"UPDATE\"]\n  scope: Namespaced\n",
        );
        let metadata = Metadata::from_yaml_str(&scoped, "t").unwrap();
        assert_eq!(metadata.rules[0]["scope"], "Namespaced");
        assert_eq!(
            package_problems("foo-policy", &metadata, PACKAGE),
            Vec::<String>::new()
        );
        let other = METADATA.replace("[\"pods\"]", "[\"services\"]");
        let metadata = Metadata::from_yaml_str(&other, "t").unwrap();
        assert!(!package_problems("foo-policy", &metadata, PACKAGE).is_empty());
    }

    #[test]
    fn a_package_made_from_the_metadata_has_no_problem() {
        assert_eq!(
            package_problems("foo-policy", &metadata(), PACKAGE),
            Vec::<String>::new()
        );
    }

    #[test]
    fn kwctl_own_install_text_is_refused() {
        let kwctl = PACKAGE.replace(
            "--allow-context-aware \\\n    --settings-path example-settings.yml \\\n    ",
            "",
        );
        assert_eq!(
            package_problems("foo-policy", &metadata(), &kwctl),
            vec![
                "install does not show a working binding: it lacks --settings-path example-settings.yml, --allow-context-aware"
            ]
        );
    }

    #[test]
    fn every_problem_is_listed_not_only_the_first() {
        let bad = PACKAGE
            .replace("name: foo-policy", "name: bar-policy")
            .replace("version: 0.2.0", "version: 0.1.0")
            .replace("foo-policy:v0.2.0", "foo-policy:latest")
            .replace("mutation: 'true'", "mutation: 'false'")
            .replace("      - UPDATE\n", "")
            .replace("      kind: Namespace", "      kind: Pod")
            .replace("    questions:\n    - variable: x\n", "    other: 1\n")
            .replace("  kubewarden/resources: Pod\n", "");
        let found = package_problems("foo-policy", &metadata(), &bad);
        for fragment in [
            "name is \"bar-policy\"",
            "version is \"0.1.0\"",
            "ending with \"/foo-policy:v0.2.0\"",
            "kubewarden/mutation is \"false\"",
            "kubewarden/rules differs",
            "kubewarden/contextAwareResources is [{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}]",
            "kubewarden/questions-ui: no `questions` list",
            "kubewarden/resources is missing",
        ] {
            assert!(
                found.iter().any(|p| p.contains(fragment)),
                "{fragment}: {found:?}"
            );
        }
        assert_eq!(found.len(), 8, "{found:?}");
    }

    #[test]
    fn context_aware_resources_are_absent_or_empty_without_any() {
        let mut m = metadata();
        m.context_aware_resources.clear();
        let without = PACKAGE.replace(
            "  kubewarden/contextAwareResources: |\n    - apiVersion: v1\n      kind: Namespace\n",
            "",
        );
        assert_eq!(
            package_problems("foo-policy", &m, &without),
            Vec::<String>::new()
        );
        // kwctl writes the key with an empty block when the metadata lists none
        let empty = PACKAGE.replace(
            "  kubewarden/contextAwareResources: |\n    - apiVersion: v1\n      kind: Namespace\n",
            "  kubewarden/contextAwareResources: |\n",
        );
        assert_eq!(
            package_problems("foo-policy", &m, &empty),
            Vec::<String>::new()
        );
        let found = package_problems("foo-policy", &m, PACKAGE);
        assert!(found[0].contains("expected the metadata's []"), "{found:?}");
        // and the metadata's list must not be missing from the package
        let found = package_problems("foo-policy", &metadata(), &without);
        assert!(found[0].contains("is null"), "{found:?}");
    }

    #[test]
    fn context_aware_resources_are_a_set() {
        let mut m = metadata();
        m.context_aware_resources = vec![
            ContextAwareResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
            },
            ContextAwareResource {
                api_version: "rbac.authorization.k8s.io/v1".into(),
                kind: "ClusterRoleBinding".into(),
            },
        ];
        // kwctl writes them sorted
        let sorted = PACKAGE.replace(
            "    - apiVersion: v1\n      kind: Namespace\n",
            "    - apiVersion: rbac.authorization.k8s.io/v1\n      kind: ClusterRoleBinding\n    \
             - apiVersion: v1\n      kind: Namespace\n",
        );
        assert_eq!(
            package_problems("foo-policy", &m, &sorted),
            Vec::<String>::new()
        );
        let found = package_problems("foo-policy", &m, PACKAGE);
        assert_eq!(found.len(), 1, "{found:?}");
        let odd = PACKAGE.replace("    - apiVersion: v1\n      kind: Namespace\n", "    [1]\n");
        assert_eq!(package_problems("foo-policy", &metadata(), &odd).len(), 1);
    }

    #[test]
    fn unreadable_packages_and_annotations() {
        let found = package_problems("foo-policy", &metadata(), "a: [");
        assert!(found[0].starts_with("not YAML"), "{found:?}");
        let found = package_problems("foo-policy", &metadata(), "- a\n");
        assert_eq!(found, ["not a YAML mapping but a list"]);
        let bad = PACKAGE.replace(
            "  kubewarden/questions-ui: |\n    questions:",
            "  kubewarden/questions-ui: |\n    questions: [",
        );
        let found = package_problems("foo-policy", &metadata(), &bad);
        assert!(found[0].contains("questions-ui: not YAML"), "{found:?}");
        let mut m = metadata();
        m.annotations.clear();
        let found = package_problems("foo-policy", &m, PACKAGE);
        assert_eq!(found, ["the metadata has no io.kubewarden.policy.version"]);
        let found = package_problems("foo-policy", &metadata(), "name: foo-policy\n");
        assert!(
            found
                .iter()
                .any(|p| p == "annotations is missing or not a mapping"),
            "{found:?}"
        );
    }

    #[test]
    fn the_readme_beside_is_the_policys() {
        assert!(readme_problems(Some("# a\n"), "# a\n").is_empty());
        assert!(readme_problems(Some("# b\n"), "# a\n")[0].contains("differs"));
        assert!(readme_problems(None, "# a\n")[0].contains("missing"));
    }
}
