//! Typed, path-aware reading of generic JSON objects: absent and `null` fields are `None`,
//! a field of the wrong type is a [`PolicyError::Malformed`] naming its path.

use serde_json::{Map, Value};

use crate::error::PolicyError;
use crate::path::FieldPath;

/// A JSON value together with its path in the admitted object.
#[derive(Clone, Debug)]
pub struct At<'a> {
    /// The value.
    pub value: &'a Value,
    /// Its path.
    pub path: FieldPath,
}

impl<'a> At<'a> {
    /// Wraps `value` found at `path`.
    pub fn new(value: &'a Value, path: FieldPath) -> Self {
        At { value, path }
    }

    /// The object at this path; a non-object is malformed.
    pub fn object(&self) -> Result<&'a Map<String, Value>, PolicyError> {
        self.value
            .as_object()
            .ok_or_else(|| PolicyError::malformed(&self.path, "expected an object"))
    }

    /// Field `name` of this object: `None` when absent or `null`.
    pub fn get(&self, name: &str) -> Result<Option<At<'a>>, PolicyError> {
        let obj = self.object()?;
        Ok(match obj.get(name) {
            None | Some(Value::Null) => None,
            Some(v) => Some(At::new(v, self.path.field(name))),
        })
    }

    /// Object field `name`: `None` when absent or `null`, an error when not an object.
    pub fn get_object(&self, name: &str) -> Result<Option<At<'a>>, PolicyError> {
        match self.get(name)? {
            None => Ok(None),
            Some(at) if at.value.is_object() => Ok(Some(at)),
            Some(at) => Err(PolicyError::malformed(&at.path, "expected an object")),
        }
    }

    /// String field `name`: `None` when absent or `null`, an error when not a string.
    pub fn get_str(&self, name: &str) -> Result<Option<&'a str>, PolicyError> {
        match self.get(name)? {
            None => Ok(None),
            Some(at) => at
                .value
                .as_str()
                .map(Some)
                .ok_or_else(|| PolicyError::malformed(&at.path, "expected a string")),
        }
    }

    /// Boolean field `name`: `None` when absent or `null`, an error when not a boolean.
    pub fn get_bool(&self, name: &str) -> Result<Option<bool>, PolicyError> {
        match self.get(name)? {
            None => Ok(None),
            Some(at) => at
                .value
                .as_bool()
                .map(Some)
                .ok_or_else(|| PolicyError::malformed(&at.path, "expected a boolean")),
        }
    }

    /// Integer field `name`: `None` when absent or `null`, an error when not an integer.
    pub fn get_i64(&self, name: &str) -> Result<Option<i64>, PolicyError> {
        match self.get(name)? {
            None => Ok(None),
            Some(at) => at
                .value
                .as_i64()
                .map(Some)
                .ok_or_else(|| PolicyError::malformed(&at.path, "expected an integer")),
        }
    }

    /// The elements of list field `name`, each with its indexed path; absent or `null` is empty.
    pub fn get_list(&self, name: &str) -> Result<Vec<At<'a>>, PolicyError> {
        match self.get(name)? {
            None => Ok(Vec::new()),
            Some(at) => at.elements(),
        }
    }

    /// Whether list field `name` is present (even if empty).
    pub fn has(&self, name: &str) -> bool {
        self.value.get(name).is_some_and(|v| !v.is_null())
    }

    /// The elements of this list, each with its indexed path.
    pub fn elements(&self) -> Result<Vec<At<'a>>, PolicyError> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| PolicyError::malformed(&self.path, "expected a list"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, v)| At::new(v, self.path.index(i)))
            .collect())
    }

    /// String map field `name` (labels, annotations, node selectors): absent is empty;
    /// a non-string value is malformed.
    pub fn get_string_map(&self, name: &str) -> Result<Vec<(&'a str, &'a str)>, PolicyError> {
        let Some(at) = self.get(name)? else {
            return Ok(Vec::new());
        };
        let obj = at.object()?;
        obj.iter()
            .map(|(k, v)| match v.as_str() {
                Some(s) => Ok((k.as_str(), s)),
                None => Err(PolicyError::malformed(&at.path.key(k), "expected a string")),
            })
            .collect()
    }

    /// String map field `name` (labels, annotations) as its JSON object: `None` when absent
    /// or `null`; a non-object, or a value that is not a string, is malformed.
    pub fn get_str_map(&self, name: &str) -> Result<Option<&'a Map<String, Value>>, PolicyError> {
        let Some(at) = self.get(name)? else {
            return Ok(None);
        };
        let entries = at.object()?;
        match entries.iter().find(|(_, v)| !v.is_string()) {
            Some((key, _)) => Err(PolicyError::malformed(
                &at.path.key(key),
                "expected a string",
            )),
            None => Ok(Some(entries)),
        }
    }

    /// `metadata.<map>` of this object (`labels`, `annotations`), as [`At::get_str_map`]
    /// reads it: `None` when `metadata` or the map is absent.
    pub fn get_metadata_map(
        &self,
        map: &str,
    ) -> Result<Option<&'a Map<String, Value>>, PolicyError> {
        match self.get_object("metadata")? {
            Some(metadata) => metadata.get_str_map(map),
            None => Ok(None),
        }
    }

    /// The strings of list field `name`; absent is empty, a non-string element is malformed.
    pub fn get_str_list(&self, name: &str) -> Result<Vec<&'a str>, PolicyError> {
        let Some(list) = self.get(name)? else {
            return Ok(Vec::new());
        };
        let items = list
            .value
            .as_array()
            .ok_or_else(|| PolicyError::malformed(&list.path, "expected a list"))?;
        // the path of an element is written only when it is malformed
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .ok_or_else(|| PolicyError::malformed(&list.path.index(i), "expected a string"))
            })
            .collect()
    }
}

/// A text that is equal for equal JSON values (object keys in sorted order, whatever their
/// order in the document), to test deep equality with a hash set instead of comparing every
/// pair of values.
///
/// ```
/// use policy_decode::json::canonical_text;
/// use serde_json::json;
/// assert_eq!(canonical_text(&json!({"b": 1, "a": [true, null]})), canonical_text(&json!({"a": [true, null], "b": 1})));
/// assert_ne!(canonical_text(&json!({"a": "1"})), canonical_text(&json!({"a": 1})));
/// ```
pub fn canonical_text(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_typed_fields_with_paths() {
        let v = json!({"spec": {"containers": [{"name": "a", "image": 3}], "x": null}});
        let root = At::new(&v, FieldPath::empty());
        let spec = root.get_object("spec").unwrap().unwrap();
        assert!(spec.get("x").unwrap().is_none());
        let cs = spec.get_list("containers").unwrap();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].get_str("name").unwrap(), Some("a"));
        let err = cs[0].get_str("image").unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].image: expected a string"
        );
    }

    #[test]
    fn wrong_container_type_is_malformed() {
        let v = json!({"containers": {"a": 1}});
        let err = At::new(&v, FieldPath::root("spec"))
            .get_list("containers")
            .unwrap_err();
        assert_eq!(err.to_string(), "spec.containers: expected a list");
        let v = json!("text");
        assert!(At::new(&v, FieldPath::root("spec")).get("a").is_err());
    }

    #[test]
    fn canonical_text_is_deep_equality() {
        let a = json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"});
        let b = json!({"effect": "NoSchedule", "value": "v", "operator": "Equal", "key": "k"});
        assert_eq!(a, b);
        assert_eq!(canonical_text(&a), canonical_text(&b));
        let pairs = [
            (
                json!({"a": {"x": 1, "y": [1, {"q": 2, "p": 3}]}}),
                json!({"a": {"y": [1, {"p": 3, "q": 2}], "x": 1}}),
                true,
            ),
            (json!([1, 2]), json!([2, 1]), false),
            (json!({"a": null}), json!({}), false),
            (json!({"a\"b": 1}), json!({"a": "b\": 1"}), false),
            (json!(1), json!(1.0), false),
        ];
        for (x, y, equal) in pairs {
            assert_eq!(x == y, equal, "{x} {y}");
            assert_eq!(canonical_text(&x) == canonical_text(&y), equal, "{x} {y}");
        }
    }

    #[test]
    fn string_maps() {
        let v = json!({"labels": {"a": "1", "b": 2}});
        let err = At::new(&v, FieldPath::root("metadata"))
            .get_string_map("labels")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"metadata.labels["b"]: expected a string"#
        );
    }
}
