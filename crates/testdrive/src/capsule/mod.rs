//! The capsule-bindings CLI's harness: its scenario cases through the built wasm, the real
//! kwctl or the real policy-server (`testdrive capsule-check`), and policy-server's footprint
//! with N converted tenants (`testdrive capsule-footprint`).

pub mod footprint;
pub mod scenario;
pub mod server;
