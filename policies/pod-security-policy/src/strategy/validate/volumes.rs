//! Rules on volumes: the volume type of every source against `volumes`, and the host path,
//! flexVolume driver or CSI driver a source names.

use policy_admission::pod::{Container, LazyMounts};
use policy_decode::PolicyError;
use policy_decode::json::At;
use tenancy_rules::security_context::volume_sources;

use super::{Out, list, q};
use crate::spec::{PspSpec, volume_type_name};
use crate::strategy::Resolved;

/// Judges every source of a volume (see [`volume_sources`]).
pub(super) fn check_volume<'a>(
    r: &Resolved<'_>,
    vol: &At<'a>,
    containers: &[Container<'a>],
    mounts: &mut LazyMounts<'a>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    for field in volume_sources(vol)? {
        check_volume_source(r, vol, field, containers, mounts, out)?;
    }
    Ok(())
}

/// Judges one source (`field`) of a volume: its type against `volumes`, and the host path,
/// flexVolume driver or CSI driver it names.
fn check_volume_source<'a>(
    r: &Resolved<'_>,
    vol: &At<'a>,
    field: &str,
    containers: &[Container<'a>],
    mounts: &mut LazyMounts<'a>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let spec = r.spec;
    let ty = volume_type_name(field);
    check_volume_type(spec, vol, field, ty, out)?;
    match ty {
        "hostPath" if !spec.allowed_host_paths.is_empty() => {
            check_host_path(spec, vol, containers, mounts, out)
        }
        "flexVolume" if !spec.allowed_flex_volumes.is_empty() => {
            check_flex_volume_driver(spec, vol, out)
        }
        "csi" if !spec.allowed_csi_drivers.is_empty() => check_csi_driver(spec, vol, out),
        _ => Ok(()),
    }
}

/// `volumes`: the source's type must be listed (or `*`); a projected service-account token
/// counts as `secret`.
fn check_volume_type(
    spec: &PspSpec,
    vol: &At<'_>,
    field: &str,
    ty: &str,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let any = spec.volumes.iter().any(|v| v == "*");
    if any || spec.volumes.iter().any(|v| v == ty) {
        return Ok(());
    }
    let sa_token = ty == "projected"
        && spec.volumes.iter().any(|v| v == "secret")
        && match vol.get_object("projected")? {
            Some(p) => is_service_account_token_projection(&p)?,
            None => false,
        };
    if !sa_token {
        out.push(
            &vol.path.field(field),
            format!(
                "{} is not an allowed volume type; allowed: {}",
                q(ty),
                list(spec.volumes.iter())
            ),
        );
    }
    Ok(())
}

/// `allowedHostPaths`: the path must be under a listed prefix; when every matching prefix is
/// read-only, every mount of the volume must be `readOnly: true`.
fn check_host_path<'a>(
    spec: &PspSpec,
    vol: &At<'a>,
    containers: &[Container<'a>],
    mounts: &mut LazyMounts<'a>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    let Some(hp) = vol.get_object("hostPath")? else {
        return Ok(());
    };
    let path_at = hp.path.field("path");
    let path = hp.get_str("path")?.unwrap_or("");
    let matching = spec.allowed_host_paths.matching(path);
    if matching.is_empty() {
        out.push(
            &path_at,
            format!(
                "{} is not under an allowed path prefix; allowed: {}",
                q(path),
                list(spec.allowed_host_paths.prefixes().iter())
            ),
        );
    } else if matching.iter().all(|read_only| *read_only) {
        let name = vol.get_str("name")?.unwrap_or("");
        for m in mounts.get(containers)?.by_name(name) {
            if m.get_bool("readOnly")? != Some(true) {
                out.push(
                    &path_at,
                    format!("{} must be mounted read-only by {}", q(path), m.path),
                );
            }
        }
    }
    Ok(())
}

/// `allowedFlexVolumes`: the flexVolume driver must be listed.
fn check_flex_volume_driver(
    spec: &PspSpec,
    vol: &At<'_>,
    out: &mut Out,
) -> Result<(), PolicyError> {
    if let Some(fv) = vol.get_object("flexVolume")? {
        let driver = fv.get_str("driver")?.unwrap_or("");
        if !spec.allowed_flex_volumes.contains(driver) {
            out.push(
                &fv.path.field("driver"),
                format!(
                    "{} is not an allowed flexVolume driver; allowed: {}",
                    q(driver),
                    list(spec.allowed_flex_volumes.iter())
                ),
            );
        }
    }
    Ok(())
}

/// `allowedCSIDrivers`: the inline CSI driver must be listed.
fn check_csi_driver(spec: &PspSpec, vol: &At<'_>, out: &mut Out) -> Result<(), PolicyError> {
    if let Some(csi) = vol.get_object("csi")? {
        let driver = csi.get_str("driver")?.unwrap_or("");
        if !spec.allowed_csi_drivers.contains(driver) {
            out.push(
                &csi.path.field("driver"),
                format!(
                    "{} is not an allowed CSI driver; allowed: {}",
                    q(driver),
                    list(spec.allowed_csi_drivers.iter())
                ),
            );
        }
    }
    Ok(())
}

/// A projected volume made only of the sources the ServiceAccount admission plugin injects
/// (token, `kube-root-ca.crt`, namespace via the downward API).
fn is_service_account_token_projection(projected: &At<'_>) -> Result<bool, PolicyError> {
    let sources = projected.get_list("sources")?;
    if sources.is_empty() {
        return Ok(false);
    }
    for s in sources {
        let ok = if s.get("serviceAccountToken")?.is_some() {
            true
        } else if let Some(cm) = s.get_object("configMap")? {
            cm.get_str("name")? == Some("kube-root-ca.crt")
        } else if let Some(d) = s.get_object("downwardAPI")? {
            let mut all = true;
            for item in d.get_list("items")? {
                let fp = match item.get_object("fieldRef")? {
                    Some(f) => f.get_str("fieldPath")?,
                    None => None,
                };
                all &= fp == Some("metadata.namespace");
            }
            all
        } else {
            false
        };
        let keys = s
            .object()?
            .keys()
            .filter(|k| !s.value[k.as_str()].is_null())
            .count();
        if !ok || keys != 1 {
            return Ok(false);
        }
    }
    Ok(true)
}
