//! Kubewarden policy metadata: `metadata.yml` on disk or the
//! `io.kubewarden.metadata` custom section of an annotated module.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result, read_text};
use crate::wasm::{METADATA_SECTION, read_custom_section, set_custom_section};

/// Annotation under which `kwctl annotate -u README.md` stores the usage text.
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";

/// A Kubernetes resource type a policy may read through host callbacks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    /// `apiVersion` of the resource, e.g. `v1` or `apps/v1`.
    pub api_version: String,
    /// Kind of the resource, e.g. `Namespace`.
    pub kind: String,
}

fn default_true() -> bool {
    true
}

/// The parts of kwctl's metadata the host understands; every other key is
/// kept in [`Metadata::other`] so annotation does not lose anything.
///
/// ```
/// let m = policy_host::Metadata::from_yaml_str(
///     "rules: []\nmutating: true\ncontextAwareResources:\n- apiVersion: v1\n  kind: Namespace\n",
///     "inline",
/// ).unwrap();
/// assert!(m.mutating);
/// assert!(m.allows_resource("v1", "Namespace"));
/// assert!(!m.allows_resource("v1", "Pod"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Protocol version, filled by `annotate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Admission rules (kept as raw JSON).
    #[serde(default)]
    pub rules: Vec<Value>,
    /// Whether the policy may return a mutated object.
    #[serde(default)]
    pub mutating: bool,
    /// Whether the policy can be used by the audit scanner.
    #[serde(default = "default_true")]
    pub background_audit: bool,
    /// Resource types the policy may read through host callbacks.
    #[serde(default)]
    pub context_aware_resources: Vec<ContextAwareResource>,
    /// Execution mode (`kubewarden-wapc` for our policies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<String>,
    /// The host calls the module makes (`kubernetes/get_resource`, ...); kwctl warns when
    /// they differ from the calls it detects in the module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<Vec<String>>,
    /// The oldest Kubewarden release the policy runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
    /// Free-form annotations (`io.kubewarden.policy.*`, `io.artifacthub.*`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Every other key (policyType, ...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Metadata {
    /// Parses `metadata.yml` text (camelCase keys). `origin` names the
    /// document in error messages.
    pub fn from_yaml_str(text: &str, origin: &str) -> Result<Self> {
        serde_yaml::from_str(text).map_err(|e| Error::parse(origin, e))
    }

    /// Reads and parses a `metadata.yml` file.
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_yaml_str(&read_text(path)?, &path.display().to_string())
    }

    /// Reads the metadata embedded by `kwctl annotate` (or
    /// [`annotate`]) in a module, `None` if the module is not annotated.
    pub fn from_wasm(module: &[u8]) -> Result<Option<Self>> {
        match read_custom_section(module, METADATA_SECTION)? {
            None => Ok(None),
            Some(payload) => serde_json::from_slice(payload)
                .map(Some)
                .map_err(|e| Error::parse(format!("custom section {METADATA_SECTION}"), e)),
        }
    }

    /// Whether the metadata lets the module call `capability` (`kubernetes/get_resource`):
    /// without `hostCapabilities`, every call is allowed (kwctl's and policy-server's default).
    pub fn allows_capability(&self, capability: &str) -> bool {
        self.host_capabilities
            .as_ref()
            .is_none_or(|declared| declared.iter().any(|c| c == capability))
    }

    /// Whether host callbacks may read resources of this type.
    pub fn allows_resource(&self, api_version: &str, kind: &str) -> bool {
        self.context_aware_resources
            .iter()
            .any(|r| r.api_version == api_version && r.kind == kind)
    }
}

/// File beside `metadata.yml` holding a policy's opt-in rule sets.
pub const OPTIONAL_RULES_FILE: &str = "optional-rules.yml";

/// A policy's opt-in rule sets (`optional-rules.yml`): name (`legacy-ingress`, `openshift`) →
/// admission rules a binding adds only on clusters that serve their API versions.
pub type OptionalRules = BTreeMap<String, Vec<Value>>;

/// Parses `optional-rules.yml` text; `origin` names it in error messages.
///
/// ```
/// let r = policy_host::metadata::optional_rules_from_yaml_str(
///     "openshift:\n- {apiGroups: [project.openshift.io], apiVersions: [v1], resources: [projects], operations: [CREATE]}\n",
///     "inline",
/// ).unwrap();
/// assert_eq!(r["openshift"].len(), 1);
/// ```
pub fn optional_rules_from_yaml_str(text: &str, origin: &str) -> Result<OptionalRules> {
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Ok(OptionalRules::new());
    }
    serde_yaml::from_str(text).map_err(|e| Error::parse(origin, e))
}

/// The opt-in rule sets of the policy in `dir`, empty without `optional-rules.yml`.
pub fn read_optional_rules(dir: &Path) -> Result<OptionalRules> {
    let path = dir.join(OPTIONAL_RULES_FILE);
    if !path.exists() {
        return Ok(OptionalRules::new());
    }
    optional_rules_from_yaml_str(&read_text(&path)?, &path.display().to_string())
}

/// Produces the annotated module, as `kwctl annotate` does: `metadata` gets
/// `protocolVersion` (as answered by the module), the kwctl defaults
/// (`executionMode: kubewarden-wapc`, `policyType: kubernetes`) and, when
/// given, the usage text; it is embedded as compact JSON in the custom
/// section `io.kubewarden.metadata`, replacing any previous one.
pub fn annotate(
    module: &[u8],
    mut metadata: Metadata,
    protocol_version: &str,
    usage: Option<&str>,
) -> Result<Vec<u8>> {
    metadata.protocol_version = Some(protocol_version.to_owned());
    if metadata.execution_mode.is_none() {
        metadata.execution_mode = Some("kubewarden-wapc".to_owned());
    }
    metadata
        .other
        .entry("policyType".to_owned())
        .or_insert_with(|| Value::String("kubernetes".to_owned()));
    if let Some(usage) = usage {
        metadata
            .annotations
            .insert(USAGE_ANNOTATION.to_owned(), usage.to_owned());
    }
    let payload = serde_json::to_vec(&metadata)
        .map_err(|e| Error::Invalid(format!("cannot serialize metadata: {e}")))?;
    set_custom_section(module, METADATA_SECTION, &payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
rules:
- apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods"]
  operations: ["CREATE", "UPDATE"]
mutating: false
backgroundAudit: true
contextAwareResources:
- apiVersion: v1
  kind: Namespace
executionMode: kubewarden-wapc
annotations:
  io.kubewarden.policy.title: pod-toleration
hostCapabilities: ["kubernetes/get_resource"]
"#;

    #[test]
    fn parses_yaml_and_keeps_unknown_keys() {
        let m = Metadata::from_yaml_str(YAML, "t").unwrap();
        assert!(!m.mutating);
        assert_eq!(m.rules.len(), 1);
        assert!(m.allows_resource("v1", "Namespace"));
        assert!(!m.allows_resource("apps/v1", "Namespace"));
        assert_eq!(
            m.host_capabilities.as_deref(),
            Some(&["kubernetes/get_resource".to_owned()][..])
        );
        assert!(m.allows_capability("kubernetes/get_resource"));
        assert!(!m.allows_capability("kubernetes/list_resources_all"));
        assert!(Metadata::default().allows_capability("kubernetes/list_resources_all"));
    }

    #[test]
    fn annotate_round_trip() {
        let module = b"\0asm\x01\0\0\0".to_vec();
        let m = Metadata::from_yaml_str(YAML, "t").unwrap();
        let annotated = annotate(&module, m.clone(), "v1", Some("# usage")).unwrap();
        let back = Metadata::from_wasm(&annotated).unwrap().unwrap();
        assert_eq!(back.protocol_version.as_deref(), Some("v1"));
        assert_eq!(back.context_aware_resources, m.context_aware_resources);
        assert_eq!(back.annotations[USAGE_ANNOTATION], "# usage");
        assert_eq!(back.other["policyType"], "kubernetes");
        assert_eq!(back.host_capabilities, m.host_capabilities);
        // compact JSON with camelCase keys
        let raw = read_custom_section(&annotated, METADATA_SECTION)
            .unwrap()
            .unwrap();
        let text = std::str::from_utf8(raw).unwrap();
        assert!(text.contains("\"contextAwareResources\":[{\"apiVersion\":\"v1\""));
        assert!(!text.contains('\n'));
        // re-annotating replaces the section
        let again = annotate(&annotated, Metadata::default(), "v1", None).unwrap();
        let back = Metadata::from_wasm(&again).unwrap().unwrap();
        assert!(back.context_aware_resources.is_empty());
    }

    #[test]
    fn plain_module_has_no_metadata() {
        assert_eq!(Metadata::from_wasm(b"\0asm\x01\0\0\0").unwrap(), None);
    }
}
