//! The crate's one error type.

use std::path::{Path, PathBuf};

/// Why the harness could not go on (a check that fails is a report, not an error).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A program could not be run or said it failed.
    #[error("{program}: {detail}")]
    Command {
        /// The program and what it was asked.
        program: String,
        /// Its exit status and error output.
        detail: String,
    },
    /// A certificate or key could not be made.
    #[error("certificates: {0}")]
    Pki(#[from] rcgen::Error),
    /// JSON that does not decode or encode.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// testdrive or capsule-bindings refused.
    #[error("{0}")]
    Host(#[from] policy_host::error::Error),
    /// capsule-bindings refused.
    #[error("capsule-bindings: {0}")]
    Bindings(#[from] capsule_bindings::error::Error),
    /// Something the harness needs is not as expected.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Writes `text` to `path`.
pub fn write(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Reads `path` as text.
pub fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}
