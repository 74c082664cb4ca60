//! Kubewarden manifests as written: the YAML documents of a YAML file, or of the fenced
//! `yaml` blocks of a Markdown page, whose `apiVersion` is `policies.kubewarden.io/*`.

use serde_json::Value;

/// The API group of Kubewarden's resources.
pub const GROUP: &str = "policies.kubewarden.io";

/// One manifest and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// `<file>:<line>` of the document's first line.
    pub origin: String,
    /// The parsed document, or why it does not parse.
    pub value: Result<Value, String>,
    /// The document's comment lines (text after `#`, trimmed).
    pub comments: Vec<String>,
}

/// The Kubewarden manifests of a Markdown page: every document of every fenced block whose
/// info string starts with `yaml` or `yml`.
pub fn from_markdown(text: &str, file: &str) -> Vec<Written> {
    let mut out = Vec::new();
    let mut block: Option<(usize, Vec<&str>)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut block {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let info = info.trim().to_ascii_lowercase();
                    if info.starts_with("yaml") || info.starts_with("yml") {
                        block = Some((i + 2, Vec::new()));
                    } else if !info.is_empty() || trimmed == "```" {
                        // another language: skip to its closing fence
                        block = Some((0, Vec::new()));
                    }
                }
            }
            Some((start, lines)) => {
                if trimmed.starts_with("```") {
                    if *start > 0 {
                        let indent = lines
                            .iter()
                            .filter(|l| !l.trim().is_empty())
                            .map(|l| l.len() - l.trim_start().len())
                            .min()
                            .unwrap_or(0);
                        let body: Vec<&str> = lines
                            .iter()
                            .map(|l| l.get(indent..).unwrap_or(""))
                            .collect();
                        out.extend(documents(&body, file, *start));
                    }
                    block = None;
                } else {
                    lines.push(line);
                }
            }
        }
    }
    out
}

/// The Kubewarden manifests of a YAML file.
pub fn from_yaml(text: &str, file: &str) -> Vec<Written> {
    let lines: Vec<&str> = text.lines().collect();
    documents(&lines, file, 1)
}

/// The Kubewarden documents among `lines` (split at `---`), the first being line `first`.
fn documents(lines: &[&str], file: &str, first: usize) -> Vec<Written> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in (0..=lines.len()).filter(|&i| i == lines.len() || is_separator(lines, i)) {
        let doc = lines.get(start..end).unwrap_or_default();
        if let Some(written) = document(doc, &format!("{file}:{}", first + start)) {
            out.push(written);
        }
        start = end + 1;
    }
    out
}

fn is_separator(lines: &[&str], i: usize) -> bool {
    lines
        .get(i)
        .is_some_and(|l| l.trim_end() == "---" || l.starts_with("--- "))
}

/// One document, when it is (or tries to be) a Kubewarden manifest.
fn document(lines: &[&str], origin: &str) -> Option<Written> {
    let text = lines.join("\n");
    let names_group = lines.iter().any(|l| {
        l.trim_start()
            .strip_prefix("apiVersion:")
            .is_some_and(|v| v.trim().trim_matches(['"', '\'']).starts_with(GROUP))
    });
    let comments = lines
        .iter()
        .filter_map(|l| l.split_once('#').map(|(_, c)| c.trim().to_owned()))
        .filter(|c| !c.is_empty())
        .collect();
    match serde_yaml::from_str::<Value>(&text) {
        Ok(value) => {
            let group = value
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with(&format!("{GROUP}/")));
            group.then(|| Written {
                origin: origin.to_owned(),
                value: Ok(value),
                comments,
            })
        }
        Err(e) => names_group.then(|| Written {
            origin: origin.to_owned(),
            value: Err(format!("not valid YAML: {e}")),
            comments,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_kubewarden_document_of_yaml_blocks_only() {
        let md = "# T\n\n```yaml\napiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\n# no lookup of Namespace: none\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n---\napiVersion: policies.kubewarden.io/v1\nkind: PolicyServer\n```\n\n```console\napiVersion: policies.kubewarden.io/v1\n```\n\n  ```yml\n  apiVersion: policies.kubewarden.io/v1\n  kind: AdmissionPolicy\n  spec: [\n  ```\n";
        let found = from_markdown(md, "README.md");
        let origins: Vec<&str> = found.iter().map(|w| w.origin.as_str()).collect();
        assert_eq!(origins, vec!["README.md:4", "README.md:12", "README.md:21"]);
        assert_eq!(found[0].comments, vec!["no lookup of Namespace: none"]);
        assert_eq!(
            found[1].value.as_ref().ok().and_then(|v| v.get("kind")),
            Some(&Value::from("PolicyServer"))
        );
        assert!(
            found[2]
                .value
                .as_ref()
                .is_err_and(|e| e.starts_with("not valid YAML"))
        );
    }

    #[test]
    fn yaml_files_split_at_separators() {
        let y = "---\napiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\n---\napiVersion: policies.kubewarden.io/v1\nkind: AdmissionPolicy\n";
        let found = from_yaml(y, "x.yaml");
        let origins: Vec<&str> = found.iter().map(|w| w.origin.as_str()).collect();
        assert_eq!(origins, vec!["x.yaml:2", "x.yaml:5"]);
    }
}
