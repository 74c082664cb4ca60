//! Settings of pod-toleration-policy: protected taints and who may tolerate them, in the
//! current form or the legacy Chimera form.

use kube_values::toleration::{Effect, Taint};
use policy_decode::SettingsError;
use policy_decode::names::NameList;
use policy_decode::settings::Validated;
use policy_decode::settings::{is_reread, no_duplicates};
use serde::Deserialize;
use tenancy_rules::principal::{Principals, RawPrincipals};

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    protected_taints: Option<Vec<ProtectedTaint>>,
    trusted_controllers: Option<RawPrincipals>,
    // Legacy Chimera form.
    taint: Option<RawLegacyTaint>,
    #[serde(rename = "allowed_users")]
    allowed_users: Option<NameList>,
    #[serde(rename = "allowed_groups")]
    allowed_groups: Option<NameList>,
}

/// One protected taint as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawProtectedTaint {
    key: String,
    #[serde(default)]
    value: String,
    effect: Option<Effect>,
    #[serde(default)]
    allowed_users: NameList,
    #[serde(default)]
    allowed_groups: NameList,
    #[serde(default)]
    allowed_service_accounts: NameList,
}

/// The taint of the legacy Chimera form, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLegacyTaint {
    key: String,
    #[serde(default)]
    value: String,
}

/// One protected taint and the principals allowed to tolerate it with `Equal`, validated
/// as it is decoded (a list of 10,000 taints is not kept twice).
#[derive(Debug, Clone, PartialEq)]
pub struct ProtectedTaint {
    /// The taint (effect `None` = every effect).
    pub taint: Taint,
    /// Who may use an `Equal` toleration of it (boxed: taints are many and small to move;
    /// principals are large).
    pub allowed: Box<Principals>,
}

impl<'de> Deserialize<'de> for ProtectedTaint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        policy_decode::settings::converted(ProtectedTaint::try_from(
            RawProtectedTaint::deserialize(deserializer)?,
        ))
    }
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// At least one protected taint, no duplicates.
    pub protected_taints: Vec<ProtectedTaint>,
    /// The protected taints' keys, in the same order (to find a toleration's taints
    /// without trying every taint).
    pub keys: NameList,
    /// Controllers whose controller-owned objects are not re-judged.
    pub trusted_controllers: Principals,
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl Settings {
    /// The protected taints a toleration may cover, in settings order: those with its key,
    /// or all of them for a toleration without key.
    pub fn candidates(&self, toleration_key: &str) -> Vec<&ProtectedTaint> {
        if toleration_key.is_empty() {
            return self.protected_taints.iter().collect();
        }
        self.keys
            .positions(toleration_key)
            .into_iter()
            .filter_map(|i| self.protected_taints.get(i))
            .collect()
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let legacy =
            raw.taint.is_some() || raw.allowed_users.is_some() || raw.allowed_groups.is_some();
        let protected_taints = match (raw.protected_taints, legacy) {
            (Some(_), true) => {
                return Err(SettingsError::new(
                    "taint",
                    "the legacy form (taint, allowed_users, allowed_groups) cannot be mixed with protectedTaints",
                ));
            }
            (Some(list), false) if !list.is_empty() => list,
            (Some(_), false) | (None, false) => return Err(no_protected_taint()),
            (None, true) => vec![legacy_taint(
                raw.taint,
                raw.allowed_users,
                raw.allowed_groups,
            )?],
        };
        if !is_reread() {
            let taints: Vec<&Taint> = protected_taints.iter().map(|p| &p.taint).collect();
            no_duplicates("protectedTaints", &taints, |t| format!("for taint {t}"))?;
        }
        let trusted_controllers = match raw.trusted_controllers {
            Some(t) => Principals::build(t).map_err(|e| e.under("trustedControllers"))?,
            None => Principals::default_trusted_controllers(),
        };
        let keys = protected_taints
            .iter()
            .map(|p| p.taint.key.as_str())
            .collect();
        Ok(Settings {
            protected_taints,
            keys,
            trusted_controllers,
        })
    }
}

/// The refusal of settings without any protected taint.
fn no_protected_taint() -> SettingsError {
    SettingsError::new(
        "protectedTaints",
        "at least one protected taint is required",
    )
}

/// The one protected taint of the legacy Chimera form (`taint`, `allowed_users`,
/// `allowed_groups`): every effect, no service accounts.
fn legacy_taint(
    taint: Option<RawLegacyTaint>,
    allowed_users: Option<NameList>,
    allowed_groups: Option<NameList>,
) -> Result<ProtectedTaint, SettingsError> {
    let Some(taint) = taint else {
        return Err(SettingsError::new(
            "taint",
            "required when allowed_users or allowed_groups is given",
        ));
    };
    let taint = Taint::new(taint.key, taint.value, None).map_err(|e| e.under("taint"))?;
    let allowed = Principals::from_parts(
        [
            "allowed_users",
            "allowed_groups",
            "allowed_service_accounts",
        ],
        allowed_users.unwrap_or_default(),
        allowed_groups.unwrap_or_default(),
        &NameList::new(),
    )?;
    Ok(ProtectedTaint {
        taint,
        allowed: Box::new(allowed),
    })
}

impl TryFrom<RawProtectedTaint> for ProtectedTaint {
    type Error = SettingsError;

    fn try_from(p: RawProtectedTaint) -> Result<Self, SettingsError> {
        let taint = Taint::new(p.key, p.value, p.effect)?;
        let allowed = Principals::from_parts(
            ["allowedUsers", "allowedGroups", "allowedServiceAccounts"],
            p.allowed_users,
            p.allowed_groups,
            &p.allowed_service_accounts,
        )?;
        Ok(ProtectedTaint {
            taint,
            allowed: Box::new(allowed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[test]
    fn legacy_form_is_one_taint_without_effect() {
        let s = Settings::parse(&json!({"taint": {"key": "dedicated", "value": "tenantA"}, "allowed_groups": ["tenantA-users"]}))
            .unwrap();
        assert_eq!(s.protected_taints.len(), 1);
        assert_eq!(s.protected_taints[0].taint.to_string(), "dedicated=tenantA");
    }

    #[rstest]
    #[case(json!({}), "protectedTaints: at least one protected taint is required")]
    #[case(json!({"protectedTaints": []}), "protectedTaints: at least one protected taint is required")]
    #[case(json!({"protectedTaints": [{"key": "a", "value": "b"}], "taint": {"key": "a"}}), "taint: the legacy form")]
    #[case(json!({"protectedTaints": [{"key": "", "value": "b"}]}), "protectedTaints[0].key: must not be empty")]
    #[case(json!({"protectedTaints": [{"key": "a", "effect": "Never"}]}), "protectedTaints[0].effect: \"Never\" is not one of")]
    #[case(json!({"protectedTaints": [{"key": "a", "value": "b"}, {"key": "a", "value": "b"}]}), "protectedTaints[1]: duplicate entry for taint a=b")]
    #[case(json!({"protectedTaints": [{"key": "a", "allowedServiceAccounts": ["*:x"]}]}), "protectedTaints[0].allowedServiceAccounts[0]:")]
    #[case(json!({"protectedTaints": [{"key": "a", "allowedUsers": [""]}]}), "protectedTaints[0].allowedUsers[0]: must not be empty")]
    #[case(json!({"protectedTaints": [{"key": "a", "allowed": ["x"]}]}), "protectedTaints[0].allowed: unknown field `allowed`")]
    #[case(json!({"allowed_users": ["joe"]}), "taint: required when allowed_users")]
    #[case(json!({"taint": {"key": "", "value": "x"}}), "taint.key: must not be empty")]
    #[case(json!({"protectedTaints": [{"key": "a"}], "trustedControllers": {"serviceAccounts": ["nope"]}}), "trustedControllers.serviceAccounts[0]:")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn same_key_value_with_different_effects_is_allowed() {
        let s = Settings::parse(&json!({"protectedTaints": [
            {"key": "a", "value": "b", "effect": "NoSchedule"},
            {"key": "a", "value": "b", "effect": "NoExecute"}
        ]}));
        assert!(s.is_ok());
    }

    #[test]
    fn candidates_by_key_in_settings_order() {
        let s = Settings::parse(&json!({"protectedTaints": [
            {"key": "a", "value": "1"}, {"key": "b", "value": "1"}, {"key": "a", "value": "2"}
        ]}))
        .unwrap();
        // the first lookups compare keys, later ones use the index: same answers
        for _ in 0..8 {
            let values = |key: &str| -> Vec<String> {
                s.candidates(key)
                    .iter()
                    .map(|p| p.taint.to_string())
                    .collect()
            };
            assert_eq!(values("a"), ["a=1", "a=2"]);
            assert_eq!(values("b"), ["b=1"]);
            assert!(values("c").is_empty());
            assert_eq!(values(""), ["a=1", "b=1", "a=2"]);
        }
    }
}
