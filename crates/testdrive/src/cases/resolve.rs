//! Each case's settings, request and cluster state, read from the files it names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::schema::{Case, CaseDefaults, CaseFile, Expect, RequestSpec};
use policy_host::callbacks::{NoCluster, SharedCallbacks, shared};
use policy_host::cluster::ClusterObjects;
use policy_host::error::{Error, Result, read_text};
use policy_host::replay::ReplaySession;
use policy_host::request::{load_request, merge_patch, unwrap_review};

/// Cluster state of an evaluation.
#[derive(Debug, Clone)]
pub enum ClusterState {
    /// No state: every read fails and fails the case.
    None,
    /// A kwctl replay session.
    Replay(ReplaySession),
    /// Objects that exist.
    Objects(ClusterObjects),
}

impl ClusterState {
    /// Fresh callbacks for one evaluation.
    pub fn callbacks(&self) -> SharedCallbacks {
        match self {
            ClusterState::None => shared(NoCluster::default()),
            ClusterState::Replay(s) => shared(s.clone()),
            ClusterState::Objects(o) => shared(o.clone()),
        }
    }
}

/// Settings, request and cluster state, resolved from files.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Settings JSON (`{}` by default).
    pub settings: Value,
    /// The AdmissionRequest with overrides applied (absent for pure
    /// settings cases).
    pub request: Option<Value>,
    /// Cluster state.
    pub cluster: ClusterState,
    /// The replay session file the state was read from, if any.
    pub session_file: Option<PathBuf>,
}

/// A case ready to run.
#[derive(Debug, Clone)]
pub struct ResolvedCase {
    /// The case file.
    pub file: PathBuf,
    /// The case name.
    pub name: String,
    /// Inputs, or why they could not be resolved (reported as a failure).
    pub scenario: std::result::Result<Scenario, String>,
    /// Expected outcome.
    pub expect: Expect,
    /// Whether mutations are re-run to check idempotence.
    pub idempotent: bool,
}

fn resolve_path(base: &Path, rel: &str) -> PathBuf {
    base.parent().unwrap_or(Path::new(".")).join(rel)
}

/// Resolves settings/request/cluster fields (relative to `file`).
pub fn resolve_scenario(
    file: &Path,
    defaults: &CaseDefaults,
    case: &CaseDefaults,
    overrides: &[&Value],
) -> Result<Scenario> {
    let settings = case
        .settings
        .clone()
        .or_else(|| defaults.settings.clone())
        .unwrap_or_else(|| Value::Object(Default::default()));
    let request = match case.request.as_ref().or(defaults.request.as_ref()) {
        None => None,
        Some(RequestSpec::Path(p)) => Some(load_request(&resolve_path(file, p))?),
        Some(RequestSpec::Inline(map)) => Some(unwrap_review(
            Value::Object(map.clone()),
            &format!("{}: inline request", file.display()),
        )?),
    };
    let request = match request {
        Some(mut r) => {
            for o in overrides {
                merge_patch(&mut r, o);
            }
            Some(r)
        }
        None if overrides.is_empty() => None,
        None => {
            return Err(Error::Invalid(
                "`override` given without a `request`".into(),
            ));
        }
    };
    // the case's cluster state (either form) replaces the defaults' one
    let (replay, cluster) = if case.replay.is_some() || case.cluster.is_some() {
        (&case.replay, &case.cluster)
    } else {
        (&defaults.replay, &defaults.cluster)
    };
    let session_file = replay.as_deref().map(|p| resolve_path(file, p));
    let cluster = match (replay, cluster) {
        (Some(_), Some(_)) => {
            return Err(Error::Invalid(
                "`replay` and `cluster` are mutually exclusive".into(),
            ));
        }
        (Some(p), None) => ClusterState::Replay(ReplaySession::from_file(&resolve_path(file, p))?),
        (None, Some(objects)) => ClusterState::Objects(ClusterObjects::new(objects.clone())?),
        (None, None) => ClusterState::None,
    };
    Ok(Scenario {
        settings,
        request,
        cluster,
        session_file,
    })
}

fn check_expect(expect: &Expect) -> std::result::Result<(), String> {
    let settings_case = expect.settings_valid == Some(false);
    if settings_case {
        if expect.allowed.is_some()
            || expect.code.is_some()
            || expect.patch.is_some()
            || expect.no_patch
            || expect.warnings.is_some()
            || expect.warnings_count.is_some()
            || expect.no_warnings
        {
            return Err("a `settingsValid: false` case only accepts message expectations".into());
        }
    } else if expect.allowed.is_none() {
        return Err("`expect.allowed` is required (unless `settingsValid: false`)".into());
    }
    if expect.patch.is_some() && expect.no_patch {
        return Err("`patch` and `noPatch` are mutually exclusive".into());
    }
    let has_message =
        expect.message.is_some() || expect.messages.is_some() || expect.message_exact.is_some();
    if has_message && expect.no_message {
        return Err("`noMessage` contradicts the message expectations".into());
    }
    if expect.no_warnings
        && (expect.warnings.is_some() || expect.warnings_count.is_some_and(|n| n > 0))
    {
        return Err("`noWarnings` contradicts the warning expectations".into());
    }
    Ok(())
}

/// Applies a case's `settingsOverride`, then its `settingsPatch`, to the settings it starts
/// from (its own or the defaults').
fn edit_settings(settings: &mut Value, case: &Case) -> std::result::Result<(), String> {
    if let Some(o) = &case.settings_override {
        merge_patch(settings, o);
    }
    if let Some(p) = &case.settings_patch {
        json_patch::patch(settings, p).map_err(|e| format!("`settingsPatch`: {e}"))?;
    }
    Ok(())
}

/// Parses a case file and resolves its cases. A syntax error or an
/// unknown field fails the whole file; problems of one case (missing
/// request file, contradictory expectations) are kept in that case.
pub fn load_case_file(path: &Path) -> Result<Vec<ResolvedCase>> {
    let text = read_text(path)?;
    parse_case_file(&text, path)
}

/// Like [`load_case_file`], from text; `path` resolves relative paths.
pub fn parse_case_file(text: &str, path: &Path) -> Result<Vec<ResolvedCase>> {
    let file: CaseFile = serde_yaml::from_str(text).map_err(|e| Error::parse(path.display(), e))?;
    let defaults = file.defaults.unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(file.cases.len());
    for case in file.cases {
        if !seen.insert(case.name.clone()) {
            return Err(Error::parse(
                path.display(),
                format!("duplicate case name `{}`", case.name),
            ));
        }
        let fields = CaseDefaults {
            settings: case.settings.clone(),
            request: case.request.clone(),
            override_: case.override_.clone(),
            replay: case.replay.clone(),
            cluster: case.cluster.clone(),
        };
        let overrides: Vec<&Value> = defaults
            .override_
            .iter()
            .chain(case.override_.iter())
            .collect();
        let scenario = check_expect(&case.expect)
            .and_then(|()| {
                resolve_scenario(path, &defaults, &fields, &overrides).map_err(|e| e.to_string())
            })
            .and_then(|mut s| {
                edit_settings(&mut s.settings, &case)?;
                Ok(s)
            })
            .and_then(|s| {
                if s.request.is_none() && case.expect.settings_valid != Some(false) {
                    Err("no `request` (in the case or in `defaults`)".to_owned())
                } else {
                    Ok(s)
                }
            });
        out.push(ResolvedCase {
            file: path.to_path_buf(),
            name: case.name,
            scenario,
            expect: case.expect,
            idempotent: case.idempotent.unwrap_or(true),
        });
    }
    Ok(out)
}
#[cfg(test)]
mod tests {
    use super::super::scratch_dir as tmp;
    use super::*;
    use serde_json::json;

    const FILE: &str = r#"
defaults:
  settings: {protectedTaints: [{key: dedicated, value: tenantA}]}
  request: req.json
cases:
- name: refused for everyone
  expect: {allowed: false, code: 403, message: 'operator "Exists"'}
- name: bob is allowed
  override:
    userInfo: {username: bob, groups: [tenantA-users]}
    operation: UPDATE
  expect: {allowed: true, noMessage: true, patch: []}
- name: settings invalid
  settings: {protectedTaints: 3}
  expect: {settingsValid: false, message: 'invalid'}
- name: inline request with cluster
  request: {uid: inline, operation: CREATE, object: {kind: Pod}}
  cluster:
  - {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}
  expect: {allowed: true, warnings: [w], warningsCount: 1}
"#;

    #[test]
    fn settings_are_merge_patched_then_json_patched() {
        let d = tmp("settings-edits");
        std::fs::write(d.join("req.json"), r#"{"uid":"r","operation":"CREATE"}"#).unwrap();
        let file = r#"
defaults:
  settings: {mode: enforce, profiles: [{name: p, spec: {volumes: ["*"]}}]}
  request: req.json
cases:
- name: defaults as they are
  expect: {allowed: true}
- name: merge patch
  settingsOverride: {mode: warn}
  expect: {allowed: true}
- name: json patch inside a list, after the merge patch
  settingsOverride: {mode: null}
  settingsPatch: [{op: add, path: /profiles/0/spec/privileged, value: true}]
  expect: {allowed: true}
- name: own settings edited
  settings: {a: 1}
  settingsOverride: {b: 2}
  expect: {allowed: true}
- name: patch of a missing path fails the case
  settingsPatch: [{op: replace, path: /nothing/0, value: 1}]
  expect: {allowed: true}
"#;
        let cases = parse_case_file(file, &d.join("cases.yaml")).unwrap();
        let settings = |i: usize| cases[i].scenario.as_ref().unwrap().settings.clone();
        let profiles = json!([{"name": "p", "spec": {"volumes": ["*"]}}]);
        assert_eq!(
            settings(0),
            json!({"mode": "enforce", "profiles": profiles})
        );
        assert_eq!(settings(1), json!({"mode": "warn", "profiles": profiles}));
        assert_eq!(
            settings(2),
            json!({"profiles": [{"name": "p", "spec": {"volumes": ["*"], "privileged": true}}]})
        );
        assert_eq!(settings(3), json!({"a": 1, "b": 2}));
        let err = cases[4].scenario.as_ref().unwrap_err();
        assert!(err.starts_with("`settingsPatch`:"), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn parses_defaults_overrides_and_inline() {
        let d = tmp("parse");
        std::fs::write(
            d.join("req.json"),
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r","operation":"CREATE","userInfo":{"username":"alice"}}}"#,
        )
        .unwrap();
        let cases = parse_case_file(FILE, &d.join("cases.yaml")).unwrap();
        assert_eq!(cases.len(), 4);

        let s0 = cases[0].scenario.as_ref().unwrap();
        assert_eq!(s0.settings["protectedTaints"][0]["key"], "dedicated");
        assert_eq!(
            s0.request.as_ref().unwrap()["userInfo"]["username"],
            "alice"
        );
        assert!(matches!(s0.cluster, ClusterState::None));

        let s1 = cases[1].scenario.as_ref().unwrap();
        let r1 = s1.request.as_ref().unwrap();
        assert_eq!(r1["operation"], "UPDATE");
        assert_eq!(
            r1["userInfo"],
            json!({"username": "bob", "groups": ["tenantA-users"]})
        );
        assert_eq!(cases[1].expect.patch, Some(vec![]));
        assert!(cases[1].expect.no_message);

        let s2 = cases[2].scenario.as_ref().unwrap();
        assert_eq!(s2.settings, json!({"protectedTaints": 3}));
        assert_eq!(cases[2].expect.settings_valid, Some(false));

        let s3 = cases[3].scenario.as_ref().unwrap();
        assert_eq!(s3.request.as_ref().unwrap()["uid"], "inline");
        assert!(matches!(s3.cluster, ClusterState::Objects(_)));
        assert_eq!(cases[3].expect.warnings_count, Some(1));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_unknown_fields() {
        let p = Path::new("x/cases.yaml");
        for bad in [
            "cases:\n- name: a\n  request: r.json\n  expect: {allowed: true}\n  typo: 1\n",
            "cases:\n- name: a\n  request: r.json\n  expect: {allowd: true}\n",
            "defaults: {setings: {}}\ncases: []\n",
            "case: []\n",
        ] {
            let err = parse_case_file(bad, p).unwrap_err().to_string();
            assert!(err.contains("unknown field"), "{bad}: {err}");
        }
    }

    #[test]
    fn refuses_duplicate_names() {
        let text = "cases:\n- {name: a, request: {uid: x}, expect: {allowed: true}}\n- {name: a, request: {uid: x}, expect: {allowed: true}}\n";
        assert!(
            parse_case_file(text, Path::new("c.yaml"))
                .unwrap_err()
                .to_string()
                .contains("duplicate")
        );
    }

    #[test]
    fn case_level_problems_stay_in_the_case() {
        let text = r#"
cases:
- {name: no allowed, request: {uid: x}, expect: {code: 403}}
- {name: missing file, request: nope.json, expect: {allowed: true}}
- {name: both states, request: {uid: x}, replay: s.yml, cluster: [], expect: {allowed: true}}
- {name: no request, expect: {allowed: true}}
- {name: contradiction, request: {uid: x}, expect: {allowed: true, patch: [], noPatch: true}}
- {name: settings only, expect: {settingsValid: false, message: bad}}
- {name: settings case with verdict, expect: {settingsValid: false, allowed: true}}
"#;
        let cases = parse_case_file(text, Path::new("/nonexistent/c.yaml")).unwrap();
        let errs: Vec<String> = cases
            .iter()
            .map(|c| c.scenario.as_ref().err().cloned().unwrap_or_default())
            .collect();
        assert!(
            errs[0].contains("`expect.allowed` is required"),
            "{}",
            errs[0]
        );
        assert!(errs[1].contains("nope.json"), "{}", errs[1]);
        assert!(errs[2].contains("mutually exclusive"), "{}", errs[2]);
        assert!(errs[3].contains("no `request`"), "{}", errs[3]);
        assert!(errs[4].contains("mutually exclusive"), "{}", errs[4]);
        assert_eq!(errs[5], "");
        assert!(errs[6].contains("only accepts message"), "{}", errs[6]);
    }

    #[test]
    fn case_cluster_state_replaces_defaults() {
        let d = tmp("state");
        std::fs::write(d.join("s.yml"), "[]\n").unwrap();
        let text = r#"
defaults:
  request: {uid: x}
  replay: s.yml
cases:
- {name: inherits, expect: {allowed: true}}
- {name: own objects, cluster: [], expect: {allowed: true}}
"#;
        let cases = parse_case_file(text, &d.join("c.yaml")).unwrap();
        assert!(matches!(
            cases[0].scenario.as_ref().unwrap().cluster,
            ClusterState::Replay(_)
        ));
        assert!(matches!(
            cases[1].scenario.as_ref().unwrap().cluster,
            ClusterState::Objects(_)
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
