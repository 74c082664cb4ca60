//! Volume restrictions (README "Volume"): the `volumes` list as a whole (`forbidEmpty`,
//! `requireEmpty`), and each volume's sources, `hostPath` and the mounts of it in any
//! container.

use std::collections::HashMap;

use policy_admission::Violation;
use policy_admission::pod::ContainerList;
use policy_decode::json::At;
use policy_decode::{PolicyError, SettingsError};
use serde::Deserialize;
use tenancy_rules::restriction::{
    AnyOf, BoolRestriction, CollectionRestriction, RawBool, RawCollection, RawString, Restriction,
    StringMatch, StringRestriction,
};
use tenancy_rules::security_context::volume_sources;

use super::{check_field, field, labelled, opt};

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

/// The `volumes` setting split into the collection flags of every alternative (judged on
/// the whole list, ANDed) and the alternatives each volume must satisfy one of.
#[derive(Debug, Clone, Default)]
pub(crate) struct VolumeAlternatives {
    flags: Vec<CollectionRestriction>,
    elements: AnyOf<VolumeRestriction>,
}

impl From<AnyOf<VolumeRestriction>> for VolumeAlternatives {
    /// Splits the volume alternatives (README rule 11). An alternative that sets only
    /// `forbidEmpty` / `requireEmpty` restricts the list, not its elements: it does not
    /// count as an alternative every volume satisfies (otherwise `[{volumeType: {whitelist:
    /// [secret]}}, {forbidEmpty: true}]` would admit any volume). An explicit `{}` still
    /// admits every volume.
    fn from(all: AnyOf<VolumeRestriction>) -> VolumeAlternatives {
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
}

impl VolumeAlternatives {
    /// Whether the setting restricts nothing.
    fn is_unrestricted(&self) -> bool {
        self.flags.is_empty() && self.elements.is_unrestricted()
    }

    /// Judges the `volumes` list of one pod spec: the flags on the list, then every volume
    /// (with the mounts of it) against the alternatives.
    pub(crate) fn check(&self, spec: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
        if self.is_unrestricted() {
            return Ok(());
        }
        let (list, list_path) = field(Some(spec), &spec.path, "volumes");
        for flags in &self.flags {
            flags.check(list, &list_path, out)?;
        }
        let volumes = spec.get_list("volumes")?;
        if volumes.is_empty() || self.elements.is_unrestricted() {
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
            self.elements.check_with(out, |alternative, scratch| {
                alternative.check(&volume, mounted, scratch)
            })?;
        }
        Ok(())
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

/// Volume restriction (one alternative of `volumes`).
#[derive(Debug, Clone, Default)]
pub(crate) struct VolumeRestriction {
    collection: CollectionRestriction,
    volume_type: Option<StringRestriction>,
    host_path: Option<StringRestriction>,
    host_path_type: Option<StringRestriction>,
    read_only: Option<BoolRestriction>,
    mount_propagation: Option<StringRestriction>,
}

impl TryFrom<RawVolume> for VolumeRestriction {
    type Error = SettingsError;

    fn try_from(raw: RawVolume) -> Result<Self, SettingsError> {
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
}

impl VolumeRestriction {
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
        self.check_volume_type(volume, out)?;
        self.check_host_path(volume, out)?;
        for mount in mounts {
            self.check_mount(mount, out)?;
        }
        Ok(())
    }

    /// `volumeType`: every source of the volume (README rule 16); no source = `emptyDir`.
    fn check_volume_type(
        &self,
        volume: &At<'_>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        if let Some(r) = &self.volume_type {
            for ty in volume_sources(volume)? {
                labelled("volume type", out, |scratch| {
                    r.check_str(Some(ty), &volume.path, scratch)
                });
            }
        }
        Ok(())
    }

    /// `hostPath.path` (path prefixes) and `hostPath.type`, nil for other volume types
    /// (README rule 10).
    fn check_host_path(
        &self,
        volume: &At<'_>,
        out: &mut Vec<Violation>,
    ) -> Result<(), PolicyError> {
        if self.host_path.is_none() && self.host_path_type.is_none() {
            return Ok(());
        }
        let host = volume.get_object("hostPath")?;
        let base = volume.path.field("hostPath");
        check_field(self.host_path.as_ref(), host.as_ref(), &base, "path", out)?;
        check_field(
            self.host_path_type.as_ref(),
            host.as_ref(),
            &base,
            "type",
            out,
        )
    }

    /// `mount.readOnly` and `mount.mountPropagation` of one mount of the volume.
    fn check_mount(&self, mount: &At<'_>, out: &mut Vec<Violation>) -> Result<(), PolicyError> {
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
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{refusal, violations};
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
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
    fn checks(#[case] settings: Value, #[case] pod: Value, #[case] expected: &[&str]) {
        assert_eq!(violations(settings, pod), expected);
    }

    #[rstest]
    #[case(json!({"spec": {"volumes": {"hostPath": {"path": {"whitelist": ["data"]}}}}}), r#"spec.volumes.hostPath.path.whitelist[0]: "data" is not an absolute path"#)]
    #[case(json!({"spec": {"volumes": {"forbidEmpty": true, "requireEmpty": true}}}), "spec.volumes.requireEmpty: cannot be combined with forbidEmpty")]
    fn refusals_name_the_setting(#[case] settings: Value, #[case] message: &str) {
        let err = refusal(settings);
        assert!(err.starts_with(message), "{err}");
    }
}
