//! pod-security-policy: a PodSecurityPolicy replacement (README rules 1-6). Named profiles carry a
//! PSP spec (or a Pod Security Standards preset) and the subjects that may use them; a Pod
//! is admitted by the first usable profile (by name) that admits it unchanged, else by the
//! first that admits it with its defaults applied. Id ranges can come from a Namespace
//! annotation, so one profile serves every tenant with its own uid/gid.

pub mod selection;
pub mod settings;
pub mod spec;
pub mod strategy;

use policy_admission::cluster::{HostCapabilities, Lookups};
use policy_admission::pod::PodKind;
use policy_admission::policy::{Policy, unsupported_kind};
use policy_admission::request::{AdmissionRequest, Operation};
use policy_admission::{Mode, Verdict};
use policy_decode::PolicyError;
use tenancy_rules::principal::has_controller_owner;

use selection::Mutation;
pub use settings::Settings;

/// The policy.
pub struct PodSecurityPolicy;

impl Policy for PodSecurityPolicy {
    const NAME: &'static str = "pod-security-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn mode(settings: &Settings) -> Mode {
        settings.mode
    }

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(kind) = PodKind::of_request(request) else {
            return Err(unsupported_kind(Self::NAME, request));
        };
        let object = request.object()?;
        let ephemeral = kind == PodKind::Pod && request.is_subresource("ephemeralcontainers");
        if request.operation == Operation::Update {
            let old = request.old_object()?;
            if !selection::significant_update(old.value, object.value, kind, ephemeral) {
                return Ok(Verdict::accept());
            }
        }
        // A workload template written by a trusted controller for its controlling owner
        // (a Deployment's ReplicaSet, a CronJob's Job) was judged with its owner
        // (docs/semantics.md#principals, trusted controllers).
        // Pods are always judged: controller-created Pods match by service account and
        // namespace (README rule 5).
        if kind.is_template()
            && settings.trusted_controllers.matches(&request.user_info)
            && has_controller_owner(object.value)
        {
            return Ok(Verdict::accept());
        }
        let mutation = match (settings.mode, kind.is_template()) {
            // Templates are never mutated and judged as if defaulted, in either mode.
            (_, true) => Mutation::AsIf,
            (Mode::Warn, false) => Mutation::Forbidden,
            (Mode::Enforce, false) if request.operation == Operation::Create && !ephemeral => {
                Mutation::Apply
            }
            (Mode::Enforce, false) => Mutation::Forbidden,
        };
        selection::select(request, kind, settings, lookups, mutation)
    }
}

policy_admission::export_policy!(PodSecurityPolicy);

policy_admission::robustness_tests!(
    PodSecurityPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({"profiles": [
            {"name": "restricted", "subjects": {"groups": ["tenantA-users"]}, "preset": "restricted"},
            {"name": "tool", "subjects": {"namespaces": ["team-*"], "serviceAccounts": ["team-a:deployer"]}, "spec": {
                "allowPrivilegeEscalation": false, "allowedCapabilities": ["NET_BIND_SERVICE"],
                "runAsUser": {"rule": "MustRunAs", "ranges": [{"fromNamespaceAnnotation": "tools.example.org/uid"}]},
                "fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]},
                "supplementalGroups": {"rule": "RunAsAny"}, "seLinux": {"rule": "RunAsAny"},
                "volumes": ["configMap", "hostPath", "ephemeral", "image"],
                "allowedHostPaths": [{"pathPrefix": "/data", "readOnly": true}],
                "allowedSeccompProfiles": ["runtime/default"], "defaultSeccompProfile": "runtime/default"}},
            {"name": "zz-fixed", "subjects": {"namespaces": ["*"]}, "spec": {
                "runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 1000, "max": 2000}]}, "defaultAllowPrivilegeEscalation": false,
                "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}, "seLinux": {"rule": "RunAsAny"}}}]}),
        subresources: &["ephemeralcontainers"],
        strings: &[
            "RunAsAny",
            "MustRunAs",
            "MustRunAsNonRoot",
            "runtime/default",
            "tools.example.org/uid",
            "restricted",
            "baseline",
            "securityContext",
            "runAsUser",
            "privileged",
            "capabilities",
            "hostPath",
            "volumes",
            "seccompProfile",
            "hostNetwork",
            "allowPrivilegeEscalation",
            "ephemeralContainers"
        ],
        reads: &["v1/Namespace"],
        mutating: true,
        cluster: vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
            "annotations": {"tools.example.org/uid": "52000"}}})
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

    fn run(request: Value, settings: Value, cluster: Vec<Value>) -> ValidationResponse {
        let payload =
            serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap();
        evaluate::<PodSecurityPolicy>(&payload, &mut Objects::new(cluster))
    }

    fn pod_request(op: &str, pod: Value) -> Value {
        json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": op,
            "namespace": "tool-x", "userInfo": {"username": "x"}, "object": pod})
    }

    fn tool_settings() -> Value {
        json!({"profiles": [{"name": "tool", "subjects": {"namespaces": ["tool-*"]}, "spec": {
            "allowPrivilegeEscalation": false,
            "runAsUser": {"rule": "MustRunAs", "ranges": [{"fromNamespaceAnnotation": "tools.example.org/uid"}]},
            "seLinux": {"rule": "RunAsAny"}, "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}}}]})
    }

    fn namespace(uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tool-x", "annotations": {"tools.example.org/uid": uid}}})
    }

    #[test]
    fn wiring_mutates_pods_with_namespace_ids() {
        let pod = json!({"metadata": {"name": "p", "namespace": "tool-x"}, "spec": {"containers": [{"name": "a", "image": "x"}]}});
        let r = run(
            pod_request("CREATE", pod),
            tool_settings(),
            vec![namespace("52000")],
        );
        assert!(r.accepted, "{:?}", r.message);
        let m = r.mutated_object.unwrap();
        assert_eq!(
            m["spec"]["containers"][0]["securityContext"],
            json!({"runAsUser": 52000, "allowPrivilegeEscalation": false})
        );
        assert_eq!(
            r.audit_annotations
                .unwrap()
                .get(selection::PROFILE_ANNOTATION)
                .map(String::as_str),
            Some("tool")
        );
    }

    #[test]
    fn wiring_rejects_with_profile_name() {
        let pod = json!({"metadata": {"name": "p", "namespace": "tool-x"}, "spec": {"containers": [{"name": "a", "securityContext": {"runAsUser": 0}}]}});
        let r = run(
            pod_request("CREATE", pod),
            tool_settings(),
            vec![namespace("52000")],
        );
        assert!(!r.accepted);
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.containers[0].securityContext.runAsUser: 0 is not in the allowed ranges [52000-52000] of runAsUser (profile \"tool\")"
            )
        );
    }

    #[test]
    fn lookup_failure_is_500_and_unknown_kind_400() {
        let pod = json!({"metadata": {"name": "p", "namespace": "tool-x"}, "spec": {"containers": [{"name": "a"}]}});
        let payload = serde_json::to_vec(
            &json!({"request": pod_request("CREATE", pod), "settings": tool_settings()}),
        )
        .unwrap();
        let r =
            evaluate::<PodSecurityPolicy>(&payload, &mut Objects::new(vec![]).failing("Namespace"));
        assert_eq!(r.code, Some(500));
        let svc = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Service"}, "operation": "CREATE", "object": {}});
        let r = run(svc, tool_settings(), vec![]);
        assert_eq!(r.code, Some(400));
        assert_eq!(
            r.message.as_deref(),
            Some("pod-security-policy does not handle v1 Service")
        );
    }
}
