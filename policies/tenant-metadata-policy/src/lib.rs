//! tenant-metadata-policy: the labels and annotations of a tenant's objects — managed and
//! default values written, required keys kept, allowed and denied values refused (README
//! rules 1–6; Capsule's `additionalMetadata`, `requiredMetadata` and `rules[].enforce.metadata`).
//!
//! Writes come first, in rule then key order; the checks then judge the written object
//! (README rule 5). Violations are listed labels first, then annotations, each in rule then
//! key order (`docs/semantics.md#messages`).

pub mod settings;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use policy_admission::cluster::Lookups;
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_admission::verdict::distinct;
use policy_admission::{Verdict, Violation};
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde_json::{Map, Value};

pub use settings::{KeyRule, MapKind, Rule, Settings, Write};

/// The policy.
pub struct TenantMetadataPolicy;

impl Policy for TenantMetadataPolicy {
    const NAME: &'static str = "tenant-metadata-policy";
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        _lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // README rule 1: main resources only; status and other subresources never change
        // labels or annotations (the API server keeps the stored ones).
        let subresource = request
            .sub_resource
            .as_deref()
            .is_some_and(|s| !s.is_empty());
        if subresource || !Self::OPERATIONS.contains(&request.operation) {
            return Ok(Verdict::accept());
        }
        let kind = &request.kind;
        let rules: Vec<&Rule> = settings
            .rules
            .iter()
            .filter(|r| r.applies(&kind.group, &kind.version, &kind.kind))
            .collect();
        if rules.is_empty() {
            return Ok(Verdict::accept());
        }
        let object = request.object()?;
        let old = match request.operation {
            Operation::Update => Some(At::new(
                request.old_object()?.value,
                FieldPath::root("oldObject"),
            )),
            _ => None,
        };
        let mut verdict = Verdict::accept();
        let mut violations = Vec::new();
        for map in [MapKind::Labels, MapKind::Annotations] {
            let found = object.get_metadata_map(map.field())?;
            let old_found = match &old {
                Some(old) => Some(old.get_metadata_map(map.field())?),
                None => None,
            };
            // README rule 5: a key is judged when the object or the old object carries it, or
            // when a rule writes it
            let present = |key: &str| {
                value_of(found, key).is_some() || value_of(old_found.flatten(), key).is_some()
            };
            let mut key_rules = rules
                .iter()
                .map(|r| r.key_rules(map, present))
                .collect::<Result<Vec<_>, _>>()
                .map_err(invalid_settings)?;
            let newly: HashSet<String> = key_rules
                .iter()
                .flat_map(|k| k.iter())
                .filter(|k| k.write.is_some() && !present(&k.key))
                .map(|k| k.key.clone())
                .collect();
            if !newly.is_empty() {
                for (rule, decoded) in rules.iter().zip(key_rules.iter_mut()) {
                    if rule.may_name(map, &newly, decoded) {
                        *decoded = rule
                            .key_rules(map, |k| present(k) || newly.contains(k))
                            .map_err(invalid_settings)?;
                    }
                }
            }
            let written = write(&key_rules, map, found, old_found.is_none(), &mut verdict);
            let view = Written { found, written };
            check(&key_rules, map, &view, old_found, &mut violations);
        }
        verdict.extend(distinct(violations));
        Ok(verdict)
    }
}

/// One metadata map of the object after the policy's writes.
struct Written<'a> {
    /// The map as the request carries it.
    found: Option<&'a Map<String, Value>>,
    /// The values written, by key.
    written: HashMap<&'a str, &'a str>,
}

impl<'a> Written<'a> {
    /// The value of `key` once written.
    fn get(&self, key: &str) -> Option<&'a str> {
        self.written
            .get(key)
            .copied()
            .or_else(|| value_of(self.found, key))
    }
}

/// Re-read settings that do not decode: the request is refused as policy-server refuses it
/// for settings that fail `validate_settings` (`docs/semantics.md#settings`).
fn invalid_settings(e: SettingsError) -> PolicyError {
    PolicyError::Settings(SettingsError::new("", format!("invalid settings: {e}")))
}

/// The string value of `key` in a metadata map (read strictly before: every value is a string).
fn value_of<'a>(map: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    // a few entries are compared rather than hashed: a rule of many keys asks for each of them
    const FEW: usize = 8;
    let map = map?;
    let value = match map.len() {
        0 => None,
        n if n <= FEW => map.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
        _ => map.get(key),
    };
    value.and_then(Value::as_str)
}

/// README rules 2 and 3: `managed` values written when absent or different (CREATE and
/// UPDATE), `default` values when absent (CREATE). Later rules see earlier writes.
fn write<'a>(
    rules: &'a [Cow<'_, [KeyRule]>],
    map: MapKind,
    found: Option<&'a Map<String, Value>>,
    create: bool,
    verdict: &mut Verdict,
) -> HashMap<&'a str, &'a str> {
    let mut written: HashMap<&'a str, &'a str> = HashMap::new();
    for rule in rules {
        for key_rule in rule.iter() {
            let key = key_rule.key.as_str();
            let current = written.get(key).copied().or_else(|| value_of(found, key));
            let value = match &key_rule.write {
                Some(Write::Managed(v)) if current != Some(v.as_str()) => v.as_str(),
                Some(Write::Default(v)) if create && current.is_none() => v.as_str(),
                _ => continue,
            };
            written.insert(key, value);
            verdict.edit_set(&["metadata", map.field()], key, Value::from(value));
        }
    }
    written
}

/// README rules 4 and 5: on the written object, a required key must be present and a present
/// value allowed and not denied. On UPDATE only keys whose value the request changes (added,
/// changed or removed, compared with `oldObject` after the writes) are judged.
fn check(
    rules: &[Cow<'_, [KeyRule]>],
    map: MapKind,
    view: &Written<'_>,
    old: Option<Option<&Map<String, Value>>>,
    violations: &mut Vec<Violation>,
) {
    let path = FieldPath::root("metadata").field(map.field());
    for rule in rules {
        for key_rule in rule.iter() {
            let key = key_rule.key.as_str();
            let value = view.get(key);
            if let Some(old) = old
                && value_of(old, key) == value
            {
                continue;
            }
            // the path is written out only for a violation (settings may list 10,000 keys)
            match value {
                None if key_rule.required => violations.push(Violation {
                    path: path.key(key),
                    problem: format!("required {} is missing", map.noun()),
                }),
                None => {}
                Some(value) => judge_value(key_rule, value, &path, violations),
            }
        }
    }
}

/// README rule 4: every problem of a present value, at `<map>["<key>"]`.
fn judge_value(key_rule: &KeyRule, value: &str, map: &FieldPath, violations: &mut Vec<Violation>) {
    for problem in key_rule.problems(value) {
        violations.push(Violation {
            path: map.key(&key_rule.key),
            problem,
        });
    }
}

policy_admission::export_policy!(TenantMetadataPolicy);

policy_admission::robustness_tests!(
    TenantMetadataPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"rules": [
            {"kinds": ["Pod", "Service"], "labels": {
                "team": {"managed": "platform"},
                "tier": {"default": "web", "allowed": ["web", "db"], "allowedRegex": "v[0-9]+"},
                "owner": {"required": true, "deniedRegex": ".*-tmp"}},
             "annotations": {"example.com/note": {"default": "hello", "denied": ["legacy"]}}},
            {"kinds": ["*"], "apiGroups": ["*"], "labels": {"env": {"required": true, "denied": ["legacy"]}}}
        ]}),
        kinds: &[
            ("", "v1", "Pod"),
            ("", "v1", "Service"),
            ("apps", "v1", "Deployment"),
            ("", "v1", "ConfigMap")
        ],
        mutating: true,
        strings: &[
            "metadata",
            "labels",
            "annotations",
            "team",
            "platform",
            "tier",
            "web",
            "v2",
            "owner",
            "x-tmp",
            "env",
            "legacy",
            "example.com/note"
        ],
        objects: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "solar-dev", "labels": {"owner": "alice", "env": "prod"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "solar-dev", "labels": {"env": "legacy"}}, "data": {}})
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )]
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::json;

    fn run(
        kind: (&str, &str, &str),
        operation: &str,
        object: Value,
        old: Value,
        settings: Value,
    ) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": kind.0, "version": kind.1, "kind": kind.2}, "operation": operation,
                "namespace": "solar-dev", "userInfo": {"username": "alice"}, "object": object, "oldObject": old},
            "settings": settings
        });
        evaluate::<TenantMetadataPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    const POD: (&str, &str, &str) = ("", "v1", "Pod");

    fn pod(labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels},
            "spec": {"containers": []}})
    }

    #[test]
    fn writes_then_judges_the_written_object() {
        let settings = json!({"rules": [{"kinds": ["Pod"], "labels": {
            "team": {"managed": "platform"}, "tier": {"default": "web"},
            "owner": {"required": true}}}]});
        let r = run(
            POD,
            "CREATE",
            pod(json!({"owner": "alice", "team": "mine"})),
            Value::Null,
            settings.clone(),
        );
        assert!(r.accepted, "{:?}", r.message);
        let labels = &r.mutated_object.unwrap()["metadata"]["labels"];
        assert_eq!(
            labels,
            &json!({"owner": "alice", "team": "platform", "tier": "web"})
        );
        let r = run(POD, "CREATE", pod(Value::Null), Value::Null, settings);
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some("metadata.labels[\"owner\"]: required label is missing")
        );
        assert!(r.mutated_object.is_none(), "a rejection writes nothing");
    }

    #[test]
    fn default_is_not_written_on_update_managed_is() {
        let settings = json!({"rules": [{"kinds": ["Pod"], "labels": {
            "team": {"managed": "platform"}, "tier": {"default": "web"}}}]});
        let r = run(
            POD,
            "UPDATE",
            pod(json!({"team": "mine"})),
            pod(json!({"team": "platform"})),
            settings,
        );
        assert!(r.accepted);
        assert_eq!(
            r.mutated_object.unwrap()["metadata"]["labels"],
            json!({"team": "platform"})
        );
    }

    #[test]
    fn every_violation_labels_then_annotations() {
        let settings = json!({"rules": [{"kinds": ["*"], "apiGroups": ["*"],
            "labels": {"team": {"allowed": ["prod", "test"], "allowedRegex": "v[0-9]+", "denied": ["qa"]},
                       "env": {"required": true}},
            "annotations": {"x": {"deniedRegex": [".*-tmp"]}}}]});
        let object = json!({"metadata": {"name": "d", "labels": {"team": "qa"}, "annotations": {"x": "a-tmp"}}});
        let r = run(
            ("apps", "v1", "Deployment"),
            "CREATE",
            object,
            Value::Null,
            settings,
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"team\"]: \"qa\" is not allowed; allowed: [prod, test], allowedRegex: [v[0-9]+]; \
                 metadata.labels[\"team\"]: \"qa\" is denied; denied: [qa]; \
                 metadata.labels[\"env\"]: required label is missing; \
                 metadata.annotations[\"x\"]: \"a-tmp\" is denied; deniedRegex: [.*-tmp]"
            )
        );
    }

    #[test]
    fn update_judges_only_changed_keys() {
        let settings = json!({"rules": [{"kinds": ["Pod"], "labels": {
            "env": {"required": true, "denied": ["legacy"]}}}]});
        // a legacy object keeps working: the key is unchanged (or was already absent)
        let legacy = pod(json!({"env": "legacy", "x": "1"}));
        let edited = pod(json!({"env": "legacy", "x": "2"}));
        assert!(run(POD, "UPDATE", edited, legacy.clone(), settings.clone()).accepted);
        let without = pod(json!({"x": "1"}));
        assert!(
            run(
                POD,
                "UPDATE",
                pod(json!({"x": "2"})),
                without,
                settings.clone()
            )
            .accepted
        );
        // removing a required key, or changing it to a denied value, is refused
        let r = run(
            POD,
            "UPDATE",
            pod(json!({"x": "1"})),
            legacy,
            settings.clone(),
        );
        assert_eq!(
            r.message.as_deref(),
            Some("metadata.labels[\"env\"]: required label is missing")
        );
        let r = run(
            POD,
            "UPDATE",
            pod(json!({"env": "legacy"})),
            pod(json!({"env": "prod"})),
            settings,
        );
        assert_eq!(
            r.message.as_deref(),
            Some("metadata.labels[\"env\"]: \"legacy\" is denied; denied: [legacy]")
        );
    }

    #[test]
    fn kinds_groups_and_subresources_select_the_rules() {
        let settings =
            json!({"rules": [{"kinds": ["Pod"], "labels": {"env": {"required": true}}}]});
        // a kind no rule names is accepted unread, even malformed
        let r = run(
            ("", "v1", "ConfigMap"),
            "CREATE",
            json!({"metadata": {"labels": 1}}),
            Value::Null,
            settings.clone(),
        );
        assert!(r.accepted);
        // the core group only: a Pod of another group is not this rule's
        let r = run(
            ("example.io", "v1", "Pod"),
            "CREATE",
            pod(Value::Null),
            Value::Null,
            settings.clone(),
        );
        assert!(r.accepted);
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "subResource": "status",
                "operation": "UPDATE", "namespace": "solar-dev", "object": pod(Value::Null), "oldObject": pod(json!({"env": "a"}))},
            "settings": settings
        });
        let r = evaluate::<TenantMetadataPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        );
        assert!(r.accepted && r.mutated_object.is_none());
    }

    #[test]
    fn malformed_maps_are_named() {
        let settings = json!({"rules": [{"kinds": ["Pod"], "labels": {"team": {"managed": "a"}}}]});
        let r = run(
            POD,
            "CREATE",
            pod(json!({"team": 1})),
            Value::Null,
            settings.clone(),
        );
        assert_eq!(
            (r.code, r.message.as_deref()),
            (
                Some(400),
                Some("metadata.labels[\"team\"]: expected a string")
            )
        );
        let r = run(
            POD,
            "UPDATE",
            pod(json!({})),
            pod(json!(["team"])),
            settings.clone(),
        );
        assert_eq!(
            (r.code, r.message.as_deref()),
            (
                Some(400),
                Some("oldObject.metadata.labels: expected an object")
            )
        );
        let r = run(POD, "UPDATE", pod(json!({})), Value::Null, settings);
        assert_eq!(
            (r.code, r.message.as_deref()),
            (Some(400), Some("request.oldObject: missing"))
        );
    }

    #[test]
    fn a_key_rule_is_decoded_only_when_the_request_concerns_it() {
        // settings that skipped validate_settings: the rule of "x" does not decode
        let settings = json!({"rules": [{"kinds": ["Pod"], "labels": {
            "x": {"denied": 5}, "team": {"managed": "platform"}}}]});
        let r = run(
            POD,
            "CREATE",
            pod(json!({"app": "web"})),
            Value::Null,
            settings.clone(),
        );
        assert!(r.accepted, "{:?}", r.message);
        let r = run(POD, "CREATE", pod(json!({"x": "1"})), Value::Null, settings);
        assert_eq!(r.code, Some(500));
        let message = r.message.unwrap();
        assert!(
            message.starts_with(
                "invalid settings: rules[0].labels[\"x\"].denied: invalid type: integer `5`"
            ),
            "{message}"
        );
    }

    #[test]
    fn rules_apply_in_order_and_see_earlier_writes() {
        let settings = json!({"rules": [
            {"kinds": ["Pod"], "labels": {"tier": {"default": "web"}}},
            {"kinds": ["*"], "labels": {"tier": {"allowed": ["db"]}}}]});
        let r = run(POD, "CREATE", pod(Value::Null), Value::Null, settings);
        assert_eq!(
            r.message.as_deref(),
            Some("metadata.labels[\"tier\"]: \"web\" is not allowed; allowed: [db]")
        );
    }
}
