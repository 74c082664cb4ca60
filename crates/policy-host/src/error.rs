//! The single error type of the wasm host (and of testdrive, which re-uses it).

use std::path::PathBuf;

/// Everything that can go wrong on the host side: the module, the inputs, the fixtures.
///
/// A policy *rejecting* a request is not an error: it is an
/// [`Evaluation`](crate::Evaluation) with `allowed: false`. Errors are
/// reserved for problems of the host, the inputs or the fixtures.
///
/// ```
/// let err = policy_host::Error::Invalid("boom".into());
/// assert_eq!(err.to_string(), "boom");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A JSON or YAML document could not be parsed or has the wrong shape.
    #[error("{origin}: {message}")]
    Parse {
        /// Where the document comes from (a path or a short description).
        origin: String,
        /// What is wrong with it.
        message: String,
    },
    /// The wasm module could not be compiled or instantiated.
    #[error("wasm module: {0}")]
    Wasm(String),
    /// A guest function trapped or returned an error.
    #[error("guest function `{function}` failed: {message}")]
    Guest {
        /// The waPC function that was called.
        function: String,
        /// The error text reported by the engine.
        message: String,
    },
    /// Any other invalid input (bad flag combination, inconsistent case, ...).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// Builds an [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::Parse`] for the document coming from `origin`.
    pub fn parse(origin: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Error::Parse {
            origin: origin.to_string(),
            message: message.to_string(),
        }
    }
}

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Reads a whole UTF-8 file, mapping failures to [`Error::Io`].
pub fn read_text(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}
