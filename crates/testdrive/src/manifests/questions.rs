//! `questions-ui.yml`, the settings form Rancher builds for a policy (kwctl embeds the file in
//! the Artifact Hub package as `kubewarden/questions-ui`): it must parse as YAML, have the
//! shape Rancher's form reads, and every `variable` must be a settings path the policy
//! accepts, with a default it accepts.

use serde_json::{Map, Value, json};

use policy_host::host::SettingsValidation;

/// The question types Rancher's form renders.
pub const TYPES: [&str; 11] = [
    "string",
    "multiline",
    "boolean",
    "int",
    "float",
    "enum",
    "password",
    "array[",
    "map[",
    "sequence[",
    "hostname",
];

/// The keys Rancher reads from a question.
const KEYS: [&str; 22] = [
    "variable",
    "label",
    "description",
    "type",
    "required",
    "default",
    "group",
    "min_length",
    "max_length",
    "min",
    "max",
    "options",
    "valid_chars",
    "invalid_chars",
    "subquestions",
    "show_if",
    "show_subquestion_if",
    "satisfies",
    "hide_input",
    "value_multiline",
    "sequence_questions",
    "placeholder",
];

/// Every problem of a `questions-ui.yml` text; `validate` runs the policy's
/// `validate_settings` on settings made from `example` (the policy's example settings) with
/// one variable set.
pub fn problems(
    text: &str,
    example: &Value,
    validate: &dyn Fn(&Value) -> Result<SettingsValidation, String>,
) -> Vec<String> {
    let doc: Value = match serde_yaml::from_str(text) {
        Ok(v) => v,
        Err(e) => return vec![format!("not valid YAML: {e}")],
    };
    let Some(questions) = doc.get("questions").and_then(Value::as_array) else {
        return vec!["no `questions` list at the top".into()];
    };
    let mut out = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let at = format!("questions[{i}]");
        shape(q, &at, &mut out);
        for (j, sub) in list(q, "subquestions").iter().enumerate() {
            let sub_at = format!("{at}.subquestions[{j}]");
            shape(sub, &sub_at, &mut out);
            accepted(sub, &sub_at, example, validate, &mut out);
        }
        accepted(q, &at, example, validate, &mut out);
    }
    out
}

fn list<'a>(q: &'a Value, key: &str) -> &'a [Value] {
    q.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The form Rancher reads: required strings, a known type, a default of that type.
fn shape(q: &Value, at: &str, out: &mut Vec<String>) {
    let Some(map) = q.as_object() else {
        out.push(format!("{at}: not a mapping"));
        return;
    };
    for key in ["variable", "type", "label", "group"] {
        let text = map.get(key).and_then(Value::as_str).unwrap_or("");
        if text.trim().is_empty() {
            out.push(format!("{at}.{key}: required (a non-empty string)"));
        }
    }
    for key in map.keys() {
        if !KEYS.contains(&key.as_str()) {
            out.push(format!("{at}.{key}: not a key Rancher's questions read"));
        }
    }
    let ty = map.get("type").and_then(Value::as_str).unwrap_or("");
    if !ty.is_empty() && !TYPES.contains(&ty) {
        out.push(format!(
            "{at}.type: {ty:?} is not one of {}",
            TYPES.join(", ")
        ));
    }
    let options: Vec<&str> = list(q, "options")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if ty == "enum" && (options.is_empty() || options.len() != list(q, "options").len()) {
        out.push(format!(
            "{at}.options: an enum needs a non-empty list of strings"
        ));
    }
    if ty == "sequence[" {
        let subs = list(q, "sequence_questions");
        if subs.is_empty() {
            out.push(format!(
                "{at}.sequence_questions: a sequence[ needs its element's questions"
            ));
        }
        for (j, sub) in subs.iter().enumerate() {
            shape(sub, &format!("{at}.sequence_questions[{j}]"), out);
        }
    }
    if let Some(default) = map.get("default") {
        let fits = match ty {
            "string" | "multiline" | "password" | "hostname" => default.is_string(),
            "enum" => default.as_str().is_some_and(|d| options.contains(&d)),
            "boolean" => default.is_boolean(),
            "int" => default.is_i64() || default.is_u64(),
            "float" => default.is_number(),
            "array[" | "sequence[" => default.is_array(),
            "map[" => default.is_object(),
            _ => true,
        };
        if !fits {
            out.push(format!(
                "{at}.default: {default} does not fit type {ty:?}{}",
                if ty == "enum" {
                    " (one of its options)"
                } else {
                    ""
                }
            ));
        }
    }
}

/// The settings path of the question is one the policy accepts, with its default.
fn accepted(
    q: &Value,
    at: &str,
    example: &Value,
    validate: &dyn Fn(&Value) -> Result<SettingsValidation, String>,
    out: &mut Vec<String>,
) {
    let Some(variable) = q.get("variable").and_then(Value::as_str) else {
        return;
    };
    let (value, from_default) = match q.get("default") {
        Some(d) => (d.clone(), true),
        None => (sample(q), false),
    };
    let mut settings = example.clone();
    if !set_path(&mut settings, variable, value.clone()) {
        out.push(format!(
            "{at}.variable: {variable:?} goes through a non-mapping value of the example settings"
        ));
        return;
    }
    match validate(&settings) {
        Ok(v) if v.valid => {}
        Ok(v) => {
            let message = v.message.unwrap_or_default();
            if message.contains("unknown field") {
                out.push(format!(
                    "{at}.variable: {variable:?} is not a settings path of the policy: {message}"
                ));
            } else if from_default {
                out.push(format!(
                    "{at}.default: the policy refuses {variable} = {value}: {message}"
                ));
            }
        }
        Err(e) => out.push(format!("{at}: validate_settings failed: {e}")),
    }
}

/// A value of the question's type, for a question without default.
fn sample(q: &Value) -> Value {
    match q.get("type").and_then(Value::as_str).unwrap_or("") {
        "boolean" => json!(false),
        "int" => json!(1),
        "float" => json!(1.0),
        "enum" => list(q, "options").first().cloned().unwrap_or(json!("")),
        "array[" => json!([]),
        "map[" => json!({}),
        "sequence[" => {
            let mut element = Map::new();
            for sub in list(q, "sequence_questions") {
                if let Some(var) = sub.get("variable").and_then(Value::as_str) {
                    let v = sub.get("default").cloned().unwrap_or_else(|| sample(sub));
                    let mut obj = Value::Object(std::mem::take(&mut element));
                    set_path(&mut obj, var, v);
                    if let Value::Object(m) = obj {
                        element = m;
                    }
                }
            }
            json!([element])
        }
        _ => json!("x"),
    }
}

/// Sets dotted `path` in `settings`, making mappings on the way; false when a value on the
/// way is not a mapping.
fn set_path(settings: &mut Value, path: &str, value: Value) -> bool {
    let mut at = settings;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if at.is_null() {
            *at = json!({});
        }
        let Some(map) = at.as_object_mut() else {
            return false;
        };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return true;
        }
        at = map.entry(part.to_owned()).or_insert(Value::Null);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policy accepting `{name?: string, limits?: {cpu?: int}}`.
    fn policy(settings: &Value) -> Result<SettingsValidation, String> {
        let refuse = |m: &str| SettingsValidation {
            valid: false,
            message: Some(m.to_owned()),
        };
        let Some(map) = settings.as_object() else {
            return Ok(refuse("not an object"));
        };
        for (k, v) in map {
            match (k.as_str(), v) {
                ("name", Value::String(s)) if s.is_empty() => return Ok(refuse("name is empty")),
                ("name", Value::String(_)) => {}
                ("limits", Value::Object(l)) => {
                    for (lk, lv) in l {
                        if lk != "cpu" {
                            return Ok(refuse(&format!("limits: unknown field `{lk}`")));
                        }
                        if !lv.is_i64() {
                            return Ok(refuse("limits.cpu: not an integer"));
                        }
                    }
                }
                (other, _) if other != "name" && other != "limits" => {
                    return Ok(refuse(&format!("unknown field `{other}`")));
                }
                _ => return Ok(refuse(&format!("{k}: wrong type"))),
            }
        }
        Ok(SettingsValidation {
            valid: true,
            message: None,
        })
    }

    #[test]
    fn a_good_form_has_no_problem() {
        let text = "questions:\n- {variable: name, type: string, label: Name, group: G}\n- {variable: limits.cpu, type: int, label: CPU, group: G, default: 2}\n";
        assert_eq!(problems(text, &json!({}), &policy), Vec::<String>::new());
    }

    #[test]
    fn invalid_yaml_wrong_shapes_and_unknown_paths_are_named() {
        assert!(
            problems("questions:\n- description: a: b\n", &json!({}), &policy)[0]
                .starts_with("not valid YAML")
        );
        let text = "questions:\n- {variable: name, type: text, label: Name}\n- {variable: limits.mem, type: int, label: M, group: G, default: '2'}\n- {variable: limits.cpu, type: int, label: C, group: G, default: 2.5}\n- {variable: name, type: string, label: N, group: G, default: ''}\n- {variable: mode, type: enum, label: M, group: G, options: [a], default: b}\n";
        assert_eq!(
            problems(text, &json!({}), &policy),
            vec![
                "questions[0].group: required (a non-empty string)",
                "questions[0].type: \"text\" is not one of string, multiline, boolean, int, float, enum, password, array[, map[, sequence[, hostname",
                "questions[1].default: \"2\" does not fit type \"int\"",
                "questions[1].variable: \"limits.mem\" is not a settings path of the policy: limits: unknown field `mem`",
                "questions[2].default: 2.5 does not fit type \"int\"",
                "questions[2].default: the policy refuses limits.cpu = 2.5: limits.cpu: not an integer",
                "questions[3].default: the policy refuses name = \"\": name is empty",
                "questions[4].default: \"b\" does not fit type \"enum\" (one of its options)",
                "questions[4].variable: \"mode\" is not a settings path of the policy: unknown field `mode`",
            ]
        );
    }

    #[test]
    fn paths_are_set_through_mappings_only() {
        let mut v = json!({"a": {"b": 1}, "s": "x"});
        assert!(set_path(&mut v, "a.c.d", json!(2)));
        assert_eq!(v, json!({"a": {"b": 1, "c": {"d": 2}}, "s": "x"}));
        assert!(!set_path(&mut v, "s.t", json!(3)));
    }
}
