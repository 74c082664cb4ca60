//! Volume types (`volumes`) and the drivers of flexVolume and CSI volumes
//! (`allowedFlexVolumes`, `allowedCSIDrivers`).

use policy_decode::SettingsError;
use policy_decode::names::NameList;

use super::raw::{RawCsiDriver, RawFlexVolume};
use super::{err, star_alone};

/// Volume type names of PSP (`FSType`), plus `image`. The Pod field of `cephFS` is `cephfs`.
pub const VOLUME_TYPES: [&str; 30] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephFS",
    "cinder",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "persistentVolumeClaim",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "quobyte",
    "rbd",
    "scaleIO",
    "secret",
    "storageos",
    "vsphereVolume",
];

/// The PSP volume type name of a Pod volume source field (`cephfs` → `cephFS`).
pub fn volume_type_name(field: &str) -> &str {
    if field == "cephfs" { "cephFS" } else { field }
}

/// `volumes`: known type names (`cephfs` read as `cephFS`), `*` alone, no duplicates.
pub(super) fn volume_types(raw: Option<Vec<String>>) -> Result<Vec<String>, SettingsError> {
    let mut volumes = raw.unwrap_or_default();
    star_alone("volumes", volumes.iter().map(String::as_str))?;
    for (i, v) in volumes.iter_mut().enumerate() {
        if v == "cephfs" {
            *v = "cephFS".to_owned();
        }
        if v != "*" && !VOLUME_TYPES.contains(&v.as_str()) {
            return Err(err(
                format!("volumes[{i}]"),
                format!(
                    "{v:?} is not a volume type ({}, *)",
                    VOLUME_TYPES.join(", ")
                ),
            ));
        }
    }
    policy_decode::settings::no_duplicates("volumes", &volumes, |s| format!("{s:?}"))?;
    Ok(volumes)
}

/// `allowedFlexVolumes`: the drivers, none empty.
pub(super) fn flex_volume_drivers(
    raw: Option<Vec<RawFlexVolume>>,
) -> Result<NameList, SettingsError> {
    let drivers: NameList = raw
        .unwrap_or_default()
        .iter()
        .map(|f| f.driver.as_str())
        .collect();
    if let Some(i) = drivers.iter().position(str::is_empty) {
        return Err(err(
            format!("allowedFlexVolumes[{i}].driver"),
            "must not be empty",
        ));
    }
    Ok(drivers)
}

/// `allowedCSIDrivers`: the driver names, none empty.
pub(super) fn csi_drivers(raw: Option<Vec<RawCsiDriver>>) -> Result<NameList, SettingsError> {
    let drivers: NameList = raw
        .unwrap_or_default()
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    if let Some(i) = drivers.iter().position(str::is_empty) {
        return Err(err(
            format!("allowedCSIDrivers[{i}].name"),
            "must not be empty",
        ));
    }
    Ok(drivers)
}
