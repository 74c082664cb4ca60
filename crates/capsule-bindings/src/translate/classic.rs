//! The Tenant fields every Capsule version has: classes, node selector, services, ingresses,
//! pull policies, registries, limit ranges and network policies.

use serde_json::{Map, Value, json};

use super::{CAPSULE_MANAGED_LABEL, Ctx, Effect};

impl Ctx<'_> {
    /// Capsule's `{allowed, allowedRegex, matchLabels, matchExpressions, default}` as a class
    /// allow-list; `None` when nothing is left to enforce.
    pub(super) fn class_list(
        &mut self,
        path: &str,
        value: &Value,
        kind: &str,
        with_default: bool,
    ) -> Option<Map<String, Value>> {
        let block = self.object(path, value)?;
        let mut out = Map::new();
        let mut selector = Map::new();
        let mut selector_written = false;
        for (key, value) in block {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "allowed" => {
                    if let Some(names) = self.strings(&p, value) {
                        out.insert("allowed".into(), Value::Array(names));
                    }
                }
                "allowedRegex" => {
                    if let Some(text) = self.string(&p, value)
                        && !text.is_empty()
                    {
                        let regex = self.regex(&p, text, Effect::Allows, &format!("{kind} name"));
                        out.insert("allowedRegex".into(), Value::String(regex));
                    }
                }
                "matchLabels" => {
                    selector_written = true;
                    if let Some(labels) = self.string_map(&p, value)
                        && !labels.is_empty()
                    {
                        selector.insert("matchLabels".into(), Value::Object(labels));
                    }
                }
                "matchExpressions" => {
                    selector_written = true;
                    match value.as_array() {
                        Some(expressions) if !expressions.is_empty() => {
                            selector.insert("matchExpressions".into(), value.clone());
                        }
                        Some(_) => {}
                        None => self.invalid(&p, "a list of label selector requirements", value),
                    }
                }
                "default" if with_default => {
                    if let Some(name) = self.string(&p, value)
                        && !name.is_empty()
                    {
                        out.insert("default".into(), Value::String(name.to_owned()));
                    }
                }
                _ => self.not_translated(&p, format!("not a field of a {kind} allow-list")),
            }
        }
        if !selector.is_empty() {
            out.insert("selector".into(), Value::Object(selector));
        } else if selector_written {
            self.changed(
                path,
                format!(
                    "an empty selector matched every {kind} in Capsule, whatever else was listed; this bundle refuses empty selectors, so it is left out and the other fields alone decide"
                ),
            );
        }
        if out.is_empty() {
            self.not_translated(
                path,
                format!("nothing to enforce is left: {kind}es are not restricted"),
            );
            return None;
        }
        Some(out)
    }

    pub(super) fn node_selector(&mut self, path: &str, value: &Value) {
        if let Some(pairs) = self.string_map(path, value)
            && !pairs.is_empty()
        {
            self.settings("node-selector")
                .insert("requiredNodeSelector".into(), Value::Object(pairs));
        }
    }

    pub(super) fn classes(&mut self, policy: &'static str, path: &str, value: &Value, kind: &str) {
        let with_default = policy != "device-class";
        if let Some(list) = self.class_list(path, value, kind, with_default) {
            self.settings(policy).extend(list);
        }
    }

    pub(super) fn storage_classes(&mut self, path: &str, value: &Value) {
        if let Some(list) = self.class_list(path, value, "StorageClass", true) {
            self.settings("persistent-volume-claim")
                .insert("storageClasses".into(), Value::Object(list));
        }
    }

    pub(super) fn gateway_options(&mut self, path: &str, value: &Value) {
        let Some(options) = self.object(path, value) else {
            return;
        };
        for (key, value) in options {
            let p = format!("{path}.{key}");
            if key == "allowedClasses" {
                if let Some(list) = self.class_list(&p, value, "GatewayClass", true) {
                    self.settings("gateway-class").extend(list);
                }
            } else {
                self.not_translated(&p, "no policy of this bundle enforces it");
            }
        }
    }

    pub(super) fn ingress_options(&mut self, path: &str, value: &Value) {
        let Some(options) = self.object(path, value) else {
            return;
        };
        for (key, value) in options {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "allowedClasses" => {
                    if let Some(list) = self.class_list(&p, value, "IngressClass", true) {
                        self.settings("ingress")
                            .insert("allowedClasses".into(), Value::Object(list));
                    }
                }
                "allowedHostnames" => self.allowed_hostnames(&p, value),
                "hostnameCollisionScope" => {
                    if let Some(scope) = self.string(&p, value) {
                        if scope == "Cluster" {
                            self.changed(
                                &p,
                                "Cluster: every namespace counts, tenant or not (Capsule ignored namespaces outside tenants, so a tenant could claim a platform host)",
                            );
                        }
                        let label = self.options.tenant_label.clone();
                        let ingress = self.settings("ingress");
                        ingress.insert("hostnameCollisionScope".into(), json!(scope));
                        if scope == "Tenant" || scope == "Cluster" {
                            ingress.insert("tenantLabel".into(), json!(label));
                        }
                    }
                }
                "allowWildcardHostnames" => {
                    if let Some(allow) = self.boolean(&p, value) {
                        self.settings("ingress")
                            .insert("allowWildcardHostnames".into(), json!(allow));
                    }
                }
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
    }

    /// A block of an exact list and a regex (`allowed`/`allowedRegex` or
    /// `denied`/`deniedRegex`, as `keys` says); `None`, reported, when nothing is left in it.
    pub(super) fn list_and_regex(
        &mut self,
        path: &str,
        value: &Value,
        keys: [&str; 2],
        effect: Effect,
        subject: &str,
    ) -> Option<Map<String, Value>> {
        let [list_key, regex_key] = keys;
        let block = self.object(path, value)?;
        let mut out = Map::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            if key == list_key {
                if let Some(list) = self.strings(&p, value) {
                    out.insert(key.clone(), Value::Array(list));
                }
            } else if key == regex_key {
                if let Some(text) = self.string(&p, value)
                    && !text.is_empty()
                {
                    let regex = self.regex(&p, text, effect, subject);
                    out.insert(key.clone(), Value::String(regex));
                }
            } else {
                self.not_translated(&p, "no policy of this bundle enforces it");
            }
        }
        if out.is_empty() {
            self.not_translated(path, "nothing to enforce is left, so nothing is restricted");
            return None;
        }
        Some(out)
    }

    pub(super) fn allowed_hostnames(&mut self, path: &str, value: &Value) {
        let keys = ["allowed", "allowedRegex"];
        let Some(out) = self.list_and_regex(path, value, keys, Effect::Allows, "hostname") else {
            return;
        };
        self.changed(
            path,
            "the hosts of spec.tls[].hosts are judged too, and rules without host and default-backend-only Ingresses are refused (Capsule judged only spec.rules[].host)",
        );
        self.settings("ingress")
            .insert("allowedHostnames".into(), Value::Object(out));
    }

    pub(super) fn service_options(&mut self, path: &str, value: &Value) {
        let Some(options) = self.object(path, value) else {
            return;
        };
        for (key, value) in options {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "allowedServices" => self.allowed_services(&p, value),
                "externalIPs" => self.external_ips(&p, value),
                "forbiddenLabels" | "forbiddenAnnotations" => {
                    if let Some(block) = self.forbidden(&p, value, key) {
                        self.settings("service").insert(key.clone(), block);
                    }
                }
                "additionalMetadata" => self.created_metadata(&p, value, "Service"),
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
    }

    pub(super) fn allowed_services(&mut self, path: &str, value: &Value) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        let mut out = Map::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "nodePort" | "loadBalancer" | "externalName" => {
                    if let Some(allow) = self.boolean(&p, value) {
                        if key == "nodePort" && !allow {
                            self.changed(
                                &p,
                                "false also refuses node ports of LoadBalancer Services (they must set allocateLoadBalancerNodePorts: false) and health-check node ports; Capsule refused only Services of type NodePort",
                            );
                        }
                        out.insert(key.clone(), json!(allow));
                    }
                }
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
        if !out.is_empty() {
            self.settings("service")
                .insert("allowedServices".into(), Value::Object(out));
        }
    }

    pub(super) fn external_ips(&mut self, path: &str, value: &Value) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        for (key, value) in block {
            let p = format!("{path}.{key}");
            if key != "allowed" {
                self.not_translated(&p, "no policy of this bundle enforces it");
                continue;
            }
            let Some(ranges) = self.strings(&p, value) else {
                continue;
            };
            for (i, range) in ranges.iter().enumerate() {
                if let Some(text) = range.as_str()
                    && text.contains(':')
                    && !text.contains('/')
                {
                    self.changed(
                        &format!("{p}[{i}]"),
                        format!(
                            "{text:?} is the one IPv6 address {text}/128 here; Capsule appended /32 to it, a range of 2^96 addresses"
                        ),
                    );
                }
            }
            self.settings("service")
                .insert("externalIPs".into(), json!({"allowed": ranges}));
        }
    }

    /// Capsule's `forbiddenLabels`/`forbiddenAnnotations` (`key`) block: `denied` keys and a
    /// `deniedRegex` over keys.
    pub(super) fn forbidden(&mut self, path: &str, value: &Value, key: &str) -> Option<Value> {
        let subject = if key == "forbiddenLabels" {
            "label key"
        } else {
            "annotation key"
        };
        let keys = ["denied", "deniedRegex"];
        self.list_and_regex(path, value, keys, Effect::Forbids, subject)
            .map(Value::Object)
    }

    pub(super) fn pull_policies(&mut self, path: &str, value: &Value) {
        if let Some(policies) = self.strings(path, value) {
            if policies.is_empty() {
                self.not_translated(path, "an empty list: pull policies are not restricted");
                return;
            }
            self.settings("image-pull")
                .insert("allowed".into(), Value::Array(policies));
        }
    }

    pub(super) fn registries(&mut self, path: &str, value: &Value) {
        let keys = ["allowed", "allowedRegex"];
        let Some(mut out) = self.list_and_regex(path, value, keys, Effect::Allows, "registry")
        else {
            return;
        };
        // Capsule refuses images that do not name their registry
        out.insert("requireFullyQualified".into(), json!(true));
        self.settings("container-registry").extend(out);
    }

    pub(super) fn limit_ranges(&mut self, path: &str, value: &Value) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        let mut items = Vec::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            if key != "items" {
                self.not_translated(&p, "no policy of this bundle enforces it");
                continue;
            }
            let Some(list) = value.as_array() else {
                self.invalid(&p, "a list of LimitRange specs", value);
                continue;
            };
            for (i, item) in list.iter().enumerate() {
                let ip = format!("{p}[{i}]");
                let Some(item) = self.object(&ip, item) else {
                    continue;
                };
                for (k, v) in item {
                    if k == "limits" {
                        items.push(json!({"limits": v}));
                    } else {
                        self.not_translated(
                            &format!("{ip}.{k}"),
                            "not a field of a LimitRange spec",
                        );
                    }
                }
            }
        }
        if !items.is_empty() {
            self.settings("limit-range")
                .insert("items".into(), Value::Array(items));
        }
    }

    pub(super) fn network_policies(&mut self, path: &str, value: &Value) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        for (key, value) in block {
            let p = format!("{path}.{key}");
            if key != "items" {
                self.not_translated(&p, "no policy of this bundle enforces it");
                continue;
            }
            let count = match value.as_array() {
                Some(items) if !items.is_empty() => items.len(),
                Some(_) => continue,
                None => {
                    self.invalid(&p, "a list of NetworkPolicy specs", value);
                    continue;
                }
            };
            let tenant = self.tenant.to_owned();
            self.not_translated(
                &p,
                format!(
                    "{count} NetworkPolicy spec(s): admission does not create objects; create them in each namespace of the tenant labelled {CAPSULE_MANAGED_LABEL}=controller (or keep Capsule's replication); {tenant}-protected-objects keeps the tenant from changing or deleting them"
                ),
            );
            // the metadata's rules are every resource; the binding sees only NetworkPolicies
            self.rules.insert(
                "protected-objects",
                vec![json!({"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "resources": ["networkpolicies"], "operations": ["CREATE", "UPDATE", "DELETE"]})],
            );
            let settings = self.settings("protected-objects");
            settings.insert(
                "resources".into(),
                json!([{"apiGroup": "networking.k8s.io", "resources": ["networkpolicies"]}]),
            );
            settings.insert(
                "managedSelector".into(),
                json!({"matchLabels": {CAPSULE_MANAGED_LABEL: "controller"}}),
            );
            settings.insert(
                "exemptPrincipals".into(),
                json!({"serviceAccounts": ["capsule-system:capsule"], "clusterRoles": ["cluster-admin"]}),
            );
        }
    }

    /// What Capsule enforces in every tenant: no PersistentVolume of another tenant, no
    /// wildcard hostname.
    pub(super) fn always_enforced(&mut self) {
        let label = self.options.tenant_label.clone();
        let claims = self.settings("persistent-volume-claim");
        claims.insert("volumeBinding".into(), json!({"tenantLabel": label}));
        if !claims.contains_key("storageClasses") {
            // volume binding judges claims only; templates matter for storage classes
            self.rules.insert(
                "persistent-volume-claim",
                vec![json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["persistentvolumeclaims"], "operations": ["CREATE", "UPDATE"]})],
            );
        }
        self.settings("ingress");
    }
}
