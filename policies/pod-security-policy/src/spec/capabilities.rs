//! Capability lists (`allowedCapabilities`, `defaultAddCapabilities`,
//! `requiredDropCapabilities`).

use policy_decode::SettingsError;
use policy_decode::names::NameList;

use super::{err, star_alone};

/// The three capability lists of a spec, validated.
pub(super) struct Capabilities {
    /// `allowedCapabilities` (`*` = any).
    pub(super) allowed: NameList,
    /// `defaultAddCapabilities`.
    pub(super) default_add: NameList,
    /// `requiredDropCapabilities`.
    pub(super) required_drop: NameList,
}

/// Validates the capability lists: `*` alone and only in `allowedCapabilities`, and no
/// required drop that is also added or allowed.
pub(super) fn capabilities(
    allowed: Option<NameList>,
    default_add: Option<NameList>,
    required_drop: Option<NameList>,
) -> Result<Capabilities, SettingsError> {
    let caps = Capabilities {
        allowed: allowed.unwrap_or_default(),
        default_add: default_add.unwrap_or_default(),
        required_drop: required_drop.unwrap_or_default(),
    };
    star_alone("allowedCapabilities", caps.allowed.iter())?;
    star_alone("defaultAddCapabilities", caps.default_add.iter())?;
    star_alone("requiredDropCapabilities", caps.required_drop.iter())?;
    star_only_in_allowed(&caps)?;
    no_dropped_capability_granted(&caps)?;
    Ok(caps)
}

/// `*` means "any" only in `allowedCapabilities`.
fn star_only_in_allowed(caps: &Capabilities) -> Result<(), SettingsError> {
    for (field, list) in [
        ("defaultAddCapabilities", &caps.default_add),
        ("requiredDropCapabilities", &caps.required_drop),
    ] {
        if let Some(i) = list.iter().position(|c| c == "*") {
            return Err(err(
                format!("{field}[{i}]"),
                "\"*\" is only meaningful in allowedCapabilities",
            ));
        }
    }
    Ok(())
}

/// A required drop cannot also be added by default or allowed (conflicts cannot change a
/// verdict: not checked on re-read).
fn no_dropped_capability_granted(caps: &Capabilities) -> Result<(), SettingsError> {
    if policy_decode::settings::is_reread() {
        return Ok(());
    }
    for (i, cap) in caps.required_drop.iter().enumerate() {
        if caps.default_add.contains(cap) {
            return Err(err(
                format!("requiredDropCapabilities[{i}]"),
                format!("{cap:?} is also in defaultAddCapabilities"),
            ));
        }
        if caps.allowed.contains(cap) {
            return Err(err(
                format!("requiredDropCapabilities[{i}]"),
                format!("{cap:?} is also in allowedCapabilities"),
            ));
        }
    }
    Ok(())
}
