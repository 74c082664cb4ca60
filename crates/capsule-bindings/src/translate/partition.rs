//! The namespaces of a tenant split by which Capsule rules select them.
//!
//! Capsule v0.14 reads the rules whose `namespaceSelector` selects a namespace together, in
//! order (the last matching allow or deny decides), so one binding must hold every rule that
//! applies to its namespaces and no other: a binding per combination of selected and not
//! selected rules, its `namespaceSelector` that combination. A selector's complement is a
//! disjoint union of conjunctions (not A, or A and not B, …), each requirement of which a
//! label selector can negate, so the bindings' namespaces never overlap.

use serde_json::{Value, json};

/// At most this many bindings for one family of a tenant's rules.
pub(super) const MAX_PARTS: usize = 64;

/// One binding's share of the namespaces: requirements ANDed with the tenant label, and the
/// rules (positions in the input) that apply there, in order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Part {
    pub selector: Vec<Value>,
    pub rules: Vec<usize>,
}

impl Part {
    /// The part's namespaces that also meet `requirements` (each written once).
    fn and(&mut self, requirements: &[Value]) {
        for r in requirements {
            if !self.selector.contains(r) {
                self.selector.push(r.clone());
            }
        }
    }
}

/// Why the namespaces cannot be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unsplittable {
    /// A requirement of this input's selector is not a label selector requirement.
    Requirement(usize),
    /// More than [`MAX_PARTS`] bindings would be needed.
    TooMany,
}

/// The parts for rules with these selectors (`matchExpressions`; empty selects every
/// namespace), in input order. Parts where no rule applies are left out.
pub(super) fn split(selectors: &[Vec<Value>]) -> Result<Vec<Part>, Unsplittable> {
    let mut parts = vec![Part {
        selector: Vec::new(),
        rules: Vec::new(),
    }];
    for (i, selector) in selectors.iter().enumerate() {
        if selector.is_empty() {
            parts.iter_mut().for_each(|p| p.rules.push(i));
            continue;
        }
        let outside = complement(selector).ok_or(Unsplittable::Requirement(i))?;
        let mut next = Vec::with_capacity(parts.len() * (outside.len() + 1));
        for part in parts {
            let mut inside = part.clone();
            inside.and(selector);
            inside.rules.push(i);
            next.push(inside);
            for conjunction in &outside {
                let mut out = part.clone();
                out.and(conjunction);
                next.push(out);
            }
        }
        next.retain(|p| !contradictory(&p.selector));
        if next.len() > MAX_PARTS {
            return Err(Unsplittable::TooMany);
        }
        parts = next;
    }
    parts.retain(|p| !p.rules.is_empty());
    Ok(parts)
}

/// Whether no namespace can meet every requirement: two of them on one key that exclude each
/// other (a value in one list and never in the other, present and absent).
fn contradictory(requirements: &[Value]) -> bool {
    requirements.iter().enumerate().any(|(i, a)| {
        requirements
            .iter()
            .skip(i + 1)
            .any(|b| a.get("key") == b.get("key") && exclusive(a, b))
    })
}

/// A requirement's operator.
fn operator(requirement: &Value) -> &str {
    requirement
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether requirements `a` and `b` on the same key exclude each other.
fn exclusive(a: &Value, b: &Value) -> bool {
    let values = |r: &Value| -> Vec<Value> {
        r.get("values")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let within = |x: &Value, y: &Value| values(x).iter().all(|v| values(y).contains(v));
    match (operator(a), operator(b)) {
        ("In", "In") => !values(a).iter().any(|v| values(b).contains(v)),
        ("In", "NotIn") => within(a, b),
        ("NotIn", "In") => within(b, a),
        ("Exists", "DoesNotExist") | ("DoesNotExist", "Exists") => true,
        ("In", "DoesNotExist") | ("DoesNotExist", "In") => true,
        _ => false,
    }
}

/// The namespaces `requirements` does not select, as disjoint conjunctions: not the first;
/// the first and not the second; …
fn complement(requirements: &[Value]) -> Option<Vec<Vec<Value>>> {
    let mut out = Vec::with_capacity(requirements.len());
    for (i, requirement) in requirements.iter().enumerate() {
        let mut conjunction: Vec<Value> = requirements.iter().take(i).cloned().collect();
        conjunction.push(negation(requirement)?);
        out.push(conjunction);
    }
    Some(out)
}

/// The requirement a namespace meets exactly when it does not meet `requirement`.
fn negation(requirement: &Value) -> Option<Value> {
    let key = requirement.get("key")?.as_str()?;
    let operator = requirement.get("operator")?.as_str()?;
    let values = requirement.get("values");
    let opposite = match operator {
        "In" => "NotIn",
        "NotIn" => "In",
        "Exists" => "DoesNotExist",
        "DoesNotExist" => "Exists",
        _ => return None,
    };
    Some(match (opposite, values) {
        ("NotIn" | "In", Some(v)) if v.as_array().is_some_and(|a| !a.is_empty()) => {
            json!({"key": key, "operator": opposite, "values": v})
        }
        ("NotIn" | "In", _) => return None,
        _ => json!({"key": key, "operator": opposite}),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;

    fn prod() -> Value {
        json!({"key": "env", "operator": "In", "values": ["prod"]})
    }

    #[test]
    fn rules_without_a_selector_share_one_part() {
        assert_eq!(
            split(&[vec![], vec![]]).unwrap(),
            [Part {
                selector: vec![],
                rules: vec![0, 1]
            }]
        );
    }

    #[test]
    fn a_selected_rule_splits_the_namespaces_in_two() {
        let parts = split(&[vec![], vec![prod()]]).unwrap();
        assert_eq!(
            parts,
            [
                Part {
                    selector: vec![prod()],
                    rules: vec![0, 1]
                },
                Part {
                    selector: vec![json!({"key": "env", "operator": "NotIn", "values": ["prod"]})],
                    rules: vec![0]
                },
            ]
        );
    }

    #[test]
    fn a_selector_of_two_requirements_has_a_complement_of_two_disjoint_parts() {
        let gpu = json!({"key": "gpu", "operator": "Exists"});
        let parts = split(&[vec![prod(), gpu.clone()]]).unwrap();
        // not selected: env not prod; or env prod and no gpu label: no rule applies there
        assert_eq!(
            parts,
            [Part {
                selector: vec![prod(), gpu],
                rules: vec![0]
            }]
        );
        let outside = complement(&[prod(), json!({"key": "gpu", "operator": "Exists"})]).unwrap();
        assert_eq!(
            outside,
            [
                vec![json!({"key": "env", "operator": "NotIn", "values": ["prod"]})],
                vec![prod(), json!({"key": "gpu", "operator": "DoesNotExist"})],
            ]
        );
    }

    #[test]
    fn two_selected_rules_give_every_combination_where_one_applies() {
        let dev = json!({"key": "env", "operator": "In", "values": ["dev"]});
        let parts = split(&[vec![prod()], vec![dev.clone()]]).unwrap();
        let rules: Vec<Vec<usize>> = parts.iter().map(|p| p.rules.clone()).collect();
        // prod and dev exclude each other: no part holds both rules
        assert_eq!(rules, [vec![0], vec![1]]);
    }

    #[test]
    fn parts_no_namespace_can_be_in_are_left_out() {
        let staging = json!({"key": "env", "operator": "In", "values": ["staging"]});
        // the same selector twice: in both or in neither, never in one only; prod and
        // staging exclude each other
        let parts = split(&[vec![prod()], vec![staging.clone()], vec![staging]]).unwrap();
        let rules: Vec<Vec<usize>> = parts.iter().map(|p| p.rules.clone()).collect();
        assert_eq!(rules, [vec![0], vec![1, 2]]);
        assert!(contradictory(&[
            json!({"key": "tier", "operator": "Exists"}),
            json!({"key": "tier", "operator": "DoesNotExist"})
        ]));
        assert!(!contradictory(&[
            prod(),
            json!({"key": "env", "operator": "NotIn", "values": ["dev"]})
        ]));
    }

    #[test]
    fn many_rules_on_one_label_split_into_one_part_per_value() {
        let cases: Vec<Vec<Value>> = (0..10)
            .map(|i| vec![json!({"key": "case", "operator": "In", "values": [format!("c{i}")]})])
            .collect();
        let parts = split(&cases).unwrap();
        // one part per value, and no part for namespaces without one of them (no rule there)
        assert_eq!(parts.len(), 10);
        assert!(parts.iter().all(|p| p.rules.len() == 1));
    }

    #[test]
    fn an_unknown_operator_or_too_many_parts_cannot_be_split() {
        let odd = json!({"key": "env", "operator": "Gt", "values": ["1"]});
        assert_eq!(
            split(&[vec![], vec![odd]]),
            Err(Unsplittable::Requirement(1))
        );
        let many: Vec<Vec<Value>> = (0..7)
            .map(|i| vec![json!({"key": format!("k{i}"), "operator": "Exists"})])
            .collect();
        assert_eq!(split(&many), Err(Unsplittable::TooMany));
    }
}
