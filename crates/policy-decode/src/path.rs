//! JSON paths as they appear in rejection messages (`spec.containers[0].image`,
//! `metadata.labels["team"]`).

use std::fmt;

/// A dotted JSON path naming a field of the admitted object or of the settings.
///
/// ```
/// use policy_decode::path::FieldPath;
/// let p = FieldPath::root("spec").field("containers").index(0).field("image");
/// assert_eq!(p.to_string(), "spec.containers[0].image");
/// assert_eq!(FieldPath::root("metadata").field("labels").key("team").to_string(), r#"metadata.labels["team"]"#);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(String);

impl FieldPath {
    /// The empty path (the object itself).
    pub fn empty() -> Self {
        FieldPath(String::new())
    }

    /// A path starting at the top-level field `name`.
    pub fn root(name: &str) -> Self {
        FieldPath(name.to_owned())
    }

    /// Parses a dotted path such as `spec.template.spec` (no indices) into a path.
    pub fn dotted(path: &str) -> Self {
        FieldPath(path.to_owned())
    }

    /// The path of field `name` below this one.
    pub fn field(&self, name: &str) -> Self {
        if self.0.is_empty() {
            return FieldPath(name.to_owned());
        }
        let mut s = String::with_capacity(self.0.len() + 1 + name.len());
        s.push_str(&self.0);
        s.push('.');
        s.push_str(name);
        FieldPath(s)
    }

    /// The path of element `i` of the list at this path.
    pub fn index(&self, i: usize) -> Self {
        FieldPath(format!("{}[{i}]", self.0))
    }

    /// The path of map key `key` (labels, annotations, node selectors) below this one.
    pub fn key(&self, key: &str) -> Self {
        FieldPath(format!("{}[{:?}]", self.0, key))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the empty path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_paths_from_empty() {
        assert_eq!(FieldPath::empty().field("spec").to_string(), "spec");
        assert_eq!(FieldPath::empty().index(2).to_string(), "[2]");
    }

    #[test]
    fn quotes_keys_with_dots_and_quotes() {
        let p = FieldPath::root("metadata")
            .field("annotations")
            .key("a.b/\"c\"");
        assert_eq!(p.to_string(), r#"metadata.annotations["a.b/\"c\""]"#);
    }
}
