//! Settings-validation helpers: strict decoding with the offending settings path, and small
//! checks shared by every policy (SPEC 2.13).

use std::cell::Cell;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::SettingsError;

thread_local! {
    static REREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether settings are being re-read by `validate` (SPEC 2.16): the host validated them
/// with `validate_settings` when it loaded the policy, so checks that cannot change a
/// verdict (duplicate entries, regex syntax and compilation) are skipped; decoding and
/// every check a verdict depends on still run. Outside [`reread`] this is `false`: full
/// checks are the default.
pub fn is_reread() -> bool {
    REREAD.with(Cell::get)
}

/// Runs `f` (a settings parse inside `validate`) in re-read mode; see [`is_reread`].
pub fn reread<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            REREAD.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(REREAD.with(|r| r.replace(true)));
    f()
}

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

/// Refuses duplicate entries of a list, naming the second occurrence (skipped when settings
/// are re-read, see [`is_reread`]).
pub fn no_duplicates<T: PartialEq>(
    path: &str,
    items: &[T],
    describe: impl Fn(&T) -> String,
) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    for (i, item) in items.iter().enumerate() {
        if items.iter().take(i).any(|earlier| earlier == item) {
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

    #[test]
    fn reread_skips_duplicate_checks_and_restores_full_checks() {
        assert!(!is_reread());
        assert!(reread(|| no_duplicates("items", &[1, 1], |i| i.to_string())).is_ok());
        assert!(!is_reread(), "full checks are back after the re-read");
        assert!(no_duplicates("items", &[1, 1], |i| i.to_string()).is_err());
    }
}
