//! The release of the policies: their Artifact Hub packages, the publishing identity they
//! carry, and the release rehearsed against a local OCI registry (`testdrive publish-local`).

pub mod artifacthub;
pub mod identity;
pub mod publish;
