//! Settings-validation helpers: strict decoding with the offending settings path, and small
//! checks shared by every policy (`docs/semantics.md#settings`).

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::SettingsError;
use crate::names::NameList;

use crate::strict::{NULL_REFUSED, SettingsRules, Strict};

thread_local! {
    static REREAD: Cell<bool> = const { Cell::new(false) };
    /// The last error of [`converted`], whose own path [`decode`] joins to the path of the
    /// value that failed.
    static CONVERSION: RefCell<Option<SettingsError>> = const { RefCell::new(None) };
}

/// The outcome of validating a value while it is deserialized (a `Deserialize` impl that
/// decodes a raw form and validates it at once, so that no list of raw entries is kept),
/// as a deserialization error. [`decode`] reports the error at the value's settings path
/// joined with the error's own path: `protectedTaints[3]` + `key` gives
/// `protectedTaints[3].key: must not be empty`.
///
/// ```
/// use policy_decode::SettingsError;
/// #[derive(Debug)]
/// struct Port(u16);
/// impl<'de> serde::Deserialize<'de> for Port {
///     fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
///         let n = u16::deserialize(d)?;
///         policy_decode::settings::converted(match n {
///             0 => Err(SettingsError::new("", "must not be 0")),
///             n => Ok(Port(n)),
///         })
///     }
/// }
/// #[derive(Debug, serde::Deserialize)]
/// struct S { #[allow(dead_code)] ports: Vec<Port> }
/// let err = policy_decode::settings::decode::<S>(&serde_json::json!({"ports": [80, 0]})).unwrap_err();
/// assert_eq!(err.to_string(), "ports[1]: must not be 0");
/// ```
pub fn converted<T, E: serde::de::Error>(result: Result<T, SettingsError>) -> Result<T, E> {
    result.map_err(|e| {
        let message = e.to_string();
        CONVERSION.with(|c| *c.borrow_mut() = Some(e));
        E::custom(message)
    })
}

/// Whether settings are being re-read by `validate` (`docs/semantics.md#cost`): the host validated them
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

/// Settings as the host sent them: the JSON text of a `validate` or `validate_settings`
/// payload, or an already parsed value (nested settings, tests). Decoding from the text
/// builds the typed settings directly, without an intermediate [`Value`] (`docs/semantics.md#cost`).
#[derive(Clone, Copy, Debug)]
pub enum Raw<'a> {
    /// JSON text.
    Json(&'a str),
    /// A parsed value.
    Value(&'a Value),
}

impl<'a> From<&'a Value> for Raw<'a> {
    fn from(value: &'a Value) -> Self {
        Raw::Value(value)
    }
}

impl<'a> From<&'a serde_json::value::RawValue> for Raw<'a> {
    fn from(raw: &'a serde_json::value::RawValue) -> Self {
        Raw::Json(raw.get())
    }
}

impl Raw<'_> {
    /// Whether the settings are `null` (read as `{}`).
    pub fn is_null(&self) -> bool {
        match self {
            Raw::Json(text) => text.trim() == "null",
            Raw::Value(value) => value.is_null(),
        }
    }

    /// The settings as a [`Value`] (for settings that are inspected before being decoded).
    pub fn to_value(&self) -> Result<Value, SettingsError> {
        match self {
            Raw::Json(text) => serde_json::from_str(text)
                .map_err(|e| SettingsError::new("", format!("settings are not JSON: {e}"))),
            Raw::Value(value) => Ok((*value).clone()),
        }
    }
}

/// Decodes raw settings into `T`, refusing unknown fields and wrong types with the settings
/// path (`protectedTaints[1].effect: unknown variant ...`), `null` values and lists where a
/// struct belongs included ([`crate::strict`]). The whole document `null` is read as `{}`.
///
/// JSON text is decoded once without tracking the path; only a failure is decoded a second
/// time to name the offending path.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct S { #[allow(dead_code)] a: Vec<u32> }
/// let err = policy_decode::settings::decode::<S>(&serde_json::json!({"a": [1, "x"]})).unwrap_err();
/// assert!(err.to_string().starts_with("a[1]: "));
/// let raw = policy_decode::settings::Raw::Json(r#"{"a": [1, "x"]}"#);
/// assert!(policy_decode::settings::decode::<S>(raw).unwrap_err().to_string().starts_with("a[1]: "));
/// ```
pub fn decode<'a, T: DeserializeOwned>(raw: impl Into<Raw<'a>>) -> Result<T, SettingsError> {
    let raw = raw.into();
    if raw.is_null() {
        return decode(Raw::Json("{}"));
    }
    match raw {
        Raw::Json(text) => from_text(text).or_else(|_| {
            // Name the path of the failure: decode again, tracking it, from a parsed value
            // (so that messages are those of a value, without line and column).
            let value: Value = serde_json::from_str(text)
                .map_err(|e| SettingsError::new("", format!("settings are not JSON: {e}")))?;
            decode_tracked(&value)
        }),
        Raw::Value(value) => decode_tracked(value),
    }
}

/// Decodes JSON text into `T` under [`Strict`] settings rules, the whole text being one
/// document.
fn from_text<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Strict(&mut de, SettingsRules))?;
    de.end()?;
    Ok(value)
}

/// A value that settings name exactly, such as an API enum value (`NoSchedule`): the names,
/// in the order a refusal lists them.
pub trait ExactName: Sized + Copy + 'static {
    /// Every value with its name.
    const NAMES: &'static [(&'static str, Self)];

    /// The value named exactly `name`.
    fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, value)| *value)
    }

    /// The name of this value (`""` for a value [`ExactName::NAMES`] leaves out).
    fn name(self) -> &'static str
    where
        Self: PartialEq,
    {
        Self::NAMES
            .iter()
            .find(|(_, value)| *value == self)
            .map_or("", |(n, _)| *n)
    }
}

/// Deserializes an [`ExactName`]; any other string is refused as `"x" is not one of A, B, C`.
///
/// ```
/// use policy_decode::settings::{ExactName, exact_name};
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Mode { On, Off }
/// impl ExactName for Mode {
///     const NAMES: &'static [(&'static str, Self)] = &[("on", Mode::On), ("off", Mode::Off)];
/// }
/// let mut de = serde_json::Deserializer::from_str(r#""on""#);
/// assert_eq!(exact_name::<Mode, _>(&mut de).unwrap(), Mode::On);
/// assert_eq!(Mode::Off.name(), "off");
/// let mut de = serde_json::Deserializer::from_str(r#""auto""#);
/// let err = exact_name::<Mode, _>(&mut de).unwrap_err().to_string();
/// assert!(err.starts_with(r#""auto" is not one of on, off"#), "{err}");
/// ```
pub fn exact_name<'de, T: ExactName, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    struct NameVisitor<T>(std::marker::PhantomData<T>);
    impl<T: ExactName> serde::de::Visitor<'_> for NameVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("one of ")?;
            f.write_str(&names::<T>())
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
            T::from_name(v)
                .ok_or_else(|| E::custom(format!("{v:?} is not one of {}", names::<T>())))
        }
    }
    fn names<T: ExactName>() -> String {
        let names: Vec<&str> = T::NAMES.iter().map(|(n, _)| *n).collect();
        names.join(", ")
    }
    deserializer.deserialize_str(NameVisitor(std::marker::PhantomData))
}

/// Settings read in two steps: decoded strictly as written ([`Validated::Written`]: unknown
/// fields refused), then validated into `Self` by its `TryFrom`. Every policy's settings, and
/// every settings block of the core, is one; [`Validated::parse`] is the one way to read it.
///
/// ```
/// use policy_decode::SettingsError;
/// use policy_decode::settings::Validated;
/// #[derive(serde::Deserialize)]
/// struct Written { replicas: u32 }
/// struct Checked(u32);
/// impl TryFrom<Written> for Checked {
///     type Error = SettingsError;
///     fn try_from(w: Written) -> Result<Self, SettingsError> {
///         match w.replicas {
///             0 => Err(SettingsError::new("replicas", "must be at least 1")),
///             n => Ok(Checked(n)),
///         }
///     }
/// }
/// impl Validated for Checked {
///     type Written = Written;
/// }
/// assert_eq!(Checked::parse(&serde_json::json!({"replicas": 2})).unwrap().0, 2);
/// assert_eq!(Checked::parse(&serde_json::json!({"replicas": 0})).err().unwrap().to_string(),
///     "replicas: must be at least 1");
/// ```
pub trait Validated: Sized + TryFrom<Self::Written, Error = SettingsError> {
    /// The settings as written: decoded strictly, not validated.
    type Written: DeserializeOwned;

    /// Decodes and validates settings; errors name the settings path.
    fn parse<'a>(raw: impl Into<Raw<'a>>) -> Result<Self, SettingsError> {
        parse::<Self::Written, Self>(raw)
    }
}

/// Decodes raw settings into `R` ([`decode`]) and validates them into `S`.
pub fn parse<'a, R, S>(raw: impl Into<Raw<'a>>) -> Result<S, SettingsError>
where
    R: DeserializeOwned,
    S: TryFrom<R, Error = SettingsError>,
{
    S::try_from(decode::<R>(raw)?)
}

/// Decodes `value`, naming the settings path of a failure.
fn decode_tracked<T: DeserializeOwned>(value: &Value) -> Result<T, SettingsError> {
    CONVERSION.with(|c| c.borrow_mut().take());
    serde_path_to_error::deserialize(Strict(value, SettingsRules)).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let message = e.into_inner().to_string();
        // serde names the expected type of a `null` it refuses by itself (`invalid type: null,
        // expected a boolean`); every `null` gets the one problem of [`crate::strict`].
        let message = if message.starts_with("invalid type: null") {
            NULL_REFUSED.to_owned()
        } else {
            message
        };
        // A validation error raised while deserializing carries its own path.
        match CONVERSION.with(|c| c.borrow_mut().take()) {
            Some(inner) if inner.to_string() == message => inner.under(&path),
            _ => SettingsError::new(path, message),
        }
    })
}

/// Refuses duplicate entries of a list, naming the second occurrence (skipped when settings
/// are re-read, see [`is_reread`]). One pass with a hash set: linear in the list.
///
/// ```
/// let err = policy_decode::settings::no_duplicates("allowed", &["a", "b", "a"], |s| format!("{s:?}"))
///     .unwrap_err();
/// assert_eq!(err.to_string(), "allowed[2]: duplicate entry \"a\"");
/// ```
pub fn no_duplicates<T: Eq + Hash>(
    path: &str,
    items: &[T],
    describe: impl Fn(&T) -> String,
) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    let mut seen = HashSet::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(item) {
            return Err(SettingsError::new(
                format!("{path}[{i}]"),
                format!("duplicate entry {}", describe(item)),
            ));
        }
    }
    Ok(())
}

/// [`no_duplicates`] for a [`NameList`]: refuses the second occurrence of an entry
/// (`allowed[3]: duplicate entry "gold"`), skipped when settings are re-read.
pub fn no_duplicate_names(path: &str, names: &NameList) -> Result<(), SettingsError> {
    if is_reread() {
        return Ok(());
    }
    match names.first_duplicate() {
        None => Ok(()),
        Some(i) => Err(SettingsError::new(
            format!("{path}[{i}]"),
            format!("duplicate entry {:?}", names.get(i).unwrap_or_default()),
        )),
    }
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

    #[derive(Debug)]
    struct Checked(String);

    impl<'de> Deserialize<'de> for Checked {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let inner = Inner::deserialize(d)?;
            converted(match inner.key.as_str() {
                "" => Err(SettingsError::new("key", "must not be empty")),
                _ => Ok(Checked(inner.key)),
            })
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Holder {
        items: Vec<Checked>,
        #[allow(dead_code)]
        #[serde(default)]
        n: u8,
    }

    #[test]
    fn validation_while_decoding_keeps_both_paths() {
        let raw = r#"{"items": [{"key": "a"}, {"key": ""}]}"#;
        let err = decode::<Holder>(Raw::Json(raw)).unwrap_err();
        assert_eq!(err.to_string(), "items[1].key: must not be empty");
        let ok = decode::<Holder>(Raw::Json(r#"{"items": [{"key": "a"}]}"#)).unwrap();
        assert_eq!(ok.items.len(), 1);
        assert_eq!(ok.items[0].0, "a");
        // A validation error that is not the one reported is not reused.
        let _ = decode::<Holder>(Raw::Json(raw));
        let err = decode::<Holder>(&json!({"items": [], "n": 300})).unwrap_err();
        assert!(err.to_string().starts_with("n: invalid value"), "{err}");
    }

    #[test]
    fn null_is_empty() {
        assert!(decode::<Outer>(&Value::Null).is_ok());
        assert!(decode::<Outer>(Raw::Json(" null ")).is_ok());
    }

    #[test]
    fn null_is_refused_at_every_level_with_its_path() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct S {
            #[serde(default)]
            list: Option<Vec<String>>,
            #[serde(default)]
            flag: bool,
            #[serde(default)]
            inner: Option<Inner>,
            #[serde(default)]
            map: std::collections::BTreeMap<String, Value>,
            #[serde(default)]
            nullable: crate::strict::Nullable<String>,
        }
        for (settings, path) in [
            (json!({"list": null}), "list"),
            (json!({"list": ["a", null]}), "list[1]"),
            (json!({"flag": null}), "flag"),
            (json!({"inner": null}), "inner"),
            (json!({"inner": {"key": null}}), "inner.key"),
            (json!({"map": {"k": null}}), "map.k"),
        ] {
            let expected = format!("{path}: {}", NULL_REFUSED);
            let from_value = decode::<S>(&settings).unwrap_err().to_string();
            assert_eq!(from_value, expected, "{settings}");
            let text = settings.to_string();
            let from_text = decode::<S>(Raw::Json(&text)).unwrap_err().to_string();
            assert_eq!(from_text, expected, "{settings}");
        }
        let s = decode::<S>(&json!({"nullable": null})).unwrap();
        assert_eq!(s.nullable, crate::strict::Nullable::Null);
        let s = decode::<S>(&json!({})).unwrap();
        assert_eq!(s.nullable, crate::strict::Nullable::Absent);
        assert!(s.list.is_none() && s.inner.is_none());
    }

    #[test]
    fn json_text_decodes_like_a_value() {
        for text in [
            r#"{"protectedTaints": [{"key": "a"}, {"key": "b", "x": 1}]}"#,
            r#"{"protectedTaints": [{"key": 3}]}"#,
            r#"{"other": 1}"#,
            r#"{"protectedTaints": [{"key": "a"}]}"#,
            r#"{"protectedTaints": [{"key": "a"}]} trailing"#,
            "[",
        ] {
            let from_text = decode::<Outer>(Raw::Json(text))
                .map(|_| ())
                .map_err(|e| e.to_string());
            match serde_json::from_str::<Value>(text) {
                Ok(v) => {
                    let from_value = decode::<Outer>(&v).map(|_| ()).map_err(|e| e.to_string());
                    assert_eq!(from_text, from_value, "{text}");
                }
                Err(_) => assert!(from_text.is_err(), "{text}"),
            }
        }
    }

    #[test]
    fn duplicates() {
        let err = no_duplicates("items", &[1, 2, 1], |i| i.to_string()).unwrap_err();
        assert_eq!(err.to_string(), "items[2]: duplicate entry 1");
        // The second occurrence of the first repeated entry is named, not a later one.
        let err = no_duplicates("items", &[3, 4, 4, 3], |i| i.to_string()).unwrap_err();
        assert_eq!(err.to_string(), "items[2]: duplicate entry 4");
        let err =
            no_duplicates("items", &["a", "b", "c", "a", "b"], |s| format!("{s:?}")).unwrap_err();
        assert_eq!(err.to_string(), "items[3]: duplicate entry \"a\"");
        assert!(no_duplicates("items", &["a", "A", "a "], |s| s.to_string()).is_ok());
        assert!(no_duplicates::<u8>("items", &[], |i| i.to_string()).is_ok());
    }

    #[test]
    fn duplicate_names() {
        let names = NameList::from(["gold", "silver", "bronze", "silver", "gold"]);
        let err = no_duplicate_names("allowed", &names).unwrap_err();
        assert_eq!(err.to_string(), "allowed[3]: duplicate entry \"silver\"");
        assert!(no_duplicate_names("allowed", &NameList::from(["a", "b"])).is_ok());
        assert!(reread(|| no_duplicate_names("allowed", &names)).is_ok());
    }

    proptest::proptest! {
        /// The set-based check names the same entry as a scan of the earlier entries would.
        #[test]
        fn duplicates_match_a_scan(items in proptest::collection::vec(0u8..20, 0..30)) {
            let scan = items
                .iter()
                .enumerate()
                .find(|(i, item)| items[..*i].contains(item))
                .map(|(i, item)| format!("items[{i}]: duplicate entry {item}"));
            let set = no_duplicates("items", &items, |i| i.to_string()).err().map(|e| e.to_string());
            proptest::prop_assert_eq!(set, scan);
        }
    }

    #[test]
    fn reread_skips_duplicate_checks_and_restores_full_checks() {
        assert!(!is_reread());
        assert!(reread(|| no_duplicates("items", &[1, 1], |i| i.to_string())).is_ok());
        assert!(!is_reread(), "full checks are back after the re-read");
        assert!(no_duplicates("items", &[1, 1], |i| i.to_string()).is_err());
    }
}
