//! policy-server's start time and memory for the install directory plus N tenants, each a
//! copy of one Tenant under another name, loaded as kubewarden-controller would load them
//! (README "Installing", Footprint). A benchmark, not a test: it prints what it measured.

use std::path::PathBuf;
use std::time::Instant;

use crate::install::{Deployment, install_server};
use crate::kube::apiserver::FakeApi;
use crate::kube::controller::{Controller, ModulesDir, read_objects};

use capsule_bindings::binding::ModuleSource;
use capsule_bindings::convert::convert_from;
use capsule_bindings::error::{Error, Result};
use capsule_bindings::hosts::Hosts;
use capsule_bindings::tenant::Tenant;
use capsule_bindings::translate::Options;

/// What to measure.
#[derive(Debug, Clone)]
pub struct FootprintOptions {
    /// The policy-server binary.
    pub policy_server: PathBuf,
    /// The install directory (its PolicyServer, RBAC and baseline bindings).
    pub install_dir: PathBuf,
    /// The annotated modules the bindings' references map to.
    pub modules_dir: PathBuf,
    /// Where each run's policies.yml and log go.
    pub work_dir: PathBuf,
}

/// One measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    /// Tenants added to the install.
    pub tenants: usize,
    /// Policies policy-server loaded.
    pub policies: usize,
    /// Seconds from start to ready.
    pub ready_seconds: f64,
    /// Resident memory once ready, and its peak while loading, in MiB.
    pub memory_mib: Option<(u64, u64)>,
}

impl std::fmt::Display for Footprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "footprint: {} tenants, {} policies loaded as the controller would, ready in {:.1} s",
            self.tenants, self.policies, self.ready_seconds
        )?;
        match self.memory_mib {
            Some((now, peak)) => write!(f, ", {now} MiB resident (peak {peak} MiB)"),
            None => write!(f, ", memory not measured (no /proc)"),
        }
    }
}

/// `count` copies of `tenant` named `t0000`, `t0001`, …
pub fn copies(tenant: &Tenant, count: usize) -> Vec<Tenant> {
    (0..count)
        .map(|i| Tenant {
            name: format!("t{i:04}"),
            spec: tenant.spec.clone(),
        })
        .collect()
}

/// Starts policy-server on the install directory plus the bindings of `tenants`, converted
/// with `options`, and measures it; stops it before returning.
pub fn measure(
    tenants: &[Tenant],
    convert_options: &Options,
    hosts: &mut Hosts,
    options: &FootprintOptions,
) -> Result<Footprint> {
    let mut objects = read_objects(std::slice::from_ref(&options.install_dir))?;
    let (server, _) = install_server(&objects, None)?;
    let source = ModuleSource {
        registry: "ghcr.io/tenancy-policies".into(),
        version: concat!("v", env!("CARGO_PKG_VERSION")).into(),
    };
    let conversion = convert_from(tenants, convert_options, &source, hosts)?;
    if let Some(error) = conversion.errors.first() {
        return Err(Error::Invalid(format!(
            "the tenants do not convert: {error}"
        )));
    }
    objects.extend(conversion.bindings);
    let controller = Controller::load(&objects, &server)?;
    let policies = controller.policies.len();
    let modules = ModulesDir::new(&options.modules_dir)?;
    let dir = options.work_dir.join(format!("tenants-{}", tenants.len()));
    let started = Instant::now();
    let deployment = Deployment::start(
        controller,
        &modules,
        FakeApi::default(),
        &options.policy_server,
        &dir,
    )?;
    let ready_seconds = started.elapsed().as_secs_f64();
    let memory_mib = deployment
        .memory_kib()
        .map(|(now, peak)| (now / 1024, peak / 1024));
    deployment.stop();
    Ok(Footprint {
        tenants: tenants.len(),
        policies,
        ready_seconds,
        memory_mib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_keep_the_spec_under_new_names() {
        let tenant = capsule_bindings::parse_tenants(
            "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: solar}\nspec: {nodeSelector: {pool: a}}\n",
            "t",
        )
        .unwrap()
        .remove(0);
        let copies = copies(&tenant, 3);
        let names: Vec<&str> = copies.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t0000", "t0001", "t0002"]);
        assert!(copies.iter().all(|t| t.spec == tenant.spec));
    }

    #[test]
    fn a_measurement_prints_as_one_line() {
        let f = Footprint {
            tenants: 100,
            policies: 1203,
            ready_seconds: 18.44,
            memory_mib: Some((186, 229)),
        };
        assert_eq!(
            f.to_string(),
            "footprint: 100 tenants, 1203 policies loaded as the controller would, ready in 18.4 s, 186 MiB resident (peak 229 MiB)"
        );
    }
}
