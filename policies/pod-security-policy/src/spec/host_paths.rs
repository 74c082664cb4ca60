//! `allowedHostPaths`, decoded straight into one prefix list and checked while decoded.

use std::fmt;

use policy_decode::names::NameList;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use tenancy_rules::restriction::PrefixSet;

/// `allowedHostPaths`: prefixes at path-component boundaries, each with whether the
/// mounts of a matching volume must be read-only. Decoded straight into one prefix list
/// (no allocation per entry); a `pathPrefix` that is not absolute or has `.`/`..`
/// components is refused with its path (`allowedHostPaths[2].pathPrefix`), except when
/// settings are re-read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedHostPaths {
    prefixes: PrefixSet,
    read_only: Vec<bool>,
}

impl AllowedHostPaths {
    /// Whether no path is listed (any host path is allowed).
    pub fn is_empty(&self) -> bool {
        self.read_only.is_empty()
    }

    /// The prefixes as written, in settings order.
    pub fn prefixes(&self) -> &NameList {
        self.prefixes.written()
    }

    /// For each entry `path` is under (settings order), whether it requires read-only
    /// mounts.
    pub fn matching(&self, path: &str) -> Vec<bool> {
        self.prefixes
            .matching(path)
            .into_iter()
            .filter_map(|i| self.read_only.get(i).copied())
            .collect()
    }
}

impl<'de> Deserialize<'de> for AllowedHostPaths {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = AllowedHostPaths;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of {pathPrefix, readOnly}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut prefixes = NameList::new();
                let mut read_only = Vec::new();
                while let Some(ro) = seq.next_element_seed(Entry(&mut prefixes))? {
                    read_only.push(ro);
                }
                Ok(AllowedHostPaths {
                    prefixes: PrefixSet::new(prefixes),
                    read_only,
                })
            }
        }
        deserializer.deserialize_seq(Entries)
    }
}

/// One `{pathPrefix, readOnly}` entry: the prefix is pushed to the list, `readOnly` returned.
struct Entry<'l>(&'l mut NameList);

/// The keys of an `allowedHostPaths` entry.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum HostPathField {
    PathPrefix,
    ReadOnly,
}

impl<'de> DeserializeSeed<'de> for Entry<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Entry<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct with fields pathPrefix and readOnly")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let (mut prefix, mut read_only) = (false, None);
        while let Some(key) = map.next_key::<HostPathField>()? {
            match key {
                HostPathField::PathPrefix if prefix => {
                    return Err(A::Error::duplicate_field("pathPrefix"));
                }
                HostPathField::PathPrefix => {
                    map.next_value_seed(Prefix(&mut *self.0))?;
                    prefix = true;
                }
                HostPathField::ReadOnly if read_only.is_some() => {
                    return Err(A::Error::duplicate_field("readOnly"));
                }
                HostPathField::ReadOnly => read_only = Some(map.next_value()?),
            }
        }
        if !prefix {
            return Err(A::Error::missing_field("pathPrefix"));
        }
        Ok(read_only.unwrap_or(false))
    }
}

/// A `pathPrefix`, checked (unless re-read) and pushed to the list.
struct Prefix<'l>(&'l mut NameList);

impl<'de> DeserializeSeed<'de> for Prefix<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for Prefix<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if !policy_decode::settings::is_reread() {
            tenancy_rules::restriction::check_path_prefix(v).map_err(E::custom)?;
        }
        self.0.push(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: serde_json::Value) -> Result<AllowedHostPaths, String> {
        policy_decode::settings::decode::<AllowedHostPaths>(&v).map_err(|e| e.to_string())
    }

    #[test]
    fn entries_in_order_with_read_only_defaulting_to_false() {
        let h = decode(json!([{"pathPrefix": "/data", "readOnly": true}, {"pathPrefix": "/srv/"}]))
            .unwrap();
        assert_eq!(h.prefixes().iter().collect::<Vec<_>>(), ["/data", "/srv/"]);
        assert_eq!(h.matching("/data/x"), [true]);
        assert_eq!(h.matching("/srv/a"), [false]);
        assert!(h.matching("/etc").is_empty() && !h.is_empty());
        let text = r#"[{"readOnly": false, "pathPrefix": "/a"}]"#;
        let from_text = policy_decode::settings::decode::<AllowedHostPaths>(
            policy_decode::settings::Raw::Json(text),
        );
        assert_eq!(from_text.unwrap().matching("/a"), [false]);
    }

    #[test]
    fn malformed_entries_are_refused_with_their_path() {
        for (v, message) in [
            (
                json!([{"readOnly": true}]),
                "[0]: missing field `pathPrefix`",
            ),
            (
                json!([{"pathPrefix": "/a"}, {"pathPrefix": "/b", "x": 1}]),
                "[1].x: unknown field `x`, expected `pathPrefix` or `readOnly`",
            ),
            (
                json!([{"pathPrefix": "data"}]),
                "[0].pathPrefix: \"data\" is not an absolute path",
            ),
            (
                json!([{"pathPrefix": "/a/../b"}]),
                "[0].pathPrefix: \"/a/../b\" must not contain \".\" or \"..\" components",
            ),
            (
                json!([{"pathPrefix": "/a", "readOnly": "yes"}]),
                "[0].readOnly: invalid type: string \"yes\", expected a boolean",
            ),
            (
                json!({"pathPrefix": "/a"}),
                "invalid type: map, expected a list of {pathPrefix, readOnly}",
            ),
        ] {
            assert_eq!(decode(v.clone()).unwrap_err(), message, "{v}");
        }
        // Settings re-read by `validate` were checked when the policy was loaded.
        let reread = policy_decode::settings::reread(|| decode(json!([{"pathPrefix": "/a/.."}])));
        assert!(reread.is_ok());
    }
}
