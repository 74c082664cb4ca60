//! capsule-bindings — the operator's CLI and its library: Capsule `Tenant`s in, the bundle's
//! ClusterAdmissionPolicies and install directory out.
//!
//! A Capsule Tenant (`capsule.clastix.io/v1beta2`) describes everything Capsule enforces for
//! one tenant. This crate translates it into one ClusterAdmissionPolicy per policy of the
//! bundle that has something to enforce: `namespaceSelector` on the tenant label, `rules`,
//! `mutating` and `contextAwareResources` from the policy's own `metadata.yml`, settings
//! translated as the policies' READMEs say, and the module reference from the registry and
//! version given. Every settings document is checked by the policy's own `validate_settings`
//! (through its built wasm) before anything is written, and every Tenant field the bundle
//! cannot express, or whose meaning changes, becomes a [`Report`] naming its path.
//!
//! ```no_run
//! use capsule_bindings::{Hosts, Options, convert, parse_tenants};
//!
//! let text = std::fs::read_to_string("test_data/capsule-bindings/tenants/solar.yaml")?;
//! let tenants = parse_tenants(&text, "solar.yaml")?;
//! let mut hosts = Hosts::new("target/wasm32-wasip1/release".into());
//! let conversion = convert(&tenants, &Options::default(), &mut hosts)?;
//! for report in &conversion.reports {
//!     eprintln!("{report}");
//! }
//! print!("{}", capsule_bindings::to_yaml(&conversion.bindings)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same bindings can then judge requests as the API server would route them
//! ([`admission::admit`]), each policy run by the wasm host of `policy-host`; the scenario
//! cases that prove the translation that way, in the wasm host, the real kwctl and the real
//! policy-server, are testdrive's (`testdrive capsule-check`).

#![deny(missing_docs)]

pub mod admission;
pub mod binding;
pub mod catalogue;
pub mod ceiling;
pub mod chart;
pub mod convert;
pub mod error;
pub mod hosts;
pub mod install;
pub mod placement;
pub mod regex;
pub mod report;
pub mod tenant;
pub mod translate;

pub use admission::{Admission, Step, admit};
pub use binding::{Binding, to_yaml};
pub use catalogue::{POLICIES, Policy};
pub use convert::{Conversion, convert};
pub use error::{Error, Result};
pub use hosts::Hosts;
pub use report::{Report, ReportKind};
pub use tenant::{Tenant, parse_tenants};
pub use translate::{Options, Planned, Translation, translate};
