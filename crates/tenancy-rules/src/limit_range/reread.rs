//! Settings re-read by `validate` (`docs/semantics.md#cost`): policy-server hands the
//! settings over with every request, and they were validated when the policy was loaded. So
//! they are merged while they are decoded: each item is read into a reused scratch buffer
//! and folded into the merged bounds and defaults at once, a quantity is kept only when it
//! binds (the tightest bound, the first default), and nothing of the item is kept. The
//! result equals the validated merge (tested in `settings`).

use std::fmt::{self, Write};

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use kube_values::quantity::Quantity;

use super::items::{Builder, ItemType, LimitRanges, Origin, Placed, Tightest};

/// A field of a LimitRange item holding a resource list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Min,
    Max,
    Default,
    DefaultRequest,
    Ratio,
}

/// One entry of the item being read: ranges of the scratch text.
#[derive(Clone, Copy, Debug)]
struct Entry {
    field: Field,
    name: (usize, usize),
    text: (usize, usize),
    nanos: i128,
}

/// The merge in progress and the scratch of the item being read.
#[derive(Debug, Default)]
struct Stream {
    builder: Builder,
    text: String,
    entries: Vec<Entry>,
    name: (usize, usize),
}

/// Decodes settings straight into their merged form.
pub(super) fn merge<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LimitRanges, D::Error> {
    let mut stream = Stream::default();
    deserializer.deserialize_map(Top(&mut stream))?;
    stream.builder.finish().map_err(de::Error::custom)
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum TopKey {
    Limits,
    Items,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum RangeKey {
    Limits,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ItemKey {
    #[serde(rename = "type")]
    Type,
    Min,
    Max,
    Default,
    DefaultRequest,
    MaxLimitRequestRatio,
}

struct Top<'s>(&'s mut Stream);

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("limit-range-policy settings")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<TopKey>()? {
            match key {
                TopKey::Limits => map.next_value_seed(Items(&mut *self.0))?,
                TopKey::Items => map.next_value_seed(Ranges(&mut *self.0))?,
            }
        }
        Ok(())
    }
}

/// A list of LimitRanges (`items`).
struct Ranges<'s>(&'s mut Stream);

impl<'de> DeserializeSeed<'de> for Ranges<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Ranges<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of LimitRanges")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Range(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One LimitRange: `{limits: [items]}`.
struct Range<'s>(&'s mut Stream);

impl<'de> DeserializeSeed<'de> for Range<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Range<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a LimitRange spec")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(RangeKey::Limits) = map.next_key::<RangeKey>()? {
            map.next_value_seed(Items(&mut *self.0))?;
        }
        Ok(())
    }
}

/// A list of items (`limits`).
struct Items<'s>(&'s mut Stream);

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of LimitRange items")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Item(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One item, read into the scratch and merged.
struct Item<'s>(&'s mut Stream);

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Item<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a LimitRange item")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let stream = self.0;
        stream.text.clear();
        stream.entries.clear();
        let mut item_type = None;
        while let Some(key) = map.next_key::<ItemKey>()? {
            let field = match key {
                ItemKey::Type => {
                    item_type = Some(map.next_value::<ItemType>()?);
                    continue;
                }
                ItemKey::Min => Field::Min,
                ItemKey::Max => Field::Max,
                ItemKey::Default => Field::Default,
                ItemKey::DefaultRequest => Field::DefaultRequest,
                ItemKey::MaxLimitRequestRatio => Field::Ratio,
            };
            map.next_value_seed(List {
                stream: &mut *stream,
                field,
            })?;
        }
        let item_type = item_type.ok_or_else(|| de::Error::missing_field("type"))?;
        stream.merge(item_type).map_err(de::Error::custom)
    }
}

/// One resource list of the item (`null` is absent).
struct List<'s> {
    stream: &'s mut Stream,
    field: Field,
}

impl<'de> DeserializeSeed<'de> for List<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for List<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of resource names to quantities")
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Name(&mut *self.stream))?.is_some() {
            map.next_value_seed(Value {
                stream: &mut *self.stream,
                field: self.field,
            })?;
        }
        Ok(())
    }
}

/// A resource name, copied into the scratch.
struct Name<'s>(&'s mut Stream);

impl<'de> DeserializeSeed<'de> for Name<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resource name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let start = self.0.text.len();
        self.0.text.push_str(v);
        self.0.name = (start, self.0.text.len());
        Ok(())
    }
}

/// A quantity (a string or a number), copied into the scratch with its value.
struct Value<'s> {
    stream: &'s mut Stream,
    field: Field,
}

impl Value<'_> {
    fn push<E: de::Error>(self, start: usize) -> Result<(), E> {
        let stream = self.stream;
        let text = stream.text.get(start..).unwrap_or_default();
        let nanos = match fast_nanos(text) {
            Some(n) => n,
            None => Quantity::parse(text).map_err(E::custom)?.nanos(),
        };
        let entry = Entry {
            field: self.field,
            name: stream.name,
            text: (start, stream.text.len()),
            nanos,
        };
        // A name given twice in one list: the last one counts, in its place (as when the
        // settings are validated).
        let name = slice(&stream.text, stream.name);
        if let Some(i) = stream
            .entries
            .iter()
            .position(|e| e.field == entry.field && slice(&stream.text, e.name) == name)
        {
            stream.entries.remove(i);
        }
        stream.entries.push(entry);
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Value<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity (a string such as \"500m\" or a number)")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let start = self.stream.text.len();
        self.stream.text.push_str(v);
        self.push(start)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        let start = self.stream.text.len();
        write!(self.stream.text, "{v}").map_err(E::custom)?;
        self.push(start)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let start = self.stream.text.len();
        write!(self.stream.text, "{v}").map_err(E::custom)?;
        self.push(start)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        if !v.is_finite() {
            return Err(E::custom("a quantity must be finite"));
        }
        let start = self.stream.text.len();
        write!(self.stream.text, "{v}").map_err(E::custom)?;
        self.push(start)
    }
}

fn slice(text: &str, (start, end): (usize, usize)) -> &str {
    text.get(start..end).unwrap_or_default()
}

/// The nano units of `text` without allocating for the canonical spellings.
fn fast_nanos(text: &str) -> Option<i128> {
    kube_values::quantity::spelling::nanos(text).map(|(n, _, _)| n)
}

impl Stream {
    /// Folds the item in the scratch into the merge, as the validated merge does: bounds
    /// (`min`, `max`, ratio) first, then a Container item's defaults (`default`, else `max`;
    /// `defaultRequest`, else `default`, else `max`, else `min`), each kept only where none
    /// came before.
    fn merge(&mut self, item_type: ItemType) -> Result<(), String> {
        let entries = std::mem::take(&mut self.entries);
        for field in [Field::Min, Field::Max, Field::Ratio] {
            for e in entries.iter().filter(|e| e.field == field) {
                let name = slice(&self.text, e.name);
                let value = slice(&self.text, e.text);
                let bounds = match item_type {
                    ItemType::PersistentVolumeClaim if name == super::claims::STORAGE => {
                        &mut self.builder.claim
                    }
                    ItemType::PersistentVolumeClaim => continue,
                    ItemType::Pod => match self.builder.acc(name) {
                        Some(acc) => &mut acc.pod,
                        None => continue,
                    },
                    ItemType::Container => match self.builder.acc(name) {
                        Some(acc) => &mut acc.container,
                        None => continue,
                    },
                };
                tighten(bounds, field, e.nanos, value)?;
            }
        }
        if item_type == ItemType::Container {
            let limits = [Field::Default, Field::Max];
            let requests = [
                Field::DefaultRequest,
                Field::Default,
                Field::Max,
                Field::Min,
            ];
            for (fields, limit) in [(&limits[..], true), (&requests[..], false)] {
                for field in fields {
                    for e in entries.iter().filter(|e| e.field == *field) {
                        let name = slice(&self.text, e.name);
                        let value = slice(&self.text, e.text);
                        let Some(acc) = self.builder.acc(name) else {
                            continue;
                        };
                        let slot = match limit {
                            true => &mut acc.default,
                            false => &mut acc.default_request,
                        };
                        if slot.is_none() {
                            *slot = Some(placed(value)?);
                        }
                    }
                }
            }
        }
        self.entries = entries;
        Ok(())
    }
}

/// A value kept in the merge (no path: nothing can be refused now).
fn placed(text: &str) -> Result<Placed, String> {
    Ok(Placed {
        value: Quantity::parse(text).map_err(|e| e.to_string())?,
        at: String::new(),
        origin: Origin::Written,
    })
}

/// Keeps `value` as the `field` bound when it is tighter (a larger `min`, a smaller `max`
/// or ratio).
fn tighten(bounds: &mut Tightest, field: Field, nanos: i128, value: &str) -> Result<(), String> {
    let (slot, larger) = match field {
        Field::Min => (&mut bounds.min, true),
        Field::Max => (&mut bounds.max, false),
        _ => (&mut bounds.ratio, false),
    };
    let tighter = slot.as_ref().is_none_or(|old| {
        let old = old.value.nanos();
        (nanos > old) == larger && nanos != old
    });
    if tighter {
        *slot = Some(placed(value)?);
    }
    Ok(())
}
