//! persistent-volume-claim-policy: claims (PVCs, StatefulSet volumeClaimTemplates, ephemeral
//! volume templates) may use only allowed StorageClasses, the tenant default replaces a
//! missing class and the cluster default, and a claim may not bind or select another
//! tenant's PersistentVolumes (README rules 1–10).

pub mod settings;

use policy_core::class::{ClassAllowList, ClassFetch, ClassKind, record, skip_on_lookup_error};
use policy_core::cluster::{GetRequest, HostCapabilities, Lookups, OnLookupError};
use policy_core::json::At;
use policy_core::mutation::{push, set};
use policy_core::pod::{PodKind, PodView};
use policy_core::policy::{Policy, unsupported_kind};
use policy_core::request::{AdmissionRequest, Operation};
use policy_core::{FieldPath, PolicyError, Verdict};
use serde_json::{Value, json};

pub use settings::{Settings, VolumeBinding};

/// The legacy class annotation, honoured by the PV controller over the field.
pub const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The policy.
pub struct PersistentVolumeClaimPolicy;

fn storage_class() -> ClassKind {
    ClassKind::new("storage.k8s.io/v1", "StorageClass")
}

/// The class of a claim: the legacy annotation (present = its value, even `""`) and the
/// field (absent = nil), with their paths.
struct ClaimClass<'a> {
    annotation: Option<&'a str>,
    annotation_path: FieldPath,
    field: Option<&'a str>,
    field_path: FieldPath,
}

impl<'a> ClaimClass<'a> {
    /// Reads the class of a claim whose metadata and spec are at `base.metadata` and
    /// `base.spec`.
    fn read(base: &At<'a>) -> Result<Self, PolicyError> {
        let metadata = base.get_object("metadata")?;
        let spec = base.get_object("spec")?;
        let annotation = match &metadata {
            Some(m) => match m.get_object("annotations")? {
                Some(a) => a.get_str(BETA_CLASS_ANNOTATION)?,
                None => None,
            },
            None => None,
        };
        let field = match &spec {
            Some(s) => s.get_str("storageClassName")?,
            None => None,
        };
        Ok(ClaimClass {
            annotation,
            annotation_path: base
                .path
                .field("metadata")
                .field("annotations")
                .key(BETA_CLASS_ANNOTATION),
            field,
            field_path: base.path.field("spec").field("storageClassName"),
        })
    }

    /// The effective class (annotation first) and the path it was read at.
    fn effective(&self) -> (Option<&'a str>, &FieldPath) {
        match self.annotation {
            Some(a) => (Some(a), &self.annotation_path),
            None => (self.field, &self.field_path),
        }
    }

    /// Rule 1: annotation and field both present and different.
    fn mismatch(&self, verdict: &mut Verdict) {
        if let (Some(a), Some(f)) = (self.annotation, self.field)
            && a != f
        {
            verdict.violation(
                &self.annotation_path,
                format!(
                    "{a:?} differs from spec.storageClassName {f:?}; the PersistentVolume controller honours the annotation, so both must name the same StorageClass"
                ),
            );
        }
    }
}

fn is_cluster_default(class: &Value) -> bool {
    let annotations = class.get("metadata").and_then(|m| m.get("annotations"));
    DEFAULT_CLASS_ANNOTATIONS
        .iter()
        .any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true"))
}

/// Rules 1, 4 and 5 for a claim template (StatefulSet, ephemeral volume): nil accepted.
fn judge_template_claim(
    base: &At<'_>,
    classes: &ClassAllowList,
    on_error: OnLookupError,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let claim = ClaimClass::read(base)?;
    claim.mismatch(verdict);
    if let (Some(c), path) = claim.effective() {
        record(
            classes.judge(&storage_class(), c, lookups),
            path,
            on_error,
            verdict,
        )?;
    }
    Ok(())
}

/// The ephemeral volume claim templates of a pod spec (as `<volume>.ephemeral.volumeClaimTemplate`).
fn ephemeral_claims<'a>(spec: &At<'a>) -> Result<Vec<At<'a>>, PolicyError> {
    let mut out = Vec::new();
    for volume in spec.get_list("volumes")? {
        if let Some(ephemeral) = volume.get_object("ephemeral")?
            && let Some(template) = ephemeral.get_object("volumeClaimTemplate")?
        {
            out.push(template);
        }
    }
    Ok(out)
}

/// Whether the field at `pointer` differs between `oldObject` (which must be an object,
/// 400 otherwise) and `object`.
fn changed(request: &AdmissionRequest, pointer: &str) -> Result<bool, PolicyError> {
    Ok(request.object.pointer(pointer) != request.old_object()?.value.pointer(pointer))
}

impl Policy for PersistentVolumeClaimPolicy {
    const NAME: &'static str = "persistent-volume-claim-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type RawSettings = settings::RawSettings;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let k = &request.kind;
        let is_claim = k.group.is_empty() && k.version == "v1" && k.kind == "PersistentVolumeClaim";
        let pod_kind = PodKind::of_request(request);
        if !is_claim && pod_kind.is_none() {
            return Err(unsupported_kind(Self::NAME, request));
        }
        let mut verdict = Verdict::accept();
        if is_claim {
            judge_claim(request, settings, lookups, &mut verdict)?;
            return Ok(verdict);
        }
        let (Some(kind), Some(classes)) = (pod_kind, &settings.storage_classes) else {
            return Ok(verdict);
        };
        let object = request.object()?;
        let update = request.operation == Operation::Update;
        // StatefulSet volumeClaimTemplates.
        let templates_judged = !update || changed(request, "/spec/volumeClaimTemplates")?;
        if kind == PodKind::StatefulSet
            && templates_judged
            && let Some(spec) = object.get_object("spec")?
        {
            for template in spec.get_list("volumeClaimTemplates")? {
                template.object()?;
                judge_template_claim(
                    &template,
                    classes,
                    settings.on_lookup_error,
                    lookups,
                    &mut verdict,
                )?;
            }
        }
        // Ephemeral volume claim templates of the pod spec.
        let Some(pod) = PodView::read(object.value, kind)? else {
            return Ok(verdict);
        };
        let claims = ephemeral_claims(&pod.spec)?;
        if update {
            let old = request.old_object()?;
            let old_claims: Vec<&Value> = match PodView::read(old.value, kind) {
                Ok(Some(old_pod)) => ephemeral_claims(&old_pod.spec)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| a.value)
                    .collect(),
                _ => Vec::new(),
            };
            let new_claims: Vec<&Value> = claims.iter().map(|a| a.value).collect();
            if old_claims == new_claims {
                return Ok(verdict);
            }
        }
        for claim in claims {
            judge_template_claim(
                &claim,
                classes,
                settings.on_lookup_error,
                lookups,
                &mut verdict,
            )?;
        }
        Ok(verdict)
    }
}

/// A PersistentVolumeClaim: storage class rules 1–5, then cross-tenant binding rules 7–10.
fn judge_claim(
    request: &AdmissionRequest,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let object = request.object()?;
    let spec = object
        .get_object("spec")?
        .ok_or_else(|| PolicyError::malformed(&FieldPath::root("spec"), "missing"))?;
    let create = request.operation == Operation::Create;
    let mut mutated: Option<Value> = None;
    if let Some(classes) = &settings.storage_classes {
        judge_claim_class(
            request,
            &object,
            classes,
            settings,
            lookups,
            verdict,
            &mut mutated,
        )?;
    }
    if let Some(binding) = &settings.volume_binding {
        judge_binding(
            request,
            &spec,
            binding,
            settings.on_lookup_error,
            create,
            lookups,
            verdict,
            &mut mutated,
        )?;
    }
    if let Some(m) = mutated
        && verdict.is_clean()
    {
        verdict.mutate(m);
    }
    Ok(())
}

fn judge_claim_class(
    request: &AdmissionRequest,
    object: &At<'_>,
    classes: &ClassAllowList,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
    mutated: &mut Option<Value>,
) -> Result<(), PolicyError> {
    let claim = ClaimClass::read(object)?;
    let kind = storage_class();
    let on_error = settings.on_lookup_error;
    if request.operation == Operation::Update {
        // Rule 5: judged only when the effective class (or the pair) changed.
        let old = request.old_object()?;
        let before = ClaimClass::read(&old)?;
        if (before.annotation, before.field) == (claim.annotation, claim.field) {
            return Ok(());
        }
        claim.mismatch(verdict);
        match claim.effective() {
            (Some(c), path) => {
                record(classes.judge(&kind, c, lookups), path, on_error, verdict)?;
            }
            // Removing the legacy annotation of a claim without field leaves it class-less:
            // nothing is mutated on UPDATE, and a nil class binds like `""` when no cluster
            // default exists, so rule 2 refuses it.
            (None, path) => verdict.violation(
                path,
                format!(
                    "a StorageClass is required; allowed: {}",
                    classes.describe()
                ),
            ),
        }
        return Ok(());
    }
    claim.mismatch(verdict);
    let (effective, path) = claim.effective();
    let default = classes.default();
    let write_default = |mutated: &mut Option<Value>, d: &str| -> Result<(), PolicyError> {
        let target = mutated.get_or_insert_with(|| request.object.clone());
        set(target, &["spec"], "storageClassName", json!(d))
    };
    let Some(c) = effective else {
        // Rule 2: nil.
        match default {
            Some(d) => write_default(mutated, d)?,
            None => verdict.violation(
                path,
                format!(
                    "a StorageClass is required; allowed: {}",
                    classes.describe()
                ),
            ),
        }
        return Ok(());
    };
    // Rule 3: the cluster default injected by DefaultStorageClass counts as nil.
    let mut fetch = ClassFetch::new(&kind, c);
    if let Some(d) = default
        && claim.annotation.is_none()
        && settings.replace_cluster_default
        && d != c
        && !c.is_empty()
    {
        match fetch.get(lookups) {
            Ok(Some(class)) if is_cluster_default(&class) => {
                write_default(mutated, d)?;
                return Ok(());
            }
            Ok(_) => {}
            Err(e) => skip_on_lookup_error(e, path, on_error, verdict)?,
        }
    }
    // Rules 4 and 5.
    let outcome = classes.judge_with(&kind, c, || fetch.get(lookups));
    record(outcome, path, on_error, verdict)
}

#[allow(clippy::too_many_arguments)]
fn judge_binding(
    request: &AdmissionRequest,
    spec: &At<'_>,
    binding: &VolumeBinding,
    on_error: OnLookupError,
    create: bool,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
    mutated: &mut Option<Value>,
) -> Result<(), PolicyError> {
    let volume_name = spec.get_str("volumeName")?.filter(|v| !v.is_empty());
    let volume_path = spec.path.field("volumeName");
    // Rule 7: CREATE with volumeName, or UPDATE setting it on a claim not yet Bound.
    let judge_volume = match volume_name {
        None => false,
        Some(_) if create => true,
        Some(name) => {
            let old = request.old_object()?;
            let old_name = match old.get_object("spec")? {
                Some(s) => s.get_str("volumeName")?,
                None => None,
            };
            let phase = match old.get_object("status")? {
                Some(s) => s.get_str("phase")?,
                None => None,
            };
            old_name != Some(name) && phase != Some("Bound")
        }
    };
    let selector = spec.get_object("selector")?;
    let judge_selector = create && binding.pin_selector && selector.is_some();
    if !judge_volume && !judge_selector {
        return Ok(());
    }
    // Rule 8: the claim's tenant.
    let namespace = request.namespace()?;
    let tenant = match lookups.get(&GetRequest::cluster_scoped("v1", "Namespace", namespace)) {
        Err(e) => return skip_on_lookup_error(e, &FieldPath::empty(), on_error, verdict),
        Ok(ns) => ns
            .and_then(|n| n.get("metadata"))
            .and_then(|m| m.get("labels"))
            .and_then(|l| l.get(&binding.tenant_label))
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let Some(tenant) = tenant else {
        return Ok(());
    };
    // Rule 9: the PersistentVolume must be the tenant's.
    if judge_volume && let Some(name) = volume_name {
        match lookups.get(&GetRequest::cluster_scoped("v1", "PersistentVolume", name)) {
            Err(e) => skip_on_lookup_error(e, &volume_path, on_error, verdict)?,
            Ok(None) => verdict.violation(
                &volume_path,
                format!("PersistentVolume {name:?} does not exist"),
            ),
            Ok(Some(pv)) => {
                let label = pv
                    .get("metadata")
                    .and_then(|m| m.get("labels"))
                    .and_then(|l| l.get(&binding.tenant_label))
                    .and_then(Value::as_str);
                match label {
                    Some(t) if t == tenant => {}
                    Some(_) => verdict.violation(
                        &volume_path,
                        format!(
                            "PersistentVolume {name:?} belongs to another tenant; cross-tenant volume binding is not allowed"
                        ),
                    ),
                    None if binding.allow_unlabelled_volumes => {}
                    None => verdict.violation(
                        &volume_path,
                        format!(
                            "PersistentVolume {name:?} has no {} label; only volumes labelled for tenant {tenant:?} may be bound",
                            binding.tenant_label
                        ),
                    ),
                }
            }
        }
    }
    // Rule 10: pin the selector to the tenant.
    if judge_selector && let Some(selector) = selector {
        let key = binding.tenant_label.as_str();
        let mut pinned = false;
        if let Some(labels) = selector.get_object("matchLabels")?
            && let Some(value) = labels.get_str(key)?
        {
            if value == tenant {
                pinned = true;
            } else {
                verdict.violation(
                    &labels.path.key(key),
                    format!("{value:?} selects volumes of another tenant; only tenant {tenant:?} may be selected"),
                );
            }
        }
        for expression in selector.get_list("matchExpressions")? {
            if expression.get_str("key")? != Some(key) {
                continue;
            }
            let operator = expression.get_str("operator")?.unwrap_or("");
            let values = expression.get_str_list("values")?;
            if operator == "In" && values == [tenant.as_str()] {
                pinned = true;
            } else {
                verdict.violation(
                    &expression.path,
                    format!(
                        "{key} {operator} [{}] does not pin the claim to its tenant; only \"In [{tenant}]\" is allowed",
                        values.join(", ")
                    ),
                );
            }
        }
        if !pinned {
            let target = mutated.get_or_insert_with(|| request.object.clone());
            push(
                target,
                &["spec", "selector"],
                "matchExpressions",
                json!({"key": key, "operator": "In", "values": [tenant]}),
            )?;
        }
    }
    Ok(())
}

policy_core::export_policy!(PersistentVolumeClaimPolicy);

policy_core::robustness_tests!(
    PersistentVolumeClaimPolicy,
    policy_core::testing::Robustness {
        settings: serde_json::json!({"storageClasses": {"selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"},
            "volumeBinding": {}}),
        kinds: &[
            ("", "v1", "PersistentVolumeClaim"),
            ("", "v1", "Pod"),
            ("apps", "v1", "StatefulSet"),
            ("apps", "v1", "Deployment"),
            ("batch", "v1", "CronJob"),
        ],
        strings: &[
            "storageClassName",
            "volumeName",
            "volume.beta.kubernetes.io/storage-class",
            "capsule.clastix.io/tenant",
            "tenant-default",
            "fast",
            "Bound",
            "In",
            "NotIn",
            "matchExpressions",
            "volumeClaimTemplates",
            "ephemeral",
            "volumeClaimTemplate",
            "selector",
            "matchLabels",
            "annotations"
        ],
        reads: &[
            "storage.k8s.io/v1/StorageClass",
            "v1/PersistentVolume",
            "v1/Namespace"
        ],
        mutating: true,
        objects: vec![serde_json::json!({"kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "team-a", "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
            "spec": {"storageClassName": "fast", "volumeName": "pv-x", "accessModes": ["ReadWriteOnce"],
                "selector": {"matchLabels": {"capsule.clastix.io/tenant": "solar"},
                    "matchExpressions": [{"key": "capsule.clastix.io/tenant", "operator": "In", "values": ["solar"]}]}},
            "status": {"phase": "Pending"}})],
        cluster: vec![
            serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
            serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "tenant-default",
                "labels": {"env": "production"}}}),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
                "labels": {"capsule.clastix.io/tenant": "solar"}}}),
            serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-x",
                "labels": {"capsule.clastix.io/tenant": "solar"}}}),
        ],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_core::cluster::Objects;
    use policy_core::policy::{ValidationResponse, evaluate};

    fn cluster() -> Objects {
        Objects::new(vec![
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "solar-prod",
                "labels": {"capsule.clastix.io/tenant": "solar"}}}),
        ])
    }

    fn run(spec: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "PersistentVolumeClaim"}, "operation": "CREATE",
                "namespace": "solar-prod",
                "object": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": spec}},
            "settings": {"storageClasses": {"allowed": ["ceph-prod"], "default": "tenant-default"}, "volumeBinding": {}}
        });
        evaluate::<PersistentVolumeClaimPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut cluster(),
        )
    }

    #[test]
    fn cluster_default_is_replaced_and_selector_pinned() {
        let r = run(
            json!({"storageClassName": "standard", "selector": {"matchLabels": {"disk": "ssd"}}}),
        );
        assert!(r.accepted, "{:?}", r.message);
        let spec = &r.mutated_object.unwrap()["spec"];
        assert_eq!(spec["storageClassName"], "tenant-default");
        assert_eq!(
            spec["selector"]["matchExpressions"],
            json!([{"key": "capsule.clastix.io/tenant", "operator": "In", "values": ["solar"]}])
        );
    }

    #[test]
    fn foreign_selector_rejected() {
        let r = run(
            json!({"storageClassName": "ceph-prod", "selector": {"matchLabels": {"capsule.clastix.io/tenant": "water"}}}),
        );
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.selector.matchLabels[\"capsule.clastix.io/tenant\"]: \"water\" selects volumes of another tenant; only tenant \"solar\" may be selected"
            )
        );
    }
}
