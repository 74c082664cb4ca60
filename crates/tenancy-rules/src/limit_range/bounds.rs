//! The LimitRanger checks of one resource (README rules 2–4): `min`, `max` and
//! `maxLimitRequestRatio` against a request and a limit, with the messages of
//! `docs/semantics.md#limit-ranges`.
//!
//! As in Kubernetes, each bound gives at most one violation: `min` judges the request first
//! (missing, then below) and then the limit; `max` judges the limit first (missing, then
//! above) and then the request; the ratio needs both. A missing value is reported once even
//! when several bounds need it.

use kube_values::quantity::Quantity;
use policy_admission::verdict::Verdict;
use policy_decode::path::FieldPath;

use super::items::Bound;

/// Which value of a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Request,
    Limit,
}

impl Side {
    fn word(self) -> &'static str {
        match self {
            Side::Request => "request",
            Side::Limit => "limit",
        }
    }
}

/// What is judged, for messages: a container's (or claim's) own values at their paths, or
/// the Pod's totals at the pod spec.
#[derive(Clone, Copy)]
pub(super) enum Subject<'a> {
    /// A container or claim: `base` gives its `resources` path (built only for a message).
    Object {
        /// `spec.containers[0].resources`.
        base: &'a dyn Fn() -> FieldPath,
        /// `Container` or `PersistentVolumeClaim`.
        per: &'static str,
    },
    /// The Pod's totals, reported at the pod spec's path.
    Pod {
        /// `spec` or `spec.template.spec`.
        spec: &'a FieldPath,
    },
}

/// The observed request and limit of one resource.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Observed<'a> {
    pub request: Option<&'a Quantity>,
    pub limit: Option<&'a Quantity>,
}

/// The path of `side` of resource `name` under `resources`: `.requests.cpu`, or
/// `.requests["example.com/gpu"]` for names with other characters.
pub(super) fn value_path(resources: &FieldPath, side: Side, name: &str) -> FieldPath {
    let map = resources.field(match side {
        Side::Request => "requests",
        Side::Limit => "limits",
    });
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        map.field(name)
    } else {
        map.key(name)
    }
}

/// Renders the violations of one subject and resource.
struct Report<'a, 'v> {
    subject: Subject<'a>,
    name: &'a str,
    verdict: &'v mut Verdict,
    missing_reported: [bool; 2],
}

impl Report<'_, '_> {
    fn per(&self) -> &'static str {
        match self.subject {
            Subject::Object { per, .. } => per,
            Subject::Pod { .. } => "Pod",
        }
    }

    fn path(&self, side: Side) -> FieldPath {
        match self.subject {
            Subject::Object { base, .. } => value_path(&base(), side, self.name),
            Subject::Pod { spec } => spec.clone(),
        }
    }

    /// `"2Gi"` for a container's value, `total memory limit 2Gi` for the Pod's.
    fn found(&self, side: Side, q: &Quantity) -> String {
        match self.subject {
            Subject::Object { .. } => format!("{:?}", q.to_string()),
            Subject::Pod { .. } => format!("total {} {} {q}", self.name, side.word()),
        }
    }

    /// `limit "300m"` for a container, `total cpu limit 300m` for the Pod.
    fn named(&self, side: Side, q: &Quantity) -> String {
        match self.subject {
            Subject::Object { .. } => format!("{} {}", side.word(), self.found(side, q)),
            Subject::Pod { .. } => self.found(side, q),
        }
    }

    fn report(&mut self, side: Side, problem: String) {
        let path = self.path(side);
        self.verdict.violation(&path, problem);
    }

    /// A missing value, once per side: `no request is specified, but <why>`.
    fn missing(&mut self, side: Side, why: String) {
        let slot = match side {
            Side::Request => 0,
            Side::Limit => 1,
        };
        if self.missing_reported.get(slot).copied().unwrap_or(false) {
            return;
        }
        if let Some(s) = self.missing_reported.get_mut(slot) {
            *s = true;
        }
        let text = match self.subject {
            Subject::Object { .. } => format!("no {} is specified, but {why}", side.word()),
            Subject::Pod { .. } => format!(
                "no {} {} is specified in any container, but {why}",
                self.name,
                side.word()
            ),
        };
        self.report(side, text);
    }

    fn below(&mut self, side: Side, q: &Quantity, min: &Quantity) {
        let text = format!(
            "{} is below the minimum {min} per {}",
            self.found(side, q),
            self.per()
        );
        self.report(side, text);
    }

    fn above(&mut self, side: Side, q: &Quantity, max: &Quantity) {
        let text = format!(
            "{} exceeds the maximum {max} per {}",
            self.found(side, q),
            self.per()
        );
        self.report(side, text);
    }
}

/// README rules 2–4 for one resource of one subject: every violation is recorded in
/// `verdict`. `has_limits` is false for claims (a claim has requests only).
pub(super) fn check(
    bound: &Bound,
    observed: Observed<'_>,
    subject: Subject<'_>,
    name: &str,
    has_limits: bool,
    verdict: &mut Verdict,
) {
    let mut r = Report {
        subject,
        name,
        verdict,
        missing_reported: [false, false],
    };
    let Observed { request, limit } = observed;
    let per = r.per();
    if let Some(min) = &bound.min {
        match (request, limit) {
            (None, _) => r.missing(Side::Request, format!("the minimum per {per} is {min}")),
            (Some(q), _) if q < min => r.below(Side::Request, q, min),
            (_, Some(l)) if l < min => r.below(Side::Limit, l, min),
            _ => {}
        }
    }
    if let Some(max) = &bound.max {
        match (limit, request) {
            (None, None) if !has_limits => {
                r.missing(Side::Request, format!("the maximum per {per} is {max}"))
            }
            (None, _) if has_limits => {
                r.missing(Side::Limit, format!("the maximum per {per} is {max}"))
            }
            (Some(l), _) if l > max => r.above(Side::Limit, l, max),
            (_, Some(q)) if q > max => r.above(Side::Request, q, max),
            _ => {}
        }
    }
    if let Some(ratio) = &bound.ratio {
        check_ratio(&mut r, ratio, request, limit);
    }
}

/// `maxLimitRequestRatio`: request and limit present and non-zero, and
/// `limit ≤ ratio × request`, compared exactly.
fn check_ratio(
    r: &mut Report<'_, '_>,
    ratio: &Quantity,
    request: Option<&Quantity>,
    limit: Option<&Quantity>,
) {
    let why = format!("the maximum limit/request ratio per {} is {ratio}", r.per());
    let (req, lim) = match (request, limit) {
        (None, _) => return r.missing(Side::Request, why),
        (_, None) => return r.missing(Side::Limit, why),
        (Some(q), Some(l)) => (q, l),
    };
    for (side, q) in [(Side::Request, req), (Side::Limit, lim)] {
        if q.is_zero() {
            let text = format!("{} is zero, but {why}", r.found(side, q));
            return r.report(side, text);
        }
    }
    if lim.ratio_cmp(req, ratio).is_some_and(|o| o.is_gt()) {
        let text = format!(
            "{} is more than {ratio} times the {} (the maximum limit/request ratio per {})",
            r.named(Side::Limit, lim),
            r.named(Side::Request, req),
            r.per()
        );
        r.report(Side::Limit, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn bound(min: Option<&str>, max: Option<&str>, ratio: Option<&str>) -> Bound {
        Bound {
            min: min.map(q),
            max: max.map(q),
            ratio: ratio.map(q),
        }
    }

    fn container(b: &Bound, request: Option<&str>, limit: Option<&str>) -> String {
        let base = FieldPath::root("spec")
            .field("containers")
            .index(0)
            .field("resources");
        let (request, limit) = (request.map(q), limit.map(q));
        let mut v = Verdict::accept();
        let observed = Observed {
            request: request.as_ref(),
            limit: limit.as_ref(),
        };
        let base = || base.clone();
        let subject = Subject::Object {
            base: &base,
            per: "Container",
        };
        check(b, observed, subject, "cpu", true, &mut v);
        v.message()
    }

    fn pod(b: &Bound, request: Option<&str>, limit: Option<&str>) -> String {
        let spec = FieldPath::root("spec");
        let (request, limit) = (request.map(q), limit.map(q));
        let mut v = Verdict::accept();
        let observed = Observed {
            request: request.as_ref(),
            limit: limit.as_ref(),
        };
        check(
            b,
            observed,
            Subject::Pod { spec: &spec },
            "cpu",
            true,
            &mut v,
        );
        v.message()
    }

    #[test]
    fn container_messages() {
        let b = bound(Some("50m"), Some("1"), None);
        assert_eq!(container(&b, Some("100m"), Some("1")), "");
        assert_eq!(
            container(&b, None, Some("1")),
            "spec.containers[0].resources.requests.cpu: no request is specified, but the minimum per Container is 50m"
        );
        assert_eq!(
            container(&b, Some("10m"), Some("20m")),
            "spec.containers[0].resources.requests.cpu: \"10m\" is below the minimum 50m per Container"
        );
        assert_eq!(
            container(&b, Some("100m"), Some("20m")),
            "spec.containers[0].resources.limits.cpu: \"20m\" is below the minimum 50m per Container"
        );
        assert_eq!(
            container(&b, Some("100m"), None),
            "spec.containers[0].resources.limits.cpu: no limit is specified, but the maximum per Container is 1"
        );
        assert_eq!(
            container(&b, Some("2"), Some("2")),
            "spec.containers[0].resources.limits.cpu: \"2\" exceeds the maximum 1 per Container"
        );
        assert_eq!(
            container(&b, Some("2"), Some("1")),
            "spec.containers[0].resources.requests.cpu: \"2\" exceeds the maximum 1 per Container"
        );
    }

    #[test]
    fn ratio_messages_and_exact_arithmetic() {
        let b = bound(None, None, Some("2"));
        assert_eq!(container(&b, Some("100m"), Some("200m")), "");
        assert_eq!(
            container(&b, Some("100m"), Some("300m")),
            "spec.containers[0].resources.limits.cpu: limit \"300m\" is more than 2 times the request \"100m\" (the maximum limit/request ratio per Container)"
        );
        assert_eq!(
            container(&b, None, Some("300m")),
            "spec.containers[0].resources.requests.cpu: no request is specified, but the maximum limit/request ratio per Container is 2"
        );
        assert_eq!(
            container(&b, Some("0"), Some("300m")),
            "spec.containers[0].resources.requests.cpu: \"0\" is zero, but the maximum limit/request ratio per Container is 2"
        );
        assert_eq!(
            container(&b, Some("1"), Some("0")),
            "spec.containers[0].resources.limits.cpu: \"0\" is zero, but the maximum limit/request ratio per Container is 2"
        );
        // Kubernetes' float64 ratio 403/100*1000 = 4030.0000000000005 > 4030 refuses this.
        let b = bound(None, None, Some("4.03"));
        assert_eq!(container(&b, Some("100m"), Some("403m")), "");
        // and float64 cannot see one byte above 2^53.
        let b = bound(None, None, Some("1"));
        assert!(!container(&b, Some("9007199254740992"), Some("9007199254740993")).is_empty());
    }

    #[test]
    fn a_missing_value_is_reported_once() {
        let b = bound(Some("50m"), Some("1"), Some("2"));
        assert_eq!(
            container(&b, None, None),
            "spec.containers[0].resources.requests.cpu: no request is specified, but the minimum per Container is 50m; \
             spec.containers[0].resources.limits.cpu: no limit is specified, but the maximum per Container is 1"
        );
    }

    #[test]
    fn pod_messages() {
        let b = bound(Some("50m"), Some("1"), Some("2"));
        assert_eq!(
            pod(&b, None, None),
            "spec: no cpu request is specified in any container, but the minimum per Pod is 50m; \
             spec: no cpu limit is specified in any container, but the maximum per Pod is 1"
        );
        assert_eq!(
            pod(&b, Some("10m"), Some("1200m")),
            "spec: total cpu request 10m is below the minimum 50m per Pod; \
             spec: total cpu limit 1200m exceeds the maximum 1 per Pod; \
             spec: total cpu limit 1200m is more than 2 times the total cpu request 10m (the maximum limit/request ratio per Pod)"
        );
    }

    #[test]
    fn claims_have_requests_only() {
        let base = FieldPath::root("spec").field("resources");
        let b = bound(Some("1Gi"), Some("10Gi"), None);
        let run = |request: Option<&str>| {
            let request = request.map(q);
            let mut v = Verdict::accept();
            let observed = Observed {
                request: request.as_ref(),
                limit: None,
            };
            let base = || base.clone();
            let subject = Subject::Object {
                base: &base,
                per: "PersistentVolumeClaim",
            };
            check(&b, observed, subject, "storage", false, &mut v);
            v.message()
        };
        assert_eq!(run(Some("5Gi")), "");
        assert_eq!(
            run(None),
            "spec.resources.requests.storage: no request is specified, but the minimum per PersistentVolumeClaim is 1Gi"
        );
        assert_eq!(
            run(Some("12Gi")),
            "spec.resources.requests.storage: \"12Gi\" exceeds the maximum 10Gi per PersistentVolumeClaim"
        );
        assert_eq!(
            run(Some("500Mi")),
            "spec.resources.requests.storage: \"500Mi\" is below the minimum 1Gi per PersistentVolumeClaim"
        );
    }
}
