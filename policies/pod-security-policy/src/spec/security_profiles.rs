//! Seccomp and AppArmor profile lists and defaults, in annotation syntax
//! (`runtime/default`, `localhost/<path>`, `unconfined`).

use policy_decode::SettingsError;
use policy_decode::names::NameList;

use super::{err, star_alone};

/// A seccomp profile in canonical annotation syntax (`docker/default` is `runtime/default`);
/// `*` and `""` only where `allow_special` (lists).
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

/// An AppArmor profile in annotation syntax (`runtime/default`, `localhost/<name>`,
/// `unconfined`).
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

/// `allowedSeccompProfiles` (canonical, `*` alone) and `defaultSeccompProfile` (allowed).
pub(super) fn seccomp_profiles(
    allowed: Option<Vec<String>>,
    default: Option<String>,
) -> Result<(NameList, Option<String>), SettingsError> {
    let mut allowed_profiles = NameList::new();
    for (i, p) in allowed.unwrap_or_default().iter().enumerate() {
        allowed_profiles.push(&canonical_seccomp(
            &format!("allowedSeccompProfiles[{i}]"),
            p,
            true,
        )?);
    }
    star_alone("allowedSeccompProfiles", allowed_profiles.iter())?;
    let default = match default {
        None => None,
        Some(d) => {
            let d = canonical_seccomp("defaultSeccompProfile", &d, false)?;
            if !allowed_profiles.contains("*") && !allowed_profiles.contains(&d) {
                return Err(err(
                    "defaultSeccompProfile",
                    format!("{d:?} is not in allowedSeccompProfiles"),
                ));
            }
            Some(d)
        }
    };
    Ok((allowed_profiles, default))
}

/// `allowedAppArmorProfiles` (valid, no duplicates) and `defaultAppArmorProfile` (allowed
/// when a list is given).
pub(super) fn app_armor_profiles(
    allowed: Option<Vec<String>>,
    default: Option<String>,
) -> Result<(NameList, Option<String>), SettingsError> {
    let mut allowed_profiles = NameList::new();
    for (i, p) in allowed.unwrap_or_default().iter().enumerate() {
        allowed_profiles.push(&canonical_apparmor(
            &format!("allowedAppArmorProfiles[{i}]"),
            p,
        )?);
    }
    policy_decode::settings::no_duplicate_names("allowedAppArmorProfiles", &allowed_profiles)?;
    let default = match default {
        None => None,
        Some(d) => {
            let d = canonical_apparmor("defaultAppArmorProfile", &d)?;
            if !allowed_profiles.is_empty() && !allowed_profiles.contains(&d) {
                return Err(err(
                    "defaultAppArmorProfile",
                    format!("{d:?} is not in allowedAppArmorProfiles"),
                ));
            }
            Some(d)
        }
    };
    Ok((allowed_profiles, default))
}
