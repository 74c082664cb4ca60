//! The parts of an Ingress the rules read: rule hosts and paths, TLS hosts, the default
//! backend and the two ways of naming an IngressClass, read through checked accessors
//! (a field of the wrong type is a 400 naming its path).

use policy_decode::json::At;
use policy_decode::{FieldPath, PolicyError};
use serde_json::Value;

/// The annotation naming an IngressClass (before `spec.ingressClassName` existed; several
/// controllers still prefer it).
pub const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// What a rule claims of its host (README rule 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim<'a> {
    /// The whole host: no `http.paths`, or a path entry without `path` (an unspecified path
    /// matches every path of the host).
    WholeHost,
    /// These exact paths, in document order.
    Paths(Vec<&'a str>),
}

/// Where a rule is malformed: the path below the rule (`.host`, `.http.paths[0].path`) and
/// the problem. Built only on error, so that reading thousands of rules allocates no path.
pub type Malformed = (String, &'static str);

/// The host of a rule given as JSON (`""` when absent or empty: a rule serving every host).
pub fn rule_host(rule: &Value) -> Result<&str, Malformed> {
    if !rule.is_object() {
        return Err((String::new(), "expected an object"));
    }
    match rule.get("host") {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(host)) => Ok(host),
        Some(_) => Err((".host".to_owned(), "expected a string")),
    }
}

/// The claim of a rule given as JSON (an object): its paths, or the whole host.
pub fn rule_claim(rule: &Value) -> Result<Claim<'_>, Malformed> {
    let paths = match rule.get("http") {
        None | Some(Value::Null) => return Ok(Claim::WholeHost),
        Some(Value::Object(http)) => match http.get("paths") {
            None | Some(Value::Null) => return Ok(Claim::WholeHost),
            Some(Value::Array(paths)) => paths,
            Some(_) => return Err((".http.paths".to_owned(), "expected a list")),
        },
        Some(_) => return Err((".http".to_owned(), "expected an object")),
    };
    let mut out = Vec::with_capacity(paths.len());
    for (p, entry) in paths.iter().enumerate() {
        let at = || format!(".http.paths[{p}]");
        if !entry.is_object() {
            return Err((at(), "expected an object"));
        }
        match entry.get("path") {
            None | Some(Value::Null) => out.push(None),
            Some(Value::String(path)) => out.push(Some(path.as_str())),
            Some(_) => return Err((format!("{}.path", at()), "expected a string")),
        }
    }
    Ok(Claim::of_paths(Some(out)))
}

impl<'a> Claim<'a> {
    /// The claim of a rule's `http.paths` entries, each entry's `path` (`None`: the rule
    /// has no `http.paths`): the whole host when there are none, or when one entry has no
    /// path or an empty one (it matches every path of the host); else those paths.
    pub fn of_paths(paths: Option<impl IntoIterator<Item = Option<&'a str>>>) -> Self {
        let Some(paths) = paths else {
            return Claim::WholeHost;
        };
        let mut out = Vec::new();
        for path in paths {
            match path {
                None | Some("") => return Claim::WholeHost,
                Some(path) => out.push(path),
            }
        }
        if out.is_empty() {
            return Claim::WholeHost;
        }
        Claim::Paths(out)
    }
}

/// The path of `spec.rules[i]`.
pub fn rule_path(i: usize) -> FieldPath {
    FieldPath::root("spec").field("rules").index(i)
}

/// One `spec.rules[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule<'a> {
    /// `i`.
    pub index: usize,
    /// The host as written (`None`: absent or empty, a rule serving every host).
    pub host: Option<&'a str>,
    /// What the rule claims of its host.
    pub claim: Claim<'a>,
}

impl Rule<'_> {
    /// `spec.rules[i]`.
    pub fn path(&self) -> FieldPath {
        rule_path(self.index)
    }

    /// `spec.rules[i].host`.
    pub fn host_path(&self) -> FieldPath {
        self.path().field("host")
    }
}

/// The rules of an Ingress spec (at `spec`), in document order; a malformed rule is a 400
/// naming its field.
pub fn rules<'a>(spec: &At<'a>) -> Result<Vec<Rule<'a>>, PolicyError> {
    let Some(list) = spec.get("rules")? else {
        return Ok(Vec::new());
    };
    let items = list
        .value
        .as_array()
        .ok_or_else(|| PolicyError::malformed(&list.path, "expected a list"))?;
    let malformed = |i: usize, (below, problem): Malformed| {
        PolicyError::malformed(
            &FieldPath::dotted(&format!("{}{below}", rule_path(i))),
            problem,
        )
    };
    let mut out = Vec::with_capacity(items.len());
    for (index, rule) in items.iter().enumerate() {
        let host = rule_host(rule).map_err(|m| malformed(index, m))?;
        out.push(Rule {
            index,
            host: Some(host).filter(|h| !h.is_empty()),
            claim: rule_claim(rule).map_err(|m| malformed(index, m))?,
        });
    }
    Ok(out)
}

/// One `spec.tls[j].hosts[k]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsHost<'a> {
    /// `j`.
    pub entry: usize,
    /// `k`.
    pub index: usize,
    /// The host as written.
    pub host: &'a str,
}

impl TlsHost<'_> {
    /// `spec.tls[j].hosts[k]`.
    pub fn path(&self) -> FieldPath {
        FieldPath::root("spec")
            .field("tls")
            .index(self.entry)
            .field("hosts")
            .index(self.index)
    }
}

/// The TLS hosts of an Ingress spec, in document order; a malformed entry is a 400 naming
/// its field (paths are built only then: an Ingress may carry thousands of entries).
pub fn tls_hosts<'a>(spec: &At<'a>) -> Result<Vec<TlsHost<'a>>, PolicyError> {
    let Some(list) = spec.get("tls")? else {
        return Ok(Vec::new());
    };
    let entries = list
        .value
        .as_array()
        .ok_or_else(|| PolicyError::malformed(&list.path, "expected a list"))?;
    let mut out = Vec::new();
    for (entry, tls) in entries.iter().enumerate() {
        let at = || list.path.index(entry);
        let tls = tls
            .as_object()
            .ok_or_else(|| PolicyError::malformed(&at(), "expected an object"))?;
        let hosts = match tls.get("hosts") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(hosts)) => hosts,
            Some(_) => {
                return Err(PolicyError::malformed(
                    &at().field("hosts"),
                    "expected a list",
                ));
            }
        };
        for (index, host) in hosts.iter().enumerate() {
            let host = host.as_str().ok_or_else(|| {
                PolicyError::malformed(&at().field("hosts").index(index), "expected a string")
            })?;
            out.push(TlsHost { entry, index, host });
        }
    }
    Ok(out)
}

/// The IngressClass an Ingress names: `spec.ingressClassName` and the annotation
/// (`""` counts as absent), with their paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassValues<'a> {
    /// `spec.ingressClassName`.
    pub field: Option<&'a str>,
    /// Its path.
    pub field_path: FieldPath,
    /// The `kubernetes.io/ingress.class` annotation.
    pub annotation: Option<&'a str>,
    /// Its path.
    pub annotation_path: FieldPath,
}

impl<'a> ClassValues<'a> {
    /// Reads both values of the Ingress `object` whose spec is `spec`.
    pub fn read(object: &At<'a>, spec: &At<'a>) -> Result<Self, PolicyError> {
        let annotations = match object.get_object("metadata")? {
            Some(m) => m.get_object("annotations")?,
            None => None,
        };
        let annotation_path = FieldPath::root("metadata")
            .field("annotations")
            .key(CLASS_ANNOTATION);
        let annotation = match annotations
            .as_ref()
            .and_then(|a| a.value.get(CLASS_ANNOTATION))
        {
            None | Some(Value::Null) => None,
            Some(Value::String(class)) => Some(class.as_str()),
            Some(_) => {
                return Err(PolicyError::malformed(
                    &annotation_path,
                    "expected a string",
                ));
            }
        };
        Ok(ClassValues {
            field: spec.get_str("ingressClassName")?.filter(|c| !c.is_empty()),
            field_path: spec.path.field("ingressClassName"),
            annotation: annotation.filter(|c| !c.is_empty()),
            annotation_path,
        })
    }
}

/// The field holding the default backend: `spec.defaultBackend` in `v1`, `spec.backend`
/// in `v1beta1`.
pub fn backend_field(version: &str) -> &'static str {
    if version == "v1" {
        "defaultBackend"
    } else {
        "backend"
    }
}

fn spec(object: &Value) -> Option<&Value> {
    object.get("spec")
}

/// What hostname rules read (README rule 3): rule hosts, TLS hosts and the default backend.
pub fn hostnames_part<'v>(
    object: &'v Value,
    backend: &str,
) -> (
    Vec<Option<&'v Value>>,
    Vec<Option<&'v Value>>,
    Option<&'v Value>,
) {
    let spec = spec(object);
    let list = |name: &str| {
        spec.and_then(|s| s.get(name))
            .and_then(Value::as_array)
            .map(|items| items.iter().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let rule_hosts = list("rules").iter().map(|r| r.get("host")).collect();
    let tls_hosts = list("tls").iter().map(|t| t.get("hosts")).collect();
    (rule_hosts, tls_hosts, spec.and_then(|s| s.get(backend)))
}

/// What collision rules read (README rule 7): each rule's host and paths.
pub fn collisions_part(object: &Value) -> Vec<(Option<&Value>, Vec<Option<&Value>>)> {
    let rules = spec(object)
        .and_then(|s| s.get("rules"))
        .and_then(Value::as_array);
    rules
        .map(|rules| {
            rules
                .iter()
                .map(|r| {
                    let paths = r
                        .get("http")
                        .and_then(|h| h.get("paths"))
                        .and_then(Value::as_array)
                        .map(|ps| ps.iter().map(|p| p.get("path")).collect())
                        .unwrap_or_default();
                    (r.get("host"), paths)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What class rules read (README rule 11): the field and the annotation.
pub fn classes_part(object: &Value) -> (Option<&Value>, Option<&Value>) {
    let field = spec(object).and_then(|s| s.get("ingressClassName"));
    let annotation = object
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(CLASS_ANNOTATION));
    (field, annotation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec_at(v: &Value) -> At<'_> {
        At::new(&v["spec"], FieldPath::root("spec"))
    }

    #[test]
    fn claims() {
        let v = json!({"spec": {"rules": [
            {"host": "a.com", "http": {"paths": [{"path": "/"}, {"path": "/api"}]}},
            {"host": "b.com"},
            {"host": "", "http": {"paths": []}},
            {"host": "c.com", "http": {"paths": [{"path": "/x"}, {"pathType": "ImplementationSpecific"}]}},
        ]}});
        let rules = rules(&spec_at(&v)).unwrap();
        assert_eq!(rules[0].claim, Claim::Paths(vec!["/", "/api"]));
        assert_eq!(rules[0].host_path().to_string(), "spec.rules[0].host");
        assert_eq!(rules[3].path().to_string(), "spec.rules[3]");
        assert_eq!(rules[1].claim, Claim::WholeHost);
        assert_eq!(rules[2].host, None);
        assert_eq!(rules[2].claim, Claim::WholeHost);
        assert_eq!(rules[3].claim, Claim::WholeHost);
    }

    #[test]
    fn wrong_types_are_malformed() {
        for (spec, path) in [
            (json!({"rules": {}}), "spec.rules: expected a list"),
            (json!({"rules": [1]}), "spec.rules[0]: expected an object"),
            (
                json!({"rules": [{"host": 1}]}),
                "spec.rules[0].host: expected a string",
            ),
            (
                json!({"rules": [{"http": {"paths": [{"path": 3}]}}]}),
                "spec.rules[0].http.paths[0].path: expected a string",
            ),
            (
                json!({"rules": [{"http": {"paths": ["x"]}}]}),
                "spec.rules[0].http.paths[0]: expected an object",
            ),
        ] {
            let v = json!({ "spec": spec });
            assert_eq!(rules(&spec_at(&v)).unwrap_err().to_string(), path);
        }
        let v = json!({"spec": {"tls": [{"hosts": ["a", 2]}]}});
        assert_eq!(
            tls_hosts(&spec_at(&v)).unwrap_err().to_string(),
            "spec.tls[0].hosts[1]: expected a string"
        );
    }

    #[test]
    fn class_values() {
        let v = json!({"metadata": {"annotations": {CLASS_ANNOTATION: "nginx"}}, "spec": {"ingressClassName": ""}});
        let c = ClassValues::read(&At::new(&v, FieldPath::empty()), &spec_at(&v)).unwrap();
        assert_eq!((c.field, c.annotation), (None, Some("nginx")));
        assert_eq!(
            c.annotation_path.to_string(),
            "metadata.annotations[\"kubernetes.io/ingress.class\"]"
        );
    }
}
