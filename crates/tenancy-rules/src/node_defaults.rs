//! The node selector a namespace defaults to: `defaultNodeSelector` from the settings,
//! replaced in a namespace by an annotation `key=value[,key=value]` (APPUiO's
//! `defaultNodeSelectorAnnotation`, Kubernetes' PodNodeSelector format). Shared by the
//! policies that write or assume a Pod's node selector.

use std::collections::HashMap;
use std::fmt;

use crate::class::skip_on_lookup_error;
use kube_values::labels::{check_label, is_label_key, is_label_value};
use kube_values::list::comma_separated;
use policy_admission::cluster::{Lookups, OnLookupError};
use policy_admission::metadata::namespace_annotation;
use policy_admission::request::AdmissionRequest;
use policy_admission::verdict::Verdict;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::names::NameMap;
use policy_decode::path::FieldPath;
use policy_decode::settings::is_reread;

/// Why a node selector `key=value[,key=value]` does not parse: its element at `index`
/// (0-based, among the comma-separated elements, [`comma_separated`]) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    /// The element's index.
    pub index: usize,
    /// The element, trimmed.
    pub element: String,
    /// What is wrong with it.
    pub problem: SelectorProblem,
}

/// What is wrong with one element of a node selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectorProblem {
    /// Nothing between two commas, or before the first or after the last one.
    Empty,
    /// No `=`.
    NoEquals,
    /// More than one `=` (`a==b`, `a=b=c`).
    SeveralEquals,
    /// The key (trimmed) is not a label key.
    Key(String),
    /// The value (trimmed) is not a label value.
    Value(String),
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (i, element) = (self.index, &self.element);
        match &self.problem {
            SelectorProblem::Empty => write!(f, "element [{i}] is empty"),
            SelectorProblem::NoEquals => write!(f, "element [{i}] {element:?} has no \"=\""),
            SelectorProblem::SeveralEquals => {
                write!(f, "element [{i}] {element:?} has more than one \"=\"")
            }
            SelectorProblem::Key(k) => {
                write!(
                    f,
                    "element [{i}] {element:?}: {k:?} is not a valid label key"
                )
            }
            SelectorProblem::Value(v) => {
                write!(
                    f,
                    "element [{i}] {element:?}: {v:?} is not a valid label value"
                )
            }
        }
    }
}

/// Parses `k=v,k2=v2` as Kubernetes' `labels.ConvertSelectorToLabelsMap` does (APPUiO and
/// PodNodeSelector use it): elements split by [`comma_separated`], each exactly one `=`,
/// key and value trimmed, a valid label key and label value; an empty element (`a=b,`,
/// `,a=b`, `a=b,,c=d`) has no `=` and is refused. The first element that does not parse is
/// the error. A repeated key keeps its last value at the position of its first occurrence.
///
/// An empty text is the empty map, as in Kubernetes; so is a text of only whitespace, which
/// Kubernetes refuses, but [`namespace_default`] reads a blank annotation as absent before
/// it would parse one.
pub fn parse_selector(text: &str) -> Result<NameMap, SelectorError> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    let mut positions: HashMap<&str, usize> = HashMap::new();
    for (index, item) in comma_separated(text) {
        let refused = |problem| SelectorError {
            index,
            element: item.to_owned(),
            problem,
        };
        if item.is_empty() {
            return Err(refused(SelectorProblem::Empty));
        }
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| refused(SelectorProblem::NoEquals))?;
        if v.contains('=') {
            return Err(refused(SelectorProblem::SeveralEquals));
        }
        let (k, v) = (k.trim(), v.trim());
        if !is_label_key(k) {
            return Err(refused(SelectorProblem::Key(k.to_owned())));
        }
        if !is_label_value(v) {
            return Err(refused(SelectorProblem::Value(v.to_owned())));
        }
        match positions.get(k).and_then(|&i| pairs.get_mut(i)) {
            Some(pair) => pair.1 = v,
            None => {
                positions.insert(k, pairs.len());
                pairs.push((k, v));
            }
        }
    }
    Ok(pairs.into_iter().collect())
}

/// Refuses invalid label keys and values and repeated keys of the settings map `name`.
/// Skipped when settings are re-read (`validate`): the host validated them when it loaded
/// the policy, and these checks cannot change a verdict.
pub fn check_pairs(name: &str, map: &NameMap) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    if let Some(i) = map.first_duplicate() {
        let key = map.iter().nth(i).map(|(k, _)| k).unwrap_or_default();
        return Err(SettingsError::new(
            format!("{name}[{key:?}]"),
            "repeated key",
        ));
    }
    for (k, v) in map.iter() {
        check_label(name, k, v)?;
    }
    Ok(())
}

/// Refuses an annotation name (setting `name`) that is not a valid annotation key.
pub fn check_annotation(name: &str, annotation: Option<&str>) -> Result<(), SettingsError> {
    match annotation {
        Some(a) if !is_label_key(a) => Err(SettingsError::new(
            name,
            format!("{a:?} is not a valid annotation key"),
        )),
        _ => Ok(()),
    }
}

/// The default node selector of the request's namespace: the namespace `annotation` when
/// configured, present and non-empty, else `default`. `None` when the rule is skipped: an
/// invalid annotation (recorded as a violation naming it) or a failed Namespace lookup with
/// `onLookupError: accept` (recorded as a warning). Without `annotation` nothing is read.
pub fn namespace_default(
    request: &AdmissionRequest,
    default: &NameMap,
    annotation: Option<&str>,
    on_error: OnLookupError,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<Option<NameMap>, PolicyError> {
    let Some(annotation) = annotation else {
        return Ok(Some(default.clone()));
    };
    let namespace = request.namespace()?;
    let text = match namespace_annotation(namespace, annotation, lookups) {
        Ok(text) => text.map(str::trim).filter(|t| !t.is_empty()),
        Err(e) => {
            skip_on_lookup_error(e, &FieldPath::empty(), on_error, verdict)?;
            return Ok(None);
        }
    };
    let Some(text) = text else {
        return Ok(Some(default.clone()));
    };
    match parse_selector(text) {
        Ok(pairs) => Ok(Some(pairs)),
        Err(problem) => {
            verdict.violation(
                &FieldPath::empty(),
                format!(
                    "namespace {namespace:?} annotation {annotation}: invalid selector {text:?} (expected key=value[,key=value]): {problem}"
                ),
            );
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use serde_json::{Value, json};

    fn pairs(text: &str) -> Option<Vec<(String, String)>> {
        parse_selector(text).ok().map(|m| {
            m.iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
    }

    #[test]
    fn selectors() {
        let owned = |v: &[(&str, &str)]| {
            Some(
                v.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            pairs("appuio.io/node-class=plus, zone=a"),
            owned(&[("appuio.io/node-class", "plus"), ("zone", "a")])
        );
        assert_eq!(pairs("a="), owned(&[("a", "")]));
        assert_eq!(pairs(" a = b "), owned(&[("a", "b")]));
        assert_eq!(pairs("a=b,c=d,a=e"), owned(&[("a", "e"), ("c", "d")]));
        assert_eq!(pairs(""), owned(&[]));
    }

    #[rstest::rstest]
    #[case("bad", r#"element [0] "bad" has no "=""#)]
    #[case("a==b", r#"element [0] "a==b" has more than one "=""#)]
    #[case("a=b=c", r#"element [0] "a=b=c" has more than one "=""#)]
    #[case("a=b c", r#"element [0] "a=b c": "b c" is not a valid label value"#)]
    #[case("=b", r#"element [0] "=b": "" is not a valid label key"#)]
    #[case("a b=c", r#"element [0] "a b=c": "a b" is not a valid label key"#)]
    // Kubernetes refuses an empty element (it has no "="), in the middle, first or last
    #[case("a=b,,c=d", "element [1] is empty")]
    #[case("a=b, ,c=d", "element [1] is empty")]
    #[case("a=b,", "element [1] is empty")]
    #[case("a=b, ", "element [1] is empty")]
    #[case(",a=b", "element [0] is empty")]
    #[case(",", "element [0] is empty")]
    #[case("a=b,c=d,bad,", r#"element [2] "bad" has no "=""#)]
    fn refusals_name_the_element(#[case] text: &str, #[case] message: &str) {
        assert_eq!(parse_selector(text).unwrap_err().to_string(), message);
    }

    #[test]
    fn repeated_keys_in_a_long_selector_are_merged_in_one_pass() {
        let text: Vec<String> = (0..20_000).map(|i| format!("k{}=v{i}", i % 100)).collect();
        let map = parse_selector(&text.join(",")).unwrap();
        assert_eq!(map.len(), 100);
        assert_eq!(map.get("k7"), Some("v19907"));
    }

    fn request() -> AdmissionRequest {
        serde_json::from_value(json!({
            "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE", "namespace": "solar-dev", "userInfo": {"username": "alice"},
            "object": {"metadata": {"name": "p"}, "spec": {}}
        }))
        .unwrap()
    }

    fn namespace(annotation: Option<&str>) -> Value {
        let annotations = match annotation {
            Some(a) => json!({"appuio.io/default-node-selector": a}),
            None => json!({}),
        };
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "solar-dev", "annotations": annotations}})
    }

    fn resolve(objects: Vec<Value>, annotation: Option<&str>) -> (Option<NameMap>, Verdict) {
        let mut cluster = Objects::new(objects);
        let mut lookups = Lookups::new(&mut cluster);
        let mut verdict = Verdict::accept();
        let default: NameMap = [("appuio.io/node-class", "flex")].into_iter().collect();
        let found = namespace_default(
            &request(),
            &default,
            annotation,
            OnLookupError::Reject,
            &mut lookups,
            &mut verdict,
        )
        .unwrap();
        (found, verdict)
    }

    #[test]
    fn the_annotation_replaces_the_default_and_an_invalid_one_is_a_violation() {
        let key = Some("appuio.io/default-node-selector");
        let (found, _) = resolve(vec![namespace(Some("zone=a"))], key);
        assert_eq!(found.unwrap().get("zone"), Some("a"));
        let (found, _) = resolve(vec![namespace(Some("  "))], key);
        assert_eq!(found.unwrap().get("appuio.io/node-class"), Some("flex"));
        let (found, _) = resolve(vec![namespace(None)], None);
        assert_eq!(found.unwrap().get("appuio.io/node-class"), Some("flex"));
        let (found, verdict) = resolve(vec![namespace(Some("bad"))], key);
        assert!(found.is_none());
        assert_eq!(
            verdict.message(),
            "namespace \"solar-dev\" annotation appuio.io/default-node-selector: invalid selector \"bad\" (expected key=value[,key=value]): element [0] \"bad\" has no \"=\""
        );
        let (found, verdict) = resolve(vec![namespace(Some(" zone=a, "))], key);
        assert!(found.is_none());
        assert_eq!(
            verdict.message(),
            "namespace \"solar-dev\" annotation appuio.io/default-node-selector: invalid selector \"zone=a,\" (expected key=value[,key=value]): element [1] is empty"
        );
    }

    #[test]
    fn settings_checks() {
        let map: NameMap = [("a", "1"), ("a", "2")].into_iter().collect();
        assert_eq!(
            check_pairs("defaultNodeSelector", &map)
                .unwrap_err()
                .to_string(),
            "defaultNodeSelector[\"a\"]: repeated key"
        );
        assert_eq!(
            check_annotation("x", Some("not an annotation"))
                .unwrap_err()
                .to_string(),
            "x: \"not an annotation\" is not a valid annotation key"
        );
        assert!(check_annotation("x", Some("appuio.io/a")).is_ok());
    }
}
