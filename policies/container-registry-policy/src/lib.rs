//! container-registry-policy: every image a pod spec pulls comes from an allowed, not
//! denied registry or repository prefix, is written fully qualified when the settings say
//! so, and is pulled with the pull policies its registry allows (README rules 1–6).

pub mod settings;

use kube_values::image::{ImageRef, fully_qualified};
use kube_values::pull_policy::default_for;
use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_decode::PolicyError;
use tenancy_rules::pulls::{Pull, pull_target};

pub use settings::{PullPolicyRule, PullPolicyRules, RuleScope, Settings};

/// The policy.
pub struct ContainerRegistryPolicy;

impl Policy for ContainerRegistryPolicy {
    const NAME: &'static str = "container-registry-policy";
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        _lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // README rule 5: on UPDATE only the images and pull policies that changed.
        let Some(target) = pull_target(request, Self::NAME)? else {
            return Ok(Verdict::accept());
        };
        let mut verdict = Verdict::accept();
        for pull in &target.pulls {
            judge(pull, settings, &mut verdict);
        }
        Ok(verdict)
    }
}

/// README rules 1–4 and 6 for one pulled image.
fn judge(pull: &Pull<'_>, settings: &Settings, verdict: &mut Verdict) {
    // A container without image is refused by the API server; nothing to judge here.
    let Some(raw) = pull.image else {
        return;
    };
    // Rule 1.
    let image = match ImageRef::parse(raw) {
        Ok(image) => image,
        Err(e) => {
            verdict.violation(&pull.image_path(), e.to_string());
            return;
        }
    };
    // Rule 2.
    if settings.require_fully_qualified && !fully_qualified(raw) {
        verdict.violation(
            &pull.image_path(),
            format!(
                "{raw:?} does not name its registry; write it fully qualified, e.g. {:?}",
                image.to_string()
            ),
        );
    }
    // Rules 3 and 4: a denied image is not also reported as not allowed.
    if let Some(m) = settings.denied.first_match(&image) {
        verdict.violation(
            &pull.image_path(),
            format!(
                "{raw:?} ({}) is denied by {}",
                image.name(),
                settings.denied.describe_match(&m)
            ),
        );
    } else if let Some(allowed) = &settings.allowed
        && allowed.first_match(&image).is_none()
    {
        verdict.violation(
            &pull.image_path(),
            format!(
                "registry {:?} of {raw:?} is not allowed; allowed: {allowed}",
                image.registry
            ),
        );
    }
    // Rule 6, on the effective pull policy: the written one, else the default for the
    // image parsed above (not parsed again).
    let (policy, defaulted) = match pull.policy {
        Some(policy) => (policy, false),
        None => (default_for(&image), true),
    };
    if let Some(rule) = settings.pull_policies.rule_for(&image)
        && !rule.allowed.allows(policy)
    {
        let defaulted = if defaulted {
            format!(" (the default for image {raw:?})")
        } else {
            String::new()
        };
        verdict.violation(
            &pull.policy_path(),
            format!(
                "{:?} is not allowed for {}{defaulted}; allowed: {}",
                policy,
                rule.describe(),
                rule.allowed
            ),
        );
    }
}

policy_admission::export_policy!(ContainerRegistryPolicy);

policy_admission::robustness_tests!(
    ContainerRegistryPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "allowed": ["docker.io", "quay.io", "ghcr.io/acme", "localhost:5000"],
            "allowedRegex": ["internal\\.registry\\.[a-z]+\\.tld"],
            "denied": ["docker.io/library/ubuntu"],
            "requireFullyQualified": true,
            "pullPolicies": [{"registry": "ghcr.io/acme", "allowed": ["Always"]}]
        }),
        subresources: &["ephemeralcontainers"],
        strings: &[
            "nginx:latest",
            "docker.io/library/nginx:1",
            "Docker.IO/library/nginx:1",
            "library/nginx",
            "ubuntu:22.04",
            "ghcr.io/acme/app:1",
            "ghcr.io/acme-evil/app:1",
            "localhost:5000/app",
            "localhost:5001/app",
            "internal.registry.eu.tld/app",
            "evil.com/docker.io/library/nginx",
            "docker.io/Library/nginx",
            "image",
            "reference",
            "imagePullPolicy",
            "IfNotPresent",
            "Always"
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

    fn run(op: &str, object: Value, old: Value, settings: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": op,
                "namespace": "solar-dev", "object": object, "oldObject": old},
            "settings": settings
        });
        evaluate::<ContainerRegistryPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    fn pod(images: &[&str]) -> Value {
        let containers: Vec<Value> = images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": containers}})
    }

    fn readme() -> Value {
        json!({"allowed": ["docker.io", "quay.io", "ghcr.io/acme"],
            "allowedRegex": ["internal\\.registry\\.[a-z]+\\.tld"],
            "denied": ["docker.io/library/ubuntu"]})
    }

    #[test]
    fn every_violation_is_reported() {
        let r = run(
            "CREATE",
            pod(&[
                "gcr.io/invalid/pause:3.9",
                "ubuntu:22.04",
                "docker.io/Library/nginx",
                "nginx:1.25",
            ]),
            Value::Null,
            readme(),
        );
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].image: registry \"gcr.io\" of \"gcr.io/invalid/pause:3.9\" is not allowed; allowed: [docker.io, quay.io, ghcr.io/acme], regex [internal\\.registry\\.[a-z]+\\.tld]; \
                 spec.containers[1].image: \"ubuntu:22.04\" (docker.io/library/ubuntu) is denied by docker.io/library/ubuntu; \
                 spec.containers[2].image: invalid image reference \"docker.io/Library/nginx\": repository name must be lowercase"
            )
        );
    }

    #[test]
    fn fully_qualified_images_when_required() {
        let r = run(
            "CREATE",
            pod(&["nginx:latest", "docker.io/library/nginx:latest"]),
            Value::Null,
            json!({"requireFullyQualified": true}),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].image: \"nginx:latest\" does not name its registry; write it fully qualified, e.g. \"docker.io/library/nginx:latest\""
            )
        );
    }

    #[test]
    fn pull_policies_per_registry() {
        let settings =
            json!({"pullPolicies": [{"registry": "registry.acme.io", "allowed": ["Always"]}]});
        let mut p = pod(&["registry.acme.io/app:1", "nginx:1.25"]);
        let r = run("CREATE", p.clone(), Value::Null, settings.clone());
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].imagePullPolicy: \"IfNotPresent\" is not allowed for registry \"registry.acme.io\" (the default for image \"registry.acme.io/app:1\"); allowed: [Always]"
            )
        );
        p["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
        assert!(run("CREATE", p, Value::Null, settings).accepted);
    }

    #[test]
    fn updates_judge_changed_images_only() {
        let old = pod(&["gcr.io/a/b:1", "nginx:1"]);
        let new = pod(&["gcr.io/a/b:1", "gcr.io/x/y:1"]);
        let r = run("UPDATE", new, old, readme());
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[1].image: registry \"gcr.io\" of \"gcr.io/x/y:1\" is not allowed; allowed: [docker.io, quay.io, ghcr.io/acme], regex [internal\\.registry\\.[a-z]+\\.tld]"
            )
        );
    }
}
