//! The bottom layer of the bundle's core: how input is read. Errors that name the path of
//! what is wrong, typed reading of JSON objects, strict decoding of settings, and the generic
//! values settings are read into (string sets, full-match matchers, integer ranges), with how
//! rejection messages show them. It knows nothing of Kubernetes or of admission
//! (`docs/semantics.md#layers`).

#![deny(missing_docs)]

pub mod error;
pub mod json;
pub mod matcher;
pub mod message;
pub mod names;
pub mod path;
pub mod ranges;
pub mod settings;
pub mod strict;

pub use error::{PolicyError, SettingsError};
pub use path::FieldPath;
