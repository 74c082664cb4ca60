//! Where a restriction applies (README "Settings", `restrictions[].binding`): its mode
//! (`Accept`, alias `Allow`, or `Drop`) and the namespaces it is bound to — by name globs or
//! by a selector over the Namespace's labels, read by cluster lookup
//! (`docs/semantics.md#lookups`) only when the globs did not match.

use kube_values::selector::{LabelSelector, RawLabelSelector};
use policy_admission::cluster::{GetRequest, Lookups};
use policy_admission::request::missing_namespace;
use policy_decode::{PolicyError, SettingsError};
use serde::Deserialize;
use tenancy_rules::principal::Glob;

/// `restrictions[].binding` as written in the settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawBinding {
    /// `Accept` (alias `Allow`) or `Drop`; any case.
    pub mode: Option<String>,
    /// Namespace name globs.
    pub namespaces: Option<Vec<String>>,
    /// Selector over the Namespace's labels.
    pub namespace_selector: Option<RawLabelSelector>,
}

/// How a bound restriction combines with the others (README "Combination").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BindingMode {
    /// Satisfying it admits the Pod whatever the Drop restrictions say.
    Accept,
    /// The Pod must satisfy it (and every other bound Drop restriction).
    #[default]
    Drop,
}

impl BindingMode {
    /// `Accept` or `Drop`, as shown in messages.
    pub fn as_str(&self) -> &'static str {
        match self {
            BindingMode::Accept => "Accept",
            BindingMode::Drop => "Drop",
        }
    }
}

/// A validated binding.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    /// The mode.
    pub mode: BindingMode,
    namespaces: Vec<Glob>,
    selector: Option<LabelSelector>,
}

impl TryFrom<RawBinding> for Binding {
    type Error = SettingsError;

    /// Validates a binding. Refused: an unknown mode, an empty `namespaces` list or glob,
    /// an empty or invalid selector.
    fn try_from(raw: RawBinding) -> Result<Binding, SettingsError> {
        let mode = binding_mode(raw.mode)?;
        let namespaces = namespace_globs(raw.namespaces)?;
        let selector = raw
            .namespace_selector
            .as_ref()
            .map(LabelSelector::build)
            .transpose()
            .map_err(|e| e.under("namespaceSelector"))?;
        Ok(Binding {
            mode,
            namespaces,
            selector,
        })
    }
}

/// `mode`: `Accept`, `Allow` (alias of Accept) or `Drop`, in any case (README rule 13);
/// absent = `Drop`.
fn binding_mode(raw: Option<String>) -> Result<BindingMode, SettingsError> {
    match raw.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("drop") => Ok(BindingMode::Drop),
        Some("accept") | Some("allow") => Ok(BindingMode::Accept),
        Some(_) => Err(SettingsError::new(
            "mode",
            format!(
                "{:?} is not one of Accept, Allow (alias of Accept), Drop",
                raw.unwrap_or_default()
            ),
        )),
    }
}

/// `namespaces`: absent, or a non-empty list of non-empty name globs.
fn namespace_globs(raw: Option<Vec<String>>) -> Result<Vec<Glob>, SettingsError> {
    match raw {
        None => Ok(Vec::new()),
        Some(list) if list.is_empty() => Err(SettingsError::new(
            "namespaces",
            "must not be empty; omit it (and namespaceSelector) to bind every namespace",
        )),
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, g)| {
                if g.is_empty() {
                    Err(SettingsError::new(
                        format!("namespaces[{i}]"),
                        "must not be empty",
                    ))
                } else {
                    Ok(Glob::new(g))
                }
            })
            .collect(),
    }
}

impl Binding {
    /// Whether the binding needs a Namespace lookup at all.
    pub fn uses_selector(&self) -> bool {
        self.selector.is_some()
    }

    /// Whether the restriction is bound in `namespace`. An object without namespace cannot
    /// be judged by a binding that names namespaces or selects them: 400
    /// ([`missing_namespace`]), never "unbound". The Namespace is read only when a selector
    /// is set and no glob matched; a Namespace that does not exist has no labels.
    pub fn binds(
        &self,
        namespace: Option<&str>,
        lookups: &mut Lookups<'_>,
    ) -> Result<bool, PolicyError> {
        if self.namespaces.is_empty() && self.selector.is_none() {
            return Ok(true);
        }
        let namespace = namespace.ok_or_else(missing_namespace)?;
        if self.namespaces.iter().any(|g| g.matches(namespace)) {
            return Ok(true);
        }
        let Some(selector) = &self.selector else {
            return Ok(false);
        };
        let request = GetRequest::cluster_scoped("v1", "Namespace", namespace);
        match lookups.read(&request, |ns| ns.selected_by(selector))? {
            Some(selected) => Ok(selected),
            None => Ok(selector.matches_map(None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn binding(v: Value) -> Result<Binding, SettingsError> {
        Binding::try_from(serde_json::from_value::<RawBinding>(v).unwrap())
    }

    #[rstest]
    #[case(json!({}), BindingMode::Drop)]
    #[case(json!({"mode": "Accept"}), BindingMode::Accept)]
    #[case(json!({"mode": "Allow"}), BindingMode::Accept)]
    #[case(json!({"mode": "drop"}), BindingMode::Drop)]
    fn modes(#[case] raw: Value, #[case] mode: BindingMode) {
        assert_eq!(binding(raw).unwrap().mode, mode);
    }

    #[rstest]
    #[case(json!({"mode": "Deny"}), "mode: \"Deny\" is not one of")]
    #[case(json!({"namespaces": []}), "namespaces: must not be empty")]
    #[case(json!({"namespaces": ["a", ""]}), "namespaces[1]: must not be empty")]
    #[case(json!({"namespaceSelector": {}}), "namespaceSelector: an empty selector is ambiguous")]
    #[case(json!({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}), "namespaceSelector.matchExpressions[0].operator")]
    fn refusals(#[case] raw: Value, #[case] message: &str) {
        let err = binding(raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn binds_by_glob_then_selector() {
        let mut cluster = Objects::new(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod-a", "labels": {"env": "prod"}}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev-a", "labels": {"env": "dev"}}}),
        ]);
        let mut lookups = Lookups::new(&mut cluster);
        let b = binding(json!({"namespaces": ["kube-*"], "namespaceSelector": {"matchLabels": {"env": "prod"}}})).unwrap();
        assert!(b.binds(Some("kube-system"), &mut lookups).unwrap());
        assert!(b.binds(Some("prod-a"), &mut lookups).unwrap());
        assert!(!b.binds(Some("dev-a"), &mut lookups).unwrap());
        assert!(!b.binds(Some("missing"), &mut lookups).unwrap());
        assert_eq!(b.binds(None, &mut lookups).unwrap_err().code(), 400);
        assert!(Binding::default().binds(None, &mut lookups).unwrap());
        let not_in = binding(json!({"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}})).unwrap();
        assert!(
            not_in.binds(Some("missing"), &mut lookups).unwrap(),
            "a missing namespace has no labels"
        );
    }

    #[test]
    fn failed_lookups_are_errors() {
        let mut cluster = Objects::default().failing("Namespace");
        let mut lookups = Lookups::new(&mut cluster);
        let b = binding(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})).unwrap();
        let err = b.binds(Some("a"), &mut lookups).unwrap_err();
        assert_eq!(err.code(), 500);
    }
}
