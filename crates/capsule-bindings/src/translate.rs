//! Tenant fields to policy settings, as the policies' READMEs ("Capsule to settings") say,
//! with this bundle's stricter semantics; every field that is not expressed, or whose
//! meaning changes, is reported with its path.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::catalogue::{POLICIES, Policy};
use crate::placement::Placement;
use crate::regex::{Anchoring, anchoring};
use crate::report::{Report, ReportKind};
use crate::tenant::Tenant;

/// The label Capsule puts on every namespace of a tenant.
pub const CAPSULE_TENANT_LABEL: &str = "capsule.clastix.io/tenant";

/// The label marking objects Capsule manages (its replicated NetworkPolicies).
pub const CAPSULE_MANAGED_LABEL: &str = "projectcapsule.dev/managed-by";

/// Conversion options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The Namespace label naming the tenant (bindings' `namespaceSelector`, ingress
    /// collisions, volume binding).
    pub tenant_label: String,
    /// Where and how the bindings are placed (PolicyServer, mode, failure policy, opt-ins).
    pub placement: Placement,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tenant_label: CAPSULE_TENANT_LABEL.to_owned(),
            placement: Placement::default(),
        }
    }
}

/// The settings planned for one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The policy.
    pub policy: &'static Policy,
    /// Its settings for this tenant.
    pub settings: Value,
    /// Rules narrower than the metadata's (which are the most a policy understands), when
    /// the settings use only some of them.
    pub rules: Option<Vec<Value>>,
    /// `false` when the policy can mutate but these settings never make it (bound as
    /// validating: the API server then runs it in parallel with the others).
    pub mutating: Option<bool>,
}

/// What one Tenant translates into.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The Tenant's name.
    pub tenant: String,
    /// One entry per policy with something to enforce, in [`POLICIES`] order.
    pub planned: Vec<Planned>,
    /// Fields not translated or translated with another meaning.
    pub reports: Vec<Report>,
    /// Fields of the wrong shape: nothing may be written for this Tenant.
    pub errors: Vec<Report>,
}

/// Whether a regex allows or forbids what it matches (for the wording of reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Allows,
    Forbids,
}

/// The translation of one Tenant in progress.
struct Ctx<'a> {
    tenant: &'a str,
    options: &'a Options,
    settings: BTreeMap<&'static str, Map<String, Value>>,
    rules: BTreeMap<&'static str, Vec<Value>>,
    reports: Vec<Report>,
    errors: Vec<Report>,
}

/// Translates one Tenant.
///
/// ```
/// use capsule_bindings::{Options, parse_tenants, translate};
/// let tenant = &parse_tenants(
///     "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: solar}\nspec: {imagePullPolicies: [Always]}\n",
///     "t.yaml",
/// ).unwrap()[0];
/// let translation = translate(tenant, &Options::default());
/// let pull = translation.planned.iter().find(|p| p.policy.short == "image-pull").unwrap();
/// assert_eq!(pull.settings, serde_json::json!({"allowed": ["Always"]}));
/// ```
pub fn translate(tenant: &Tenant, options: &Options) -> Translation {
    let mut ctx = Ctx {
        tenant: &tenant.name,
        options,
        settings: BTreeMap::new(),
        rules: BTreeMap::new(),
        reports: Vec::new(),
        errors: Vec::new(),
    };
    for (key, value) in &tenant.spec {
        let path = format!("spec.{key}");
        match key.as_str() {
            "owners" => ctx.owners(&path, value),
            "nodeSelector" => ctx.node_selector(&path, value),
            "priorityClasses" => ctx.classes("priority-class", &path, value, "PriorityClass"),
            "runtimeClasses" => ctx.classes("runtime-class", &path, value, "RuntimeClass"),
            "deviceClasses" => ctx.classes("device-class", &path, value, "DeviceClass"),
            "storageClasses" => ctx.storage_classes(&path, value),
            "gatewayOptions" => ctx.gateway_options(&path, value),
            "ingressOptions" => ctx.ingress_options(&path, value),
            "serviceOptions" => ctx.service_options(&path, value),
            "imagePullPolicies" => ctx.pull_policies(&path, value),
            "containerRegistries" => ctx.registries(&path, value),
            "limitRanges" => ctx.limit_ranges(&path, value),
            "networkPolicies" => ctx.network_policies(&path, value),
            other => ctx.not_translated(&path, untranslated_hint(other)),
        }
    }
    ctx.always_enforced();
    let planned = POLICIES
        .iter()
        .filter_map(|policy| {
            ctx.settings.remove(policy.short).map(|s| Planned {
                policy,
                settings: Value::Object(s),
                rules: ctx.rules.remove(policy.short),
                mutating: (policy.short == "image-pull").then_some(false),
            })
        })
        .collect();
    Translation {
        tenant: tenant.name.clone(),
        planned,
        reports: ctx.reports,
        errors: ctx.errors,
    }
}

/// Why a Tenant field outside the translated ones is not expressed.
fn untranslated_hint(field: &str) -> &'static str {
    match field {
        "namespaceOptions" => {
            "namespace quotas and namespace metadata are judged by namespace-quota-policy and namespace-metadata-policy, bound once cluster-wide (a namespaceSelector does not select Namespaces by their tenant before they exist); configure them from their READMEs"
        }
        "resourceQuotas" => {
            "ResourceQuota distribution creates objects, which admission does not do; keep the quotas in your GitOps tree, and protected-objects-policy can protect them"
        }
        "additionalRoleBindings" | "permissions" => {
            "RBAC distribution creates objects, which admission does not do; rbac-policy can bound what tenant roles grant"
        }
        "podOptions" => "Pod metadata injection is not done by any policy of this bundle",
        "rules" => {
            "Capsule rules (per-namespace registries and pull policies) are not translated; express them with one container-registry-policy binding per namespace selection (its pullPolicies setting)"
        }
        "preventDeletion" | "cordoned" => {
            "a lifecycle switch of the Tenant object itself; no policy of this bundle enforces it"
        }
        _ => "no policy of this bundle enforces it",
    }
}

impl Ctx<'_> {
    fn report(&mut self, path: &str, kind: ReportKind, message: impl Into<String>) {
        let report = Report {
            tenant: self.tenant.to_owned(),
            path: path.to_owned(),
            kind,
            message: message.into(),
        };
        if kind == ReportKind::Invalid {
            self.errors.push(report);
        } else {
            self.reports.push(report);
        }
    }

    fn not_translated(&mut self, path: &str, message: impl Into<String>) {
        self.report(path, ReportKind::NotTranslated, message);
    }

    fn changed(&mut self, path: &str, message: impl Into<String>) {
        self.report(path, ReportKind::MeaningChanged, message);
    }

    fn invalid(&mut self, path: &str, expected: &str, found: &Value) {
        let found = serde_json::to_string(found).unwrap_or_default();
        self.report(
            path,
            ReportKind::Invalid,
            format!("expected {expected}, found {found}"),
        );
    }

    /// The settings of `policy` (created empty).
    fn settings(&mut self, policy: &'static str) -> &mut Map<String, Value> {
        self.settings.entry(policy).or_default()
    }

    fn object<'v>(&mut self, path: &str, value: &'v Value) -> Option<&'v Map<String, Value>> {
        let object = value.as_object();
        if object.is_none() {
            self.invalid(path, "an object", value);
        }
        object
    }

    fn strings(&mut self, path: &str, value: &Value) -> Option<Vec<Value>> {
        match value.as_array() {
            Some(items) if items.iter().all(Value::is_string) => Some(items.clone()),
            _ => {
                self.invalid(path, "a list of strings", value);
                None
            }
        }
    }

    fn string<'v>(&mut self, path: &str, value: &'v Value) -> Option<&'v str> {
        let string = value.as_str();
        if string.is_none() {
            self.invalid(path, "a string", value);
        }
        string
    }

    fn boolean(&mut self, path: &str, value: &Value) -> Option<bool> {
        let boolean = value.as_bool();
        if boolean.is_none() {
            self.invalid(path, "true or false", value);
        }
        boolean
    }

    fn string_map(&mut self, path: &str, value: &Value) -> Option<Map<String, Value>> {
        match value.as_object() {
            Some(map) if map.values().all(Value::is_string) => Some(map.clone()),
            _ => {
                self.invalid(path, "a map of strings", value);
                None
            }
        }
    }

    /// A Capsule regex as this bundle reads it; a change of meaning is reported.
    fn regex(&mut self, path: &str, text: &str, effect: Effect, subject: &str) -> String {
        match anchoring(text) {
            Anchoring::Same(ours) => ours,
            Anchoring::Invalid => text.to_owned(),
            Anchoring::Changed => {
                let (verb, fewer) = match effect {
                    Effect::Allows => ("allows", "allows fewer"),
                    Effect::Forbids => ("forbids", "forbids fewer"),
                };
                self.changed(
                    path,
                    format!(
                        "{text:?}: Capsule {verb} every {subject} containing a match; this bundle matches the whole {subject}, so it {fewer} (write \".*(?:{text}).*\" for Capsule's meaning)"
                    ),
                );
                text.to_owned()
            }
        }
    }

    /// Capsule's `{allowed, allowedRegex, matchLabels, matchExpressions, default}` as a class
    /// allow-list; `None` when nothing is left to enforce.
    fn class_list(
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

    fn owners(&mut self, path: &str, value: &Value) {
        let owners: Vec<String> = value
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("?");
                format!("{} {}", field("kind"), field("name"))
            })
            .collect();
        let label = &self.options.tenant_label;
        let tenant = self.tenant;
        self.not_translated(
            path,
            format!(
                "tenant ownership ({}) is RBAC, not admission: grant the owners their roles with RoleBindings in the tenant's namespaces; the bindings select those namespaces by the label {label}={tenant}, which namespace-metadata-policy must protect (bound once, cluster-wide)",
                owners.join(", ")
            ),
        );
    }

    fn node_selector(&mut self, path: &str, value: &Value) {
        if let Some(pairs) = self.string_map(path, value)
            && !pairs.is_empty()
        {
            self.settings("node-selector")
                .insert("requiredNodeSelector".into(), Value::Object(pairs));
        }
    }

    fn classes(&mut self, policy: &'static str, path: &str, value: &Value, kind: &str) {
        let with_default = policy != "device-class";
        if let Some(list) = self.class_list(path, value, kind, with_default) {
            self.settings(policy).extend(list);
        }
    }

    fn storage_classes(&mut self, path: &str, value: &Value) {
        if let Some(list) = self.class_list(path, value, "StorageClass", true) {
            self.settings("persistent-volume-claim")
                .insert("storageClasses".into(), Value::Object(list));
        }
    }

    fn gateway_options(&mut self, path: &str, value: &Value) {
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

    fn ingress_options(&mut self, path: &str, value: &Value) {
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
    fn list_and_regex(
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

    fn allowed_hostnames(&mut self, path: &str, value: &Value) {
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

    fn service_options(&mut self, path: &str, value: &Value) {
        let Some(options) = self.object(path, value) else {
            return;
        };
        for (key, value) in options {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "allowedServices" => self.allowed_services(&p, value),
                "externalIPs" => self.external_ips(&p, value),
                "forbiddenLabels" | "forbiddenAnnotations" => {
                    let subject = if key == "forbiddenLabels" {
                        "label key"
                    } else {
                        "annotation key"
                    };
                    if let Some(block) = self.forbidden(&p, value, subject) {
                        self.settings("service").insert(key.clone(), block);
                    }
                }
                "additionalMetadata" => self.not_translated(
                    &p,
                    "adds labels and annotations to Services, a mutation no policy of this bundle makes",
                ),
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
    }

    fn allowed_services(&mut self, path: &str, value: &Value) {
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

    fn external_ips(&mut self, path: &str, value: &Value) {
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

    fn forbidden(&mut self, path: &str, value: &Value, subject: &str) -> Option<Value> {
        let keys = ["denied", "deniedRegex"];
        self.list_and_regex(path, value, keys, Effect::Forbids, subject)
            .map(Value::Object)
    }

    fn pull_policies(&mut self, path: &str, value: &Value) {
        if let Some(policies) = self.strings(path, value) {
            if policies.is_empty() {
                self.not_translated(path, "an empty list: pull policies are not restricted");
                return;
            }
            self.settings("image-pull")
                .insert("allowed".into(), Value::Array(policies));
        }
    }

    fn registries(&mut self, path: &str, value: &Value) {
        let keys = ["allowed", "allowedRegex"];
        let Some(mut out) = self.list_and_regex(path, value, keys, Effect::Allows, "registry")
        else {
            return;
        };
        // Capsule refuses images that do not name their registry
        out.insert("requireFullyQualified".into(), json!(true));
        self.settings("container-registry").extend(out);
    }

    fn limit_ranges(&mut self, path: &str, value: &Value) {
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

    fn network_policies(&mut self, path: &str, value: &Value) {
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
    fn always_enforced(&mut self) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::parse_tenants;

    fn translate_spec(spec: &str) -> Translation {
        let text = format!(
            "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {{name: solar}}\nspec: {spec}\n"
        );
        translate(
            &parse_tenants(&text, "t.yaml").unwrap()[0],
            &Options::default(),
        )
    }

    fn settings_of(t: &Translation, short: &str) -> Option<Value> {
        t.planned
            .iter()
            .find(|p| p.policy.short == short)
            .map(|p| p.settings.clone())
    }

    #[test]
    fn an_empty_tenant_keeps_capsules_always_on_rules() {
        let t = translate_spec("{}");
        let shorts: Vec<&str> = t.planned.iter().map(|p| p.policy.short).collect();
        assert_eq!(shorts, ["persistent-volume-claim", "ingress"]);
        assert_eq!(
            settings_of(&t, "persistent-volume-claim"),
            Some(json!({"volumeBinding": {"tenantLabel": "capsule.clastix.io/tenant"}}))
        );
        assert_eq!(settings_of(&t, "ingress"), Some(json!({})));
        assert!(t.reports.is_empty() && t.errors.is_empty());
        let claims = &t.planned[0];
        assert_eq!(
            claims.rules,
            Some(vec![
                json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["persistentvolumeclaims"], "operations": ["CREATE", "UPDATE"]})
            ])
        );
    }

    #[test]
    fn storage_classes_keep_the_template_rules_and_pull_policies_never_mutate() {
        let t = translate_spec("{storageClasses: {allowed: [ceph]}, imagePullPolicies: [Always]}");
        let claims = t
            .planned
            .iter()
            .find(|p| p.policy.short == "persistent-volume-claim")
            .unwrap();
        assert_eq!(claims.rules, None);
        let pull = t
            .planned
            .iter()
            .find(|p| p.policy.short == "image-pull")
            .unwrap();
        assert_eq!(pull.mutating, Some(false));
        assert_eq!(claims.mutating, None);
    }

    #[test]
    fn class_lists_translate_with_anchors_dropped_and_selector_nested() {
        let t = translate_spec(
            "{priorityClasses: {allowed: [custom], allowedRegex: '^tier-.*$', matchLabels: {env: production}, default: tenant-default}}",
        );
        assert_eq!(
            settings_of(&t, "priority-class"),
            Some(
                json!({"allowed": ["custom"], "allowedRegex": "tier-.*", "selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"})
            )
        );
        assert!(t.reports.is_empty(), "{:?}", t.reports);
    }

    #[test]
    fn unanchored_regexes_are_kept_and_reported() {
        let t =
            translate_spec("{containerRegistries: {allowedRegex: 'internal.registry.\\w.tld'}}");
        assert_eq!(
            settings_of(&t, "container-registry"),
            Some(
                json!({"allowedRegex": "internal.registry.\\w.tld", "requireFullyQualified": true})
            )
        );
        let [report] = &t.reports[..] else {
            panic!("{:?}", t.reports)
        };
        assert_eq!(report.path, "spec.containerRegistries.allowedRegex");
        assert_eq!(report.kind, ReportKind::MeaningChanged);
        assert!(
            report.message.contains("allows fewer"),
            "{}",
            report.message
        );
    }

    #[test]
    fn empty_selectors_are_left_out_and_reported() {
        let t = translate_spec("{runtimeClasses: {allowed: [gvisor], matchLabels: {}}}");
        assert_eq!(
            settings_of(&t, "runtime-class"),
            Some(json!({"allowed": ["gvisor"]}))
        );
        assert_eq!(t.reports.len(), 1);
        assert!(t.reports[0].message.contains("empty selector"));
        let t = translate_spec("{deviceClasses: {matchLabels: {}}}");
        assert_eq!(settings_of(&t, "device-class"), None);
        assert_eq!(t.reports.len(), 2, "{:?}", t.reports);
    }

    #[test]
    fn devices_have_no_default() {
        let t = translate_spec("{deviceClasses: {allowed: [gpu], default: gpu}}");
        assert_eq!(
            settings_of(&t, "device-class"),
            Some(json!({"allowed": ["gpu"]}))
        );
        assert_eq!(t.reports[0].path, "spec.deviceClasses.default");
    }

    #[test]
    fn services_and_ingresses() {
        let t = translate_spec(
            "{serviceOptions: {allowedServices: {nodePort: false}, externalIPs: {allowed: ['10.20.0.0/16', 'fd00::1']}, forbiddenLabels: {denied: [foo], deniedRegex: 'gatsby'}, additionalMetadata: {labels: {a: b}}}, ingressOptions: {hostnameCollisionScope: Tenant, allowWildcardHostnames: false, allowedHostnames: {allowed: [solar.acmecorp.com], allowedRegex: '^.*acmecorp.com$'}}}",
        );
        assert_eq!(
            settings_of(&t, "service"),
            Some(
                json!({"allowedServices": {"nodePort": false}, "externalIPs": {"allowed": ["10.20.0.0/16", "fd00::1"]}, "forbiddenLabels": {"denied": ["foo"], "deniedRegex": "gatsby"}})
            )
        );
        assert_eq!(
            settings_of(&t, "ingress"),
            Some(
                json!({"hostnameCollisionScope": "Tenant", "tenantLabel": "capsule.clastix.io/tenant", "allowWildcardHostnames": false, "allowedHostnames": {"allowed": ["solar.acmecorp.com"], "allowedRegex": ".*acmecorp.com"}})
            )
        );
        let paths: Vec<&str> = t.reports.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.serviceOptions.allowedServices.nodePort",
                "spec.serviceOptions.externalIPs.allowed[1]",
                "spec.serviceOptions.forbiddenLabels.deniedRegex",
                "spec.serviceOptions.additionalMetadata",
                "spec.ingressOptions.allowedHostnames",
            ]
        );
    }

    #[test]
    fn wrong_shapes_are_errors_naming_the_path() {
        let t = translate_spec(
            "{nodeSelector: [pool], imagePullPolicies: Always, priorityClasses: {allowed: [1]}}",
        );
        let paths: Vec<&str> = t.errors.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.nodeSelector",
                "spec.imagePullPolicies",
                "spec.priorityClasses.allowed"
            ]
        );
        assert!(
            t.errors[0]
                .message
                .contains("expected a map of strings, found [\"pool\"]")
        );
    }

    #[test]
    fn other_fields_are_reported_with_a_hint() {
        let t = translate_spec(
            "{owners: [{name: alice, kind: User}], resourceQuotas: {items: []}, somethingNew: 1, networkPolicies: {items: [{policyTypes: [Ingress]}]}, limitRanges: {items: [{limits: [{type: Pod}]}]}}",
        );
        let paths: Vec<&str> = t.reports.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.owners",
                "spec.resourceQuotas",
                "spec.somethingNew",
                "spec.networkPolicies.items"
            ]
        );
        assert!(t.reports[0].message.contains("User alice"));
        assert!(t.reports[1].message.contains("admission does not do"));
        assert_eq!(
            settings_of(&t, "limit-range"),
            Some(json!({"items": [{"limits": [{"type": "Pod"}]}]}))
        );
        assert!(settings_of(&t, "protected-objects").is_some());
    }

    #[test]
    fn the_tenant_label_option_reaches_every_setting_that_names_it() {
        let text = "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: solar}\nspec: {ingressOptions: {hostnameCollisionScope: Cluster}}\n";
        let options = Options {
            tenant_label: "example.org/tenant".into(),
            ..Options::default()
        };
        let t = translate(&parse_tenants(text, "t").unwrap()[0], &options);
        assert_eq!(
            settings_of(&t, "ingress").unwrap()["tenantLabel"],
            "example.org/tenant"
        );
        assert_eq!(
            settings_of(&t, "persistent-volume-claim").unwrap()["volumeBinding"]["tenantLabel"],
            "example.org/tenant"
        );
        assert_eq!(
            t.reports[0].path,
            "spec.ingressOptions.hostnameCollisionScope"
        );
    }
}
