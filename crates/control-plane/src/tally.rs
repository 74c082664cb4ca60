//! What cluster-e2e counts, and every failure it found.

/// The counts of the closing line and the failures.
#[derive(Debug, Default)]
pub struct Tally {
    /// Objects applied (for real or with a dry run).
    pub objects: usize,
    /// Requests sent through the API server as tenants.
    pub requests: usize,
    /// Those answered as expected.
    pub as_expected: usize,
    /// Requests kubectl cannot send (subresources, CONNECT), with why.
    pub unsendable: Vec<String>,
    /// The broken installs that failed as they must.
    pub holes: Vec<String>,
    /// `<what>: <why>` for every failure.
    pub problems: Vec<String>,
}

impl Tally {
    /// Records the failures of `label`.
    pub fn fail(&mut self, label: &str, failures: Vec<String>) {
        for f in failures {
            self.problems.push(format!("{label}: {f}"));
        }
    }
}
