//! Lists of object restrictions (`containers`, `image`, `volumes`): any-of semantics, and a
//! single object accepted where a list is expected.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::Restriction;
use policy_admission::verdict::Violation;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::path::FieldPath;

/// A setting that is one object or a list of objects (`volumes: {…}` or `volumes: [{…}]`).
///
/// Unlike `#[serde(untagged)]`, errors inside the object keep their message and path
/// (`unknown field`, wrong types), so settings refusals stay precise.
///
/// ```
/// use tenancy_rules::restriction::{OneOrList, RawBool};
/// let one: OneOrList<RawBool> = serde_json::from_str(r#"{"require": false}"#).unwrap();
/// assert_eq!(one.into_vec().len(), 1);
/// let many: OneOrList<RawBool> = serde_json::from_str(r#"[{"require": false}, {}]"#).unwrap();
/// assert_eq!(many.into_vec().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum OneOrList<T> {
    /// A single object (boxed: raw restriction settings are large, and serde moves a
    /// value by copying it).
    One(Box<T>),
    /// A list of objects.
    List(Vec<T>),
}

impl<T> OneOrList<T> {
    /// The objects, in order.
    pub fn into_vec(self) -> Vec<T> {
        match self {
            OneOrList::One(t) => vec![*t],
            OneOrList::List(v) => v,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrListVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for OneOrListVisitor<T> {
            type Value = OneOrList<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object or a list of objects")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| OneOrList::One(Box::new(t)))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(SeqAccessDeserializer::new(seq)).map(OneOrList::List)
            }
        }

        deserializer.deserialize_any(OneOrListVisitor(PhantomData))
    }
}

/// Validated alternatives: a value must satisfy at least one of them; no alternatives (the
/// setting absent or `[]`) restricts nothing.
///
/// When every alternative fails, a single alternative's violations are reported as they
/// are; with several, every alternative's violations are reported, each suffixed
/// ` (alternative i of n)`. A malformed value is an error as soon as any alternative
/// meets it.
#[derive(Debug, Clone, PartialEq)]
pub struct AnyOf<T> {
    alternatives: Vec<T>,
}

impl<T> Default for AnyOf<T> {
    fn default() -> Self {
        AnyOf {
            alternatives: Vec::new(),
        }
    }
}

impl<T> AnyOf<T> {
    /// Builds each alternative from its raw settings. Errors carry the element index
    /// (`[1].image`) when the setting was a list and the bare path when it was one object;
    /// place them below the setting's name with [`SettingsError::under`].
    ///
    /// ```
    /// use tenancy_rules::restriction::{AnyOf, BoolRestriction, OneOrList, RawBool};
    /// let raw: OneOrList<RawBool> = serde_json::from_str(r#"[{}, {"requireNil": true, "require": true}]"#).unwrap();
    /// let err = AnyOf::build(Some(raw), BoolRestriction::build).unwrap_err().under("privileged");
    /// assert_eq!(err.to_string(), "privileged[1].requireNil: cannot be combined with require");
    /// ```
    pub fn build<R>(
        raw: Option<OneOrList<R>>,
        mut build: impl FnMut(R) -> Result<T, SettingsError>,
    ) -> Result<AnyOf<T>, SettingsError> {
        let alternatives = match raw {
            None => Vec::new(),
            Some(OneOrList::One(r)) => vec![build(*r)?],
            Some(OneOrList::List(rs)) => rs
                .into_iter()
                .enumerate()
                .map(|(i, r)| build(r).map_err(|e| e.under(&format!("[{i}]"))))
                .collect::<Result<_, _>>()?,
        };
        Ok(AnyOf { alternatives })
    }

    /// Alternatives that are already validated.
    pub fn new(alternatives: Vec<T>) -> AnyOf<T> {
        AnyOf { alternatives }
    }

    /// The alternatives, in settings order.
    pub fn alternatives(&self) -> &[T] {
        &self.alternatives
    }

    /// Whether there are no alternatives (everything passes).
    pub fn is_unrestricted(&self) -> bool {
        self.alternatives.is_empty()
    }

    /// Runs `check` for each alternative until one records no violation; if none does,
    /// appends the violations as described on [`AnyOf`]. Returns whether one alternative
    /// was satisfied (true when unrestricted).
    pub fn check_with(
        &self,
        out: &mut Vec<Violation>,
        mut check: impl FnMut(&T, &mut Vec<Violation>) -> Result<(), PolicyError>,
    ) -> Result<bool, PolicyError> {
        let n = self.alternatives.len();
        let mut failures = Vec::with_capacity(n);
        for alternative in &self.alternatives {
            let mut scratch = Vec::new();
            check(alternative, &mut scratch)?;
            if scratch.is_empty() {
                return Ok(true);
            }
            failures.push(scratch);
        }
        if n == 1 {
            out.extend(failures.into_iter().flatten());
        } else {
            for (i, violations) in failures.into_iter().enumerate() {
                out.extend(violations.into_iter().map(|v| Violation {
                    path: v.path,
                    problem: format!("{} (alternative {} of {n})", v.problem, i + 1),
                }));
            }
        }
        Ok(n == 0)
    }
}

impl<T: Restriction> Restriction for AnyOf<T> {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.check_with(out, |alternative, scratch| {
            alternative.check(value, path, scratch)
        })
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::restriction::{RawString, StringRestriction};
    use rstest::rstest;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct RawImage {
        registry: Option<RawString>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        image: Option<OneOrList<RawImage>>,
    }

    fn registries(settings: Value) -> Result<AnyOf<StringRestriction>, SettingsError> {
        let s: Settings = serde_json::from_value(settings).unwrap();
        AnyOf::build(s.image, |img| {
            StringRestriction::build(img.registry.unwrap_or_default())
                .map_err(|e| e.under("registry"))
        })
        .map_err(|e| e.under("image"))
    }

    fn run(r: &AnyOf<StringRestriction>, v: &str) -> Vec<String> {
        let mut out = Vec::new();
        r.check(Some(&json!(v)), &FieldPath::root("img"), &mut out)
            .unwrap();
        out.into_iter().map(|v| v.to_string()).collect()
    }

    #[rstest]
    #[case(json!({}), "gcr.io", &[])]
    #[case(json!({"image": []}), "gcr.io", &[])]
    #[case(json!({"image": {"registry": {"whitelist": ["docker.io"]}}}), "docker.io", &[])]
    #[case(json!({"image": {"registry": {"whitelist": ["docker.io"]}}}), "gcr.io", &[r#"img: "gcr.io" is not in whitelist [docker.io]"#])]
    #[case(json!({"image": [{"registry": {"whitelist": ["docker.io"]}}]}), "gcr.io", &[r#"img: "gcr.io" is not in whitelist [docker.io]"#])]
    #[case(json!({"image": [{"registry": {"whitelist": ["docker.io"]}}, {"registry": {"regex": "gcr\\.io"}}]}), "gcr.io", &[])]
    #[case(json!({"image": [{"registry": {"whitelist": ["docker.io"]}}, {"registry": {"regex": "gcr\\.io"}}]}), "quay.io", &[
        r#"img: "quay.io" is not in whitelist [docker.io] (alternative 1 of 2)"#,
        r#"img: "quay.io" does not match regex ["gcr\\.io"] (alternative 2 of 2)"#,
    ])]
    #[case(json!({"image": [{"registry": {"whitelist": ["docker.io"]}}, {}]}), "quay.io", &[])]
    fn any_of_checks(#[case] settings: Value, #[case] value: &str, #[case] expected: &[&str]) {
        assert_eq!(run(&registries(settings).unwrap(), value), expected);
    }

    #[rstest]
    #[case(json!({"image": [{}, {"registry": {"regex": "("}}]}), r#"image[1].registry.regex: invalid regex "(""#)]
    #[case(json!({"image": {"registry": {"whitelist": []}}}), "image.registry.whitelist: must not be empty")]
    fn any_of_refusals_name_the_element(#[case] settings: Value, #[case] message: &str) {
        let err = registries(settings).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn deserialization_errors_keep_their_message() {
        let err =
            serde_json::from_value::<Settings>(json!({"image": {"registy": {}}})).unwrap_err();
        assert!(err.to_string().contains("unknown field `registy`"), "{err}");
        let err =
            serde_json::from_value::<Settings>(json!({"image": [{"registry": {"whitelist": 1}}]}))
                .unwrap_err();
        assert!(
            err.to_string().contains("invalid type: integer `1`"),
            "{err}"
        );
        let err = serde_json::from_value::<Settings>(json!({"image": "docker.io"})).unwrap_err();
        assert!(
            err.to_string().contains("an object or a list of objects"),
            "{err}"
        );
    }

    #[test]
    fn path_to_error_tracks_list_elements() {
        let json = r#"{"image": [{}, {"registry": {"blacklist": [1]}}]}"#;
        let de = &mut serde_json::Deserializer::from_str(json);
        let err = serde_path_to_error::deserialize::<_, Settings>(de).unwrap_err();
        assert_eq!(err.path().to_string(), "image[1].registry.blacklist[0]");
    }

    #[test]
    fn malformed_values_are_errors() {
        let r = registries(json!({"image": [{"registry": {"whitelist": ["a"]}}, {}]})).unwrap();
        let err = r
            .check(Some(&json!(1)), &FieldPath::root("img"), &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.to_string(), "img: expected a string");
    }

    #[test]
    fn check_with_reports_satisfaction() {
        let none: AnyOf<StringRestriction> = AnyOf::default();
        assert!(none.is_unrestricted());
        assert!(none.check_with(&mut Vec::new(), |_, _| Ok(())).unwrap());
        let one = registries(json!({"image": {"registry": {"whitelist": ["a"]}}})).unwrap();
        assert_eq!(one.alternatives().len(), 1);
        let mut out = Vec::new();
        let ok = one
            .check_with(&mut out, |r, o| {
                r.check_str(Some("b"), &FieldPath::root("x"), o);
                Ok(())
            })
            .unwrap();
        assert!(!ok);
        assert_eq!(out.len(), 1);
    }
}
