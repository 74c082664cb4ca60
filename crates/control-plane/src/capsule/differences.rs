//! How each disagreement with Capsule ends: the known differences
//! (`test_data/capsule-bindings/capsule-differences.yaml`) name the scenario request, what the
//! bundle does there, and either the Tenant field convert reports (`reported`) or the section
//! of `docs/capsule.md` that explains the bundle's choice (`documented`). A disagreement no
//! entry names, or one that differs from its entry, is silent; an entry that names no
//! disagreement, a report convert does not make or a section the document lacks is a problem.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// What the bundle does where Capsule answers otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Nature {
    /// The bundle refuses, Capsule admits.
    Refuses,
    /// The bundle admits, Capsule refuses.
    Admits,
    /// Both admit; the objects as admitted differ.
    Object,
}

/// How a disagreement ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ending {
    /// Convert reports the field.
    Reported,
    /// docs/capsule.md explains the choice.
    Documented,
    /// Neither.
    Silent,
}

/// One disagreement: a scenario request both answered, differently.
#[derive(Debug, Clone)]
pub struct Disagreement {
    /// The scenario file's stem.
    pub scenario: String,
    /// The request's name.
    pub request: String,
    /// What the bundle does.
    pub nature: Nature,
    /// How they differ.
    pub what: String,
}

impl Disagreement {
    /// `<scenario> › <request>`.
    pub fn label(&self) -> String {
        format!("{} › {}", self.scenario, self.request)
    }
}

/// One known difference as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Known {
    /// The scenario file's stem.
    pub scenario: String,
    /// The request's name.
    pub request: String,
    /// What the bundle does there.
    pub bundle: Nature,
    /// The Tenant field convert reports (its path, `spec.rules[0].enforce.workloads`).
    #[serde(default)]
    pub reported: Option<String>,
    /// The section of docs/capsule.md (its anchor) that explains the choice.
    #[serde(default)]
    pub documented: Option<String>,
}

/// The disagreements sorted by how they end.
#[derive(Debug, Default)]
pub struct Classified {
    /// Reported by convert.
    pub reported: usize,
    /// Documented choices.
    pub documented: usize,
    /// Neither, each with why.
    pub silent: Vec<String>,
    /// Entries that no longer hold.
    pub problems: Vec<String>,
    /// Per scenario, how many ended each way.
    pub by_scenario: BTreeMap<String, BTreeMap<Ending, usize>>,
}

impl Classified {
    fn end(&mut self, d: &Disagreement, ending: Ending, why: Option<String>) {
        match ending {
            Ending::Reported => self.reported += 1,
            Ending::Documented => self.documented += 1,
            Ending::Silent => self.silent.push(format!(
                "{}: {}{}",
                d.label(),
                d.what,
                why.unwrap_or_default()
            )),
        }
        *self
            .by_scenario
            .entry(d.scenario.clone())
            .or_default()
            .entry(ending)
            .or_default() += 1;
    }
}

/// Reads the known differences.
pub fn read(path: &Path) -> Result<Vec<Known>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    let known: Vec<Known> = serde_yaml::from_str(&text)
        .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    for k in &known {
        if k.reported.is_some() == k.documented.is_some() {
            return Err(Error::Invalid(format!(
                "{}: {} › {}: give exactly one of reported (the field convert reports) and documented (a section of docs/capsule.md)",
                path.display(),
                k.scenario,
                k.request
            )));
        }
    }
    Ok(known)
}

/// The anchors of the Markdown headings of `doc`, as GitHub writes them.
pub fn anchors(doc: &str) -> Vec<String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| h.trim_start_matches('#').trim())
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Sorts `disagreements` by the entries of `known`; `reports` are convert's per scenario
/// (`Tenant <name>: <path>: <kind>: <message>`), `anchors` those of docs/capsule.md.
pub fn classify(
    disagreements: &[Disagreement],
    known: &[Known],
    reports: &BTreeMap<String, Vec<String>>,
    anchors: &[String],
) -> Classified {
    let mut out = Classified::default();
    let mut used = vec![false; known.len()];
    for d in disagreements {
        let entry = known
            .iter()
            .enumerate()
            .find(|(_, k)| k.scenario == d.scenario && k.request == d.request);
        let Some((i, k)) = entry else {
            out.end(d, Ending::Silent, None);
            continue;
        };
        if let Some(u) = used.get_mut(i) {
            *u = true;
        }
        if k.bundle != d.nature {
            let why = format!(" (the known difference says the bundle {:?})", k.bundle);
            out.end(d, Ending::Silent, Some(why));
            continue;
        }
        if let Some(field) = &k.reported {
            let said = reports
                .get(&d.scenario)
                .is_some_and(|r| r.iter().any(|r| r.contains(&format!(": {field}: "))));
            if said {
                out.end(d, Ending::Reported, None);
            } else {
                let why = format!(" (convert does not report {field})");
                out.end(d, Ending::Silent, Some(why));
            }
        } else if let Some(section) = &k.documented {
            if anchors.iter().any(|a| a == section) {
                out.end(d, Ending::Documented, None);
            } else {
                let why = format!(" (docs/capsule.md has no section #{section})");
                out.end(d, Ending::Silent, Some(why));
            }
        }
    }
    for (k, used) in known.iter().zip(used) {
        if !used {
            out.problems.push(format!(
                "the known difference {} › {} names no disagreement: the two agree there now, or the request is gone; remove the entry",
                k.scenario, k.request
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disagreement(request: &str, nature: Nature) -> Disagreement {
        Disagreement {
            scenario: "ingress-hostnames".into(),
            request: request.into(),
            nature,
            what: "the bundle refuses, Capsule admits".into(),
        }
    }

    fn known(request: &str, reported: Option<&str>, documented: Option<&str>) -> Known {
        Known {
            scenario: "ingress-hostnames".into(),
            request: request.into(),
            bundle: Nature::Refuses,
            reported: reported.map(str::to_owned),
            documented: documented.map(str::to_owned),
        }
    }

    #[test]
    fn headings_become_github_anchors() {
        assert_eq!(
            anchors("# Coming from Capsule\n## TLS hosts are judged (too)\ntext\n"),
            ["coming-from-capsule", "tls-hosts-are-judged-too"]
        );
    }

    #[test]
    fn each_disagreement_ends_reported_documented_or_silent() {
        let reports = BTreeMap::from([(
            "ingress-hostnames".to_owned(),
            vec![
                "Tenant solar: spec.ingressOptions.hostnameCollisionScope: meaning changed: x"
                    .to_owned(),
            ],
        )]);
        let anchors = vec!["tls-hosts".to_owned()];
        let known = [
            known(
                "a",
                Some("spec.ingressOptions.hostnameCollisionScope"),
                None,
            ),
            known("b", None, Some("tls-hosts")),
            known("c", Some("spec.other"), None),
            known("d", None, Some("no-such-section")),
            known("e", None, Some("tls-hosts")),
            known("stale", None, Some("tls-hosts")),
        ];
        let found = [
            disagreement("a", Nature::Refuses),
            disagreement("b", Nature::Refuses),
            disagreement("c", Nature::Refuses),
            disagreement("d", Nature::Refuses),
            disagreement("e", Nature::Admits),
            disagreement("unknown", Nature::Object),
        ];
        let c = classify(&found, &known, &reports, &anchors);
        assert_eq!((c.reported, c.documented), (1, 1));
        assert_eq!(c.silent.len(), 4, "{:?}", c.silent);
        assert!(c.silent[0].contains("convert does not report spec.other"));
        assert!(c.silent[1].contains("no section #no-such-section"));
        assert!(c.silent[2].contains("says the bundle Refuses"));
        assert!(c.silent[3].starts_with("ingress-hostnames › unknown"));
        assert_eq!(
            c.by_scenario.get("ingress-hostnames"),
            Some(&BTreeMap::from([
                (Ending::Reported, 1),
                (Ending::Documented, 1),
                (Ending::Silent, 4)
            ]))
        );
        assert_eq!(c.problems.len(), 1);
        assert!(c.problems[0].contains("› stale names no disagreement"));
    }
}
