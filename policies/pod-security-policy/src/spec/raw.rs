//! The PSP spec as written in settings: strict serde types, validated into
//! [`PspSpec`](super::PspSpec) by its `TryFrom<RawSpec>`.

use policy_decode::names::NameList;
use serde::Deserialize;

use super::host_paths::AllowedHostPaths;

/// The PSP spec as written in settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSpec {
    pub(super) privileged: Option<bool>,
    pub(super) host_network: Option<bool>,
    #[serde(rename = "hostPID")]
    pub(super) host_pid: Option<bool>,
    #[serde(rename = "hostIPC")]
    pub(super) host_ipc: Option<bool>,
    pub(super) host_ports: Option<Vec<RawPortRange>>,
    pub(super) allowed_capabilities: Option<NameList>,
    pub(super) default_add_capabilities: Option<NameList>,
    pub(super) required_drop_capabilities: Option<NameList>,
    pub(super) allow_privilege_escalation: Option<bool>,
    pub(super) default_allow_privilege_escalation: Option<bool>,
    pub(super) run_as_user: Option<RawIdStrategy>,
    pub(super) run_as_group: Option<RawIdStrategy>,
    pub(super) fs_group: Option<RawIdStrategy>,
    pub(super) supplemental_groups: Option<RawIdStrategy>,
    pub(super) se_linux: Option<RawSeLinux>,
    pub(super) volumes: Option<Vec<String>>,
    pub(super) allowed_host_paths: Option<AllowedHostPaths>,
    pub(super) allowed_flex_volumes: Option<Vec<RawFlexVolume>>,
    #[serde(rename = "allowedCSIDrivers")]
    pub(super) allowed_csi_drivers: Option<Vec<RawCsiDriver>>,
    pub(super) read_only_root_filesystem: Option<bool>,
    pub(super) allowed_unsafe_sysctls: Option<NameList>,
    pub(super) forbidden_sysctls: Option<NameList>,
    pub(super) allowed_proc_mount_types: Option<Vec<String>>,
    pub(super) runtime_class: Option<RawRuntimeClass>,
    pub(super) allowed_seccomp_profiles: Option<Vec<String>>,
    pub(super) default_seccomp_profile: Option<String>,
    pub(super) allowed_app_armor_profiles: Option<Vec<String>>,
    pub(super) default_app_armor_profile: Option<String>,
}

/// A `hostPorts` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPortRange {
    pub(super) min: i64,
    pub(super) max: i64,
}

/// `runAsUser`, `runAsGroup`, `fsGroup` or `supplementalGroups` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIdStrategy {
    pub(super) rule: String,
    pub(super) ranges: Option<Vec<RawIdRange>>,
}

/// An id range as written: `{min, max}` or `{fromNamespaceAnnotation}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawIdRange {
    pub(super) min: Option<i64>,
    pub(super) max: Option<i64>,
    pub(super) from_namespace_annotation: Option<String>,
}

/// `seLinux` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawSeLinux {
    pub(super) rule: String,
    pub(super) se_linux_options: Option<RawSeLinuxOptions>,
}

/// `seLinux.seLinuxOptions` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSeLinuxOptions {
    pub(super) user: Option<String>,
    pub(super) role: Option<String>,
    #[serde(rename = "type")]
    pub(super) type_: Option<String>,
    pub(super) level: Option<String>,
}

/// An `allowedFlexVolumes` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlexVolume {
    pub(super) driver: String,
}

/// An `allowedCSIDrivers` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCsiDriver {
    pub(super) name: String,
}

/// `runtimeClass` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawRuntimeClass {
    #[serde(default)]
    pub(super) allowed_runtime_class_names: Vec<String>,
    pub(super) default_runtime_class_name: Option<String>,
}
