//! Violations and the verdict builder: reject with every violation, accept with warnings,
//! or mutate.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use kubewarden_policy_sdk::response::ValidationResponse;
use serde_json::Value;

use crate::mutation::Step;
use policy_decode::error::PolicyError;
use policy_decode::path::FieldPath;

/// One broken rule: `<path>: <problem>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Violation {
    /// Where the offending value is.
    pub path: FieldPath,
    /// The value found and what is allowed.
    pub problem: String,
}

/// `violations` with each repeated violation kept once, in order of first occurrence (one
/// hash set: a 1 MiB object can break a rule thousands of times).
///
/// ```
/// use policy_decode::FieldPath;
/// use policy_admission::{Violation, verdict::distinct};
/// let v = |p: &str| Violation { path: FieldPath::root(p), problem: "bad".into() };
/// assert_eq!(distinct(vec![v("a"), v("b"), v("a")]), vec![v("a"), v("b")]);
/// ```
pub fn distinct(violations: Vec<Violation>) -> Vec<Violation> {
    let mut seen: HashSet<&Violation> = HashSet::with_capacity(violations.len());
    let first: Vec<bool> = violations.iter().map(|v| seen.insert(v)).collect();
    violations
        .into_iter()
        .zip(first)
        .filter_map(|(v, first)| first.then_some(v))
        .collect()
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

/// Whether violations reject the request or only warn (`docs/semantics.md#warnings-and-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Violations reject.
    #[default]
    Enforce,
    /// Violations become warnings; nothing is mutated.
    Warn,
}

/// One change of the request's object recorded by [`Verdict::edit_set`] or
/// [`Verdict::edit_push`].
#[derive(Clone, Debug, PartialEq)]
enum Edit {
    /// [`crate::mutation::set`]
    Set(Vec<&'static str>, String, Value),
    /// [`crate::mutation::push`]
    Push(Vec<&'static str>, String, Value),
    /// [`crate::mutation::set_in`]
    SetIn(Vec<Step>, String, Value),
}

/// The outcome of one evaluation, built up while the rules run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    violations: Vec<Violation>,
    warnings: Vec<String>,
    /// The warnings added by [`Verdict::warn_once`].
    warned: HashSet<String>,
    mutated: Option<Value>,
    edits: Vec<Edit>,
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

    /// Adds a warning unless the same text was already added (one hash lookup: a request
    /// with thousands of skipped checks costs linear time).
    pub fn warn_once(&mut self, warning: impl Into<String>) {
        let warning = warning.into();
        if self.warned.insert(warning.clone()) {
            self.warnings.push(warning);
        }
    }

    /// Sets the object to return as mutated (the host diffs it into a JSON Patch).
    pub fn mutate(&mut self, object: Value) {
        self.mutated = Some(object);
    }

    /// Records that `key` of the map at `path` in the request's object is set to `value`
    /// ([`crate::mutation::set`]). Edits are applied to the request's own object when the
    /// verdict becomes the response ([`Verdict::into_response_for`]): a mutating policy does
    /// not copy the object it read.
    pub fn edit_set(&mut self, path: &[&'static str], key: &str, value: Value) {
        self.edits
            .push(Edit::Set(path.to_vec(), key.to_owned(), value));
    }

    /// Records that `value` is appended to the list `key` of the map at `path` in the
    /// request's object ([`crate::mutation::push`]); see [`Verdict::edit_set`].
    pub fn edit_push(&mut self, path: &[&'static str], key: &str, value: Value) {
        self.edits
            .push(Edit::Push(path.to_vec(), key.to_owned(), value));
    }

    /// Records that `key` of the map reached by `steps` (list indices included, e.g. one
    /// container's `resources.limits`) is set to `value` ([`crate::mutation::set_in`]); see
    /// [`Verdict::edit_set`].
    pub fn edit_set_in(&mut self, steps: Vec<Step>, key: &str, value: Value) {
        self.edits.push(Edit::SetIn(steps, key.to_owned(), value));
    }

    /// Whether edits of the request's object were recorded.
    pub fn has_edits(&self) -> bool {
        !self.edits.is_empty()
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

    /// [`Verdict::into_response`] for a request whose object is `object`: recorded edits
    /// ([`Verdict::edit_set`]) are applied to it when the response accepts with a mutation.
    /// An edit whose path is not a map is a malformed object (400).
    pub fn into_response_for(
        mut self,
        mode: Mode,
        object: Value,
    ) -> Result<ValidationResponse, PolicyError> {
        let edits = std::mem::take(&mut self.edits);
        if !edits.is_empty() && mode == Mode::Enforce && self.violations.is_empty() {
            let mut object = self.mutated.take().unwrap_or(object);
            for edit in edits {
                match edit {
                    Edit::Set(path, key, value) => {
                        crate::mutation::set(&mut object, &path, &key, value)?
                    }
                    Edit::Push(path, key, value) => {
                        crate::mutation::push(&mut object, &path, &key, value)?
                    }
                    Edit::SetIn(steps, key, value) => {
                        crate::mutation::set_in(&mut object, &steps, &key, value)?
                    }
                }
            }
            self.mutated = Some(object);
        } else {
            crate::teardown::release(object);
        }
        Ok(self.into_response(mode))
    }

    /// The response sent to the host under `mode`: in `Enforce` violations reject (403) and
    /// no mutation is applied; in `Warn` they become warnings and nothing is mutated. Edits
    /// ([`Verdict::edit_set`]) need the request's object: see [`Verdict::into_response_for`].
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
    fn edits_apply_to_the_request_object_only_when_accepting() {
        let object = json!({"spec": {"containers": [], "tolerations": [{"key": "a"}]}});
        let mut v = Verdict::accept();
        v.edit_set(&["spec"], "runtimeClassName", json!("gvisor"));
        v.edit_set(&["spec", "nodeSelector"], "pool", json!("x"));
        v.edit_push(&["spec"], "tolerations", json!({"key": "b"}));
        assert!(v.has_edits());
        let r = v
            .clone()
            .into_response_for(Mode::Enforce, object.clone())
            .unwrap();
        assert_eq!(
            r.mutated_object,
            Some(
                json!({"spec": {"containers": [], "runtimeClassName": "gvisor",
                "nodeSelector": {"pool": "x"}, "tolerations": [{"key": "a"}, {"key": "b"}]}})
            )
        );
        let r = v
            .clone()
            .into_response_for(Mode::Warn, object.clone())
            .unwrap();
        assert!(r.accepted && r.mutated_object.is_none());
        let mut rejected = v.clone();
        rejected.violation(&FieldPath::root("a"), "bad");
        let r = rejected.into_response_for(Mode::Enforce, object).unwrap();
        assert!(!r.accepted && r.mutated_object.is_none());
        let err = v
            .into_response_for(Mode::Enforce, json!({"spec": 1}))
            .unwrap_err();
        assert_eq!(err.to_string(), "spec: expected an object");
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
