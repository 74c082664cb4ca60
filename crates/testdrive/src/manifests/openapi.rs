//! The OpenAPI v3 structural schemas of CustomResourceDefinitions, applied as the API server
//! applies them to a manifest sent with strict field validation (`kubectl apply
//! --validate=strict`): types, unknown fields, required fields, enums, ranges, lengths,
//! patterns, `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`,
//! `nullable` and the uniqueness of `set` and `map` lists.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use policy_host::error::{Error, Result, read_text};

/// The schema of one served version of one kind.
#[derive(Debug, Clone)]
pub struct KindSchema {
    /// `<group>/<version>`, e.g. `policies.kubewarden.io/v1`.
    pub api_version: String,
    /// The kind, e.g. `ClusterAdmissionPolicy`.
    pub kind: String,
    /// Whether objects of the kind live in a namespace.
    pub namespaced: bool,
    /// `openAPIV3Schema`.
    pub schema: Value,
}

/// The schemas of every served version of every CRD in a directory (`*.yaml`, `*.yml`).
pub fn load_crds(dir: &Path) -> Result<Vec<KindSchema>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    for path in paths {
        let crd: Value = serde_yaml::from_str(&read_text(&path)?)
            .map_err(|e| Error::parse(path.display(), e))?;
        out.extend(crd_schemas(&crd).map_err(|e| Error::parse(path.display(), e))?);
    }
    if out.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no CustomResourceDefinition found",
            dir.display()
        )));
    }
    Ok(out)
}

/// The served versions of one CustomResourceDefinition.
fn crd_schemas(crd: &Value) -> std::result::Result<Vec<KindSchema>, String> {
    if crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return Ok(Vec::new());
    }
    let spec = crd.get("spec").ok_or("no spec")?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .ok_or("no spec.group")?;
    let kind = spec
        .pointer("/names/kind")
        .and_then(Value::as_str)
        .ok_or("no spec.names.kind")?;
    let namespaced = spec.get("scope").and_then(Value::as_str) == Some("Namespaced");
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("no spec.versions")?;
    let mut out = Vec::new();
    for v in versions {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a version without name")?;
        let schema = v
            .pointer("/schema/openAPIV3Schema")
            .ok_or_else(|| format!("version {name}: no schema.openAPIV3Schema"))?;
        out.push(KindSchema {
            api_version: format!("{group}/{name}"),
            kind: kind.to_owned(),
            namespaced,
            schema: schema.clone(),
        });
    }
    Ok(out)
}

/// Every way `value` breaks `schema`, each as `<path>: <problem>` (`path` names `value`).
pub fn validate(schema: &Value, value: &Value, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, value, path, &mut out);
    out
}

fn check(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let flag = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
    if value.is_null() {
        if !flag("nullable") {
            out.push(format!("{path}: null is not allowed here"));
        }
        return;
    }
    if let Some(any_of) = schema.get("anyOf").and_then(Value::as_array)
        && !any_of.is_empty()
        && !any_of
            .iter()
            .any(|alt| validate(alt, value, path).is_empty())
    {
        out.push(format!(
            "{path}: {} matches none of the allowed forms",
            brief(value)
        ));
        return;
    }
    if flag("x-kubernetes-int-or-string") {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            out.push(format!(
                "{path}: {} is neither an integer nor a string",
                brief(value)
            ));
        }
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str)
        && !has_type(value, ty)
    {
        out.push(format!("{path}: {} is not of type {ty}", brief(value)));
        return;
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        let listed: Vec<String> = options.iter().map(brief).collect();
        out.push(format!(
            "{path}: {} is not one of {}",
            brief(value),
            listed.join(", ")
        ));
    }
    match value {
        Value::String(s) => string_bounds(schema, s, path, out),
        Value::Number(n) => number_bounds(schema, n.as_f64().unwrap_or(f64::NAN), path, out),
        Value::Array(items) => array(schema, items, path, out),
        Value::Object(map) => object(schema, map, path, out),
        _ => {}
    }
}

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    }
}

fn string_bounds(schema: &Value, s: &str, path: &str, out: &mut Vec<String>) {
    let len = s.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        out.push(format!("{path}: {s:?} is shorter than {min} characters"));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        out.push(format!("{path}: {s:?} is longer than {max} characters"));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) if re.is_match(s) => {}
            Ok(_) => out.push(format!("{path}: {s:?} does not match {pattern:?}")),
            Err(e) => out.push(format!("{path}: the schema's pattern {pattern:?}: {e}")),
        }
    }
}

fn number_bounds(schema: &Value, n: f64, path: &str, out: &mut Vec<String>) {
    let exclusive = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let below = if exclusive("exclusiveMinimum") {
            n <= min
        } else {
            n < min
        };
        if below {
            out.push(format!("{path}: {n} is below the minimum {min}"));
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let above = if exclusive("exclusiveMaximum") {
            n >= max
        } else {
            n > max
        };
        if above {
            out.push(format!("{path}: {n} is above the maximum {max}"));
        }
    }
}

fn array(schema: &Value, items: &[Value], path: &str, out: &mut Vec<String>) {
    let count = items.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && count < min
    {
        out.push(format!("{path}: fewer than {min} items"));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && count > max
    {
        out.push(format!("{path}: more than {max} items"));
    }
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{i}]"), out);
        }
    }
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            let mut seen = BTreeSet::new();
            for item in items {
                if !seen.insert(item.to_string()) {
                    out.push(format!("{path}: {} is listed twice (a set)", brief(item)));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut seen = BTreeSet::new();
            for item in items {
                let key: Vec<String> = keys
                    .iter()
                    .map(|k| item.get(*k).map(Value::to_string).unwrap_or_default())
                    .collect();
                if !seen.insert(key.clone()) {
                    out.push(format!(
                        "{path}: two items with the same {} ({})",
                        keys.join(", "),
                        key.join(", ")
                    ));
                }
            }
        }
        _ => {}
    }
}

fn object(schema: &Value, map: &serde_json::Map<String, Value>, path: &str, out: &mut Vec<String>) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if map.get(key).is_none_or(Value::is_null) {
                out.push(format!("{}: required", join(path, key)));
            }
        }
    }
    let preserve = schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true);
    let additional = schema.get("additionalProperties");
    for (key, value) in map {
        let at = join(path, key);
        if let Some(sub) = properties.and_then(|p| p.get(key)) {
            check(sub, value, &at, out);
        } else if let Some(sub) = additional.filter(|a| a.is_object()) {
            check(sub, value, &at, out);
        } else if !preserve && additional.and_then(Value::as_bool) != Some(true) {
            out.push(format!("{at}: unknown field"));
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as it appears in a message, shortened.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["module"],
                    "properties": {
                        "module": {"type": "string", "minLength": 1},
                        "mode": {"type": "string", "enum": ["protect", "monitor"]},
                        "timeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 30},
                        "settings": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "size": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "hint": {"type": "string", "nullable": true}
                    }
                }
            }
        })
    }

    #[test]
    fn a_valid_object_has_no_problem() {
        let v = json!({"spec": {"module": "m", "mode": "monitor",
            "timeoutSeconds": 10, "settings": {"any": [1, {"thing": null}]}, "size": "1Gi",
            "labels": {"a": "b"}, "name": "abc", "tags": ["a", "b"], "hint": null}});
        assert_eq!(validate(&schema(), &v, ""), Vec::<String>::new());
    }

    #[test]
    fn every_problem_is_named_with_its_path() {
        let v = json!({"spec": {"mode": "audit", "timeoutSeconds": 31, "extra": 1,
            "size": 1.5, "labels": {"a": 1}, "name": "ABCDEF", "tags": ["a", "a"],
            "settings": []}});
        let problems = validate(&schema(), &v, "");
        assert_eq!(
            problems,
            vec![
                "spec.module: required",
                "spec.mode: \"audit\" is not one of \"protect\", \"monitor\"",
                "spec.timeoutSeconds: 31 is above the maximum 30",
                "spec.extra: unknown field",
                "spec.size: 1.5 matches none of the allowed forms",
                "spec.labels.a: 1 is not of type string",
                "spec.name: \"ABCDEF\" is longer than 5 characters",
                "spec.name: \"ABCDEF\" does not match \"^[a-z]+$\"",
                "spec.tags: \"a\" is listed twice (a set)",
                "spec.settings: [] is not of type object",
            ]
        );
    }

    #[test]
    fn null_is_refused_unless_nullable() {
        let v = json!({"spec": {"module": "m", "mode": null}});
        assert_eq!(
            validate(&schema(), &v, ""),
            vec!["spec.mode: null is not allowed here"]
        );
    }

    #[test]
    fn kubewarden_crds_load_when_present() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/kubewarden/crds");
        if !dir.is_dir() {
            return;
        }
        let kinds = load_crds(&dir).expect("the CRDs load");
        assert!(kinds.iter().any(|k| k.kind == "ClusterAdmissionPolicy"
            && k.api_version == "policies.kubewarden.io/v1"
            && !k.namespaced));
        assert!(
            kinds
                .iter()
                .any(|k| k.kind == "AdmissionPolicy" && k.namespaced)
        );
    }
}
