//! The SELinux strategy (`seLinux`).

use policy_decode::SettingsError;

use super::err;
use super::raw::RawSeLinux;

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

/// `seLinux` (required): `RunAsAny` without options, or `MustRunAs` with them.
pub(super) fn se_linux(raw: Option<RawSeLinux>) -> Result<SeLinux, SettingsError> {
    let Some(s) = raw else {
        return Err(err(
            "seLinux",
            "a rule is required (as in PodSecurityPolicy)",
        ));
    };
    match (s.rule.as_str(), s.se_linux_options) {
        ("RunAsAny", None) => Ok(SeLinux::RunAsAny),
        ("RunAsAny", Some(_)) => Err(err(
            "seLinux.seLinuxOptions",
            "seLinuxOptions are not used by RunAsAny",
        )),
        ("MustRunAs", Some(o)) => Ok(SeLinux::MustRunAs(SeLinuxOptions {
            user: o.user.unwrap_or_default(),
            role: o.role.unwrap_or_default(),
            type_: o.type_.unwrap_or_default(),
            level: o.level.unwrap_or_default(),
        })),
        ("MustRunAs", None) => Err(err(
            "seLinux.seLinuxOptions",
            "MustRunAs needs seLinuxOptions",
        )),
        (other, _) => Err(err(
            "seLinux.rule",
            format!("{other:?} is not one of MustRunAs, RunAsAny"),
        )),
    }
}
