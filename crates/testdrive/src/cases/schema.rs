//! What a case file may say: the case file, its defaults, its cases and their expectations.

use serde::Deserialize;
use serde_json::Value;

/// A request given by path (relative to the file) or inline.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RequestSpec {
    /// Path of a JSON (or YAML) AdmissionRequest / AdmissionReview file.
    Path(String),
    /// The AdmissionRequest (or AdmissionReview) itself.
    Inline(serde_json::Map<String, Value>),
}

/// Fields shared by cases, defaults and bench entries.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseDefaults {
    /// Policy settings (default `{}`).
    #[serde(default)]
    pub settings: Option<Value>,
    /// The admission request.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// RFC 7386 merge patch applied to the request.
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// kwctl replay session file.
    #[serde(default)]
    pub replay: Option<String>,
    /// Objects that exist in the cluster.
    #[serde(default)]
    pub cluster: Option<Vec<Value>>,
}

/// The expected outcome of a case.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// The verdict; required unless `settingsValid: false`.
    #[serde(default)]
    pub allowed: Option<bool>,
    /// Exact status code.
    #[serde(default)]
    pub code: Option<u16>,
    /// Substring of the message.
    #[serde(default)]
    pub message: Option<String>,
    /// Several substrings, all required.
    #[serde(default)]
    pub messages: Option<Vec<String>>,
    /// The exact message.
    #[serde(default, alias = "message_exact")]
    pub message_exact: Option<String>,
    /// The message must be absent.
    #[serde(default, alias = "no_message")]
    pub no_message: bool,
    /// The exact JSON Patch (`[]` = no mutation).
    #[serde(default)]
    pub patch: Option<Vec<Value>>,
    /// No mutation.
    #[serde(default, alias = "no_patch")]
    pub no_patch: bool,
    /// Each fragment must be a substring of some warning.
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
    /// Exact number of warnings.
    #[serde(default, alias = "warnings_count")]
    pub warnings_count: Option<usize>,
    /// No warning at all.
    #[serde(default, alias = "no_warnings")]
    pub no_warnings: bool,
    /// `false`: a settings-validation case.
    #[serde(default, alias = "settings_valid")]
    pub settings_valid: Option<bool>,
}

/// One case as written in a case file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    /// Unique name within the policy.
    pub name: String,
    /// Free text for readers; ignored by the runner.
    #[serde(default)]
    pub description: Option<String>,
    /// Policy settings (replacing the defaults' ones).
    #[serde(default)]
    pub settings: Option<Value>,
    /// RFC 7386 merge patch applied to the settings (the case's, else the defaults').
    #[serde(default)]
    pub settings_override: Option<Value>,
    /// RFC 6902 JSON Patch applied to the settings after `settingsOverride`, for edits inside
    /// lists (`[{op: add, path: /profiles/0/spec/privileged, value: true}]`).
    #[serde(default)]
    pub settings_patch: Option<json_patch::Patch>,
    /// The admission request.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// RFC 7386 merge patch applied to the request (after the defaults' one).
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// kwctl replay session file.
    #[serde(default)]
    pub replay: Option<String>,
    /// Objects that exist in the cluster.
    #[serde(default)]
    pub cluster: Option<Vec<Value>>,
    /// Expected outcome.
    pub expect: Expect,
    /// `false` disables the automatic idempotence check of mutations.
    #[serde(default)]
    pub idempotent: Option<bool>,
}

/// A case file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// Defaults merged into every case.
    #[serde(default)]
    pub defaults: Option<CaseDefaults>,
    /// The cases.
    pub cases: Vec<Case>,
}
