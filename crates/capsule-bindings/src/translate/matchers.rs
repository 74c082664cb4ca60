//! Capsule's value matchers (`[{exact, exp, negate}]`) as this bundle's allow- and
//! deny-lists.

use serde_json::{Map, Value, json};

use super::{Ctx, Effect};

/// The settings keys a policy reads its lists from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sides {
    /// Exact values admitted (`allowed`, `whitelist`).
    pub allow: &'static str,
    /// Exact values refused (`denied`, `blacklist`).
    pub deny: &'static str,
    /// Regexes admitting (`allowedRegex`, `regex`).
    pub allow_regex: &'static str,
    /// Regexes refusing (`deniedRegex`, `blacklistRegex`).
    pub deny_regex: &'static str,
}

/// The keys of hostname and metadata value lists.
pub(super) const ALLOWED_DENIED: Sides = Sides {
    allow: "allowed",
    deny: "denied",
    allow_regex: "allowedRegex",
    deny_regex: "deniedRegex",
};

/// The keys of pod-restriction's String restrictions.
pub(super) const WHITELIST_BLACKLIST: Sides = Sides {
    allow: "whitelist",
    deny: "blacklist",
    allow_regex: "regex",
    deny_regex: "blacklistRegex",
};

/// Appends `values` to the list at `key` of `out`.
pub(super) fn push_all(out: &mut Map<String, Value>, key: &str, values: Vec<Value>) {
    match out.entry(key).or_insert_with(|| json!([])) {
        Value::Array(list) => list.extend(values),
        other => *other = Value::Array(values),
    }
}

/// One Capsule matcher as read: its `exact` values, and its `exp` as this bundle reads it,
/// with whether it admits what it matches.
pub(super) struct Matcher {
    /// `exact`, when given as a list of strings.
    pub exact: Option<Vec<Value>>,
    /// `exp` (see [`Ctx::regex`]) and whether it admits: `allow != negate`.
    pub exp: Option<(bool, String)>,
}

impl Ctx<'_> {
    /// The matcher `entry` at `path`: `allow` when what matches is admitted (Capsule's
    /// `allow`), else refused; a negated expression admits the other way round. An unanchored
    /// expression is reported ([`Ctx::regex`]).
    pub(super) fn matcher(
        &mut self,
        path: &str,
        entry: &Map<String, Value>,
        allow: bool,
        subject: &str,
    ) -> Matcher {
        let negate = entry
            .get("negate")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let exact = match entry.get("exact") {
            Some(exact) => self.strings(&format!("{path}.exact"), exact),
            None => None,
        };
        let mut exp = None;
        if let Some(value) = entry.get("exp")
            && let Some(text) = self.string(&format!("{path}.exp"), value)
        {
            let allows = allow != negate;
            let effect = if allows {
                Effect::Allows
            } else {
                Effect::Forbids
            };
            exp = Some((
                allows,
                self.regex(&format!("{path}.exp"), text, effect, subject),
            ));
        }
        Matcher { exact, exp }
    }

    /// Capsule's matchers at `path` into `out`: with `allow` (Capsule's `allow` action) what
    /// matches is admitted, else refused; a negated expression goes to the other side.
    pub(super) fn matchers(
        &mut self,
        path: &str,
        value: &Value,
        allow: bool,
        sides: Sides,
        subject: &str,
        out: &mut Map<String, Value>,
    ) {
        let Some(list) = value.as_array() else {
            self.invalid(path, "a list of matchers ({exact, exp, negate})", value);
            return;
        };
        for (i, entry) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(entry) = self.object(&p, entry) else {
                continue;
            };
            let matcher = self.matcher(&p, entry, allow, subject);
            if let Some(values) = matcher.exact {
                push_all(out, if allow { sides.allow } else { sides.deny }, values);
            }
            if let Some((allows, regex)) = matcher.exp {
                let side = if allows {
                    sides.allow_regex
                } else {
                    sides.deny_regex
                };
                push_all(out, side, vec![json!(regex)]);
            }
        }
    }
}
