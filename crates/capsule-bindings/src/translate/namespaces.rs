//! A tenant's namespaces: who owns them (the cluster-wide ownership binding), their name
//! prefix, their quota, forbidden metadata, and cordoning.

use serde_json::{Map, Value, json};

use super::{Ctx, Effect};

/// What the bundle's namespace bindings exempt: the platform's administrators.
fn platform_exempt() -> Value {
    json!({"clusterRoles": ["cluster-admin"]})
}

/// Namespace requests only: a cluster-wide kind (a ProjectRequest) would not be filtered by
/// the tenant's `namespaceSelector` and would be judged as the tenant's.
fn namespace_rules(status_too: bool) -> Vec<Value> {
    let mut rules = vec![
        json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"], "operations": ["CREATE", "UPDATE"]}),
    ];
    if status_too {
        rules.push(json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces/status", "namespaces/finalize"], "operations": ["UPDATE"]}));
    }
    rules
}

impl Ctx<'_> {
    /// `owners`: the tenant's entry in the ownership binding (users, groups, service
    /// accounts); what Capsule grants owners through RoleBindings is reported.
    pub(super) fn owners(&mut self, path: &str, value: &Value) {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of owners", value);
            return;
        };
        let mut by_kind: [(&str, &str, Vec<Value>); 3] = [
            ("User", "users", Vec::new()),
            ("Group", "groups", Vec::new()),
            ("ServiceAccount", "serviceAccounts", Vec::new()),
        ];
        for (i, owner) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(owner) = self.object(&p, owner) else {
                continue;
            };
            let kind = owner.get("kind").and_then(Value::as_str).unwrap_or("User");
            let Some(name) = owner.get("name").and_then(Value::as_str) else {
                self.invalid(
                    &format!("{p}.name"),
                    "a string",
                    owner.get("name").unwrap_or(&Value::Null),
                );
                continue;
            };
            match by_kind.iter_mut().find(|(k, _, _)| *k == kind) {
                Some((_, _, names)) => {
                    if !names.iter().any(|n| n == name) {
                        names.push(json!(name));
                    }
                }
                None => self.invalid(
                    &format!("{p}.kind"),
                    "User, Group or ServiceAccount",
                    &json!(kind),
                ),
            }
            for (key, field) in owner {
                let fp = format!("{p}.{key}");
                match key.as_str() {
                    "kind" | "name" => {}
                    "clusterRoles" => self.not_translated(
                        &fp,
                        "Capsule grants owners their ClusterRoles with RoleBindings it creates in each namespace of the tenant; admission creates no objects, so keep those RoleBindings in your GitOps tree (rbac-policy bounds what tenant roles grant)",
                    ),
                    "labels" | "annotations" => self.not_translated(
                        &fp,
                        "metadata of the RoleBindings Capsule creates for the owner; admission creates no objects, so write it on the RoleBindings in your GitOps tree",
                    ),
                    "proxySettings" => self.not_translated(
                        &fp,
                        "capsule-proxy's listing of cluster-scoped objects is not admission; without capsule-proxy owners list what RBAC lets them",
                    ),
                    _ => {
                        let _ = field;
                        self.not_translated(&fp, "not a field of a Capsule owner");
                    }
                }
            }
        }
        for (_, key, names) in by_kind {
            if !names.is_empty() {
                self.owners.insert(key.into(), Value::Array(names));
            }
        }
    }

    /// `forceTenantPrefix`: the tenant's namespaces are named `<tenant>-…`.
    pub(super) fn force_tenant_prefix(&mut self, path: &str, value: &Value) {
        if let Some(force) = self.boolean(path, value) {
            self.owners.insert("forceTenantPrefix".into(), json!(force));
        }
    }

    /// The tenant's entry of the ownership binding, when it has owners; a prefix forced
    /// without owners is reported (nobody can create the tenant's namespaces but exempt
    /// administrators, who are not judged).
    pub(super) fn ownership_entry(&mut self) -> Option<Value> {
        let has_owners = ["users", "groups", "serviceAccounts"]
            .iter()
            .any(|k| self.owners.contains_key(*k));
        if !has_owners {
            if self.owners.contains_key("forceTenantPrefix") {
                self.not_translated(
                    "spec.forceTenantPrefix",
                    "the tenant has no owners, so no requester creates namespaces for it and no prefix is judged",
                );
            }
            return None;
        }
        let mut entry = Map::new();
        entry.insert("tenant".into(), json!(self.tenant));
        entry.extend(std::mem::take(&mut self.owners));
        Some(Value::Object(entry))
    }

    /// `namespaceOptions`: quota, forbidden and required metadata, metadata written.
    pub(super) fn namespace_options(&mut self, path: &str, value: &Value) {
        let Some(options) = self.object(path, value) else {
            return;
        };
        for (key, value) in options {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "quota" => self.namespace_quota(&p, value),
                "forbiddenLabels" | "forbiddenAnnotations" => {
                    if let Some(block) = self.forbidden(&p, value, key) {
                        self.namespace_metadata().insert(key.clone(), block);
                    }
                }
                "requiredMetadata" => self.required_namespace_metadata(&p, value),
                "additionalMetadata" => {
                    if let Some(rule) = self.written_metadata(&p, value, &["Namespace"]) {
                        self.metadata_rules.push((rule, false));
                    }
                }
                "additionalMetadataList" => self.namespace_metadata_list(&p, value),
                "managedMetadataOnly" => {
                    if self.boolean(&p, value) == Some(true) {
                        self.not_translated(
                            &p,
                            "Capsule's namespace webhook replaces a namespace's labels and annotations with those it manages (additionalMetadata, additionalMetadataList, the tenant's own) on every CREATE and UPDATE; no policy of this bundle removes metadata: the written keys cannot be changed by the tenant, other keys stay as the tenant sets them",
                        );
                    }
                }
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
    }

    fn namespace_quota(&mut self, path: &str, value: &Value) {
        let Some(quota) = value.as_u64() else {
            self.invalid(path, "a non-negative integer", value);
            return;
        };
        let label = self.options.tenant_label.clone();
        let settings = self.settings("namespace-quota");
        settings.insert("organizationLabel".into(), json!(label));
        settings.insert("defaultQuota".into(), json!(quota));
        settings.insert("exemptPrincipals".into(), platform_exempt());
        self.rules.insert("namespace-quota", namespace_rules(false));
    }

    /// The tenant's namespace-metadata binding: only its forbidden keys are judged.
    fn namespace_metadata(&mut self) -> &mut Map<String, Value> {
        if !self.settings.contains_key("namespace-metadata") {
            self.rules
                .insert("namespace-metadata", namespace_rules(true));
        }
        let settings = self.settings("namespace-metadata");
        if settings.is_empty() {
            settings.insert("reservedNames".into(), json!([]));
            settings.insert("allowedLabels".into(), json!([".*"]));
            settings.insert("allowedAnnotations".into(), json!([".*"]));
            // the baseline binding protects the tenant label and ownerReferences already
            settings.insert("protectedLabels".into(), json!([]));
            settings.insert("protectOwnerReferences".into(), json!(false));
            settings.insert("exemptPrincipals".into(), platform_exempt());
        }
        settings
    }

    fn required_namespace_metadata(&mut self, path: &str, value: &Value) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        let mut rule = Map::new();
        rule.insert("kinds".into(), json!(["Namespace"]));
        for (key, value) in block {
            let p = format!("{path}.{key}");
            if key != "labels" && key != "annotations" {
                self.not_translated(&p, "not a field of requiredMetadata");
                continue;
            }
            let Some(map) = self.string_map(&p, value) else {
                continue;
            };
            let mut keys = Map::new();
            for (name, pattern) in map {
                let mut spec = Map::new();
                spec.insert("required".into(), json!(true));
                if let Some(text) = pattern.as_str()
                    && !text.is_empty()
                {
                    let regex = self.regex(&format!("{p}.{name}"), text, Effect::Allows, "value");
                    spec.insert("allowedRegex".into(), json!([regex]));
                }
                keys.insert(name, Value::Object(spec));
            }
            if !keys.is_empty() {
                rule.insert(key.clone(), Value::Object(keys));
            }
        }
        if rule.len() > 1 {
            self.metadata_rules.push((Value::Object(rule), false));
        }
    }

    fn namespace_metadata_list(&mut self, path: &str, value: &Value) {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of metadata with a namespaceSelector", value);
            return;
        };
        for (i, item) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(item) = self.object(&p, item) else {
                continue;
            };
            let mut written = item.clone();
            let selector = written.remove("namespaceSelector");
            let Some(rule) = self.written_metadata(&p, &Value::Object(written), &["Namespace"])
            else {
                continue;
            };
            let expressions = match &selector {
                Some(s) => match self.selector_expressions(&format!("{p}.namespaceSelector"), s) {
                    Some(e) => e,
                    None => continue,
                },
                None => Vec::new(),
            };
            if expressions.is_empty() {
                self.metadata_rules.push((rule, false));
            } else {
                self.metadata_binding(
                    &format!("namespaces-{i}"),
                    vec![(rule, false)],
                    expressions,
                    None,
                );
            }
        }
    }

    /// `cordoned: true`: the tenant-cordon binding; un-cordoning removes it.
    pub(super) fn cordoned(&mut self, path: &str, value: &Value) {
        if self.boolean(path, value) == Some(true) {
            let tenant = self.tenant.to_owned();
            let settings = self.settings("tenant-cordon");
            settings.insert("tenant".into(), json!(tenant));
            settings.insert("exemptPrincipals".into(), platform_exempt());
            // namespaced objects only: a namespaceSelector never filters cluster-scoped ones
            self.rules.insert(
                "tenant-cordon",
                vec![
                    json!({"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "operations": ["CREATE", "UPDATE", "DELETE"], "scope": "Namespaced"}),
                    json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"], "operations": ["CREATE", "UPDATE", "DELETE"]}),
                    json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces/status", "namespaces/finalize"], "operations": ["UPDATE"]}),
                ],
            );
        }
    }

    /// A label selector as `matchExpressions` (kubewarden-controller drops `matchLabels`);
    /// `None`, reported, when it is malformed. An empty selector gives no requirement.
    pub(super) fn selector_expressions(&mut self, path: &str, value: &Value) -> Option<Vec<Value>> {
        let selector = self.object(path, value)?;
        let mut out = Vec::new();
        for (key, value) in selector {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "matchLabels" => {
                    for (k, v) in self.string_map(&p, value)? {
                        out.push(json!({"key": k, "operator": "In", "values": [v]}));
                    }
                }
                "matchExpressions" => match value.as_array() {
                    Some(list) => out.extend(list.iter().cloned()),
                    None => {
                        self.invalid(&p, "a list of label selector requirements", value);
                        return None;
                    }
                },
                _ => {
                    self.invalid(&p, "matchLabels or matchExpressions", value);
                    return None;
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::super::{settings_of, translate_spec};
    use super::*;
    use crate::report::ReportKind;

    #[test]
    fn owners_by_kind_with_the_prefix_and_rbac_reported() {
        let t = translate_spec(
            "{forceTenantPrefix: true, owners: [{kind: User, name: alice, clusterRoles: [admin]}, {kind: Group, name: solar-admins}, {kind: ServiceAccount, name: 'system:serviceaccount:solar-system:robot'}, {kind: User, name: alice}]}",
        );
        assert_eq!(
            t.owners,
            Some(
                json!({"tenant": "solar", "forceTenantPrefix": true, "users": ["alice"], "groups": ["solar-admins"], "serviceAccounts": ["system:serviceaccount:solar-system:robot"]})
            )
        );
        assert_eq!(t.reports.len(), 1);
        assert_eq!(t.reports[0].path, "spec.owners[0].clusterRoles");
    }

    #[test]
    fn a_prefix_without_owners_is_reported_and_bad_owners_are_errors() {
        let t = translate_spec("{forceTenantPrefix: true}");
        assert_eq!(t.owners, None);
        assert_eq!(t.reports[0].path, "spec.forceTenantPrefix");
        let t = translate_spec("{owners: [{kind: Robot, name: r}, {kind: User}]}");
        let paths: Vec<&str> = t.errors.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["spec.owners[0].kind", "spec.owners[1].name"]);
    }

    #[test]
    fn a_cordon_binds_namespaced_objects_and_the_namespaces() {
        let t = translate_spec("{cordoned: true}");
        let cordon = t
            .planned
            .iter()
            .find(|p| p.policy.short == "tenant-cordon")
            .unwrap();
        let rules = cordon.rules.as_ref().unwrap();
        assert_eq!(rules[0]["scope"], "Namespaced");
        assert_eq!(rules[1]["resources"], json!(["namespaces"]));
        assert!(
            translate_spec("{cordoned: false}")
                .planned
                .iter()
                .all(|p| p.policy.short != "tenant-cordon")
        );
    }

    #[test]
    fn quota_forbidden_metadata_and_cordoning() {
        let t = translate_spec(
            "{cordoned: true, namespaceOptions: {quota: 3, forbiddenLabels: {denied: [foo.acme.net/x], deniedRegex: '^.*\\.acme\\.net/.*$'}, managedMetadataOnly: true}}",
        );
        assert_eq!(
            settings_of(&t, "namespace-quota"),
            Some(
                json!({"organizationLabel": "capsule.clastix.io/tenant", "defaultQuota": 3, "exemptPrincipals": {"clusterRoles": ["cluster-admin"]}})
            )
        );
        assert_eq!(
            settings_of(&t, "namespace-metadata"),
            Some(
                json!({"reservedNames": [], "allowedLabels": [".*"], "allowedAnnotations": [".*"], "protectedLabels": [], "protectOwnerReferences": false, "exemptPrincipals": {"clusterRoles": ["cluster-admin"]}, "forbiddenLabels": {"denied": ["foo.acme.net/x"], "deniedRegex": ".*\\.acme\\.net/.*"}})
            )
        );
        let quota = t
            .planned
            .iter()
            .find(|p| p.policy.short == "namespace-quota")
            .unwrap();
        assert_eq!(quota.rules.as_ref().unwrap().len(), 1);
        let kinds: Vec<ReportKind> = t.reports.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [ReportKind::NotTranslated]);
    }

    #[test]
    fn selectors_become_match_expressions() {
        let options = crate::translate::Options::default();
        let mut ctx = Ctx::new("solar", &options);
        let expressions = ctx
            .selector_expressions(
                "s",
                &json!({"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            )
            .unwrap();
        assert_eq!(
            expressions,
            vec![
                json!({"key": "env", "operator": "In", "values": ["prod"]}),
                json!({"key": "tier", "operator": "Exists"}),
            ]
        );
        assert_eq!(ctx.selector_expressions("s", &json!({})), Some(vec![]));
        assert_eq!(ctx.selector_expressions("s", &json!({"foo": 1})), None);
    }
}
