//! A PSP spec applied to one pod spec: the id ranges resolved for the request's namespace
//! ([`Resolved`]), defaulting ([`defaults::apply`]) and validation ([`validate::check`]).

pub mod defaults;
pub mod validate;

use std::collections::BTreeMap;

use policy_decode::ranges::RangeList;

use crate::spec::{IdRule, IdStrategy, PspSpec, RangeSpec};

/// The Namespace annotations available to `fromNamespaceAnnotation` ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceIds {
    /// The Namespace was read: its name and annotations.
    Read {
        /// Namespace name.
        name: String,
        /// Its annotations.
        annotations: BTreeMap<String, String>,
    },
    /// The Namespace does not exist.
    Missing(String),
    /// The lookup failed and `onLookupError: accept` skips annotation ranges.
    Skipped,
    /// No profile needed it (never consulted).
    NotRead,
}

/// The effective ranges of an id strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ranges {
    /// Inclusive `[min, max]` ranges, in settings order.
    List(RangeList<(i64, i64)>),
    /// Not checked: an annotation range could not be read and `onLookupError: accept`.
    Skipped,
}

impl Ranges {
    /// Whether `v` is inside a range (always true when skipped).
    pub fn contains(&self, v: i64) -> bool {
        match self {
            Ranges::List(l) => l.contains(i128::from(v)),
            Ranges::Skipped => true,
        }
    }

    /// The first range's min, the value written by defaulting.
    pub fn first_min(&self) -> Option<i64> {
        match self {
            Ranges::List(l) => l.items().first().map(|(a, _)| *a),
            Ranges::Skipped => None,
        }
    }

    /// `[1-65535, 70000-70000]` for messages.
    pub fn describe(&self) -> String {
        match self {
            Ranges::List(l) => {
                policy_decode::message::bracketed(l.items().iter().map(|(a, b)| format!("{a}-{b}")))
            }
            Ranges::Skipped => "[any]".to_owned(),
        }
    }
}

/// An id strategy with its ranges resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedIds {
    /// The rule.
    pub rule: IdRule,
    /// The ranges.
    pub ranges: Ranges,
}

/// A PSP spec ready to judge one request.
#[derive(Clone, Debug)]
pub struct Resolved<'s> {
    /// The spec.
    pub spec: &'s PspSpec,
    /// `runAsUser`.
    pub run_as_user: ResolvedIds,
    /// `runAsGroup`.
    pub run_as_group: ResolvedIds,
    /// `fsGroup`.
    pub fs_group: ResolvedIds,
    /// `supplementalGroups`.
    pub supplemental_groups: ResolvedIds,
}

fn resolve_ids(
    field: &str,
    strategy: &IdStrategy,
    ns: &NamespaceIds,
) -> Result<ResolvedIds, String> {
    let mut ranges = Vec::new();
    for r in &strategy.ranges {
        match r {
            RangeSpec::Fixed(a, b) => ranges.push((*a, *b)),
            RangeSpec::FromNamespaceAnnotation(key) => match ns {
                NamespaceIds::Skipped => {
                    return Ok(ResolvedIds {
                        rule: strategy.rule,
                        ranges: Ranges::Skipped,
                    });
                }
                NamespaceIds::NotRead => {
                    return Err(format!(
                        "annotation {key:?} needed for {field} ranges was not read"
                    ));
                }
                NamespaceIds::Missing(name) => {
                    return Err(format!(
                        "Namespace {name:?} does not exist; {field} ranges need its annotation {key:?}"
                    ));
                }
                NamespaceIds::Read { name, annotations } => match annotations.get(key) {
                    None => {
                        return Err(format!(
                            "Namespace {name:?} has no annotation {key:?}, needed for {field} ranges"
                        ));
                    }
                    Some(v) => match v.trim().parse::<i64>() {
                        Ok(n) if n >= 0 && v.trim() == v => ranges.push((n, n)),
                        _ => {
                            return Err(format!(
                                "Namespace {name:?} annotation {key:?} is {v:?}, not a non-negative integer, needed for {field} ranges"
                            ));
                        }
                    },
                },
            },
        }
    }
    Ok(ResolvedIds {
        rule: strategy.rule,
        ranges: Ranges::List(RangeList::new(ranges)),
    })
}

impl<'s> Resolved<'s> {
    /// Resolves every id strategy of `spec`; an unreadable annotation range makes the profile
    /// unable to admit, with the reason returned.
    pub fn resolve(spec: &'s PspSpec, ns: &NamespaceIds) -> Result<Self, String> {
        Ok(Resolved {
            spec,
            run_as_user: resolve_ids("runAsUser", &spec.run_as_user, ns)?,
            run_as_group: resolve_ids("runAsGroup", &spec.run_as_group, ns)?,
            fs_group: resolve_ids("fsGroup", &spec.fs_group, ns)?,
            supplemental_groups: resolve_ids("supplementalGroups", &spec.supplemental_groups, ns)?,
        })
    }

    /// Whether resolution skipped a range because of a failed lookup.
    pub fn skipped_any(&self) -> bool {
        [
            &self.run_as_user,
            &self.run_as_group,
            &self.fs_group,
            &self.supplemental_groups,
        ]
        .iter()
        .any(|r| r.ranges == Ranges::Skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RawSpec;
    use serde_json::json;

    fn spec() -> PspSpec {
        let raw = json!({"runAsUser": {"rule": "MustRunAs", "ranges": [{"fromNamespaceAnnotation": "uid"}, {"min": 1, "max": 9}]},
            "seLinux": {"rule": "RunAsAny"}, "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}});
        PspSpec::try_from(policy_decode::settings::decode::<RawSpec>(&raw).unwrap()).unwrap()
    }

    fn ns(value: &str) -> NamespaceIds {
        NamespaceIds::Read {
            name: "tool-x".into(),
            annotations: [("uid".to_owned(), value.to_owned())].into(),
        }
    }

    #[test]
    fn annotation_ranges_become_single_ids() {
        let s = spec();
        let r = Resolved::resolve(&s, &ns("52000")).unwrap();
        assert_eq!(
            r.run_as_user.ranges,
            Ranges::List(RangeList::new(vec![(52000, 52000), (1, 9)]))
        );
        assert_eq!(r.run_as_user.ranges.describe(), "[52000-52000, 1-9]");
        assert_eq!(r.run_as_user.ranges.first_min(), Some(52000));
        assert!(r.run_as_user.ranges.contains(5) && !r.run_as_user.ranges.contains(10));
        assert!(!r.skipped_any());
    }

    #[test]
    fn unreadable_annotations_explain_why() {
        let s = spec();
        for (v, needle) in [
            ("-1", "not a non-negative integer"),
            ("abc", "\"abc\""),
            (" 5", "not a non-negative"),
        ] {
            let e = Resolved::resolve(&s, &ns(v)).unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
        let e = Resolved::resolve(
            &s,
            &NamespaceIds::Read {
                name: "tool-y".into(),
                annotations: BTreeMap::new(),
            },
        )
        .unwrap_err();
        assert_eq!(
            e,
            "Namespace \"tool-y\" has no annotation \"uid\", needed for runAsUser ranges"
        );
        let e = Resolved::resolve(&s, &NamespaceIds::Missing("gone".into())).unwrap_err();
        assert!(e.starts_with("Namespace \"gone\" does not exist"));
        let r = Resolved::resolve(&s, &NamespaceIds::Skipped).unwrap();
        assert!(r.skipped_any());
        assert!(r.run_as_user.ranges.contains(0));
    }
}
