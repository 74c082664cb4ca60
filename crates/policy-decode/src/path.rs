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
        // Built without the formatting machinery: a walk over a list builds one per element.
        let mut s = String::with_capacity(self.0.len() + 8);
        s.push_str(&self.0);
        s.push('[');
        push_decimal(&mut s, i);
        s.push(']');
        FieldPath(s)
    }

    /// The path of map key `key` (labels, annotations, node selectors) below this one, the
    /// key quoted as Rust's `{:?}` quotes it.
    pub fn key(&self, key: &str) -> Self {
        // Printable ASCII without `"` or `\` reads the same quoted: no escaping pass.
        if key
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
        {
            let mut s = String::with_capacity(self.0.len() + key.len() + 4);
            s.push_str(&self.0);
            s.push_str("[\"");
            s.push_str(key);
            s.push_str("\"]");
            return FieldPath(s);
        }
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

/// Appends `n` in decimal digits, without the formatting machinery.
pub fn push_decimal(out: &mut String, n: usize) {
    if n >= 10 {
        push_decimal(out, n / 10);
    }
    // `n % 10` is a single digit
    out.push(char::from(b'0' + (n % 10) as u8));
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
    fn indices_read_as_decimal_numbers() {
        for i in [0, 7, 10, 99, 100, 12_345, usize::MAX] {
            assert_eq!(
                FieldPath::root("spec")
                    .field("containers")
                    .index(i)
                    .as_str(),
                format!("spec.containers[{i}]")
            );
        }
        assert_eq!(FieldPath::empty().index(3).as_str(), "[3]");
    }

    #[test]
    fn keys_are_quoted_as_debug_quotes_them() {
        for key in [
            "app",
            "a.b/c",
            "with space",
            "tab\there",
            "quote\"d",
            "back\\slash",
            "é",
            "\u{7f}",
            "~!",
            "",
        ] {
            assert_eq!(
                FieldPath::root("m").key(key).as_str(),
                format!("m[{key:?}]"),
                "{key:?}"
            );
        }
    }

    #[test]
    fn quotes_keys_with_dots_and_quotes() {
        let p = FieldPath::root("metadata")
            .field("annotations")
            .key("a.b/\"c\"");
        assert_eq!(p.to_string(), r#"metadata.annotations["a.b/\"c\""]"#);
    }
}
