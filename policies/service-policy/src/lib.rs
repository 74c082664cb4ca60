//! service-policy: tenants may use only the Service types, node ports, external IPs,
//! external names and load-balancer ranges the settings allow, and may not set forbidden
//! label or annotation keys (README rules 1–8).
//!
//! Violations are listed in the order the API server writes a Service's fields: labels,
//! annotations, `spec.ports[].nodePort`, `spec.type`, `spec.externalIPs`,
//! `spec.loadBalancerIP`, `spec.loadBalancerSourceRanges`, `spec.externalName`,
//! `spec.healthCheckNodePort`, `spec.allocateLoadBalancerNodePorts`
//! (`docs/semantics.md#messages`).

pub mod settings;

use std::collections::{HashMap, HashSet};
use std::fmt;

use kube_values::hostname::normalize;
use kube_values::list::comma_separated;
use kube_values::net::{Cidr, CidrList, IpAddress, NetError};
use policy_admission::Verdict;
use policy_admission::cluster::Lookups;
use policy_admission::gate::{Admitted, Gate, HandledKind};
use policy_admission::policy::Policy;
use policy_admission::request::{AdmissionRequest, Operation};
use policy_decode::json::At;
use policy_decode::settings::ExactName;
use policy_decode::{FieldPath, PolicyError};

pub use settings::{AllowedServices, ExternalNames, NodePortRanges, Settings};
pub use tenancy_rules::forbidden::ForbiddenKeys;

/// The policy.
pub struct ServicePolicy;

/// The kind handled (`v1` Services) and the operations judged.
fn gate() -> Gate {
    const SERVICE: [HandledKind; 1] = [HandledKind {
        group: "",
        versions: &["v1"],
        kind: "Service",
    }];
    Gate {
        kinds: &SERVICE,
        operations: ServicePolicy::OPERATIONS,
    }
}

/// A Service type (`spec.type`; absent or `""` is `ClusterIP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceType {
    /// `ClusterIP`.
    ClusterIp,
    /// `NodePort`.
    NodePort,
    /// `LoadBalancer`.
    LoadBalancer,
    /// `ExternalName`.
    ExternalName,
}

impl ExactName for ServiceType {
    /// The types by their exact API names.
    const NAMES: &'static [(&'static str, ServiceType)] = &[
        ("ClusterIP", ServiceType::ClusterIp),
        ("NodePort", ServiceType::NodePort),
        ("LoadBalancer", ServiceType::LoadBalancer),
        ("ExternalName", ServiceType::ExternalName),
    ];
}

impl ServiceType {
    /// `spec.type` of `spec`; another value than the four API names (compared exactly, as
    /// the API server does) is malformed (400).
    fn read(spec: &At<'_>) -> Result<ServiceType, PolicyError> {
        let Some(name) = spec.get_str("type")?.filter(|t| !t.is_empty()) else {
            return Ok(ServiceType::ClusterIp);
        };
        Self::from_name(name).ok_or_else(|| {
            PolicyError::malformed(
                &spec.path.field("type"),
                format!(
                    "{name:?} is not a Service type (ClusterIP, NodePort, LoadBalancer, ExternalName)"
                ),
            )
        })
    }

    /// Whether the settings allow this type (README rule 1).
    fn allowed(self, allowed: &AllowedServices) -> bool {
        match self {
            ServiceType::ClusterIp => true,
            ServiceType::NodePort => allowed.node_port,
            ServiceType::LoadBalancer => allowed.load_balancer,
            ServiceType::ExternalName => allowed.external_name,
        }
    }
}

impl fmt::Display for ServiceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Policy for ServicePolicy {
    const NAME: &'static str = "service-policy";
    type Settings = Settings;

    fn validate(
        request: &AdmissionRequest,
        settings: &Settings,
        _lookups: &mut Lookups<'_>,
    ) -> Result<Verdict, PolicyError> {
        let Some(service) = gate().admit(Self::NAME, request)? else {
            return Ok(Verdict::accept());
        };
        let spec = service.spec()?;
        let service_type = ServiceType::read(&spec)?;
        let old = match request.operation {
            Operation::Update => Some(At::new(
                request.old_object()?.value,
                FieldPath::root("oldObject"),
            )),
            _ => None,
        };
        let mut verdict = Verdict::accept();
        let labels = (&settings.forbidden_labels, "labels", "label");
        let annotations = (&settings.forbidden_annotations, "annotations", "annotation");
        // README rule 4: added or changed forbidden keys (docs/semantics.md#metadata).
        for (keys, map, noun) in [labels, annotations] {
            keys.judge(&service.object, old.as_ref(), map, noun, &mut verdict)?;
        }
        let old_spec = match &old {
            Some(old) if settings.reads_old_spec() => old.get_object("spec")?,
            _ => None,
        };
        if let Some(allowed) = &settings.load_balancer_cidrs {
            source_ranges_annotation(&service, old.as_ref(), allowed, &mut verdict)?;
        }
        // README rule 5: on UPDATE, rules 1 and 2 only when the type or a node-port field
        // changed, or a port was added to a type that allocates node ports. Skipped (nothing
        // read) when neither rule can find anything: node ports allowed and the type too.
        let can_violate = !settings.allowed_services.node_port
            || !service_type.allowed(&settings.allowed_services);
        let judged = match &old {
            None => true,
            Some(_) if !can_violate => false,
            Some(old) => node_port_fields_changed(&spec, service_type, old)?,
        };
        let no_node_ports = judged && !settings.allowed_services.node_port;
        // README rule 7: only while node ports are allowed (rule 2 refuses them all otherwise).
        let port_ranges = match &settings.node_ports {
            Some(ranges) if settings.allowed_services.node_port => Some(ranges),
            _ => None,
        };
        if no_node_ports {
            port_node_ports(&spec, &mut verdict)?;
        }
        if let Some(ranges) = port_ranges {
            port_node_port_ranges(&spec, old_spec.as_ref(), ranges, &mut verdict)?;
        }
        if judged {
            allowed_type(
                &spec,
                service_type,
                &settings.allowed_services,
                &mut verdict,
            );
        }
        if let Some(allowed) = &settings.external_ips {
            external_ips(&spec, old_spec.as_ref(), allowed, &mut verdict)?;
        }
        if let Some(allowed) = &settings.load_balancer_cidrs {
            load_balancer_ip(&spec, old_spec.as_ref(), allowed, &mut verdict)?;
            source_ranges(&spec, old_spec.as_ref(), allowed, &mut verdict)?;
        }
        if let Some(names) = &settings.external_names
            && service_type == ServiceType::ExternalName
            && settings.allowed_services.external_name
        {
            external_name(&spec, old_spec.as_ref(), names, &mut verdict)?;
        }
        if no_node_ports {
            health_check_node_port(&spec, &mut verdict)?;
            allocated_load_balancer_node_ports(&spec, service_type, &mut verdict)?;
        }
        if let Some(ranges) = port_ranges {
            health_check_node_port_range(&spec, old_spec.as_ref(), ranges, &mut verdict)?;
        }
        Ok(verdict)
    }
}

/// README rule 5: whether an UPDATE changed what rules 1 and 2 read. `spec.type`,
/// `spec.healthCheckNodePort` and `spec.allocateLoadBalancerNodePorts` are compared as JSON
/// values; `spec.ports` by its node ports ([`PortNodePorts::gained`]) and, for the types that
/// allocate node ports, by its length (a port added: the API server allocates it a node port).
/// Both `spec.ports` lists are read in full first, so a malformed one is a 400 naming its
/// path (`oldObject.spec.ports[0].nodePort: expected an integer`), never read as unchanged.
fn node_port_fields_changed(
    spec: &At<'_>,
    service_type: ServiceType,
    old: &At<'_>,
) -> Result<bool, PolicyError> {
    let ports = PortNodePorts::read(spec)?;
    let old_spec = old.get_object("spec")?;
    let old_ports = match &old_spec {
        Some(old_spec) => PortNodePorts::read(old_spec)?,
        None => PortNodePorts::default(),
    };
    let old_field = |name: &str| old_spec.as_ref().and_then(|s| s.value.get(name));
    let field_changed = [
        "type",
        "healthCheckNodePort",
        "allocateLoadBalancerNodePorts",
    ]
    .into_iter()
    .any(|name| spec.value.get(name) != old_field(name));
    let allocates = matches!(
        service_type,
        ServiceType::NodePort | ServiceType::LoadBalancer
    );
    let port_added = allocates && ports.count > old_ports.count;
    Ok(field_changed || port_added || ports.gained(&old_ports))
}

/// The entries of a `spec.ports` list and its non-zero `nodePort` values.
#[derive(Debug, Default)]
struct PortNodePorts {
    /// How many entries the list has.
    count: usize,
    /// The non-zero `nodePort` values with the index of their port, in list order.
    node_ports: Vec<(usize, i64)>,
}

impl PortNodePorts {
    /// `spec.ports` of `spec`: a list of objects whose `nodePort`, when present, is an
    /// integer (400 naming the path otherwise).
    fn read(spec: &At<'_>) -> Result<Self, PolicyError> {
        let ports = spec.get_list("ports")?;
        let mut node_ports = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            port.object()?;
            if let Some(n) = port.get_i64("nodePort")?.filter(|n| *n != 0) {
                node_ports.push((i, n));
            }
        }
        Ok(PortNodePorts {
            count: ports.len(),
            node_ports,
        })
    }

    /// Whether this list holds a node port `old` did not ([`PortNodePorts::fresh`]).
    fn gained(&self, old: &PortNodePorts) -> bool {
        self.fresh(old).next().is_some()
    }

    /// The node ports (port index, value) this list holds and `old` did not: compared as
    /// multisets (a count per value, each value of this list taking one in list order), so
    /// reordering, renaming, other port fields and removals bring none, while a new value,
    /// a changed one or one more copy of a value does.
    fn fresh<'s>(&'s self, old: &PortNodePorts) -> impl Iterator<Item = (usize, i64)> + 's {
        let mut held: HashMap<i64, usize> = HashMap::with_capacity(old.node_ports.len());
        for (_, n) in &old.node_ports {
            *held.entry(*n).or_default() += 1;
        }
        self.node_ports
            .iter()
            .filter(move |(_, n)| match held.get_mut(n) {
                Some(count) if *count > 0 => {
                    *count -= 1;
                    false
                }
                _ => true,
            })
            .copied()
    }
}

/// README rule 1: a type whose flag is false.
fn allowed_type(
    spec: &At<'_>,
    service_type: ServiceType,
    allowed: &AllowedServices,
    verdict: &mut Verdict,
) {
    if !service_type.allowed(allowed) {
        verdict.violation(
            &spec.path.field("type"),
            format!("Services of type {service_type} are not allowed"),
        );
    }
}

/// The problem of a node-port field set to `port` while node ports are not allowed.
fn node_port_problem(port: i64) -> String {
    format!("must be absent or 0 because node ports are not allowed (found {port})")
}

/// README rule 2, ports: every `spec.ports[i].nodePort` absent or 0.
fn port_node_ports(spec: &At<'_>, verdict: &mut Verdict) -> Result<(), PolicyError> {
    for port in spec.get_list("ports")? {
        port.object()?;
        if let Some(n) = port.get_i64("nodePort")?.filter(|n| *n != 0) {
            verdict.violation(&port.path.field("nodePort"), node_port_problem(n));
        }
    }
    Ok(())
}

/// README rule 2, health checks: `spec.healthCheckNodePort` absent or 0.
fn health_check_node_port(spec: &At<'_>, verdict: &mut Verdict) -> Result<(), PolicyError> {
    if let Some(n) = spec.get_i64("healthCheckNodePort")?.filter(|n| *n != 0) {
        verdict.violation(
            &spec.path.field("healthCheckNodePort"),
            node_port_problem(n),
        );
    }
    Ok(())
}

/// README rule 2, load balancers: `spec.allocateLoadBalancerNodePorts` must be false
/// (absent is true, the API server's default).
fn allocated_load_balancer_node_ports(
    spec: &At<'_>,
    service_type: ServiceType,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    if service_type == ServiceType::LoadBalancer
        && spec.get_bool("allocateLoadBalancerNodePorts")? != Some(false)
    {
        verdict.violation(
            &spec.path.field("allocateLoadBalancerNodePorts"),
            "must be false because node ports are not allowed",
        );
    }
    Ok(())
}

/// The problem of a node port outside the allowed ranges (README rule 7).
fn node_port_range_problem(port: i64, ranges: &NodePortRanges) -> String {
    if ranges.is_empty() {
        format!("{port} is not allowed: no node port is allowed")
    } else {
        format!("{port} is not in the allowed node-port ranges {ranges}")
    }
}

/// README rule 7, ports: every non-zero `spec.ports[i].nodePort` in an allowed range; on
/// UPDATE only the values the old list lacks ([`PortNodePorts::fresh`]).
fn port_node_port_ranges(
    spec: &At<'_>,
    old_spec: Option<&At<'_>>,
    ranges: &NodePortRanges,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let ports = PortNodePorts::read(spec)?;
    if ports.node_ports.is_empty() {
        return Ok(());
    }
    let old = match old_spec {
        Some(old) => PortNodePorts::read(old)?,
        None => PortNodePorts::default(),
    };
    let path = spec.path.field("ports");
    for (i, n) in ports.fresh(&old) {
        if !ranges.contains(n) {
            let problem = node_port_range_problem(n, ranges);
            verdict.violation(&path.index(i).field("nodePort"), problem);
        }
    }
    Ok(())
}

/// README rule 7, health checks: a non-zero `spec.healthCheckNodePort` in an allowed range;
/// on UPDATE only when it changed.
fn health_check_node_port_range(
    spec: &At<'_>,
    old_spec: Option<&At<'_>>,
    ranges: &NodePortRanges,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let Some(n) = spec.get_i64("healthCheckNodePort")?.filter(|n| *n != 0) else {
        return Ok(());
    };
    let old = match old_spec {
        Some(old) => old.get_i64("healthCheckNodePort")?,
        None => None,
    };
    if old != Some(n) && !ranges.contains(n) {
        verdict.violation(
            &spec.path.field("healthCheckNodePort"),
            node_port_range_problem(n, ranges),
        );
    }
    Ok(())
}

/// README rule 6: the `spec.externalName` of an ExternalName Service must be allowed (when
/// `allowed`/`allowedRegex` are given) and not denied, compared in its normal form; on
/// UPDATE only when the type or the name (in normal form) changed.
fn external_name(
    spec: &At<'_>,
    old_spec: Option<&At<'_>>,
    names: &ExternalNames,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let name = spec.get_str("externalName")?.filter(|n| !n.is_empty());
    if let Some(old) = old_spec {
        let old_name = old.get_str("externalName")?;
        let same_type = old.get_str("type")? == spec.get_str("type")?;
        let same_name = old_name.map(normalize) == name.map(normalize);
        if same_type && same_name {
            return Ok(());
        }
    }
    let path = spec.path.field("externalName");
    if let Some(allowed) = &names.allowed {
        match name {
            None => verdict.violation(
                &path,
                format!(
                    "missing: an ExternalName Service must name an allowed host; allowed: {}",
                    allowed.describe()
                ),
            ),
            Some(name) if !allowed.allows(name) => verdict.violation(
                &path,
                format!(
                    "{name:?} is not an allowed external name; allowed: {}",
                    allowed.describe()
                ),
            ),
            Some(_) => {}
        }
    }
    if let (Some(denied), Some(name)) = (&names.denied, name)
        && denied.denies(name)
    {
        verdict.violation(
            &path,
            format!(
                "{name:?} is a denied external name; denied: {}",
                denied.describe()
            ),
        );
    }
    Ok(())
}

/// The problem of a load-balancer address or range outside `allowed` (README rule 8).
fn load_balancer_problem(text: &str, read: Result<(), NetError>, allowed: &CidrList) -> String {
    match read {
        Ok(()) if allowed.is_empty() => {
            format!("{text:?} is not allowed: no load-balancer range is allowed")
        }
        Ok(()) => format!("{text:?} is not within the allowed load-balancer ranges {allowed}"),
        Err(problem) if allowed.is_empty() => {
            format!("{problem} (no load-balancer range is allowed)")
        }
        Err(problem) => format!("{problem} (allowed load-balancer ranges {allowed})"),
    }
}

/// README rule 8, address: a non-empty `spec.loadBalancerIP` must be an address in an
/// allowed range; on UPDATE only when it changed (by text and by address).
fn load_balancer_ip(
    spec: &At<'_>,
    old_spec: Option<&At<'_>>,
    allowed: &CidrList,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let Some(text) = spec.get_str("loadBalancerIP")?.filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    let parsed = IpAddress::parse(text);
    if let Some(old) = old_spec {
        let old_text = old.get_str("loadBalancerIP")?;
        let old_address = old_text.and_then(|t| IpAddress::parse(t).ok());
        let same_address = parsed
            .as_ref()
            .ok()
            .is_some_and(|a| old_address == Some(*a));
        if old_text == Some(text) || same_address {
            return Ok(());
        }
    }
    let read = match parsed {
        Ok(address) if allowed.contains(address) => return Ok(()),
        Ok(_) => Ok(()),
        Err(problem) => Err(problem),
    };
    verdict.violation(
        &spec.path.field("loadBalancerIP"),
        load_balancer_problem(text, read, allowed),
    );
    Ok(())
}

/// The ranges of an old list of source ranges, by text and by range.
#[derive(Debug, Default)]
struct OldRanges<'a> {
    texts: HashSet<&'a str>,
    ranges: HashSet<Cidr>,
}

impl<'a> OldRanges<'a> {
    fn new(texts: impl Iterator<Item = &'a str>) -> Self {
        let texts: HashSet<&str> = texts.collect();
        let ranges = texts
            .iter()
            .filter_map(|t| Cidr::parse_masked(t).ok())
            .collect();
        OldRanges { texts, ranges }
    }

    /// Whether the old list holds `text`, or the same range.
    fn has(&self, text: &str, range: Option<&Cidr>) -> bool {
        self.texts.contains(text) || range.is_some_and(|r| self.ranges.contains(r))
    }
}

/// README rule 8, one source range: `text` must be a range lying within an allowed entry
/// unless the old list held it.
fn source_range(
    text: &str,
    path: &FieldPath,
    old: &OldRanges<'_>,
    allowed: &CidrList,
    verdict: &mut Verdict,
) {
    let parsed = Cidr::parse_masked(text);
    if old.has(text, parsed.as_ref().ok()) {
        return;
    }
    let read = match parsed {
        Ok(range) if allowed.contains_range(&range) => return,
        Ok(_) => Ok(()),
        Err(problem) => Err(problem),
    };
    verdict.violation(path, load_balancer_problem(text, read, allowed));
}

/// README rule 8, source ranges: every `spec.loadBalancerSourceRanges[i]` must be a range
/// lying within an allowed entry; on UPDATE only the ranges the old list lacks.
fn source_ranges(
    spec: &At<'_>,
    old_spec: Option<&At<'_>>,
    allowed: &CidrList,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let values = spec.get_str_list("loadBalancerSourceRanges")?;
    if values.is_empty() {
        return Ok(());
    }
    let old = match old_spec {
        Some(old) => OldRanges::new(old.get_str_list("loadBalancerSourceRanges")?.into_iter()),
        None => OldRanges::default(),
    };
    let path = spec.path.field("loadBalancerSourceRanges");
    for (i, text) in values.into_iter().enumerate() {
        source_range(text, &path.index(i), &old, allowed, verdict);
    }
    Ok(())
}

/// The annotation cloud providers read source ranges from when
/// `spec.loadBalancerSourceRanges` is empty: comma-separated ranges.
pub const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";

/// README rule 8, the annotation [`SOURCE_RANGES_ANNOTATION`]: each of its comma-separated
/// ranges (read as the API server reads them, [`comma_separated`]) must lie within an
/// allowed entry, judged at `metadata.annotations["…"][i]`; an empty range (`a,,b`, a
/// leading or trailing comma) is not a range and is refused like any unparseable one, while
/// an all-blank value has none. On UPDATE only the ranges the old value lacks.
fn source_ranges_annotation(
    service: &Admitted<'_>,
    old: Option<&At<'_>>,
    allowed: &CidrList,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let Some(meta) = service.object.get_object("metadata")? else {
        return Ok(());
    };
    let Some(annotations) = meta.get_object("annotations")? else {
        return Ok(());
    };
    let Some(value) = annotations.get_str(SOURCE_RANGES_ANNOTATION)? else {
        return Ok(());
    };
    let old_value = match old.map(|o| o.get_object("metadata")).transpose()?.flatten() {
        Some(old_meta) => match old_meta.get_object("annotations")? {
            Some(old_annotations) => old_annotations.get_str(SOURCE_RANGES_ANNOTATION)?,
            None => None,
        },
        None => None,
    };
    let old_ranges = old_value.into_iter().flat_map(comma_separated);
    let old = OldRanges::new(old_ranges.map(|(_, text)| text));
    let path = annotations.path.key(SOURCE_RANGES_ANNOTATION);
    for (i, text) in comma_separated(value) {
        source_range(text, &path.index(i), &old, allowed, verdict);
    }
    Ok(())
}

/// README rule 3: every `spec.externalIPs[i]` must be an address in an allowed range; on
/// UPDATE only the addresses the old list lacks (by text or by address) are judged.
fn external_ips(
    spec: &At<'_>,
    old_spec: Option<&At<'_>>,
    allowed: &CidrList,
    verdict: &mut Verdict,
) -> Result<(), PolicyError> {
    let values = spec.get_str_list("externalIPs")?;
    if values.is_empty() {
        return Ok(());
    }
    let old = match old_spec {
        Some(old) => OldAddresses::read(old)?,
        None => OldAddresses::default(),
    };
    let path = spec.path.field("externalIPs");
    for (i, text) in values.into_iter().enumerate() {
        let parsed = IpAddress::parse(text);
        if old.has(text, parsed.as_ref().ok()) {
            continue;
        }
        let problem = match parsed {
            Ok(address) if allowed.contains(address) => continue,
            Ok(_) if allowed.is_empty() => {
                format!("{text:?} is not allowed: no external IP is allowed")
            }
            Ok(_) => format!("{text:?} is not in the allowed ranges {allowed}"),
            Err(problem) if allowed.is_empty() => {
                format!("{problem} (no external IP is allowed)")
            }
            Err(problem) => format!("{problem} (allowed ranges {allowed})"),
        };
        verdict.violation(&path.index(i), problem);
    }
    Ok(())
}

/// The external IPs of the old object, by text and by address.
#[derive(Debug, Default)]
struct OldAddresses<'a> {
    texts: HashSet<&'a str>,
    addresses: HashSet<IpAddress>,
}

impl<'a> OldAddresses<'a> {
    /// `externalIPs` of the old object's spec (a list of strings, 400 otherwise).
    fn read(old_spec: &At<'a>) -> Result<Self, PolicyError> {
        let texts: HashSet<&str> = old_spec.get_str_list("externalIPs")?.into_iter().collect();
        let addresses = texts
            .iter()
            .filter_map(|t| IpAddress::parse(t).ok())
            .collect();
        Ok(OldAddresses { texts, addresses })
    }

    /// Whether the old list holds `text`, or the same address.
    fn has(&self, text: &str, address: Option<&IpAddress>) -> bool {
        self.texts.contains(text) || address.is_some_and(|a| self.addresses.contains(a))
    }
}

policy_admission::export_policy!(ServicePolicy);

policy_admission::robustness_tests!(
    ServicePolicy,
    policy_admission::testing::Robustness {
        settings: serde_json::json!({
            "allowedServices": {"nodePort": false, "externalName": false},
            "externalIPs": {"allowed": ["10.20.0.0/16", "192.168.1.2", "2001:db8:1::/64"]},
            "forbiddenLabels": {"denied": ["team"]},
            "forbiddenAnnotations": {"denied": ["loadbalancer.class.acme.net"], "deniedRegex": [".*\\.acme\\.net"]}
        }),
        kinds: &[("", "v1", "Service")],
        strings: &[
            "type",
            "NodePort",
            "LoadBalancer",
            "ExternalName",
            "ClusterIP",
            "ports",
            "nodePort",
            "healthCheckNodePort",
            "allocateLoadBalancerNodePorts",
            "externalIPs",
            "10.20.0.5",
            "::ffff:10.20.0.5",
            "2001:db8:1::10",
            "10.0.1.5",
            "labels",
            "annotations",
            "team",
            "x.acme.net"
        ],
        objects: vec![serde_json::json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "solar-dev", "labels": {"app": "web"},
                "annotations": {"x.acme.net": "1"}},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}],
                "externalIPs": ["10.20.0.5", "10.0.1.5"], "healthCheckNodePort": 31000,
                "allocateLoadBalancerNodePorts": true}})],
        ..Default::default()
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use policy_admission::policy::{ValidationResponse, evaluate};
    use serde_json::{Value, json};

    fn run(operation: &str, object: Value, old: Value, settings: Value) -> ValidationResponse {
        let payload = json!({
            "request": {"kind": {"group": "", "version": "v1", "kind": "Service"}, "operation": operation,
                "namespace": "solar-dev", "object": object, "oldObject": old},
            "settings": settings
        });
        evaluate::<ServicePolicy>(
            &serde_json::to_vec(&payload).unwrap(),
            &mut Objects::default(),
        )
    }

    fn service(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn every_violation_in_document_order() {
        let object = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "labels": {"team": "a"}, "annotations": {"x.acme.net": "1"}},
            "spec": {"ports": [{"port": 80, "nodePort": 30080}], "type": "LoadBalancer",
                "externalIPs": ["10.0.1.5"], "healthCheckNodePort": 31000}});
        let settings = json!({"allowedServices": {"nodePort": false, "loadBalancer": false},
            "externalIPs": {"allowed": ["10.0.0.0/24"]},
            "forbiddenLabels": {"denied": ["team"]}, "forbiddenAnnotations": {"deniedRegex": ".*\\.acme\\.net"}});
        let r = run("CREATE", object, Value::Null, settings);
        assert_eq!(r.code, Some(403));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "metadata.labels[\"team\"]: label key \"team\" is not allowed (forbidden: names [team]); \
                 metadata.annotations[\"x.acme.net\"]: annotation key \"x.acme.net\" is not allowed (forbidden: regexes [\".*\\\\.acme\\\\.net\"]); \
                 spec.ports[0].nodePort: must be absent or 0 because node ports are not allowed (found 30080); \
                 spec.type: Services of type LoadBalancer are not allowed; \
                 spec.externalIPs[0]: \"10.0.1.5\" is not in the allowed ranges [10.0.0.0/24]; \
                 spec.healthCheckNodePort: must be absent or 0 because node ports are not allowed (found 31000); \
                 spec.allocateLoadBalancerNodePorts: must be false because node ports are not allowed"
            )
        );
    }

    #[test]
    fn unknown_types_are_malformed() {
        let r = run(
            "CREATE",
            service(json!({"type": "nodeport"})),
            Value::Null,
            json!({}),
        );
        assert_eq!(r.code, Some(400));
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.type: \"nodeport\" is not a Service type (ClusterIP, NodePort, LoadBalancer, ExternalName)"
            )
        );
        let r = run(
            "CREATE",
            service(json!({"type": ""})),
            Value::Null,
            json!({}),
        );
        assert!(r.accepted);
    }

    #[test]
    fn update_judges_only_new_addresses() {
        let settings = json!({"externalIPs": {"allowed": ["10.0.0.0/24"]}});
        let old = service(json!({"externalIPs": ["10.0.1.5", "bad"]}));
        let r = run(
            "UPDATE",
            service(json!({"externalIPs": ["::ffff:10.0.1.5", "bad", "10.0.0.9", "10.0.2.1"]})),
            old,
            settings,
        );
        assert_eq!(
            r.message.as_deref(),
            Some("spec.externalIPs[3]: \"10.0.2.1\" is not in the allowed ranges [10.0.0.0/24]")
        );
    }

    #[test]
    fn node_ports_are_compared_as_multisets() {
        let ports = |values: &[i64]| PortNodePorts {
            count: values.len(),
            node_ports: values.iter().copied().enumerate().collect(),
        };
        // reordered, one removed: nothing gained
        assert!(!ports(&[30081, 30080]).gained(&ports(&[30080, 30081, 30082])));
        assert!(!ports(&[]).gained(&ports(&[30080])));
        // a new value, a changed one, one more copy of a value
        assert!(ports(&[30080, 30083]).gained(&ports(&[30080, 30081])));
        assert!(ports(&[30080]).gained(&ports(&[])));
        assert!(ports(&[30080, 30080]).gained(&ports(&[30080, 30081])));
    }

    #[test]
    fn legacy_node_port_service_stays_editable() {
        let settings = json!({"allowedServices": {"nodePort": false}});
        let old = service(json!({"type": "NodePort", "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080},
            {"name": "metrics", "port": 9090, "nodePort": 30090}]}));
        let edited = service(json!({"type": "NodePort", "ports": [
            {"name": "metrics", "port": 9091, "protocol": "UDP", "nodePort": 30090},
            {"name": "web", "port": 80, "targetPort": 8081, "nodePort": 30080}]}));
        assert!(run("UPDATE", edited, old.clone(), settings.clone()).accepted);
        let added = service(json!({"type": "NodePort", "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080},
            {"name": "metrics", "port": 9090, "nodePort": 30090},
            {"name": "admin", "port": 8443}]}));
        let r = run("UPDATE", added, old, settings);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.ports[0].nodePort: must be absent or 0 because node ports are not allowed (found 30080); \
                 spec.ports[1].nodePort: must be absent or 0 because node ports are not allowed (found 30090); \
                 spec.type: Services of type NodePort are not allowed"
            )
        );
    }

    #[test]
    fn malformed_old_ports_are_named() {
        let settings = json!({"allowedServices": {"nodePort": false}});
        let object =
            service(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}));
        for (old_ports, message) in [
            (json!({"http": 80}), "oldObject.spec.ports: expected a list"),
            (json!([80]), "oldObject.spec.ports[0]: expected an object"),
            (
                json!([{"port": 80, "nodePort": "30080"}]),
                "oldObject.spec.ports[0].nodePort: expected an integer",
            ),
        ] {
            let old = service(json!({"type": "NodePort", "ports": old_ports}));
            let r = run("UPDATE", object.clone(), old, settings.clone());
            assert_eq!((r.code, r.message.as_deref()), (Some(400), Some(message)));
        }
    }

    fn capsule_rules() -> Value {
        json!({
            "externalNames": {"allowed": ["db.example.com"], "allowedRegex": ".*\\.example\\.com",
                "denied": ["admin.example.com"]},
            "nodePorts": {"allowed": [{"from": 30000, "to": 30100}, {"from": 31000}]},
            "loadBalancerCIDRs": ["10.0.0.0/8", "2001:db8::/32"]
        })
    }

    #[test]
    fn capsule_rule_violations_in_document_order() {
        let object = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "annotations": {SOURCE_RANGES_ANNOTATION: "10.1.0.0/16, 0.0.0.0/0"}},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}, {"port": 81, "nodePort": 32000}],
                "loadBalancerIP": "192.168.0.1", "loadBalancerSourceRanges": ["10.2.0.0/16", "2001:db9::/32", "10.0.0.0/7"],
                "healthCheckNodePort": 31001}});
        let r = run("CREATE", object, Value::Null, capsule_rules());
        assert_eq!(r.code, Some(403));
        let allowed = "[10.0.0.0/8, 2001:db8::/32]";
        assert_eq!(
            r.message.unwrap(),
            format!(
                "metadata.annotations[\"service.beta.kubernetes.io/load-balancer-source-ranges\"][1]: \"0.0.0.0/0\" is not within the allowed load-balancer ranges {allowed}; \
                 spec.ports[1].nodePort: 32000 is not in the allowed node-port ranges [30000-30100, 31000]; \
                 spec.loadBalancerIP: \"192.168.0.1\" is not within the allowed load-balancer ranges {allowed}; \
                 spec.loadBalancerSourceRanges[1]: \"2001:db9::/32\" is not within the allowed load-balancer ranges {allowed}; \
                 spec.loadBalancerSourceRanges[2]: \"10.0.0.0/7\" is not within the allowed load-balancer ranges {allowed}; \
                 spec.healthCheckNodePort: 31001 is not in the allowed node-port ranges [30000-30100, 31000]"
            )
        );
    }

    #[test]
    fn external_names_allowed_denied_and_missing() {
        let name = |n: Value| service(json!({"type": "ExternalName", "externalName": n}));
        let message = |object: Value| run("CREATE", object, Value::Null, capsule_rules()).message;
        assert_eq!(message(name(json!("DB.example.com."))), None);
        assert_eq!(message(name(json!("web.example.com"))), None);
        assert_eq!(
            message(name(json!("db.evil.io"))).as_deref(),
            Some(
                "spec.externalName: \"db.evil.io\" is not an allowed external name; allowed: [db.example.com], regex [.*\\.example\\.com]"
            )
        );
        assert_eq!(
            message(name(json!("Admin.example.com"))).as_deref(),
            Some(
                "spec.externalName: \"Admin.example.com\" is a denied external name; denied: [admin.example.com]"
            )
        );
        assert_eq!(
            message(service(json!({"type": "ExternalName"}))).as_deref(),
            Some(
                "spec.externalName: missing: an ExternalName Service must name an allowed host; allowed: [db.example.com], regex [.*\\.example\\.com]"
            )
        );
        // another type is not judged by rule 6; a type not allowed only by rule 1
        assert_eq!(
            message(service(json!({"externalName": "db.evil.io"}))),
            None
        );
        let mut settings = capsule_rules();
        settings["allowedServices"] = json!({"externalName": false});
        let r = run("CREATE", name(json!("db.evil.io")), Value::Null, settings);
        assert_eq!(
            r.message.as_deref(),
            Some("spec.type: Services of type ExternalName are not allowed")
        );
        let r = run("CREATE", name(json!(7)), Value::Null, capsule_rules());
        assert_eq!(
            (r.code, r.message.as_deref()),
            (Some(400), Some("spec.externalName: expected a string"))
        );
    }

    #[test]
    fn node_port_ranges_yield_to_no_node_ports() {
        let mut settings = capsule_rules();
        settings["allowedServices"] = json!({"nodePort": false});
        let object =
            service(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 32000}]}));
        let r = run("CREATE", object, Value::Null, settings);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.ports[0].nodePort: must be absent or 0 because node ports are not allowed (found 32000); \
                 spec.type: Services of type NodePort are not allowed"
            )
        );
    }

    #[test]
    fn update_judges_only_what_changed() {
        let old = service(json!({"type": "LoadBalancer",
            "ports": [{"port": 80, "nodePort": 32000}, {"port": 81, "nodePort": 32001}],
            "loadBalancerIP": "192.168.0.1", "loadBalancerSourceRanges": ["0.0.0.0/0"],
            "healthCheckNodePort": 32002}));
        // reordered ports, the same address and range in other spellings: nothing new
        let same = service(json!({"type": "LoadBalancer",
            "ports": [{"port": 81, "nodePort": 32001}, {"port": 8080, "nodePort": 32000}],
            "loadBalancerIP": "::ffff:192.168.0.1", "loadBalancerSourceRanges": ["0.0.0.1/0"],
            "healthCheckNodePort": 32002}));
        assert!(run("UPDATE", same, old.clone(), capsule_rules()).accepted);
        let changed = service(json!({"type": "LoadBalancer",
            "ports": [{"port": 80, "nodePort": 32000}, {"port": 81, "nodePort": 32000}],
            "loadBalancerIP": "192.168.0.2", "loadBalancerSourceRanges": ["0.0.0.0/0", "10.0.0.0/8", "11.0.0.0/8"],
            "healthCheckNodePort": 32003}));
        let r = run("UPDATE", changed, old, capsule_rules());
        let allowed = "[10.0.0.0/8, 2001:db8::/32]";
        assert_eq!(
            r.message.unwrap(),
            format!(
                "spec.ports[1].nodePort: 32000 is not in the allowed node-port ranges [30000-30100, 31000]; \
                 spec.loadBalancerIP: \"192.168.0.2\" is not within the allowed load-balancer ranges {allowed}; \
                 spec.loadBalancerSourceRanges[2]: \"11.0.0.0/8\" is not within the allowed load-balancer ranges {allowed}; \
                 spec.healthCheckNodePort: 32003 is not in the allowed node-port ranges [30000-30100, 31000]"
            )
        );
        // an external name kept (in another spelling) is not judged; a new one is
        let ext = |n: &str| service(json!({"type": "ExternalName", "externalName": n}));
        assert!(
            run(
                "UPDATE",
                ext("DB.evil.io."),
                ext("db.evil.io"),
                capsule_rules()
            )
            .accepted
        );
        assert!(
            !run(
                "UPDATE",
                ext("db2.evil.io"),
                ext("db.evil.io"),
                capsule_rules()
            )
            .accepted
        );
        // ClusterIP -> ExternalName with a name the old spec carried: the type changed
        let old = service(json!({"externalName": "db.evil.io"}));
        assert!(!run("UPDATE", ext("db.evil.io"), old, capsule_rules()).accepted);
    }

    #[test]
    fn load_balancer_values_that_do_not_parse_are_violations() {
        let settings = json!({"loadBalancerCIDRs": []});
        let object = service(
            json!({"type": "LoadBalancer", "loadBalancerIP": "10.0.0.300",
            "loadBalancerSourceRanges": ["10.0.0.0/33", "10.0.0.0/8"]}),
        );
        let r = run("CREATE", object, Value::Null, settings);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "spec.loadBalancerIP: \"10.0.0.300\" is not an IP address (no load-balancer range is allowed); \
                 spec.loadBalancerSourceRanges[0]: \"10.0.0.0/33\" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros (no load-balancer range is allowed); \
                 spec.loadBalancerSourceRanges[1]: \"10.0.0.0/8\" is not allowed: no load-balancer range is allowed"
            )
        );
        // absent and empty values carry nothing to judge
        let object = service(json!({"loadBalancerIP": "", "loadBalancerSourceRanges": []}));
        assert!(
            run(
                "CREATE",
                object,
                Value::Null,
                json!({"loadBalancerCIDRs": []})
            )
            .accepted
        );
    }

    #[test]
    fn empty_annotation_ranges_are_refused_by_index() {
        let settings = json!({"loadBalancerCIDRs": ["10.0.0.0/8"]});
        let annotated = |value: &str| {
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "annotations": {SOURCE_RANGES_ANNOTATION: value}},
                "spec": {"type": "LoadBalancer"}})
        };
        let path =
            "metadata.annotations[\"service.beta.kubernetes.io/load-balancer-source-ranges\"]";
        let empty = "\"\" is not an IP address or CIDR: it is empty (allowed load-balancer ranges [10.0.0.0/8])";
        for (value, indexes) in [
            ("10.1.0.0/16,,10.2.0.0/16", &[1][..]),
            ("10.1.0.0/16, ,10.2.0.0/16", &[1]),
            ("10.1.0.0/16,", &[1]),
            ("10.1.0.0/16 , ", &[1]),
            (",10.1.0.0/16", &[0]),
            (",", &[0, 1]),
        ] {
            let r = run("CREATE", annotated(value), Value::Null, settings.clone());
            let want: Vec<String> = indexes
                .iter()
                .map(|i| format!("{path}[{i}]: {empty}"))
                .collect();
            assert_eq!(r.code, Some(403), "{value:?}");
            assert_eq!(r.message, Some(want.join("; ")), "{value:?}");
        }
        // an all-blank value has no range (the API server accepts it); spaces are trimmed
        for value in ["", "   ", " 10.1.0.0/16 , 10.2.0.0/16 "] {
            let r = run("CREATE", annotated(value), Value::Null, settings.clone());
            assert!(r.accepted, "{value:?}: {:?}", r.message);
        }
        // on UPDATE an empty range the old value held is kept, like any other range it held
        let r = run(
            "UPDATE",
            annotated("10.1.0.0/16,,10.2.0.0/16"),
            annotated("10.1.0.0/16,"),
            settings.clone(),
        );
        assert!(r.accepted, "{:?}", r.message);
        let r = run(
            "UPDATE",
            annotated("10.1.0.0/16,"),
            annotated("10.1.0.0/16"),
            settings,
        );
        assert_eq!(r.message, Some(format!("{path}[1]: {empty}")));
    }

    #[test]
    fn malformed_old_object_is_named() {
        let settings = json!({"externalIPs": {"allowed": ["10.0.0.0/24"]}});
        let r = run(
            "UPDATE",
            service(json!({"externalIPs": ["10.0.0.1"]})),
            service(json!({"externalIPs": "10.0.0.1"})),
            settings,
        );
        assert_eq!(
            r.message.as_deref(),
            Some("oldObject.spec.externalIPs: expected a list")
        );
    }
}
