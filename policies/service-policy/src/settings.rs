//! Settings of service-policy (README "Settings").

use kube_values::net::CidrList;
use policy_decode::SettingsError;
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
        Ok(Settings {
            allowed_services: raw.allowed_services,
            external_ips,
            forbidden_labels: forbidden(raw.forbidden_labels, "forbiddenLabels", "label")?,
            forbidden_annotations: forbidden(
                raw.forbidden_annotations,
                "forbiddenAnnotations",
                "annotation",
            )?,
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
