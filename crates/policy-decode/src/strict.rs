//! Strict decoding of settings and lookup answers: a serde deserializer adapter under which
//!
//! * a struct is read only from a map. serde's derived structs also take a list, field by
//!   field in declaration order, so `roleRef: ["ClusterRole", "cluster-admin"]` would read as
//!   a role reference and exempt a requester (`docs/semantics.md#lookups`);
//! * with [`SettingsRules`], `null` is a wrong type wherever it is read: as an optional value
//!   (never "not configured") and as a value of any other type (`docs/semantics.md#settings`).
//!   Absent keys are untouched (serde never asks for them); a key whose section gives `null`
//!   a meaning reads it as a [`Nullable`]. With [`AnswerRules`] (lookup answers), `null` is
//!   an absent value, as the API server means it.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

/// The problem of a `null` in settings.
pub const NULL_REFUSED: &str = "invalid type: null (write a value, or leave the key out)";

/// What a [`Strict`] deserializer refuses besides a list where a struct belongs.
pub trait Rules: Copy {
    /// Whether `null` is refused wherever it is read.
    const REFUSE_NULL: bool;
}

/// The rules of settings: `null` is refused at every level.
#[derive(Clone, Copy, Debug, Default)]
pub struct SettingsRules;

impl Rules for SettingsRules {
    const REFUSE_NULL: bool = true;
}

/// The rules of lookup answers: `null` is an absent value.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnswerRules;

impl Rules for AnswerRules {
    const REFUSE_NULL: bool = false;
}

/// A deserializer decoding under `R` (module docs).
///
/// ```
/// use serde::Deserialize;
/// use policy_decode::strict::{AnswerRules, SettingsRules, Strict};
/// #[derive(Debug, Deserialize)]
/// struct Role { #[allow(dead_code)] kind: String, #[allow(dead_code)] name: Option<String> }
/// let read = |text: &str, settings: bool| {
///     let mut de = serde_json::Deserializer::from_str(text);
///     let r = if settings { Role::deserialize(Strict(&mut de, SettingsRules)) }
///             else { Role::deserialize(Strict(&mut de, AnswerRules)) };
///     r.map_err(|e| e.to_string())
/// };
/// assert!(read(r#"["ClusterRole", "admin"]"#, false).unwrap_err().starts_with("invalid type: sequence, expected struct Role"));
/// assert!(read(r#"{"kind": "ClusterRole", "name": null}"#, false).is_ok());
/// assert!(read(r#"{"kind": "ClusterRole", "name": null}"#, true).unwrap_err().starts_with("invalid type: null (write a value"));
/// ```
#[derive(Debug)]
pub struct Strict<D, R>(pub D, pub R);

/// A seed deserialized under [`Strict`].
#[derive(Debug)]
pub struct StrictSeed<S, R>(pub S, pub R);

impl<'de, S: DeserializeSeed<'de>, R: Rules> DeserializeSeed<'de> for StrictSeed<S, R> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(deserializer, self.1))
    }
}

/// Settings deserialized under [`Strict`] with [`SettingsRules`] (inside an `Option`, a
/// `null` document stays `None`: settings `null` are read as `{}`).
#[derive(Debug)]
pub struct Refusing<T>(pub T);

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Refusing<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(Strict(deserializer, SettingsRules)).map(Refusing)
    }
}

/// The newtype name by which [`Nullable`] asks [`Strict`] to let `null` through.
const NULLABLE: &str = "$policy_decode::Nullable";

/// A settings key that may be `null`, for the few keys whose section gives `null` its own
/// meaning (run-once-deadline `overrideAnnotation`, resource-ratio `disableAnnotation`);
/// read it with `#[serde(default)]`, so that a key left out is [`Nullable::Absent`].
///
/// ```
/// use serde::Deserialize;
/// use policy_decode::strict::{Nullable, SettingsRules, Strict};
/// #[derive(Debug, Deserialize)]
/// struct S { #[serde(default)] annotation: Nullable<String> }
/// let read = |text: &str| S::deserialize(Strict(&mut serde_json::Deserializer::from_str(text), SettingsRules)).unwrap().annotation;
/// assert_eq!(read(r#"{"annotation": null}"#), Nullable::Null);
/// assert_eq!(read(r#"{"annotation": "a"}"#), Nullable::Value("a".to_owned()));
/// assert_eq!(read(r#"{}"#), Nullable::Absent);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Nullable<T> {
    /// The key is not written.
    #[default]
    Absent,
    /// The key is written `null`.
    Null,
    /// The key holds a value.
    Value(T),
}

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NullableVisitor<T>(PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for NullableVisitor<T> {
            type Value = Nullable<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or null")
            }
            fn visit_none<E: de::Error>(self) -> Result<Nullable<T>, E> {
                Ok(Nullable::Null)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Nullable<T>, E> {
                Ok(Nullable::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Nullable<T>, D::Error> {
                T::deserialize(d).map(Nullable::Value)
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Nullable<T>, D::Error> {
                let value = <Option<T> as de::Deserialize>::deserialize(d)?;
                Ok(value.map_or(Nullable::Null, Nullable::Value))
            }
        }
        deserializer.deserialize_newtype_struct(NULLABLE, NullableVisitor(PhantomData))
    }
}

/// What the value a [`Wrap`] visits was asked for as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// A struct: a map only.
    Struct,
    /// An optional value: `null` is refused under [`SettingsRules`].
    Option,
    /// A [`Nullable`], or anything else.
    Other,
}

/// A visitor whose nested values are deserialized under [`Strict`].
struct Wrap<V, R> {
    visitor: V,
    rules: R,
    asked: Asked,
}

impl<V, R> Wrap<V, R> {
    fn new(visitor: V, rules: R, asked: Asked) -> Self {
        Wrap {
            visitor,
            rules,
            asked,
        }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method(Wrap::new(visitor, self.1, Asked::Other))
        }
    )*};
}

impl<'de, D: Deserializer<'de>, R: Rules> Deserializer<'de> for Strict<D, R> {
    type Error = D::Error;

    forward_deserialize!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_option(Wrap::new(visitor, self.1, Asked::Option))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_unit_struct(name, Wrap::new(visitor, self.1, Asked::Other))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        if name == NULLABLE {
            // a key whose section gives `null` a meaning: read as an option, `null` included
            return self
                .0
                .deserialize_option(Wrap::new(visitor, self.1, Asked::Other));
        }
        self.0
            .deserialize_newtype_struct(name, Wrap::new(visitor, self.1, Asked::Other))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_tuple(len, Wrap::new(visitor, self.1, Asked::Other))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_tuple_struct(name, len, Wrap::new(visitor, self.1, Asked::Other))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, Wrap::new(visitor, self.1, Asked::Struct))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_enum(name, variants, Wrap::new(visitor, self.1, Asked::Other))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>, R: Rules> Visitor<'de> for Wrap<V, R> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    forward_visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>)
    );

    /// `null` read as a value (a list, a number, a JSON value): refused under the settings
    /// rules.
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        if R::REFUSE_NULL {
            return Err(E::custom(NULL_REFUSED));
        }
        self.visitor.visit_unit()
    }

    /// `null` read as an optional value: refused under the settings rules, never "not
    /// configured" (a [`Nullable`] takes it).
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        if R::REFUSE_NULL && self.asked == Asked::Option {
            return Err(E::custom(NULL_REFUSED));
        }
        self.visitor.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_some(Strict(d, self.rules))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_newtype_struct(Strict(d, self.rules))
    }

    /// A list where a struct belongs is a wrong type, never the struct's fields in order.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        if self.asked == Asked::Struct {
            return Err(de::Error::invalid_type(Unexpected::Seq, &self));
        }
        self.visitor.visit_seq(Strict(seq, self.rules))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Strict(map, self.rules))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_enum(Strict(data, self.rules))
    }
}

impl<'de, A: SeqAccess<'de>, R: Rules> SeqAccess<'de> for Strict<A, R> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(StrictSeed(seed, self.1))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>, R: Rules> MapAccess<'de> for Strict<A, R> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(seed)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(StrictSeed(seed, self.1))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>, R: Rules> EnumAccess<'de> for Strict<A, R> {
    type Error = A::Error;
    type Variant = Strict<A::Variant, R>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, Strict(variant, self.1)))
    }
}

impl<'de, A: VariantAccess<'de>, R: Rules> VariantAccess<'de> for Strict<A, R> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(StrictSeed(seed, self.1))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0
            .tuple_variant(len, Wrap::new(visitor, self.1, Asked::Other))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0
            .struct_variant(fields, Wrap::new(visitor, self.1, Asked::Struct))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct RoleRef {
        kind: String,
        name: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Binding {
        #[serde(rename = "roleRef")]
        role_ref: RoleRef,
        subjects: Option<Vec<RoleRef>>,
    }

    fn answer(text: &str) -> Result<Binding, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(Strict(&mut de, AnswerRules)).map_err(|e| {
            format!("{}: {}", e.path(), e.inner())
                .split(" at line")
                .next()
                .unwrap_or_default()
                .to_owned()
        })
    }

    #[test]
    fn a_list_is_never_a_struct() {
        let ok = answer(r#"{"roleRef": {"kind": "ClusterRole", "name": "a"}, "subjects": null}"#);
        assert_eq!(ok.unwrap().subjects, None);
        assert_eq!(
            answer(r#"{"roleRef": ["ClusterRole", "cluster-admin"]}"#).unwrap_err(),
            "roleRef: invalid type: sequence, expected struct RoleRef"
        );
        assert_eq!(
            answer(
                r#"{"roleRef": {"kind": "ClusterRole", "name": "a"}, "subjects": [["User", "u"]]}"#
            )
            .unwrap_err(),
            "subjects[0]: invalid type: sequence, expected struct RoleRef"
        );
        // lists of structs and maps stay what they are
        let many = answer(
            r#"{"roleRef": {"kind": "K", "name": "n"}, "subjects": [{"kind": "User", "name": "u"}]}"#,
        );
        assert_eq!(many.unwrap().subjects.map(|s| s.len()), Some(1));
    }

    #[test]
    fn null_is_absent_in_answers_and_refused_in_settings() {
        #[derive(Debug, Deserialize)]
        struct S {
            #[allow(dead_code)]
            name: Option<String>,
        }
        let text = r#"{"name": null}"#;
        let mut de = serde_json::Deserializer::from_str(text);
        assert!(
            S::deserialize(Strict(&mut de, AnswerRules))
                .unwrap()
                .name
                .is_none()
        );
        let mut de = serde_json::Deserializer::from_str(text);
        let err = S::deserialize(Strict(&mut de, SettingsRules)).unwrap_err();
        assert!(err.to_string().starts_with(NULL_REFUSED), "{err}");
    }
}
