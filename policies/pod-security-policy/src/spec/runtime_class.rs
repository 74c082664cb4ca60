//! The runtime-class strategy (`runtimeClass`).

use policy_decode::SettingsError;

use super::raw::RawRuntimeClass;
use super::{err, star_alone};

/// The runtime-class strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeClass {
    /// Allowed names; `*` = any; empty = none may be set.
    pub allowed: Vec<String>,
    /// Written when the Pod names none.
    pub default: Option<String>,
}

/// `runtimeClass`: `*` alone, and a default that is not empty and is allowed.
impl TryFrom<RawRuntimeClass> for RuntimeClass {
    type Error = SettingsError;

    fn try_from(rc: RawRuntimeClass) -> Result<Self, SettingsError> {
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
        Ok(RuntimeClass {
            allowed: rc.allowed_runtime_class_names,
            default: rc.default_runtime_class_name,
        })
    }
}
