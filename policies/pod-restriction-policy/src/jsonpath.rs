//! The JSONPath subset of `customResources[].podTemplatePaths` (README "Custom resources"):
//! `$`, `.field`, `['field']` / `["field"]`, `[n]` and `[*]`.
//!
//! Hand-written rather than a JSONPath library: messages need the *location* of every
//! resolved template (`spec.versions[1].template.spec.containers[0]...`), the full language
//! (filters, recursive descent, slices) has no defined meaning for pod templates, and the
//! RFC 9535 library that reports locations (`serde_json_path`) refuses paths this subset
//! accepts (`$.pod-template`, `[01]`) and costs ~97 KiB of wasm and ~10 µs per request with
//! custom resources (README "Why a hand-written JSONPath subset"). Anything outside the
//! subset is refused at settings validation.
//!
//! ```
//! use pod_restriction_policy::jsonpath::JsonPath;
//! use serde_json::json;
//! let p = JsonPath::parse("$.spec.versions[*]['template']").unwrap();
//! let doc = json!({"spec": {"versions": [{"template": {"a": 1}}, {"template": {"a": 2}}]}});
//! let found: Vec<String> = p.resolve(&doc).into_iter().map(|(path, _)| path.to_string()).collect();
//! assert_eq!(found, ["spec.versions[0].template", "spec.versions[1].template"]);
//! assert!(JsonPath::parse("$..template").is_err());
//! ```

use policy_decode::FieldPath;
use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A named member of an object.
    Field(String),
    /// An element of a list.
    Index(usize),
    /// Every element of a list (or every member of an object).
    Wildcard,
}

/// A parsed JSONPath of the supported subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `text`; the error says what is wrong and where.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let rest = text
            .strip_prefix('$')
            .ok_or_else(|| format!("{text:?} must start with $"))?;
        let mut parser = Parser {
            text,
            chars: rest.chars().collect(),
            i: 0,
        };
        let mut steps = Vec::new();
        while let Some(&c) = parser.chars.get(parser.i) {
            let step = match c {
                '.' => parser.dot_member()?,
                '[' => parser.bracket()?,
                _ => {
                    return Err(parser.err(parser.i, &format!("unexpected {c:?}; expected . or [")));
                }
            };
            steps.push(step);
        }
        Ok(JsonPath {
            text: text.to_owned(),
            steps,
        })
    }

    /// The path as written in the settings.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every value the path resolves to in `doc`, with its location, in document order.
    /// Missing fields, out-of-range indices and `null` resolve to nothing.
    pub fn resolve<'a>(&self, doc: &'a Value) -> Vec<(FieldPath, &'a Value)> {
        let mut current = vec![(FieldPath::empty(), doc)];
        for step in &self.steps {
            let mut next = Vec::new();
            for (path, value) in current {
                match (step, value) {
                    (Step::Field(name), Value::Object(map)) => {
                        if let Some(v) = map.get(name) {
                            next.push((member(&path, name), v));
                        }
                    }
                    (Step::Index(n), Value::Array(items)) => {
                        if let Some(v) = items.get(*n) {
                            next.push((path.index(*n), v));
                        }
                    }
                    (Step::Wildcard, Value::Array(items)) => {
                        next.extend(items.iter().enumerate().map(|(i, v)| (path.index(i), v)));
                    }
                    (Step::Wildcard, Value::Object(map)) => {
                        next.extend(map.iter().map(|(k, v)| (member(&path, k), v)));
                    }
                    _ => {}
                }
            }
            current = next;
        }
        current.retain(|(_, v)| !v.is_null());
        current
    }
}

/// The state of [`JsonPath::parse`]: the text after `$` and the position in it.
struct Parser<'t> {
    /// The whole path, for messages.
    text: &'t str,
    /// The characters after `$`.
    chars: Vec<char>,
    /// The next character to read.
    i: usize,
}

impl Parser<'_> {
    /// An error at offset `at` of the text after `$` (reported 1-based from `$`).
    fn err(&self, at: usize, what: &str) -> String {
        format!("{:?} at offset {}: {what}", self.text, at + 1)
    }

    /// `.name`: an identifier (letters, digits, `_`, `-`); `..` and `.*` are refused.
    fn dot_member(&mut self) -> Result<Step, String> {
        self.i += 1;
        let start = self.i;
        while self
            .chars
            .get(self.i)
            .is_some_and(|c| *c != '.' && *c != '[')
        {
            self.i += 1;
        }
        let name: String = self
            .chars
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        if name.is_empty() {
            return Err(self.err(
                start,
                "expected a field name after \".\" (recursive descent \"..\" is not supported)",
            ));
        }
        if name == "*" {
            return Err(self.err(start, "use [*] for every element"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.err(
                start,
                &format!("field name {name:?} needs the ['...'] form"),
            ));
        }
        Ok(Step::Field(name))
    }

    /// `[...]`: `['name']` / `["name"]`, `[n]` or `[*]`; filters, slices, unions and
    /// negative indices are refused.
    fn bracket(&mut self) -> Result<Step, String> {
        self.i += 1;
        let i = self.i;
        let close = self
            .chars
            .get(i..)
            .unwrap_or_default()
            .iter()
            .position(|c| *c == ']')
            .map(|p| p + i)
            .ok_or_else(|| self.err(i, "unclosed ["))?;
        let inner: String = self
            .chars
            .get(i..close)
            .unwrap_or_default()
            .iter()
            .collect();
        self.i = close + 1;
        if inner == "*" {
            return Ok(Step::Wildcard);
        }
        if let Some(name) = quoted(&inner) {
            if name.is_empty() {
                return Err(self.err(i, "empty field name"));
            }
            return Ok(Step::Field(name.to_owned()));
        }
        if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_digit()) {
            return inner
                .parse()
                .map(Step::Index)
                .map_err(|_| self.err(i, &format!("index {inner} is too large")));
        }
        Err(self.err(
            i,
            &format!(
                "[{inner}] is not supported; use ['field'], [n] or [*] (filters, slices, unions and negative indices are not part of the subset)"
            ),
        ))
    }
}

/// `'name'` or `"name"` → `name`.
fn quoted(s: &str) -> Option<&str> {
    s.strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
        .filter(|name| !name.contains('\'') && !name.contains('"'))
}

/// The message path of member `name`: `.name` for identifiers, `["name"]` otherwise.
fn member(path: &FieldPath, name: &str) -> FieldPath {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        path.field(name)
    } else {
        path.key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn resolved(path: &str, doc: &Value) -> Vec<String> {
        JsonPath::parse(path)
            .unwrap()
            .resolve(doc)
            .into_iter()
            .map(|(p, v)| format!("{p}={v}"))
            .collect()
    }

    #[test]
    fn resolves_fields_indices_and_wildcards() {
        let doc = json!({"spec": {"template": {"x": 1}, "list": [{"t": 1}, {"t": 2}, {"u": 3}],
            "map": {"a.b": {"t": 4}}}});
        assert_eq!(
            resolved("$.spec.template", &doc),
            ["spec.template={\"x\":1}"]
        );
        assert_eq!(
            resolved("$['spec'][\"template\"]", &doc),
            ["spec.template={\"x\":1}"]
        );
        assert_eq!(
            resolved("$.spec.list[*].t", &doc),
            ["spec.list[0].t=1", "spec.list[1].t=2"]
        );
        assert_eq!(resolved("$.spec.list[1]", &doc), ["spec.list[1]={\"t\":2}"]);
        assert_eq!(resolved("$.spec.list[7]", &doc), Vec::<String>::new());
        assert_eq!(resolved("$.spec.map[*].t", &doc), ["spec.map[\"a.b\"].t=4"]);
        assert_eq!(
            resolved("$.spec.map['a.b']", &doc),
            ["spec.map[\"a.b\"]={\"t\":4}"]
        );
        assert_eq!(
            resolved("$.spec.missing.template", &doc),
            Vec::<String>::new()
        );
        assert_eq!(resolved("$.spec.template[0]", &doc), Vec::<String>::new());
        assert_eq!(resolved("$", &doc).len(), 1);
        assert_eq!(
            resolved("$.spec.nothing", &json!({"spec": {"nothing": null}})),
            Vec::<String>::new()
        );
    }

    #[rstest]
    #[case("spec.template", "must start with $")]
    #[case("$..template", "recursive descent")]
    #[case("$.spec.*", "use [*]")]
    #[case("$.spec[?(@.a)]", "is not supported")]
    #[case("$.spec[0:2]", "is not supported")]
    #[case("$.spec[-1]", "is not supported")]
    #[case("$.spec['a','b']", "is not supported")]
    #[case("$.spec[", "unclosed [")]
    #[case("$.spec['']", "empty field name")]
    #[case("$spec", "unexpected 's'")]
    #[case("$.a b", "needs the ['...'] form")]
    #[case("$.spec.", "expected a field name")]
    fn refuses_paths_outside_the_subset(#[case] path: &str, #[case] problem: &str) {
        let err = JsonPath::parse(path).unwrap_err();
        assert!(err.contains(problem), "{err}");
    }
}
