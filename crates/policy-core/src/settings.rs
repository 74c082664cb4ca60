//! Settings-validation helpers: strict decoding with the offending settings path, and small
//! checks shared by every policy (SPEC 2.13).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::SettingsError;

/// Decodes raw settings into `T`, refusing unknown fields and wrong types with the settings
/// path (`protectedTaints[1].effect: unknown variant ...`). `null` is read as `{}`.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct S { #[allow(dead_code)] a: Vec<u32> }
/// let err = policy_core::settings::decode::<S>(&serde_json::json!({"a": [1, "x"]})).unwrap_err();
/// assert!(err.to_string().starts_with("a[1]: "));
/// ```
pub fn decode<T: DeserializeOwned>(raw: &Value) -> Result<T, SettingsError> {
    let empty = Value::Object(Default::default());
    let raw = if raw.is_null() { &empty } else { raw };
    serde_path_to_error::deserialize(raw).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        SettingsError::new(path, e.into_inner().to_string())
    })
}

/// Refuses duplicate entries of a list, naming the second occurrence.
pub fn no_duplicates<T: PartialEq>(
    path: &str,
    items: &[T],
    describe: impl Fn(&T) -> String,
) -> Result<(), SettingsError> {
    for (i, item) in items.iter().enumerate() {
        if items[..i].contains(item) {
            return Err(SettingsError::new(
                format!("{path}[{i}]"),
                format!("duplicate entry {}", describe(item)),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Inner {
        #[allow(dead_code)]
        key: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Outer {
        #[allow(dead_code)]
        #[serde(default)]
        protected_taints: Vec<Inner>,
    }

    #[test]
    fn paths_of_unknown_fields_and_types() {
        let err =
            decode::<Outer>(&json!({"protectedTaints": [{"key": "a"}, {"key": "b", "x": 1}]}))
                .unwrap_err();
        assert!(err.to_string().starts_with("protectedTaints[1]"), "{err}");
        assert!(err.to_string().contains("unknown field `x`"), "{err}");
        let err = decode::<Outer>(&json!({"protectedTaints": [{"key": 3}]})).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("protectedTaints[0].key: invalid type"),
            "{err}"
        );
        let err = decode::<Outer>(&json!({"other": 1})).unwrap_err();
        assert!(err.to_string().contains("unknown field `other`"), "{err}");
    }

    #[test]
    fn null_is_empty() {
        assert!(decode::<Outer>(&Value::Null).is_ok());
    }

    #[test]
    fn duplicates() {
        let err = no_duplicates("items", &[1, 2, 1], |i| i.to_string()).unwrap_err();
        assert_eq!(err.to_string(), "items[2]: duplicate entry 1");
    }
}
