//! `null` refused in settings (`docs/semantics.md#settings`): a deserializer adapter under
//! which an optional value written as `null` is a wrong type, at every level, instead of
//! "not configured". Absent keys are untouched (serde never asks for them); a key whose
//! section gives `null` a meaning reads it as a [`Nullable`].

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// The problem of a `null` where a value is expected.
pub const NULL_REFUSED: &str = "invalid type: null (write a value, or leave the key out)";

/// The newtype name by which [`Nullable`] asks [`NoNull`] to let `null` through.
const NULLABLE: &str = "$policy_core::Nullable";

/// A settings key that may be `null`, for the few keys whose section gives `null` its own
/// meaning (run-once-deadline `overrideAnnotation`, resource-ratio `disableAnnotation`);
/// read it with `#[serde(default)]`, so that a key left out is [`Nullable::Absent`].
///
/// ```
/// use serde::Deserialize;
/// use policy_core::settings::no_null::{NoNull, Nullable};
/// #[derive(Debug, Deserialize)]
/// struct S { #[serde(default)] annotation: Nullable<String> }
/// let read = |text: &str| S::deserialize(NoNull(&mut serde_json::Deserializer::from_str(text))).unwrap().annotation;
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
        struct NullableVisitor<T>(std::marker::PhantomData<T>);
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
        deserializer.deserialize_newtype_struct(NULLABLE, NullableVisitor(std::marker::PhantomData))
    }
}

/// A deserializer under which `null` is refused wherever it is read: as an optional value
/// (never "not configured") and as a value of any other type.
///
/// ```
/// use serde::Deserialize;
/// use policy_core::settings::no_null::NoNull;
/// #[derive(Debug, Deserialize)]
/// struct S { #[allow(dead_code)] allowed: Option<Vec<String>> }
/// let mut de = serde_json::Deserializer::from_str(r#"{"allowed": null}"#);
/// let err = S::deserialize(NoNull(&mut de)).unwrap_err().to_string();
/// assert!(err.starts_with("invalid type: null"), "{err}");
/// let mut de = serde_json::Deserializer::from_str(r#"{}"#);
/// assert!(S::deserialize(NoNull(&mut de)).unwrap().allowed.is_none());
/// ```
#[derive(Debug)]
pub struct NoNull<D>(pub D);

/// A seed deserialized under [`NoNull`].
#[derive(Debug)]
pub struct NoNullSeed<S>(pub S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for NoNullSeed<S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(NoNull(deserializer))
    }
}

/// A value deserialized under [`NoNull`] (inside an `Option`, a `null` document stays
/// `None`: the settings `null` are read as `{}`).
#[derive(Debug)]
pub struct Refusing<T>(pub T);

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Refusing<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(NoNull(deserializer)).map(Refusing)
    }
}

/// A visitor whose nested values are deserialized under [`NoNull`].
struct Wrap<V>(V);

/// The visitor of an optional value under [`NoNull`]: `null` is refused.
struct Optional<V>(V);

macro_rules! forward_deserialize {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method(Wrap(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for NoNull<D> {
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
        self.0.deserialize_option(Optional(visitor))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        if name == NULLABLE {
            // a key whose section gives `null` a meaning: read as an option, `null` included
            return self.0.deserialize_option(Wrap(visitor));
        }
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.0.$method(v)
        }
    )*};
}

macro_rules! visitor_body {
    () => {
        type Value = V::Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
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

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
            self.0.visit_some(NoNull(d))
        }

        fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
            self.0.visit_newtype_struct(NoNull(d))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
            self.0.visit_seq(NoNull(seq))
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
            self.0.visit_map(NoNull(map))
        }

        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
            self.0.visit_enum(NoNull(data))
        }
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    visitor_body!();

    /// A `null` read as a value (a list, a number, a JSON value): refused.
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        Err(E::custom(NULL_REFUSED))
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Optional<V> {
    visitor_body!();

    /// A `null` read as an optional value: refused, never "not configured".
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        Err(E::custom(NULL_REFUSED))
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        Err(E::custom(NULL_REFUSED))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for NoNull<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(NoNullSeed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for NoNull<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(seed)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(NoNullSeed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for NoNull<A> {
    type Error = A::Error;
    type Variant = NoNull<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, NoNull(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for NoNull<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(NoNullSeed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
    }
}
