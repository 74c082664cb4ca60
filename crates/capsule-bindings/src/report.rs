//! What the conversion tells the operator about a Tenant field.

use std::fmt;

/// The kind of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// The field is not expressed by any emitted binding.
    NotTranslated,
    /// The field is translated, but the bundle enforces it differently (stricter, as a rule).
    MeaningChanged,
    /// The field or the settings made from it are invalid: nothing is written.
    Invalid,
}

impl ReportKind {
    /// The words printed for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::NotTranslated => "not translated",
            ReportKind::MeaningChanged => "meaning changed",
            ReportKind::Invalid => "invalid",
        }
    }
}

/// One finding about one field of one Tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The Tenant's name.
    pub tenant: String,
    /// The field path (`spec.priorityClasses.allowedRegex`), or the binding concerned.
    pub path: String,
    /// The kind of finding.
    pub kind: ReportKind,
    /// What happens and what to do.
    pub message: String,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tenant {}: {}: {}: {}",
            self.tenant,
            self.path,
            self.kind.as_str(),
            self.message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tenant_path_and_kind() {
        let report = Report {
            tenant: "solar".into(),
            path: "spec.owners".into(),
            kind: ReportKind::NotTranslated,
            message: "RBAC".into(),
        };
        assert_eq!(
            report.to_string(),
            "Tenant solar: spec.owners: not translated: RBAC"
        );
    }
}
