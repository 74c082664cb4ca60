//! The parts of an Ingress the rules read: rule hosts and paths, TLS hosts, the default
//! backend and the two ways of naming an IngressClass, read through checked accessors
//! (a field of the wrong type is a 400 naming its path).

use policy_core::json::At;
use policy_core::{FieldPath, PolicyError};
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

/// One `spec.rules[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule<'a> {
    /// `spec.rules[i]`.
    pub path: FieldPath,
    /// The host as written (`None`: absent or empty, a rule serving every host).
    pub host: Option<&'a str>,
    /// What the rule claims of its host.
    pub claim: Claim<'a>,
}

impl<'a> Rule<'a> {
    /// Reads the rule at `at`.
    pub fn read(at: &At<'a>) -> Result<Self, PolicyError> {
        let host = at.get_str("host")?.filter(|h| !h.is_empty());
        Ok(Rule {
            path: at.path.clone(),
            host,
            claim: claim(at)?,
        })
    }

    /// `spec.rules[i].host`.
    pub fn host_path(&self) -> FieldPath {
        self.path.field("host")
    }
}

/// The claim of a rule: its paths, or the whole host.
fn claim<'a>(rule: &At<'a>) -> Result<Claim<'a>, PolicyError> {
    let Some(http) = rule.get_object("http")? else {
        return Ok(Claim::WholeHost);
    };
    let entries = http.get_list("paths")?;
    if entries.is_empty() {
        return Ok(Claim::WholeHost);
    }
    let mut paths = Vec::with_capacity(entries.len());
    for entry in &entries {
        entry.object()?;
        match entry.get_str("path")?.filter(|p| !p.is_empty()) {
            Some(p) => paths.push(p),
            None => return Ok(Claim::WholeHost),
        }
    }
    Ok(Claim::Paths(paths))
}

/// The rules of an Ingress spec, in document order.
pub fn rules<'a>(spec: &At<'a>) -> Result<Vec<Rule<'a>>, PolicyError> {
    spec.get_list("rules")?
        .iter()
        .map(|r| {
            r.object()?;
            Rule::read(r)
        })
        .collect()
}

/// One `spec.tls[j].hosts[k]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsHost<'a> {
    /// `j`.
    pub entry: usize,
    /// `spec.tls[j].hosts[k]`.
    pub path: FieldPath,
    /// The host as written.
    pub host: &'a str,
}

/// The TLS hosts of an Ingress spec, in document order.
pub fn tls_hosts<'a>(spec: &At<'a>) -> Result<Vec<TlsHost<'a>>, PolicyError> {
    let mut out = Vec::new();
    for (entry, tls) in spec.get_list("tls")?.into_iter().enumerate() {
        tls.object()?;
        for at in tls.get_list("hosts")? {
            let host = at
                .value
                .as_str()
                .ok_or_else(|| PolicyError::malformed(&at.path, "expected a string"))?;
            out.push(TlsHost {
                entry,
                path: at.path,
                host,
            });
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
