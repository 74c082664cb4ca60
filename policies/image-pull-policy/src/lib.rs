//! image-pull-policy: every container and image volume is pulled with an allowed effective
//! pull policy, or — with `mutate: Always` — gets `Always` written into Pods, as the
//! AlwaysPullImages admission plugin does (README rules 1–5).

pub mod settings;

use kube_values::pull_policy::ALWAYS;
use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::pod::ContainerList;
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_decode::PolicyError;
use serde_json::json;
use tenancy_rules::pulls::{Pull, PullTarget, Puller, pull_target};

pub use settings::Settings;

/// The policy.
pub struct ImagePullPolicy;

impl Policy for ImagePullPolicy {
    const NAME: &'static str = "image-pull-policy";
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        _lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // README rules 1 and 3: what is judged, and on UPDATE only what changed.
        let Some(target) = pull_target(request, Self::NAME)? else {
            return Ok(Verdict::accept());
        };
        let mut verdict = Verdict::accept();
        if settings.mutate {
            // README rule 4: templates are neither mutated nor judged.
            if target.view.kind.is_template() {
                return Ok(verdict);
            }
            mutate(&target, settings, &mut verdict);
        } else {
            for pull in &target.pulls {
                judge(pull, settings, &mut verdict);
            }
        }
        Ok(verdict)
    }
}

/// README rule 4: `Always` written wherever it can still be (a Pod being created, an
/// ephemeral container being added); elsewhere (a Pod UPDATE changing an image, whose pull
/// policy is immutable) the pull is judged.
fn mutate(target: &PullTarget<'_>, settings: &Settings, verdict: &mut Verdict) {
    for pull in &target.pulls {
        let writable =
            !target.pod_update || pull.source == Puller::Container(ContainerList::Ephemeral);
        if !writable {
            judge(pull, settings, verdict);
        } else if pull.policy != Some(ALWAYS) {
            let (steps, key) = pull.policy_steps();
            verdict.edit_set_in(steps, key, json!(ALWAYS));
        }
    }
}

/// README rules 2 and 3: the effective pull policy must be allowed.
fn judge(pull: &Pull<'_>, settings: &Settings, verdict: &mut Verdict) {
    let Some(effective) = pull.effective() else {
        let problem = match pull.image {
            Some(image) => format!(
                "{image:?} is not a valid image reference, so its default pull policy is unknown; set {} to one of {}",
                pull.policy_field(),
                settings.allowed
            ),
            None => "missing, and no pull policy is set".to_owned(),
        };
        verdict.violation(&pull.image_path(), problem);
        return;
    };
    if settings.allowed.allows(effective.policy) {
        return;
    }
    let defaulted = match (effective.defaulted, pull.image) {
        (true, Some(image)) => format!(" (the default for image {image:?})"),
        _ => String::new(),
    };
    verdict.violation(
        &pull.policy_path(),
        format!(
            "{:?} is not allowed{defaulted}; allowed: {}",
            effective.policy, settings.allowed
        ),
    );
}

policy_admission::export_policy!(ImagePullPolicy);

policy_admission::robustness_tests!(
    ImagePullPolicy,
    policy_admission::testing::Robustness {
        // mutate and allowed together: Pods are mutated, changed images on Pod UPDATEs judged
        settings: serde_json::json!({"mutate": "Always", "allowed": ["Always", "Never"]}),
        subresources: &["ephemeralcontainers"],
        mutating: true,
        strings: &[
            "Always",
            "IfNotPresent",
            "Never",
            "always",
            "imagePullPolicy",
            "pullPolicy",
            "image",
            "reference",
            "volumes",
            "nginx",
            "nginx:1.25",
            "nginx:latest",
            "Nginx",
            "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
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

    fn run(
        kind: Value,
        sub: Option<&str>,
        op: &str,
        object: Value,
        old: Value,
        settings: Value,
    ) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": kind, "subResource": sub, "operation": op, "userInfo": {"username": "alice"}, "namespace": "solar-dev",
                "object": object, "oldObject": old},
            "settings": settings
        });
        evaluate::<ImagePullPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    fn pod_kind() -> Value {
        json!({"group": "", "version": "v1", "kind": "Pod"})
    }

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn every_list_and_image_volumes_are_judged_in_document_order() {
        let spec = json!({
            "initContainers": [{"name": "i", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}],
            "containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "nginx"}],
            "volumes": [{"name": "v", "image": {"reference": "quay.io/acme/data:1", "pullPolicy": "Never"}}]});
        let r = run(
            pod_kind(),
            None,
            "CREATE",
            pod(spec),
            Value::Null,
            json!({"allowed": ["Always"]}),
        );
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.initContainers[0].imagePullPolicy: \"IfNotPresent\" is not allowed; allowed: [Always]; \
                 spec.containers[0].imagePullPolicy: \"IfNotPresent\" is not allowed (the default for image \"nginx:1.25\"); allowed: [Always]; \
                 spec.volumes[0].image.pullPolicy: \"Never\" is not allowed; allowed: [Always]"
            )
        );
    }

    #[test]
    fn mutation_writes_always_minimally_and_is_idempotent() {
        let spec = json!({
            "containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "nginx", "imagePullPolicy": "Always"}],
            "volumes": [{"name": "v", "image": {"reference": "data:1"}}]});
        let settings = json!({"mutate": "Always"});
        let r = run(
            pod_kind(),
            None,
            "CREATE",
            pod(spec),
            Value::Null,
            settings.clone(),
        );
        assert!(r.accepted);
        let mutated = r.mutated_object.unwrap();
        assert_eq!(
            mutated["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
        assert_eq!(
            mutated["spec"]["volumes"][0]["image"]["pullPolicy"],
            "Always"
        );
        let again = run(pod_kind(), None, "CREATE", mutated, Value::Null, settings);
        assert!(again.accepted && again.mutated_object.is_none());
    }

    #[test]
    fn mutation_leaves_templates_alone() {
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "nginx:1", "imagePullPolicy": "IfNotPresent"}]}}}});
        let kind = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
        let r = run(
            kind,
            None,
            "CREATE",
            dep,
            Value::Null,
            json!({"mutate": "Always"}),
        );
        assert!(r.accepted && r.mutated_object.is_none());
    }

    #[test]
    fn added_ephemeral_containers_are_mutated_changed_images_judged() {
        let old = pod(
            json!({"containers": [{"name": "a", "image": "nginx:1", "imagePullPolicy": "IfNotPresent"}]}),
        );
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox:1"}]);
        let settings = json!({"mutate": "Always"});
        let r = run(
            pod_kind(),
            Some("ephemeralcontainers"),
            "UPDATE",
            new.clone(),
            old.clone(),
            settings.clone(),
        );
        assert!(r.accepted);
        let m = r.mutated_object.unwrap();
        assert_eq!(
            m["spec"]["ephemeralContainers"][0]["imagePullPolicy"],
            "Always"
        );
        assert!(m["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent");
        let mut changed = old.clone();
        changed["spec"]["containers"][0]["image"] = json!("nginx:2");
        let r = run(pod_kind(), None, "UPDATE", changed, old, settings);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].imagePullPolicy: \"IfNotPresent\" is not allowed; allowed: [Always]"
            )
        );
    }

    #[test]
    fn unparseable_images_without_policy_are_refused() {
        let r = run(
            pod_kind(),
            None,
            "CREATE",
            pod(json!({"containers": [{"name": "a", "image": "Nginx"}]})),
            Value::Null,
            json!({"allowed": ["IfNotPresent"]}),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].image: \"Nginx\" is not a valid image reference, so its default pull policy is unknown; set imagePullPolicy to one of [IfNotPresent]"
            )
        );
    }
}
