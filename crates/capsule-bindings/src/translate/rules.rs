//! Capsule v0.13+ `rules[]`: each rule's `enforce` blocks as bindings of their own whose
//! `namespaceSelector` is the tenant label AND the rule's `namespaceSelector`.

use serde_json::{Map, Value, json};

use super::matchers::{ALLOWED_DENIED, WHITELIST_BLACKLIST, push_all};
use super::{Ctx, Planned};
use crate::catalogue::Policy;
use crate::placement::Mode;

/// Capsule's `enforce.action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// What matches is admitted, everything else refused.
    Allow,
    /// What matches is refused (Capsule's default).
    Deny,
    /// What matches is reported: the binding runs in `monitor` mode.
    Audit,
}

/// The bindings of one rule under construction.
struct RuleOut {
    index: usize,
    selector: Vec<Value>,
    action: Action,
}

/// How Capsule v0.14's rule engine (pkg/ruleengine, the pods webhook's registry rules) reads
/// `rules[].enforce.workloads.registries`, against this bundle's translation.
const REGISTRY_RULES_CHANGE: &str = "Capsule matches `exact` against the whole image reference (`docker.io/library/nginx:1.25`) and `exp` anywhere in it, refuses what a rule matches unless its action is `allow` (a rule with `action: allow` refuses every reference no allow rule matches), and lets the last matching rule decide; this bundle reads the list as registries allowed (hosts or repository prefixes, whole-value expressions) and a negated entry as denied, each rule on its own";

/// Service types a service-policy binding can refuse, with their `allowedServices` key.
const SERVICE_TYPES: [(&str, &str); 3] = [
    ("NodePort", "nodePort"),
    ("LoadBalancer", "loadBalancer"),
    ("ExternalName", "externalName"),
];

impl Ctx<'_> {
    /// `rules`: every rule in order.
    pub(super) fn capsule_rules(&mut self, path: &str, value: &Value) {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of rules", value);
            return;
        };
        for (i, rule) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            if let Some(rule) = self.object(&p, rule) {
                self.capsule_rule(&p, i, rule);
            }
        }
    }

    fn capsule_rule(&mut self, path: &str, index: usize, rule: &Map<String, Value>) {
        let selector = match rule.get("namespaceSelector") {
            Some(s) => match self.selector_expressions(&format!("{path}.namespaceSelector"), s) {
                Some(e) => e,
                None => return,
            },
            None => Vec::new(),
        };
        for key in rule.keys() {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "namespaceSelector" | "enforce" => {}
                "audience" => self.changed(
                    &p,
                    "the rule applies to every requester here: a binding cannot be limited to some subjects (exemptPrincipals only exempt)",
                ),
                "permissions" => self.not_translated(
                    &p,
                    "RoleBindings and promotions are objects Capsule creates; admission creates none: keep them in your GitOps tree",
                ),
                "quota" => self.not_translated(
                    &p,
                    "ResourceQuotas are objects Capsule creates and aggregates across the selected namespaces; admission creates none and cannot count usage across namespaces",
                ),
                _ => self.not_translated(&p, "not a field of a Capsule rule"),
            }
        }
        let Some(enforce) = rule.get("enforce") else {
            return;
        };
        let ep = format!("{path}.enforce");
        let Some(enforce) = self.object(&ep, enforce) else {
            return;
        };
        let action = match enforce.get("action").and_then(Value::as_str) {
            None | Some("deny") => Action::Deny,
            Some("allow") => Action::Allow,
            Some("audit") => Action::Audit,
            Some(other) => {
                self.invalid(
                    &format!("{ep}.action"),
                    "allow, deny or audit",
                    &json!(other),
                );
                return;
            }
        };
        let out = RuleOut {
            index,
            selector,
            action,
        };
        for (key, value) in enforce {
            let p = format!("{ep}.{key}");
            match key.as_str() {
                "action" => {}
                "workloads" => self.rule_workloads(&p, value, &out),
                "services" => self.rule_services(&p, value, &out),
                "ingress" => self.rule_ingress(&p, value, &out),
                "metadata" => {
                    let rules = self.capsule_metadata(&p, value, action == Action::Deny);
                    if !rules.is_empty() {
                        let suffix = format!("rule-{index}");
                        let mode = (action == Action::Audit).then_some(Mode::Monitor);
                        self.metadata_binding(&suffix, rules, out.selector.clone(), mode);
                    }
                }
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
    }

    /// One binding of `short` for the rule.
    fn rule_binding(&mut self, out: &RuleOut, short: &str, settings: Map<String, Value>) {
        let Some(policy) = Policy::find(short) else {
            return;
        };
        self.extra.push(Planned {
            suffix: Some(format!("rule-{}", out.index)),
            selector: out.selector.clone(),
            mode: (out.action == Action::Audit).then_some(Mode::Monitor),
            ..Planned::new(policy, Value::Object(settings))
        });
    }

    fn rule_workloads(&mut self, path: &str, value: &Value, out: &RuleOut) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        let mut registry = Map::new();
        let mut pod = Map::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "registries" => self.rule_registries(&p, value, &mut registry),
                "qosClasses" => {
                    if let Some(classes) = self.strings(&p, value) {
                        let side = if out.action == Action::Allow { "whitelist" } else { "blacklist" };
                        pod.insert("qosClass".into(), json!({side: classes}));
                    }
                }
                "schedulers" => {
                    if let Some(restriction) = self.string_restriction(&p, value, out.action) {
                        pod.insert("schedulerName".into(), Value::Object(restriction));
                    }
                }
                "resources" => self.not_translated(
                    &p,
                    "requests and limits written or removed (Preserve, Default, Remove, MatchRequest, Ratio) are mutations no policy of this bundle makes; limit-range-policy writes defaults and bounds ratios from LimitRange items (spec.limitRanges)",
                ),
                "targets" => self.changed(
                    &p,
                    "the bundle judges every container list (containers, init and ephemeral containers) and image volumes of Pods and pod templates; a narrower target list cannot be expressed",
                ),
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
        if !registry.is_empty() {
            registry.insert("requireFullyQualified".into(), json!(true));
            self.rule_binding(out, "container-registry", registry);
        }
        if !pod.is_empty() {
            let name = format!("{}-rule-{}", self.tenant, out.index);
            let settings = json!({"restrictions": [{"name": name, "spec": {"spec": pod}}]});
            if let Value::Object(settings) = settings {
                self.rule_binding(out, "pod-restriction", settings);
            }
        }
    }

    /// Registries: an allow-list whatever the action (Capsule: "registries which are
    /// allowed"); a negated expression denies; `policy` gives the registry's pull policies.
    /// Capsule v0.14's rule engine reads them otherwise, which is reported.
    fn rule_registries(&mut self, path: &str, value: &Value, out: &mut Map<String, Value>) {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of registries", value);
            return;
        };
        self.changed(path, REGISTRY_RULES_CHANGE);
        for (i, entry) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(entry) = self.object(&p, entry) else {
                continue;
            };
            let policy = match entry.get("policy") {
                Some(v) => self
                    .strings(&format!("{p}.policy"), v)
                    .filter(|l| !l.is_empty()),
                None => None,
            };
            let matcher = self.matcher(&p, entry, true, "image repository");
            if let Some(names) = matcher.exact {
                if let Some(allowed) = &policy {
                    for name in &names {
                        push_all(
                            out,
                            "pullPolicies",
                            vec![json!({"registry": name, "allowed": allowed})],
                        );
                    }
                }
                // the whole entry is negated: Capsule's deny-list of registries
                let side = if matcher.negate { "denied" } else { "allowed" };
                push_all(out, side, names);
            }
            if let Some((allows, regex)) = matcher.exp {
                let side = if allows {
                    "allowedRepositoryRegex"
                } else {
                    "deniedRepositoryRegex"
                };
                push_all(out, side, vec![json!(regex.clone())]);
                if let Some(allowed) = &policy {
                    if regex.contains('/') {
                        self.not_translated(
                            &format!("{p}.policy"),
                            "pull policies per registry are chosen by the registry host; an expression over repositories cannot choose them",
                        );
                    } else {
                        push_all(
                            out,
                            "pullPolicies",
                            vec![json!({"registryRegex": regex, "allowed": allowed})],
                        );
                    }
                }
            }
            for key in entry.keys() {
                if !["exact", "exp", "negate", "policy"].contains(&key.as_str()) {
                    self.not_translated(&format!("{p}.{key}"), "not a field of a registry rule");
                }
            }
        }
    }

    /// Capsule's `[{exact, exp, negate}]` over one string as a pod-restriction String
    /// restriction: allowed values (`allow`) or refused ones (`deny`, `audit`).
    fn string_restriction(
        &mut self,
        path: &str,
        value: &Value,
        action: Action,
    ) -> Option<Map<String, Value>> {
        let mut out = Map::new();
        let allow = action == Action::Allow;
        self.matchers(path, value, allow, WHITELIST_BLACKLIST, "value", &mut out);
        (!out.is_empty()).then_some(out)
    }

    fn rule_services(&mut self, path: &str, value: &Value, out: &RuleOut) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        let mut settings = Map::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "types" => self.rule_service_types(&p, value, out.action, &mut settings),
                "externalNames" => {
                    if let Some(hostnames) = value.get("hostnames") {
                        let m = self.hostname_matchers(
                            &format!("{p}.hostnames"),
                            hostnames,
                            out.action,
                            "external name",
                        );
                        if !m.is_empty() {
                            settings.insert("externalNames".into(), Value::Object(m));
                        }
                    }
                }
                "loadBalancers" => {
                    if let Some(cidrs) = value.get("cidrs")
                        && let Some(list) = self.strings(&format!("{p}.cidrs"), cidrs)
                        && !list.is_empty()
                    {
                        settings.insert("loadBalancerCIDRs".into(), Value::Array(list));
                    }
                }
                "nodePorts" => {
                    if let Some(ports) = value.get("ports") {
                        match ports.as_array() {
                            Some(list) if !list.is_empty() => {
                                settings.insert("nodePorts".into(), json!({"allowed": list}));
                            }
                            Some(_) => {}
                            None => {
                                self.invalid(&format!("{p}.ports"), "a list of port ranges", ports)
                            }
                        }
                    }
                }
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
        if !settings.is_empty() {
            self.rule_binding(out, "service", settings);
        }
    }

    fn rule_service_types(
        &mut self,
        path: &str,
        value: &Value,
        action: Action,
        out: &mut Map<String, Value>,
    ) {
        let Some(types) = self.strings(path, value) else {
            return;
        };
        let listed = |t: &str| types.iter().any(|v| v.as_str() == Some(t));
        let mut allowed = Map::new();
        for (kind, key) in SERVICE_TYPES {
            let allow = if action == Action::Allow {
                listed(kind)
            } else {
                !listed(kind)
            };
            if !allow {
                allowed.insert(key.into(), json!(false));
            }
        }
        let cluster_ip_refused = if action == Action::Allow {
            !listed("ClusterIP")
        } else {
            listed("ClusterIP")
        };
        if cluster_ip_refused {
            self.not_translated(
                path,
                "ClusterIP Services cannot be refused by service-policy (every other type builds on a cluster IP)",
            );
        }
        if !allowed.is_empty() {
            out.insert("allowedServices".into(), Value::Object(allowed));
        }
    }

    /// Capsule's hostname matchers as `allowed`/`allowedRegex` (`allow`) or
    /// `denied`/`deniedRegex` (`deny`), a negated expression on the other side.
    fn hostname_matchers(
        &mut self,
        path: &str,
        value: &Value,
        action: Action,
        subject: &str,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        let allow = action == Action::Allow;
        self.matchers(path, value, allow, ALLOWED_DENIED, subject, &mut out);
        out
    }

    fn rule_ingress(&mut self, path: &str, value: &Value, out: &RuleOut) {
        let Some(block) = self.object(path, value) else {
            return;
        };
        let mut settings = Map::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "hostnames" => {
                    let m = self.hostname_matchers(&p, value, out.action, "hostname");
                    let (allowed, denied): (Map<String, Value>, Map<String, Value>) =
                        m.into_iter().partition(|(k, _)| k.starts_with("allowed"));
                    if !allowed.is_empty() {
                        settings.insert("allowedHostnames".into(), Value::Object(allowed));
                    }
                    if !denied.is_empty() {
                        settings.insert("deniedHostnames".into(), Value::Object(denied));
                    }
                }
                "types" => {
                    if let Some(types) = self.strings(&p, value) {
                        let others: Vec<&str> = types
                            .iter()
                            .filter_map(Value::as_str)
                            .filter(|t| *t != "Ingress")
                            .collect();
                        if !others.is_empty() {
                            self.not_translated(
                                &p,
                                format!("hostnames of {} are not judged: ingress-policy judges Ingresses only", others.join(", ")),
                            );
                        }
                    }
                }
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
        if !settings.is_empty() {
            // Capsule's tenant-wide wildcard refusal stays with the tenant's own binding
            settings.insert("allowWildcardHostnames".into(), json!(true));
            self.rule_binding(out, "ingress", settings);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::super::translate_spec;
    use super::*;
    use crate::report::ReportKind;

    fn extra<'t>(t: &'t super::super::Translation, name: &str) -> &'t Planned {
        t.planned
            .iter()
            .find(|p| format!("{}-{}", p.policy.short, p.suffix.as_deref().unwrap_or("")) == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", t.planned))
    }

    #[test]
    fn registries_are_an_allow_list_negation_denies_and_policies_choose_pulls() {
        let t = translate_spec(
            "{rules: [{namespaceSelector: {matchLabels: {env: prod}}, enforce: {workloads: {registries: [{exact: [docker.io], policy: [Always]}, {exp: '^quay\\.io/acme/.*$'}, {exp: '^evil\\.io/.*$', negate: true}]}}}]}",
        );
        let registry = extra(&t, "container-registry-rule-0");
        assert_eq!(
            registry.settings,
            json!({"pullPolicies": [{"registry": "docker.io", "allowed": ["Always"]}], "allowed": ["docker.io"], "allowedRepositoryRegex": ["quay\\.io/acme/.*"], "deniedRepositoryRegex": ["evil\\.io/.*"], "requireFullyQualified": true})
        );
        assert_eq!(
            registry.selector,
            vec![json!({"key": "env", "operator": "In", "values": ["prod"]})]
        );
        assert_eq!(registry.mode, None);
        // Capsule's own reading of the same rule (default deny, whole references, last
        // match wins) is not this one: reported
        let paths: Vec<(&str, ReportKind)> = t
            .reports
            .iter()
            .map(|r| (r.path.as_str(), r.kind))
            .collect();
        assert_eq!(
            paths,
            [(
                "spec.rules[0].enforce.workloads.registries",
                ReportKind::MeaningChanged
            )]
        );
        assert!(t.reports[0].message.contains("last matching rule decide"));
    }

    #[test]
    fn audit_rules_bind_in_monitor_mode_and_deny_refuses_what_matches() {
        let t = translate_spec(
            "{rules: [{enforce: {action: audit, workloads: {qosClasses: [BestEffort], schedulers: [{exact: [default-scheduler]}, {exp: '^gpu-.*$', negate: true}]}}}]}",
        );
        let pods = extra(&t, "pod-restriction-rule-0");
        assert_eq!(pods.mode, Some(Mode::Monitor));
        assert_eq!(
            pods.settings,
            json!({"restrictions": [{"name": "solar-rule-0", "spec": {"spec": {"qosClass": {"blacklist": ["BestEffort"]}, "schedulerName": {"blacklist": ["default-scheduler"], "regex": ["gpu-.*"]}}}}]})
        );
    }

    #[test]
    fn services_types_names_ports_and_cidrs() {
        let t = translate_spec(
            "{rules: [{enforce: {action: allow, services: {types: [ClusterIP, LoadBalancer], externalNames: {hostnames: [{exact: [db.acme.com]}]}, loadBalancers: {cidrs: [10.0.0.0/8]}, nodePorts: {ports: [{from: 30000, to: 30100}]}}}}]}",
        );
        assert_eq!(
            extra(&t, "service-rule-0").settings,
            json!({"allowedServices": {"nodePort": false, "externalName": false}, "externalNames": {"allowed": ["db.acme.com"]}, "loadBalancerCIDRs": ["10.0.0.0/8"], "nodePorts": {"allowed": [{"from": 30000, "to": 30100}]}})
        );
        let t = translate_spec("{rules: [{enforce: {services: {types: [ClusterIP]}}}]}");
        assert_eq!(t.reports[0].path, "spec.rules[0].enforce.services.types");
        assert_eq!(t.reports[0].kind, ReportKind::NotTranslated);
    }

    #[test]
    fn ingress_hostnames_allowed_or_denied_and_other_kinds_reported() {
        let t = translate_spec(
            "{rules: [{enforce: {ingress: {types: [Ingress, HTTPRoute], hostnames: [{exact: [admin.acme.com]}, {exp: '.*\\.internal$', negate: true}]}}}]}",
        );
        assert_eq!(
            extra(&t, "ingress-rule-0").settings,
            json!({"allowedHostnames": {"allowedRegex": [".*\\.internal$"]}, "deniedHostnames": {"denied": ["admin.acme.com"]}, "allowWildcardHostnames": true})
        );
        let paths: Vec<&str> = t.reports.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.rules[0].enforce.ingress.types",
                "spec.rules[0].enforce.ingress.hostnames[1].exp"
            ]
        );
    }

    #[test]
    fn what_admission_cannot_do_is_reported_with_its_reason() {
        let t = translate_spec(
            "{rules: [{audience: [{kind: User, name: bob}], permissions: {bindings: []}, quota: [], enforce: {workloads: {resources: {limits: {cpu: {policy: Remove}}}, targets: [pod/containers]}}}]}",
        );
        let found: Vec<(&str, ReportKind)> = t
            .reports
            .iter()
            .map(|r| (r.path.as_str(), r.kind))
            .collect();
        assert_eq!(
            found,
            [
                ("spec.rules[0].audience", ReportKind::MeaningChanged),
                ("spec.rules[0].permissions", ReportKind::NotTranslated),
                ("spec.rules[0].quota", ReportKind::NotTranslated),
                (
                    "spec.rules[0].enforce.workloads.resources",
                    ReportKind::NotTranslated
                ),
                (
                    "spec.rules[0].enforce.workloads.targets",
                    ReportKind::MeaningChanged
                ),
            ]
        );
        // no binding of a rule: only the tenant's own ones and its labels
        assert!(
            t.planned
                .iter()
                .all(|p| p.suffix.is_none() || p.suffix.as_deref() == Some("labels"))
        );
    }

    #[test]
    fn malformed_rules_are_errors() {
        let t = translate_spec(
            "{rules: [{namespaceSelector: {matchLabels: [x]}}, {enforce: {action: maybe}}, 3]}",
        );
        let paths: Vec<&str> = t.errors.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.rules[0].namespaceSelector.matchLabels",
                "spec.rules[1].enforce.action",
                "spec.rules[2]"
            ]
        );
    }
}
