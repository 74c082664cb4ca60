//! Metadata the tenant's objects must carry or get written: Capsule's `additionalMetadata`
//! of Namespaces, Pods and Services, `requiredMetadata`, and `rules[].enforce.metadata`, as
//! tenant-metadata-policy rules.

use policy_host::kube::plural;
use serde_json::{Map, Value, json};

use super::matchers::ALLOWED_DENIED;
use super::{Ctx, Planned};
use crate::catalogue::Policy;
use crate::placement::Mode;

/// The labels naming the tenant that Capsule writes into every object in its namespaces.
const TENANT_LABELS: [&str; 2] = ["capsule.clastix.io/managed-by", "projectcapsule.dev/tenant"];

/// The admission rules that route the kinds of `rules` to a tenant-metadata binding: each
/// with the operations it judges (CREATE only, or CREATE and UPDATE).
fn webhook_rules(rules: &[(Value, bool)]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (rule, create_only) in rules {
        let operations = if *create_only {
            json!(["CREATE"])
        } else {
            json!(["CREATE", "UPDATE"])
        };
        let groups: Vec<&str> = rule
            .get("apiGroups")
            .and_then(Value::as_array)
            .map(|g| g.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let groups = if groups.is_empty() { vec![""] } else { groups };
        let kinds = rule
            .get("kinds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let resources: Vec<String> = kinds
            .filter_map(Value::as_str)
            .map(|k| if k == "*" { "*".to_owned() } else { plural(k) })
            .collect();
        for group in groups {
            let (group, version) = match group {
                "*" => ("*", "*"),
                "" | "v1" => ("", "v1"),
                g => match g.split_once('/') {
                    Some((g, v)) => (g, v),
                    None => (g, "*"),
                },
            };
            let webhook = json!({"apiGroups": [group], "apiVersions": [version], "resources": resources, "operations": operations});
            if !out.contains(&webhook) {
                out.push(webhook);
            }
        }
    }
    out
}

impl Ctx<'_> {
    /// `additionalMetadata` (`{labels, annotations}`) as a rule writing them into `kinds`;
    /// `None` when it writes nothing.
    pub(super) fn written_metadata(
        &mut self,
        path: &str,
        value: &Value,
        kinds: &[&str],
    ) -> Option<Value> {
        let block = self.object(path, value)?;
        let mut rule = Map::new();
        rule.insert("kinds".into(), json!(kinds));
        for (key, value) in block {
            let p = format!("{path}.{key}");
            if key != "labels" && key != "annotations" {
                self.not_translated(&p, "not a field of additional metadata");
                continue;
            }
            let Some(map) = self.string_map(&p, value) else {
                continue;
            };
            let keys: Map<String, Value> = map
                .into_iter()
                .map(|(k, v)| (k, json!({"managed": v})))
                .collect();
            if !keys.is_empty() {
                rule.insert(key.clone(), Value::Object(keys));
            }
        }
        (rule.len() > 1).then_some(Value::Object(rule))
    }

    /// `podOptions`: the metadata written into every new Pod of the tenant.
    pub(super) fn pod_options(&mut self, path: &str, value: &Value) {
        let Some(options) = self.object(path, value) else {
            return;
        };
        for (key, value) in options {
            let p = format!("{path}.{key}");
            if key == "additionalMetadata" {
                self.created_metadata(&p, value, "Pod");
            } else {
                self.not_translated(&p, "no policy of this bundle enforces it");
            }
        }
    }

    /// Metadata written into every new object of `kind` (Pods, Services), on CREATE as
    /// Capsule writes it.
    pub(super) fn created_metadata(&mut self, path: &str, value: &Value, kind: &str) {
        if let Some(rule) = self.written_metadata(path, value, &[kind]) {
            self.metadata_rules.push((rule, true));
        }
    }

    /// A tenant-metadata binding of its own (`<tenant>-tenant-metadata-<suffix>`), for
    /// namespaces chosen by `selector` too.
    pub(super) fn metadata_binding(
        &mut self,
        suffix: &str,
        rules: Vec<(Value, bool)>,
        selector: Vec<Value>,
        mode: Option<Mode>,
    ) {
        let Some(policy) = Policy::find("tenant-metadata") else {
            return;
        };
        let webhooks = webhook_rules(&rules);
        let settings = json!({"rules": rules.into_iter().map(|(r, _)| r).collect::<Vec<_>>()});
        self.extra.push(Planned {
            rules: Some(webhooks),
            suffix: Some(suffix.to_owned()),
            selector,
            mode,
            ..Planned::new(policy, settings)
        });
    }

    /// The labels Capsule's metadata webhook (`/generic/metadata`) writes into every
    /// namespaced object of a tenant, Events and subresources aside, on CREATE and UPDATE:
    /// a binding of its own (`<tenant>-tenant-metadata-labels`) bound to every resource.
    pub(super) fn tenant_labels(&mut self) {
        let Some(policy) = Policy::find("tenant-metadata") else {
            return;
        };
        let labels: Map<String, Value> = TENANT_LABELS
            .iter()
            .map(|key| ((*key).to_owned(), json!({"managed": self.tenant})))
            .collect();
        let settings = json!({"rules": [{"kinds": ["*"], "apiGroups": ["*"], "labels": labels}]});
        self.extra.push(Planned {
            rules: Some(vec![
                json!({"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
                "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}),
            ]),
            match_conditions: vec![json!({"name": "not-events",
                "expression": "request.resource.resource != \"events\""})],
            suffix: Some("labels".to_owned()),
            ..Planned::new(policy, settings)
        });
    }

    /// The tenant's own tenant-metadata binding, from the rules gathered.
    pub(super) fn tenant_metadata(&mut self) {
        if self.metadata_rules.is_empty() {
            return;
        }
        let rules = std::mem::take(&mut self.metadata_rules);
        self.rules.insert("tenant-metadata", webhook_rules(&rules));
        let rules: Vec<Value> = rules.into_iter().map(|(r, _)| r).collect();
        self.settings("tenant-metadata")
            .insert("rules".into(), Value::Array(rules));
    }

    /// Capsule's `rules[].enforce.metadata` entries as tenant-metadata rules: per key,
    /// `default`, `managed` and `required` as they are; `values` allowed (`allow`) or denied
    /// (`deny`), a negated expression on the other side.
    pub(super) fn capsule_metadata(
        &mut self,
        path: &str,
        value: &Value,
        deny: bool,
    ) -> Vec<(Value, bool)> {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of metadata rules", value);
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(item) = self.object(&p, item) else {
                continue;
            };
            let mut rule = Map::new();
            for (key, value) in item {
                let kp = format!("{p}.{key}");
                match key.as_str() {
                    "kinds" | "apiGroups" => {
                        if let Some(list) = self.strings(&kp, value) {
                            rule.insert(key.clone(), Value::Array(list));
                        }
                    }
                    "labels" | "annotations" => {
                        if let Some(keys) = self.metadata_keys(&kp, value, deny) {
                            rule.insert(key.clone(), Value::Object(keys));
                        }
                    }
                    _ => self.not_translated(&kp, "not a field of a metadata rule"),
                }
            }
            if rule.contains_key("kinds") {
                out.push((Value::Object(rule), false));
            } else {
                self.invalid(&format!("{p}.kinds"), "a list of kinds", &Value::Null);
            }
        }
        out
    }

    fn metadata_keys(
        &mut self,
        path: &str,
        value: &Value,
        deny: bool,
    ) -> Option<Map<String, Value>> {
        let keys = self.object(path, value)?;
        let mut out = Map::new();
        for (name, spec) in keys {
            let p = format!("{path}.{name}");
            let Some(spec) = self.object(&p, spec) else {
                continue;
            };
            let mut written = Map::new();
            for (field, value) in spec {
                let fp = format!("{p}.{field}");
                match field.as_str() {
                    "default" | "managed" => {
                        if let Some(text) = self.string(&fp, value) {
                            written.insert(field.clone(), json!(text));
                        }
                    }
                    "required" => {
                        if let Some(required) = self.boolean(&fp, value) {
                            written.insert("required".into(), json!(required));
                        }
                    }
                    "values" => self.value_matchers(&fp, value, deny, &mut written),
                    _ => self.not_translated(&fp, "not a field of a metadata key rule"),
                }
            }
            out.insert(name.clone(), Value::Object(written));
        }
        Some(out)
    }

    /// Capsule's `[{exact, exp, negate}]` value matchers into `allowed`/`allowedRegex` or
    /// `denied`/`deniedRegex` (a negated expression goes to the other side).
    fn value_matchers(
        &mut self,
        path: &str,
        value: &Value,
        deny: bool,
        out: &mut Map<String, Value>,
    ) {
        self.matchers(path, value, !deny, ALLOWED_DENIED, "value", out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_groups_route_as_capsule_names_them() {
        let rules = vec![
            (json!({"kinds": ["Pod", "Service"]}), true),
            (
                json!({"kinds": ["Deployment"], "apiGroups": ["apps", "batch/v1"]}),
                false,
            ),
            (json!({"kinds": ["*"], "apiGroups": ["*"]}), false),
        ];
        assert_eq!(
            webhook_rules(&rules),
            vec![
                json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "services"], "operations": ["CREATE"]}),
                json!({"apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["deployments"], "operations": ["CREATE", "UPDATE"]}),
                json!({"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["CREATE", "UPDATE"]}),
                json!({"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["CREATE", "UPDATE"]}),
            ]
        );
    }
}
