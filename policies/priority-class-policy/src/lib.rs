//! priority-class-policy: Pods and pod templates may name only allowed PriorityClasses; a
//! Pod without class (or with the injected cluster global default) gets the tenant default
//! with its priority and preemption policy (README rules 1–4).

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{Found, HostCapabilities, Lookups};
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::{FieldPath, PolicyError};
use serde_json::json;
use tenancy_rules::class::{
    ClassFetch, ClassKind, ClassOutcome, DefaultClass, named_in, record, skip_on_lookup_error,
};

pub use settings::Settings;

/// The policy.
pub struct PriorityClassPolicy;

fn priority_class() -> ClassKind {
    ClassKind::new("scheduling.k8s.io/v1", "PriorityClass")
}

/// Whether a PriorityClass is the cluster's global default (`globalDefault: true`).
fn is_global_default(class: &Found) -> Result<bool, PolicyError> {
    Ok(class.read(|at| at.get_bool("globalDefault"))? == Some(true))
}

/// The priority a PriorityClass gives (`value`; absent: 0).
fn class_value(class: &Found) -> Result<i64, PolicyError> {
    Ok(class.read(|at| at.get_i64("value"))?.unwrap_or(0))
}

impl Policy for PriorityClassPolicy {
    const NAME: &'static str = "priority-class-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
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
        let (path, name) = named_in(&pod.spec, "priorityClassName")?;
        let mut verdict = Verdict::accept();
        // Templates: the Priority plugin does not touch them; a named class is judged.
        if pod.kind.is_template() {
            if let Some(name) = name {
                let outcome = settings.classes.judge(&kind, name, lookups);
                record(outcome, &path, settings.on_lookup_error, &mut verdict)?;
            }
            return Ok(verdict);
        }
        let priority = pod.spec.get_i64("priority")?;
        let class = ClassField {
            kind: &kind,
            path: &path,
            settings,
        };
        match name {
            None => class.write_default(lookups, &mut verdict)?,
            Some(name) => {
                let mut fetch = ClassFetch::new(&kind, name);
                if class.injected_global_default(
                    name,
                    &mut fetch,
                    priority,
                    lookups,
                    &mut verdict,
                )? {
                    class.write_default(lookups, &mut verdict)?;
                } else {
                    class.judge_named(name, fetch, lookups, &mut verdict)?;
                }
            }
        }
        Ok(verdict)
    }
}

/// The Pod's `spec.priorityClassName` as the rules see it: the class kind, the field's path
/// and the settings.
struct ClassField<'a> {
    kind: &'a ClassKind,
    path: &'a FieldPath,
    settings: &'a Settings,
}

impl ClassField<'_> {
    /// README rule 1: a named class counts as "no class chosen" when it is the cluster's
    /// global default injected by the Priority plugin (with `replaceGlobalDefault`, a
    /// `default` other than the class, and no other priority set). A failed read is a failed
    /// lookup (`docs/semantics.md#lookups`) and leaves the class as chosen.
    fn injected_global_default(
        &self,
        name: &str,
        fetch: &mut ClassFetch<'_>,
        priority: Option<i64>,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<bool, PolicyError> {
        let default = self.settings.classes.default();
        if !self.settings.replace_global_default || default.is_none_or(|d| d == name) {
            return Ok(false);
        }
        let injected = fetch.read(lookups, |class| {
            if !is_global_default(class)? {
                return Ok(false);
            }
            Ok(match priority {
                Some(p) => p == class_value(class)?,
                None => true,
            })
        });
        match injected {
            Ok(injected) => Ok(injected.unwrap_or(false)),
            Err(e) => {
                skip_on_lookup_error(e, self.path, self.settings.on_lookup_error, verdict)?;
                Ok(false)
            }
        }
    }

    /// README rules 2 and 3: no class chosen — the tenant default is written with its
    /// priority and preemption policy; without a default the Pod is accepted as it is.
    fn write_default(
        &self,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let Some(default) = self.settings.classes.default() else {
            return Ok(());
        };
        let writer = DefaultClass {
            kind: self.kind,
            name: default,
            field: "priorityClassName",
        };
        writer.write(
            self.path,
            self.settings.on_lookup_error,
            lookups,
            verdict,
            |class| {
                let preemption = class.read(|at| at.get_str("preemptionPolicy"))?;
                let preemption = preemption.unwrap_or("PreemptLowerPriority").to_owned();
                Ok((class_value(class)?, preemption))
            },
            |(value, preemption), verdict| {
                verdict.edit_set(&["spec"], "priority", json!(value));
                verdict.edit_set(&["spec"], "preemptionPolicy", json!(preemption));
                Ok(())
            },
        )
    }

    /// README rule 4: the named class must be allowed; a class that is not allowed and is
    /// the cluster's global default is named as such (every class-less Pod of the tenant
    /// arrives with it).
    fn judge_named(
        &self,
        name: &str,
        mut fetch: ClassFetch<'_>,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let outcome = self
            .settings
            .classes
            .judge_with(self.kind, name, || fetch.get(lookups));
        if let Ok(ClassOutcome::NotAllowed { .. }) = &outcome
            && self.is_global_default(name, &fetch, lookups, verdict)?
        {
            verdict.violation(
                self.path,
                format!(
                    "{name:?} is the cluster's global default PriorityClass, injected into Pods without a class, and is not allowed; allow it or configure a default"
                ),
            );
            return Ok(());
        }
        record(outcome, self.path, self.settings.on_lookup_error, verdict)
    }

    /// Whether class `name` is the cluster's global default. Without a selector the object
    /// was not read yet; a failed read is a failed lookup like any other
    /// (`docs/semantics.md#lookups`): 500, or with `onLookupError: accept` the hint is
    /// skipped with a warning.
    fn is_global_default(
        &self,
        name: &str,
        fetch: &ClassFetch<'_>,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<bool, PolicyError> {
        let global_default = match fetch.fetched() {
            Some(Ok(Some(class))) => is_global_default(class),
            Some(_) => Ok(false),
            None => match self.kind.fetch(name, lookups) {
                Ok(Some(class)) => is_global_default(&class),
                Ok(None) => Ok(false),
                Err(e) => Err(e),
            },
        };
        match global_default {
            Err(e) => {
                skip_on_lookup_error(e, self.path, self.settings.on_lookup_error, verdict)?;
                Ok(false)
            }
            ok => ok,
        }
    }
}

policy_admission::export_policy!(PriorityClassPolicy);

policy_admission::robustness_tests!(
    PriorityClassPolicy,
    policy_admission::testing::Robustness {
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
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::Value;

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
                "operation": "CREATE", "userInfo": {"username": "alice"},
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
                "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE", "userInfo": {"username": "alice"},
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
