//! Class allow-lists (`docs/semantics.md#class-allow-lists`): which PriorityClasses, RuntimeClasses, StorageClasses,
//! GatewayClasses or DeviceClasses a tenant may name.
//!
//! A named class `v` is allowed when it is the tenant `default`, is listed in `allowed`,
//! fully matches one of `allowedRegex`, or — only when a `selector` is configured — the
//! class object fetched from the cluster carries matching labels. The class object is
//! fetched lazily, only when the names did not decide.
//!
//! ```
//! use tenancy_rules::class::{ClassAllowList, ClassKind, ClassOutcome};
//! use serde_json::json;
//! let list = ClassAllowList::parse(&json!({"allowed": ["gold"], "allowedRegex": "silver-.*"}), true).unwrap();
//! let kind = ClassKind::new("scheduling.k8s.io/v1", "PriorityClass");
//! let never = || -> Result<Option<policy_admission::cluster::Found>, policy_decode::PolicyError> { unreachable!() };
//! assert_eq!(list.judge_with(&kind, "silver-high", never).unwrap(), ClassOutcome::Allowed);
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use kube_values::selector::{LabelSelector, RawLabelSelector, RawRequirement};
use policy_admission::cluster::{Found, GetRequest, Lookups, OnLookupError};
use policy_admission::verdict::Verdict;
use policy_decode::error::{PolicyError, SettingsError};
use policy_decode::json::At;
use policy_decode::matcher::{FullMatch, OneOrMany, StringMatcher, regexes};
use policy_decode::message;
use policy_decode::names::NameList;
use policy_decode::path::FieldPath;
use policy_decode::settings::Validated;
use policy_decode::settings::{Raw, decode, no_duplicate_names};

/// The settings keys of a class allow-list when it sits at the top level of a policy's
/// settings (`matchLabels`/`matchExpressions` are the Capsule-style selector alias).
pub const CLASS_KEYS: [&str; 6] = [
    "allowed",
    "allowedRegex",
    "selector",
    "matchLabels",
    "matchExpressions",
    "default",
];

/// A policy's top-level settings split into the class allow-list fields ([`CLASS_KEYS`],
/// decoded) and the other fields (kept as JSON for the policy's own strict decoding): the
/// raw settings of the policies whose settings are a class allow-list at the top level.
#[derive(Debug, Default)]
pub struct RawTopLevel {
    class: Option<RawClassAllowList>,
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for RawTopLevel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SplitVisitor;
        impl<'de> serde::de::Visitor<'de> for SplitVisitor {
            type Value = RawTopLevel;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of settings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawTopLevel, A::Error> {
                use serde::de::Error;
                fn set<'de, T: Deserialize<'de>, A: serde::de::MapAccess<'de>>(
                    slot: &mut Option<T>,
                    key: &'static str,
                    map: &mut A,
                ) -> Result<(), A::Error> {
                    if slot.is_some() {
                        return Err(A::Error::duplicate_field(key));
                    }
                    *slot = Some(map.next_value()?);
                    Ok(())
                }
                let mut out = RawTopLevel::default();
                let mut c = RawClassAllowList::default();
                let mut any = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "allowed" => set(&mut c.allowed, "allowed", &mut map)?,
                        "allowedRegex" => set(&mut c.allowed_regex, "allowedRegex", &mut map)?,
                        "selector" => set(&mut c.selector, "selector", &mut map)?,
                        "matchLabels" => set(&mut c.match_labels, "matchLabels", &mut map)?,
                        "matchExpressions" => {
                            set(&mut c.match_expressions, "matchExpressions", &mut map)?
                        }
                        "default" => set(&mut c.default, "default", &mut map)?,
                        _ => {
                            let value: Value = map.next_value()?;
                            if out.rest.insert(key.clone(), value).is_some() {
                                return Err(A::Error::custom(format!("duplicate field `{key}`")));
                            }
                            continue;
                        }
                    }
                    any = true;
                }
                if any {
                    out.class = Some(c);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(SplitVisitor)
    }
}

impl RawTopLevel {
    /// The class allow-list (`None` when none of its fields is present) and the remaining
    /// settings, to be decoded strictly by the policy.
    pub fn split(
        self,
        allow_default: bool,
    ) -> Result<(Option<ClassAllowList>, Value), SettingsError> {
        let list = match self.class {
            Some(class) => Some(ClassAllowList::build(class, allow_default)?),
            None => None,
        };
        Ok((list, Value::Object(self.rest)))
    }
}

/// Raw settings of a class allow-list, as written by the operator.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawClassAllowList {
    /// Exact class names.
    #[serde(default)]
    pub allowed: Option<NameList>,
    /// Full-match regexes over the name (a string or a list).
    #[serde(default)]
    pub allowed_regex: Option<OneOrMany>,
    /// Label selector over the class object's labels.
    #[serde(default)]
    pub selector: Option<RawLabelSelector>,
    /// Capsule-style alias: `matchLabels` at the level of the block.
    #[serde(default)]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Capsule-style alias: `matchExpressions` at the level of the block.
    #[serde(default)]
    pub match_expressions: Option<Vec<RawRequirement>>,
    /// The class written when none is chosen; always allowed.
    #[serde(default)]
    pub default: Option<String>,
}

/// The Kubernetes kind of a class and the API version it is fetched with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassKind {
    /// `apiVersion` used for the lookup, e.g. `scheduling.k8s.io/v1`.
    pub api_version: String,
    /// Kind, e.g. `PriorityClass` (also used in messages).
    pub kind: String,
}

impl ClassKind {
    /// A class kind at an API version.
    pub fn new(api_version: &str, kind: &str) -> Self {
        ClassKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// The `get_resource` request for class `name` (classes are cluster-scoped).
    pub fn get(&self, name: &str) -> GetRequest {
        GetRequest::cluster_scoped(&self.api_version, &self.kind, name)
    }

    /// Fetches class `name` (`None` when it does not exist).
    pub fn fetch(
        &self,
        name: &str,
        lookups: &mut Lookups<'_>,
    ) -> Result<Option<Found>, PolicyError> {
        Ok(lookups.get(&self.get(name))?.cloned())
    }
}

/// One class object read at most once per request: the first [`ClassFetch::get`] asks the
/// cluster, later calls return the same answer (including the same failure), so a policy
/// that needs the object for several rules never repeats a lookup.
#[derive(Debug)]
pub struct ClassFetch<'k> {
    kind: &'k ClassKind,
    name: String,
    result: Option<Result<Option<Found>, PolicyError>>,
}

impl<'k> ClassFetch<'k> {
    /// A not yet fetched class object.
    pub fn new(kind: &'k ClassKind, name: &str) -> Self {
        ClassFetch {
            kind,
            name: name.to_owned(),
            result: None,
        }
    }

    /// The class object (`None` when it does not exist), fetched on first use.
    pub fn get(&mut self, lookups: &mut Lookups<'_>) -> Result<Option<Found>, PolicyError> {
        if self.result.is_none() {
            self.result = Some(self.kind.fetch(&self.name, lookups));
        }
        self.result.clone().unwrap_or(Ok(None))
    }

    /// The class object read with `read` (`None` when it does not exist), fetched on first
    /// use: a failed lookup and an answer of the wrong shape are one error.
    pub fn read<T>(
        &mut self,
        lookups: &mut Lookups<'_>,
        read: impl FnOnce(&Found) -> Result<T, PolicyError>,
    ) -> Result<Option<T>, PolicyError> {
        self.get(lookups)?.as_ref().map(read).transpose()
    }

    /// The answer if the object was already fetched.
    pub fn fetched(&self) -> Option<&Result<Option<Found>, PolicyError>> {
        self.result.as_ref()
    }
}

/// A validated class allow-list.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassAllowList {
    names: StringMatcher,
    selector: Option<LabelSelector>,
    default: Option<String>,
}

/// The result of judging one named class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClassOutcome {
    /// The class may be used.
    Allowed,
    /// The class is not in the allow-list (nor selected by its labels).
    NotAllowed {
        /// The class kind, e.g. `PriorityClass`.
        kind: String,
        /// The class named by the object.
        name: String,
        /// What is allowed ([`ClassAllowList::describe`]).
        allowed: String,
    },
    /// The class object, read for the selector, does not exist.
    Missing {
        /// The class kind, e.g. `PriorityClass`.
        kind: String,
        /// The class named by the object.
        name: String,
    },
}

impl ClassOutcome {
    /// The violation's problem (without path); `None` for [`ClassOutcome::Allowed`].
    pub fn problem(&self) -> Option<String> {
        match self {
            ClassOutcome::Allowed => None,
            ClassOutcome::NotAllowed {
                kind,
                name,
                allowed,
            } => Some(format!(
                "{kind} {name:?} is not allowed; allowed: {allowed}"
            )),
            ClassOutcome::Missing { kind, name } => Some(format!("{kind} {name:?} does not exist")),
        }
    }
}

impl ClassAllowList {
    /// Decodes and validates a class allow-list block (`allow_default: false` refuses the
    /// `default` field, e.g. for DeviceClasses).
    pub fn parse<'a>(raw: impl Into<Raw<'a>>, allow_default: bool) -> Result<Self, SettingsError> {
        let raw: RawClassAllowList = decode(raw)?;
        Self::build(raw, allow_default)
    }

    /// Validates decoded settings: a block with none of the fields is refused, empty
    /// selectors and invalid regexes are refused, `default` must not be empty.
    pub fn build(raw: RawClassAllowList, allow_default: bool) -> Result<Self, SettingsError> {
        require_a_field(&raw, allow_default)?;
        one_selector_form(&raw)?;
        let allowed = raw.allowed.clone().unwrap_or_default();
        no_duplicate_names("allowed", &allowed)?;
        let compiled = allowed_regexes(raw.allowed_regex.as_ref())?;
        let selector = selector(&raw)?;
        let default = tenant_default(raw.default, allow_default)?;
        Ok(ClassAllowList {
            names: StringMatcher::new(allowed, compiled),
            selector,
            default,
        })
    }

    /// Takes the class allow-list fields ([`CLASS_KEYS`]) out of a policy's top-level
    /// settings: see [`RawTopLevel::split`].
    pub fn from_top_level<'a>(
        raw: impl Into<Raw<'a>>,
        allow_default: bool,
    ) -> Result<(Option<Self>, Value), SettingsError> {
        decode::<RawTopLevel>(raw)?.split(allow_default)
    }

    /// The tenant default class, if configured.
    pub fn default(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// Whether a selector is configured (only then is a class object ever fetched).
    pub fn has_selector(&self) -> bool {
        self.selector.is_some()
    }

    /// Whether `name` is allowed without looking at the class object: the default, an
    /// exact name or a regex match.
    pub fn allows_by_name(&self, name: &str) -> bool {
        self.default.as_deref() == Some(name) || self.names.matches(name)
    }

    /// What is allowed, in settings order: `names [..], regexes [..], selector k=v,
    /// default "d"`, or `none`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.names.names().is_empty() {
            let names = self
                .names
                .names()
                .iter()
                .map(|n| if n.is_empty() { "\"\"" } else { n });
            parts.push(format!("names {}", message::bracketed(names)));
        }
        if !self.names.regex_list().is_empty() {
            let r = self
                .names
                .regex_list()
                .iter()
                .map(|r| format!("{:?}", r.pattern()));
            parts.push(format!("regexes {}", message::bracketed(r)));
        }
        if let Some(s) = &self.selector {
            parts.push(format!("selector {}", s.to_query()));
        }
        if let Some(d) = &self.default {
            parts.push(format!("default {d:?}"));
        }
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(", ")
        }
    }

    /// The outcome for a class that is not allowed.
    pub fn not_allowed(&self, kind: &ClassKind, name: &str) -> ClassOutcome {
        ClassOutcome::NotAllowed {
            kind: kind.kind.clone(),
            name: name.to_owned(),
            allowed: self.describe(),
        }
    }

    /// Judges class `name`, fetching its object through `lookups` only when the names did
    /// not decide and a selector is configured.
    pub fn judge(
        &self,
        kind: &ClassKind,
        name: &str,
        lookups: &mut Lookups<'_>,
    ) -> Result<ClassOutcome, PolicyError> {
        self.judge_with(kind, name, || kind.fetch(name, lookups))
    }

    /// Like [`ClassAllowList::judge`] with a caller-provided fetch (for a class object the
    /// policy already read). The empty name is never matched by the selector and never
    /// fetched.
    pub fn judge_with<F>(
        &self,
        kind: &ClassKind,
        name: &str,
        fetch: F,
    ) -> Result<ClassOutcome, PolicyError>
    where
        F: FnOnce() -> Result<Option<Found>, PolicyError>,
    {
        if self.allows_by_name(name) {
            return Ok(ClassOutcome::Allowed);
        }
        let Some(selector) = &self.selector else {
            return Ok(self.not_allowed(kind, name));
        };
        if name.is_empty() {
            return Ok(self.not_allowed(kind, name));
        }
        match fetch()? {
            None => Ok(ClassOutcome::Missing {
                kind: kind.kind.clone(),
                name: name.to_owned(),
            }),
            Some(object) if object.selected_by(selector)? => Ok(ClassOutcome::Allowed),
            Some(_) => Ok(self.not_allowed(kind, name)),
        }
    }
}

/// The key naming the Capsule-style selector alias in messages: `matchLabels` when given,
/// else `matchExpressions`.
fn alias_key(raw: &RawClassAllowList) -> &'static str {
    if raw.match_labels.is_some() {
        "matchLabels"
    } else {
        "matchExpressions"
    }
}

/// Whether the selector is given as the Capsule-style alias (top-level
/// `matchLabels`/`matchExpressions`).
fn has_alias(raw: &RawClassAllowList) -> bool {
    raw.match_labels.is_some() || raw.match_expressions.is_some()
}

/// A class allow-list names at least one of its fields (`allowed: []` forbids every class).
fn require_a_field(raw: &RawClassAllowList, allow_default: bool) -> Result<(), SettingsError> {
    if raw.allowed.is_some()
        || raw.allowed_regex.is_some()
        || raw.selector.is_some()
        || has_alias(raw)
        || raw.default.is_some()
    {
        return Ok(());
    }
    let fields = if allow_default {
        "allowed, allowedRegex, selector or default"
    } else {
        "allowed, allowedRegex or selector"
    };
    Err(SettingsError::new(
        "",
        format!(
            "the class allow-list needs at least one of {fields} (write `allowed: []` to forbid every explicit class)"
        ),
    ))
}

/// The selector is given either as `selector` or as the alias, not both.
fn one_selector_form(raw: &RawClassAllowList) -> Result<(), SettingsError> {
    if has_alias(raw) && raw.selector.is_some() {
        return Err(SettingsError::new(
            alias_key(raw),
            "give the selector either as `selector` or as top-level matchLabels/matchExpressions, not both",
        ));
    }
    Ok(())
}

/// The compiled `allowedRegex` (a single pattern's errors are reported at `allowedRegex`,
/// a list's at `allowedRegex[i]`).
fn allowed_regexes(raw: Option<&OneOrMany>) -> Result<Vec<FullMatch>, SettingsError> {
    let patterns = raw.cloned().unwrap_or_default().into_vec();
    match raw {
        Some(OneOrMany::One(_)) => regexes("allowedRegex", &patterns)
            .map_err(|e| SettingsError::new("allowedRegex", e.problem)),
        _ => regexes("allowedRegex", &patterns),
    }
}

/// The label selector over the class object, from `selector` or from the alias (whose
/// empty-selector refusal is reported at the alias key).
fn selector(raw: &RawClassAllowList) -> Result<Option<LabelSelector>, SettingsError> {
    if let Some(s) = &raw.selector {
        return LabelSelector::build(s)
            .map(Some)
            .map_err(|e| e.under("selector"));
    }
    if !has_alias(raw) {
        return Ok(None);
    }
    LabelSelector::build(&RawLabelSelector {
        match_labels: raw.match_labels.clone(),
        match_expressions: raw.match_expressions.clone(),
    })
    .map(Some)
    .map_err(|e| {
        if e.path.is_empty() {
            SettingsError::new(alias_key(raw), e.problem)
        } else {
            e
        }
    })
}

/// The tenant default: refused where the policy never writes a class, never empty.
fn tenant_default(
    default: Option<String>,
    allow_default: bool,
) -> Result<Option<String>, SettingsError> {
    match default {
        None => Ok(None),
        Some(_) if !allow_default => Err(SettingsError::new(
            "default",
            "this class allow-list has no default (the policy never writes a class)",
        )),
        Some(d) if d.is_empty() => Err(SettingsError::new("default", "must not be empty")),
        Some(d) => Ok(Some(d)),
    }
}

/// The tenant default class written into an object that names none (README rule of
/// priority-class and runtime-class policies, `docs/semantics.md#class-allow-lists`): the
/// class object is read, the object's `spec.<field>` is set to its name, and the fields the
/// class brings are added by the policy.
#[derive(Clone, Copy, Debug)]
pub struct DefaultClass<'a> {
    /// The class kind.
    pub kind: &'a ClassKind,
    /// The default class's name.
    pub name: &'a str,
    /// The `spec` field naming the class, e.g. `priorityClassName`.
    pub field: &'a str,
}

impl DefaultClass<'_> {
    /// Writes the default: a missing class is a violation at `path`; a failed lookup, or a
    /// class object `read` finds of the wrong shape, is handled by `on_error`; otherwise
    /// `spec.<field>` is set and `apply` adds what `read` took from the class.
    pub fn write<T>(
        &self,
        path: &FieldPath,
        on_error: OnLookupError,
        lookups: &mut Lookups<'_>,
        verdict: &mut Verdict,
        read: impl FnOnce(&Found) -> Result<T, PolicyError>,
        apply: impl FnOnce(T, &mut Verdict) -> Result<(), PolicyError>,
    ) -> Result<(), PolicyError> {
        match lookups.read(&self.kind.get(self.name), read) {
            Err(e) => skip_on_lookup_error(e, path, on_error, verdict),
            Ok(None) => {
                verdict.violation(
                    path,
                    format!("default {} {:?} does not exist", self.kind.kind, self.name),
                );
                Ok(())
            }
            Ok(Some(brings)) => {
                self.set_name(verdict);
                apply(brings, verdict)
            }
        }
    }

    /// Sets `spec.<field>` to the default's name, without reading the class.
    pub fn set_name(&self, verdict: &mut Verdict) {
        verdict.edit_set(&["spec"], self.field, Value::String(self.name.to_owned()));
    }
}

/// Settings of a policy made only of a top-level class allow-list and `onLookupError`
/// (runtime-class-policy, gateway-class-policy).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassPolicySettings {
    /// The allowed classes and the tenant default.
    pub classes: ClassAllowList,
    /// What a failed class lookup does.
    pub on_lookup_error: OnLookupError,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOnLookupError {
    on_lookup_error: Option<OnLookupError>,
}

impl Validated for ClassPolicySettings {
    type Written = RawTopLevel;
}

impl TryFrom<RawTopLevel> for ClassPolicySettings {
    type Error = SettingsError;

    fn try_from(top: RawTopLevel) -> Result<Self, SettingsError> {
        let (classes, rest) = top.split(true)?;
        let rest: RawOnLookupError = decode(&rest)?;
        let classes = classes.ok_or_else(missing_class_fields)?;
        Ok(ClassPolicySettings {
            classes,
            on_lookup_error: rest.on_lookup_error.unwrap_or_default(),
        })
    }
}

/// The class a pod spec names in `field` (`priorityClassName`, `runtimeClassName`): the
/// field's path and the name, an empty name counting as none, as the API server reads it.
pub fn named_in<'a>(
    spec: &At<'a>,
    field: &str,
) -> Result<(FieldPath, Option<&'a str>), PolicyError> {
    let name = spec.get_str(field)?.filter(|n| !n.is_empty());
    Ok((spec.path.field(field), name))
}

/// The refusal of top-level settings without any class field.
pub fn missing_class_fields() -> SettingsError {
    SettingsError::new(
        "",
        "at least one of allowed, allowedRegex, selector or default is required (write `allowed: []` to forbid every explicit class)",
    )
}

/// Records the outcome of a class check at `path`: a violation, or — for a failed lookup
/// with `onLookupError: accept` — a warning that the check was skipped (each warning once).
/// A failed lookup with `reject`, and any other error, is returned.
pub fn record(
    outcome: Result<ClassOutcome, PolicyError>,
    path: &FieldPath,
    on_error: OnLookupError,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    match outcome {
        Ok(outcome) => {
            if let Some(problem) = outcome.problem() {
                verdict.violation(path, problem);
            }
            Ok(())
        }
        Err(e) => skip_on_lookup_error(e, path, on_error, verdict),
    }
}

/// Handles a lookup failure by the `onLookupError` setting (`docs/semantics.md#lookups`): `reject` returns
/// the error (500); `accept` adds a warning naming the skipped check at `path` (once).
pub fn skip_on_lookup_error(
    error: PolicyError,
    path: &FieldPath,
    on_error: OnLookupError,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    match (&error, on_error) {
        (PolicyError::Lookup { .. }, OnLookupError::Accept) => {
            let warning = if path.is_empty() {
                format!("{error}; the check was skipped (onLookupError: accept)")
            } else {
                format!("{error}; {path} was not checked (onLookupError: accept)")
            };
            verdict.warn_once(warning);
            Ok(())
        }
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use rstest::rstest;
    use serde_json::json;

    fn pc(name: &str, labels: Value) -> Value {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": name, "labels": labels}, "value": 10})
    }

    fn kind() -> ClassKind {
        ClassKind::new("scheduling.k8s.io/v1", "PriorityClass")
    }

    fn judge(
        settings: Value,
        name: &str,
        cluster: &mut Objects,
    ) -> Result<ClassOutcome, PolicyError> {
        let list = ClassAllowList::parse(&settings, true).unwrap();
        let mut lookups = Lookups::new(cluster);
        list.judge(&kind(), name, &mut lookups)
    }

    #[rstest]
    #[case(json!({}), "", "needs at least one of allowed, allowedRegex, selector or default")]
    #[case(json!({"selector": {}}), "selector", "empty selector is ambiguous")]
    #[case(json!({"matchLabels": {}}), "matchLabels", "empty selector is ambiguous")]
    #[case(json!({"matchExpressions": []}), "matchExpressions", "empty selector is ambiguous")]
    #[case(json!({"matchLabels": {}, "matchExpressions": []}), "matchLabels", "empty selector is ambiguous")]
    #[case(json!({"selector": {"matchLabels": {"a": "b"}}, "matchLabels": {"a": "b"}}), "matchLabels", "not both")]
    #[case(json!({"allowedRegex": "("}), "allowedRegex", "invalid regex")]
    #[case(json!({"allowedRegex": ["a", "("]}), "allowedRegex[1]", "invalid regex")]
    #[case(json!({"default": ""}), "default", "must not be empty")]
    #[case(json!({"allowed": ["a", "a"]}), "allowed[1]", "duplicate entry")]
    #[case(json!({"allowed": "a"}), "allowed", "invalid type")]
    #[case(json!({"allowedClasses": ["a"]}), "allowedClasses", "unknown field `allowedClasses`")]
    #[case(json!({"selector": {"matchLabels": {"bad key": "x"}}}), "selector.matchLabels[\"bad key\"]", "invalid label key")]
    #[case(json!({"selector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["not valid"]}]}}), "selector.matchExpressions[0].values[0]", "invalid label value \"not valid\"")]
    #[case(json!({"matchLabels": {"env": "-x"}}), "matchLabels[\"env\"]", "invalid label value \"-x\"")]
    fn refused(#[case] raw: Value, #[case] path: &str, #[case] problem: &str) {
        let e = ClassAllowList::parse(&raw, true).unwrap_err();
        assert_eq!(e.path, path, "{e}");
        assert!(e.problem.contains(problem), "{e}");
    }

    #[test]
    fn default_refused_when_not_allowed() {
        let e = ClassAllowList::parse(&json!({"default": "x"}), false).unwrap_err();
        assert_eq!(e.path, "default");
        let e = ClassAllowList::parse(&json!({}), false).unwrap_err();
        assert!(
            e.problem.contains("allowed, allowedRegex or selector"),
            "{e}"
        );
    }

    #[test]
    fn names_regexes_and_default_need_no_lookup() {
        let mut c = Objects::default().failing("PriorityClass");
        let s = json!({"allowed": ["gold"], "allowedRegex": "silver", "selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"});
        assert_eq!(
            judge(s.clone(), "gold", &mut c).unwrap(),
            ClassOutcome::Allowed
        );
        assert_eq!(
            judge(s.clone(), "silver", &mut c).unwrap(),
            ClassOutcome::Allowed
        );
        assert_eq!(
            judge(s.clone(), "tenant-default", &mut c).unwrap(),
            ClassOutcome::Allowed
        );
        // full match: quicksilver-high is not "silver", so the selector is consulted (and fails)
        assert_eq!(
            judge(s, "quicksilver-high", &mut c).unwrap_err().code(),
            500
        );
    }

    #[test]
    fn selector_consults_the_class_object() {
        let mut c = Objects::new(vec![
            pc("gold", json!({"env": "production"})),
            pc("platinum", json!({})),
        ]);
        let s = json!({"selector": {"matchLabels": {"env": "production"}}, "default": "tenant-default"});
        assert_eq!(
            judge(s.clone(), "gold", &mut c).unwrap(),
            ClassOutcome::Allowed
        );
        assert_eq!(
            judge(s.clone(), "platinum", &mut c)
                .unwrap()
                .problem()
                .as_deref(),
            Some(
                "PriorityClass \"platinum\" is not allowed; allowed: selector env=production, default \"tenant-default\""
            )
        );
        let ghost = judge(s, "ghost", &mut c).unwrap();
        assert!(matches!(ghost, ClassOutcome::Missing { .. }));
        assert_eq!(
            ghost.problem().as_deref(),
            Some("PriorityClass \"ghost\" does not exist")
        );
    }

    #[test]
    fn wrong_shaped_labels_are_a_failed_lookup_never_no_labels() {
        // NotIn admits a class without the label: labels of the wrong shape must not.
        let s = json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["restricted"]}]}});
        for labels in [
            json!("tier=restricted"),
            json!(["restricted"]),
            json!({"tier": 1}),
        ] {
            let mut c = Objects::new(vec![pc("gold", labels.clone())]);
            let err = judge(s.clone(), "gold", &mut c).unwrap_err();
            assert_eq!(err.code(), 500, "{labels}");
            assert!(
                err.to_string().starts_with(
                    "cannot read PriorityClass \"gold\": unexpected answer: metadata.labels"
                ),
                "{err}"
            );
        }
        let mut c = Objects::new(vec![pc("gold", json!({"tier": "free"}))]);
        assert_eq!(judge(s, "gold", &mut c).unwrap(), ClassOutcome::Allowed);
    }

    #[test]
    fn capsule_alias_is_a_selector() {
        let mut c = Objects::new(vec![pc("gold", json!({"env": "production"}))]);
        let s = json!({"matchLabels": {"env": "production"}});
        assert_eq!(judge(s, "gold", &mut c).unwrap(), ClassOutcome::Allowed);
    }

    #[test]
    fn without_selector_nothing_is_fetched() {
        let mut c = Objects::default().failing("PriorityClass");
        let out = judge(json!({"allowed": []}), "gold", &mut c).unwrap();
        assert!(matches!(out, ClassOutcome::NotAllowed { .. }));
        assert_eq!(
            out.problem().as_deref(),
            Some("PriorityClass \"gold\" is not allowed; allowed: none")
        );
    }

    #[test]
    fn empty_name_only_by_names() {
        let mut c = Objects::default().failing("PriorityClass");
        let s = json!({"allowed": ["", "a"], "selector": {"matchLabels": {"x": "y"}}});
        assert_eq!(judge(s, "", &mut c).unwrap(), ClassOutcome::Allowed);
        let s = json!({"selector": {"matchLabels": {"x": "y"}}});
        assert!(matches!(
            judge(s, "", &mut c).unwrap(),
            ClassOutcome::NotAllowed { .. }
        ));
        let l = ClassAllowList::parse(
            &json!({"allowed": ["", "a"], "allowedRegex": ["b.*"]}),
            true,
        )
        .unwrap();
        assert_eq!(l.describe(), "names [\"\", a], regexes [\"b.*\"]");
    }

    #[test]
    fn top_level_split() {
        let (list, rest) = ClassAllowList::from_top_level(
            &json!({"allowed": ["a"], "onLookupError": "accept"}),
            true,
        )
        .unwrap();
        assert!(list.unwrap().allows_by_name("a"));
        assert_eq!(rest, json!({"onLookupError": "accept"}));
        let (list, _) =
            ClassAllowList::from_top_level(&json!({"onLookupError": "accept"}), true).unwrap();
        assert!(list.is_none());
    }

    #[test]
    fn top_level_split_from_json_text() {
        let text =
            r#"{"onLookupError": "accept", "allowed": ["a", "b"], "default": "d", "x": {"y": 1}}"#;
        let (list, rest) = ClassAllowList::from_top_level(Raw::Json(text), true).unwrap();
        let list = list.unwrap();
        assert!(list.allows_by_name("b") && list.allows_by_name("d") && !list.allows_by_name("c"));
        assert_eq!(rest, json!({"onLookupError": "accept", "x": {"y": 1}}));
        // the same answers as from a parsed value
        let (from_value, rest_value) =
            ClassAllowList::from_top_level(&serde_json::from_str::<Value>(text).unwrap(), true)
                .unwrap();
        assert_eq!(from_value, Some(list));
        assert_eq!(rest_value, rest);
        // errors name the path inside the class fields
        let e = ClassAllowList::from_top_level(Raw::Json(r#"{"allowed": ["a", 1]}"#), true)
            .unwrap_err();
        assert_eq!(e.path, "allowed[1]", "{e}");
        let e = ClassAllowList::from_top_level(Raw::Json(r#"{"allowed": ["a", "a"]}"#), true)
            .unwrap_err();
        assert_eq!(e.to_string(), "allowed[1]: duplicate entry \"a\"");
        // a repeated key: the last one wins, as when the settings were parsed first
        let text = r#"{"allowed": ["a"], "allowed": ["b"]}"#;
        let list = ClassAllowList::from_top_level(Raw::Json(text), true)
            .unwrap()
            .0
            .unwrap();
        assert!(list.allows_by_name("b") && !list.allows_by_name("a"));
        // null is no class block; a non-object is refused
        let (list, rest) = ClassAllowList::from_top_level(Raw::Json("null"), true).unwrap();
        assert!(list.is_none() && rest == json!({}));
        let e = ClassAllowList::from_top_level(Raw::Json("[1]"), true).unwrap_err();
        assert!(e.to_string().contains("expected a map of settings"), "{e}");
        // re-read: duplicates are not checked again
        let reread = policy_decode::settings::reread(|| {
            ClassAllowList::from_top_level(Raw::Json(r#"{"allowed": ["a", "a"]}"#), true)
        });
        assert!(reread.unwrap().0.unwrap().allows_by_name("a"));
    }

    proptest::proptest! {
        #[test]
        fn names_and_default_decide_without_lookup(
            names in proptest::collection::vec("[a-c]{1,3}", 0..4),
            default in proptest::option::of("[a-c]{1,3}"),
            probe in "[a-c]{1,3}",
        ) {
            let mut raw = json!({"allowed": names.iter().collect::<std::collections::BTreeSet<_>>()});
            if let Some(d) = &default {
                raw["default"] = json!(d);
            }
            let list = ClassAllowList::parse(&raw, true).unwrap();
            let expected = names.contains(&probe) || default.as_deref() == Some(probe.as_str());
            proptest::prop_assert_eq!(list.allows_by_name(&probe), expected);
            // without a selector the decision never needs the class object
            let out = list.judge_with(&kind(), &probe, || panic!("no lookup expected")).unwrap();
            proptest::prop_assert_eq!(out == ClassOutcome::Allowed, expected);
        }
    }

    #[test]
    fn default_class_is_written_with_what_the_class_brings() {
        let kind = kind();
        let path = FieldPath::root("spec").field("priorityClassName");
        let writer = DefaultClass {
            kind: &kind,
            name: "gold",
            field: "priorityClassName",
        };
        let read = |class: &Found| class.read(|at| at.get_i64("value"));
        let apply = |value: Option<i64>, verdict: &mut Verdict| {
            verdict.edit_set(&["spec"], "priority", json!(value));
            Ok(())
        };
        let mut cluster = Objects::new(vec![pc("gold", json!({}))]);
        let mut verdict = Verdict::accept();
        writer
            .write(
                &path,
                OnLookupError::Reject,
                &mut Lookups::new(&mut cluster),
                &mut verdict,
                read,
                apply,
            )
            .unwrap();
        let response = verdict
            .into_response_for(policy_admission::Mode::Enforce, json!({"spec": {}}))
            .unwrap();
        assert_eq!(
            response.mutated_object.unwrap()["spec"],
            json!({"priorityClassName": "gold", "priority": 10})
        );
        // a missing default is a violation; a failed lookup follows onLookupError
        let mut verdict = Verdict::accept();
        writer
            .write(
                &path,
                OnLookupError::Reject,
                &mut Lookups::new(&mut Objects::default()),
                &mut verdict,
                read,
                apply,
            )
            .unwrap();
        assert_eq!(
            verdict.message(),
            "spec.priorityClassName: default PriorityClass \"gold\" does not exist"
        );
        let mut failing = Objects::default().failing("PriorityClass");
        let mut verdict = Verdict::accept();
        writer
            .write(
                &path,
                OnLookupError::Accept,
                &mut Lookups::new(&mut failing),
                &mut verdict,
                read,
                apply,
            )
            .unwrap();
        assert!(verdict.is_clean() && !verdict.has_edits());
        assert_eq!(verdict.warnings().len(), 1);
        // a default class of the wrong shape is a failed lookup too: nothing is written
        let mut malformed = Objects::new(vec![json!({"apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass", "metadata": {"name": "gold"}, "value": "high"})]);
        let err = writer
            .write(
                &path,
                OnLookupError::Reject,
                &mut Lookups::new(&mut malformed),
                &mut Verdict::accept(),
                read,
                apply,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read PriorityClass \"gold\": unexpected answer: value: expected an integer"
        );
        let mut verdict = Verdict::accept();
        writer
            .write(
                &path,
                OnLookupError::Accept,
                &mut Lookups::new(&mut malformed),
                &mut verdict,
                read,
                apply,
            )
            .unwrap();
        assert!(verdict.is_clean() && !verdict.has_edits());
        assert_eq!(verdict.warnings().len(), 1);
    }

    #[test]
    fn recording_lookup_failures() {
        let err = PolicyError::Lookup {
            what: "PriorityClass \"x\"".into(),
            reason: "boom".into(),
        };
        let path = FieldPath::root("spec").field("priorityClassName");
        let mut v = Verdict::accept();
        assert!(record(Err(err.clone()), &path, OnLookupError::Reject, &mut v).is_err());
        record(Err(err.clone()), &path, OnLookupError::Accept, &mut v).unwrap();
        record(Err(err), &path, OnLookupError::Accept, &mut v).unwrap();
        assert_eq!(
            v.warnings(),
            [
                "cannot read PriorityClass \"x\": boom; spec.priorityClassName was not checked (onLookupError: accept)"
            ]
        );
        assert!(v.is_clean());
    }
}
