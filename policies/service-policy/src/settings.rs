//! Settings of service-policy (README "Settings").

use std::fmt;

use kube_values::hostname::{
    HostnameAllowList, HostnameDenyList, RawHostnameAllowList, RawHostnameDenyList,
};
use kube_values::net::CidrList;
use policy_decode::SettingsError;
use policy_decode::matcher::OneOrMany;
use policy_decode::message;
use policy_decode::names::NameList;
use policy_decode::ranges::RangeList;
use policy_decode::settings::Validated;
use serde::Deserialize;
use tenancy_rules::forbidden::{ForbiddenKeys, RawForbiddenKeys};

/// The settings as written (decoded strictly; validated by `Settings::try_from`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawSettings {
    #[serde(default)]
    allowed_services: AllowedServices,
    #[serde(default, rename = "externalIPs")]
    external_ips: Option<RawExternalIps>,
    #[serde(default)]
    forbidden_labels: Option<RawForbiddenKeys>,
    #[serde(default)]
    forbidden_annotations: Option<RawForbiddenKeys>,
    #[serde(default)]
    external_names: Option<RawExternalNames>,
    #[serde(default)]
    node_ports: Option<RawNodePorts>,
    #[serde(default, rename = "loadBalancerCIDRs")]
    load_balancer_cidrs: Option<CidrList>,
}

fn yes() -> bool {
    true
}

/// Which Service types (and node ports) tenants may use (README rules 1 and 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AllowedServices {
    /// `NodePort` Services, and node ports of any Service (README rule 2).
    #[serde(default = "yes")]
    pub node_port: bool,
    /// `LoadBalancer` Services.
    #[serde(default = "yes")]
    pub load_balancer: bool,
    /// `ExternalName` Services.
    #[serde(default = "yes")]
    pub external_name: bool,
}

impl Default for AllowedServices {
    fn default() -> Self {
        AllowedServices {
            node_port: true,
            load_balancer: true,
            external_name: true,
        }
    }
}

/// `externalIPs` as written: `allowed` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExternalIps {
    #[serde(default)]
    allowed: Option<CidrList>,
}

/// `externalNames` as written: a hostname allow-list and deny-list in one block.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawExternalNames {
    #[serde(default)]
    allowed: Option<NameList>,
    #[serde(default)]
    allowed_regex: Option<OneOrMany>,
    #[serde(default)]
    denied: Option<NameList>,
    #[serde(default)]
    denied_regex: Option<OneOrMany>,
}

/// The external names ExternalName Services may use (README rule 6).
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalNames {
    /// `allowed` / `allowedRegex`; `None`: every name not denied.
    pub allowed: Option<HostnameAllowList>,
    /// `denied` / `deniedRegex`; `None`: none denied.
    pub denied: Option<HostnameDenyList>,
}

impl ExternalNames {
    /// Validates the block (errors name `externalNames.<field>`).
    fn build(raw: RawExternalNames) -> Result<Self, SettingsError> {
        let allowed = match (raw.allowed, raw.allowed_regex) {
            (None, None) => None,
            (allowed, allowed_regex) => Some(HostnameAllowList::build(RawHostnameAllowList {
                allowed,
                allowed_regex,
            })?),
        };
        let denied = match (raw.denied, raw.denied_regex) {
            (None, None) => None,
            (denied, denied_regex) => Some(HostnameDenyList::build(RawHostnameDenyList {
                denied,
                denied_regex,
            })?),
        };
        if allowed.is_none() && denied.is_none() {
            return Err(SettingsError::new(
                "",
                "give allowed, allowedRegex, denied or deniedRegex (omit externalNames to allow every external name)",
            ));
        }
        Ok(ExternalNames { allowed, denied })
    }
}

/// `nodePorts` as written: `allowed` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodePorts {
    #[serde(default)]
    allowed: Option<Vec<RawPortRange>>,
}

/// A node-port range as written: `to` absent is `from` alone.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPortRange {
    from: i64,
    #[serde(default)]
    to: Option<i64>,
}

/// The node ports a Service may carry (README rule 7): inclusive ranges of ports 1-65535,
/// in settings order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePortRanges {
    ranges: RangeList<(i64, i64)>,
}

impl NodePortRanges {
    /// Validates `nodePorts.allowed`: every bound a port, `from <= to`.
    fn build(raw: Vec<RawPortRange>) -> Result<Self, SettingsError> {
        let mut ranges = Vec::with_capacity(raw.len());
        for (i, r) in raw.into_iter().enumerate() {
            let to = r.to.unwrap_or(r.from);
            for (name, v) in [("from", r.from), ("to", to)] {
                if !(1..=65535).contains(&v) {
                    return Err(SettingsError::new(
                        format!("nodePorts.allowed[{i}].{name}"),
                        format!("{v} is not a port (1-65535)"),
                    ));
                }
            }
            if to < r.from {
                return Err(SettingsError::new(
                    format!("nodePorts.allowed[{i}].to"),
                    format!("{to} is below from {}", r.from),
                ));
            }
            ranges.push((r.from, to));
        }
        Ok(NodePortRanges {
            ranges: RangeList::new(ranges),
        })
    }

    /// Whether `port` lies in one of the ranges.
    pub fn contains(&self, port: i64) -> bool {
        self.ranges.contains(i128::from(port))
    }

    /// Whether there is no range (no node port allowed).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// The ranges in settings order, `from-to` or a single port (`[30000-30100, 31000]`), the
/// first [`message::LISTED`] and a count of the rest.
impl fmt::Display for NodePortRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = self.ranges.items();
        let shown = items.iter().map(|(from, to)| match from == to {
            true => from.to_string(),
            false => format!("{from}-{to}"),
        });
        write!(f, "[{}]", message::join_counted(shown, items.len()))
    }
}

/// Validated settings.
#[derive(Debug, PartialEq)]
pub struct Settings {
    /// The Service types and node ports allowed.
    pub allowed_services: AllowedServices,
    /// The external IPs allowed; `None`: unrestricted (README rule 3).
    pub external_ips: Option<CidrList>,
    /// Label keys tenants may not set.
    pub forbidden_labels: ForbiddenKeys,
    /// Annotation keys tenants may not set.
    pub forbidden_annotations: ForbiddenKeys,
    /// The external names allowed and denied; `None`: unrestricted (README rule 6).
    pub external_names: Option<ExternalNames>,
    /// The node ports allowed; `None`: every port (README rule 7).
    pub node_ports: Option<NodePortRanges>,
    /// The ranges load-balancer addresses and source ranges must lie in; `None`:
    /// unrestricted (README rule 8).
    pub load_balancer_cidrs: Option<CidrList>,
}

impl Settings {
    /// Whether a rule compares the new spec with the old one on UPDATE (README rules 3, 6,
    /// 7 and 8): the old spec is read only then.
    pub fn reads_old_spec(&self) -> bool {
        self.external_ips.is_some()
            || self.external_names.is_some()
            || self.node_ports.is_some()
            || self.load_balancer_cidrs.is_some()
    }
}

impl Validated for Settings {
    type Written = RawSettings;
}

impl TryFrom<RawSettings> for Settings {
    type Error = SettingsError;

    fn try_from(raw: RawSettings) -> Result<Self, SettingsError> {
        let external_ips = match raw.external_ips {
            None => None,
            Some(RawExternalIps {
                allowed: Some(allowed),
            }) => Some(allowed),
            Some(RawExternalIps { allowed: None }) => {
                return Err(SettingsError::new(
                    "externalIPs.allowed",
                    "missing: list the allowed addresses and CIDRs ([] allows none; omit externalIPs to allow every address)",
                ));
            }
        };
        let forbidden = ForbiddenKeys::build_optional;
        let external_names = match raw.external_names {
            Some(raw) => Some(ExternalNames::build(raw).map_err(|e| e.under("externalNames"))?),
            None => None,
        };
        let node_ports = match raw.node_ports {
            None => None,
            Some(RawNodePorts {
                allowed: Some(allowed),
            }) => Some(NodePortRanges::build(allowed)?),
            Some(RawNodePorts { allowed: None }) => {
                return Err(SettingsError::new(
                    "nodePorts.allowed",
                    "missing: list the allowed ranges ([] allows no node port; omit nodePorts to allow every node port)",
                ));
            }
        };
        Ok(Settings {
            allowed_services: raw.allowed_services,
            external_ips,
            forbidden_labels: forbidden(raw.forbidden_labels, "forbiddenLabels", "label")?,
            forbidden_annotations: forbidden(
                raw.forbidden_annotations,
                "forbiddenAnnotations",
                "annotation",
            )?,
            external_names,
            node_ports,
            load_balancer_cidrs: raw.load_balancer_cidrs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    #[rstest]
    #[case(json!({"externalIPs": {}}), "externalIPs.allowed: missing")]
    #[case(json!({"externalIPs": {"allowed": null}}), "externalIPs.allowed: invalid type: null (write a value, or leave the key out)")]
    #[case(json!({"externalIPs": null}), "externalIPs: invalid type: null")]
    #[case(json!({"externalIPs": {"allowed": ["10.0.0.0/24", "10.0.1.5/24"]}}),
        r#"externalIPs.allowed[1]: "10.0.1.5/24" has host bits set; write the network address "10.0.1.0/24""#)]
    #[case(json!({"externalIPs": {"allowed": ["10.0.0.5", "10.1.0.0/16", "::ffff:10.0.0.5/128"]}}),
        r#"externalIPs.allowed[2]: duplicate entry "::ffff:10.0.0.5/128": the range 10.0.0.5 is listed before"#)]
    #[case(json!({"externalIPs": {"allowed": ["10.0.0.0/33"]}}), "externalIPs.allowed[0]: \"10.0.0.0/33\" has an invalid prefix length")]
    #[case(json!({"externalIPs": {"allowed": [""]}}), "externalIPs.allowed[0]: \"\" is not an IP address or CIDR: it is empty")]
    #[case(json!({"externalIPs": {"allowed": "10.0.0.0/24"}}), "externalIPs.allowed: invalid type: string")]
    #[case(json!({"externalIPs": {"allowed": [], "denied": []}}), "externalIPs.denied: unknown field `denied`")]
    #[case(json!({"allowedServices": {"nodePort": "false"}}), "allowedServices.nodePort: invalid type: string \"false\", expected a boolean")]
    #[case(json!({"allowedServices": {"clusterIP": false}}), "allowedServices.clusterIP: unknown field `clusterIP`")]
    #[case(json!({"forbiddenLabels": {}}), "forbiddenLabels: give denied or deniedRegex (omit forbiddenLabels to forbid no label key)")]
    #[case(json!({"forbiddenLabels": {"deniedRegex": "("}}), "forbiddenLabels.deniedRegex: invalid regex \"(\"")]
    #[case(json!({"forbiddenAnnotations": {"deniedRegex": ["ok", "a)|(b"]}}), "forbiddenAnnotations.deniedRegex[1]: invalid regex \"a)|(b\"")]
    #[case(json!({"forbiddenLabels": {"denied": ["bad key"]}}), "forbiddenLabels.denied[0]: \"bad key\" is not a valid label key")]
    #[case(json!({"forbiddenLabels": {"denied": ["Acme.net/x"]}}), "forbiddenLabels.denied[0]: \"Acme.net/x\" is not a valid label key")]
    #[case(json!({"forbiddenLabels": {"denied": ["a", "a"]}}), "forbiddenLabels.denied[1]: duplicate entry \"a\"")]
    #[case(json!({"forbiddenLabels": {"allowed": ["a"]}}), "forbiddenLabels.allowed: unknown field `allowed`")]
    #[case(json!({"services": {}}), "services: unknown field `services`")]
    #[case(json!({"externalNames": {}}), "externalNames: give allowed, allowedRegex, denied or deniedRegex")]
    #[case(json!({"externalNames": null}), "externalNames: invalid type: null")]
    #[case(json!({"externalNames": {"allowed": ["Db.example.com"]}}), "externalNames.allowed[0]: \"Db.example.com\" is not a valid hostname: write it in lower case")]
    #[case(json!({"externalNames": {"denied": ["a.com", "a.com"]}}), "externalNames.denied[1]: duplicate entry \"a.com\"")]
    #[case(json!({"externalNames": {"allowedRegex": "("}}), "externalNames.allowedRegex: invalid regex \"(\"")]
    #[case(json!({"externalNames": {"deniedRegex": ["ok", "("]}}), "externalNames.deniedRegex[1]: invalid regex \"(\"")]
    #[case(json!({"externalNames": {"hosts": []}}), "externalNames.hosts: unknown field `hosts`")]
    #[case(json!({"nodePorts": {}}), "nodePorts.allowed: missing")]
    #[case(json!({"nodePorts": null}), "nodePorts: invalid type: null")]
    #[case(json!({"nodePorts": {"allowed": [{"from": 30100, "to": 30000}]}}), "nodePorts.allowed[0].to: 30000 is below from 30100")]
    #[case(json!({"nodePorts": {"allowed": [{"from": 30000}, {"from": 0}]}}), "nodePorts.allowed[1].from: 0 is not a port (1-65535)")]
    #[case(json!({"nodePorts": {"allowed": [{"from": 30000, "to": 65536}]}}), "nodePorts.allowed[0].to: 65536 is not a port (1-65535)")]
    #[case(json!({"nodePorts": {"allowed": [{"to": 30000}]}}), "nodePorts.allowed[0]: missing field `from`")]
    #[case(json!({"nodePorts": {"allowed": [{"from": "30000"}]}}), "nodePorts.allowed[0].from: invalid type: string")]
    #[case(json!({"nodePorts": {"allowed": [{"from": 30000, "max": 1}]}}), "nodePorts.allowed[0].max: unknown field `max`")]
    #[case(json!({"loadBalancerCIDRs": ["10.0.0.0/8", "10.0.0.1/8"]}), "loadBalancerCIDRs[1]: \"10.0.0.1/8\" has host bits set; write the network address \"10.0.0.0/8\"")]
    #[case(json!({"loadBalancerCIDRs": ["bad"]}), "loadBalancerCIDRs[0]: \"bad\" is not an IP address or CIDR")]
    #[case(json!({"loadBalancerCIDRs": null}), "loadBalancerCIDRs: invalid type: null")]
    #[case(json!({"loadBalancerCidrs": []}), "loadBalancerCidrs: unknown field `loadBalancerCidrs`")]
    fn refused(#[case] raw: Value, #[case] message: &str) {
        let err = Settings::parse(&raw).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}");
    }

    #[test]
    fn defaults_restrict_nothing() {
        let s = Settings::parse(&json!({})).unwrap();
        assert_eq!(s.allowed_services, AllowedServices::default());
        assert!(s.external_ips.is_none());
        assert!(!s.forbidden_labels.forbids("anything"));
        let s = Settings::parse(&Value::Null).unwrap();
        assert!(s.allowed_services.node_port);
    }

    #[test]
    fn capsule_rule_settings() {
        let s = Settings::parse(&json!({
            "externalNames": {"allowed": ["db.example.com"], "allowedRegex": ".*\\.example\\.com",
                "denied": ["admin.example.com"]},
            "nodePorts": {"allowed": [{"from": 30000, "to": 30100}, {"from": 31000}]},
            "loadBalancerCIDRs": ["10.0.0.0/8", "2001:db8::/32"]
        }))
        .unwrap();
        let names = s.external_names.unwrap();
        assert!(names.allowed.unwrap().allows("Web.example.com."));
        assert!(names.denied.unwrap().denies("admin.example.com"));
        let ports = s.node_ports.unwrap();
        assert!(ports.contains(30000) && ports.contains(30100) && ports.contains(31000));
        assert!(!ports.contains(30101) && !ports.contains(31001) && !ports.contains(29999));
        assert_eq!(ports.to_string(), "[30000-30100, 31000]");
        assert_eq!(
            s.load_balancer_cidrs.unwrap().to_string(),
            "[10.0.0.0/8, 2001:db8::/32]"
        );
        // a deny-list alone leaves every other name allowed; an empty range list allows none
        let s = Settings::parse(&json!({"externalNames": {"deniedRegex": ".*\\.internal"},
            "nodePorts": {"allowed": []}}))
        .unwrap();
        assert!(s.external_names.unwrap().allowed.is_none());
        let ports = s.node_ports.unwrap();
        assert!(ports.is_empty() && !ports.contains(30000));
        assert_eq!(ports.to_string(), "[]");
    }

    #[test]
    fn long_range_lists_are_cut_in_messages() {
        let ranges: Vec<Value> = (0..25).map(|i| json!({"from": 30000 + i})).collect();
        let s = Settings::parse(&json!({"nodePorts": {"allowed": ranges}})).unwrap();
        assert!(
            s.node_ports
                .unwrap()
                .to_string()
                .ends_with("30018, 30019, ... (5 more)]")
        );
    }

    #[test]
    fn annotation_keys_are_checked_lower_cased() {
        // the API server accepts upper-case prefixes in annotation keys, not in label keys
        let s =
            Settings::parse(&json!({"forbiddenAnnotations": {"denied": ["Acme.net/x"]}})).unwrap();
        assert!(s.forbidden_annotations.forbids("Acme.net/x"));
        assert!(!s.forbidden_annotations.forbids("acme.net/x"));
    }

    #[test]
    fn example_settings() {
        let s = Settings::parse(&json!({
            "allowedServices": {"nodePort": false, "externalName": false},
            "externalIPs": {"allowed": ["10.20.0.0/16", "192.168.1.2", "2001:db8:1::/64"]},
            "forbiddenAnnotations": {"denied": ["loadbalancer.class.acme.net"], "deniedRegex": [".*\\.acme\\.net"]}
        }))
        .unwrap();
        assert!(!s.allowed_services.node_port && s.allowed_services.load_balancer);
        assert_eq!(s.external_ips.unwrap().len(), 3);
        assert!(s.forbidden_annotations.forbids("x.acme.net"));
        assert!(!s.forbidden_annotations.forbids("team.acme.network"));
    }

    #[test]
    fn reread_skips_syntax_checks_only() {
        let raw = json!({"forbiddenLabels": {"denied": ["bad key", "bad key"]},
            "externalIPs": {"allowed": ["10.0.0.0/8", "10.0.0.0/8"]}});
        assert!(Settings::parse(&raw).is_err());
        assert!(policy_decode::settings::reread(|| Settings::parse(&raw)).is_ok());
        // an entry that does not parse allows nothing when re-read
        let raw = json!({"externalIPs": {"allowed": ["bad", "10.0.0.0/8"]}});
        assert!(Settings::parse(&raw).is_err());
        let s = policy_decode::settings::reread(|| Settings::parse(&raw)).unwrap();
        let allowed = s.external_ips.unwrap();
        assert!(allowed.contains("10.1.2.3".parse().unwrap()));
        assert_eq!(allowed.to_string(), "[bad, 10.0.0.0/8]");
        let raw = json!({"externalIPs": {}});
        assert!(policy_decode::settings::reread(|| Settings::parse(&raw)).is_err());
    }
}
