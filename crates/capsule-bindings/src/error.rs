//! The error type of the crate.

use std::path::PathBuf;

/// What can go wrong while converting Tenants or judging requests with the bindings.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An input (Tenant manifest, bindings file, scenario file, request) is malformed.
    #[error("{0}")]
    Invalid(String),
    /// The wasm host failed (a module that cannot be loaded or run).
    #[error(transparent)]
    Host(#[from] policy_host::Error),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The result type of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
