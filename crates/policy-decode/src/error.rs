//! The one error type of the core: what can stop a policy from reaching a verdict.

use crate::path::FieldPath;

/// Why a request could not be judged, or why settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The request or one of its objects is malformed (code 400).
    #[error("{path}: {problem}")]
    Malformed {
        /// Where in the request the problem is.
        path: FieldPath,
        /// What is wrong there.
        problem: String,
    },
    /// The request is for a kind the policy does not handle (code 400).
    #[error("{policy} does not handle {group_version} {kind}")]
    UnsupportedKind {
        /// The policy's name.
        policy: String,
        /// `group/version` (or `version` for the core group).
        group_version: String,
        /// The Kind.
        kind: String,
    },
    /// A cluster lookup failed (code 500).
    #[error("cannot read {what}: {reason}")]
    Lookup {
        /// The object or list that was read (`Namespace "team-a"`).
        what: String,
        /// What the host answered.
        reason: String,
    },
    /// The settings are invalid.
    #[error("{0}")]
    Settings(#[from] SettingsError),
}

impl PolicyError {
    /// A malformed-input error at `path`.
    pub fn malformed(path: &FieldPath, problem: impl Into<String>) -> Self {
        PolicyError::Malformed {
            path: path.clone(),
            problem: problem.into(),
        }
    }

    /// The HTTP status code the rejection carries.
    pub fn code(&self) -> u16 {
        match self {
            PolicyError::Malformed { .. } | PolicyError::UnsupportedKind { .. } => 400,
            PolicyError::Lookup { .. } | PolicyError::Settings(_) => 500,
        }
    }
}

/// A refused setting: `<settings path>: <problem>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct SettingsError {
    /// The settings path (`protectedTaints[1].key`); empty for the document itself.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

impl SettingsError {
    /// A refusal of the setting at `path`.
    pub fn new(path: impl Into<String>, problem: impl Into<String>) -> Self {
        SettingsError {
            path: path.into(),
            problem: problem.into(),
        }
    }

    /// The same refusal, with its path placed below `prefix`.
    pub fn under(self, prefix: &str) -> Self {
        let path = match (prefix.is_empty(), self.path.is_empty()) {
            (true, _) => self.path,
            (false, true) => prefix.to_owned(),
            (false, false) if self.path.starts_with('[') => format!("{prefix}{}", self.path),
            (false, false) => format!("{prefix}.{}", self.path),
        };
        SettingsError {
            path,
            problem: self.problem,
        }
    }

    fn render(&self) -> String {
        if self.path.is_empty() {
            self.problem.clone()
        } else {
            format!("{}: {}", self.path, self.problem)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_error_nests_paths() {
        let e = SettingsError::new("key", "must not be empty").under("protectedTaints[1]");
        assert_eq!(e.to_string(), "protectedTaints[1].key: must not be empty");
        let e = SettingsError::new("[0]", "bad").under("users");
        assert_eq!(e.to_string(), "users[0]: bad");
        let e = SettingsError::new("", "bad").under("users");
        assert_eq!(e.to_string(), "users: bad");
    }

    #[test]
    fn codes() {
        assert_eq!(
            PolicyError::malformed(&FieldPath::root("spec"), "x").code(),
            400
        );
        let e = PolicyError::Lookup {
            what: "Namespace \"a\"".into(),
            reason: "timeout".into(),
        };
        assert_eq!(e.code(), 500);
        assert_eq!(e.to_string(), "cannot read Namespace \"a\": timeout");
    }
}
