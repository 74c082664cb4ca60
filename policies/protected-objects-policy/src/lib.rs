//! protected-objects-policy: objects the platform manages (NetworkPolicies, LimitRanges,
//! ResourceQuotas, RoleBindings it distributes to tenants) cannot be created, changed or
//! deleted by tenants, nor can the management marker be added or removed (README rules 1–6).

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{GetRequest, Lookups, OnLookupError};
use policy_admission::metadata::{changed_keys, string_map};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError};
use serde_json::{Map, Value};

pub use settings::Settings;

/// The policy.
pub struct ProtectedObjectsPolicy;

impl Policy for ProtectedObjectsPolicy {
    const NAME: &'static str = "protected-objects-policy";
    const HOST_CAPABILITIES: policy_admission::cluster::HostCapabilities =
        policy_admission::cluster::HostCapabilities::GET_AND_LIST_ALL;
    const OPERATIONS: &'static [Operation] =
        &[Operation::Create, Operation::Update, Operation::Delete];
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        // README rule 1: every kind is handled; resources not listed are untouched. Without
        // its resource a request cannot be told apart (400, never an accept).
        if request.resource.kind.is_empty() {
            return Err(PolicyError::malformed(
                &FieldPath::dotted("request.resource"),
                "missing",
            ));
        }
        let resource = (
            request.resource.group.clone(),
            request.resource.kind.clone(),
        );
        if !settings.resources.contains(&resource) || !Self::OPERATIONS.contains(&request.operation)
        {
            return Ok(Verdict::accept());
        }
        let target = Target {
            request,
            settings,
            resource: &resource,
        };
        settings.exempt_principals.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |lookups| target.judge(lookups),
        )
    }
}

/// A request for a protected resource.
struct Target<'r> {
    request: &'r AdmissionRequest,
    settings: &'r Settings,
    resource: &'r settings::Resource,
}

impl Target<'_> {
    /// README rules 2–5.
    fn judge(&self, lookups: &mut Lookups<'_>) -> Result<Verdict, PolicyError> {
        let mut verdict = Verdict::accept();
        let request = self.request;
        match request.operation {
            Operation::Create => {
                let object = request.object()?;
                if self.managed(&object)? {
                    verdict.violation(&FieldPath::empty(), self.refusal(Some(&object), "created"));
                }
            }
            Operation::Update => {
                let (old, new) = (request.old_object()?, request.object()?);
                if (self.managed(&old)? || self.managed(&new)?) && content_changed(&old, &new) {
                    verdict.violation(&FieldPath::empty(), self.refusal(Some(&new), "changed"));
                }
                self.judge_markers(&old, &new, &mut verdict)?;
            }
            Operation::Delete => self.judge_delete(lookups, &mut verdict)?,
            Operation::Connect => {}
        }
        Ok(verdict)
    }

    /// README rule 5: a managed object is deleted only with its namespace.
    fn judge_delete(
        &self,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let request = self.request;
        if !request.has_old_object() {
            verdict.violation(
                &FieldPath::empty(),
                format!(
                    "{} cannot be deleted: the request carries no oldObject, so whether it is managed cannot be verified",
                    self.describe(None)
                ),
            );
            return Ok(());
        }
        let old = request.old_object()?;
        if !self.managed(&old)? {
            return Ok(());
        }
        if self.settings.allow_delete_when_namespace_terminating {
            match namespace_ending(request, lookups) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e @ PolicyError::Lookup { .. })
                    if self.settings.on_lookup_error == OnLookupError::Accept =>
                {
                    verdict.warn_once(format!(
                        "{e}; deletion was judged as if the namespace were not terminating (onLookupError: accept)"
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        verdict.violation(&FieldPath::empty(), self.refusal(Some(&old), "deleted"));
        Ok(())
    }

    /// README rule 4: the management marker (the label keys `managedSelector` names and
    /// `managedAnnotations`) is never added, changed or removed, managed object or not.
    fn judge_markers(
        &self,
        old: &At<'_>,
        new: &At<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let settings = self.settings;
        for (map, markers) in [
            ("labels", &settings.marker_labels),
            ("annotations", &settings.managed_annotations),
        ] {
            if markers.is_empty() {
                continue;
            }
            let changed = changed_keys(string_map(Some(old), map)?, string_map(Some(new), map)?);
            for key in changed.into_iter().filter(|k| markers.contains(k)) {
                verdict.violation(
                    &FieldPath::root("metadata").field(map).key(key),
                    "the management marker cannot be added, changed or removed",
                );
            }
        }
        Ok(())
    }

    /// README rule 2: labels match `managedSelector`, a `managedAnnotations` key is present,
    /// or the name is listed for the resource.
    fn managed(&self, object: &At<'_>) -> Result<bool, PolicyError> {
        let settings = self.settings;
        let labels = string_map(Some(object), "labels")?;
        if settings
            .managed_selector
            .matches(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
        {
            return Ok(true);
        }
        let annotations = string_map(Some(object), "annotations")?;
        if annotations.is_some_and(|a| a.keys().any(|k| settings.managed_annotations.contains(k))) {
            return Ok(true);
        }
        let names = settings.managed_names.get(self.resource);
        Ok(names.is_some_and(|n| n.contains(&self.name(Some(object)))))
    }

    /// The object's name (the request's when the object has none).
    fn name(&self, object: Option<&At<'_>>) -> String {
        object
            .and_then(|o| o.value.get("metadata"))
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(&self.request.name)
            .to_owned()
    }

    /// `NetworkPolicy solar-prod/capsule-solar-0` (or `<Kind> <name>` when cluster-scoped).
    fn describe(&self, object: Option<&At<'_>>) -> String {
        let kind = &self.request.kind.kind;
        let name = self.name(object);
        // validated before the policy runs (one namespace per request)
        match self.request.object_namespace().ok().flatten() {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        }
    }

    /// The message of README rules 3–5.
    fn refusal(&self, object: Option<&At<'_>>, verb: &str) -> String {
        format!(
            "{} is managed by the platform and cannot be {verb}",
            self.describe(object)
        )
    }
}

/// Whether the request's namespace is terminating or gone (README rule 5); a cluster-scoped
/// object has none.
fn namespace_ending(
    request: &AdmissionRequest,
    lookups: &mut Lookups<'_>,
) -> Result<bool, PolicyError> {
    let Some(namespace) = request.object_namespace()? else {
        return Ok(false);
    };
    let lookup = GetRequest::cluster_scoped("v1", "Namespace", namespace);
    let ending = lookups.read(&lookup, |ns| {
        ns.read(|at| {
            let phase = match at.get_object("status")? {
                Some(status) => status.get_str("phase")?,
                None => None,
            };
            let deleted = match at.get_object("metadata")? {
                Some(metadata) => metadata.get_str("deletionTimestamp")?.is_some(),
                None => false,
            };
            Ok(phase == Some("Terminating") || deleted)
        })
    })?;
    Ok(ending.unwrap_or(true))
}

/// The `metadata` map of an object, if it is one.
fn metadata(o: &Map<String, Value>) -> Option<&Map<String, Value>> {
    o.get("metadata").and_then(Value::as_object)
}

/// Fields the API server maintains, never a change of the object (`docs/semantics.md#create-and-update`).
const SERVER_METADATA: [&str; 3] = ["managedFields", "resourceVersion", "generation"];

/// Whether an UPDATE changes more than `status` and server-maintained metadata. Each field
/// is compared once: linear in the two objects.
fn content_changed(old: &At<'_>, new: &At<'_>) -> bool {
    let (Some(old), Some(new)) = (old.value.as_object(), new.value.as_object()) else {
        return old.value != new.value;
    };
    let differs = |a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]| {
        a.iter()
            .any(|(k, v)| !skip.contains(&k.as_str()) && b.get(k) != Some(v))
            || b.keys()
                .any(|k| !skip.contains(&k.as_str()) && !a.contains_key(k))
    };
    if differs(old, new, &["status", "metadata"]) {
        return true;
    }
    match (metadata(old), metadata(new)) {
        (Some(a), Some(b)) => differs(a, b, &SERVER_METADATA),
        (a, b) => a != b,
    }
}

policy_admission::export_policy!(ProtectedObjectsPolicy);

policy_admission::robustness_tests!(
    ProtectedObjectsPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "resources": [
                {"apiGroup": "networking.k8s.io", "resources": ["networkpolicies"]},
                {"apiGroup": "", "resources": ["limitranges", "resourcequotas", "pods"]}
            ],
            "managedSelector": {"matchLabels": {"projectcapsule.dev/managed-by": "controller"}},
            "managedAnnotations": ["platform/managed"],
            "managedNames": [{"apiGroup": "", "resource": "limitranges", "names": ["organization"]}],
            "exemptPrincipals": {"users": ["admin"], "clusterRoles": ["cluster-admin"]}
        }),
        kinds: &[
            ("networking.k8s.io", "v1", "NetworkPolicy"),
            ("", "v1", "LimitRange"),
            ("", "v1", "Pod")
        ],
        reads: &[
            "v1/Namespace",
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding"
        ],
        strings: &[
            "metadata",
            "labels",
            "annotations",
            "name",
            "projectcapsule.dev/managed-by",
            "controller",
            "platform/managed",
            "organization",
            "status",
            "admin"
        ],
        objects: vec![serde_json::json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "capsule-solar-0", "namespace": "solar-prod",
                "labels": {"projectcapsule.dev/managed-by": "controller"}},
            "spec": {"podSelector": {}}
        })],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(v: &Value) -> At<'_> {
        At::new(v, FieldPath::empty())
    }

    /// The API server always sends `resource` (kwctl refuses a request without it, so this
    /// is a unit test rather than a case): without it a request is refused, never taken for
    /// one of an unlisted resource.
    #[test]
    fn a_request_without_its_resource_is_refused() {
        let request: AdmissionRequest = serde_json::from_value(json!({"uid": "1",
            "kind": {"group": "", "version": "v1", "kind": "LimitRange"}, "operation": "DELETE",
            "oldObject": {"metadata": {"name": "organization", "labels": {"tenancy-policies.io/managed": "x"}}}}))
        .unwrap();
        let settings: Settings =
            <Settings as policy_decode::settings::Validated>::parse(&json!({})).unwrap();
        let mut cluster = policy_admission::cluster::Objects::default();
        let mut lookups = Lookups::new(&mut cluster);
        let err = ProtectedObjectsPolicy::validate(&request, &settings, &mut lookups).unwrap_err();
        assert_eq!(err.to_string(), "request.resource: missing");
        assert_eq!(err.code(), 400);
    }

    #[test]
    fn bookkeeping_is_not_a_change() {
        let old = json!({"metadata": {"name": "q", "resourceVersion": "1", "managedFields": []}, "spec": {"hard": {"pods": "1"}}, "status": {}});
        let new = json!({"metadata": {"name": "q", "resourceVersion": "2", "generation": 3}, "spec": {"hard": {"pods": "1"}}, "status": {"used": {"pods": "1"}}});
        assert!(!content_changed(&at(&old), &at(&new)));
        let new = json!({"metadata": {"name": "q", "resourceVersion": "1", "finalizers": ["x"]}, "spec": {"hard": {"pods": "1"}}});
        assert!(content_changed(&at(&old), &at(&new)));
        let new = json!({"metadata": {"name": "q", "resourceVersion": "1"}, "spec": {"hard": {"pods": "2"}}});
        assert!(content_changed(&at(&old), &at(&new)));
    }
}
