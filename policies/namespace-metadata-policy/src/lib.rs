//! namespace-metadata-policy: unprivileged principals may not create, change or delete
//! reserved namespaces, and may add, change or remove only allowed Namespace labels and
//! annotations — never protected ones, nor `ownerReferences` — and may not add or change
//! forbidden ones (README rules 1–7).

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::gate::{NAMESPACE, PROJECT, PROJECT_REQUEST};
use policy_admission::metadata::{changed_keys, owner_references, string_map};
use policy_admission::policy::{Policy, unsupported_kind};
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::At;
use policy_decode::message::bracketed;
use policy_decode::{FieldPath, PolicyError};

use settings::KeyRules;
pub use settings::Settings;

/// The label the API server sets to the namespace's name on every Namespace (README rule 4).
pub const METADATA_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The policy.
pub struct NamespaceMetadataPolicy;

impl Policy for NamespaceMetadataPolicy {
    const NAME: &'static str = "namespace-metadata-policy";
    const HOST_CAPABILITIES: policy_admission::cluster::HostCapabilities =
        policy_admission::cluster::HostCapabilities::LIST_ALL;
    const OPERATIONS: &'static [Operation] =
        &[Operation::Create, Operation::Update, Operation::Delete];
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let kind = &request.kind;
        let judged = if NAMESPACE.matches(kind) || PROJECT.matches(kind) {
            Self::OPERATIONS.contains(&request.operation)
        } else if PROJECT_REQUEST.matches(kind) {
            request.operation == Operation::Create
        } else {
            return Err(unsupported_kind(Self::NAME, request));
        };
        if !judged {
            return Ok(Verdict::accept());
        }
        // README rule 1: exempt principals are accepted; ClusterRoleBindings are read only
        // when the request would be refused (docs/semantics.md#exemptions).
        settings.exempt_principals.judge_unless_exempt(
            &request.user_info,
            lookups,
            settings.on_lookup_error,
            |_| judge(request, settings),
        )
    }
}

/// README rules 2–6 for one request of a handled kind and operation.
fn judge(request: &AdmissionRequest, settings: &Settings) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    let delete = request.operation == Operation::Delete;
    let object = match delete {
        true => None,
        false => Some(request.object()?),
    };
    // README rule 2: reserved names first, and alone.
    let name = judged_name(request, object.as_ref())?;
    if let Some(reserved) = settings.reserved_names.iter().find(|r| r.is_match(&name)) {
        let all = bracketed(settings.reserved_names.iter().map(|r| r.pattern()));
        verdict.violation(
            &FieldPath::dotted("metadata.name"),
            format!(
                "{name:?} is a reserved name (matches {:?}); reserved: {all}",
                reserved.pattern()
            ),
        );
        return Ok(verdict);
    }
    // README rule 3: only names are judged on DELETE and on ProjectRequests (whose
    // metadata the API server does not carry into the project).
    if delete || PROJECT_REQUEST.matches(&request.kind) {
        return Ok(verdict);
    }
    let old = match request.operation {
        Operation::Update => Some(request.old_object()?),
        _ => None,
    };
    // README rule 4: labels, then annotations.
    for (map, what, rules) in [
        ("labels", "label", &settings.labels),
        ("annotations", "annotation", &settings.annotations),
    ] {
        let before = string_map(old.as_ref(), map)?;
        let after = string_map(object.as_ref(), map)?;
        for key in changed_keys(before, after) {
            let removed = !after.is_some_and(|a| a.contains_key(key));
            judge_key(map, what, key, removed, rules, &mut verdict);
        }
    }
    // README rule 5.
    if settings.protect_owner_references
        && owner_references(old.as_ref())? != owner_references(object.as_ref())?
    {
        verdict.violation(
            &FieldPath::dotted("metadata.ownerReferences"),
            "ownerReferences may not be set or changed",
        );
    }
    Ok(verdict)
}

/// README rule 4: a changed key that is protected, an added or changed key that is forbidden,
/// or a changed key that no allowed pattern matches (`kubernetes.io/metadata.name` aside), is
/// a violation; one per key, in that order.
fn judge_key(
    map: &str,
    what: &str,
    key: &str,
    removed: bool,
    rules: &KeyRules,
    verdict: &mut Verdict,
) {
    let path = FieldPath::root("metadata").field(map).key(key);
    if rules.protected.contains(key) {
        verdict.violation(
            &path,
            format!("{what} is protected and may not be added, changed or removed"),
        );
    } else if !removed && rules.forbidden.forbids(key) {
        verdict.violation(&path, rules.forbidden.refusal(what, key));
    } else {
        let always = map == "labels" && key == METADATA_NAME_LABEL;
        if always || rules.allowed.is_match(key) {
            return;
        }
        verdict.violation(
            &path,
            format!(
                "{what} may not be added, changed or removed; allowed: {}",
                bracketed(rules.patterns())
            ),
        );
    }
}

/// README rule 2: the name judged — the object's name; on DELETE the request's name (or
/// the old object's); a Namespace created with only `generateName` is judged by that prefix
/// followed by the five characters the API server appends.
fn judged_name(request: &AdmissionRequest, object: Option<&At<'_>>) -> Result<String, PolicyError> {
    let metadata = match object {
        Some(o) => o.get_object("metadata")?,
        None if request.name.is_empty() => request
            .old_object()
            .ok()
            .and_then(|o| o.get_object("metadata").ok().flatten()),
        None => None,
    };
    let name = match &metadata {
        Some(m) => m.get_str("name")?.unwrap_or_default(),
        None => "",
    };
    if !name.is_empty() {
        return Ok(name.to_owned());
    }
    if !request.name.is_empty() {
        return Ok(request.name.clone());
    }
    match &metadata {
        Some(m) => match m.get_str("generateName")? {
            Some(prefix) if !prefix.is_empty() => Ok(format!("{prefix}xxxxx")),
            _ => Err(PolicyError::malformed(
                &FieldPath::dotted("metadata.name"),
                "missing",
            )),
        },
        None => Err(PolicyError::malformed(
            &FieldPath::dotted("metadata.name"),
            "missing",
        )),
    }
}

policy_admission::export_policy!(NamespaceMetadataPolicy);

policy_admission::robustness_tests!(
    NamespaceMetadataPolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "reservedNames": ["default", "kube-.*", "openshift-.*"],
            "allowedLabels": ["custom\\.appuio\\.io/.*"],
            "allowedAnnotations": ["openshift\\.io/(display-name|description)"],
            "exemptPrincipals": {"users": ["admin"], "clusterRoles": ["cluster-admin"]}
        }),
        kinds: &[
            ("", "v1", "Namespace"),
            ("project.openshift.io", "v1", "Project"),
            ("project.openshift.io", "v1", "ProjectRequest")
        ],
        subresources: &["status", "finalize"],
        reads: &["rbac.authorization.k8s.io/v1/ClusterRoleBinding"],
        strings: &[
            "metadata",
            "name",
            "generateName",
            "labels",
            "annotations",
            "ownerReferences",
            "kube-system",
            "default",
            "custom.appuio.io/x",
            "appuio.io/organization",
            "capsule.clastix.io/tenant",
            "kubernetes.io/metadata.name",
            "openshift.io/node-selector",
            "admin"
        ],
        objects: vec![serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "dev", "labels": {"appuio.io/organization": "acme"}}
        })],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use serde_json::{Value, json};

    fn run(settings: Value, request: Value, cluster: Vec<Value>) -> Result<Verdict, PolicyError> {
        let settings: Settings = <Settings as policy_decode::settings::Validated>::parse(&settings)
            .expect("valid settings");
        let request: AdmissionRequest = serde_json::from_value(request).expect("request");
        let mut objects = Objects::new(cluster);
        let mut lookups = Lookups::new(&mut objects);
        NamespaceMetadataPolicy::validate(&request, &settings, &mut lookups)
    }

    fn namespace(operation: &str, object: Value, old: Value) -> Value {
        json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
            "resource": {"group": "", "version": "v1", "resource": "namespaces"},
            "name": "", "operation": operation, "userInfo": {"username": "u"},
            "object": object, "oldObject": old})
    }

    #[test]
    fn every_changed_key_is_reported_in_order() {
        let old = json!({"metadata": {"name": "dev", "labels": {"keep": "1", "drop": "x"}, "annotations": {"a": "1"}}});
        let new = json!({"metadata": {"name": "dev", "labels": {"keep": "1", "custom.appuio.io/x": "y", "add": "z"},
            "annotations": {"a": "2"}, "ownerReferences": [{"uid": "1"}]}});
        let v = run(
            json!({"allowedLabels": ["custom\\.appuio\\.io/.*"]}),
            namespace("UPDATE", new, old),
            vec![],
        )
        .unwrap();
        assert_eq!(
            v.message(),
            "metadata.labels[\"add\"]: label may not be added, changed or removed; allowed: [custom\\.appuio\\.io/.*]; \
             metadata.labels[\"drop\"]: label may not be added, changed or removed; allowed: [custom\\.appuio\\.io/.*]; \
             metadata.annotations[\"a\"]: annotation may not be added, changed or removed; allowed: [kubectl\\.kubernetes\\.io/last-applied-configuration]; \
             metadata.ownerReferences: ownerReferences may not be set or changed"
        );
    }

    #[test]
    fn reserved_names_come_first_and_alone() {
        let new = json!({"metadata": {"generateName": "kube-", "labels": {"x": "y"}}});
        let v = run(json!({}), namespace("CREATE", new, Value::Null), vec![]).unwrap();
        assert_eq!(
            v.message(),
            "metadata.name: \"kube-xxxxx\" is a reserved name (matches \"kube-.*\"); reserved: [default, kube-.*, openshift, openshift-.*]"
        );
        let v = run(
            json!({}),
            namespace("CREATE", json!({"metadata": {}}), Value::Null),
            vec![],
        );
        assert_eq!(v.unwrap_err().to_string(), "metadata.name: missing");
    }

    #[test]
    fn the_metadata_name_label_is_always_allowed() {
        let new = json!({"metadata": {"name": "dev", "labels": {METADATA_NAME_LABEL: "dev"}}});
        let v = run(json!({}), namespace("CREATE", new, Value::Null), vec![]).unwrap();
        assert!(v.is_clean(), "{}", v.message());
    }
}
