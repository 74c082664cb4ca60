//! The agreement table of docs/capsule.md: per scenario, the Tenant fields it uses and how
//! its requests ended (agreed, reported by convert, documented, silent). `make
//! capsule-compare` fails when the document's table is not the one of its run; `make
//! capsule-table` writes it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::differences::Ending;
use crate::error::{Error, Result};

/// The lines that open and close the table in the document.
pub const BEGIN: &str = "<!-- capsule-compare agreement table: make capsule-table writes it -->";
/// See [`BEGIN`].
pub const END: &str = "<!-- end of the agreement table -->";

/// One scenario's row.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Row {
    /// The Tenant fields the scenario's Tenant uses.
    pub fields: Vec<String>,
    /// Requests both answered.
    pub requests: usize,
    /// Of which alike.
    pub agree: usize,
    /// Disagreements by how they ended.
    pub ended: BTreeMap<Ending, usize>,
}

/// The Tenant fields of the Tenant manifest `path` (top-level `spec` keys but `owners`; a
/// rule's as `rules[].enforce.<family>.<key>`, with its action when not the default).
pub fn fields(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    let tenants = capsule_bindings::parse_tenants(&text, &path.display().to_string())
        .map_err(Error::Bindings)?;
    let mut out = BTreeSet::new();
    for t in &tenants {
        for (key, value) in &t.spec {
            match key.as_str() {
                "owners" => {}
                "rules" => rule_fields(value, &mut out),
                _ => {
                    out.insert(key.clone());
                }
            }
        }
    }
    Ok(out.into_iter().collect())
}

fn rule_fields(rules: &Value, out: &mut BTreeSet<String>) {
    for rule in rules.as_array().into_iter().flatten() {
        let Some(enforce) = rule.get("enforce").and_then(Value::as_object) else {
            continue;
        };
        let action = enforce
            .get("action")
            .and_then(Value::as_str)
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        for (family, body) in enforce {
            if family == "action" {
                continue;
            }
            match body.as_object() {
                Some(keys) => {
                    for key in keys.keys() {
                        out.insert(format!("rules[].enforce.{family}.{key}{action}"));
                    }
                }
                None => {
                    out.insert(format!("rules[].enforce.{family}{action}"));
                }
            }
        }
        if rule.get("namespaceSelector").is_some() {
            out.insert("rules[].namespaceSelector".into());
        }
    }
}

/// The table, its markers included.
pub fn render(rows: &BTreeMap<String, Row>) -> String {
    let mut out = format!(
        "{BEGIN}\n| Scenario | Tenant fields | Requests | Agree | Reported by convert | Documented | Silent |\n|---|---|---|---|---|---|---|\n"
    );
    for (stem, row) in rows {
        let n = |e: Ending| row.ended.get(&e).copied().unwrap_or(0);
        let fields: Vec<String> = row.fields.iter().map(|f| format!("`{f}`")).collect();
        out.push_str(&format!(
            "| `{stem}` | {} | {} | {} | {} | {} | {} |\n",
            fields.join(", "),
            row.requests,
            row.agree,
            n(Ending::Reported),
            n(Ending::Documented),
            n(Ending::Silent)
        ));
    }
    out.push_str(END);
    out
}

/// `doc` with its table replaced by `table`; `None` when it has no markers.
pub fn replace(doc: &str, table: &str) -> Option<String> {
    let start = doc.find(BEGIN)?;
    let end = doc.get(start..)?.find(END)? + start + END.len();
    Some(format!("{}{table}{}", doc.get(..start)?, doc.get(end..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_lists_each_family_key_with_its_action() {
        let mut out = BTreeSet::new();
        rule_fields(
            &serde_json::json!([{"namespaceSelector": {}, "enforce": {"action": "allow", "workloads": {"registries": []}}},
                {"enforce": {"metadata": []}}]),
            &mut out,
        );
        let out: Vec<&str> = out.iter().map(String::as_str).collect();
        assert_eq!(
            out,
            [
                "rules[].enforce.metadata",
                "rules[].enforce.workloads.registries (allow)",
                "rules[].namespaceSelector"
            ]
        );
    }

    #[test]
    fn the_table_is_replaced_between_its_markers() {
        let mut rows = BTreeMap::new();
        rows.insert(
            "registries".to_owned(),
            Row {
                fields: vec!["containerRegistries".into()],
                requests: 3,
                agree: 2,
                ended: BTreeMap::from([(Ending::Documented, 1)]),
            },
        );
        let table = render(&rows);
        assert!(table.contains("| `registries` | `containerRegistries` | 3 | 2 | 0 | 1 | 0 |"));
        let doc = format!("# T\n{BEGIN}\nold\n{END}\nafter\n");
        assert_eq!(
            replace(&doc, &table),
            Some(format!("# T\n{table}\nafter\n"))
        );
        assert_eq!(replace("# T\n", &table), None);
    }
}
