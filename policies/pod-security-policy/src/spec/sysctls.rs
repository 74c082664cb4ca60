//! Sysctl lists (`allowedUnsafeSysctls`, `forbiddenSysctls`) and PSP's safe sysctls.

use policy_decode::SettingsError;
use policy_decode::names::NameList;

use super::{err, star_alone};

/// The safe sysctls every profile allows (PSP's safe set).
pub const SAFE_SYSCTLS: [&str; 5] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];

/// Whether a sysctl pattern (exact or `prefix*`) matches `name`.
pub fn sysctl_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Sysctl names and `prefix*` patterns (`allowedUnsafeSysctls`, `forbiddenSysctls`), as
/// written for messages, and split for lookups: a name is looked up once, and each of its
/// prefixes among the patterns' prefixes, instead of being compared with every pattern.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysctlPatterns {
    written: NameList,
    exact: NameList,
    prefixes: NameList,
}

impl SysctlPatterns {
    pub(super) fn new(written: NameList) -> Self {
        let (mut exact, mut prefixes) = (NameList::new(), NameList::new());
        for pattern in written.iter() {
            match pattern.strip_suffix('*') {
                Some(prefix) => prefixes.push(prefix),
                None => exact.push(pattern),
            }
        }
        SysctlPatterns {
            written,
            exact,
            prefixes,
        }
    }

    /// The patterns as written, in settings order.
    pub fn written(&self) -> &NameList {
        &self.written
    }

    /// Whether a pattern matches `name` ([`sysctl_matches`]).
    pub fn matches(&self, name: &str) -> bool {
        self.exact.contains(name)
            || (!self.prefixes.is_empty()
                && (0..=name.len())
                    .filter_map(|i| name.get(..i))
                    .any(|prefix| self.prefixes.contains(prefix)))
    }
}

/// `allowedUnsafeSysctls` and `forbiddenSysctls`: `*` alone in each, and no allowed pattern
/// overlapping a forbidden one (overlaps cannot change a verdict, forbidden wins: not
/// checked on re-read).
pub(super) fn sysctl_lists(
    allowed_unsafe: Option<NameList>,
    forbidden: Option<NameList>,
) -> Result<(SysctlPatterns, SysctlPatterns), SettingsError> {
    let allowed_unsafe = allowed_unsafe.unwrap_or_default();
    let forbidden = forbidden.unwrap_or_default();
    star_alone("allowedUnsafeSysctls", allowed_unsafe.iter())?;
    star_alone("forbiddenSysctls", forbidden.iter())?;
    let checked = !policy_decode::settings::is_reread();
    for (i, a) in allowed_unsafe.iter().enumerate().filter(|_| checked) {
        if let Some(f) = forbidden.iter().find(|f| {
            sysctl_matches(f, a.trim_end_matches('*')) || sysctl_matches(a, f.trim_end_matches('*'))
        }) {
            return Err(err(
                format!("allowedUnsafeSysctls[{i}]"),
                format!("{a:?} overlaps forbiddenSysctls entry {f:?}"),
            ));
        }
    }
    Ok((
        SysctlPatterns::new(allowed_unsafe),
        SysctlPatterns::new(forbidden),
    ))
}
