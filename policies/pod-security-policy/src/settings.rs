//! Settings of pod-security-policy: `mode`, named `profiles` (each a PSP spec or a Pod
//! Security Standards preset, plus the subjects that may use it), `trustedControllers`,
//! `onLookupError`.

use policy_admission::cluster::OnLookupError;
use std::collections::HashSet;

use policy_admission::Mode;
use policy_decode::SettingsError;
use policy_decode::names::NameList;
use policy_decode::settings::is_reread;
use serde::Deserialize;
use tenancy_rules::principal::{GlobSet, Principals, RawPrincipals, ServiceAccountPattern};
use tenancy_rules::pss::Level;

use crate::spec::{PspSpec, RawSpec};
use policy_decode::settings::Validated;

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    mode: Option<Mode>,
    // Each profile is validated as it is decoded (see `Profile`'s `Deserialize`).
    profiles: Option<Vec<Profile>>,
    trusted_controllers: Option<RawPrincipals>,
    on_lookup_error: Option<OnLookupError>,
}

/// One profile as written (validated into [`Profile`] while decoded).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawProfile {
    name: String,
    #[serde(default)]
    subjects: RawSubjects,
    // Boxed: a PSP spec is large, and a list of 10,000 profiles should not move it around.
    spec: Option<Box<RawSpec>>,
    preset: Option<Level>,
}

/// A profile's `subjects` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSubjects {
    #[serde(default)]
    users: NameList,
    #[serde(default)]
    groups: NameList,
    #[serde(default)]
    service_accounts: NameList,
    #[serde(default)]
    namespaces: NameList,
}

/// Who may use a profile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Subjects {
    /// Globs over the requester's username.
    pub users: GlobSet,
    /// Globs over the requester's groups.
    pub groups: GlobSet,
    /// Patterns over the Pod's own service account.
    pub service_accounts: Vec<ServiceAccountPattern>,
    /// Globs over the object's namespace.
    pub namespaces: GlobSet,
}

/// Globs must not be empty; service-account patterns must parse.
impl TryFrom<RawSubjects> for Subjects {
    type Error = SettingsError;

    fn try_from(raw: RawSubjects) -> Result<Self, SettingsError> {
        let users = GlobSet::new(raw.users);
        let groups = GlobSet::new(raw.groups);
        let namespaces = GlobSet::new(raw.namespaces);
        users.refuse_empty("users")?;
        groups.refuse_empty("groups")?;
        namespaces.refuse_empty("namespaces")?;
        let mut service_accounts = Vec::with_capacity(raw.service_accounts.len());
        for (i, s) in raw.service_accounts.iter().enumerate() {
            service_accounts.push(
                ServiceAccountPattern::parse(s)
                    .map_err(|e| SettingsError::new(format!("serviceAccounts[{i}]"), e))?,
            );
        }
        Ok(Subjects {
            users,
            groups,
            service_accounts,
            namespaces,
        })
    }
}

/// What a profile enforces.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// A PSP spec (validates and defaults).
    Spec(Box<PspSpec>),
    /// A Pod Security Standards level (validates only).
    Preset(Level),
}

/// One named profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Unique name; profiles are tried in its byte order.
    pub name: String,
    /// Who may use it.
    /// (Boxed: profiles are many and small to move; subjects are large.)
    pub subjects: Box<Subjects>,
    /// What it enforces.
    pub body: Body,
}

/// Validates one profile; error paths are relative to it (`subjects.users[0]`).
impl TryFrom<RawProfile> for Profile {
    type Error = SettingsError;

    fn try_from(p: RawProfile) -> Result<Self, SettingsError> {
        if p.name.is_empty() {
            return Err(SettingsError::new("name", "must not be empty"));
        }
        let subjects = Box::new(Subjects::try_from(p.subjects).map_err(|e| e.under("subjects"))?);
        let body = match (p.spec, p.preset) {
            (Some(_), Some(_)) => {
                return Err(SettingsError::new(
                    "",
                    "give exactly one of spec and preset, not both",
                ));
            }
            (None, None) => {
                return Err(SettingsError::new(
                    "",
                    "give exactly one of spec and preset",
                ));
            }
            (Some(spec), None) => Body::Spec(Box::new(
                PspSpec::try_from(*spec).map_err(|e| e.under("spec"))?,
            )),
            (None, Some(level)) => Body::Preset(level),
        };
        Ok(Profile {
            name: p.name,
            subjects,
            body,
        })
    }
}

/// Profiles are validated as they are decoded (a list of 10,000 profiles is not kept
/// twice); errors name the profile (`profiles[2].spec.runAsUser`).
impl<'de> Deserialize<'de> for Profile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        policy_decode::settings::converted(Profile::try_from(RawProfile::deserialize(
            deserializer,
        )?))
    }
}

/// Validated settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `enforce` or `warn`.
    pub mode: Mode,
    /// Profiles in settings order (selection tries the usable ones by name).
    pub profiles: Vec<Profile>,
    /// Identities that never count as requesters for `users`/`groups`.
    pub trusted_controllers: Principals,
    /// What a failed Namespace lookup does.
    pub on_lookup_error: OnLookupError,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let profiles = raw.profiles.unwrap_or_default();
        if profiles.is_empty() {
            return Err(SettingsError::new(
                "profiles",
                "at least one profile is required",
            ));
        }
        // A duplicate name cannot change a verdict: not checked on re-read.
        if !is_reread() {
            let mut names = HashSet::with_capacity(profiles.len());
            for (i, p) in profiles.iter().enumerate() {
                if !names.insert(p.name.as_str()) {
                    return Err(SettingsError::new(
                        format!("profiles[{i}].name"),
                        format!("duplicate profile name {:?}", p.name),
                    ));
                }
            }
        }
        let trusted_controllers = match raw.trusted_controllers {
            Some(t) => Principals::build(t).map_err(|e| e.under("trustedControllers"))?,
            None => Principals::default_trusted_controllers(),
        };
        Ok(Settings {
            mode: raw.mode.unwrap_or_default(),
            profiles,
            trusted_controllers,
            on_lookup_error: raw.on_lookup_error.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({}), "profiles: at least one profile is required")]
    #[case(json!({"profiles": []}), "profiles: at least one profile is required")]
    #[case(json!({"profiles": [{"name": "a", "preset": "restricted"}, {"name": "a", "preset": "baseline"}]}), "profiles[1].name: duplicate profile name \"a\"")]
    #[case(json!({"profiles": [{"name": "", "preset": "restricted"}]}), "profiles[0].name: must not be empty")]
    #[case(json!({"profiles": [{"name": "a"}]}), "profiles[0]: give exactly one of spec and preset")]
    #[case(json!({"profiles": [{"name": "a", "preset": "restricted", "spec": {}}]}), "profiles[0]: give exactly one of spec and preset, not both")]
    #[case(json!({"profiles": [{"name": "a", "preset": "strict"}]}), "profiles[0].preset: \"strict\" is not one of privileged, baseline, restricted")]
    #[case(json!({"profiles": [{"name": "a", "spec": {}}]}), "profiles[0].spec.runAsUser: a rule is required")]
    #[case(json!({"profiles": [{"name": "a", "preset": "baseline", "subjects": {"serviceAccounts": ["*:default"]}}]}), "profiles[0].subjects.serviceAccounts[0]: \"*:default\": the namespace part must not be only wildcards")]
    #[case(json!({"profiles": [{"name": "a", "preset": "baseline", "subjects": {"teams": ["x"]}}]}), "profiles[0].subjects.teams: unknown field `teams`")]
    #[case(json!({"mode": "audit", "profiles": [{"name": "a", "preset": "baseline"}]}), "mode: unknown variant `audit`")]
    #[case(json!({"profiles": [{"name": "a", "preset": "baseline"}], "trustedControllers": {"users": [""]}}), "trustedControllers.users[0]: must not be empty")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let e = Settings::parse(&raw).unwrap_err().to_string();
        assert!(e.starts_with(message), "{e}");
    }

    #[test]
    fn profiles_keep_settings_order() {
        let s = Settings::parse(&json!({"profiles": [
            {"name": "zzz", "preset": "baseline"}, {"name": "001-foo", "preset": "restricted"}, {"name": "Z", "preset": "privileged"}]}))
        .unwrap();
        let names: Vec<&str> = s.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["zzz", "001-foo", "Z"]);
        assert_eq!(s.mode, Mode::Enforce);
        assert_eq!(
            s.trusted_controllers,
            Principals::default_trusted_controllers()
        );
    }

    #[test]
    fn duplicate_profile_names_are_found_in_one_pass_and_not_on_re_read() {
        let raw = json!({"profiles": [
            {"name": "b", "preset": "baseline"}, {"name": "a", "preset": "restricted"},
            {"name": "c", "preset": "baseline"}, {"name": "a", "preset": "baseline"}
        ]});
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert_eq!(err, "profiles[3].name: duplicate profile name \"a\"");
        let reread = policy_decode::settings::reread(|| Settings::parse(&raw)).unwrap();
        let names: Vec<&str> = reread.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "c", "a"]);
    }
}
