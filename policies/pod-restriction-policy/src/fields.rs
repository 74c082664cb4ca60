//! The field restrictions of a PodRestriction (SPEC 3.21 "Fields"): settings that mirror the
//! Pod's structure — ObjectMeta, PodSpec, PodSecurityContext, Container, Image,
//! SecurityContext and Volume — built on the core's primitives, and their evaluation
//! against one pod template.
//!
//! Every field is unrestricted when its setting is absent. Violations are collected, not
//! returned early, so one rejection lists them all.

use std::collections::HashMap;

use policy_core::image::ImageRef;
use policy_core::json::At;
use policy_core::pod::ContainerList;
use policy_core::restriction::{
    AnyOf, BoolRestriction, CollectionRestriction, NumericRestriction, OneOrList,
    PointerRestriction, RawBool, RawCollection, RawNumeric, RawPointer, RawString, RawStringList,
    RawStringMap, Restriction, StringListRestriction, StringMapRestriction, StringMatch,
    StringRestriction,
};
use policy_core::security_context::{effective, volume_sources};
use policy_core::verdict::distinct;
use policy_core::{FieldPath, PolicyError, SettingsError, Violation};
use serde::Deserialize;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// The judged object
// ---------------------------------------------------------------------------------------

/// One pod template (or a Pod's own metadata and spec) with its message paths.
#[derive(Clone, Debug)]
pub struct Template<'a> {
    /// The pod metadata, if present.
    pub metadata: Option<At<'a>>,
    /// Where the metadata is (or would be).
    pub metadata_path: FieldPath,
    /// The pod spec.
    pub spec: At<'a>,
    /// Whether this is a template (its `name` is nil, SPEC 3.21).
    pub is_template: bool,
}

impl<'a> Template<'a> {
    /// Reads a `{metadata, spec}` template found at `path` (custom resources); a non-object
    /// or a template without `spec` is malformed (400).
    pub fn read(value: &'a Value, path: FieldPath) -> Result<Template<'a>, PolicyError> {
        let at = At::new(value, path);
        at.object()?;
        let metadata = at.get_object("metadata")?;
        let spec = at
            .get_object("spec")?
            .ok_or_else(|| PolicyError::malformed(&at.path.field("spec"), "missing"))?;
        Ok(Template {
            metadata,
            metadata_path: at.path.field("metadata"),
            spec,
            is_template: true,
        })
    }
}

/// The value of field `name` of `at` (absent when `at` is absent) and its path.
fn field<'a>(at: Option<&At<'a>>, base: &FieldPath, name: &str) -> (Option<&'a Value>, FieldPath) {
    let value = at.and_then(|a| a.value.get(name)).filter(|v| !v.is_null());
    (value, base.field(name))
}

/// Runs `r` (when set) on field `name` of `at`.
fn check_field(
    r: Option<&impl Restriction>,
    at: Option<&At<'_>>,
    base: &FieldPath,
    name: &str,
    out: &mut Vec<Violation>,
) -> Result<(), PolicyError> {
    if let Some(r) = r {
        let (value, path) = field(at, base, name);
        r.check(value, &path, out)?;
    }
    Ok(())
}

/// Runs a typed check into a scratch list and prefixes every problem with `label`.
fn labelled(label: &str, out: &mut Vec<Violation>, check: impl FnOnce(&mut Vec<Violation>)) {
    let mut scratch = Vec::new();
    check(&mut scratch);
    out.extend(scratch.into_iter().map(|v| Violation {
        path: v.path,
        problem: format!("{label} {}", v.problem),
    }));
}

/// Builds an optional setting, placing errors below `name`.
fn opt<R, T>(
    raw: Option<R>,
    name: &str,
    build: impl FnOnce(R) -> Result<T, SettingsError>,
) -> Result<Option<T>, SettingsError> {
    raw.map(build).transpose().map_err(|e| e.under(name))
}

/// Builds a list of optional named settings, placing errors below each name.
fn named<R, T>(
    raw: Vec<(&'static str, Option<R>)>,
    build: impl Fn(R) -> Result<T, SettingsError>,
) -> Result<Vec<(&'static str, T)>, SettingsError> {
    raw.into_iter()
        .filter_map(|(name, r)| r.map(|r| (name, r)))
        .map(|(name, r)| build(r).map(|t| (name, t)).map_err(|e| e.under(name)))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Raw settings
// ---------------------------------------------------------------------------------------

/// `restrictions[].spec`: `{metadata, spec}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawRestrictionSpec {
    /// ObjectMeta restriction.
    pub metadata: Option<Box<RawObjectMeta>>,
    /// PodSpec restriction.
    pub spec: Option<Box<RawPodSpec>>,
}

/// ObjectMeta restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawObjectMeta {
    /// `metadata.name` (nil in templates).
    pub name: Option<RawString>,
    /// `metadata.labels`.
    pub labels: Option<RawStringMap>,
    /// `metadata.annotations`.
    pub annotations: Option<RawStringMap>,
}

/// PodSpec restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPodSpec {
    /// Volume restrictions (any-of per volume; collection flags on the whole list).
    pub volumes: Option<OneOrList<RawVolume>>,
    /// Container restrictions (any-of per container).
    pub containers: Option<OneOrList<RawContainer>>,
    /// Init container restrictions; absent = `containers` applies.
    pub init_containers: Option<OneOrList<RawContainer>>,
    /// Ephemeral container restrictions; absent = `containers` applies.
    pub ephemeral_containers: Option<OneOrList<RawContainer>>,
    /// `restartPolicy`.
    pub restart_policy: Option<RawString>,
    /// `dnsPolicy`.
    pub dns_policy: Option<RawString>,
    /// `serviceAccountName` (the deprecated `serviceAccount` when it is absent).
    pub service_account_name: Option<RawString>,
    /// `schedulerName`.
    pub scheduler_name: Option<RawString>,
    /// `priorityClassName`.
    pub priority_class_name: Option<RawString>,
    /// `runtimeClassName`.
    pub runtime_class_name: Option<RawString>,
    /// `terminationGracePeriodSeconds`.
    pub termination_grace_period_seconds: Option<RawNumeric>,
    /// `activeDeadlineSeconds`.
    pub active_deadline_seconds: Option<RawNumeric>,
    /// `nodeSelector`.
    pub node_selector: Option<RawStringMap>,
    /// `automountServiceAccountToken`.
    pub automount_service_account_token: Option<RawBool>,
    /// PodSecurityContext restriction.
    pub security_context: Option<Box<RawPodSecurityContext>>,
}

/// PodSecurityContext restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPodSecurityContext {
    /// `spec.hostNetwork`.
    pub host_network: Option<RawBool>,
    /// `spec.hostPID`.
    #[serde(rename = "hostPID", alias = "hostPid")]
    pub host_pid: Option<RawBool>,
    /// `spec.hostIPC`.
    #[serde(rename = "hostIPC", alias = "hostIpc")]
    pub host_ipc: Option<RawBool>,
    /// `spec.shareProcessNamespace`.
    pub share_process_namespace: Option<RawBool>,
    /// Each element of `spec.securityContext.supplementalGroups`.
    pub supplemental_groups: Option<RawNumeric>,
    /// `spec.securityContext.fsGroup`.
    pub fs_group: Option<RawNumeric>,
    /// `spec.securityContext.seccompProfile.type`.
    pub seccomp_profile_type: Option<RawString>,
}

/// Container restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawContainer {
    /// `name`.
    pub name: Option<RawString>,
    /// Image restrictions (any-of).
    pub image: Option<OneOrList<RawImage>>,
    /// The effective `imagePullPolicy`.
    pub image_pull_policy: Option<RawString>,
    /// SecurityContext restriction.
    pub security_context: Option<Box<RawSecurityContext>>,
}

/// Image restriction settings (parts of the parsed reference).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawImage {
    /// Registry host (case-insensitive; `docker.io` for Docker Hub).
    pub registry: Option<RawString>,
    /// Normalised repository (`library/nginx`).
    pub image: Option<RawString>,
    /// Tag (nil when absent).
    pub tag: Option<RawString>,
    /// Digest (`sha256:…`, nil when absent).
    pub digest: Option<RawString>,
}

/// SecurityContext restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSecurityContext {
    /// `capabilities`.
    pub capabilities: Option<Box<RawCapabilities>>,
    /// `privileged`.
    pub privileged: Option<RawBool>,
    /// Effective `runAsNonRoot`.
    pub run_as_non_root: Option<RawBool>,
    /// `readOnlyRootFilesystem`.
    pub read_only_root_filesystem: Option<RawBool>,
    /// `allowPrivilegeEscalation`.
    pub allow_privilege_escalation: Option<RawBool>,
    /// Effective `seLinuxOptions`.
    #[serde(rename = "seLinuxOptions")]
    pub se_linux_options: Option<Box<RawSeLinux>>,
    /// Effective `runAsUser`.
    pub run_as_user: Option<RawNumeric>,
    /// Effective `runAsGroup`.
    pub run_as_group: Option<RawNumeric>,
    /// Effective `seccompProfile.type`.
    pub seccomp_profile_type: Option<RawString>,
}

/// `capabilities`: pointer + `add`, `drop`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawCapabilities {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// `capabilities.add`.
    pub add: Option<RawStringList>,
    /// `capabilities.drop`.
    pub drop: Option<RawStringList>,
}

/// `seLinuxOptions`: pointer + `user`, `role`, `type`, `level`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSeLinux {
    /// A nil value is a violation.
    pub forbid_nil: Option<bool>,
    /// A non-nil value is a violation.
    pub require_nil: Option<bool>,
    /// Negation of `forbidNil`.
    pub allow_nil: Option<bool>,
    /// `user`.
    pub user: Option<RawString>,
    /// `role`.
    pub role: Option<RawString>,
    /// `type`.
    #[serde(rename = "type")]
    pub type_: Option<RawString>,
    /// `level`.
    pub level: Option<RawString>,
}

/// Volume restriction settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawVolume {
    /// The whole `volumes` list must be non-empty.
    pub forbid_empty: Option<bool>,
    /// The whole `volumes` list must be empty.
    pub require_empty: Option<bool>,
    /// The volume source (the Pod JSON key; no source = `emptyDir`).
    pub volume_type: Option<RawString>,
    /// `hostPath` fields.
    pub host_path: Option<Box<RawHostPath>>,
    /// Every mount of the volume.
    pub mount: Option<Box<RawMount>>,
}

/// `hostPath: {path, type}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawHostPath {
    /// `hostPath.path`: whitelist/blacklist entries are path prefixes.
    pub path: Option<RawString>,
    /// `hostPath.type`.
    #[serde(rename = "type")]
    pub type_: Option<RawString>,
}

/// `mount: {readOnly, mountPropagation}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawMount {
    /// `volumeMounts[].readOnly`.
    pub read_only: Option<RawBool>,
    /// `volumeMounts[].mountPropagation`.
    pub mount_propagation: Option<RawString>,
}

fn pointer(
    forbid_nil: Option<bool>,
    require_nil: Option<bool>,
    allow_nil: Option<bool>,
) -> RawPointer {
    RawPointer {
        forbid_nil,
        require_nil,
        allow_nil,
    }
}

// ---------------------------------------------------------------------------------------
// Validated restrictions
// ---------------------------------------------------------------------------------------

/// A validated `{metadata, spec}` restriction.
#[derive(Debug, Clone, Default)]
pub struct RestrictionSpec {
    metadata: ObjectMetaRestriction,
    spec: PodSpecRestriction,
}

impl RestrictionSpec {
    /// Validates the settings; errors name the settings path below `spec`.
    pub fn build(raw: RawRestrictionSpec) -> Result<RestrictionSpec, SettingsError> {
        Ok(RestrictionSpec {
            metadata: opt(
                raw.metadata.map(|b| *b),
                "metadata",
                ObjectMetaRestriction::build,
            )?
            .unwrap_or_default(),
            spec: opt(raw.spec.map(|b| *b), "spec", PodSpecRestriction::build)?.unwrap_or_default(),
        })
    }

    /// Judges one template, appending its violations, each once (one hash set: a 1 MiB
    /// object can break a rule thousands of times).
    pub fn check(&self, t: &Template<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        let mut found = Vec::new();
        self.metadata.check(t, &mut found)?;
        self.spec.check(&t.spec, &mut found)?;
        out.extend(distinct(found));
        Ok(())
    }
}

/// ObjectMeta restriction.
#[derive(Debug, Clone, Default)]
struct ObjectMetaRestriction {
    name: Option<StringRestriction>,
    labels: Option<StringMapRestriction>,
    annotations: Option<StringMapRestriction>,
}

impl ObjectMetaRestriction {
    fn build(raw: RawObjectMeta) -> Result<Self, SettingsError> {
        Ok(ObjectMetaRestriction {
            name: opt(raw.name, "name", StringRestriction::build)?,
            labels: opt(raw.labels, "labels", StringMapRestriction::build)?,
            annotations: opt(raw.annotations, "annotations", StringMapRestriction::build)?,
        })
    }

    fn check(&self, t: &Template<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        let meta = t.metadata.as_ref();
        if let Some(r) = &self.name {
            let (value, path) = field(meta, &t.metadata_path, "name");
            r.check(if t.is_template { None } else { value }, &path, out)?;
        }
        check_field(self.labels.as_ref(), meta, &t.metadata_path, "labels", out)?;
        check_field(
            self.annotations.as_ref(),
            meta,
            &t.metadata_path,
            "annotations",
            out,
        )
    }
}

/// PodSpec restriction.
#[derive(Debug, Clone, Default)]
struct PodSpecRestriction {
    strings: Vec<(&'static str, StringRestriction)>,
    numbers: Vec<(&'static str, NumericRestriction)>,
    node_selector: Option<StringMapRestriction>,
    automount: Option<BoolRestriction>,
    security_context: Option<PodSecurityContextRestriction>,
    volumes: VolumeAlternatives,
    containers: AnyOf<ContainerRestriction>,
    init_containers: Option<AnyOf<ContainerRestriction>>,
    ephemeral_containers: Option<AnyOf<ContainerRestriction>>,
}

impl PodSpecRestriction {
    fn build(raw: RawPodSpec) -> Result<Self, SettingsError> {
        let containers = |raw: Option<OneOrList<RawContainer>>, name: &str| {
            AnyOf::build(raw, ContainerRestriction::build).map_err(|e| e.under(name))
        };
        let init = raw.init_containers.map(Some);
        let ephemeral = raw.ephemeral_containers.map(Some);
        Ok(PodSpecRestriction {
            strings: named(
                vec![
                    ("restartPolicy", raw.restart_policy),
                    ("dnsPolicy", raw.dns_policy),
                    ("serviceAccountName", raw.service_account_name),
                    ("schedulerName", raw.scheduler_name),
                    ("priorityClassName", raw.priority_class_name),
                    ("runtimeClassName", raw.runtime_class_name),
                ],
                StringRestriction::build,
            )?,
            numbers: named(
                vec![
                    (
                        "terminationGracePeriodSeconds",
                        raw.termination_grace_period_seconds,
                    ),
                    ("activeDeadlineSeconds", raw.active_deadline_seconds),
                ],
                NumericRestriction::build,
            )?,
            node_selector: opt(
                raw.node_selector,
                "nodeSelector",
                StringMapRestriction::build,
            )?,
            automount: opt(
                raw.automount_service_account_token,
                "automountServiceAccountToken",
                BoolRestriction::build,
            )?,
            security_context: opt(
                raw.security_context.map(|b| *b),
                "securityContext",
                PodSecurityContextRestriction::build,
            )?,
            volumes: volume_alternatives(
                AnyOf::build(raw.volumes, VolumeRestriction::build)
                    .map_err(|e| e.under("volumes"))?,
            ),
            containers: containers(raw.containers, "containers")?,
            init_containers: init.map(|r| containers(r, "initContainers")).transpose()?,
            ephemeral_containers: ephemeral
                .map(|r| containers(r, "ephemeralContainers"))
                .transpose()?,
        })
    }

    fn check(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        let base = &spec.path;
        for (name, r) in &self.strings {
            let (mut value, mut path) = field(Some(spec), base, name);
            if *name == "serviceAccountName" && value.is_none() {
                // The deprecated alias, when only it is set.
                (value, path) = field(Some(spec), base, "serviceAccount");
                if value.is_none() {
                    path = base.field(name);
                }
            }
            r.check(value, &path, out)?;
        }
        for (name, r) in &self.numbers {
            check_field(Some(r), Some(spec), base, name, out)?;
        }
        check_field(
            self.node_selector.as_ref(),
            Some(spec),
            base,
            "nodeSelector",
            out,
        )?;
        check_field(
            self.automount.as_ref(),
            Some(spec),
            base,
            "automountServiceAccountToken",
            out,
        )?;
        if let Some(r) = &self.security_context {
            r.check(spec, out)?;
        }
        self.check_volumes(spec, out)?;
        let pod_context = spec.get_object("securityContext")?;
        for list in ContainerList::ALL {
            let restriction = match list {
                ContainerList::Regular => &self.containers,
                ContainerList::Init => self.init_containers.as_ref().unwrap_or(&self.containers),
                ContainerList::Ephemeral => self
                    .ephemeral_containers
                    .as_ref()
                    .unwrap_or(&self.containers),
            };
            if restriction.is_unrestricted() {
                continue;
            }
            for container in spec.get_list(list.field())? {
                container.object()?;
                restriction.check_with(out, |alternative, scratch| {
                    alternative.check(&container, pod_context.as_ref(), scratch)
                })?;
            }
        }
        self.check_image_volumes(spec, out)
    }

    /// Image volumes (`volumes[].image.reference`) are images of the Pod (README rule on
    /// images): each is judged by the image restrictions of the `containers` list, as if it
    /// were the image of a container, so that a registry whitelist cannot be sidestepped by
    /// mounting an image instead of running it.
    fn check_image_volumes(
        &self,
        spec: &At<'_>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        if self.containers.is_unrestricted() {
            return Ok(());
        }
        for volume in spec.get_list("volumes")? {
            let Some(image) = volume.get_object("image")? else {
                continue;
            };
            let reference = image.get_str("reference")?;
            let path = image.path.field("reference");
            self.containers.check_with(out, |alternative, scratch| {
                alternative.check_image(reference, &path, scratch)
            })?;
        }
        Ok(())
    }

    fn check_volumes(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        if self.volumes.is_unrestricted() {
            return Ok(());
        }
        let (list, list_path) = field(Some(spec), &spec.path, "volumes");
        for flags in &self.volumes.flags {
            flags.check(list, &list_path, out)?;
        }
        let volumes = spec.get_list("volumes")?;
        if volumes.is_empty() || self.volumes.elements.is_unrestricted() {
            return Ok(());
        }
        // The mounts grouped by volume name once: no scan of every mount for every volume.
        let mounts = volume_mounts(spec)?;
        let mut by_name: HashMap<&str, Vec<&At<'_>>> = HashMap::new();
        for (n, m) in &mounts {
            by_name.entry(n).or_default().push(m);
        }
        for volume in volumes {
            volume.object()?;
            let name = volume.get_str("name")?;
            let mounted: &[&At<'_>] = name.and_then(|n| by_name.get(n)).map_or(&[], Vec::as_slice);
            self.volumes
                .elements
                .check_with(out, |alternative, scratch| {
                    alternative.check(&volume, mounted, scratch)
                })?;
        }
        Ok(())
    }
}

/// The `volumes` setting split into the collection flags of every alternative (judged on
/// the whole list, ANDed) and the alternatives each volume must satisfy one of.
#[derive(Debug, Clone, Default)]
struct VolumeAlternatives {
    flags: Vec<CollectionRestriction>,
    elements: AnyOf<VolumeRestriction>,
}

impl VolumeAlternatives {
    fn is_unrestricted(&self) -> bool {
        self.flags.is_empty() && self.elements.is_unrestricted()
    }
}

/// Splits the volume alternatives. An alternative that sets only `forbidEmpty` /
/// `requireEmpty` restricts the list, not its elements: it does not count as an alternative
/// every volume satisfies (otherwise `[{volumeType: {whitelist: [secret]}}, {forbidEmpty:
/// true}]` would admit any volume). An explicit `{}` still admits every volume.
fn volume_alternatives(all: AnyOf<VolumeRestriction>) -> VolumeAlternatives {
    let unrestricted = CollectionRestriction::default();
    let mut flags = Vec::new();
    let mut elements = Vec::new();
    for alternative in all.alternatives() {
        if alternative.collection != unrestricted {
            flags.push(alternative.collection.clone());
        }
        if !(alternative.collection != unrestricted && alternative.restricts_no_element()) {
            elements.push(alternative.clone());
        }
    }
    VolumeAlternatives {
        flags,
        elements: AnyOf::new(elements),
    }
}

/// Every `volumeMounts[]` entry of every container, with the volume name it mounts.
fn volume_mounts<'a>(spec: &At<'a>) -> Result<Vec<(&'a str, At<'a>)>, PolicyError> {
    let mut out = Vec::new();
    for list in ContainerList::ALL {
        for container in spec.get_list(list.field())? {
            for mount in container.get_list("volumeMounts")? {
                if let Some(name) = mount.get_str("name")? {
                    out.push((name, mount));
                }
            }
        }
    }
    Ok(out)
}

/// PodSecurityContext restriction (fields of the pod spec and of `spec.securityContext`).
#[derive(Debug, Clone, Default)]
struct PodSecurityContextRestriction {
    /// Booleans kept by Kubernetes in the pod spec itself.
    host: Vec<(&'static str, BoolRestriction)>,
    supplemental_groups: Option<NumericRestriction>,
    fs_group: Option<NumericRestriction>,
    seccomp_profile_type: Option<StringRestriction>,
}

impl PodSecurityContextRestriction {
    fn build(raw: RawPodSecurityContext) -> Result<Self, SettingsError> {
        Ok(PodSecurityContextRestriction {
            host: named(
                vec![
                    ("hostNetwork", raw.host_network),
                    ("hostPID", raw.host_pid),
                    ("hostIPC", raw.host_ipc),
                    ("shareProcessNamespace", raw.share_process_namespace),
                ],
                BoolRestriction::build,
            )?,
            supplemental_groups: opt(
                raw.supplemental_groups,
                "supplementalGroups",
                NumericRestriction::build,
            )?,
            fs_group: opt(raw.fs_group, "fsGroup", NumericRestriction::build)?,
            seccomp_profile_type: opt(
                raw.seccomp_profile_type,
                "seccompProfileType",
                StringRestriction::build,
            )?,
        })
    }

    fn check(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        for (name, r) in &self.host {
            check_field(Some(r), Some(spec), &spec.path, name, out)?;
        }
        let ctx = spec.get_object("securityContext")?;
        let base = spec.path.field("securityContext");
        if let Some(r) = &self.supplemental_groups {
            let groups = match &ctx {
                Some(c) => c.get_list("supplementalGroups")?,
                None => Vec::new(),
            };
            if groups.is_empty() {
                r.check(None, &base.field("supplementalGroups"), out)?;
            }
            for g in groups {
                r.check(Some(g.value), &g.path, out)?;
            }
        }
        check_field(self.fs_group.as_ref(), ctx.as_ref(), &base, "fsGroup", out)?;
        if let Some(r) = &self.seccomp_profile_type {
            let profile = match &ctx {
                Some(c) => c.get_object("seccompProfile")?,
                None => None,
            };
            check_field(
                Some(r),
                profile.as_ref(),
                &base.field("seccompProfile"),
                "type",
                out,
            )?;
        }
        Ok(())
    }
}

/// Container restriction.
#[derive(Debug, Clone, Default)]
struct ContainerRestriction {
    name: Option<StringRestriction>,
    image: AnyOf<ImageRestriction>,
    image_pull_policy: Option<StringRestriction>,
    security_context: Option<SecurityContextRestriction>,
}

impl ContainerRestriction {
    fn build(raw: RawContainer) -> Result<Self, SettingsError> {
        Ok(ContainerRestriction {
            name: opt(raw.name, "name", StringRestriction::build)?,
            image: AnyOf::build(raw.image, ImageRestriction::build)
                .map_err(|e| e.under("image"))?,
            image_pull_policy: opt(
                raw.image_pull_policy,
                "imagePullPolicy",
                StringRestriction::build,
            )?,
            security_context: opt(
                raw.security_context.map(|b| *b),
                "securityContext",
                SecurityContextRestriction::build,
            )?,
        })
    }

    fn check(
        &self,
        c: &At<'_>,
        pod_context: Option<&At<'_>>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        check_field(self.name.as_ref(), Some(c), &c.path, "name", out)?;
        let image = c.get_str("image")?;
        self.check_image(image, &c.path.field("image"), out)?;
        if let Some(r) = &self.image_pull_policy {
            let path = c.path.field("imagePullPolicy");
            match c.get_str("imagePullPolicy")? {
                Some(policy) => r.check_str(Some(policy), &path, out),
                None => {
                    let defaulted = default_pull_policy(image);
                    let mut scratch = Vec::new();
                    r.check_str(defaulted, &path, &mut scratch);
                    out.extend(scratch.into_iter().map(|v| Violation {
                        path: v.path,
                        problem: format!("{} (defaulted from the image tag)", v.problem),
                    }));
                }
            }
        }
        if let Some(r) = &self.security_context {
            r.check(c, pod_context, out)?;
        }
        Ok(())
    }
}

impl ContainerRestriction {
    /// Judges an image reference found at `path` (a container's `image`, or an image
    /// volume's `reference`) against the image restrictions; `None` = no image.
    fn check_image(
        &self,
        image: Option<&str>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        if self.image.is_unrestricted() {
            return Ok(());
        }
        match image.map(ImageRef::parse).transpose() {
            Err(e) => out.push(Violation {
                path: path.clone(),
                problem: e.to_string(),
            }),
            Ok(parsed) => {
                self.image.check_with(out, |alternative, scratch| {
                    alternative.check(parsed.as_ref(), path, scratch);
                    Ok(())
                })?;
            }
        }
        Ok(())
    }
}

/// The pull policy Kubernetes defaults for `image` when the field is unset (SPEC 3.10):
/// `Always` when the tag is `latest` or there is neither tag nor digest, else
/// `IfNotPresent`. `None` when there is no parseable image.
pub fn default_pull_policy(image: Option<&str>) -> Option<&'static str> {
    let parsed = ImageRef::parse(image?).ok()?;
    match (parsed.tag.as_deref(), parsed.digest.is_some()) {
        (Some("latest"), _) | (None, false) => Some("Always"),
        _ => Some("IfNotPresent"),
    }
}

/// Image restriction (parts of the parsed reference).
#[derive(Debug, Clone, Default)]
struct ImageRestriction {
    registry: Option<StringRestriction>,
    image: Option<StringRestriction>,
    tag: Option<StringRestriction>,
    digest: Option<StringRestriction>,
}

impl ImageRestriction {
    fn build(raw: RawImage) -> Result<Self, SettingsError> {
        Ok(ImageRestriction {
            registry: opt(raw.registry, "registry", |r| {
                StringRestriction::build_with(r, StringMatch::CaseInsensitive)
            })?,
            image: opt(raw.image, "image", StringRestriction::build)?,
            tag: opt(raw.tag, "tag", StringRestriction::build)?,
            digest: opt(raw.digest, "digest", StringRestriction::build)?,
        })
    }

    /// Judges the parsed image (`None` when the container has no image: every part nil).
    fn check(&self, image: Option<&ImageRef>, path: &FieldPath, out: &mut Vec<Violation>) {
        let parts = [
            (
                "registry",
                &self.registry,
                image.map(|i| i.registry.as_str()),
            ),
            (
                "repository",
                &self.image,
                image.map(|i| i.repository.as_str()),
            ),
            ("tag", &self.tag, image.and_then(|i| i.tag.as_deref())),
            (
                "digest",
                &self.digest,
                image.and_then(|i| i.digest.as_deref()),
            ),
        ];
        for (label, r, value) in parts {
            if let Some(r) = r {
                labelled(label, out, |scratch| r.check_str(value, path, scratch));
            }
        }
    }
}

/// SecurityContext restriction of a container.
#[derive(Debug, Clone, Default)]
struct SecurityContextRestriction {
    capabilities: Option<CapabilitiesRestriction>,
    /// Boolean fields; `runAsNonRoot` is judged by its effective value.
    bools: Vec<(&'static str, BoolRestriction)>,
    se_linux: Option<SeLinuxRestriction>,
    numbers: Vec<(&'static str, NumericRestriction)>,
    seccomp_profile_type: Option<StringRestriction>,
}

/// Fields judged by their effective value (container, else Pod).
const EFFECTIVE: [&str; 4] = ["runAsNonRoot", "runAsUser", "runAsGroup", "seLinuxOptions"];
// (`seccompProfile` is the fifth, read through its `type` below.)

impl SecurityContextRestriction {
    fn build(raw: RawSecurityContext) -> Result<Self, SettingsError> {
        Ok(SecurityContextRestriction {
            capabilities: opt(
                raw.capabilities.map(|b| *b),
                "capabilities",
                CapabilitiesRestriction::build,
            )?,
            bools: named(
                vec![
                    ("privileged", raw.privileged),
                    ("runAsNonRoot", raw.run_as_non_root),
                    ("readOnlyRootFilesystem", raw.read_only_root_filesystem),
                    ("allowPrivilegeEscalation", raw.allow_privilege_escalation),
                ],
                BoolRestriction::build,
            )?,
            se_linux: opt(
                raw.se_linux_options.map(|b| *b),
                "seLinuxOptions",
                SeLinuxRestriction::build,
            )?,
            numbers: named(
                vec![
                    ("runAsUser", raw.run_as_user),
                    ("runAsGroup", raw.run_as_group),
                ],
                NumericRestriction::build,
            )?,
            seccomp_profile_type: opt(
                raw.seccomp_profile_type,
                "seccompProfileType",
                StringRestriction::build,
            )?,
        })
    }

    fn check(
        &self,
        c: &At<'_>,
        pod_context: Option<&At<'_>>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        let own = c.get_object("securityContext")?;
        let base = c.path.field("securityContext");
        // The value of `name` as it applies to the container, with the path where it is
        // written (the container's path when it is nil).
        let value_of = |name: &str| -> Result<(Option<&Value>, FieldPath), PolicyError> {
            if EFFECTIVE.contains(&name) {
                if let Some(e) = effective(own.as_ref(), pod_context, name)? {
                    return Ok((Some(e.value), e.path));
                }
                return Ok((None, base.field(name)));
            }
            Ok(field(own.as_ref(), &base, name))
        };
        if let Some(r) = &self.capabilities {
            let (value, path) = value_of("capabilities")?;
            r.check(value, &path, out)?;
        }
        for (name, r) in &self.bools {
            let (value, path) = value_of(name)?;
            r.check(value, &path, out)?;
        }
        if let Some(r) = &self.se_linux {
            let (value, path) = value_of("seLinuxOptions")?;
            r.check(value, &path, out)?;
        }
        for (name, r) in &self.numbers {
            let (value, path) = value_of(name)?;
            r.check(value, &path, out)?;
        }
        if let Some(r) = &self.seccomp_profile_type {
            let (profile, path) = match effective(own.as_ref(), pod_context, "seccompProfile")? {
                Some(e) => (Some(At::new(e.value, e.path.clone())), e.path),
                None => (None, base.field("seccompProfile")),
            };
            if let Some(p) = &profile {
                p.object()?;
            }
            check_field(Some(r), profile.as_ref(), &path, "type", out)?;
        }
        Ok(())
    }
}

/// `capabilities`: pointer + `add`/`drop` lists.
#[derive(Debug, Clone, Default)]
struct CapabilitiesRestriction {
    pointer: PointerRestriction,
    add: Option<StringListRestriction>,
    drop: Option<StringListRestriction>,
}

impl CapabilitiesRestriction {
    fn build(raw: RawCapabilities) -> Result<Self, SettingsError> {
        Ok(CapabilitiesRestriction {
            pointer: PointerRestriction::build(pointer(
                raw.forbid_nil,
                raw.require_nil,
                raw.allow_nil,
            ))?,
            add: opt(raw.add, "add", StringListRestriction::build)?,
            drop: opt(raw.drop, "drop", StringListRestriction::build)?,
        })
    }
}

impl Restriction for CapabilitiesRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.pointer.check(value, path, out)?;
        let at = value.map(|v| At::new(v, path.clone()));
        if let Some(a) = &at {
            a.object()?;
        }
        check_field(self.add.as_ref(), at.as_ref(), path, "add", out)?;
        check_field(self.drop.as_ref(), at.as_ref(), path, "drop", out)
    }
}

/// `seLinuxOptions`: pointer + four strings.
#[derive(Debug, Clone, Default)]
struct SeLinuxRestriction {
    pointer: PointerRestriction,
    parts: Vec<(&'static str, StringRestriction)>,
}

impl SeLinuxRestriction {
    fn build(raw: RawSeLinux) -> Result<Self, SettingsError> {
        Ok(SeLinuxRestriction {
            pointer: PointerRestriction::build(pointer(
                raw.forbid_nil,
                raw.require_nil,
                raw.allow_nil,
            ))?,
            parts: named(
                vec![
                    ("user", raw.user),
                    ("role", raw.role),
                    ("type", raw.type_),
                    ("level", raw.level),
                ],
                StringRestriction::build,
            )?,
        })
    }
}

impl Restriction for SeLinuxRestriction {
    fn check(
        &self,
        value: Option<&Value>,
        path: &FieldPath,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        self.pointer.check(value, path, out)?;
        let at = value.map(|v| At::new(v, path.clone()));
        if let Some(a) = &at {
            a.object()?;
        }
        for (name, r) in &self.parts {
            check_field(Some(r), at.as_ref(), path, name, out)?;
        }
        Ok(())
    }
}

/// Volume restriction.
#[derive(Debug, Clone, Default)]
struct VolumeRestriction {
    collection: CollectionRestriction,
    volume_type: Option<StringRestriction>,
    host_path: Option<StringRestriction>,
    host_path_type: Option<StringRestriction>,
    read_only: Option<BoolRestriction>,
    mount_propagation: Option<StringRestriction>,
}

impl VolumeRestriction {
    fn build(raw: RawVolume) -> Result<Self, SettingsError> {
        let host = raw.host_path.map(|b| *b).unwrap_or_default();
        let mount = raw.mount.map(|b| *b).unwrap_or_default();
        let under = |e: SettingsError, a: &str| e.under(a);
        Ok(VolumeRestriction {
            collection: CollectionRestriction::build(RawCollection {
                forbid_empty: raw.forbid_empty,
                require_empty: raw.require_empty,
            })?,
            volume_type: opt(raw.volume_type, "volumeType", StringRestriction::build)?,
            host_path: opt(host.path, "path", |r| {
                StringRestriction::build_with(r, StringMatch::PathPrefix)
            })
            .map_err(|e| under(e, "hostPath"))?,
            host_path_type: opt(host.type_, "type", StringRestriction::build)
                .map_err(|e| under(e, "hostPath"))?,
            read_only: opt(mount.read_only, "readOnly", BoolRestriction::build)
                .map_err(|e| under(e, "mount"))?,
            mount_propagation: opt(
                mount.mount_propagation,
                "mountPropagation",
                StringRestriction::build,
            )
            .map_err(|e| under(e, "mount"))?,
        })
    }

    /// Whether no field of a single volume (or its mounts) is restricted.
    fn restricts_no_element(&self) -> bool {
        self.volume_type.is_none()
            && self.host_path.is_none()
            && self.host_path_type.is_none()
            && self.read_only.is_none()
            && self.mount_propagation.is_none()
    }

    /// Judges one volume and its mounts (the collection flags are judged on the list).
    fn check(
        &self,
        volume: &At<'_>,
        mounts: &[&At<'_>],
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        if let Some(r) = &self.volume_type {
            for ty in volume_sources(volume)? {
                labelled("volume type", out, |scratch| {
                    r.check_str(Some(ty), &volume.path, scratch)
                });
            }
        }
        if self.host_path.is_some() || self.host_path_type.is_some() {
            let host = volume.get_object("hostPath")?;
            let base = volume.path.field("hostPath");
            check_field(self.host_path.as_ref(), host.as_ref(), &base, "path", out)?;
            check_field(
                self.host_path_type.as_ref(),
                host.as_ref(),
                &base,
                "type",
                out,
            )?;
        }
        for mount in mounts {
            check_field(
                self.read_only.as_ref(),
                Some(mount),
                &mount.path,
                "readOnly",
                out,
            )?;
            check_field(
                self.mount_propagation.as_ref(),
                Some(mount),
                &mount.path,
                "mountPropagation",
                out,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn spec(settings: Value) -> RestrictionSpec {
        let raw: RawRestrictionSpec = serde_json::from_value(settings).unwrap();
        RestrictionSpec::build(raw).unwrap()
    }

    fn run(settings: Value, pod: Value) -> Vec<String> {
        let r = spec(settings);
        let t = Template::read(&pod, FieldPath::empty()).unwrap();
        let t = Template {
            is_template: false,
            ..t
        };
        let mut out = Vec::new();
        r.check(&t, &mut out).unwrap();
        out.into_iter().map(|v| v.to_string()).collect()
    }

    #[rstest]
    #[case(json!({}), json!({"spec": {"containers": [{"image": "nginx", "securityContext": {"privileged": true}}]}}), &[])]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"allowPrivilegeEscalation": {"forbidNil": true, "require": false}}}}}),
        json!({"spec": {"containers": [{"image": "nginx"}, {"image": "b", "securityContext": {"allowPrivilegeEscalation": true}}]}}),
        &["spec.containers[0].securityContext.allowPrivilegeEscalation: nil, required false",
          "spec.containers[1].securityContext.allowPrivilegeEscalation: true, required false"]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"runAsUser": {"forbidNil": true, "ranges": [{"min": 1}]}}}}}),
        json!({"spec": {"securityContext": {"runAsUser": 1000}, "containers": [{"image": "a"}, {"image": "b"}]}}),
        &[]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"runAsUser": {"ranges": [{"min": 1}]}}}}}),
        json!({"spec": {"securityContext": {"runAsUser": 0}, "containers": [{"image": "a"}, {"image": "b"}]}}),
        &["spec.securityContext.runAsUser: 0 is outside range [1-]"]
    )]
    #[case(
        json!({"spec": {"containers": {"image": {"registry": {"whitelist": ["docker.io"]}}}}}),
        json!({"spec": {"containers": [{"image": "nginx"}], "initContainers": [{"image": "gcr.io/X:1"}, {"image": "GCR.io/x:1"}]}}),
        &[r#"spec.initContainers[0].image: invalid image reference "gcr.io/X:1": repository name must be lowercase"#,
          r#"spec.initContainers[1].image: registry "gcr.io" is not in whitelist [docker.io]"#]
    )]
    #[case(
        json!({"spec": {"containers": {"image": {"registry": {"whitelist": ["docker.io"]}}}, "initContainers": []}}),
        json!({"spec": {"containers": [{"image": "nginx"}], "initContainers": [{"image": "gcr.io/x:1"}]}}),
        &[]
    )]
    #[case(
        json!({"spec": {"containers": {"imagePullPolicy": {"whitelist": ["Always"]}}}}),
        json!({"spec": {"containers": [{"image": "nginx"}, {"image": "nginx:1.25"}, {"image": "a:1", "imagePullPolicy": "Never"}]}}),
        &[r#"spec.containers[1].imagePullPolicy: "IfNotPresent" is not in whitelist [Always] (defaulted from the image tag)"#,
          r#"spec.containers[2].imagePullPolicy: "Never" is not in whitelist [Always]"#]
    )]
    #[case(
        json!({"spec": {"volumes": {"volumeType": {"whitelist": ["emptyDir", "configMap"]}}}}),
        json!({"spec": {"containers": [], "volumes": [{"name": "a"}, {"name": "b", "hostPath": {"path": "/"}}]}}),
        &[r#"spec.volumes[1]: volume type "hostPath" is not in whitelist [emptyDir, configMap]"#]
    )]
    #[case(
        json!({"spec": {"volumes": {"hostPath": {"path": {"whitelist": ["/data"]}}, "mount": {"readOnly": {"require": true, "forbidNil": true}}}}}),
        json!({"spec": {"containers": [{"volumeMounts": [{"name": "d", "mountPath": "/x"}]}],
            "volumes": [{"name": "d", "hostPath": {"path": "/datax"}}, {"name": "e", "hostPath": {"path": "/data/x"}}]}}),
        &[r#"spec.volumes[0].hostPath.path: "/datax" is not under whitelist [/data]"#,
          "spec.containers[0].volumeMounts[0].readOnly: nil, required true"]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"capabilities": {"add": {"requireEmpty": true}, "drop": {"requiredValues": ["ALL"]}}}}}}),
        json!({"spec": {"containers": [{"image": "a"}, {"image": "b", "securityContext": {"capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}}}]}}),
        &[r#"spec.containers[0].securityContext.capabilities.drop: value "ALL" is required"#,
          r#"spec.containers[1].securityContext.capabilities.add: ["NET_ADMIN"], an empty value is required"#]
    )]
    #[case(
        json!({"metadata": {"labels": {"requiredKeys": ["team"]}, "name": {"regex": "web-.*"}}}),
        json!({"metadata": {"name": "db", "labels": {"app": "x"}}, "spec": {}}),
        &[r#"metadata.name: "db" does not match regex ["web-.*"]"#, r#"metadata.labels: key "team" is required"#]
    )]
    #[case(
        json!({"spec": {"securityContext": {"hostPID": {"require": false}, "supplementalGroups": {"ranges": [{"min": 1}]}, "seccompProfileType": {"forbidNil": true}}}}),
        json!({"spec": {"hostPID": true, "securityContext": {"supplementalGroups": [5, 0]}}}),
        &["spec.hostPID: true, required false", "spec.securityContext.supplementalGroups[1]: 0 is outside range [1-]",
          "spec.securityContext.seccompProfile.type: nil, a value is required"]
    )]
    #[case(
        json!({"spec": {"containers": {"securityContext": {"seccompProfileType": {"whitelist": ["RuntimeDefault"]}, "seLinuxOptions": {"type": {"blacklist": ["spc_t"]}}}}}}),
        json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}, "seLinuxOptions": {"type": "spc_t"}}, "containers": [{"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}, {}]}}),
        &[r#"spec.securityContext.seLinuxOptions.type: "spc_t" is in blacklist [spc_t]"#,
          r#"spec.securityContext.seccompProfile.type: "Unconfined" is not in whitelist [RuntimeDefault]"#]
    )]
    #[case(
        json!({"spec": {"volumes": [{"volumeType": {"whitelist": ["secret"]}}, {"forbidEmpty": true}]}}),
        json!({"spec": {"volumes": [{"name": "s", "secret": {}}, {"name": "h", "hostPath": {"path": "/"}}]}}),
        &[r#"spec.volumes[1]: volume type "hostPath" is not in whitelist [secret]"#]
    )]
    #[case(
        json!({"spec": {"volumes": [{"volumeType": {"whitelist": ["secret"]}}, {"forbidEmpty": true}]}}),
        json!({"spec": {"containers": []}}),
        &["spec.volumes: nil, a non-empty value is required"]
    )]
    #[case(
        json!({"spec": {"volumes": [{"volumeType": {"whitelist": ["secret"]}}, {}]}}),
        json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}),
        &[]
    )]
    #[case(
        json!({"spec": {"volumes": {"requireEmpty": true}}}),
        json!({"spec": {"volumes": [{"name": "h"}]}}),
        &[r#"spec.volumes: [{"name": "h"}], an empty value is required"#]
    )]
    #[case(
        json!({"spec": {"serviceAccountName": {"whitelist": ["app"]}}}),
        json!({"spec": {"serviceAccount": "admin"}}),
        &[r#"spec.serviceAccount: "admin" is not in whitelist [app]"#]
    )]
    fn checks(#[case] settings: Value, #[case] pod: Value, #[case] expected: &[&str]) {
        assert_eq!(run(settings, pod), expected);
    }

    #[test]
    fn template_names_are_nil() {
        let r = spec(json!({"metadata": {"name": {"forbidNil": true}}}));
        let obj = json!({"metadata": {"name": "x"}, "spec": {}});
        let t = Template::read(&obj, FieldPath::root("spec").field("template")).unwrap();
        let mut out = Vec::new();
        r.check(&t, &mut out).unwrap();
        assert_eq!(
            out[0].to_string(),
            "spec.template.metadata.name: nil, a value is required"
        );
    }

    #[test]
    fn malformed_values_are_errors() {
        let r = spec(
            json!({"spec": {"containers": {"securityContext": {"privileged": {"require": false}}}}}),
        );
        let obj = json!({"spec": {"containers": [{"securityContext": {"privileged": "yes"}}]}});
        let t = Template::read(&obj, FieldPath::empty()).unwrap();
        let err = r.check(&t, &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].securityContext.privileged: expected a boolean"
        );
        assert!(Template::read(&json!({"metadata": {}}), FieldPath::root("x")).is_err());
    }

    #[rstest]
    #[case(json!({"spec": {"containers": [{}, {"securityContext": {"runAsUser": {"ranges": [{"min": 5, "max": 1}]}}}]}}), "spec.containers[1].securityContext.runAsUser.ranges[0]: min 5 is greater than max 1")]
    #[case(json!({"spec": {"initContainers": {"image": {"tag": {"regex": "("}}}}}), "spec.initContainers.image.tag.regex: invalid regex")]
    #[case(json!({"spec": {"volumes": {"hostPath": {"path": {"whitelist": ["data"]}}}}}), r#"spec.volumes.hostPath.path.whitelist[0]: "data" is not an absolute path"#)]
    #[case(json!({"spec": {"volumes": {"forbidEmpty": true, "requireEmpty": true}}}), "spec.volumes.requireEmpty: cannot be combined with forbidEmpty")]
    #[case(json!({"metadata": {"labels": {"forbidEmpty": true, "requireEmpty": true}}}), "metadata.labels.requireEmpty: cannot be combined with forbidEmpty")]
    #[case(json!({"spec": {"securityContext": {"hostNetwork": {"forbidNil": true, "requireNil": true}}}}), "spec.securityContext.hostNetwork.requireNil: cannot be combined with forbidNil")]
    #[case(json!({"spec": {"containers": {"securityContext": {"seLinuxOptions": {"allowNil": true, "forbidNil": true}}}}}), "spec.containers.securityContext.seLinuxOptions.allowNil: allowNil: true contradicts forbidNil: true")]
    fn refusals_name_the_setting(#[case] settings: Value, #[case] message: &str) {
        let raw: RawRestrictionSpec = serde_json::from_value(settings).unwrap();
        let err = RestrictionSpec::build(raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[rstest]
    #[case(Some("nginx"), Some("Always"))]
    #[case(Some("nginx:latest"), Some("Always"))]
    #[case(Some("nginx:1.25"), Some("IfNotPresent"))]
    #[case(
        Some("nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
        Some("IfNotPresent")
    )]
    #[case(Some("Nginx"), None)]
    #[case(None, None)]
    fn pull_policy_defaults(#[case] image: Option<&str>, #[case] expected: Option<&str>) {
        assert_eq!(default_pull_policy(image), expected);
    }
}
