//! container-registry-policy: every image a pod spec pulls comes from an allowed, not
//! denied registry or repository prefix, is written fully qualified when the settings say
//! so, and is pulled with the pull policies its registry allows (README rules 1–6); or,
//! with the `rules` setting, is judged as Capsule v0.14's registry rules judge it (README
//! "Capsule v0.14 rules").

pub mod rules;
pub mod settings;

use kube_values::image::{ImageRef, fully_qualified};
use kube_values::pull_policy::{IF_NOT_PRESENT, default_for, default_pull_policy};
use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::policy::Policy;
use policy_admission::request::AdmissionRequest;
use policy_decode::PolicyError;
use tenancy_rules::pulls::{Pull, pull_target};

pub use rules::RegistryRules;
pub use settings::{ListSettings, PullPolicyRule, PullPolicyRules, RuleScope, Settings};

use rules::{Decision, Target};

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
            match settings {
                Settings::Lists(lists) => judge(pull, lists, &mut verdict),
                Settings::Rules(rules) => judge_by_rules(pull, rules, &mut verdict),
            }
        }
        Ok(verdict)
    }
}

/// README rules 1–4 and 6 for one pulled image.
fn judge(pull: &Pull<'_>, settings: &ListSettings, verdict: &mut Verdict) {
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

/// README "Capsule v0.14 rules" for one pulled image: the trimmed reference as written is
/// judged by the rules; audit matches become warnings.
fn judge_by_rules(pull: &Pull<'_>, rules: &RegistryRules, verdict: &mut Verdict) {
    // A container without image is refused by the API server; nothing to judge here.
    let Some(raw) = pull.image else {
        return;
    };
    let value = raw.trim();
    if value.is_empty() {
        verdict.violation(&pull.image_path(), "empty image reference");
        return;
    }
    let target = Target::of(pull.source);
    let judgement = rules.judge(target, value);
    for at in judgement.audits {
        verdict.warn(format!(
            "{}: {value:?} audited by {}",
            pull.image_path(),
            rules.describe(at)
        ));
    }
    match judgement.decision {
        Decision::Unruled => {}
        Decision::Unlisted => verdict.violation(
            &pull.image_path(),
            format!(
                "{value:?} matches no allowed registry rule; allowed: {}",
                rules.allowed_for(target)
            ),
        ),
        Decision::Denied(at) => verdict.violation(
            &pull.image_path(),
            format!("{value:?} is denied by {}", rules.describe(at)),
        ),
        Decision::Allowed(at) => {
            let Some(allowed) = rules.entry(at).and_then(|e| e.pull_policies()) else {
                return;
            };
            let (policy, defaulted) = effective_policy(pull.policy, value);
            if !allowed.allows(policy) {
                let defaulted = if defaulted { " (the default)" } else { "" };
                verdict.violation(
                    &pull.policy_path(),
                    format!(
                        "{policy:?}{defaulted} is not allowed for {value:?} by {}; allowed: {allowed}",
                        rules.describe(at)
                    ),
                );
            }
        }
    }
}

/// The effective pull policy of an image `value` pulled with the written policy `written`,
/// and whether it is the API server's default: the written one, else `Always` for `latest`
/// or no tag and no digest, `IfNotPresent` otherwise — also for a reference that does not
/// parse, as the API server defaults it (it ignores the parse error).
fn effective_policy<'a>(written: Option<&'a str>, value: &str) -> (&'a str, bool) {
    match written {
        Some(policy) => (policy, false),
        None => (default_pull_policy(value).unwrap_or(IF_NOT_PRESENT), true),
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

/// The robustness properties again, for the `rules` form.
#[cfg(test)]
mod rules_form {
    use super::*;

    policy_admission::robustness_tests!(
        ContainerRegistryPolicy,
        policy_admission::testing::Robustness {
            settings: serde_json::json!({"rules": [
                {"action": "allow", "registries": [
                    {"exp": "^docker\\.io/", "pullPolicies": ["IfNotPresent"]},
                    {"exact": ["nginx:latest", "nginx"]}]},
                {"action": "deny", "targets": ["pod/containers", "pod/volumes"],
                    "registries": [{"exp": "ubuntu"}, {"exact": ["localhost:5000/app"], "negate": true}]},
                {"action": "audit", "registries": [{"exp": "latest$"}]}
            ]}),
            subresources: &["ephemeralcontainers"],
            strings: &[
                "nginx:latest",
                "nginx",
                " nginx ",
                "docker.io/library/nginx:1",
                "docker.io/library/ubuntu:22.04",
                "localhost:5000/app",
                "image",
                "reference",
                "imagePullPolicy",
                "IfNotPresent",
                "Always"
            ],
            ..Default::default()
        }
    );
}

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

    fn rules(rules: Value) -> Value {
        json!({"rules": rules})
    }

    #[test]
    fn rules_judge_the_reference_as_written() {
        let settings = rules(json!([
            {"action": "allow", "registries": [{"exact": ["docker.io/library/nginx:1.25"]}, {"exp": "^quay\\.io/"}]},
            {"registries": [{"exp": "quay\\.io/bad/"}]}]));
        let r = run(
            "CREATE",
            pod(&[
                "nginx:1.25",
                " docker.io/library/nginx:1.25 ",
                "quay.io/bad/x:1",
                "quay.io/ok/x:1",
            ]),
            Value::Null,
            settings,
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].image: \"nginx:1.25\" matches no allowed registry rule; allowed: rules[0].registries[0] (exact: docker.io/library/nginx:1.25), rules[0].registries[1] (exp: ^quay\\.io/); \
                 spec.containers[2].image: \"quay.io/bad/x:1\" is denied by rules[1].registries[0] (exp: quay\\.io/bad/)"
            )
        );
    }

    #[test]
    fn rules_refuse_an_empty_reference() {
        let r = run(
            "CREATE",
            pod(&["  "]),
            Value::Null,
            rules(json!([{"registries": [{"exp": "x"}]}])),
        );
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some("spec.containers[0].image: empty image reference")
        );
    }

    #[test]
    fn rules_check_the_pull_policies_of_the_deciding_entry() {
        // the last allow rule decides, through its first matching entry
        let settings = rules(json!([
            {"action": "allow", "registries": [{"exp": "^registry\\.acme\\.io/", "pullPolicies": ["Never"]}]},
            {"action": "allow", "registries": [
                {"exp": "^registry\\.acme\\.io/", "pullPolicies": ["Always"]},
                {"exp": "acme", "pullPolicies": ["IfNotPresent"]}]}]));
        let mut p = pod(&["registry.acme.io/app:1"]);
        let r = run("CREATE", p.clone(), Value::Null, settings.clone());
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].imagePullPolicy: \"IfNotPresent\" (the default) is not allowed for \"registry.acme.io/app:1\" by rules[1].registries[0] (exp: ^registry\\.acme\\.io/); allowed: [Always]"
            )
        );
        p["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
        assert!(run("CREATE", p.clone(), Value::Null, settings.clone()).accepted);
        p["spec"]["containers"][0]["imagePullPolicy"] = json!("Never");
        let r = run("CREATE", p, Value::Null, settings);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].imagePullPolicy: \"Never\" is not allowed for \"registry.acme.io/app:1\" by rules[1].registries[0] (exp: ^registry\\.acme\\.io/); allowed: [Always]"
            )
        );
    }

    #[test]
    fn rules_audits_are_warnings_only() {
        let settings = rules(json!([{"action": "audit", "registries": [{"exp": "latest$"}]}]));
        let r = run(
            "CREATE",
            pod(&["nginx:latest", "nginx:1"]),
            Value::Null,
            settings,
        );
        assert!(r.accepted);
        assert_eq!(
            r.warnings,
            Some(vec![
                "spec.containers[0].image: \"nginx:latest\" audited by rules[0].registries[0] (exp: latest$)".to_owned()
            ])
        );
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
