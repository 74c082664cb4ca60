//! priority-class-policy: Pods and pod templates may name only allowed PriorityClasses; a
//! Pod without class (or with the injected cluster global default) gets the tenant default
//! with its priority and preemption policy (README rules 1–4).

pub mod settings;

use policy_core::class::{ClassFetch, ClassKind, ClassOutcome, record, skip_on_lookup_error};
use policy_core::cluster::{HostCapabilities, Lookups};
use policy_core::policy::Policy;
use policy_core::request::AdmissionRequest;
use policy_core::workload::{PodTarget, pod_target};
use policy_core::{PolicyError, Verdict};
use serde_json::{Value, json};

pub use settings::Settings;

/// The policy.
pub struct PriorityClassPolicy;

fn priority_class() -> ClassKind {
    ClassKind::new("scheduling.k8s.io/v1", "PriorityClass")
}

fn is_global_default(class: &Value) -> bool {
    class.get("globalDefault").and_then(Value::as_bool) == Some(true)
}

fn class_value(class: &Value) -> i64 {
    class.get("value").and_then(Value::as_i64).unwrap_or(0)
}

impl Policy for PriorityClassPolicy {
    const NAME: &'static str = "priority-class-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type RawSettings = settings::RawSettings;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(pod) = pod_target(request, Self::NAME, PodTarget::CreateOnly)? else {
            return Ok(Verdict::accept());
        };
        let kind = priority_class();
        let path = pod.spec.path.field("priorityClassName");
        let name = pod
            .spec
            .get_str("priorityClassName")?
            .filter(|n| !n.is_empty());
        let on_error = settings.on_lookup_error;
        let mut verdict = Verdict::accept();

        // Templates: the Priority plugin does not touch them; a named class is judged.
        if pod.kind.is_template() {
            if let Some(name) = name {
                record(
                    settings.classes.judge(&kind, name, lookups),
                    &path,
                    on_error,
                    &mut verdict,
                )?;
            }
            return Ok(verdict);
        }

        let default = settings.classes.default();
        let priority = pod.spec.get_i64("priority")?;
        let mut named = name.map(|n| ClassFetch::new(&kind, n));

        // Rule 1: no class chosen, or the cluster's global default injected by the plugin.
        let no_class = match (name, named.as_mut()) {
            (Some(n), Some(fetch))
                if settings.replace_global_default && default.is_some_and(|d| d != n) =>
            {
                match fetch.get(lookups) {
                    Ok(Some(class)) => {
                        is_global_default(&class)
                            && priority.is_none_or(|p| p == class_value(&class))
                    }
                    Ok(None) => false,
                    Err(e) => {
                        skip_on_lookup_error(e, &path, on_error, &mut verdict)?;
                        false
                    }
                }
            }
            (Some(_), _) => false,
            (None, _) => true,
        };

        if no_class {
            // Rule 3: no class and no default.
            let Some(default) = default else {
                return Ok(verdict);
            };
            // Rule 2: write the default's three fields.
            match kind.fetch(default, lookups) {
                Ok(Some(class)) => {
                    let preemption = class
                        .get("preemptionPolicy")
                        .and_then(Value::as_str)
                        .unwrap_or("PreemptLowerPriority");
                    verdict.edit_set(&["spec"], "priorityClassName", json!(default));
                    verdict.edit_set(&["spec"], "priority", json!(class_value(&class)));
                    verdict.edit_set(&["spec"], "preemptionPolicy", json!(preemption));
                }
                Ok(None) => verdict.violation(
                    &path,
                    format!("default PriorityClass {default:?} does not exist"),
                ),
                Err(e) => skip_on_lookup_error(e, &path, on_error, &mut verdict)?,
            }
            return Ok(verdict);
        }

        // Rule 4: judge the named class.
        let (Some(name), Some(mut fetch)) = (name, named) else {
            return Ok(verdict);
        };
        let outcome = settings
            .classes
            .judge_with(&kind, name, || fetch.get(lookups));
        let outcome = match outcome {
            Ok(ClassOutcome::Violation(problem)) if !problem.ends_with("does not exist") => {
                // Say so when the class is the cluster's global default: every class-less
                // Pod of the tenant arrives with it. Without a selector the object was not
                // read yet; a failed read is a failed lookup like any other (`docs/semantics.md#lookups`):
                // 500, or with `onLookupError: accept` the hint is skipped with a warning.
                let global = match fetch.fetched() {
                    Some(Ok(Some(class))) => is_global_default(class),
                    Some(_) => false,
                    None => match kind.fetch(name, lookups) {
                        Ok(Some(class)) => is_global_default(&class),
                        Ok(None) => false,
                        Err(e) => {
                            skip_on_lookup_error(e, &path, on_error, &mut verdict)?;
                            false
                        }
                    },
                };
                if global {
                    Ok(ClassOutcome::Violation(format!(
                        "{name:?} is the cluster's global default PriorityClass, injected into Pods without a class, and is not allowed; allow it or configure a default"
                    )))
                } else {
                    Ok(ClassOutcome::Violation(problem))
                }
            }
            other => other,
        };
        record(outcome, &path, on_error, &mut verdict)?;
        Ok(verdict)
    }
}

policy_core::export_policy!(PriorityClassPolicy);

policy_core::robustness_tests!(
    PriorityClassPolicy,
    policy_core::testing::Robustness {
        settings: serde_json::json!({"allowed": ["silver"], "allowedRegex": "plat.*", "selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"}),
        strings: &[
            "gold",
            "platinum",
            "gd",
            "tenant-default",
            "env",
            "production",
            "globalDefault",
            "preemptionPolicy",
            "priorityClassName",
            "priority"
        ],
        reads: &["scheduling.k8s.io/v1/PriorityClass"],
        mutating: true,
        cluster: vec![
            serde_json::json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gold", "labels": {"env": "production"}}, "value": 1000}),
            serde_json::json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "tenant-default", "labels": {"env": "production"}}, "value": 1313, "preemptionPolicy": "Never"}),
            serde_json::json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gd"}, "value": 0, "globalDefault": true}),
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_core::cluster::Objects;
    use policy_core::policy::{ValidationResponse, evaluate};

    fn classes() -> Objects {
        let pc = |name: &str, labels: Value, extra: Value| {
            let mut o = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name, "labels": labels}});
            if let (Some(o), Some(extra)) = (o.as_object_mut(), extra.as_object()) {
                o.extend(extra.clone());
            }
            o
        };
        Objects::new(vec![
            pc("gold", json!({"env": "production"}), json!({"value": 1000})),
            pc("platinum", json!({}), json!({"value": 2000})),
            pc(
                "tenant-default",
                json!({"env": "production"}),
                json!({"value": 1313, "preemptionPolicy": "Never"}),
            ),
            pc("gd", json!({}), json!({"value": 0, "globalDefault": true})),
        ])
    }

    fn run(spec: Value, settings: Value) -> ValidationResponse {
        let payload = json!({
            "request": {
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE",
                "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
            },
            "settings": settings
        });
        evaluate::<PriorityClassPolicy>(&serde_json::to_vec(&payload).unwrap(), &mut classes())
    }

    #[test]
    fn writes_the_three_fields_of_the_default() {
        let s = json!({"selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"});
        let r = run(json!({"containers": [], "priority": 0}), s.clone());
        assert!(r.accepted);
        let spec = &r.mutated_object.unwrap()["spec"];
        assert_eq!(spec["priorityClassName"], "tenant-default");
        assert_eq!(spec["priority"], 1313);
        assert_eq!(spec["preemptionPolicy"], "Never");
        let r = run(
            json!({"containers": [], "priorityClassName": "gd", "priority": 0}),
            s,
        );
        assert_eq!(
            r.mutated_object.unwrap()["spec"]["priorityClassName"],
            "tenant-default"
        );
    }

    #[test]
    fn failed_read_for_the_global_default_hint_is_a_failed_lookup() {
        let payload = |settings: Value| {
            serde_json::to_vec(&json!({
                "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
                    "object": {"metadata": {"name": "p"}, "spec": {"containers": [], "priorityClassName": "gd"}}},
                "settings": settings
            }))
            .unwrap()
        };
        let mut failing = classes().failing("PriorityClass");
        let r =
            evaluate::<PriorityClassPolicy>(&payload(json!({"allowed": ["gold"]})), &mut failing);
        assert_eq!(r.code, Some(500), "{:?}", r.message);
        let r = evaluate::<PriorityClassPolicy>(
            &payload(json!({"allowed": ["gold"], "onLookupError": "accept"})),
            &mut failing,
        );
        assert_eq!(r.code, Some(403));
        assert_eq!(r.warnings.map(|w| w.len()), Some(1));
    }

    #[test]
    fn global_default_named_in_message() {
        let r = run(
            json!({"containers": [], "priorityClassName": "gd", "priority": 0}),
            json!({"allowed": ["gold"]}),
        );
        assert!(!r.accepted);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.priorityClassName: \"gd\" is the cluster's global default PriorityClass, injected into Pods without a class, and is not allowed; allow it or configure a default"
            )
        );
    }

    #[test]
    fn selector_rejects_unlabelled() {
        let r = run(
            json!({"containers": [], "priorityClassName": "platinum"}),
            json!({"selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"}),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.priorityClassName: PriorityClass \"platinum\" is not allowed; allowed: selector env=production, default \"tenant-default\""
            )
        );
    }
}
