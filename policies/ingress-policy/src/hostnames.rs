//! README rules 1, 2 and 12: the hostnames an Ingress publishes (rule hosts and TLS hosts)
//! must be allowed and not denied, a rule without host or an Ingress made only of a default
//! backend serves every hostname, and wildcard hosts need `allowWildcardHostnames`
//! (`docs/semantics.md#hostnames`).

use std::cell::OnceCell;

use kube_values::hostname::{HostnameAllowList, HostnameDenyList, is_wildcard};
use policy_decode::FieldPath;

use crate::ingress::{Rule, TlsHost};
use crate::report::{Part, Report};
use crate::settings::Settings;

/// The hostnames of one Ingress.
#[derive(Debug)]
pub struct Hostnames<'v, 'a> {
    /// `spec.rules`.
    pub rules: &'v [Rule<'a>],
    /// `spec.tls[*].hosts[*]`.
    pub tls: &'v [TlsHost<'a>],
    /// The path of the default backend, when the Ingress has one.
    pub backend: Option<FieldPath>,
}

/// An allow-list with its description, written once per request at most.
struct Allowed<'s> {
    list: &'s HostnameAllowList,
    described: OnceCell<String>,
}

impl Allowed<'_> {
    fn describe(&self) -> &str {
        self.described.get_or_init(|| self.list.describe())
    }
}

/// A deny-list with its description, written once per request at most.
struct Denied<'s> {
    list: &'s HostnameDenyList,
    described: OnceCell<String>,
}

impl Denied<'_> {
    fn describe(&self) -> &str {
        self.described.get_or_init(|| self.list.describe())
    }
}

/// README rules 1, 2 and 12 over every TLS host and rule host, in document order.
pub fn judge(hosts: &Hostnames<'_, '_>, settings: &Settings, report: &mut Report) {
    let allowed = settings.allowed_hostnames.as_ref().map(|list| Allowed {
        list,
        described: OnceCell::new(),
    });
    let denied = settings.denied_hostnames.as_ref().map(|list| Denied {
        list,
        described: OnceCell::new(),
    });
    if let Some(allowed) = &allowed {
        default_backend_only(hosts, allowed, settings, report);
    }
    for tls in hosts.tls {
        let part = Part::Tls(tls.entry);
        if let Some(allowed) = &allowed {
            allowed_host(tls.host, &tls.path(), part, allowed, report);
        }
        if let Some(denied) = &denied {
            denied_host(tls.host, &tls.path(), part, denied, report);
        }
        wildcard(tls.host, &tls.path(), part, settings, report);
    }
    for (i, rule) in hosts.rules.iter().enumerate() {
        let part = Part::Rules(i);
        match (rule.host, &allowed) {
            (None, Some(allowed)) => report.violation(
                part,
                &rule.path(),
                format!(
                    "a rule without host serves every hostname; give it a host, allowed: {}",
                    allowed.describe()
                ),
            ),
            (Some(host), Some(allowed)) => {
                allowed_host(host, &rule.host_path(), part, allowed, report)
            }
            (_, None) => {}
        }
        if let (Some(host), Some(denied)) = (rule.host, &denied) {
            denied_host(host, &rule.host_path(), part, denied, report);
        }
        if let Some(host) = rule.host {
            wildcard(host, &rule.host_path(), part, settings, report);
        }
    }
}

/// README rule 1: a default backend without rules serves every hostname.
fn default_backend_only(
    hosts: &Hostnames<'_, '_>,
    allowed: &Allowed<'_>,
    settings: &Settings,
    report: &mut Report,
) {
    if let Some(path) = &hosts.backend
        && hosts.rules.is_empty()
        && !settings.allow_default_backend_only
    {
        report.violation(
            Part::Backend,
            path,
            format!(
                "an Ingress with only a default backend serves every hostname; use rules with allowed hosts: {}",
                allowed.describe()
            ),
        );
    }
}

/// README rule 1: the host is listed or fully matches a regex (in its normal form).
fn allowed_host(
    host: &str,
    path: &FieldPath,
    part: Part,
    allowed: &Allowed<'_>,
    report: &mut Report,
) {
    if !allowed.list.allows(host) {
        report.violation(
            part,
            path,
            format!(
                "{host:?} is not an allowed hostname; allowed: {}",
                allowed.describe()
            ),
        );
    }
}

/// README rule 12: the host is not listed in `deniedHostnames` and matches none of its
/// regexes (in its normal form; a wildcard host is compared literally).
fn denied_host(host: &str, path: &FieldPath, part: Part, denied: &Denied<'_>, report: &mut Report) {
    if denied.list.denies(host) {
        report.violation(
            part,
            path,
            format!(
                "{host:?} is a denied hostname; denied: {}",
                denied.describe()
            ),
        );
    }
}

/// README rule 2: a host starting with `*` needs `allowWildcardHostnames`.
fn wildcard(host: &str, path: &FieldPath, part: Part, settings: &Settings, report: &mut Report) {
    if is_wildcard(host) && !settings.allow_wildcard_hostnames {
        report.violation(
            part,
            path,
            format!("{host:?} is a wildcard hostname; wildcard hostnames are not allowed"),
        );
    }
}
