//! Tenant fields to policy settings, as the policies' READMEs ("Capsule to settings") say,
//! with this bundle's stricter semantics; every field that is not expressed, or whose
//! meaning changes, is reported with its path.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::catalogue::{POLICIES, Policy};
use crate::placement::{Mode, Placement};
use crate::regex::{Anchoring, anchoring};
use crate::report::{Report, ReportKind};
use crate::tenant::Tenant;

mod classic;
mod matchers;
mod metadata;
mod namespaces;
mod partition;
mod rules;

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
    /// Whether the cluster-wide namespace ownership binding is written from the Tenants
    /// converted (README "Coming from Capsule": converting every Tenant at once keeps it whole).
    pub ownership: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tenant_label: CAPSULE_TENANT_LABEL.to_owned(),
            placement: Placement::default(),
            ownership: true,
        }
    }
}

/// The settings planned for one binding of a policy.
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
    /// What follows the policy in the binding's name when a policy is bound more than once
    /// for a tenant (`rule-0` in `solar-container-registry-rule-0`).
    pub suffix: Option<String>,
    /// Label selector requirements ANDed with the tenant label (a Capsule rule's
    /// `namespaceSelector`, as `matchExpressions`).
    pub selector: Vec<Value>,
    /// The binding's own mode (`monitor` for Capsule's `audit` action), else the placement's.
    pub mode: Option<Mode>,
    /// The binding's `matchConditions` (CEL expressions every routed request must pass).
    pub match_conditions: Vec<Value>,
}

impl Planned {
    /// The plan of `policy` with `settings`, bound as its metadata says.
    pub fn new(policy: &'static Policy, settings: Value) -> Planned {
        Planned {
            policy,
            settings,
            rules: None,
            mutating: None,
            suffix: None,
            selector: Vec::new(),
            mode: None,
            match_conditions: Vec::new(),
        }
    }
}

/// What one Tenant translates into.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The Tenant's name.
    pub tenant: String,
    /// One entry per binding, the tenant's own in [`POLICIES`] order, then those of its
    /// `rules[]` and selected metadata.
    pub planned: Vec<Planned>,
    /// The Tenant's entry in the cluster-wide ownership binding (`owners` of
    /// namespace-organization-policy), when it has owners.
    pub owners: Option<Value>,
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
    /// Bindings beyond one per policy (Capsule `rules[]`, selected metadata), in order.
    extra: Vec<Planned>,
    /// The tenant-metadata-policy rules of the tenant's own binding, each with whether it
    /// judges CREATE only (metadata Capsule writes into new Pods and Services).
    metadata_rules: Vec<(Value, bool)>,
    /// The tenant's ownership entry being built.
    owners: Map<String, Value>,
    /// `rules[].enforce.workloads.registries` read so far: the rule's index, its selector and
    /// its container-registry-policy rule.
    registry_rules: Vec<(usize, Vec<Value>, Value)>,
    /// The rules read so far of each family translated rule by rule: the family, the rule's
    /// index, selector and action.
    family_rules: Vec<(&'static str, usize, Vec<Value>, rules::Action)>,
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
    let mut ctx = Ctx::new(&tenant.name, options);
    for (key, value) in &tenant.spec {
        let path = format!("spec.{key}");
        match key.as_str() {
            "owners" => ctx.owners(&path, value),
            "forceTenantPrefix" => ctx.force_tenant_prefix(&path, value),
            "namespaceOptions" => ctx.namespace_options(&path, value),
            "cordoned" => ctx.cordoned(&path, value),
            "podOptions" => ctx.pod_options(&path, value),
            "rules" => ctx.capsule_rules(&path, value),
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
    ctx.tenant_metadata();
    ctx.tenant_labels();
    let mut planned: Vec<Planned> = POLICIES
        .iter()
        .filter_map(|policy| {
            ctx.settings.remove(policy.short).map(|s| Planned {
                rules: ctx.rules.remove(policy.short),
                mutating: (policy.short == "image-pull").then_some(false),
                ..Planned::new(policy, Value::Object(s))
            })
        })
        .collect();
    planned.append(&mut ctx.extra);
    let owners = ctx.ownership_entry();
    Translation {
        tenant: tenant.name.clone(),
        planned,
        owners,
        reports: ctx.reports,
        errors: ctx.errors,
    }
}

/// Why a Tenant field outside the translated ones is not expressed.
fn untranslated_hint(field: &str) -> &'static str {
    match field {
        "resourceQuotas" => {
            "ResourceQuota distribution creates objects, which admission does not do; keep the quotas in your GitOps tree, and protected-objects-policy can protect them"
        }
        "additionalRoleBindings" | "permissions" => {
            "RBAC distribution (RoleBindings, promoted service accounts, owners matched from TenantOwner objects) creates objects or needs Capsule's controller, which admission does not replace; keep the RoleBindings in your GitOps tree, list owners in spec.owners, and rbac-policy can bound what tenant roles grant"
        }
        "preventDeletion" => {
            "it protects the Tenant object from deletion; without Capsule there is no Tenant object in the cluster, only its bindings (keep them in your GitOps tree)"
        }
        "data" => "free-form data for Capsule's templating; nothing to enforce",
        _ => "no policy of this bundle enforces it",
    }
}

impl<'a> Ctx<'a> {
    /// Nothing translated yet.
    fn new(tenant: &'a str, options: &'a Options) -> Ctx<'a> {
        Ctx {
            tenant,
            options,
            settings: BTreeMap::new(),
            rules: BTreeMap::new(),
            extra: Vec::new(),
            metadata_rules: Vec::new(),
            owners: Map::new(),
            registry_rules: Vec::new(),
            family_rules: Vec::new(),
            reports: Vec::new(),
            errors: Vec::new(),
        }
    }

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
}

/// The translation of a Tenant `solar` with `spec` (YAML), for tests.
#[cfg(test)]
fn translate_spec(spec: &str) -> Translation {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    let text = format!(
        "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {{name: solar}}\nspec: {spec}\n"
    );
    translate(
        &crate::tenant::parse_tenants(&text, "t.yaml").unwrap()[0],
        &Options::default(),
    )
}

/// The settings of the tenant's own binding of `short`, for tests.
#[cfg(test)]
fn settings_of(t: &Translation, short: &str) -> Option<Value> {
    t.planned
        .iter()
        .find(|p| p.policy.short == short && p.suffix.is_none())
        .map(|p| p.settings.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::parse_tenants;
    use serde_json::json;

    #[test]
    fn an_empty_tenant_keeps_capsules_always_on_rules() {
        let t = translate_spec("{}");
        let shorts: Vec<&str> = t.planned.iter().map(|p| p.policy.short).collect();
        assert_eq!(
            shorts,
            ["persistent-volume-claim", "ingress", "tenant-metadata"]
        );
        assert_eq!(
            settings_of(&t, "persistent-volume-claim"),
            Some(json!({"volumeBinding": {"tenantLabel": "capsule.clastix.io/tenant"}}))
        );
        assert_eq!(settings_of(&t, "ingress"), Some(json!({})));
        assert!(t.reports.is_empty() && t.errors.is_empty());
        // Capsule's /generic/metadata: the tenant's labels on every namespaced object but Events
        let labels = &t.planned[2];
        assert_eq!(labels.suffix.as_deref(), Some("labels"));
        assert_eq!(
            labels.settings,
            json!({"rules": [{"kinds": ["*"], "apiGroups": ["*"], "labels": {
                "capsule.clastix.io/managed-by": {"managed": "solar"},
                "projectcapsule.dev/tenant": {"managed": "solar"}}}]})
        );
        assert_eq!(
            labels.rules,
            Some(vec![
                json!({"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"})
            ])
        );
        assert_eq!(
            labels.match_conditions,
            [
                json!({"name": "not-events", "expression": "request.resource.resource != \"events\""})
            ]
        );
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
                "spec.resourceQuotas",
                "spec.somethingNew",
                "spec.networkPolicies.items"
            ]
        );
        assert_eq!(
            t.owners,
            Some(json!({"tenant": "solar", "users": ["alice"]}))
        );
        assert!(t.reports[0].message.contains("admission does not do"));
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
