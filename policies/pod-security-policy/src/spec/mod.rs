//! One profile's `spec`: the PodSecurityPolicySpec fields (policy/v1beta1 names and meaning),
//! decoded strictly ([`RawSpec`]) and validated as the PSP API validated them, with PSP
//! defaults applied ([`PspSpec`]); one module per group of fields.

mod capabilities;
mod host_paths;
mod ids;
mod raw;
mod runtime_class;
mod se_linux;
mod security_profiles;
mod sysctls;
mod volumes;

use policy_decode::SettingsError;
use policy_decode::names::NameList;
use policy_decode::ranges::RangeList;

pub use host_paths::AllowedHostPaths;
pub use ids::{IdRule, IdStrategy, RangeSpec};
pub use raw::RawSpec;
pub use runtime_class::RuntimeClass;
pub use se_linux::{SeLinux, SeLinuxOptions};
pub use sysctls::{SAFE_SYSCTLS, SysctlPatterns, sysctl_matches};
pub use volumes::{VOLUME_TYPES, volume_type_name};

use capabilities::capabilities;
use ids::id_strategy;
use raw::RawPortRange;
use se_linux::se_linux;
use security_profiles::{app_armor_profiles, seccomp_profiles};
use sysctls::sysctl_lists;
use volumes::{csi_drivers, flex_volume_drivers, volume_types};

/// A validated PSP spec with PSP defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PspSpec {
    /// `privileged` (false).
    pub privileged: bool,
    /// `hostNetwork` (false).
    pub host_network: bool,
    /// `hostPID` (false).
    pub host_pid: bool,
    /// `hostIPC` (false).
    pub host_ipc: bool,
    /// `hostPorts` ranges (`[]` = no host port).
    pub host_ports: RangeList<(i64, i64)>,
    /// `allowedCapabilities` (`*` = any).
    pub allowed_capabilities: NameList,
    /// `defaultAddCapabilities`.
    pub default_add_capabilities: NameList,
    /// `requiredDropCapabilities`.
    pub required_drop_capabilities: NameList,
    /// `allowPrivilegeEscalation` (true).
    pub allow_privilege_escalation: bool,
    /// `defaultAllowPrivilegeEscalation`.
    pub default_allow_privilege_escalation: Option<bool>,
    /// `runAsUser` (required).
    pub run_as_user: IdStrategy,
    /// `runAsGroup` (`RunAsAny`).
    pub run_as_group: IdStrategy,
    /// `fsGroup` (required).
    pub fs_group: IdStrategy,
    /// `supplementalGroups` (required).
    pub supplemental_groups: IdStrategy,
    /// `seLinux` (required).
    pub se_linux: SeLinux,
    /// `volumes`, canonical PSP names (`*` = any).
    pub volumes: Vec<String>,
    /// `allowedHostPaths` (`[]` = any).
    pub allowed_host_paths: AllowedHostPaths,
    /// `allowedFlexVolumes` drivers (`[]` = any).
    pub allowed_flex_volumes: NameList,
    /// `allowedCSIDrivers` names (`[]` = any).
    pub allowed_csi_drivers: NameList,
    /// `readOnlyRootFilesystem` (false).
    pub read_only_root_filesystem: bool,
    /// `allowedUnsafeSysctls` (exact or `prefix*`).
    pub allowed_unsafe_sysctls: SysctlPatterns,
    /// `forbiddenSysctls` (exact or `prefix*`).
    pub forbidden_sysctls: SysctlPatterns,
    /// `allowedProcMountTypes` (`[Default]`).
    pub allowed_proc_mount_types: Vec<String>,
    /// `runtimeClass`.
    pub runtime_class: Option<RuntimeClass>,
    /// `allowedSeccompProfiles`, annotation syntax (`*` = any, `""` = unset allowed).
    pub allowed_seccomp_profiles: NameList,
    /// `defaultSeccompProfile`.
    pub default_seccomp_profile: Option<String>,
    /// `allowedAppArmorProfiles` (`[]` = not checked).
    pub allowed_app_armor_profiles: NameList,
    /// `defaultAppArmorProfile`.
    pub default_app_armor_profile: Option<String>,
}

/// A settings error at `path` below the spec.
fn err(path: impl Into<String>, problem: impl Into<String>) -> SettingsError {
    SettingsError::new(path, problem)
}

/// Refuses `*` mixed with other entries, empty entries, and duplicates (not on re-read:
/// checked when the policy was loaded, and nothing is collected then).
fn star_alone<'a>(field: &str, items: impl Iterator<Item = &'a str>) -> Result<(), SettingsError> {
    if policy_decode::settings::is_reread() {
        return Ok(());
    }
    let items: Vec<&str> = items.collect();
    for (i, item) in items.iter().enumerate() {
        if item.is_empty() && field != "allowedSeccompProfiles" {
            return Err(err(format!("{field}[{i}]"), "must not be empty"));
        }
        if *item == "*" && items.len() > 1 {
            return Err(err(format!("{field}[{i}]"), "\"*\" must be the only entry"));
        }
    }
    policy_decode::settings::no_duplicates(field, &items, |s| format!("{s:?}"))
}

impl TryFrom<RawSpec> for PspSpec {
    type Error = SettingsError;

    /// Validates a raw spec, field by field in settings-table order; errors name the field
    /// below the spec.
    fn try_from(raw: RawSpec) -> Result<Self, SettingsError> {
        use IdRule::*;
        let host_ports = host_ports(raw.host_ports.unwrap_or_default())?;
        let caps = capabilities(
            raw.allowed_capabilities,
            raw.default_add_capabilities,
            raw.required_drop_capabilities,
        )?;
        let allow_privilege_escalation = privilege_escalation(
            raw.allow_privilege_escalation,
            raw.default_allow_privilege_escalation,
        )?;
        let (user_rules, group_rules) = (
            &[MustRunAs, MustRunAsNonRoot, RunAsAny],
            &[MustRunAs, MayRunAs, RunAsAny],
        );
        let run_as_user = id_strategy("runAsUser", raw.run_as_user, user_rules, true)?;
        let run_as_group = id_strategy("runAsGroup", raw.run_as_group, group_rules, false)?;
        let fs_group = id_strategy("fsGroup", raw.fs_group, group_rules, true)?;
        let supplemental_groups = id_strategy(
            "supplementalGroups",
            raw.supplemental_groups,
            group_rules,
            true,
        )?;
        let se_linux = se_linux(raw.se_linux)?;
        let volumes = volume_types(raw.volumes)?;
        let allowed_host_paths = raw.allowed_host_paths.unwrap_or_default();
        let allowed_flex_volumes = flex_volume_drivers(raw.allowed_flex_volumes)?;
        let allowed_csi_drivers = csi_drivers(raw.allowed_csi_drivers)?;
        let (allowed_unsafe_sysctls, forbidden_sysctls) =
            sysctl_lists(raw.allowed_unsafe_sysctls, raw.forbidden_sysctls)?;
        let allowed_proc_mount_types = proc_mount_types(raw.allowed_proc_mount_types)?;
        let runtime_class = raw.runtime_class.map(RuntimeClass::try_from).transpose()?;
        let (allowed_seccomp_profiles, default_seccomp_profile) =
            seccomp_profiles(raw.allowed_seccomp_profiles, raw.default_seccomp_profile)?;
        let (allowed_app_armor_profiles, default_app_armor_profile) = app_armor_profiles(
            raw.allowed_app_armor_profiles,
            raw.default_app_armor_profile,
        )?;
        Ok(PspSpec {
            privileged: raw.privileged.unwrap_or(false),
            host_network: raw.host_network.unwrap_or(false),
            host_pid: raw.host_pid.unwrap_or(false),
            host_ipc: raw.host_ipc.unwrap_or(false),
            host_ports,
            allowed_capabilities: caps.allowed,
            default_add_capabilities: caps.default_add,
            required_drop_capabilities: caps.required_drop,
            allow_privilege_escalation,
            default_allow_privilege_escalation: raw.default_allow_privilege_escalation,
            run_as_user,
            run_as_group,
            fs_group,
            supplemental_groups,
            se_linux,
            volumes,
            allowed_host_paths,
            allowed_flex_volumes,
            allowed_csi_drivers,
            read_only_root_filesystem: raw.read_only_root_filesystem.unwrap_or(false),
            allowed_unsafe_sysctls,
            forbidden_sysctls,
            allowed_proc_mount_types,
            runtime_class,
            allowed_seccomp_profiles,
            default_seccomp_profile,
            allowed_app_armor_profiles,
            default_app_armor_profile,
        })
    }
}

/// `hostPorts`: ports 0-65535, `min <= max`.
fn host_ports(raw: Vec<RawPortRange>) -> Result<RangeList<(i64, i64)>, SettingsError> {
    let mut ranges = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        for (name, v) in [("min", r.min), ("max", r.max)] {
            if !(0..=65535).contains(&v) {
                return Err(err(
                    format!("hostPorts[{i}].{name}"),
                    format!("{v} is not a port (0-65535)"),
                ));
            }
        }
        if r.max < r.min {
            return Err(err(
                format!("hostPorts[{i}].max"),
                format!("{} is below min {}", r.max, r.min),
            ));
        }
        ranges.push((r.min, r.max));
    }
    Ok(RangeList::new(ranges))
}

/// `allowPrivilegeEscalation` (default true); `defaultAllowPrivilegeEscalation: true`
/// cannot contradict a `false`.
fn privilege_escalation(allow: Option<bool>, default: Option<bool>) -> Result<bool, SettingsError> {
    let allow = allow.unwrap_or(true);
    if !allow && default == Some(true) {
        return Err(err(
            "defaultAllowPrivilegeEscalation",
            "cannot be true when allowPrivilegeEscalation is false",
        ));
    }
    Ok(allow)
}

/// `allowedProcMountTypes` (default `[Default]`): each `Default` or `Unmasked`.
fn proc_mount_types(raw: Option<Vec<String>>) -> Result<Vec<String>, SettingsError> {
    let types = raw.unwrap_or_else(|| vec!["Default".to_owned()]);
    for (i, t) in types.iter().enumerate() {
        if t != "Default" && t != "Unmasked" {
            return Err(err(
                format!("allowedProcMountTypes[{i}]"),
                format!("{t:?} is not one of Default, Unmasked"),
            ));
        }
    }
    Ok(types)
}

impl PspSpec {
    /// Whether any id range reads a Namespace annotation.
    pub fn reads_namespace(&self) -> bool {
        [
            &self.run_as_user,
            &self.run_as_group,
            &self.fs_group,
            &self.supplemental_groups,
        ]
        .iter()
        .any(|s| s.annotations().next().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn minimal() -> Value {
        json!({"runAsUser": {"rule": "RunAsAny"}, "seLinux": {"rule": "RunAsAny"},
            "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}})
    }

    fn build(extra: Value) -> Result<PspSpec, SettingsError> {
        let mut v = minimal();
        for (k, x) in extra.as_object().unwrap() {
            if x.is_null() {
                v.as_object_mut().unwrap().remove(k);
            } else {
                v[k] = x.clone();
            }
        }
        PspSpec::try_from(policy_decode::settings::decode::<RawSpec>(&v)?)
    }

    #[test]
    fn defaults_are_psp_defaults() {
        let s = build(json!({})).unwrap();
        assert!(!s.privileged && !s.host_network && !s.read_only_root_filesystem);
        assert!(s.allow_privilege_escalation);
        assert_eq!(s.allowed_proc_mount_types, ["Default"]);
        assert_eq!(s.run_as_group, IdStrategy::any());
        assert!(s.volumes.is_empty() && s.host_ports.is_empty());
        let sysctls = SysctlPatterns::new(["kernel.msg*", "net.core.somaxconn"].into());
        for _ in 0..20 {
            assert!(sysctls.matches("kernel.msgmax") && sysctls.matches("kernel.msg"));
            assert!(sysctls.matches("net.core.somaxconn") && !sysctls.matches("net.core.other"));
            assert!(!sysctls.matches("kernel.ms") && !sysctls.matches(""));
        }
        assert!(SysctlPatterns::new(["*"].into()).matches("any.thing"));
    }

    #[rstest]
    #[case(json!({"runAsUser": null}), "runAsUser: a rule is required")]
    #[case(json!({"seLinux": null}), "seLinux: a rule is required")]
    #[case(json!({"fsGroup": null}), "fsGroup: a rule is required")]
    #[case(json!({"supplementalGroups": null}), "supplementalGroups: a rule is required")]
    #[case(json!({"runAsUser": {"rule": "MayRunAs", "ranges": [{"min": 1, "max": 2}]}}), "runAsUser.rule: \"MayRunAs\" is not one of MustRunAs, MustRunAsNonRoot, RunAsAny")]
    #[case(json!({"fsGroup": {"rule": "MustRunAs"}}), "fsGroup.ranges: MustRunAs needs at least one range")]
    #[case(json!({"fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 5, "max": 1}]}}), "fsGroup.ranges[0].max: 1 is below min 5")]
    #[case(json!({"runAsGroup": {"rule": "MayRunAs", "ranges": [{"min": -1, "max": 1}]}}), "runAsGroup.ranges[0].min: -1 is negative")]
    #[case(json!({"runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 1}]}}), "runAsUser.ranges[0]: needs both min and max")]
    #[case(json!({"runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 2, "fromNamespaceAnnotation": "a"}]}}), "runAsUser.ranges[0]: fromNamespaceAnnotation cannot be combined")]
    #[case(json!({"runAsUser": {"rule": "RunAsAny", "ranges": [{"min": 1, "max": 2}]}}), "runAsUser.ranges: ranges are not used by RunAsAny")]
    #[case(json!({"seLinux": {"rule": "MustRunAs"}}), "seLinux.seLinuxOptions: MustRunAs needs seLinuxOptions")]
    #[case(json!({"seLinux": {"rule": "Sometimes"}}), "seLinux.rule: \"Sometimes\" is not one of MustRunAs, RunAsAny")]
    #[case(json!({"hostPorts": [{"min": 0, "max": 70000}]}), "hostPorts[0].max: 70000 is not a port")]
    #[case(json!({"requiredDropCapabilities": ["NET_RAW"], "allowedCapabilities": ["NET_RAW"]}), "requiredDropCapabilities[0]: \"NET_RAW\" is also in allowedCapabilities")]
    #[case(json!({"requiredDropCapabilities": ["NET_RAW"], "defaultAddCapabilities": ["NET_RAW"]}), "requiredDropCapabilities[0]: \"NET_RAW\" is also in defaultAddCapabilities")]
    #[case(json!({"allowedCapabilities": ["*", "NET_RAW"]}), "allowedCapabilities[0]: \"*\" must be the only entry")]
    #[case(json!({"allowPrivilegeEscalation": false, "defaultAllowPrivilegeEscalation": true}), "defaultAllowPrivilegeEscalation: cannot be true")]
    #[case(json!({"volumes": ["configMap", "nfsv4"]}), "volumes[1]: \"nfsv4\" is not a volume type")]
    #[case(json!({"volumes": ["*", "secret"]}), "volumes[0]: \"*\" must be the only entry")]
    #[case(json!({"allowedUnsafeSysctls": ["net.core.*"], "forbiddenSysctls": ["net.core.somaxconn"]}), "allowedUnsafeSysctls[0]: \"net.core.*\" overlaps forbiddenSysctls entry")]
    #[case(json!({"allowedProcMountTypes": ["Masked"]}), "allowedProcMountTypes[0]: \"Masked\" is not one of Default, Unmasked")]
    #[case(json!({"allowedHostPaths": [{"pathPrefix": "data"}]}), "allowedHostPaths[0].pathPrefix: \"data\" is not an absolute path")]
    #[case(json!({"allowedHostPaths": [{"pathPrefix": "/data"}, {"pathPrefix": "/data/.."}]}), "allowedHostPaths[1].pathPrefix: \"/data/..\" must not contain \".\" or \"..\" components")]
    #[case(json!({"allowedHostPaths": [{"pathPrefix": "/./etc"}]}), "allowedHostPaths[0].pathPrefix: \"/./etc\" must not contain")]
    #[case(json!({"allowedSeccompProfiles": ["runtime/default"], "defaultSeccompProfile": "unconfined"}), "defaultSeccompProfile: \"unconfined\" is not in allowedSeccompProfiles")]
    #[case(json!({"allowedSeccompProfiles": ["RuntimeDefault"]}), "allowedSeccompProfiles[0]: \"RuntimeDefault\" is not a seccomp profile")]
    #[case(json!({"allowedAppArmorProfiles": ["*"]}), "allowedAppArmorProfiles[0]: \"*\" is not an AppArmor profile")]
    #[case(json!({"runtimeClass": {"allowedRuntimeClassNames": ["gvisor"], "defaultRuntimeClassName": "runc"}}), "runtimeClass.defaultRuntimeClassName: \"runc\" is not in allowedRuntimeClassNames")]
    #[case(json!({"allowedFlexVolumes": [{"driver": ""}]}), "allowedFlexVolumes[0].driver: must not be empty")]
    #[case(json!({"hostpid": true}), "unknown field `hostpid`")]
    fn refused(#[case] extra: Value, #[case] message: &str) {
        let e = build(extra).unwrap_err().to_string();
        assert!(e.starts_with(message) || e.contains(message), "{e}");
    }

    #[test]
    fn aliases_and_canonical_forms() {
        let s = build(json!({"volumes": ["cephfs"], "allowedSeccompProfiles": ["docker/default", ""],
            "defaultSeccompProfile": "runtime/default",
            "runAsUser": {"rule": "MustRunAs", "ranges": [{"fromNamespaceAnnotation": "tools/uid"}]}}))
        .unwrap();
        assert_eq!(s.volumes, ["cephFS"]);
        assert_eq!(
            s.allowed_seccomp_profiles.iter().collect::<Vec<_>>(),
            ["runtime/default", ""]
        );
        assert!(s.reads_namespace());
        assert_eq!(
            s.run_as_user.annotations().collect::<Vec<_>>(),
            ["tools/uid"]
        );
    }

    #[test]
    fn sysctl_patterns() {
        assert!(sysctl_matches("kernel.*", "kernel.msgmax"));
        assert!(sysctl_matches("*", "a"));
        assert!(!sysctl_matches("kernel.msgmax", "kernel.msgmnb"));
    }
}
