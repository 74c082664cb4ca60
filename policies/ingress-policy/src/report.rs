//! The violations of one request, listed in document order (`docs/semantics.md#messages`):
//! the rules run in a fixed order, and each violation is filed under the part of the
//! Ingress it names; the parts are then ordered as the request's object orders its keys.

use policy_admission::{Verdict, Violation};
use policy_decode::FieldPath;
use serde_json::Value;

/// The parts of an Ingress whose violations are listed together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `metadata` (the class annotation).
    Metadata,
    /// `spec.ingressClassName`.
    ClassName,
    /// The default backend (`spec.defaultBackend` or `spec.backend`).
    Backend,
    /// `spec.tls[j]`.
    Tls(usize),
    /// `spec.rules[i]`.
    Rules(usize),
}

/// The violations found so far, each with its part.
#[derive(Debug, Default)]
pub struct Report {
    items: Vec<(Part, Violation)>,
}

impl Report {
    /// Records a violation at `path`, in part `part`.
    pub fn violation(&mut self, part: Part, path: &FieldPath, problem: impl Into<String>) {
        self.items.push((
            part,
            Violation {
                path: path.clone(),
                problem: problem.into(),
            },
        ));
    }

    /// Moves the violations into `verdict`, ordered by where their parts sit in `object`
    /// (list elements by index; the order in which rules recorded them within one part is
    /// kept).
    pub fn into_verdict(mut self, object: &Value, backend: &str, verdict: &mut Verdict) {
        let rank = |part: Part| -> (usize, usize, usize) {
            let (top, inner, index) = match part {
                Part::Metadata => ("metadata", None, 0),
                Part::ClassName => ("spec", Some("ingressClassName"), 0),
                Part::Backend => ("spec", Some(backend), 0),
                Part::Tls(j) => ("spec", Some("tls"), j),
                Part::Rules(i) => ("spec", Some("rules"), i),
            };
            let at = |map: Option<&Value>, key: &str| {
                map.and_then(Value::as_object)
                    .and_then(|m| m.keys().position(|k| k == key))
                    .unwrap_or(usize::MAX)
            };
            let inner = inner.map_or(0, |key| at(object.get("spec"), key));
            (at(Some(object), top), inner, index)
        };
        self.items.sort_by_cached_key(|(part, _)| rank(*part));
        verdict.extend(self.items.into_iter().map(|(_, v)| v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_follow_the_document() {
        let object: Value = serde_json::from_str(
            r#"{"spec": {"rules": [], "tls": [], "ingressClassName": "x"}, "metadata": {}}"#,
        )
        .unwrap();
        let mut report = Report::default();
        for (part, path) in [
            (Part::Metadata, "metadata.annotations"),
            (Part::ClassName, "spec.ingressClassName"),
            (Part::Rules(1), "spec.rules[1]"),
            (Part::Tls(0), "spec.tls[0].hosts[0]"),
            (Part::Rules(0), "spec.rules[0].host"),
            (Part::Rules(0), "spec.rules[0]"),
        ] {
            report.violation(part, &FieldPath::dotted(path), "bad");
        }
        let mut verdict = Verdict::accept();
        report.into_verdict(&object, "defaultBackend", &mut verdict);
        assert_eq!(
            verdict.message(),
            "spec.rules[0].host: bad; spec.rules[0]: bad; spec.rules[1]: bad; spec.tls[0].hosts[0]: bad; spec.ingressClassName: bad; metadata.annotations: bad"
        );
    }
}
