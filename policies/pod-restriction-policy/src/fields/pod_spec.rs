//! PodSpec restrictions (README "PodSpec"): the spec's own scalar fields, the computed
//! `qosClass`, `nodeSelector`, `automountServiceAccountToken`, and the dispatch to the
//! security context, the volumes and the three container lists.

use policy_admission::Violation;
use policy_admission::pod::ContainerList;
use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError, SettingsError};
use serde::Deserialize;
use serde_json::Value;
use tenancy_rules::pod_resources::{QosClass, qos_class};
use tenancy_rules::restriction::{
    AnyOf, BoolRestriction, NumericRestriction, OneOrList, RawBool, RawNumeric, RawString,
    RawStringMap, Restriction, StringMapRestriction, StringRestriction,
};

use super::containers::check_image_volumes;
use super::containers::{ContainerRestriction, RawContainer};
use super::pod_security_context::{PodSecurityContextRestriction, RawPodSecurityContext};
use super::volumes::{RawVolume, VolumeAlternatives, VolumeRestriction};
use super::{check_field, field, labelled, named, opt};

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
    /// The Pod's QoS class, computed from the resources (README "PodSpec").
    pub qos_class: Option<RawString>,
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
    qos_class: Option<StringRestriction>,
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
            qos_class: opt(raw.qos_class, "qosClass", qos_restriction)?,
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
        if let Some(r) = &self.qos_class {
            // README rule 18: computed from the resources, never read from the object.
            let class = qos_class(spec)?;
            let path = spec.path.field("qosClass");
            labelled("computed", out, |out| {
                r.check_str(Some(class.as_str()), &path, out);
            });
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

/// The QoS classes, as the API writes them.
const QOS_CLASSES: [QosClass; 3] = [
    QosClass::Guaranteed,
    QosClass::Burstable,
    QosClass::BestEffort,
];

/// `qosClass`: a String restriction whose `whitelist` and `blacklist` entries are QoS
/// classes (an entry no Pod can have, such as `guaranteed`, is refused rather than never
/// matching).
fn qos_restriction(raw: RawString) -> Result<StringRestriction, SettingsError> {
    for (name, list) in [("whitelist", &raw.whitelist), ("blacklist", &raw.blacklist)] {
        for (i, entry) in list.iter().flat_map(|l| l.iter()).enumerate() {
            if !QOS_CLASSES.iter().any(|c| c.as_str() == entry) {
                return Err(SettingsError::new(
                    format!("{name}[{i}]"),
                    format!("{entry:?} is not a QoS class (Guaranteed, Burstable, BestEffort)"),
                ));
            }
        }
    }
    StringRestriction::build(raw)
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

    fn guaranteed() -> Value {
        json!({"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
    }

    #[rstest]
    #[case(json!({"whitelist": ["Guaranteed"]}), json!({"spec": {"containers": [guaranteed()]}}), &[])]
    #[case(
        json!({"whitelist": ["Guaranteed"]}),
        json!({"spec": {"containers": [guaranteed(), {"name": "b"}]}}),
        &[r#"spec.qosClass: computed "Burstable" is not in whitelist [Guaranteed]"#]
    )]
    #[case(
        json!({"blacklist": ["BestEffort"]}),
        json!({"spec": {"containers": [{"name": "a"}]}}),
        &[r#"spec.qosClass: computed "BestEffort" is in blacklist [BestEffort]"#]
    )]
    #[case(json!({"blacklist": ["BestEffort"]}), json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}}), &[])]
    #[case(
        json!({"blacklistRegex": "Best.*"}),
        json!({"spec": {"resources": {"requests": {"cpu": "0"}}, "containers": [guaranteed()]}}),
        &[r#"spec.qosClass: computed "BestEffort" matches blacklistRegex "Best.*""#]
    )]
    #[case(json!({"regex": "Guaranteed|Burstable"}), json!({"spec": {"initContainers": [guaranteed()], "containers": [guaranteed()]}}), &[])]
    fn qos_class_checks(#[case] qos: Value, #[case] pod: Value, #[case] expected: &[&str]) {
        assert_eq!(
            violations(json!({"spec": {"qosClass": qos}}), pod),
            expected
        );
    }

    #[test]
    fn qos_class_of_malformed_resources_is_400() {
        let r = super::super::testing::spec(
            json!({"spec": {"qosClass": {"whitelist": ["Guaranteed"]}}}),
        );
        let obj = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "two"}}}]}});
        let t = super::super::Template::read(&obj, policy_decode::FieldPath::empty()).unwrap();
        let err = r.check(&t, &mut Vec::new()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("spec.containers[0].resources.limits.cpu:"),
            "{err}"
        );
    }

    #[rstest]
    #[case(json!({"whitelist": ["Guaranteed", "guaranteed"]}), r#"spec.qosClass.whitelist[1]: "guaranteed" is not a QoS class (Guaranteed, Burstable, BestEffort)"#)]
    #[case(json!({"blacklist": ["None"]}), r#"spec.qosClass.blacklist[0]: "None" is not a QoS class"#)]
    #[case(json!({"blacklistRegex": "("}), r#"spec.qosClass.blacklistRegex: invalid regex "(""#)]
    #[case(json!({"whitelist": []}), "spec.qosClass.whitelist: must not be empty")]
    fn qos_class_refusals(#[case] qos: Value, #[case] message: &str) {
        let err = super::super::testing::refusal(json!({"spec": {"qosClass": qos}}));
        assert!(err.starts_with(message), "{err}");
    }
}
