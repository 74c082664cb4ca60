//! PodSpec restrictions (README "PodSpec"): the spec's own scalar fields, `nodeSelector`,
//! `automountServiceAccountToken`, and the dispatch to the security context, the volumes and
//! the three container lists.

use policy_admission::Violation;
use policy_admission::pod::ContainerList;
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde::Deserialize;
use serde_json::Value;
use tenancy_rules::restriction::{
    AnyOf, BoolRestriction, NumericRestriction, OneOrList, RawBool, RawNumeric, RawString,
    RawStringMap, Restriction, StringMapRestriction, StringRestriction,
};

use super::containers::check_image_volumes;
use super::containers::{ContainerRestriction, RawContainer};
use super::pod_security_context::{PodSecurityContextRestriction, RawPodSecurityContext};
use super::volumes::{RawVolume, VolumeAlternatives, VolumeRestriction};
use super::{check_field, field, named, opt};

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

/// PodSpec restriction.
#[derive(Debug, Clone, Default)]
pub(crate) struct PodSpecRestriction {
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

impl TryFrom<RawPodSpec> for PodSpecRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawPodSpec) -> Result<Self, SettingsError> {
        let containers = |raw: Option<OneOrList<RawContainer>>, name: &str| {
            AnyOf::build(raw, ContainerRestriction::try_from).map_err(|e| e.under(name))
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
                PodSecurityContextRestriction::try_from,
            )?,
            volumes: VolumeAlternatives::from(
                AnyOf::build(raw.volumes, VolumeRestriction::try_from)
                    .map_err(|e| e.under("volumes"))?,
            ),
            containers: containers(raw.containers, "containers")?,
            init_containers: init.map(|r| containers(r, "initContainers")).transpose()?,
            ephemeral_containers: ephemeral
                .map(|r| containers(r, "ephemeralContainers"))
                .transpose()?,
        })
    }
}

impl PodSpecRestriction {
    /// Judges one pod spec: its own fields, its security context, its volumes, its
    /// containers and its image volumes, in that order.
    pub(crate) fn check(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        self.check_own_fields(spec, out)?;
        if let Some(r) = &self.security_context {
            r.check(spec, out)?;
        }
        self.volumes.check(spec, out)?;
        self.check_containers(spec, out)?;
        check_image_volumes(&self.containers, spec, out)
    }

    /// The scalar fields, `nodeSelector` and `automountServiceAccountToken`.
    fn check_own_fields(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        for (name, r) in &self.strings {
            let (value, path) = string_field(spec, name);
            r.check(value, &path, out)?;
        }
        for (name, r) in &self.numbers {
            check_field(Some(r), Some(spec), &spec.path, name, out)?;
        }
        check_field(
            self.node_selector.as_ref(),
            Some(spec),
            &spec.path,
            "nodeSelector",
            out,
        )?;
        check_field(
            self.automount.as_ref(),
            Some(spec),
            &spec.path,
            "automountServiceAccountToken",
            out,
        )
    }

    /// Every container of every list against the alternatives of its list (README
    /// "PodSpec": an absent `initContainers`/`ephemeralContainers` means `containers`).
    fn check_containers(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        let pod_context = spec.get_object("securityContext")?;
        for list in ContainerList::ALL {
            let restriction = self.restriction_of(list);
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
        Ok(())
    }

    /// The container alternatives that judge `list`.
    fn restriction_of(&self, list: ContainerList) -> &AnyOf<ContainerRestriction> {
        match list {
            ContainerList::Regular => &self.containers,
            ContainerList::Init => self.init_containers.as_ref().unwrap_or(&self.containers),
            ContainerList::Ephemeral => self
                .ephemeral_containers
                .as_ref()
                .unwrap_or(&self.containers),
        }
    }
}

/// The string field `name` of the spec and its path; `serviceAccountName` falls back to the
/// deprecated `serviceAccount` when only that one is set (and is reported there).
fn string_field<'a>(spec: &At<'a>, name: &str) -> (Option<&'a Value>, FieldPath) {
    let (value, path) = field(Some(spec), &spec.path, name);
    if name != "serviceAccountName" || value.is_some() {
        return (value, path);
    }
    match field(Some(spec), &spec.path, "serviceAccount") {
        (Some(value), alias) => (Some(value), alias),
        (None, _) => (None, path),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::violations;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(
        json!({"spec": {"containers": {"image": {"registry": {"whitelist": ["docker.io"]}}}, "initContainers": []}}),
        json!({"spec": {"containers": [{"image": "nginx"}], "initContainers": [{"image": "gcr.io/x:1"}]}}),
        &[]
    )]
    #[case(
        json!({"spec": {"serviceAccountName": {"whitelist": ["app"]}}}),
        json!({"spec": {"serviceAccount": "admin"}}),
        &[r#"spec.serviceAccount: "admin" is not in whitelist [app]"#]
    )]
    #[case(
        json!({"spec": {"serviceAccountName": {"forbidNil": true}}}),
        json!({"spec": {}}),
        &["spec.serviceAccountName: nil, a value is required"]
    )]
    fn checks(#[case] settings: Value, #[case] pod: Value, #[case] expected: &[&str]) {
        assert_eq!(violations(settings, pod), expected);
    }
}
