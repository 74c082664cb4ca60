//! Violations and the verdict builder: reject with every violation, accept with warnings,
//! or mutate.

use std::collections::BTreeMap;
use std::fmt;

use kubewarden_policy_sdk::response::ValidationResponse;
use serde_json::Value;

use crate::error::PolicyError;
use crate::path::FieldPath;

/// One broken rule: `<path>: <problem>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where the offending value is.
    pub path: FieldPath,
    /// The value found and what is allowed.
    pub problem: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.path, self.problem)
        }
    }
}

/// Whether violations reject the request or only warn (SPEC 2.12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Violations reject.
    #[default]
    Enforce,
    /// Violations become warnings; nothing is mutated.
    Warn,
}

/// The outcome of one evaluation, built up while the rules run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    violations: Vec<Violation>,
    warnings: Vec<String>,
    mutated: Option<Value>,
    audit_annotations: BTreeMap<String, String>,
}

impl Verdict {
    /// An accepting verdict with nothing to report yet.
    pub fn accept() -> Self {
        Verdict::default()
    }

    /// Records a violation at `path`.
    pub fn violation(&mut self, path: &FieldPath, problem: impl Into<String>) {
        self.violations.push(Violation {
            path: path.clone(),
            problem: problem.into(),
        });
    }

    /// Records already-built violations.
    pub fn extend(&mut self, violations: impl IntoIterator<Item = Violation>) {
        self.violations.extend(violations);
    }

    /// Adds a warning returned to the client.
    pub fn warn(&mut self, warning: impl Into<String>) {
        self.warnings.push(warning.into());
    }

    /// Sets the object to return as mutated (the host diffs it into a JSON Patch).
    pub fn mutate(&mut self, object: Value) {
        self.mutated = Some(object);
    }

    /// Adds an audit annotation.
    pub fn annotate(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.audit_annotations.insert(key.into(), value.into());
    }

    /// The violations recorded so far, in order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The warnings recorded so far.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The mutated object, if any.
    pub fn mutated(&self) -> Option<&Value> {
        self.mutated.as_ref()
    }

    /// Whether no violation was recorded.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// The rejection message: every violation, `; `-separated, in order.
    pub fn message(&self) -> String {
        let mut out = String::new();
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_str(&v.to_string());
        }
        out
    }

    /// The response sent to the host under `mode`: in `Enforce` violations reject (403) and
    /// no mutation is applied; in `Warn` they become warnings and nothing is mutated.
    pub fn into_response(self, mode: Mode) -> ValidationResponse {
        let audit = if self.audit_annotations.is_empty() {
            None
        } else {
            Some(self.audit_annotations.clone().into_iter().collect())
        };
        match mode {
            Mode::Enforce if !self.violations.is_empty() => ValidationResponse {
                accepted: false,
                message: Some(self.message()),
                code: Some(403),
                mutated_object: None,
                audit_annotations: audit,
                warnings: non_empty(self.warnings),
            },
            Mode::Enforce => ValidationResponse {
                accepted: true,
                message: None,
                code: None,
                mutated_object: self.mutated,
                audit_annotations: audit,
                warnings: non_empty(self.warnings),
            },
            Mode::Warn => {
                let mut warnings = self.warnings;
                warnings.extend(self.violations.iter().map(ToString::to_string));
                ValidationResponse {
                    accepted: true,
                    message: None,
                    code: None,
                    mutated_object: None,
                    audit_annotations: audit,
                    warnings: non_empty(warnings),
                }
            }
        }
    }
}

fn non_empty(v: Vec<String>) -> Option<Vec<String>> {
    if v.is_empty() { None } else { Some(v) }
}

/// The rejection for an evaluation that could not reach a verdict.
pub fn error_response(err: &PolicyError) -> ValidationResponse {
    ValidationResponse {
        accepted: false,
        message: Some(err.to_string()),
        code: Some(err.code()),
        mutated_object: None,
        audit_annotations: None,
        warnings: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_all_violations_in_order() {
        let mut v = Verdict::accept();
        v.violation(&FieldPath::root("a"), "first");
        v.violation(&FieldPath::root("b"), "second");
        v.mutate(json!({"x": 1}));
        let r = v.into_response(Mode::Enforce);
        assert!(!r.accepted);
        assert_eq!(r.message.as_deref(), Some("a: first; b: second"));
        assert_eq!(r.code, Some(403));
        assert!(
            r.mutated_object.is_none(),
            "a rejection applies no mutation"
        );
    }

    #[test]
    fn warn_mode_turns_violations_into_warnings() {
        let mut v = Verdict::accept();
        v.warn("lookup skipped");
        v.violation(&FieldPath::root("a"), "bad");
        v.mutate(json!({}));
        let r = v.into_response(Mode::Warn);
        assert!(r.accepted);
        assert!(r.mutated_object.is_none());
        assert_eq!(
            r.warnings,
            Some(vec!["lookup skipped".to_string(), "a: bad".to_string()])
        );
    }

    #[test]
    fn clean_verdict_mutates() {
        let mut v = Verdict::accept();
        v.mutate(json!({"x": 1}));
        let r = v.into_response(Mode::Enforce);
        assert!(r.accepted);
        assert_eq!(r.mutated_object, Some(json!({"x": 1})));
        assert!(r.warnings.is_none());
    }
}
