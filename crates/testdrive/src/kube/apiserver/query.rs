//! The parts of an API request target the fake API server reads: the path and the list
//! parameters of the query string (`labelSelector`, `fieldSelector`, `limit`, `continue`,
//! `watch`), percent-decoded as `application/x-www-form-urlencoded`.

/// A request target split into its path and the list parameters it carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Target {
    /// The path, without query string.
    pub path: String,
    /// `labelSelector`; empty is none.
    pub label_selector: Option<String>,
    /// `fieldSelector`; empty is none.
    pub field_selector: Option<String>,
    /// `limit`: the page size asked for (0 or absent: everything).
    pub limit: usize,
    /// `continue`: the token of the page asked for, as given.
    pub continue_token: Option<String>,
    /// `watch=true` (or `1`): a watch, not a list.
    pub watch: bool,
    /// `timeoutSeconds` of a watch.
    pub timeout_seconds: Option<u64>,
}

impl Target {
    /// Splits `path?query`; unknown parameters are ignored, as the API server ignores
    /// the ones that do not apply.
    pub(crate) fn parse(target: &str) -> Target {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let mut parsed = Target {
            path: path.to_owned(),
            ..Target::default()
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value);
            let non_empty = || Some(value.clone()).filter(|v| !v.is_empty());
            match name {
                "labelSelector" => parsed.label_selector = non_empty(),
                "fieldSelector" => parsed.field_selector = non_empty(),
                "limit" => parsed.limit = value.parse().unwrap_or(0),
                "continue" => parsed.continue_token = non_empty(),
                "watch" => parsed.watch = value == "true" || value == "1",
                "timeoutSeconds" => parsed.timeout_seconds = value.parse().ok(),
                _ => {}
            }
        }
        parsed
    }
}

/// Percent-decoding of a form-encoded value (`+` is a space); an invalid escape is kept as
/// written.
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (b, escaped) {
            (_, Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_list_parameters_decoded() {
        let t = Target::parse(
            "/apis/networking.k8s.io/v1/ingresses?labelSelector=team%3Dsolar%2Cenv+in+%28a%29&limit=500&continue=500&fieldSelector=",
        );
        assert_eq!(t.path, "/apis/networking.k8s.io/v1/ingresses");
        assert_eq!(t.label_selector.as_deref(), Some("team=solar,env in (a)"));
        assert_eq!(t.field_selector, None);
        assert_eq!((t.limit, t.continue_token.as_deref()), (500, Some("500")));
        assert!(!t.watch);
    }

    #[test]
    fn reads_a_watch() {
        let t = Target::parse("/api/v1/namespaces?watch=true&timeoutSeconds=290&resourceVersion=1");
        assert!(t.watch);
        assert_eq!(t.timeout_seconds, Some(290));
        assert_eq!(Target::parse("/api/v1/namespaces").timeout_seconds, None);
    }

    #[test]
    fn keeps_invalid_escapes() {
        assert_eq!(decode("a%zz%4"), "a%zz%4");
        assert_eq!(decode("%e2%9c%93"), "✓");
    }
}
