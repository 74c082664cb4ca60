//! resource-ratio-policy: the memory requested per requested CPU core of a Pod (or pod
//! template) must lie within the fair-use ratio of its node class; outside it the requester
//! is warned (`mode: warn`, the default) or refused (`mode: enforce`) (README rules 1–6).

pub mod ratio;
pub mod settings;

use kube_values::quantity::Quantity;
use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::metadata::namespace_annotation;
use policy_admission::pod::PodView;
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_admission::workload::{PodTarget, pod_kind, pod_target};
use policy_admission::{Mode, Verdict};
use policy_decode::names::NameMap;
use policy_decode::{FieldPath, PolicyError};
use tenancy_rules::class::skip_on_lookup_error;
use tenancy_rules::node_defaults::namespace_default;
use tenancy_rules::pod_resources::pod_requests;
use tenancy_rules::principal::has_controller_owner;

use ratio::Outcome;
pub use settings::{Bound, Ratio, Settings};

/// The policy.
pub struct ResourceRatioPolicy;

impl Policy for ResourceRatioPolicy {
    const NAME: &'static str = "resource-ratio-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_AND_LIST_ALL;
    type Settings = Settings;

    fn mode(settings: &Settings) -> Mode {
        settings.mode
    }

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // The envelope first, whoever sends the request (docs/semantics.md#request-handling):
        // a kind that is not pod-bearing is refused before any exemption.
        pod_kind(request, Self::NAME)?;
        // README rule 1: exempt requesters, before anything of the object is read;
        // ClusterRoleBindings are read only when the verdict would warn or refuse
        // (docs/semantics.md#exemptions).
        settings.exempt_principals.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |lookups| {
                // README rule 1: in warn mode nobody reads a controller's warnings, and its
                // owner was judged (docs/semantics.md#principals): accepted unread.
                if settings.mode == Mode::Warn
                    && settings.trusted_controllers.matches(&request.user_info)
                    && has_controller_owner(&request.object)
                {
                    return Ok(Verdict::accept());
                }
                // Pods on CREATE (their requests are immutable afterwards: a Pod UPDATE is
                // accepted unseen), templates on CREATE and on UPDATEs that change them.
                let Some(pod) = pod_target(request, Self::NAME, PodTarget::CreateOnly)? else {
                    return Ok(Verdict::accept());
                };
                judge(request, &pod, settings, lookups)
            },
        )
    }
}

/// README rules 2 to 6 for a pod spec of a judged requester. The Namespace is read only
/// when a rule needs it: for the default node selector of a Pod without one, and before
/// reporting a violation (the opt-out annotation); at most once (the lookups cache it).
fn judge(
    request: &AdmissionRequest,
    pod: &PodView<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    // Rule 5 first: a malformed object is a 400 for a judged requester before any lookup,
    // and a Pod asking for nothing needs no lookup.
    let (memory, cpu) = requests(pod)?;
    let mut verdict = Verdict::accept();
    if memory.is_zero() && cpu.is_zero() {
        return Ok(verdict);
    }
    // Rules 2 and 3: the node selector.
    let Some(selector) = node_selector(request, pod, settings, lookups, &mut verdict)? else {
        return Ok(verdict);
    };
    // Rule 4: the first matching entry.
    let Some((index, entry)) = settings
        .ratios
        .iter()
        .enumerate()
        .find(|(_, r)| matches(r, &selector))
    else {
        return Ok(verdict);
    };
    // Rule 6.
    let min = entry.min.as_ref().map(Bound::quantity).cloned();
    let max = entry.max.as_ref().map(Bound::quantity).cloned();
    let outcome = ratio::judge(
        &memory,
        &cpu,
        min.as_ref(),
        max.as_ref(),
        &settings.tolerance,
    );
    if outcome == Outcome::Within || opted_out(request, settings, lookups, &mut verdict)? {
        return Ok(verdict);
    }
    verdict.violation(
        &pod.spec.path,
        problem(outcome, &memory, &cpu, entry, index),
    );
    Ok(verdict)
}

/// README rule 5: the Pod's effective memory and CPU requests (a limit counts as a missing
/// request), zero when nothing is requested.
fn requests(pod: &PodView<'_>) -> Result<(Quantity, Quantity), PolicyError> {
    let mut totals = pod_requests(pod, &["cpu", "memory"], true)?.into_iter();
    let cpu = totals.next().flatten().unwrap_or_else(Quantity::zero);
    let memory = totals.next().flatten().unwrap_or_else(Quantity::zero);
    Ok((memory, cpu))
}

/// README rule 3: the Pod's own `nodeSelector`; when empty, the namespace default annotation
/// or `defaultNodeSelector` (core `node_defaults`). `None` when judging stops here: the
/// Namespace opted out or could not be read (rule 2), or its annotation is invalid (a
/// violation).
fn node_selector(
    request: &AdmissionRequest,
    pod: &PodView<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<Option<NameMap>, PolicyError> {
    let own = pod.spec.get_string_map("nodeSelector")?;
    if !own.is_empty() {
        return Ok(Some(own.into_iter().collect()));
    }
    // The Namespace is read anyway: an opted-out namespace's invalid annotation is not judged.
    if settings.default_node_selector_annotation.is_some()
        && opted_out(request, settings, lookups, verdict)?
    {
        return Ok(None);
    }
    namespace_default(
        request,
        &settings.default_node_selector,
        settings.default_node_selector_annotation.as_deref(),
        settings.on_lookup_error,
        lookups,
        verdict,
    )
}

/// README rule 2: whether the Namespace's `disableAnnotation` is `true` (any case). A
/// Namespace that does not exist has no annotation. A failed read rejects (500), or with
/// `onLookupError: accept` stops judging with a warning (`true` is returned).
fn opted_out(
    request: &AdmissionRequest,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<bool, PolicyError> {
    let Some(annotation) = settings.disable_annotation.as_deref() else {
        return Ok(false);
    };
    let namespace = request.namespace()?;
    match namespace_annotation(namespace, annotation, lookups) {
        Ok(value) => Ok(value.is_some_and(|v| v.eq_ignore_ascii_case("true"))),
        Err(e) => {
            skip_on_lookup_error(e, &FieldPath::empty(), settings.on_lookup_error, verdict)?;
            Ok(true)
        }
    }
}

/// Whether an entry applies to a Pod with node selector `selector` (no `nodeSelector`:
/// every Pod).
fn matches(entry: &Ratio, selector: &NameMap) -> bool {
    entry
        .node_selector
        .as_ref()
        .is_none_or(|s| s.matches(|k| selector.get(k)))
}

/// The violation text of README "Messages": memory per core (Mi, rounded up), the totals,
/// the unwidened bound and the entry.
fn problem(
    outcome: Outcome,
    memory: &Quantity,
    cpu: &Quantity,
    entry: &Ratio,
    index: usize,
) -> String {
    let class = match &entry.name {
        Some(name) => format!("for node class {name:?}"),
        None => format!("of ratios[{index}]"),
    };
    let bound = |b: Option<&Bound>| b.map(|b| b.text().to_owned()).unwrap_or_default();
    let totals = || {
        format!(
            "{} ({} for {})",
            ratio::per_core(memory, cpu),
            memory.canonical(),
            ratio::cores(cpu)
        )
    };
    match outcome {
        Outcome::Below => format!(
            "memory per CPU core is {}, below the fair-use minimum {}/core {class}; CPU requested beyond the fair-use ratio may be billed",
            totals(),
            bound(entry.min.as_ref())
        ),
        Outcome::Above => format!(
            "memory per CPU core is {}, above the fair-use maximum {}/core {class}; memory requested beyond the fair-use ratio may be billed",
            totals(),
            bound(entry.max.as_ref())
        ),
        // `Within` is never reported (no violation)
        Outcome::Unbounded | Outcome::Within => format!(
            "memory per CPU core is unbounded ({} with no CPU request), above the fair-use maximum {}/core {class}; memory requested beyond the fair-use ratio may be billed",
            memory.canonical(),
            bound(entry.max.as_ref())
        ),
    }
}

policy_admission::export_policy!(ResourceRatioPolicy);

policy_admission::robustness_tests!(
    ResourceRatioPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "ratios": [
                {"name": "plus", "nodeSelector": {"matchLabels": {"appuio.io/node-class": "plus"}}, "min": "4Gi"},
                {"name": "flex", "min": "3Gi", "max": "8Gi"}
            ],
            "defaultNodeSelectorAnnotation": "appuio.io/default-node-selector",
            "exemptPrincipals": {"users": ["admin"], "clusterRoles": ["cluster-admin"]}
        }),
        strings: &[
            "resources",
            "requests",
            "limits",
            "cpu",
            "memory",
            "4",
            "1Gi",
            "500m",
            "nodeSelector",
            "appuio.io/node-class",
            "plus",
            "restartPolicy",
            "Always",
            "initContainers",
            "ownerReferences",
            "controller"
        ],
        reads: &[
            "v1/Namespace",
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding"
        ],
        cluster: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
                "annotations": {"appuio.io/default-node-selector": "appuio.io/node-class=plus"}}}),
            serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "admins"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "User", "name": "root"}]}),
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::{Value, json};

    fn settings() -> Value {
        json!({"ratios": [
            {"name": "plus", "nodeSelector": {"matchLabels": {"appuio.io/node-class": "plus"}}, "min": "4Gi"},
            {"name": "flex", "min": "3Gi", "max": "8Gi"}]})
    }

    fn pod(selector: Value, cpu: &str, memory: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "solar-dev"},
            "spec": {"nodeSelector": selector, "containers": [{"name": "a",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}})
    }

    fn namespace(annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "solar-dev", "annotations": annotations}})
    }

    fn run(object: Value, settings: Value, cluster: &mut Objects) -> ValidationResponse {
        let kind = object["kind"].as_str().unwrap_or("Pod").to_owned();
        let group = if kind == "Pod" { "" } else { "apps" };
        let payload = json!({
            "request": {"kind": {"group": group, "version": "v1", "kind": kind}, "operation": "CREATE",
                "namespace": "solar-dev", "userInfo": {"username": "alice"}, "object": object},
            "settings": settings
        });
        evaluate::<ResourceRatioPolicy>(&serde_json::to_vec(&payload).unwrap(), cluster)
    }

    const PLUS_MESSAGE: &str = "spec: memory per CPU core is 256Mi (1Gi for 4 cores), below the fair-use minimum 4Gi/core for node class \"plus\"; CPU requested beyond the fair-use ratio may be billed";

    #[test]
    fn the_readme_example_warns_and_enforce_rejects() {
        let plus = json!({"appuio.io/node-class": "plus"});
        let mut cluster = Objects::new(vec![namespace(json!({}))]);
        let r = run(pod(plus.clone(), "4", "1Gi"), settings(), &mut cluster);
        assert!(r.accepted);
        assert_eq!(r.warnings, Some(vec![PLUS_MESSAGE.to_owned()]));
        let mut enforce = settings();
        enforce["mode"] = json!("enforce");
        let r = run(pod(plus.clone(), "4", "1Gi"), enforce, &mut cluster);
        assert_eq!((r.accepted, r.code), (false, Some(403)));
        assert_eq!(r.message.as_deref(), Some(PLUS_MESSAGE));
        let r = run(pod(plus, "1", "4Gi"), settings(), &mut cluster);
        assert!(r.accepted && r.warnings.is_none(), "{:?}", r.warnings);
    }

    #[test]
    fn above_max_unbounded_and_unnamed_entries() {
        let mut cluster = Objects::new(vec![namespace(json!({}))]);
        let r = run(pod(json!({}), "1", "10Gi"), settings(), &mut cluster);
        assert_eq!(
            r.warnings,
            Some(vec!["spec: memory per CPU core is 10Gi (10Gi for 1 core), above the fair-use maximum 8Gi/core for node class \"flex\"; memory requested beyond the fair-use ratio may be billed".to_owned()])
        );
        let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}]}});
        let r = run(
            object,
            json!({"ratios": [{"min": "1Gi", "max": "2Gi"}]}),
            &mut cluster,
        );
        assert_eq!(
            r.warnings,
            Some(vec!["spec: memory per CPU core is unbounded (1Gi with no CPU request), above the fair-use maximum 2Gi/core of ratios[0]; memory requested beyond the fair-use ratio may be billed".to_owned()])
        );
        let r = run(
            pod(json!({}), "500m", "512Mi"),
            json!({"ratios": [{"min": "2Gi"}]}),
            &mut cluster,
        );
        assert_eq!(
            r.warnings,
            Some(vec!["spec: memory per CPU core is 1Gi (512Mi for 0.5 cores), below the fair-use minimum 2Gi/core of ratios[0]; CPU requested beyond the fair-use ratio may be billed".to_owned()])
        );
    }

    #[test]
    fn the_namespace_is_read_once_and_only_when_needed() {
        let annotated = namespace(json!({"validate-request-ratio.appuio.io/disable": "TRUE",
            "appuio.io/default-node-selector": "appuio.io/node-class=plus"}));
        let mut with_default = settings();
        with_default["defaultNodeSelectorAnnotation"] = json!("appuio.io/default-node-selector");
        // within the ratio, own selector: no read (a failing cluster would refuse)
        let mut failing = Objects::new(vec![]).failing("Namespace");
        let r = run(
            pod(json!({"appuio.io/node-class": "plus"}), "1", "4Gi"),
            with_default.clone(),
            &mut failing,
        );
        assert!(r.accepted && r.warnings.is_none(), "{:?}", r.message);
        // default selector and opt-out from the same Namespace
        let mut cluster = Objects::new(vec![annotated]);
        let r = run(
            pod(json!({}), "4", "1Gi"),
            with_default.clone(),
            &mut cluster,
        );
        assert!(r.accepted && r.warnings.is_none(), "{:?}", r.warnings);
        // a failed read: 500 naming the Namespace
        let r = run(pod(json!({}), "4", "1Gi"), with_default, &mut failing);
        assert_eq!(r.code, Some(500));
        assert!(
            r.message
                .as_deref()
                .unwrap_or("")
                .contains("Namespace \"solar-dev\""),
            "{:?}",
            r.message
        );
    }

    #[test]
    fn a_re_read_bound_that_does_not_parse_is_refused_as_invalid_settings() {
        // `validate_settings` refuses it, and so does `validate` while decoding the settings
        let mut cluster = Objects::new(vec![namespace(json!({}))]);
        let r = run(
            pod(json!({}), "1", "1Gi"),
            json!({"ratios": [{"min": "lots"}]}),
            &mut cluster,
        );
        assert_eq!(r.code, Some(500));
        assert_eq!(
            r.message.as_deref(),
            Some("invalid settings: ratios[0].min: \"lots\" is not a quantity: expected a number")
        );
        let valid = policy_admission::policy::validate_settings::<ResourceRatioPolicy>(
            br#"{"ratios": [{"min": "lots"}]}"#,
        );
        assert!(!valid.valid);
    }

    #[test]
    fn deployment_templates_use_their_path_and_limits() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "a",
                "resources": {"limits": {"cpu": "2", "memory": "2Gi"}}}]}}}});
        let mut cluster = Objects::new(vec![namespace(json!({}))]);
        let r = run(object, settings(), &mut cluster);
        assert_eq!(
            r.warnings,
            Some(vec!["spec.template.spec: memory per CPU core is 1Gi (2Gi for 2 cores), below the fair-use minimum 3Gi/core for node class \"flex\"; CPU requested beyond the fair-use ratio may be billed".to_owned()])
        );
    }
}
