//! The combination rule (README "Combination"), within one binding's settings:
//!
//! 1. any bound `Accept` restriction satisfied → accept;
//! 2. else every bound `Drop` restriction satisfied (or none bound) → accept;
//! 3. else reject with the violations of every failing Drop restriction, each prefixed
//!    `restriction "<name>" (Drop): `, followed by `no Accept restriction matched (<names>)`
//!    when Accept restrictions were bound.
//!
//! Bindings are evaluated lazily (Drop bindings only when no Accept restriction admitted
//! the object), so the Namespace is read only when a selector needs it.

use policy_admission::cluster::{Lookups, OnLookupError};
use policy_admission::verdict::distinct;
use policy_admission::{Verdict, Violation};
use policy_decode::{FieldPath, PolicyError};

use crate::binding::BindingMode;
use crate::fields::Template;
use crate::settings::{NamedRestriction, Settings};

/// Judges the templates of one object (a Pod's own, a workload's, or every template of a
/// custom resource) in `namespace` (`None` when the object has none: a restriction bound by
/// namespace then cannot be judged, 400).
pub fn judge(
    settings: &Settings,
    templates: &[Template<'_>],
    namespace: Option<&str>,
    lookups: &mut Lookups<'_>,
) -> Result<Verdict, PolicyError> {
    let mut verdict = Verdict::accept();
    let mut failed_accepts: Vec<&str> = Vec::new();
    for r in restrictions(settings, BindingMode::Accept) {
        if !bound(settings, r, namespace, lookups, &mut verdict)? {
            continue;
        }
        if violations(r, templates)?.is_empty() {
            return Ok(verdict);
        }
        failed_accepts.push(&r.name);
    }
    let mut failing = false;
    for r in restrictions(settings, BindingMode::Drop) {
        if !bound(settings, r, namespace, lookups, &mut verdict)? {
            continue;
        }
        for v in violations(r, templates)? {
            failing = true;
            verdict.violation(
                &FieldPath::empty(),
                format!("restriction {:?} (Drop): {v}", r.name),
            );
        }
    }
    if failing && !failed_accepts.is_empty() {
        verdict.violation(
            &FieldPath::empty(),
            format!(
                "no Accept restriction matched ({})",
                failed_accepts.join(", ")
            ),
        );
    }
    Ok(verdict)
}

fn restrictions(settings: &Settings, mode: BindingMode) -> impl Iterator<Item = &NamedRestriction> {
    settings
        .restrictions
        .iter()
        .filter(move |r| r.binding.mode == mode)
}

/// Whether `r` is bound in `namespace`; a failed lookup is an error, or with
/// `onLookupError: accept` leaves the restriction unbound with a warning.
fn bound(
    settings: &Settings,
    r: &NamedRestriction,
    namespace: Option<&str>,
    lookups: &mut Lookups<'_>,
    verdict: &mut Verdict,
) -> Result<bool, PolicyError> {
    match r.binding.binds(namespace, lookups) {
        Ok(b) => Ok(b),
        Err(e @ PolicyError::Lookup { .. })
            if settings.on_lookup_error == OnLookupError::Accept =>
        {
            verdict.warn(format!(
                "restriction {:?} ({}) skipped: {e}",
                r.name,
                r.binding.mode.as_str()
            ));
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Every violation of `r` over all templates, each reported once (one hash set: a 1 MiB
/// object can break a rule thousands of times).
fn violations(
    r: &NamedRestriction,
    templates: &[Template<'_>],
) -> Result<Vec<Violation>, PolicyError> {
    let mut found = Vec::new();
    for t in templates {
        r.spec.check(t, &mut found)?;
    }
    Ok(distinct(found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_decode::settings::Validated;
    use serde_json::{Value, json};

    fn run(
        settings: Value,
        pod: Value,
        namespace: &str,
        cluster: &mut Objects,
    ) -> Result<Verdict, PolicyError> {
        let settings = Settings::parse(&settings).unwrap();
        let t = Template::read(&pod, FieldPath::empty()).unwrap();
        let t = Template {
            is_template: false,
            ..t
        };
        let mut lookups = Lookups::new(cluster);
        judge(&settings, &[t], Some(namespace), &mut lookups)
    }

    fn settings() -> Value {
        json!({"restrictions": [
            {"name": "no-privileged", "spec": {"spec": {"containers": {"securityContext": {"privileged": {"require": false}}}}}},
            {"name": "no-host-network", "spec": {"spec": {"securityContext": {"hostNetwork": {"require": false}}}}},
            {"name": "system", "binding": {"mode": "Accept", "namespaces": ["kube-system"]},
             "spec": {"metadata": {"labels": {"requiredKeys": ["k8s-app"]}}}}
        ]})
    }

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"hostNetwork": true, "containers": [{"securityContext": {"privileged": true}}]}})
    }

    #[test]
    fn every_failing_drop_is_reported_and_failed_accepts_named() {
        let v = run(
            settings(),
            pod(json!({})),
            "kube-system",
            &mut Objects::default(),
        )
        .unwrap();
        assert_eq!(
            v.message(),
            "restriction \"no-privileged\" (Drop): spec.containers[0].securityContext.privileged: true, required false; \
             restriction \"no-host-network\" (Drop): spec.hostNetwork: true, required false; \
             no Accept restriction matched (system)"
        );
        let v = run(
            settings(),
            pod(json!({})),
            "team-a",
            &mut Objects::default(),
        )
        .unwrap();
        assert!(!v.message().contains("no Accept"), "{}", v.message());
    }

    #[test]
    fn a_satisfied_accept_admits() {
        let v = run(
            settings(),
            pod(json!({"k8s-app": "dns"})),
            "kube-system",
            &mut Objects::default(),
        )
        .unwrap();
        assert!(v.is_clean());
        let v = run(
            settings(),
            pod(json!({"k8s-app": "dns"})),
            "team-a",
            &mut Objects::default(),
        )
        .unwrap();
        assert!(!v.is_clean());
    }

    #[test]
    fn failed_lookups_reject_or_skip() {
        let s = json!({"restrictions": [{"name": "prod", "binding": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
            "spec": {"spec": {"securityContext": {"hostNetwork": {"require": false}}}}}]});
        let err = run(
            s.clone(),
            pod(json!({})),
            "a",
            &mut Objects::default().failing("Namespace"),
        )
        .unwrap_err();
        assert_eq!(err.code(), 500);
        let mut s = s;
        s["onLookupError"] = json!("accept");
        let v = run(
            s,
            pod(json!({})),
            "a",
            &mut Objects::default().failing("Namespace"),
        )
        .unwrap();
        assert!(v.is_clean());
        assert!(
            v.warnings()[0]
                .starts_with("restriction \"prod\" (Drop) skipped: cannot read Namespace \"a\""),
            "{:?}",
            v.warnings()
        );
    }
}
