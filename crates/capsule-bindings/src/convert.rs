//! Tenants to checked bindings: translation, then each policy's own `validate_settings`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::binding::{
    ModuleSource, OWNERSHIP_BINDING, manifest, ownership_manifest, ownership_settings,
    planned_name, to_yaml,
};
use crate::catalogue::Policy;
use crate::error::Result;
use crate::hosts::Hosts;
use crate::report::{Report, ReportKind};
use crate::tenant::Tenant;
use crate::translate::{Options, translate};

/// The outcome of converting Tenants.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// The bindings whose settings the policies accepted, Tenant by Tenant.
    pub bindings: Vec<Value>,
    /// Fields not translated or translated with another meaning.
    pub reports: Vec<Report>,
    /// Malformed fields, refused settings and repeated Tenants: when any, nothing may be
    /// written.
    pub errors: Vec<Report>,
}

impl Conversion {
    /// The YAML stream to write: `None` when an error forbids writing anything (a Tenant is
    /// never applied in part).
    pub fn output(&self) -> Result<Option<String>> {
        if !self.errors.is_empty() {
            return Ok(None);
        }
        to_yaml(&self.bindings).map(Some)
    }
}

/// The default module source of [`convert`]'s bindings when none is given: only the names
/// matter to check them and judge requests.
pub fn local_source() -> ModuleSource {
    ModuleSource {
        registry: "registry.invalid".into(),
        version: concat!("v", env!("CARGO_PKG_VERSION")).into(),
    }
}

/// Converts `tenants`, with modules from [`local_source`].
pub fn convert(tenants: &[Tenant], options: &Options, hosts: &mut Hosts) -> Result<Conversion> {
    convert_from(tenants, options, &local_source(), hosts)
}

/// Converts `tenants` into bindings whose modules come from `source`; every settings
/// document is checked by its policy's `validate_settings` in `hosts`.
pub fn convert_from(
    tenants: &[Tenant],
    options: &Options,
    source: &ModuleSource,
    hosts: &mut Hosts,
) -> Result<Conversion> {
    options.placement.validate()?;
    let mut conversion = Conversion {
        bindings: Vec::new(),
        reports: Vec::new(),
        errors: Vec::new(),
    };
    let mut seen = BTreeSet::new();
    let mut owners = Vec::new();
    for tenant in tenants {
        if !seen.insert(tenant.name.as_str()) {
            conversion.errors.push(Report {
                tenant: tenant.name.clone(),
                path: "metadata.name".into(),
                kind: ReportKind::Invalid,
                message: "a second Tenant of this name: their bindings would overwrite each other"
                    .into(),
            });
            continue;
        }
        let translation = translate(tenant, options);
        conversion.reports.extend(translation.reports);
        conversion.errors.extend(translation.errors);
        owners.extend(translation.owners);
        for planned in translation.planned {
            if let Some(message) = hosts.refusal(planned.policy, &planned.settings)? {
                conversion.errors.push(Report {
                    tenant: tenant.name.clone(),
                    path: format!("binding {}", planned_name(&tenant.name, &planned)),
                    kind: ReportKind::Invalid,
                    message: format!(
                        "{} refused the settings {}: {message}",
                        planned.policy.name,
                        serde_json::to_string(&planned.settings).unwrap_or_default()
                    ),
                });
                continue;
            }
            conversion
                .bindings
                .push(manifest(&tenant.name, options, &planned, source)?);
        }
    }
    if options.ownership && !owners.is_empty() {
        ownership(owners, options, source, hosts, &mut conversion)?;
    }
    Ok(conversion)
}

/// The policy of the ownership binding [`convert`] writes when [`Options::ownership`] is set
/// and a converted Tenant has owners.
pub fn ownership_policy() -> Option<&'static Policy> {
    Policy::find("namespace-organization")
}

/// The ownership binding of every converted Tenant's owners, checked by its policy.
fn ownership(
    owners: Vec<Value>,
    options: &Options,
    source: &ModuleSource,
    hosts: &mut Hosts,
    conversion: &mut Conversion,
) -> Result<()> {
    let Some(policy) = ownership_policy() else {
        return Ok(());
    };
    let tenants: Vec<&str> = owners
        .iter()
        .filter_map(|o| o.get("tenant").and_then(Value::as_str))
        .collect();
    let settings = ownership_settings(owners.clone(), options);
    if let Some(message) = hosts.refusal(policy, &settings)? {
        conversion.errors.push(Report {
            tenant: tenants.join(", "),
            path: format!("binding {OWNERSHIP_BINDING}"),
            kind: ReportKind::Invalid,
            message: format!("{} refused the owners: {message}", policy.name),
        });
        return Ok(());
    }
    conversion
        .bindings
        .insert(0, ownership_manifest(owners, options, source)?);
    Ok(())
}
