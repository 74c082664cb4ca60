//! run-once-deadline-policy: run-once Pods (`restartPolicy` `Never` or `OnFailure`) get a
//! default `spec.activeDeadlineSeconds`, overridable per namespace by an annotation and
//! capped by `maxActiveDeadlineSeconds`; pod templates are judged as those Pods would be,
//! never mutated (README rules 1–4).

pub mod seconds;
pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{HostCapabilities, Lookups, OnLookupError};
use policy_admission::metadata::namespace_annotation;
use policy_admission::pod::PodView;
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::{FieldPath, PolicyError};
use serde_json::{Value, json};

pub use settings::Settings;

/// The policy.
pub struct RunOnceDeadlinePolicy;

/// The pod spec field the policy reads and writes.
const FIELD: &str = "activeDeadlineSeconds";

impl Policy for RunOnceDeadlinePolicy {
    const NAME: &'static str = "run-once-deadline-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // Pods on CREATE only (their spec is immutable afterwards); templates on CREATE and
        // on UPDATEs that change them (`docs/semantics.md#create-and-update`).
        let Some(pod) = pod_target(request, Self::NAME, PodTarget::CreateOnly)? else {
            return Ok(Verdict::accept());
        };
        let mut verdict = Verdict::accept();
        // Rule 1: only run-once Pods are bounded.
        if !is_run_once(&pod)? {
            return Ok(verdict);
        }
        // Rule 2: an explicit deadline is kept, unless above the cap.
        if let Some(explicit) = explicit_deadline(&pod)? {
            if let Some(max) = settings.above_cap(explicit) {
                verdict.violation(
                    &pod.spec.path.field(FIELD),
                    format!("{explicit} is above the maximum of {max} seconds"),
                );
            }
            return Ok(verdict);
        }
        // Rule 3: the namespace override, else the default.
        let deadline = chosen_deadline(request, &pod, settings, lookups, &mut verdict)?;
        // Rule 4: written into Pods; templates are judged, never mutated
        // (`docs/semantics.md#pod-bearing-kinds`).
        if let Some(deadline) = deadline
            && !pod.kind.is_template()
        {
            verdict.edit_set(&["spec"], FIELD, json!(deadline));
        }
        Ok(verdict)
    }
}

/// Rule 1: `restartPolicy` `Never` or `OnFailure` (absent is `Always`). Any other string is
/// not run-once (the API server refuses unknown values itself); a non-string is malformed.
fn is_run_once(pod: &PodView<'_>) -> Result<bool, PolicyError> {
    Ok(matches!(
        pod.spec.get_str("restartPolicy")?,
        Some("Never" | "OnFailure")
    ))
}

/// Rule 2: the deadline the pod spec sets, if any (`null` is unset). A value that is not a
/// whole number of seconds the API server accepts (1 to [`seconds::API_MAX_SECONDS`]) is
/// malformed (400): the API server would refuse the Pod too.
fn explicit_deadline(pod: &PodView<'_>) -> Result<Option<i64>, PolicyError> {
    let Some(at) = pod.spec.get(FIELD)? else {
        return Ok(None);
    };
    let problem = match at.value {
        Value::Number(n) => match n.as_i64() {
            Some(v) if (1..=seconds::API_MAX_SECONDS).contains(&v) => return Ok(Some(v)),
            _ => format!(
                "{n} is not a whole number of seconds from 1 to {}",
                seconds::API_MAX_SECONDS
            ),
        },
        _ => "expected an integer".to_owned(),
    };
    Err(PolicyError::malformed(&at.path, problem))
}

/// Rule 3: the override annotation of the object's Namespace when configured, present and
/// non-empty, else the default. `None` when nothing may be written: the override is invalid
/// or above the cap (`maxActiveDeadlineSeconds`, else the API server's limit) — a violation —
/// or it could not be read and `onLookupError: accept` skips the rule with a warning: an
/// unknown override is never replaced by a shorter default that could kill long jobs.
fn chosen_deadline(
    request: &AdmissionRequest,
    pod: &PodView<'_>,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<Option<i64>, PolicyError> {
    let default = Some(settings.default_active_deadline_seconds);
    let Some(annotation) = &settings.override_annotation else {
        return Ok(default);
    };
    let namespace = request.namespace()?;
    let text = match namespace_annotation(namespace, annotation, lookups) {
        Ok(Some(text)) if !text.is_empty() => text,
        Ok(_) => return Ok(default),
        Err(e) => {
            skip_lookup(e, pod, annotation, settings.on_lookup_error, verdict)?;
            return Ok(None);
        }
    };
    let named = format!("namespace {namespace:?} annotation {annotation}: {text:?}");
    let problem = match seconds::parse_seconds(text) {
        None => format!("{named} is not a positive integer number of seconds"),
        Some(v) => match settings.above_cap(v) {
            None => return Ok(Some(v)),
            Some(max) => format!("{named} is above the maximum of {max} seconds"),
        },
    };
    verdict.violation(&FieldPath::empty(), problem);
    Ok(None)
}

/// A failed Namespace lookup (`docs/semantics.md#lookups`): with `onLookupError: reject` the
/// error (500 naming the Namespace); with `accept` a warning that the override could not be
/// read and nothing was written or judged. Other errors are returned.
fn skip_lookup(
    error: PolicyError,
    pod: &PodView<'_>,
    annotation: &str,
    on_error: OnLookupError,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    match (&error, on_error) {
        (PolicyError::Lookup { .. }, OnLookupError::Accept) => {
            let skipped = match pod.kind.is_template() {
                true => format!("the Pods of {} were not checked against it", pod.spec.path),
                false => format!("{} was not set", pod.spec.path.field(FIELD)),
            };
            verdict.warn_once(format!(
                "{error}; the override annotation {annotation} could not be read, so {skipped} (onLookupError: accept)"
            ));
            Ok(())
        }
        _ => Err(error),
    }
}

policy_admission::export_policy!(RunOnceDeadlinePolicy);

policy_admission::robustness_tests!(
    RunOnceDeadlinePolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"defaultActiveDeadlineSeconds": 1800,
            "overrideAnnotation": "appuio.io/active-deadline-seconds-override",
            "maxActiveDeadlineSeconds": 7200}),
        strings: &[
            "restartPolicy",
            "Never",
            "OnFailure",
            "Always",
            "activeDeadlineSeconds",
            "appuio.io/active-deadline-seconds-override",
            "3600",
            "60s"
        ],
        reads: &["v1/Namespace"],
        mutating: true,
        // Run-once Pods and templates without deadline: the requests that read the Namespace.
        objects: ["Never", "OnFailure"]
            .iter()
            .flat_map(|restart| {
                let spec = serde_json::json!({"restartPolicy": restart,
                    "containers": [{"name": "app", "image": "busybox"}]});
                let meta = serde_json::json!({"name": "once", "namespace": "team-a"});
                [
                    serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                        "spec": spec}),
                    serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                        "spec": {"template": {"spec": spec}}}),
                    serde_json::json!({"apiVersion": "batch/v1", "kind": "CronJob",
                        "metadata": meta, "spec": {"schedule": "@daily",
                        "jobTemplate": {"spec": {"template": {"spec": spec}}}}}),
                ]
            })
            .collect(),
        cluster: vec![serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a",
                "annotations": {"appuio.io/active-deadline-seconds-override": "3600"}}})],
        // About 3% of generated requests read the Namespace: enough cases that some always do.
        cases: 512,
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use policy_admission::testing::FailingCluster;

    const ANNOTATION: &str = "appuio.io/active-deadline-seconds-override";

    fn payload(kind: (&str, &str), object: Value, settings: Value) -> Vec<u8> {
        let payload = json!({
            "request": {"kind": {"group": kind.0, "version": "v1", "kind": kind.1},
                "resource": {"group": kind.0, "version": "v1", "resource": "x"},
                "operation": "CREATE", "namespace": "acme-dev", "userInfo": {"username": "alice"},
                "object": object},
            "settings": settings
        });
        serde_json::to_vec(&payload).unwrap()
    }

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    fn ns(annotation: Option<&str>) -> Vec<Value> {
        let annotations = match annotation {
            Some(a) => json!({ANNOTATION: a}),
            None => json!({}),
        };
        vec![json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "acme-dev", "annotations": annotations}})]
    }

    fn run(spec: Value, settings: Value, objects: Vec<Value>) -> ValidationResponse {
        evaluate::<RunOnceDeadlinePolicy>(
            &payload(("", "Pod"), pod(spec), settings),
            &mut Objects::new(objects),
        )
    }

    fn deadline(r: &ValidationResponse) -> Option<&Value> {
        r.mutated_object
            .as_ref()
            .and_then(|o| o.pointer("/spec/activeDeadlineSeconds"))
    }

    #[test]
    fn default_override_and_explicit_values() {
        let never = json!({"restartPolicy": "Never", "containers": []});
        let r = run(never.clone(), json!({}), ns(None));
        assert_eq!(deadline(&r), Some(&json!(1800)));
        let r = run(never.clone(), json!({}), ns(Some("3600")));
        assert_eq!(deadline(&r), Some(&json!(3600)));
        let r = run(never, json!({}), vec![]);
        assert_eq!(
            deadline(&r),
            Some(&json!(1800)),
            "a missing Namespace: default"
        );
        let r = run(
            json!({"restartPolicy": "OnFailure", "activeDeadlineSeconds": 5}),
            json!({}),
            ns(Some("3600")),
        );
        assert!(r.accepted && r.mutated_object.is_none());
    }

    #[test]
    fn bad_overrides_and_caps_are_violations() {
        let never = json!({"restartPolicy": "Never"});
        let r = run(never.clone(), json!({}), ns(Some("60s")));
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "namespace \"acme-dev\" annotation appuio.io/active-deadline-seconds-override: \"60s\" is not a positive integer number of seconds"
            )
        );
        let capped = json!({"maxActiveDeadlineSeconds": 7200});
        let r = run(never.clone(), capped.clone(), ns(Some("7201")));
        assert!(
            r.message
                .unwrap()
                .ends_with(": \"7201\" is above the maximum of 7200 seconds")
        );
        let r = run(never, json!({}), ns(Some("99999999999999999999")));
        assert!(
            r.message
                .unwrap()
                .ends_with(": \"99999999999999999999\" is above the maximum of 2147483647 seconds")
        );
        let r = run(
            json!({"restartPolicy": "Never", "activeDeadlineSeconds": 86400}),
            capped,
            vec![],
        );
        assert_eq!(
            r.message.as_deref(),
            Some("spec.activeDeadlineSeconds: 86400 is above the maximum of 7200 seconds")
        );
    }

    #[rstest::rstest]
    #[case(json!(0), "spec.activeDeadlineSeconds: 0 is not a whole number of seconds from 1 to 2147483647")]
    #[case(json!(-5), "spec.activeDeadlineSeconds: -5 is not a whole number of seconds from 1 to 2147483647")]
    #[case(json!(1.5), "spec.activeDeadlineSeconds: 1.5 is not a whole number of seconds from 1 to 2147483647")]
    #[case(json!(2147483648_i64), "spec.activeDeadlineSeconds: 2147483648 is not a whole number of seconds from 1 to 2147483647")]
    #[case(json!(u64::MAX), "spec.activeDeadlineSeconds: 18446744073709551615 is not a whole number of seconds from 1 to 2147483647")]
    #[case(json!("60"), "spec.activeDeadlineSeconds: expected an integer")]
    fn malformed_explicit_deadlines(#[case] value: Value, #[case] message: &str) {
        let r = run(
            json!({"restartPolicy": "Never", "activeDeadlineSeconds": value}),
            json!({}),
            vec![],
        );
        assert_eq!((r.code, r.message.as_deref()), (Some(400), Some(message)));
    }

    #[test]
    fn wrong_shaped_namespaces_are_failed_lookups() {
        let ns = |annotations: Value| {
            vec![json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "acme-dev", "annotations": annotations}})]
        };
        let never = json!({"restartPolicy": "Never"});
        let r = run(never.clone(), json!({}), ns(json!({ANNOTATION: 60})));
        assert_eq!(r.code, Some(500));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "cannot read Namespace \"acme-dev\": unexpected answer: metadata.annotations[\"appuio.io/active-deadline-seconds-override\"]: expected a string"
            )
        );
        let r = run(never, json!({}), ns(json!(["x"])));
        assert!(
            r.message
                .unwrap()
                .ends_with("metadata.annotations: expected an object")
        );
    }

    #[test]
    fn failed_lookups_skip_with_a_warning_and_write_nothing() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never"}}}});
        let accept = json!({"onLookupError": "accept"});
        let r = evaluate::<RunOnceDeadlinePolicy>(
            &payload(("batch", "Job"), job, accept.clone()),
            &mut FailingCluster::default(),
        );
        assert!(r.accepted && r.mutated_object.is_none());
        let warning = &r.warnings.unwrap()[0];
        assert!(
            warning.ends_with(
                "the override annotation appuio.io/active-deadline-seconds-override could not be read, so the Pods of spec.template.spec were not checked against it (onLookupError: accept)"
            ),
            "{warning}"
        );
        let r = evaluate::<RunOnceDeadlinePolicy>(
            &payload(("", "Pod"), pod(json!({"restartPolicy": "Never"})), accept),
            &mut FailingCluster::default(),
        );
        assert!(r.accepted && r.mutated_object.is_none());
        assert!(r.warnings.unwrap()[0].contains("so spec.activeDeadlineSeconds was not set"));
    }

    /// kwctl refuses a request without `resource` before the policy sees it, so this is a
    /// unit test rather than a case: the policy itself never needs the field.
    #[test]
    fn a_request_without_resource_is_judged() {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
                "namespace": "acme-dev", "userInfo": {"username": "alice"},
                "object": pod(json!({"restartPolicy": "Never"}))},
            "settings": {"overrideAnnotation": null}
        });
        let r = evaluate::<RunOnceDeadlinePolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut FailingCluster::default(),
        );
        assert_eq!(deadline(&r), Some(&json!(1800)));
    }
}
