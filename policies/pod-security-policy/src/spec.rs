//! One profile's `spec`: the PodSecurityPolicySpec fields (policy/v1beta1 names and meaning),
//! decoded strictly and validated as the PSP API validated them, with PSP defaults applied.

use std::fmt;

use policy_core::SettingsError;
use policy_core::names::NameList;
use policy_core::ranges::RangeList;
use policy_core::restriction::PrefixSet;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// The PSP spec as written in settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSpec {
    privileged: Option<bool>,
    host_network: Option<bool>,
    #[serde(rename = "hostPID")]
    host_pid: Option<bool>,
    #[serde(rename = "hostIPC")]
    host_ipc: Option<bool>,
    host_ports: Option<Vec<RawPortRange>>,
    allowed_capabilities: Option<NameList>,
    default_add_capabilities: Option<NameList>,
    required_drop_capabilities: Option<NameList>,
    allow_privilege_escalation: Option<bool>,
    default_allow_privilege_escalation: Option<bool>,
    run_as_user: Option<RawIdStrategy>,
    run_as_group: Option<RawIdStrategy>,
    fs_group: Option<RawIdStrategy>,
    supplemental_groups: Option<RawIdStrategy>,
    se_linux: Option<RawSeLinux>,
    volumes: Option<Vec<String>>,
    allowed_host_paths: Option<AllowedHostPaths>,
    allowed_flex_volumes: Option<Vec<RawFlexVolume>>,
    #[serde(rename = "allowedCSIDrivers")]
    allowed_csi_drivers: Option<Vec<RawCsiDriver>>,
    read_only_root_filesystem: Option<bool>,
    allowed_unsafe_sysctls: Option<NameList>,
    forbidden_sysctls: Option<NameList>,
    allowed_proc_mount_types: Option<Vec<String>>,
    runtime_class: Option<RawRuntimeClass>,
    allowed_seccomp_profiles: Option<Vec<String>>,
    default_seccomp_profile: Option<String>,
    allowed_app_armor_profiles: Option<Vec<String>>,
    default_app_armor_profile: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPortRange {
    min: i64,
    max: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdStrategy {
    rule: String,
    ranges: Option<Vec<RawIdRange>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawIdRange {
    min: Option<i64>,
    max: Option<i64>,
    from_namespace_annotation: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSeLinux {
    rule: String,
    se_linux_options: Option<RawSeLinuxOptions>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeLinuxOptions {
    user: Option<String>,
    role: Option<String>,
    #[serde(rename = "type")]
    type_: Option<String>,
    level: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlexVolume {
    driver: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCsiDriver {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRuntimeClass {
    #[serde(default)]
    allowed_runtime_class_names: Vec<String>,
    default_runtime_class_name: Option<String>,
}

/// An id range: fixed bounds, or `[n, n]` read from a Namespace annotation per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// `{min, max}` with `0 ≤ min ≤ max`.
    Fixed(i64, i64),
    /// `{fromNamespaceAnnotation: key}`.
    FromNamespaceAnnotation(String),
}

/// The rule of an id strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdRule {
    /// Ids must be set and inside the ranges; unset ones default to the first range's min.
    MustRunAs,
    /// Ids are optional; set ones must be inside the ranges.
    MayRunAs,
    /// `runAsUser` only: the container must not run as root.
    MustRunAsNonRoot,
    /// Anything.
    RunAsAny,
}

impl IdRule {
    fn name(self) -> &'static str {
        match self {
            IdRule::MustRunAs => "MustRunAs",
            IdRule::MayRunAs => "MayRunAs",
            IdRule::MustRunAsNonRoot => "MustRunAsNonRoot",
            IdRule::RunAsAny => "RunAsAny",
        }
    }
}

/// `runAsUser`, `runAsGroup`, `fsGroup` or `supplementalGroups`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdStrategy {
    /// The rule.
    pub rule: IdRule,
    /// The ranges (non-empty for `MustRunAs`/`MayRunAs`, empty otherwise).
    pub ranges: Vec<RangeSpec>,
}

impl IdStrategy {
    /// `RunAsAny`.
    pub fn any() -> Self {
        IdStrategy {
            rule: IdRule::RunAsAny,
            ranges: Vec::new(),
        }
    }

    /// The Namespace annotations its ranges read.
    pub fn annotations(&self) -> impl Iterator<Item = &str> {
        self.ranges.iter().filter_map(|r| match r {
            RangeSpec::FromNamespaceAnnotation(k) => Some(k.as_str()),
            RangeSpec::Fixed(..) => None,
        })
    }
}

/// The SELinux strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeLinux {
    /// Anything.
    RunAsAny,
    /// Effective `seLinuxOptions` must equal these (absent fields are `""`).
    MustRunAs(SeLinuxOptions),
}

/// `seLinuxOptions` (absent fields are `""`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeLinuxOptions {
    /// user
    pub user: String,
    /// role
    pub role: String,
    /// type
    pub type_: String,
    /// level
    pub level: String,
}

impl SeLinuxOptions {
    /// The JSON object to write (only non-empty fields).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (k, v) in [
            ("user", &self.user),
            ("role", &self.role),
            ("type", &self.type_),
            ("level", &self.level),
        ] {
            if !v.is_empty() {
                m.insert(k.to_owned(), serde_json::Value::String(v.clone()));
            }
        }
        serde_json::Value::Object(m)
    }

    /// `user:role:type:level` for messages.
    pub fn describe(&self) -> String {
        format!("{}:{}:{}:{}", self.user, self.role, self.type_, self.level)
    }
}

/// `allowedHostPaths`: prefixes at path-component boundaries, each with whether the
/// mounts of a matching volume must be read-only. Decoded straight into one prefix list
/// (no allocation per entry); a `pathPrefix` that is not absolute or has `.`/`..`
/// components is refused with its path (`allowedHostPaths[2].pathPrefix`), except when
/// settings are re-read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedHostPaths {
    prefixes: PrefixSet,
    read_only: Vec<bool>,
}

impl AllowedHostPaths {
    /// Whether no path is listed (any host path is allowed).
    pub fn is_empty(&self) -> bool {
        self.read_only.is_empty()
    }

    /// The prefixes as written, in settings order.
    pub fn prefixes(&self) -> &NameList {
        self.prefixes.written()
    }

    /// For each entry `path` is under (settings order), whether it requires read-only
    /// mounts.
    pub fn matching(&self, path: &str) -> Vec<bool> {
        self.prefixes
            .matching(path)
            .into_iter()
            .filter_map(|i| self.read_only.get(i).copied())
            .collect()
    }
}

impl<'de> Deserialize<'de> for AllowedHostPaths {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = AllowedHostPaths;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of {pathPrefix, readOnly}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut prefixes = NameList::new();
                let mut read_only = Vec::new();
                while let Some(ro) = seq.next_element_seed(Entry(&mut prefixes))? {
                    read_only.push(ro);
                }
                Ok(AllowedHostPaths {
                    prefixes: PrefixSet::new(prefixes),
                    read_only,
                })
            }
        }
        deserializer.deserialize_seq(Entries)
    }
}

/// One `{pathPrefix, readOnly}` entry: the prefix is pushed to the list, `readOnly` returned.
struct Entry<'l>(&'l mut NameList);

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum HostPathField {
    PathPrefix,
    ReadOnly,
}

impl<'de> DeserializeSeed<'de> for Entry<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Entry<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct with fields pathPrefix and readOnly")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let (mut prefix, mut read_only) = (false, None);
        while let Some(key) = map.next_key::<HostPathField>()? {
            match key {
                HostPathField::PathPrefix if prefix => {
                    return Err(A::Error::duplicate_field("pathPrefix"));
                }
                HostPathField::PathPrefix => {
                    map.next_value_seed(Prefix(&mut *self.0))?;
                    prefix = true;
                }
                HostPathField::ReadOnly if read_only.is_some() => {
                    return Err(A::Error::duplicate_field("readOnly"));
                }
                HostPathField::ReadOnly => read_only = Some(map.next_value()?),
            }
        }
        if !prefix {
            return Err(A::Error::missing_field("pathPrefix"));
        }
        Ok(read_only.unwrap_or(false))
    }
}

/// A `pathPrefix`, checked (unless re-read) and pushed to the list.
struct Prefix<'l>(&'l mut NameList);

impl<'de> DeserializeSeed<'de> for Prefix<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for Prefix<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if !policy_core::settings::is_reread() {
            policy_core::restriction::check_path_prefix(v).map_err(E::custom)?;
        }
        self.0.push(v);
        Ok(())
    }
}

/// The runtime-class strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeClass {
    /// Allowed names; `*` = any; empty = none may be set.
    pub allowed: Vec<String>,
    /// Written when the Pod names none.
    pub default: Option<String>,
}

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

/// The safe sysctls every profile allows (PSP's safe set).
pub const SAFE_SYSCTLS: [&str; 5] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];

/// Whether a sysctl pattern (exact or `prefix*`) matches `name`.
pub fn sysctl_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Sysctl names and `prefix*` patterns (`allowedUnsafeSysctls`, `forbiddenSysctls`), as
/// written for messages, and split for lookups: a name is looked up once, and each of its
/// prefixes among the patterns' prefixes, instead of being compared with every pattern.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysctlPatterns {
    written: NameList,
    exact: NameList,
    prefixes: NameList,
}

impl SysctlPatterns {
    fn new(written: NameList) -> Self {
        let (mut exact, mut prefixes) = (NameList::new(), NameList::new());
        for pattern in written.iter() {
            match pattern.strip_suffix('*') {
                Some(prefix) => prefixes.push(prefix),
                None => exact.push(pattern),
            }
        }
        SysctlPatterns {
            written,
            exact,
            prefixes,
        }
    }

    /// The patterns as written, in settings order.
    pub fn written(&self) -> &NameList {
        &self.written
    }

    /// Whether a pattern matches `name` ([`sysctl_matches`]).
    pub fn matches(&self, name: &str) -> bool {
        self.exact.contains(name)
            || (!self.prefixes.is_empty()
                && (0..=name.len())
                    .filter_map(|i| name.get(..i))
                    .any(|prefix| self.prefixes.contains(prefix)))
    }
}

fn err(path: impl Into<String>, problem: impl Into<String>) -> SettingsError {
    SettingsError::new(path, problem)
}

/// Refuses `*` mixed with other entries, empty entries, and duplicates (not on re-read:
/// checked when the policy was loaded, and nothing is collected then).
fn star_alone<'a>(field: &str, items: impl Iterator<Item = &'a str>) -> Result<(), SettingsError> {
    if policy_core::settings::is_reread() {
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
    policy_core::settings::no_duplicates(field, &items, |s| format!("{s:?}"))
}

fn id_strategy(
    field: &str,
    raw: Option<RawIdStrategy>,
    allowed: &[IdRule],
    required: bool,
) -> Result<IdStrategy, SettingsError> {
    let Some(raw) = raw else {
        if required {
            return Err(err(field, "a rule is required (as in PodSecurityPolicy)"));
        }
        return Ok(IdStrategy::any());
    };
    let names: Vec<&str> = allowed.iter().map(|r| r.name()).collect();
    let rule = allowed
        .iter()
        .copied()
        .find(|r| r.name() == raw.rule)
        .ok_or_else(|| {
            err(
                format!("{field}.rule"),
                format!("{:?} is not one of {}", raw.rule, names.join(", ")),
            )
        })?;
    let needs_ranges = matches!(rule, IdRule::MustRunAs | IdRule::MayRunAs);
    let raw_ranges = raw.ranges.unwrap_or_default();
    if needs_ranges && raw_ranges.is_empty() {
        return Err(err(
            format!("{field}.ranges"),
            format!("{} needs at least one range", rule.name()),
        ));
    }
    if !needs_ranges && !raw_ranges.is_empty() {
        return Err(err(
            format!("{field}.ranges"),
            format!("ranges are not used by {}", rule.name()),
        ));
    }
    let mut ranges = Vec::new();
    for (i, r) in raw_ranges.into_iter().enumerate() {
        let path = format!("{field}.ranges[{i}]");
        ranges.push(match (r.min, r.max, r.from_namespace_annotation) {
            (None, None, Some(key)) if !key.is_empty() => RangeSpec::FromNamespaceAnnotation(key),
            (None, None, Some(_)) => {
                return Err(err(
                    format!("{path}.fromNamespaceAnnotation"),
                    "must not be empty",
                ));
            }
            (Some(min), Some(max), None) => {
                if min < 0 {
                    return Err(err(format!("{path}.min"), format!("{min} is negative")));
                }
                if max < min {
                    return Err(err(
                        format!("{path}.max"),
                        format!("{max} is below min {min}"),
                    ));
                }
                RangeSpec::Fixed(min, max)
            }
            (_, _, Some(_)) => {
                return Err(err(
                    &path,
                    "fromNamespaceAnnotation cannot be combined with min/max",
                ));
            }
            _ => {
                return Err(err(
                    &path,
                    "needs both min and max, or fromNamespaceAnnotation",
                ));
            }
        });
    }
    Ok(IdStrategy { rule, ranges })
}

fn canonical_seccomp(
    path: &str,
    value: &str,
    allow_special: bool,
) -> Result<String, SettingsError> {
    match value {
        "runtime/default" | "docker/default" => Ok("runtime/default".to_owned()),
        "unconfined" => Ok(value.to_owned()),
        "*" | "" if allow_special => Ok(value.to_owned()),
        v if v.strip_prefix("localhost/").is_some_and(|p| !p.is_empty()) => Ok(v.to_owned()),
        v => Err(err(
            path,
            format!(
                "{v:?} is not a seccomp profile (runtime/default, docker/default, unconfined, localhost/<path>, *)"
            ),
        )),
    }
}

fn canonical_apparmor(path: &str, value: &str) -> Result<String, SettingsError> {
    match value {
        "runtime/default" | "unconfined" => Ok(value.to_owned()),
        v if v.strip_prefix("localhost/").is_some_and(|p| !p.is_empty()) => Ok(v.to_owned()),
        v => Err(err(
            path,
            format!(
                "{v:?} is not an AppArmor profile (runtime/default, localhost/<name>, unconfined)"
            ),
        )),
    }
}

impl PspSpec {
    /// Validates a raw spec; errors name the field below the spec.
    pub fn build(raw: RawSpec) -> Result<PspSpec, SettingsError> {
        use IdRule::*;
        let host_ports = raw
            .host_ports
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
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
                Ok((r.min, r.max))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let host_ports = RangeList::new(host_ports);

        let allowed_capabilities = raw.allowed_capabilities.unwrap_or_default();
        let default_add_capabilities = raw.default_add_capabilities.unwrap_or_default();
        let required_drop_capabilities = raw.required_drop_capabilities.unwrap_or_default();
        star_alone("allowedCapabilities", allowed_capabilities.iter())?;
        star_alone("defaultAddCapabilities", default_add_capabilities.iter())?;
        star_alone(
            "requiredDropCapabilities",
            required_drop_capabilities.iter(),
        )?;
        for (field, list) in [
            ("defaultAddCapabilities", &default_add_capabilities),
            ("requiredDropCapabilities", &required_drop_capabilities),
        ] {
            if let Some(i) = list.iter().position(|c| c == "*") {
                return Err(err(
                    format!("{field}[{i}]"),
                    "\"*\" is only meaningful in allowedCapabilities",
                ));
            }
        }
        // Conflicts cannot change a verdict: not checked on re-read.
        let checked = !policy_core::settings::is_reread();
        for (i, cap) in required_drop_capabilities
            .iter()
            .enumerate()
            .filter(|_| checked)
        {
            if default_add_capabilities.contains(cap) {
                return Err(err(
                    format!("requiredDropCapabilities[{i}]"),
                    format!("{cap:?} is also in defaultAddCapabilities"),
                ));
            }
            if allowed_capabilities.contains(cap) {
                return Err(err(
                    format!("requiredDropCapabilities[{i}]"),
                    format!("{cap:?} is also in allowedCapabilities"),
                ));
            }
        }

        let allow_privilege_escalation = raw.allow_privilege_escalation.unwrap_or(true);
        if !allow_privilege_escalation && raw.default_allow_privilege_escalation == Some(true) {
            return Err(err(
                "defaultAllowPrivilegeEscalation",
                "cannot be true when allowPrivilegeEscalation is false",
            ));
        }

        let run_as_user = id_strategy(
            "runAsUser",
            raw.run_as_user,
            &[MustRunAs, MustRunAsNonRoot, RunAsAny],
            true,
        )?;
        let run_as_group = id_strategy(
            "runAsGroup",
            raw.run_as_group,
            &[MustRunAs, MayRunAs, RunAsAny],
            false,
        )?;
        let fs_group = id_strategy(
            "fsGroup",
            raw.fs_group,
            &[MustRunAs, MayRunAs, RunAsAny],
            true,
        )?;
        let supplemental_groups = id_strategy(
            "supplementalGroups",
            raw.supplemental_groups,
            &[MustRunAs, MayRunAs, RunAsAny],
            true,
        )?;

        let se_linux = match raw.se_linux {
            None => {
                return Err(err(
                    "seLinux",
                    "a rule is required (as in PodSecurityPolicy)",
                ));
            }
            Some(s) => match (s.rule.as_str(), s.se_linux_options) {
                ("RunAsAny", None) => SeLinux::RunAsAny,
                ("RunAsAny", Some(_)) => {
                    return Err(err(
                        "seLinux.seLinuxOptions",
                        "seLinuxOptions are not used by RunAsAny",
                    ));
                }
                ("MustRunAs", Some(o)) => SeLinux::MustRunAs(SeLinuxOptions {
                    user: o.user.unwrap_or_default(),
                    role: o.role.unwrap_or_default(),
                    type_: o.type_.unwrap_or_default(),
                    level: o.level.unwrap_or_default(),
                }),
                ("MustRunAs", None) => {
                    return Err(err(
                        "seLinux.seLinuxOptions",
                        "MustRunAs needs seLinuxOptions",
                    ));
                }
                (other, _) => {
                    return Err(err(
                        "seLinux.rule",
                        format!("{other:?} is not one of MustRunAs, RunAsAny"),
                    ));
                }
            },
        };

        let mut volumes = raw.volumes.unwrap_or_default();
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
        policy_core::settings::no_duplicates("volumes", &volumes, |s| format!("{s:?}"))?;

        let allowed_host_paths = raw.allowed_host_paths.unwrap_or_default();

        let allowed_flex_volumes: NameList = raw
            .allowed_flex_volumes
            .unwrap_or_default()
            .iter()
            .map(|f| f.driver.as_str())
            .collect();
        if let Some(i) = allowed_flex_volumes.iter().position(str::is_empty) {
            return Err(err(
                format!("allowedFlexVolumes[{i}].driver"),
                "must not be empty",
            ));
        }
        let allowed_csi_drivers: NameList = raw
            .allowed_csi_drivers
            .unwrap_or_default()
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        if let Some(i) = allowed_csi_drivers.iter().position(str::is_empty) {
            return Err(err(
                format!("allowedCSIDrivers[{i}].name"),
                "must not be empty",
            ));
        }

        let allowed_unsafe_sysctls = raw.allowed_unsafe_sysctls.unwrap_or_default();
        let forbidden_sysctls = raw.forbidden_sysctls.unwrap_or_default();
        star_alone("allowedUnsafeSysctls", allowed_unsafe_sysctls.iter())?;
        star_alone("forbiddenSysctls", forbidden_sysctls.iter())?;
        // Overlaps cannot change a verdict (forbidden wins): not checked on re-read.
        for (i, a) in allowed_unsafe_sysctls
            .iter()
            .enumerate()
            .filter(|_| checked)
        {
            if let Some(f) = forbidden_sysctls.iter().find(|f| {
                sysctl_matches(f, a.trim_end_matches('*'))
                    || sysctl_matches(a, f.trim_end_matches('*'))
            }) {
                return Err(err(
                    format!("allowedUnsafeSysctls[{i}]"),
                    format!("{a:?} overlaps forbiddenSysctls entry {f:?}"),
                ));
            }
        }

        let allowed_proc_mount_types = raw
            .allowed_proc_mount_types
            .unwrap_or_else(|| vec!["Default".to_owned()]);
        for (i, t) in allowed_proc_mount_types.iter().enumerate() {
            if t != "Default" && t != "Unmasked" {
                return Err(err(
                    format!("allowedProcMountTypes[{i}]"),
                    format!("{t:?} is not one of Default, Unmasked"),
                ));
            }
        }

        let runtime_class = match raw.runtime_class {
            None => None,
            Some(rc) => {
                star_alone(
                    "runtimeClass.allowedRuntimeClassNames",
                    rc.allowed_runtime_class_names.iter().map(String::as_str),
                )?;
                if let Some(d) = &rc.default_runtime_class_name {
                    let any = rc.allowed_runtime_class_names.iter().any(|n| n == "*");
                    if d.is_empty() {
                        return Err(err(
                            "runtimeClass.defaultRuntimeClassName",
                            "must not be empty",
                        ));
                    }
                    if !any && !rc.allowed_runtime_class_names.contains(d) {
                        return Err(err(
                            "runtimeClass.defaultRuntimeClassName",
                            format!("{d:?} is not in allowedRuntimeClassNames"),
                        ));
                    }
                }
                Some(RuntimeClass {
                    allowed: rc.allowed_runtime_class_names,
                    default: rc.default_runtime_class_name,
                })
            }
        };

        let mut allowed_seccomp_profiles = NameList::new();
        for (i, p) in raw
            .allowed_seccomp_profiles
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            allowed_seccomp_profiles.push(&canonical_seccomp(
                &format!("allowedSeccompProfiles[{i}]"),
                p,
                true,
            )?);
        }
        star_alone("allowedSeccompProfiles", allowed_seccomp_profiles.iter())?;
        let default_seccomp_profile = match raw.default_seccomp_profile {
            None => None,
            Some(d) => {
                let d = canonical_seccomp("defaultSeccompProfile", &d, false)?;
                if !allowed_seccomp_profiles.contains("*") && !allowed_seccomp_profiles.contains(&d)
                {
                    return Err(err(
                        "defaultSeccompProfile",
                        format!("{d:?} is not in allowedSeccompProfiles"),
                    ));
                }
                Some(d)
            }
        };
        let mut allowed_app_armor_profiles = NameList::new();
        for (i, p) in raw
            .allowed_app_armor_profiles
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            allowed_app_armor_profiles.push(&canonical_apparmor(
                &format!("allowedAppArmorProfiles[{i}]"),
                p,
            )?);
        }
        policy_core::settings::no_duplicate_names(
            "allowedAppArmorProfiles",
            &allowed_app_armor_profiles,
        )?;
        let default_app_armor_profile = match raw.default_app_armor_profile {
            None => None,
            Some(d) => {
                let d = canonical_apparmor("defaultAppArmorProfile", &d)?;
                if !allowed_app_armor_profiles.is_empty()
                    && !allowed_app_armor_profiles.contains(&d)
                {
                    return Err(err(
                        "defaultAppArmorProfile",
                        format!("{d:?} is not in allowedAppArmorProfiles"),
                    ));
                }
                Some(d)
            }
        };

        Ok(PspSpec {
            privileged: raw.privileged.unwrap_or(false),
            host_network: raw.host_network.unwrap_or(false),
            host_pid: raw.host_pid.unwrap_or(false),
            host_ipc: raw.host_ipc.unwrap_or(false),
            host_ports,
            allowed_capabilities,
            default_add_capabilities,
            required_drop_capabilities,
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
            allowed_unsafe_sysctls: SysctlPatterns::new(allowed_unsafe_sysctls),
            forbidden_sysctls: SysctlPatterns::new(forbidden_sysctls),
            allowed_proc_mount_types,
            runtime_class,
            allowed_seccomp_profiles,
            default_seccomp_profile,
            allowed_app_armor_profiles,
            default_app_armor_profile,
        })
    }

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
        PspSpec::build(policy_core::settings::decode(&v)?)
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

#[cfg(test)]
mod host_path_tests {
    use super::*;
    use serde_json::json;

    fn decode(v: serde_json::Value) -> Result<AllowedHostPaths, String> {
        policy_core::settings::decode::<AllowedHostPaths>(&v).map_err(|e| e.to_string())
    }

    #[test]
    fn entries_in_order_with_read_only_defaulting_to_false() {
        let h = decode(json!([{"pathPrefix": "/data", "readOnly": true}, {"pathPrefix": "/srv/"}]))
            .unwrap();
        assert_eq!(h.prefixes().iter().collect::<Vec<_>>(), ["/data", "/srv/"]);
        assert_eq!(h.matching("/data/x"), [true]);
        assert_eq!(h.matching("/srv/a"), [false]);
        assert!(h.matching("/etc").is_empty() && !h.is_empty());
        let text = r#"[{"readOnly": false, "pathPrefix": "/a"}]"#;
        let from_text = policy_core::settings::decode::<AllowedHostPaths>(
            policy_core::settings::Raw::Json(text),
        );
        assert_eq!(from_text.unwrap().matching("/a"), [false]);
    }

    #[test]
    fn malformed_entries_are_refused_with_their_path() {
        for (v, message) in [
            (
                json!([{"readOnly": true}]),
                "[0]: missing field `pathPrefix`",
            ),
            (
                json!([{"pathPrefix": "/a"}, {"pathPrefix": "/b", "x": 1}]),
                "[1].x: unknown field `x`, expected `pathPrefix` or `readOnly`",
            ),
            (
                json!([{"pathPrefix": "data"}]),
                "[0].pathPrefix: \"data\" is not an absolute path",
            ),
            (
                json!([{"pathPrefix": "/a/../b"}]),
                "[0].pathPrefix: \"/a/../b\" must not contain \".\" or \"..\" components",
            ),
            (
                json!([{"pathPrefix": "/a", "readOnly": "yes"}]),
                "[0].readOnly: invalid type: string \"yes\", expected a boolean",
            ),
            (
                json!({"pathPrefix": "/a"}),
                "invalid type: map, expected a list of {pathPrefix, readOnly}",
            ),
        ] {
            assert_eq!(decode(v.clone()).unwrap_err(), message, "{v}");
        }
        // Settings re-read by `validate` were checked when the policy was loaded.
        let reread = policy_core::settings::reread(|| decode(json!([{"pathPrefix": "/a/.."}])));
        assert!(reread.is_ok());
    }
}
