//! README rule 2: an organization's limit — its ConfigMap's value when configured, found and
//! non-empty; else `overrides[org]`; else `defaultQuota`.

use policy_admission::cluster::{GetRequest, Lookups};
use policy_decode::PolicyError;
use serde_json::Value;

use crate::settings::{OverrideConfigMap, Quota, Settings};

/// The limit of `org`: `Ok(Ok(limit))`, or `Ok(Err(problem))` when its ConfigMap holds a
/// value that is not a non-negative integer (a violation naming the ConfigMap), or a failed
/// ConfigMap lookup.
pub fn of(
    org: &str,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Result<Quota, String>, PolicyError> {
    if let Some(config) = &settings.override_config_map {
        match from_config_map(org, config, lookups)? {
            Some(Ok(quota)) => return Ok(Ok(quota)),
            Some(Err(problem)) => return Ok(Err(problem)),
            None => {}
        }
    }
    Ok(Ok(settings.quota_of(org)))
}

/// The ConfigMap's value: `None` when the ConfigMap does not exist (or cannot, its name
/// being invalid), lacks the key or holds it empty.
fn from_config_map(
    org: &str,
    config: &OverrideConfigMap,
    lookups: &mut Lookups<'_>,
) -> Result<Option<Result<Quota, String>>, PolicyError> {
    let Some(name) = config.name_for(org) else {
        return Ok(None);
    };
    let request = GetRequest::namespaced("v1", "ConfigMap", &config.namespace, &name);
    let value = lookups.read(&request, |config_map| {
        let data = config_map.read(|at| at.get_str_map("data"))?;
        Ok(data
            .and_then(|d| d.get(&config.key))
            .and_then(Value::as_str))
    })?;
    let Some(text) = value.flatten().filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    Ok(Some(parse(text).ok_or_else(|| {
        format!(
            "ConfigMap {}/{name}: {} {text:?} is not a non-negative integer",
            config.namespace, config.key
        )
    })))
}

/// A ConfigMap value as a quota: ASCII digits only (no sign, space or newline); a number
/// beyond `u64` is unlimited.
fn parse(text: &str) -> Option<Quota> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Quota(text.parse().unwrap_or(u64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_decode::settings::Validated;
    use serde_json::json;

    fn settings() -> Settings {
        Settings::parse(&json!({
            "defaultQuota": 25, "overrides": {"acme": 40},
            "overrideConfigMap": {"namespace": "appuio-cloud", "namePrefix": "override-", "key": "namespaceQuota"}
        }))
        .unwrap()
    }

    fn cm(org: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("override-{org}"), "namespace": "appuio-cloud"}, "data": data})
    }

    #[test]
    fn config_map_then_overrides_then_default() {
        let mut cluster = Objects::new(vec![
            cm("acme", json!({"namespaceQuota": "30"})),
            cm("beta", json!({"namespaceQuota": "ten"})),
            cm("gamma", json!({"namespaceQuota": ""})),
            cm("delta", json!({"other": "3"})),
            cm("eps", json!({"namespaceQuota": "99999999999999999999999"})),
            cm("zeta", json!({"namespaceQuota": " 3"})),
        ]);
        let mut lookups = Lookups::new(&mut cluster);
        let s = settings();
        let mut limit = |org: &str| of(org, &s, &mut lookups).unwrap();
        assert_eq!(limit("acme"), Ok(Quota(30)));
        assert_eq!(
            limit("beta"),
            Err("ConfigMap appuio-cloud/override-beta: namespaceQuota \"ten\" is not a non-negative integer".to_owned())
        );
        assert_eq!(limit("gamma"), Ok(Quota(25)));
        assert_eq!(limit("delta"), Ok(Quota(25)));
        assert_eq!(limit("eps"), Ok(Quota(u64::MAX)));
        assert!(limit("zeta").is_err());
        assert_eq!(limit("absent"), Ok(Quota(25)));
        // An organization no ConfigMap can be named after is read from the settings.
        assert_eq!(limit("Acme"), Ok(Quota(25)));
    }

    #[test]
    fn config_maps_of_the_wrong_shape_and_failures_are_lookup_errors() {
        let mut cluster = Objects::new(vec![
            cm("acme", json!({"namespaceQuota": 30})),
            cm("beta", json!(["x"])),
        ]);
        let mut lookups = Lookups::new(&mut cluster);
        let s = settings();
        let err = of("acme", &s, &mut lookups).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read ConfigMap \"appuio-cloud/override-acme\": unexpected answer: data[\"namespaceQuota\"]: expected a string"
        );
        assert_eq!(of("beta", &s, &mut lookups).unwrap_err().code(), 500);
        let mut failing = Objects::default().failing("ConfigMap");
        let mut lookups = Lookups::new(&mut failing);
        assert_eq!(of("acme", &s, &mut lookups).unwrap_err().code(), 500);
        // Without overrideConfigMap nothing is read.
        let plain = Settings::parse(&json!({"overrides": {"acme": 0}})).unwrap();
        assert_eq!(of("acme", &plain, &mut lookups), Ok(Ok(Quota(0))));
    }
}
