//! Admission requests: loading (bare or wrapped in an AdmissionReview),
//! overriding with a JSON merge patch.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result, read_text};

/// Extracts the AdmissionRequest from a document that is either the
/// request itself or an `AdmissionReview` wrapping it.
///
/// ```
/// use serde_json::json;
/// let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
///                     "request": {"uid": "1", "operation": "CREATE"}});
/// let req = policy_host::request::unwrap_review(review, "inline").unwrap();
/// assert_eq!(req["uid"], "1");
/// ```
pub fn unwrap_review(document: Value, origin: &str) -> Result<Value> {
    let Value::Object(mut map) = document else {
        return Err(Error::parse(
            origin,
            "an AdmissionRequest or AdmissionReview must be a JSON object",
        ));
    };
    let is_review = map.get("kind").and_then(Value::as_str) == Some("AdmissionReview")
        || (map.get("request").is_some_and(Value::is_object) && !map.contains_key("operation"));
    if is_review {
        match map.remove("request") {
            Some(request @ Value::Object(_)) => Ok(request),
            _ => Err(Error::parse(
                origin,
                "AdmissionReview without a `request` object",
            )),
        }
    } else {
        Ok(Value::Object(map))
    }
}

/// Parses request text (JSON, or YAML for `.yaml`/`.yml` origins).
pub fn parse_request(text: &str, origin: &str) -> Result<Value> {
    let document: Value = if origin.ends_with(".yaml") || origin.ends_with(".yml") {
        serde_yaml::from_str(text).map_err(|e| Error::parse(origin, e))?
    } else {
        serde_json::from_str(text).map_err(|e| Error::parse(origin, e))?
    };
    unwrap_review(document, origin)
}

/// Reads an AdmissionRequest (bare or as an AdmissionReview) from a file.
pub fn load_request(path: &Path) -> Result<Value> {
    parse_request(&read_text(path)?, &path.display().to_string())
}

/// Applies an RFC 7386 JSON merge patch (`null` deletes a field, objects
/// merge recursively, anything else replaces).
///
/// ```
/// use serde_json::json;
/// let mut req = json!({"operation": "CREATE", "userInfo": {"username": "a", "groups": ["x"]}});
/// policy_host::request::merge_patch(&mut req, &json!({"operation": "UPDATE", "userInfo": {"groups": null}}));
/// assert_eq!(req, json!({"operation": "UPDATE", "userInfo": {"username": "a"}}));
/// ```
pub fn merge_patch(document: &mut Value, patch: &Value) {
    json_patch::merge(document, patch);
}

/// The `validate` payload the host sends to the guest, with object keys in sorted order.
pub fn validate_payload(request: &Value, settings: &Value) -> Value {
    serde_json::json!({ "request": canonical(request), "settings": canonical(settings) })
}

/// `value` with the keys of every object in sorted order.
///
/// serde_json keeps insertion order or sorts keys depending on a feature that Cargo unifies
/// across the workspace; canonical values make what the guest receives, and the order of
/// the JSON Patch operations, the same in every build.
///
/// ```
/// let v = serde_json::json!({"b": 1, "a": {"d": 2, "c": 3}});
/// let keys: Vec<String> = policy_host::request::canonical(&v).as_object().unwrap().keys().cloned().collect();
/// assert_eq!(keys, ["a", "b"]);
/// ```
pub fn canonical(value: &Value) -> Value {
    canonical_cow(value).into_owned()
}

/// Whether every object in `value` has its keys in sorted order.
pub fn is_canonical(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            map.keys().zip(map.keys().skip(1)).all(|(a, b)| a <= b)
                && map.values().all(is_canonical)
        }
        Value::Array(items) => items.iter().all(is_canonical),
        _ => true,
    }
}

/// [`canonical`] without a copy when `value` already is canonical (a request the host
/// serialised itself, such as the benchmarks').
pub fn canonical_cow(value: &Value) -> std::borrow::Cow<'_, Value> {
    if is_canonical(value) {
        return std::borrow::Cow::Borrowed(value);
    }
    std::borrow::Cow::Owned(canonical_copy(value))
}

/// Puts every object of `value` in canonical key order in place: an object already sorted is
/// only checked, so that a large object the policy changed in one place is not copied.
pub fn canonicalize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if !map.keys().zip(map.keys().skip(1)).all(|(a, b)| a <= b) {
                map.sort_keys();
            }
            map.values_mut().for_each(canonicalize);
        }
        Value::Array(items) => items.iter_mut().for_each(canonicalize),
        _ => {}
    }
}

fn canonical_copy(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), canonical_copy(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical_copy).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonicalize_sorts_in_place_like_the_copy() {
        let mut v = json!({"b": [{"y": 1, "x": 2}], "a": {"d": null, "c": true}, "e": 1});
        let copy = canonical(&v);
        canonicalize(&mut v);
        assert!(is_canonical(&v));
        assert_eq!(v, copy);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":{"c":true,"d":null},"b":[{"x":2,"y":1}],"e":1}"#
        );
    }

    #[test]
    fn canonical_copies_only_what_is_not_sorted() {
        let sorted = json!({"a": [{"x": 1, "y": 2}], "b": {"c": null}});
        assert!(is_canonical(&sorted));
        assert!(matches!(
            canonical_cow(&sorted),
            std::borrow::Cow::Borrowed(_)
        ));
        let unsorted: Value = serde_json::from_str(r#"{"b": 1, "a": [{"y": 2, "x": 1}]}"#).unwrap();
        assert!(!is_canonical(&unsorted));
        let c = canonical(&unsorted);
        assert!(is_canonical(&c));
        assert_eq!(c, unsorted);
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"a":[{"x":1,"y":2}],"b":1}"#
        );
    }

    #[test]
    fn bare_and_review_load_the_same() {
        let bare = json!({"uid": "u", "operation": "CREATE", "object": {"kind": "Pod"}});
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": bare.clone()});
        assert_eq!(unwrap_review(bare.clone(), "t").unwrap(), bare);
        assert_eq!(unwrap_review(review, "t").unwrap(), bare);
        // kind-less review
        let review = json!({"request": bare.clone()});
        assert_eq!(unwrap_review(review, "t").unwrap(), bare);
        assert!(unwrap_review(json!([1]), "t").is_err());
        assert!(unwrap_review(json!({"kind": "AdmissionReview"}), "t").is_err());
    }

    #[test]
    fn parses_json_and_yaml_files() {
        let dir = std::env::temp_dir().join(format!("testdrive-req-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let j = dir.join("r.json");
        std::fs::write(
            &j,
            r#"{"kind":"AdmissionReview","request":{"uid":"1","operation":"DELETE"}}"#,
        )
        .unwrap();
        assert_eq!(load_request(&j).unwrap()["operation"], "DELETE");
        let y = dir.join("r.yaml");
        std::fs::write(&y, "uid: '2'\noperation: CREATE\n").unwrap();
        assert_eq!(load_request(&y).unwrap()["uid"], "2");
        assert!(load_request(&dir.join("missing.json")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn merge_patch_overrides() {
        let mut req = json!({
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["a"]},
            "object": {"spec": {"tolerations": [{"key": "x"}], "nodeName": "n"}}
        });
        merge_patch(
            &mut req,
            &json!({
                "operation": "UPDATE",
                "userInfo": {"username": "bob", "groups": ["tenantA-users"]},
                "object": {"spec": {"nodeName": null}}
            }),
        );
        assert_eq!(
            req,
            json!({
                "operation": "UPDATE",
                "userInfo": {"username": "bob", "groups": ["tenantA-users"]},
                "object": {"spec": {"tolerations": [{"key": "x"}]}}
            })
        );
    }
}
