//! The waPC host: compiles a policy once, instantiates it per evaluation, answers host
//! callbacks and turns the guest's verdict into an AdmissionResponse as policy-evaluator and
//! policy-server do.
//!
//! * [`runtime`]: the engine, the compiled module, instances;
//! * [`dispatch`]: host callbacks;
//! * [`patch`]: the JSON Patch from the request's object to the mutated one;
//! * [`response`]: the response rules — where the host must choose, it follows
//!   policy-evaluator and policy-server (a mutation of a null object, a patch from a policy
//!   whose binding does not mutate); see that module.

pub mod dispatch;
pub mod patch;
pub mod response;
pub mod runtime;

pub use response::{AdmissionResponse, Evaluation, ResponseStatus, SettingsValidation};
pub use runtime::{Host, Instance, serialize_validate_payload};
