//! Kubernetes label and field selector strings, as the API server
//! evaluates them for list calls.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::{Error, Result};

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector: requirements joined by AND.
///
/// Syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
/// comma-separated. The empty selector matches everything.
///
/// ```
/// use serde_json::json;
/// let s = policy_host::LabelSelector::parse("env in (prod,staging),!legacy,team").unwrap();
/// assert!(s.matches(&json!({"env": "prod", "team": "a"})));
/// assert!(!s.matches(&json!({"env": "prod", "team": "a", "legacy": "1"})));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn parse_set(text: &str, selector: &str) -> Result<BTreeSet<String>> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| {
            Error::parse(
                format!("label selector `{selector}`"),
                "expected a parenthesized list of values",
            )
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    /// Parses a label selector string.
    pub fn parse(selector: &str) -> Result<Self> {
        let origin = || format!("label selector `{selector}`");
        let mut requirements = Vec::new();
        if selector.trim().is_empty() {
            return Ok(LabelSelector { requirements });
        }
        for term in split_top_level(selector) {
            let term = term.trim();
            let req = if let Some(key) = term.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_owned())
            } else if let Some((key, rest)) = term.split_once(char::is_whitespace) {
                let rest = rest.trim_start();
                if let Some(values) = rest.strip_prefix("notin") {
                    Requirement::NotIn(key.to_owned(), parse_set(values, selector)?)
                } else if let Some(values) = rest.strip_prefix("in") {
                    Requirement::In(key.to_owned(), parse_set(values, selector)?)
                } else {
                    Self::parse_equality(term, selector)?
                }
            } else if term.contains('=') {
                Self::parse_equality(term, selector)?
            } else {
                Requirement::Exists(term.to_owned())
            };
            let key = match &req {
                Requirement::Equals(k, _)
                | Requirement::NotEquals(k, _)
                | Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Exists(k)
                | Requirement::NotExists(k) => k,
            };
            if !valid_key(key) {
                return Err(Error::parse(origin(), format!("invalid label key `{key}`")));
            }
            requirements.push(req);
        }
        Ok(LabelSelector { requirements })
    }

    fn parse_equality(term: &str, selector: &str) -> Result<Requirement> {
        if let Some((k, v)) = term.split_once("!=") {
            Ok(Requirement::NotEquals(
                k.trim().to_owned(),
                v.trim().to_owned(),
            ))
        } else if let Some((k, v)) = term.split_once("==") {
            Ok(Requirement::Equals(
                k.trim().to_owned(),
                v.trim().to_owned(),
            ))
        } else if let Some((k, v)) = term.split_once('=') {
            Ok(Requirement::Equals(
                k.trim().to_owned(),
                v.trim().to_owned(),
            ))
        } else {
            Err(Error::parse(
                format!("label selector `{selector}`"),
                format!("cannot parse requirement `{term}`"),
            ))
        }
    }

    /// Whether an object's labels (a JSON map, or null) satisfy the selector.
    pub fn matches(&self, labels: &Value) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(x)),
            Requirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.contains(x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector: `path=value`, `path==value`, `path!=value`,
/// comma-separated AND. Paths are dotted (`metadata.name`,
/// `metadata.namespace`, `spec.nodeName`, `status.phase`); a missing field
/// compares as the empty string.
///
/// ```
/// use serde_json::json;
/// let s = policy_host::FieldSelector::parse("metadata.namespace=a,metadata.name!=b").unwrap();
/// assert!(s.matches(&json!({"metadata": {"namespace": "a", "name": "c"}})));
/// assert!(!s.matches(&json!({"metadata": {"namespace": "a", "name": "b"}})));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses a field selector string.
    pub fn parse(selector: &str) -> Result<Self> {
        let mut terms = Vec::new();
        if selector.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for term in selector.split(',') {
            let term = term.trim();
            let (path, equal, value) = if let Some((p, v)) = term.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = term.split_once("==") {
                (p, true, v)
            } else if let Some((p, v)) = term.split_once('=') {
                (p, true, v)
            } else {
                return Err(Error::parse(
                    format!("field selector `{selector}`"),
                    format!("cannot parse requirement `{term}`"),
                ));
            };
            terms.push((path.trim().to_owned(), equal, value.trim().to_owned()));
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the object satisfies the selector.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(path, equal, value)| {
            let found = path
                .split('.')
                .try_fold(object, |v, seg| v.get(seg))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            (found == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case("", true)]
    #[case("env=prod", true)]
    #[case("env==prod", true)]
    #[case("env = prod", true)]
    #[case("env=dev", false)]
    #[case("env!=dev", true)]
    #[case("missing!=x", true)]
    #[case("env in (prod, staging)", true)]
    #[case("env in (dev)", false)]
    #[case("env notin (dev)", true)]
    #[case("env notin (prod)", false)]
    #[case("missing notin (prod)", true)]
    #[case("missing in (prod)", false)]
    #[case("team", true)]
    #[case("missing", false)]
    #[case("!missing", true)]
    #[case("!team", false)]
    #[case("env=prod,team=a", true)]
    #[case("env=prod,team=b", false)]
    #[case("env in (prod,staging),team notin (b,c),!legacy", true)]
    #[case("app.kubernetes.io/name=web", true)]
    fn label_selectors(#[case] selector: &str, #[case] expected: bool) {
        let labels = json!({"env": "prod", "team": "a", "app.kubernetes.io/name": "web"});
        let s = LabelSelector::parse(selector).unwrap();
        assert_eq!(s.matches(&labels), expected, "{selector}");
    }

    #[test]
    fn label_selector_null_labels() {
        assert!(LabelSelector::parse("!a").unwrap().matches(&Value::Null));
        assert!(!LabelSelector::parse("a").unwrap().matches(&Value::Null));
    }

    #[rstest]
    #[case("env in prod")]
    #[case("env in (prod")]
    #[case("bad key=x")]
    #[case("=x")]
    fn bad_label_selectors(#[case] selector: &str) {
        assert!(LabelSelector::parse(selector).is_err(), "{selector}");
    }

    #[rstest]
    #[case("metadata.name=web", true)]
    #[case("metadata.name==web", true)]
    #[case("metadata.name!=web", false)]
    #[case("metadata.namespace=team-a", true)]
    #[case("metadata.namespace=team-a,metadata.name=db", false)]
    #[case("spec.nodeName=", true)]
    #[case("status.phase=Running", true)]
    #[case("spec.replicas=3", true)]
    fn field_selectors(#[case] selector: &str, #[case] expected: bool) {
        let obj = json!({"metadata": {"name": "web", "namespace": "team-a"},
                         "spec": {"replicas": 3}, "status": {"phase": "Running"}});
        assert_eq!(
            FieldSelector::parse(selector).unwrap().matches(&obj),
            expected,
            "{selector}"
        );
    }

    #[test]
    fn bad_field_selector() {
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
