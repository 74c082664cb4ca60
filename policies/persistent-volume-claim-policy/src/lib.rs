//! persistent-volume-claim-policy: claims (PVCs, StatefulSet volumeClaimTemplates, ephemeral
//! volume templates) may use only allowed StorageClasses, the tenant default replaces a
//! missing class and the cluster default, and a claim may not bind or select another
//! tenant's PersistentVolumes (README rules 1–11).

pub mod settings;

use policy_admission::Verdict;
use policy_admission::cluster::{Found, GetRequest, HostCapabilities, Lookups, OnLookupError};
use policy_admission::gate::{Gate, HandledKind};
use policy_admission::mutation::{push, set};
use policy_admission::pod::{PodKind, PodView};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError};
use serde_json::{Value, json};
use tenancy_rules::class::{ClassAllowList, ClassFetch, ClassKind, record, skip_on_lookup_error};

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

fn is_cluster_default(class: &Found) -> Result<bool, PolicyError> {
    let annotations = class.annotations()?;
    Ok(DEFAULT_CLASS_ANNOTATIONS
        .iter()
        .any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true")))
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

/// The claim kind handled beside the pod-bearing kinds.
const CLAIM: [HandledKind; 1] = [HandledKind {
    group: "",
    versions: &["v1"],
    kind: "PersistentVolumeClaim",
}];

impl Policy for PersistentVolumeClaimPolicy {
    const NAME: &'static str = "persistent-volume-claim-policy";
    const HOST_CAPABILITIES: HostCapabilities = HostCapabilities::GET_RESOURCE;
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let mut verdict = Verdict::accept();
        if let Some(kind) = PodKind::of_request(request) {
            if let Some(classes) = &settings.storage_classes {
                let on_error = settings.on_lookup_error;
                let templates = TemplateClaims {
                    classes,
                    on_error,
                    lookups,
                };
                templates.judge(request, kind, &mut verdict)?;
            }
            return Ok(verdict);
        }
        let gate = Gate {
            kinds: &CLAIM,
            operations: Self::OPERATIONS,
        };
        let Some(admitted) = gate.admit(Self::NAME, request)? else {
            return Ok(verdict);
        };
        let mut claim = Claim {
            request,
            spec: admitted.spec()?,
            object: admitted.object,
            settings,
            mutated: None,
        };
        claim.judge(lookups, &mut verdict)?;
        Ok(verdict)
    }
}

/// README rule 6: the claim templates of a workload (StatefulSet `volumeClaimTemplates`,
/// ephemeral volumes of the pod spec), judged by rules 1, 4 and 5.
struct TemplateClaims<'a, 'l, 'c> {
    classes: &'a ClassAllowList,
    on_error: OnLookupError,
    lookups: &'l mut Lookups<'c>,
}

impl TemplateClaims<'_, '_, '_> {
    /// Judges the StatefulSet's templates (on UPDATE only when they changed) and the
    /// ephemeral volume claim templates (on UPDATE only when they changed).
    fn judge(
        mut self,
        request: &AdmissionRequest,
        kind: PodKind,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let object = request.object()?;
        let update = request.operation == Operation::Update;
        let templates_judged = !update || changed(request, "/spec/volumeClaimTemplates")?;
        if kind == PodKind::StatefulSet
            && templates_judged
            && let Some(spec) = object.get_object("spec")?
        {
            for template in spec.get_list("volumeClaimTemplates")? {
                template.object()?;
                self.claim(&template, verdict)?;
            }
        }
        let Some(pod) = PodView::read(object.value, kind)? else {
            return Ok(());
        };
        let claims = ephemeral_claims(&pod.spec)?;
        if update && !ephemeral_claims_changed(request, kind, &claims)? {
            return Ok(());
        }
        for claim in claims {
            self.claim(&claim, verdict)?;
        }
        Ok(())
    }

    /// Rules 1, 4 and 5 for one claim template: nil is accepted.
    fn claim(&mut self, base: &At<'_>, verdict: &mut Verdict) -> Result<(), PolicyError> {
        judge_template_claim(base, self.classes, self.on_error, self.lookups, verdict)
    }
}

/// Whether an UPDATE changed the ephemeral volume claim templates of the pod spec (an old
/// object without a readable pod spec has none).
fn ephemeral_claims_changed(
    request: &AdmissionRequest,
    kind: PodKind,
    claims: &[At<'_>],
) -> Result<bool, PolicyError> {
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
    Ok(old_claims != new_claims)
}

/// A PersistentVolumeClaim being judged: storage class rules 1–5, then cross-tenant
/// binding rules 7–10; the edits of both are applied together, only when no rule is
/// violated.
struct Claim<'a> {
    request: &'a AdmissionRequest,
    object: At<'a>,
    spec: At<'a>,
    settings: &'a Settings,
    /// The claim with the edits made so far.
    mutated: Option<Value>,
}

impl Claim<'_> {
    /// Applies every configured rule and, when no rule is violated, the edits.
    fn judge(
        &mut self,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        if let Some(classes) = &self.settings.storage_classes {
            self.judge_class(classes, lookups, verdict)?;
        }
        if let Some(binding) = &self.settings.volume_binding {
            self.judge_binding(binding, lookups, verdict)?;
        }
        if let Some(m) = self.mutated.take()
            && verdict.is_clean()
        {
            verdict.mutate(m);
        }
        Ok(())
    }

    /// The claim with the edits made so far (the request's object before the first).
    fn mutated(&mut self) -> &mut Value {
        let request = self.request;
        self.mutated.get_or_insert_with(|| request.object.clone())
    }

    /// Writes the tenant default class into `spec.storageClassName`.
    fn write_default(&mut self, default: &str) -> Result<(), PolicyError> {
        set(
            self.mutated(),
            &["spec"],
            "storageClassName",
            json!(default),
        )
    }

    /// README rules 1–5: the claim's StorageClass.
    fn judge_class(
        &mut self,
        classes: &ClassAllowList,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let object = self.object.clone();
        let claim = ClaimClass::read(&object)?;
        if self.request.operation == Operation::Update {
            return self.judge_class_update(&claim, classes, lookups, verdict);
        }
        claim.mismatch(verdict);
        let (effective, path) = claim.effective();
        let Some(class) = effective else {
            return self.nil_class(classes, path, verdict);
        };
        let kind = storage_class();
        let mut fetch = ClassFetch::new(&kind, class);
        if self.cluster_default_replaced(&claim, classes, class, &mut fetch, lookups, verdict)? {
            return Ok(());
        }
        // Rules 4 and 5.
        let outcome = classes.judge_with(&kind, class, || fetch.get(lookups));
        record(outcome, path, self.settings.on_lookup_error, verdict)
    }

    /// README rule 5 on UPDATE: judged only when the effective class (or the pair) changed.
    /// Removing the legacy annotation of a claim without field leaves it class-less: nothing
    /// is mutated on UPDATE, and a nil class binds like `""` when no cluster default exists,
    /// so rule 2 refuses it.
    fn judge_class_update(
        &self,
        claim: &ClaimClass<'_>,
        classes: &ClassAllowList,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let old = self.request.old_object()?;
        let before = ClaimClass::read(&old)?;
        if (before.annotation, before.field) == (claim.annotation, claim.field) {
            return Ok(());
        }
        claim.mismatch(verdict);
        match claim.effective() {
            (Some(c), path) => {
                let outcome = classes.judge(&storage_class(), c, lookups);
                record(outcome, path, self.settings.on_lookup_error, verdict)
            }
            (None, path) => {
                verdict.violation(path, class_required(classes));
                Ok(())
            }
        }
    }

    /// README rule 2: a claim created without class gets the tenant default; without a
    /// default it is refused.
    fn nil_class(
        &mut self,
        classes: &ClassAllowList,
        path: &FieldPath,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        match classes.default() {
            Some(d) => self.write_default(d),
            None => {
                verdict.violation(path, class_required(classes));
                Ok(())
            }
        }
    }

    /// README rule 3: the cluster default injected by DefaultStorageClass counts as nil and
    /// is replaced by the tenant default. Returns whether it was.
    fn cluster_default_replaced(
        &mut self,
        claim: &ClaimClass<'_>,
        classes: &ClassAllowList,
        class: &str,
        fetch: &mut ClassFetch<'_>,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<bool, PolicyError> {
        let Some(default) = classes.default() else {
            return Ok(false);
        };
        if claim.annotation.is_some()
            || !self.settings.replace_cluster_default
            || default == class
            || class.is_empty()
        {
            return Ok(false);
        }
        match fetch.read(lookups, is_cluster_default) {
            Ok(Some(true)) => {
                self.write_default(default)?;
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(e) => {
                let path = claim.effective().1;
                skip_on_lookup_error(e, path, self.settings.on_lookup_error, verdict)?;
                Ok(false)
            }
        }
    }

    /// README rules 7–10: no binding to, and no selecting of, another tenant's
    /// PersistentVolumes.
    fn judge_binding(
        &mut self,
        binding: &VolumeBinding,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let spec = self.spec.clone();
        let volume_name = spec.get_str("volumeName")?.filter(|v| !v.is_empty());
        let judge_volume = match volume_name {
            Some(name) => self.volume_judged(name)?,
            None => false,
        };
        let selector = spec.get_object("selector")?;
        let create = self.request.operation == Operation::Create;
        let judge_selector = create && binding.pin_selector && selector.is_some();
        if !judge_volume && !judge_selector {
            return Ok(());
        }
        let Some(tenant) = self.tenant(binding, lookups, verdict)? else {
            return Ok(());
        };
        if judge_volume && let Some(name) = volume_name {
            let path = spec.path.field("volumeName");
            volume_of_tenant(
                name,
                &path,
                &tenant,
                binding,
                self.settings,
                lookups,
                verdict,
            )?;
        }
        if judge_selector && let Some(selector) = selector {
            self.pin_selector(&selector, &tenant, binding, verdict)?;
        }
        Ok(())
    }

    /// README rule 7: `spec.volumeName` is judged on CREATE, and on an UPDATE setting it on
    /// a claim not yet Bound; in an audit, unless the claim is Bound (README rule 11).
    fn volume_judged(&self, name: &str) -> Result<bool, PolicyError> {
        if self.request.is_audit() {
            let object = self.request.object()?;
            let phase = match object.get_object("status")? {
                Some(s) => s.get_str("phase")?,
                None => None,
            };
            return Ok(phase != Some("Bound"));
        }
        if self.request.operation == Operation::Create {
            return Ok(true);
        }
        let old = self.request.old_object()?;
        let old_name = match old.get_object("spec")? {
            Some(s) => s.get_str("volumeName")?,
            None => None,
        };
        let phase = match old.get_object("status")? {
            Some(s) => s.get_str("phase")?,
            None => None,
        };
        Ok(old_name != Some(name) && phase != Some("Bound"))
    }

    /// README rule 8: the claim's tenant, its Namespace's tenant label (`None`: not a
    /// tenant's claim, or a failed lookup skipped by `onLookupError: accept`).
    fn tenant(
        &self,
        binding: &VolumeBinding,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
    ) -> Result<Option<String>, PolicyError> {
        let namespace = self.request.namespace()?;
        let request = GetRequest::cluster_scoped("v1", "Namespace", namespace);
        match lookups.read(&request, |ns| {
            Ok(tenant_label(ns, binding)?.map(str::to_owned))
        }) {
            Err(e) => {
                let on_error = self.settings.on_lookup_error;
                skip_on_lookup_error(e, &FieldPath::empty(), on_error, verdict)?;
                Ok(None)
            }
            Ok(tenant) => Ok(tenant.flatten()),
        }
    }

    /// README rule 10: a term on the tenant label in `spec.selector` must be exactly
    /// "In [tenant]"; a selector without one is pinned to the tenant.
    fn pin_selector(
        &mut self,
        selector: &At<'_>,
        tenant: &str,
        binding: &VolumeBinding,
        verdict: &mut Verdict,
    ) -> Result<(), PolicyError> {
        let key = binding.tenant_label.as_str();
        let by_labels = labels_pin(selector, key, tenant, verdict)?;
        let by_expressions = expressions_pin(selector, key, tenant, verdict)?;
        if !by_labels && !by_expressions {
            push(
                self.mutated(),
                &["spec", "selector"],
                "matchExpressions",
                json!({"key": key, "operator": "In", "values": [tenant]}),
            )?;
        }
        Ok(())
    }
}

/// The refusal of a claim without StorageClass.
fn class_required(classes: &ClassAllowList) -> String {
    format!(
        "a StorageClass is required; allowed: {}",
        classes.describe()
    )
}

/// The value of the tenant label of an object (a Namespace or a PersistentVolume).
fn tenant_label<'v>(
    object: &'v Found,
    binding: &VolumeBinding,
) -> Result<Option<&'v str>, PolicyError> {
    object.label(&binding.tenant_label)
}

/// README rule 9: the PersistentVolume `name` must exist and be labelled for `tenant`
/// (unlabelled volumes only with `allowUnlabelledVolumes`).
fn volume_of_tenant(
    name: &str,
    path: &FieldPath,
    tenant: &str,
    binding: &VolumeBinding,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let request = GetRequest::cluster_scoped("v1", "PersistentVolume", name);
    let label = match lookups.read(&request, |pv| tenant_label(pv, binding)) {
        Err(e) => return skip_on_lookup_error(e, path, settings.on_lookup_error, verdict),
        Ok(None) => {
            verdict.violation(path, format!("PersistentVolume {name:?} does not exist"));
            return Ok(());
        }
        Ok(Some(label)) => label,
    };
    match label {
        Some(t) if t == tenant => {}
        Some(_) => verdict.violation(
            path,
            format!(
                "PersistentVolume {name:?} belongs to another tenant; cross-tenant volume binding is not allowed"
            ),
        ),
        None if binding.allow_unlabelled_volumes => {}
        None => verdict.violation(
            path,
            format!(
                "PersistentVolume {name:?} has no {} label; only volumes labelled for tenant {tenant:?} may be bound",
                binding.tenant_label
            ),
        ),
    }
    Ok(())
}

/// README rule 10, `matchLabels`: the tenant label, when present, must name the tenant.
/// Returns whether it pins the claim to the tenant.
fn labels_pin(
    selector: &At<'_>,
    key: &str,
    tenant: &str,
    verdict: &mut Verdict,
) -> Result<bool, PolicyError> {
    let Some(labels) = selector.get_object("matchLabels")? else {
        return Ok(false);
    };
    let Some(value) = labels.get_str(key)? else {
        return Ok(false);
    };
    if value == tenant {
        return Ok(true);
    }
    verdict.violation(
        &labels.path.key(key),
        format!(
            "{value:?} selects volumes of another tenant; only tenant {tenant:?} may be selected"
        ),
    );
    Ok(false)
}

/// README rule 10, `matchExpressions`: every term on the tenant label must be exactly
/// "In [tenant]". Returns whether one pins the claim to the tenant.
fn expressions_pin(
    selector: &At<'_>,
    key: &str,
    tenant: &str,
    verdict: &mut Verdict,
) -> Result<bool, PolicyError> {
    let mut pinned = false;
    for expression in selector.get_list("matchExpressions")? {
        if expression.get_str("key")? != Some(key) {
            continue;
        }
        let operator = expression.get_str("operator")?.unwrap_or("");
        let values = expression.get_str_list("values")?;
        if operator == "In" && values == [tenant] {
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
    Ok(pinned)
}

policy_admission::export_policy!(PersistentVolumeClaimPolicy);

policy_admission::robustness_tests!(
    PersistentVolumeClaimPolicy,
    policy_admission::testing::Robustness {
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
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};

    fn cluster() -> Objects {
        Objects::new(vec![
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "solar-prod",
                "labels": {"capsule.clastix.io/tenant": "solar"}}}),
        ])
    }

    fn run(spec: Value) -> ValidationResponse {
        run_as(spec, json!({"username": "alice"}), json!({}))
    }

    fn run_as(spec: Value, user: Value, status: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "PersistentVolumeClaim"}, "operation": "CREATE",
                "namespace": "solar-prod", "userInfo": user,
                "object": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                    "spec": spec, "status": status}},
            "settings": {"storageClasses": {"allowed": ["ceph-prod"], "default": "tenant-default"}, "volumeBinding": {}}
        });
        evaluate::<PersistentVolumeClaimPolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut cluster(),
        )
    }

    /// README rule 11: in an audit a Bound claim's volumeName is not judged, a Pending one is.
    #[test]
    fn an_audit_judges_the_volume_of_a_pending_claim_only() {
        let spec = json!({"storageClassName": "ceph-prod", "volumeName": "pv-missing"});
        let bound = run_as(spec.clone(), json!({}), json!({"phase": "Bound"}));
        assert!(bound.accepted, "{:?}", bound.message);
        let pending = run_as(spec.clone(), json!({}), json!({"phase": "Pending"}));
        assert!(!pending.accepted);
        let created = run_as(
            spec,
            json!({"username": "alice"}),
            json!({"phase": "Bound"}),
        );
        assert!(
            !created.accepted,
            "a user's CREATE is judged whatever its status says"
        );
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
