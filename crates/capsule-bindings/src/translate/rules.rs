//! Capsule v0.13+ `rules[]`: each rule's `enforce` blocks as bindings of their own whose
//! `namespaceSelector` is the tenant label AND the rule's `namespaceSelector`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::matchers::{ALLOWED_DENIED, WHITELIST_BLACKLIST};
use super::partition::{self, Unsplittable};
use super::{Ctx, Planned};
use crate::catalogue::Policy;
use crate::placement::Mode;

/// Capsule's `enforce.action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    /// What matches is admitted, everything else refused.
    Allow,
    /// What matches is refused (Capsule's default).
    Deny,
    /// What matches is reported: the binding runs in `monitor` mode.
    Audit,
}

impl Action {
    /// As Capsule writes it.
    fn name(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Audit => "audit",
        }
    }
}

/// The families of `rules[].enforce` translated rule by rule (`<block>.<key>`, or the block).
const RULE_FAMILIES: [&str; 8] = [
    "workloads.qosClasses",
    "workloads.schedulers",
    "services.types",
    "services.externalNames",
    "services.loadBalancers",
    "services.nodePorts",
    "ingress.hostnames",
    "metadata",
];

/// Whether the `enforce` block of a rule has `family`.
fn family_present(enforce: &Map<String, Value>, family: &str) -> bool {
    match family.split_once('.') {
        Some((block, key)) => enforce
            .get(block)
            .and_then(Value::as_object)
            .is_some_and(|b| b.contains_key(key)),
        None => enforce.contains_key(family),
    }
}

/// The `targets` of a workloads rule that name images (registry rules match these only).
const IMAGE_TARGETS: [&str; 4] = [
    "pod/initcontainers",
    "pod/containers",
    "pod/ephemeralcontainers",
    "pod/volumes",
];

/// The bindings of one rule under construction.
struct RuleOut {
    index: usize,
    selector: Vec<Value>,
    action: Action,
}

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
        self.registry_rule_bindings();
        self.rules_read_together();
    }

    /// Reports the rules of a family (other than registries) that Capsule reads together with
    /// an earlier one where both select a namespace: an allow rule after a deny or an allow
    /// rule ([`partition`] finds the namespaces both select). Each is a binding of its own
    /// here, so what the later allow rule admits is still refused.
    fn rules_read_together(&mut self) {
        let rules = std::mem::take(&mut self.family_rules);
        for family in RULE_FAMILIES {
            let of: Vec<&(&str, usize, Vec<Value>, Action)> =
                rules.iter().filter(|r| r.0 == family).collect();
            let selectors: Vec<Vec<Value>> = of.iter().map(|r| r.2.clone()).collect();
            let Ok(parts) = partition::split(&selectors) else {
                continue;
            };
            let mut reported = BTreeSet::new();
            for part in parts {
                let mut decided_before = false;
                for &i in &part.rules {
                    let Some(&&(_, index, _, action)) = of.get(i) else {
                        continue;
                    };
                    if action == Action::Allow && decided_before {
                        reported.insert(index);
                    }
                    decided_before |= action != Action::Audit;
                }
            }
            for index in reported {
                self.changed(
                    &format!("spec.rules[{index}].enforce.{family}"),
                    "Capsule reads the rules of this family that select a namespace together, so this allow rule admits a value an earlier deny rule matches, and with an earlier allow rule a value either matches; here each rule is a binding of its own, judged on its own, and such a value is still refused (registry rules alone are read together)",
                );
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
        for family in RULE_FAMILIES {
            if family_present(enforce, family) {
                self.family_rules
                    .push((family, index, selector.clone(), action));
            }
        }
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
        let targets = match block.get("targets") {
            Some(t) => match self.strings(&format!("{path}.targets"), t) {
                Some(t) => t,
                None => return,
            },
            None => Vec::new(),
        };
        let mut pod = Map::new();
        for (key, value) in block {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "registries" => {
                    let at = format!("{path}.targets");
                    self.rule_registries(&p, value, (&at, &targets), out);
                }
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
                "targets" => {}
                _ => self.not_translated(&p, "no policy of this bundle enforces it"),
            }
        }
        if !pod.is_empty() {
            let name = format!("{}-rule-{}", self.tenant, out.index);
            let settings = json!({"restrictions": [{"name": name, "spec": {"spec": pod}}]});
            if let Value::Object(settings) = settings {
                self.rule_binding(out, "pod-restriction", settings);
            }
        }
    }

    /// `registries` as one rule of container-registry-policy's `rules` (Capsule v0.14's
    /// engine: the whole reference, first matching entry, last matching rule), kept with the
    /// rule's selector until every rule is read ([`Ctx::registry_rule_bindings`]).
    fn rule_registries(
        &mut self,
        path: &str,
        value: &Value,
        (targets_path, targets): (&str, &[Value]),
        out: &RuleOut,
    ) {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of registries", value);
            return;
        };
        let images: Vec<Value> = targets
            .iter()
            .filter(|t| t.as_str().is_some_and(|t| IMAGE_TARGETS.contains(&t)))
            .cloned()
            .collect();
        if !targets.is_empty() && images.is_empty() {
            self.not_translated(
                targets_path,
                "none of these targets names an image (pod/initcontainers, pod/containers, pod/ephemeralcontainers, pod/volumes): Capsule's registry rule matches no reference, and is left out",
            );
            return;
        }
        let mut registries = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(entry) = self.object(&p, entry) else {
                continue;
            };
            let mut written = Map::new();
            for (key, value) in entry {
                let kp = format!("{p}.{key}");
                match key.as_str() {
                    "exact" => {
                        if let Some(names) = self.strings(&kp, value) {
                            written.insert("exact".into(), Value::Array(names));
                        }
                    }
                    "exp" => {
                        if let Some(exp) = self.string(&kp, value) {
                            written.insert("exp".into(), json!(exp));
                        }
                    }
                    "negate" => {
                        if let Some(negate) = self.boolean(&kp, value) {
                            written.insert("negate".into(), json!(negate));
                        }
                    }
                    "policy" => {
                        if let Some(policies) = self.strings(&kp, value)
                            && !policies.is_empty()
                        {
                            written.insert("pullPolicies".into(), Value::Array(policies));
                        }
                    }
                    _ => self.not_translated(&kp, "not a field of a registry rule"),
                }
            }
            registries.push(Value::Object(written));
        }
        let mut rule = Map::new();
        rule.insert("action".into(), json!(out.action.name()));
        if !images.is_empty() {
            rule.insert("targets".into(), Value::Array(images));
        }
        rule.insert("registries".into(), Value::Array(registries));
        self.registry_rules
            .push((out.index, out.selector.clone(), Value::Object(rule)));
    }

    /// container-registry-policy bindings for the tenant's registry rules: one per share of
    /// its namespaces that a different set of rules applies to ([`partition`]), each holding
    /// those rules in Tenant order.
    pub(super) fn registry_rule_bindings(&mut self) {
        let rules = std::mem::take(&mut self.registry_rules);
        if rules.is_empty() {
            return;
        }
        let selectors: Vec<Vec<Value>> = rules.iter().map(|(_, s, _)| s.clone()).collect();
        let parts = match partition::split(&selectors) {
            Ok(parts) => parts,
            Err(why) => {
                let (path, message) = match why {
                    Unsplittable::Requirement(i) => (
                        format!("spec.rules[{}].namespaceSelector", rules.get(i).map_or(0, |r| r.0)),
                        "a requirement without operator In, NotIn, Exists or DoesNotExist (and values for In and NotIn) cannot be negated: the namespaces it does not select cannot be bound apart, so the registry rules are not translated".to_owned(),
                    ),
                    Unsplittable::TooMany => (
                        "spec.rules".to_owned(),
                        format!("the rules' namespace selectors split the tenant's namespaces into more than {} shares, one binding each: the registry rules are not translated", partition::MAX_PARTS),
                    ),
                };
                self.not_translated(&path, message);
                return;
            }
        };
        let Some(policy) = Policy::find("container-registry") else {
            return;
        };
        let many = parts.len() > 1;
        for (n, part) in parts.into_iter().enumerate() {
            let ordered: Vec<Value> = part
                .rules
                .iter()
                .filter_map(|&i| rules.get(i).map(|r| r.2.clone()))
                .collect();
            self.extra.push(Planned {
                suffix: Some(if many {
                    format!("rules-{n}")
                } else {
                    "rules".to_owned()
                }),
                selector: part.selector,
                ..Planned::new(policy, json!({"rules": ordered}))
            });
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
    fn registry_rules_keep_capsules_order_per_share_of_the_namespaces() {
        let t = translate_spec(
            "{rules: [{enforce: {action: allow, workloads: {registries: [{exact: [docker.io/library/nginx:1.25], policy: [Always]}, {exp: '^quay\\.io/', negate: true}]}}}, {namespaceSelector: {matchLabels: {env: prod}}, enforce: {workloads: {targets: [pod/containers, pod], registries: [{exp: 'docker\\.io'}]}}}]}",
        );
        let allow = json!({"action": "allow", "registries": [{"exact": ["docker.io/library/nginx:1.25"], "pullPolicies": ["Always"]}, {"exp": "^quay\\.io/", "negate": true}]});
        let deny = json!({"action": "deny", "targets": ["pod/containers"], "registries": [{"exp": "docker\\.io"}]});
        // env=prod: both rules, in the Tenant's order (the last matching one decides)
        let prod = extra(&t, "container-registry-rules-0");
        assert_eq!(prod.settings, json!({"rules": [allow.clone(), deny]}));
        assert_eq!(
            prod.selector,
            vec![json!({"key": "env", "operator": "In", "values": ["prod"]})]
        );
        // every other namespace: the first rule alone
        let others = extra(&t, "container-registry-rules-1");
        assert_eq!(others.settings, json!({"rules": [allow]}));
        assert_eq!(
            others.selector,
            vec![json!({"key": "env", "operator": "NotIn", "values": ["prod"]})]
        );
        assert_eq!(prod.mode, None);
        assert!(t.reports.is_empty(), "{:?}", t.reports);
    }

    #[test]
    fn registry_rules_without_an_image_target_are_left_out_and_reported() {
        let t = translate_spec(
            "{rules: [{enforce: {workloads: {targets: [pod], registries: [{exact: [docker.io]}]}}}]}",
        );
        assert!(
            t.planned
                .iter()
                .all(|p| p.policy.short != "container-registry")
        );
        assert_eq!(t.reports[0].path, "spec.rules[0].enforce.workloads.targets");
        assert_eq!(t.reports[0].kind, ReportKind::NotTranslated);
    }

    #[test]
    fn an_allow_rule_after_a_deny_or_an_allow_on_the_same_namespaces_is_reported() {
        let t = translate_spec(
            "{rules: [{enforce: {workloads: {qosClasses: [BestEffort]}}}, {namespaceSelector: {matchLabels: {env: prod}}, enforce: {action: allow, workloads: {qosClasses: [BestEffort]}}}, {namespaceSelector: {matchLabels: {env: dev}}, enforce: {action: audit, workloads: {schedulers: [{exact: [a]}]}}}, {namespaceSelector: {matchLabels: {env: dev}}, enforce: {action: allow, workloads: {schedulers: [{exact: [a]}]}}}, {enforce: {action: allow, services: {types: [NodePort]}}}, {enforce: {services: {types: [NodePort]}}}]}",
        );
        let changed: Vec<&str> = t
            .reports
            .iter()
            .filter(|r| r.kind == ReportKind::MeaningChanged)
            .map(|r| r.path.as_str())
            .collect();
        // qos: the prod allow follows the deny everywhere; schedulers: an audit decides
        // nothing; services: the deny follows the allow (the two agree there)
        assert_eq!(changed, ["spec.rules[1].enforce.workloads.qosClasses"]);
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
