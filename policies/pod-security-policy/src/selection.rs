//! PSP selection (README rules 1-4): which profiles the request may use, the Namespace read for
//! `fromNamespaceAnnotation` ranges, and the choice among usable profiles — the first (by
//! name) admitting the Pod unchanged wins, else the first admitting it with defaults applied.

use std::collections::BTreeMap;

use policy_admission::cluster::{GetRequest, Lookups, OnLookupError};
use policy_admission::pod::{PodKind, PodView};
use policy_admission::request::{AdmissionRequest, UserInfo};
use policy_admission::{Verdict, Violation};
use policy_decode::PolicyError;
use policy_decode::path::FieldPath;
use serde_json::Value;
use tenancy_rules::pss;

use crate::settings::{Body, Profile, Settings, Subjects};
use crate::strategy::{NamespaceIds, Resolved, defaults, validate};

/// Audit annotation naming the profile that admitted the request.
pub const PROFILE_ANNOTATION: &str = "pod-security-policy.tenancy-policies.io/profile";

impl Subjects {
    /// Whether the profile is usable: requester (never a trusted controller) by `users` or
    /// `groups`; the Pod's own service account by `serviceAccounts`; the namespace by
    /// `namespaces`.
    pub fn matches(
        &self,
        user: &UserInfo,
        trusted_controller: bool,
        namespace: &str,
        service_account: &str,
    ) -> bool {
        let requester = !trusted_controller
            && (self.users.matches(&user.username)
                || self
                    .groups
                    .matches_any(user.groups.iter().map(String::as_str)));
        requester
            || self
                .service_accounts
                .iter()
                .any(|p| p.matches(namespace, service_account))
            || self.namespaces.matches(namespace)
    }
}

/// How the chosen profile may change the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Pod CREATE in enforce mode: defaults are applied and returned.
    Apply,
    /// Templates: judged as if defaulted, never changed.
    AsIf,
    /// UPDATE, ephemeral containers, warn mode: only profiles admitting unchanged count.
    Forbidden,
}

/// Reads the request's Namespace for `fromNamespaceAnnotation` ranges; a failed read is an
/// error, or, with `onLookupError: accept`, a warning and skipped ranges.
fn read_namespace(
    namespace: &str,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<NamespaceIds, PolicyError> {
    let request = GetRequest::cluster_scoped("v1", "Namespace", namespace);
    let read = lookups.read(&request, |ns| {
        let annotations: BTreeMap<String, String> = ns
            .annotations()?
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
            .collect();
        Ok(annotations)
    });
    match read {
        Ok(Some(annotations)) => Ok(NamespaceIds::Read {
            name: namespace.to_owned(),
            annotations,
        }),
        Ok(None) => Ok(NamespaceIds::Missing(namespace.to_owned())),
        Err(e) if settings.on_lookup_error == OnLookupError::Accept => {
            verdict.warn(format!(
                "{e}; fromNamespaceAnnotation ranges were not checked (onLookupError: accept)"
            ));
            Ok(NamespaceIds::Skipped)
        }
        Err(e) => Err(e),
    }
}

/// Appends `violations`, each suffixed with the profile's name (README rule 4).
fn suffixed(profile: &Profile, violations: Vec<Violation>, out: &mut Vec<Violation>) {
    out.extend(violations.into_iter().map(|v| Violation {
        path: v.path,
        problem: format!("{} (profile {:?})", v.problem, profile.name),
    }));
}

/// Judges a pod-bearing object: returns the verdict with every usable profile's violations,
/// or the admitting profile (and, for [`Mutation::Apply`], the defaulted object).
pub fn select(
    request: &AdmissionRequest,
    kind: PodKind,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    mutation: Mutation,
) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    let Some(view) = PodView::read(&request.object, kind)? else {
        return Ok(verdict);
    };
    // Malformed fields are a 400 whichever profile would (not) have read them.
    tenancy_rules::security_context::check_shape(&view)?;
    // Profiles are chosen by namespace and by the Pod's service account `<ns>:<name>`.
    let namespace = request.namespace()?;
    let service_account = pod_service_account(&view)?;
    let user = &request.user_info;
    let trusted = settings.trusted_controllers.matches(user);
    let usable = usable_profiles(settings, user, trusted, namespace, service_account);
    if usable.is_empty() {
        verdict.violation(
            &FieldPath::empty(),
            format!(
                "no pod-security profile is usable by {}{} with service account \"{namespace}:{service_account}\" in namespace {namespace:?}",
                user.describe(),
                if trusted { " (a trusted controller, which never counts as requester)" } else { "" },
            ),
        );
        return Ok(verdict);
    }
    let needs_namespace = usable
        .iter()
        .any(|p| matches!(&p.body, Body::Spec(s) if s.reads_namespace()));
    let ns_ids = if needs_namespace {
        read_namespace(namespace, settings, lookups, &mut verdict)?
    } else {
        NamespaceIds::NotRead
    };
    let judged = Judged {
        request,
        view: &view,
        kind,
        ns_ids: &ns_ids,
        mutation,
    };
    choose(usable, &judged, verdict)
}

/// The Pod's own service account: `serviceAccountName`, else `serviceAccount`, else
/// `default`.
fn pod_service_account<'v>(view: &PodView<'v>) -> Result<&'v str, PolicyError> {
    Ok(match view.spec.get_str("serviceAccountName")? {
        Some(s) if !s.is_empty() => s,
        _ => match view.spec.get_str("serviceAccount")? {
            Some(s) if !s.is_empty() => s,
            _ => "default",
        },
    })
}

/// The profiles whose subjects match (README rule 1), in name byte order (README rule 2).
fn usable_profiles<'s>(
    settings: &'s Settings,
    user: &UserInfo,
    trusted: bool,
    namespace: &str,
    service_account: &str,
) -> Vec<&'s Profile> {
    let mut usable: Vec<&Profile> = settings
        .profiles
        .iter()
        .filter(|p| {
            p.subjects
                .matches(user, trusted, namespace, service_account)
        })
        .collect();
    // Tried by name (bytes), as PodSecurityPolicy did; only the usable ones are sorted.
    usable.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    usable
}

/// Tries the usable profiles in order (README rules 2-4): the first admitting the object
/// unchanged wins, else the first admitting it with its defaults; otherwise every
/// profile's violations.
fn choose(
    usable: Vec<&Profile>,
    judged: &Judged<'_>,
    mut verdict: Verdict,
) -> Result<Verdict, PolicyError> {
    let mut violations = Vec::new();
    let mut first_mutating: Option<(&Profile, Value)> = None;
    for profile in usable {
        match judged.judge(profile)? {
            Judgement::Admits => {
                verdict.annotate(PROFILE_ANNOTATION, profile.name.clone());
                return Ok(verdict);
            }
            Judgement::AdmitsDefaulted(defaulted) => {
                if first_mutating.is_none() {
                    first_mutating = Some((profile, defaulted));
                }
            }
            Judgement::Refuses(found) => suffixed(profile, found, &mut violations),
            Judgement::Skipped => {}
        }
    }
    if let Some((profile, defaulted)) = first_mutating {
        verdict.annotate(PROFILE_ANNOTATION, profile.name.clone());
        if judged.mutation == Mutation::Apply {
            verdict.mutate(defaulted);
        }
        return Ok(verdict);
    }
    verdict.extend(violations);
    Ok(verdict)
}

/// What one profile says about the object.
enum Judgement {
    /// It admits the object unchanged.
    Admits,
    /// It admits the object with its defaults applied: the defaulted object.
    AdmitsDefaulted(Value),
    /// It refuses the object, for these reasons.
    Refuses(Vec<Violation>),
    /// The defaulted object has no pod spec left to judge.
    Skipped,
}

/// The object being judged, with what every profile needs to judge it.
struct Judged<'r> {
    request: &'r AdmissionRequest,
    view: &'r PodView<'r>,
    kind: PodKind,
    ns_ids: &'r NamespaceIds,
    mutation: Mutation,
}

impl Judged<'_> {
    /// What `profile` says about the object.
    fn judge(&self, profile: &Profile) -> Result<Judgement, PolicyError> {
        let spec = match &profile.body {
            Body::Preset(level) => {
                let found = pss::check(*level, self.view)?;
                return Ok(if found.is_empty() {
                    Judgement::Admits
                } else {
                    Judgement::Refuses(found)
                });
            }
            Body::Spec(spec) => spec,
        };
        let resolved = match Resolved::resolve(spec, self.ns_ids) {
            Ok(r) => r,
            Err(reason) => return Ok(Judgement::Refuses(vec![unconditional(reason)])),
        };
        // The defaults are planned on the request's object; it is copied only when this
        // profile would change it.
        let planned = defaults::defaults(&resolved, &self.request.object, self.kind)?;
        let changed = !planned.is_empty();
        if self.mutation == Mutation::Forbidden || !changed {
            let found = validate::check(&resolved, self.view)?;
            return Ok(match (found.is_empty(), changed) {
                (true, false) => Judgement::Admits,
                (true, true) => Judgement::Refuses(vec![unconditional(
                    "admits this Pod only with its defaults applied, which cannot be done here (UPDATE, ephemeral containers or warn mode)".into(),
                )]),
                (false, _) => Judgement::Refuses(found),
            });
        }
        let mut defaulted = self.request.object.clone();
        planned.write(&mut defaulted)?;
        let Some(defaulted_view) = PodView::read(&defaulted, self.kind)? else {
            return Ok(Judgement::Skipped);
        };
        let found = validate::check(&resolved, &defaulted_view)?;
        Ok(if found.is_empty() {
            Judgement::AdmitsDefaulted(defaulted)
        } else {
            Judgement::Refuses(found)
        })
    }
}

/// A violation about the whole object (empty path).
fn unconditional(problem: String) -> Violation {
    Violation {
        path: FieldPath::empty(),
        problem,
    }
}

/// Whether an UPDATE is significant (README rule 6, as Pod Security Admission): for
/// workloads the template changed; for Pods the number of containers or init containers
/// changed, an image changed, or ephemeral containers were added or changed; for the
/// `ephemeralcontainers` subresource, ephemeral containers were added or changed.
pub fn significant_update(
    old: &Value,
    new: &Value,
    kind: PodKind,
    ephemeral_subresource: bool,
) -> bool {
    if kind.is_template() {
        return policy_admission::pod::pod_spec_changed(old, new, kind);
    }
    // Compared in place: no copy of either object's lists.
    fn field<'v>(v: &'v Value, f: &str) -> Option<&'v Value> {
        v.get("spec").and_then(|s| s.get(f))
    }
    let ephemeral_changed = field(old, "ephemeralContainers") != field(new, "ephemeralContainers");
    if ephemeral_subresource || ephemeral_changed {
        return ephemeral_changed;
    }
    for list in ["initContainers", "containers"] {
        fn items<'v>(v: &'v Value, list: &str) -> Vec<Option<&'v Value>> {
            field(v, list)
                .and_then(Value::as_array)
                .map(|l| l.iter().map(|c| c.get("image")).collect())
                .unwrap_or_default()
        }
        if items(old, list) != items(new, list) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::settings::Validated;
    use serde_json::json;

    #[test]
    fn subjects_match_requester_service_account_and_namespace() {
        let s = Settings::parse(&json!({"profiles": [{"name": "a", "preset": "baseline", "subjects": {
            "users": ["x"], "groups": ["system:serviceaccounts:kube-system"], "serviceAccounts": ["tool-*:default"], "namespaces": ["kube-system"]}}]}))
        .unwrap();
        let subj = &s.profiles[0].subjects;
        let user = |name: &str, groups: &[&str]| UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        };
        assert!(subj.matches(&user("x", &[]), false, "t", "sa"));
        assert!(
            !subj.matches(&user("x", &[]), true, "t", "sa"),
            "trusted controllers never match users"
        );
        assert!(!subj.matches(
            &user("rs", &["system:serviceaccounts:kube-system"]),
            true,
            "t",
            "sa"
        ));
        assert!(subj.matches(&user("y", &[]), true, "tool-a", "default"));
        assert!(subj.matches(&user("y", &[]), false, "kube-system", "other"));
        assert!(!subj.matches(&user("y", &[]), false, "tenant", "default"));
        let nobody = Subjects::default();
        assert!(!nobody.matches(&user("x", &[]), false, "kube-system", "default"));
    }

    #[test]
    fn significant_updates() {
        let pod = |image: &str, n: usize, eph: Value| json!({"spec": {"containers": vec![json!({"image": image, "name": "a"}); n], "ephemeralContainers": eph}});
        assert!(!significant_update(
            &pod("a", 1, Value::Null),
            &pod("a", 1, Value::Null),
            PodKind::Pod,
            false
        ));
        assert!(significant_update(
            &pod("a", 1, Value::Null),
            &pod("b", 1, Value::Null),
            PodKind::Pod,
            false
        ));
        assert!(significant_update(
            &pod("a", 1, Value::Null),
            &pod("a", 2, Value::Null),
            PodKind::Pod,
            false
        ));
        let eph = json!([{"name": "debug", "image": "busybox"}]);
        assert!(significant_update(
            &pod("a", 1, Value::Null),
            &pod("a", 1, eph.clone()),
            PodKind::Pod,
            true
        ));
        assert!(!significant_update(
            &pod("a", 1, eph.clone()),
            &pod("b", 1, eph),
            PodKind::Pod,
            true
        ));
        let mut labelled = pod("a", 1, Value::Null);
        labelled["metadata"] = json!({"labels": {"x": "y"}});
        assert!(!significant_update(
            &pod("a", 1, Value::Null),
            &labelled,
            PodKind::Pod,
            false
        ));
    }
}
