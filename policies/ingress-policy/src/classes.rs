//! README rules 8–11: the IngressClass of an Ingress (`spec.ingressClassName` and the
//! `kubernetes.io/ingress.class` annotation), the tenant default written on CREATE, and the
//! cluster default injected by the DefaultIngressClass plugin
//! (`docs/semantics.md#class-allow-lists`).

use policy_admission::Verdict;
use policy_admission::cluster::{Found, Lookups, OnLookupError};
use policy_decode::{FieldPath, PolicyError};
use tenancy_rules::class::{
    ClassAllowList, ClassFetch, ClassKind, ClassOutcome, DefaultClass, skip_on_lookup_error,
};

use crate::ingress::ClassValues;
use crate::report::{Part, Report};
use crate::settings::Settings;

/// The annotation the DefaultIngressClass plugin reads to find the cluster default.
pub const IS_DEFAULT_CLASS: &str = "ingressclass.kubernetes.io/is-default-class";

/// The IngressClass kind, as read and as named in messages.
pub fn ingress_class() -> ClassKind {
    ClassKind::new("networking.k8s.io/v1", "IngressClass")
}

/// Where a class rule writes its findings.
pub struct Outcome<'a> {
    /// The violations.
    pub report: &'a mut Report,
    /// Warnings (skipped lookups) and the default written.
    pub verdict: &'a mut Verdict,
}

/// README rules 8–11 for one request (on UPDATE the caller judges only when a value
/// changed).
pub fn judge(
    values: &ClassValues<'_>,
    create: bool,
    settings: &Settings,
    lookups: &mut Lookups<'_>,
    out: Outcome<'_>,
) -> Result<(), PolicyError> {
    mismatch(values, out.report);
    let Some(classes) = &settings.allowed_classes else {
        return Ok(());
    };
    let mut judge = Judge {
        classes,
        on_error: settings.on_lookup_error,
        lookups,
        out,
    };
    let kind = ingress_class();
    if let Some(field) = values.field {
        let mut fetch = ClassFetch::new(&kind, field);
        if create && judge.cluster_default_replaced(values, settings, &mut fetch)? {
            return Ok(());
        }
        judge.named(
            &kind,
            field,
            &mut fetch,
            &values.field_path,
            Part::ClassName,
        )?;
    }
    if let Some(annotation) = values.annotation
        && values.field != Some(annotation)
    {
        let mut fetch = ClassFetch::new(&kind, annotation);
        judge.named(
            &kind,
            annotation,
            &mut fetch,
            &values.annotation_path,
            Part::Metadata,
        )?;
    }
    if values.field.is_none() && values.annotation.is_none() {
        judge.no_class(values, create);
    }
    Ok(())
}

/// README rule 8: the field and the annotation name different classes.
fn mismatch(values: &ClassValues<'_>, report: &mut Report) {
    if let (Some(field), Some(annotation)) = (values.field, values.annotation)
        && field != annotation
    {
        report.violation(
            Part::Metadata,
            &values.annotation_path,
            format!(
                "{annotation:?} differs from spec.ingressClassName {field:?}; an Ingress names one IngressClass"
            ),
        );
    }
}

/// Whether an IngressClass object is the cluster default.
fn is_cluster_default(class: &Found) -> Result<bool, PolicyError> {
    Ok(class.annotation(IS_DEFAULT_CLASS)? == Some("true"))
}

/// The class rules of one request with an allow-list.
struct Judge<'s, 'l, 'c, 'o> {
    classes: &'s ClassAllowList,
    on_error: OnLookupError,
    lookups: &'l mut Lookups<'c>,
    out: Outcome<'o>,
}

impl Judge<'_, '_, '_, '_> {
    /// README rule 9: no class. CREATE with a tenant default → the default is written;
    /// otherwise a violation.
    fn no_class(&mut self, values: &ClassValues<'_>, create: bool) {
        match self.classes.default() {
            Some(name) if create => DefaultClass {
                kind: &ingress_class(),
                name,
                field: "ingressClassName",
            }
            .set_name(self.out.verdict),
            _ => self.out.report.violation(
                Part::ClassName,
                &values.field_path,
                format!(
                    "an IngressClass is required; allowed: {}",
                    self.classes.describe()
                ),
            ),
        }
    }

    /// README rule 10: on CREATE, a field naming the cluster default (and no annotation)
    /// counts as no class when a tenant default replaces it; the default is written.
    /// Returns whether it was.
    fn cluster_default_replaced(
        &mut self,
        values: &ClassValues<'_>,
        settings: &Settings,
        fetch: &mut ClassFetch<'_>,
    ) -> Result<bool, PolicyError> {
        let Some(default) = self.classes.default() else {
            return Ok(false);
        };
        if values.annotation.is_some()
            || !settings.replace_cluster_default
            || values.field == Some(default)
        {
            return Ok(false);
        }
        match fetch.read(self.lookups, is_cluster_default) {
            Ok(Some(true)) => {
                self.no_class(values, true);
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(e) => {
                skip_on_lookup_error(e, &values.field_path, self.on_error, self.out.verdict)?;
                Ok(false)
            }
        }
    }

    /// README rule 11: a named class is allowed by the allow-list (the class object, read
    /// at most once per request, decides for the selector).
    fn named(
        &mut self,
        kind: &ClassKind,
        name: &str,
        fetch: &mut ClassFetch<'_>,
        path: &FieldPath,
        part: Part,
    ) -> Result<(), PolicyError> {
        let lookups = &mut *self.lookups;
        match self.classes.judge_with(kind, name, || fetch.get(lookups)) {
            Ok(ClassOutcome::Allowed) => Ok(()),
            Ok(outcome) => {
                if let Some(problem) = outcome.problem() {
                    self.out.report.violation(part, path, problem);
                }
                Ok(())
            }
            Err(e) => skip_on_lookup_error(e, path, self.on_error, self.out.verdict),
        }
    }
}
