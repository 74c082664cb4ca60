//! limit-range-policy: LimitRange items (Container, Pod, PersistentVolumeClaim) enforced at
//! admission with the Kubernetes LimitRanger semantics (README rules 1–6): Pods being created
//! get the Container defaults, then every bound is judged; workload templates, `pods/resize`
//! and claims are judged without mutation. The logic is `tenancy_rules::limit_range`.

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_decode::PolicyError;

pub use settings::Settings;

/// The policy.
pub struct LimitRangePolicy;

impl Policy for LimitRangePolicy {
    const NAME: &'static str = "limit-range-policy";
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        _lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        tenancy_rules::limit_range::judge(Self::NAME, request, settings)
    }
}

policy_admission::export_policy!(LimitRangePolicy);

policy_admission::robustness_tests!(
    LimitRangePolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"items": [
            {"limits": [{"type": "Pod", "min": {"cpu": "50m", "memory": "5Mi"}, "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "10Mi"},
                "default": {"cpu": "200m", "memory": "100Mi"}, "min": {"cpu": "50m", "memory": "5Mi"},
                "max": {"cpu": "1", "memory": "1Gi"}, "maxLimitRequestRatio": {"cpu": "2"}}]},
            {"limits": [{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]}
        ]}),
        kinds: &[
            ("", "v1", "Pod"),
            ("", "v1", "ReplicationController"),
            ("apps", "v1", "Deployment"),
            ("apps", "v1", "ReplicaSet"),
            ("apps", "v1", "StatefulSet"),
            ("apps", "v1", "DaemonSet"),
            ("batch", "v1", "Job"),
            ("batch", "v1", "CronJob"),
            ("", "v1", "PersistentVolumeClaim"),
        ],
        subresources: &["resize"],
        mutating: true,
        strings: &[
            "resources",
            "limits",
            "requests",
            "cpu",
            "memory",
            "storage",
            "100m",
            "2Gi",
            "1e9",
            "0",
            "restartPolicy",
            "Always",
            "initContainers",
            "volumeClaimTemplates",
            "type",
            "min",
            "max",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
            "Container",
            "Pod",
            "PersistentVolumeClaim"
        ],
        objects: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "solar-dev"},
                "spec": {"initContainers": [
                    {"name": "log", "image": "busybox", "restartPolicy": "Always",
                        "resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}}},
                    {"name": "init", "image": "busybox"}],
                "containers": [{"name": "web", "image": "nginx",
                    "resources": {"limits": {"cpu": "300m", "memory": "2Gi"}, "requests": {"cpu": "100m", "memory": "1e9"}}}]}}),
            serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": "solar-dev"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}),
            serde_json::json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "db", "namespace": "solar-dev"},
                "spec": {"template": {"spec": {"containers": [{"name": "db", "image": "postgres",
                        "resources": {"limits": {"cpu": "2"}}}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"resources": {"requests": {"storage": "20Gi"}}}}]}})
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

    fn run(kind: Value, object: Value, settings: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": kind, "operation": "CREATE", "userInfo": {"username": "alice"}, "namespace": "solar-dev", "object": object},
            "settings": settings
        });
        evaluate::<LimitRangePolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    fn seed() -> Value {
        json!({"limits": [{"type": "Container", "default": {"cpu": "200m"}, "max": {"cpu": "1"}}]})
    }

    #[test]
    fn pods_are_mutated_with_the_settings_text() {
        let pod =
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a"}]}});
        let r = run(
            json!({"group": "", "version": "v1", "kind": "Pod"}),
            pod,
            seed(),
        );
        assert!(r.accepted);
        let mutated = r.mutated_object.unwrap();
        assert_eq!(
            mutated["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "200m"}, "requests": {"cpu": "200m"}})
        );
    }

    #[test]
    fn a_violation_rejects_without_mutation() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "resources": {"limits": {"cpu": "2"}}}]}});
        let r = run(
            json!({"group": "", "version": "v1", "kind": "Pod"}),
            pod,
            seed(),
        );
        assert_eq!(r.code, Some(403));
        assert!(r.mutated_object.is_none());
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[1].resources.limits.cpu: \"2\" exceeds the maximum 1 per Container"
            )
        );
    }

    #[test]
    fn settings_that_do_not_decode_are_a_500() {
        // validated when the policy is loaded; re-read settings are only decoded
        let pod = json!({"spec": {"containers": []}});
        for settings in [
            json!({"limits": [{"type": "Node", "max": {"cpu": "1"}}]}),
            json!({"limits": [{"type": "Container", "max": {"cpu": "lots"}}]}),
            json!({"limits": "all"}),
            json!({"items": [{"limits": [{"type": "Pod", "max": {"cpu": "1"}}], "name": "x"}]}),
        ] {
            let r = run(
                json!({"group": "", "version": "v1", "kind": "Pod"}),
                pod.clone(),
                settings.clone(),
            );
            assert_eq!(r.code, Some(500), "{settings}");
            assert!(r.message.unwrap().starts_with("invalid settings: "));
        }
    }
}
