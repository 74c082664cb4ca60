//! Capsule's regexes read with this bundle's semantics.
//!
//! Capsule searches a regex anywhere in the value (Go's `MatchString`); the bundle matches
//! the whole value (`^(?:re)$`, docs/semantics.md). A regex anchored at both ends means the
//! same under both, and its anchors are dropped; any other regex changes meaning and is kept
//! as written, so that the stricter whole-value reading applies and the operator is told.

use regex_syntax::hir::Look;

/// How a Capsule regex reads under the bundle's whole-value matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchoring {
    /// Anchored at both ends in Capsule: the same meaning; the regex to write (anchors
    /// dropped where that is textually safe).
    Same(String),
    /// Not anchored at both ends: Capsule matched it anywhere in the value.
    Changed,
    /// Not a regex this bundle accepts (its `validate_settings` will say why).
    Invalid,
}

/// Reads `text` as Capsule wrote it.
///
/// ```
/// use capsule_bindings::regex::{Anchoring, anchoring};
/// assert_eq!(anchoring("^tier-.*$"), Anchoring::Same("tier-.*".into()));
/// assert_eq!(anchoring("internal.registry.io"), Anchoring::Changed);
/// assert_eq!(anchoring("("), Anchoring::Invalid);
/// ```
pub fn anchoring(text: &str) -> Anchoring {
    let Ok(hir) = regex_syntax::Parser::new().parse(text) else {
        return Anchoring::Invalid;
    };
    let properties = hir.properties();
    if properties.look_set_prefix().contains(Look::Start)
        && properties.look_set_suffix().contains(Look::End)
    {
        Anchoring::Same(without_outer_anchors(text))
    } else {
        Anchoring::Changed
    }
}

/// `text` without a leading `^` and an unescaped trailing `$`, when both are there and the
/// rest is still a regex; otherwise `text` (inner anchors are harmless under whole-value
/// matching).
fn without_outer_anchors(text: &str) -> String {
    let Some(inner) = text.strip_prefix('^').and_then(|t| t.strip_suffix('$')) else {
        return text.to_owned();
    };
    let escapes = inner.bytes().rev().take_while(|b| *b == b'\\').count();
    if escapes % 2 == 1 || regex_syntax::Parser::new().parse(inner).is_err() {
        return text.to_owned();
    }
    inner.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_regexes_keep_their_meaning() {
        for (capsule, ours) in [
            ("^tier-.*$", "tier-.*"),
            ("^.*acmecorp.com$", ".*acmecorp.com"),
            ("^(a|b)$", "(a|b)"),
            ("^a$|^b$", "a$|^b"),
            ("\\A[a-z]+\\z", "\\A[a-z]+\\z"),
            ("^a\\\\$", "a\\\\"),
        ] {
            assert_eq!(
                anchoring(capsule),
                Anchoring::Same(ours.into()),
                "{capsule}"
            );
        }
    }

    #[test]
    fn other_regexes_change_meaning() {
        for capsule in [
            "internal.registry.io",
            "^gatsby-",
            "-lowlatency$",
            "^a|b$",
            "(?m)^a$",
            "^a\\$",
            "",
        ] {
            assert_eq!(anchoring(capsule), Anchoring::Changed, "{capsule}");
        }
    }

    #[test]
    fn invalid_regexes_are_left_to_the_policy() {
        assert_eq!(anchoring("a(b"), Anchoring::Invalid);
        assert_eq!(anchoring("[z-a]"), Anchoring::Invalid);
    }
}
