//! LimitRange items as Kubernetes reads them (`LimitRangeItem`), validated as Kubernetes
//! validates a LimitRange after its defaulting, and merged by type into [`LimitRanges`]
//! with the checks across items that make a default unusable
//! (`docs/semantics.md#limit-ranges`). How the settings name the items is
//! [`super::settings`].

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use kube_values::quantity::Quantity;
use policy_decode::error::SettingsError;
use policy_decode::settings::{ExactName, exact_name, is_reread};

/// The type of a LimitRange item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemType {
    /// Bounds and defaults of every (init) container.
    Container,
    /// Bounds of a Pod's effective totals.
    Pod,
    /// Bounds of a claim's `spec.resources.requests.storage`.
    PersistentVolumeClaim,
}

impl ExactName for ItemType {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("Container", ItemType::Container),
        ("Pod", ItemType::Pod),
        ("PersistentVolumeClaim", ItemType::PersistentVolumeClaim),
    ];
}

impl<'de> Deserialize<'de> for ItemType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        exact_name(deserializer)
    }
}

impl fmt::Display for ItemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A resource list as written (`{cpu: 100m, memory: 10Mi}`): names with quantities, in
/// settings order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceList(pub Vec<(String, Quantity)>);

impl ResourceList {
    /// The quantity of resource `name`.
    fn get(&self, name: &str) -> Option<&Quantity> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, q)| q)
    }
}

impl<'de> Deserialize<'de> for ResourceList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = ResourceList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of resource names to quantities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResourceList, A::Error> {
                let mut out: Vec<(String, Quantity)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let quantity: Quantity = map.next_value()?;
                    out.push((name, quantity));
                }
                // A name given twice: the last one counts, as in any JSON object.
                dedupe_last_wins(&mut out);
                Ok(ResourceList(out))
            }
        }
        deserializer.deserialize_map(ListVisitor)
    }
}

/// Keeps the last entry of each name, in order (a few names are compared with each other,
/// more through a set).
fn dedupe_last_wins(list: &mut Vec<(String, Quantity)>) {
    const FEW: usize = 8;
    let repeated = match list.len() {
        0 | 1 => false,
        n if n <= FEW => list
            .iter()
            .enumerate()
            .any(|(i, (a, _))| list.iter().skip(i + 1).any(|(b, _)| a == b)),
        _ => {
            let mut seen = HashSet::with_capacity(list.len());
            !list.iter().all(|(n, _)| seen.insert(n.as_str()))
        }
    };
    if repeated {
        let mut seen = HashSet::new();
        list.reverse();
        list.retain(|(n, _)| seen.insert(n.clone()));
        list.reverse();
    }
}

/// One LimitRange item as written (Kubernetes `LimitRangeItem`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawItem {
    #[serde(rename = "type")]
    item_type: ItemType,
    #[serde(default)]
    min: Option<ResourceList>,
    #[serde(default)]
    max: Option<ResourceList>,
    #[serde(default)]
    default: Option<ResourceList>,
    #[serde(default)]
    default_request: Option<ResourceList>,
    #[serde(default)]
    max_limit_request_ratio: Option<ResourceList>,
}

/// The bounds of one resource for one item type, the tightest of every item of that type
/// (all items apply, so the largest `min`, the smallest `max` and the smallest ratio bind).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bound {
    /// The smallest request (and limit) allowed.
    pub min: Option<Quantity>,
    /// The largest limit (and request) allowed.
    pub max: Option<Quantity>,
    /// The largest `limit / request` allowed (`maxLimitRequestRatio`).
    pub ratio: Option<Quantity>,
}

impl Bound {
    /// Whether the bound restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.min.is_none() && self.max.is_none() && self.ratio.is_none()
    }
}

/// One resource named by a Container or Pod item, with everything the items say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    /// The resource name (`cpu`, `memory`, `example.com/gpu`).
    pub name: String,
    /// The bounds of every (init) container.
    pub container: Bound,
    /// The bounds of the Pod's totals.
    pub pod: Bound,
    /// The default limit (the first Container item giving one, after defaulting).
    pub default: Option<Quantity>,
    /// The default request (the first Container item giving one, after defaulting).
    pub default_request: Option<Quantity>,
}

/// Validated settings: the items of every LimitRange merged by type, once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimitRanges {
    /// The resources of Container and Pod items, in the order the settings first name them
    /// (the order of their violations).
    pub resources: Vec<Resource>,
    /// The bounds of a claim's `storage` request.
    pub claim: Bound,
}

impl LimitRanges {
    /// Whether any Container or Pod item bounds or defaults a resource.
    pub fn judges_pods(&self) -> bool {
        !self.resources.is_empty()
    }

    /// Whether any item bounds Pod totals.
    pub fn bounds_pods(&self) -> bool {
        self.resources.iter().any(|r| !r.pod.is_empty())
    }
}

/// The settings path of resource `name` in field `field` of the item at `item`
/// (`limits[0].max.cpu`, `limits[0].max["example.com/gpu"]`).
pub(super) fn resource_path(item: &str, field: &str, name: &str) -> String {
    if item.is_empty() {
        // settings re-read by `validate`: nothing can be refused, no path is needed
        return String::new();
    }
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        format!("{item}.{field}.{name}")
    } else {
        format!("{item}.{field}[{name:?}]")
    }
}

/// Where a defaulted value came from (Kubernetes LimitRange defaulting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    Written,
    Max,
    Default,
    Min,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Written => "",
            Origin::Max => " (taken from max)",
            Origin::Default => " (taken from default)",
            Origin::Min => " (taken from min)",
        })
    }
}

/// A value with the settings path it was read (or derived) at.
#[derive(Clone, Debug)]
pub(super) struct Placed {
    pub(super) value: Quantity,
    pub(super) at: String,
    pub(super) origin: Origin,
}

impl Placed {
    /// `2` or `1 (taken from max)`.
    fn shown(&self) -> String {
        format!("{}{}", self.value, self.origin)
    }
}

/// Values of resources, in settings order.
type Placements = Vec<(String, Placed)>;

/// A Container item's defaults after Kubernetes LimitRange defaulting: a missing `default`
/// from `max`; a missing `defaultRequest` from `default`, then from `min`.
fn container_defaults(item: &str, raw: &RawItem) -> (Placements, Placements) {
    let place = |list: &Option<ResourceList>, field: &str, origin: Origin| {
        list.iter()
            .flat_map(|l| l.0.iter())
            .map(|(n, q)| {
                let at = resource_path(item, field, n);
                let placed = Placed {
                    value: q.clone(),
                    at,
                    origin,
                };
                (n.clone(), placed)
            })
            .collect::<Vec<_>>()
    };
    let mut default = place(&raw.default, "default", Origin::Written);
    let mut seen: HashSet<String> = default.iter().map(|(n, _)| n.clone()).collect();
    for (n, p) in place(&raw.max, "default", Origin::Max) {
        if seen.insert(n.clone()) {
            default.push((n, p));
        }
    }
    let mut request = place(&raw.default_request, "defaultRequest", Origin::Written);
    let mut seen: HashSet<String> = request.iter().map(|(n, _)| n.clone()).collect();
    let from_default = default.iter().map(|(n, p)| {
        let at = resource_path(item, "defaultRequest", n);
        let placed = Placed {
            value: p.value.clone(),
            at,
            origin: Origin::Default,
        };
        (n.clone(), placed)
    });
    let from_min = place(&raw.min, "defaultRequest", Origin::Min);
    for (n, p) in from_default.collect::<Vec<_>>().into_iter().chain(from_min) {
        if seen.insert(n.clone()) {
            request.push((n, p));
        }
    }
    (default, request)
}

/// Checks of one item on its own: fields its type takes, resource names, signs, ratios of
/// at least 1, and (after defaulting) `min ≤ defaultRequest ≤ default ≤ max`.
fn check_item(item: &str, raw: &RawItem) -> Result<(), SettingsError> {
    let t = raw.item_type;
    let fields = [
        ("min", &raw.min),
        ("max", &raw.max),
        ("default", &raw.default),
        ("defaultRequest", &raw.default_request),
        ("maxLimitRequestRatio", &raw.max_limit_request_ratio),
    ];
    for (field, list) in fields {
        let Some(list) = list else { continue };
        let takes = match field {
            "default" | "defaultRequest" => t == ItemType::Container,
            "maxLimitRequestRatio" => t != ItemType::PersistentVolumeClaim,
            _ => true,
        };
        if !takes {
            return Err(SettingsError::new(
                format!("{item}.{field}"),
                format!("an item of type {t} takes no {field}"),
            ));
        }
        for (name, q) in &list.0 {
            let at = resource_path(item, field, name);
            check_resource_name(t, name).map_err(|p| SettingsError::new(&at, p))?;
            if q.is_negative() {
                return Err(SettingsError::new(at, format!("{q} must not be negative")));
            }
            if field == "maxLimitRequestRatio" && *q < Quantity::from_int(1) {
                return Err(SettingsError::new(
                    at,
                    format!("{q} is below 1 (a limit is never below its request)"),
                ));
            }
        }
    }
    let empty = |l: &Option<ResourceList>| l.as_ref().is_none_or(|l| l.0.is_empty());
    if t == ItemType::PersistentVolumeClaim && empty(&raw.min) && empty(&raw.max) {
        return Err(SettingsError::new(
            item,
            "a PersistentVolumeClaim item needs min or max storage",
        ));
    }
    if fields.iter().all(|(_, l)| empty(l)) {
        return Err(SettingsError::new(
            item,
            "sets none of min, max, default, defaultRequest, maxLimitRequestRatio",
        ));
    }
    Ok(())
}

/// Refuses a resource name no object of the item's type can carry (a typo such as `cpus`
/// would otherwise bound nothing).
fn check_resource_name(t: ItemType, name: &str) -> Result<(), String> {
    if t == ItemType::PersistentVolumeClaim {
        return match name {
            "storage" => Ok(()),
            _ => Err(format!(
                "{name:?}: only storage applies to a PersistentVolumeClaim"
            )),
        };
    }
    let standard = matches!(name, "cpu" | "memory" | "ephemeral-storage")
        || name
            .strip_prefix("hugepages-")
            .is_some_and(|size| Quantity::parse(size).is_ok());
    let part = |s: &str, upper: bool| {
        !s.is_empty()
            && s.chars().all(|c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || c == '-'
                    || c == '.'
                    || (upper && (c.is_ascii_uppercase() || c == '_'))
            })
    };
    let extended = name
        .split_once('/')
        .is_some_and(|(domain, n)| part(domain, false) && part(n, true));
    if standard || extended {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a container resource (cpu, memory, ephemeral-storage, hugepages-<size> or <domain>/<name>)"
        ))
    }
}

/// `value ≤ bound` (`word` names the bound: `max`, `default`); the error names the value's
/// path, and `of` where a bound from another item is (`at`, `per Pod at`).
fn not_above(
    value: &Placed,
    bound: Option<&Placed>,
    word: &str,
    of: &str,
) -> Result<(), SettingsError> {
    match bound {
        Some(b) if value.value > b.value => Err(SettingsError::new(
            &value.at,
            format!(
                "{} exceeds {word} {}{}",
                value.shown(),
                b.shown(),
                located(b, of)
            ),
        )),
        _ => Ok(()),
    }
}

/// `value ≥ bound` (the `min`); see [`not_above`].
fn not_below(value: &Placed, bound: Option<&Placed>, of: &str) -> Result<(), SettingsError> {
    match bound {
        Some(b) if value.value < b.value => Err(SettingsError::new(
            &value.at,
            format!(
                "{} is below min {}{}",
                value.shown(),
                b.shown(),
                located(b, of)
            ),
        )),
        _ => Ok(()),
    }
}

/// ` at items[1].limits[0].max.cpu` for a bound of another item, nothing within one item.
fn located(bound: &Placed, of: &str) -> String {
    match of.is_empty() {
        true => String::new(),
        false => format!(" {of} {}", bound.at),
    }
}

/// `default ≤ ratio × defaultRequest` (a default that breaks the ratio refuses every
/// container relying on it).
fn within_ratio(
    default: &Placed,
    request: &Placed,
    ratio: &Placed,
    of: &str,
) -> Result<(), SettingsError> {
    let exceeds = match default.value.ratio_cmp(&request.value, &ratio.value) {
        Some(o) => o.is_gt(),
        None => !default.value.is_zero(),
    };
    if !exceeds {
        return Ok(());
    }
    let at = located(ratio, of);
    Err(SettingsError::new(
        &default.at,
        format!(
            "{} is more than {} times defaultRequest {} (maxLimitRequestRatio{at})",
            default.shown(),
            ratio.value,
            request.shown()
        ),
    ))
}

/// What the items say about one resource, with where each tightest value is.
#[derive(Clone, Debug, Default)]
pub(super) struct Acc {
    pub(super) container: Tightest,
    pub(super) pod: Tightest,
    pub(super) default: Option<Placed>,
    pub(super) default_request: Option<Placed>,
}

/// The tightest bounds of one resource and item type, with their paths.
#[derive(Clone, Debug, Default)]
pub(super) struct Tightest {
    pub(super) min: Option<Placed>,
    pub(super) max: Option<Placed>,
    pub(super) ratio: Option<Placed>,
}

impl Tightest {
    /// Tightens with the item at `item`'s min, max and ratio of `name`.
    fn tighten(&mut self, item: &str, raw: &RawItem, name: &str) {
        // Copied only when tighter: most items of many LimitRanges do not bind.
        let keep =
            |slot: &mut Option<Placed>, list: &Option<ResourceList>, field: &str, larger: bool| {
                let Some(new) = list.as_ref().and_then(|l| l.get(name)) else {
                    return;
                };
                let tighter = slot
                    .as_ref()
                    .is_none_or(|old| (*new > old.value) == larger && *new != old.value);
                if tighter {
                    *slot = Some(Placed {
                        value: new.clone(),
                        at: resource_path(item, field, name),
                        origin: Origin::Written,
                    });
                }
            };
        keep(&mut self.min, &raw.min, "min", true);
        keep(&mut self.max, &raw.max, "max", false);
        keep(
            &mut self.ratio,
            &raw.max_limit_request_ratio,
            "maxLimitRequestRatio",
            false,
        );
    }

    /// `min ≤ max` across items; the error names the later of the two.
    fn consistent(&self) -> Result<(), SettingsError> {
        if let (Some(min), Some(max)) = (&self.min, &self.max)
            && min.value > max.value
        {
            return Err(SettingsError::new(
                &max.at,
                format!("{} is below min {} at {}", max.value, min.value, min.at),
            ));
        }
        Ok(())
    }

    /// Within one item, `maxLimitRequestRatio ≤ max / min` (as Kubernetes validates a
    /// LimitRange: a larger ratio could never bind).
    fn ratio_fits(&self) -> Result<(), SettingsError> {
        if let (Some(min), Some(max), Some(ratio)) = (&self.min, &self.max, &self.ratio)
            && max
                .value
                .ratio_cmp(&min.value, &ratio.value)
                .is_some_and(|o| o.is_lt())
        {
            return Err(SettingsError::new(
                &ratio.at,
                format!(
                    "{} exceeds max/min = {}/{}",
                    ratio.value, max.value, min.value
                ),
            ));
        }
        Ok(())
    }

    fn bound(&self) -> Bound {
        let q = |p: &Option<Placed>| p.as_ref().map(|p| p.value.clone());
        Bound {
            min: q(&self.min),
            max: q(&self.max),
            ratio: q(&self.ratio),
        }
    }
}

/// Merges items by type, in settings order.
#[derive(Debug, Default)]
pub(super) struct Builder {
    /// Whether the checks run (not when `validate` re-reads the settings).
    checked: bool,
    names: HashMap<String, usize>,
    resources: Vec<(String, Acc)>,
    pub(super) claim: Tightest,
}

impl Builder {
    /// The entry of resource `name`, added at the end when new.
    pub(super) fn acc(&mut self, name: &str) -> Option<&mut Acc> {
        // a few resources (cpu, memory) are compared, more are looked up in the map
        const FEW: usize = 8;
        let found = match self.resources.len() <= FEW {
            true => self.resources.iter().position(|(n, _)| n == name),
            false => self.names.get(name).copied(),
        };
        let i = match found {
            Some(i) => i,
            None => {
                let i = self.resources.len();
                self.names.insert(name.to_owned(), i);
                self.resources.push((name.to_owned(), Acc::default()));
                i
            }
        };
        self.resources.get_mut(i).map(|(_, acc)| acc)
    }

    /// Validates the item at `item` and merges it.
    pub(super) fn add(&mut self, item: &str, raw: RawItem) -> Result<(), SettingsError> {
        // Re-read by `validate`: the checks ran when the policy was loaded and cannot fail.
        self.checked = !is_reread();
        if self.checked {
            check_item(item, &raw)?;
        }
        let names: Vec<&str> = [&raw.min, &raw.max, &raw.max_limit_request_ratio]
            .into_iter()
            .flatten()
            .flat_map(|l| l.0.iter().map(|(n, _)| n.as_str()))
            .collect();
        match raw.item_type {
            ItemType::PersistentVolumeClaim => {
                self.claim.tighten(item, &raw, "storage");
                self.claim.consistent()
            }
            ItemType::Pod => {
                for name in names.iter().filter(|_| self.checked) {
                    let mut own = Tightest::default();
                    own.tighten(item, &raw, name);
                    own.consistent()?;
                    own.ratio_fits()?;
                }
                for name in names {
                    if let Some(acc) = self.acc(name) {
                        acc.pod.tighten(item, &raw, name);
                        acc.pod.consistent()?;
                    }
                }
                Ok(())
            }
            ItemType::Container => self.add_container(item, &raw, &names),
        }
    }

    /// A Container item: its own defaults against its own bounds, then merged (the first
    /// default of a resource wins).
    fn add_container(
        &mut self,
        item: &str,
        raw: &RawItem,
        names: &[&str],
    ) -> Result<(), SettingsError> {
        for name in names {
            if let Some(acc) = self.acc(name) {
                acc.container.tighten(item, raw, name);
            }
        }
        if !self.checked {
            self.merge_defaults_reread(raw);
            return Ok(());
        }
        let (defaults, requests) = container_defaults(item, raw);
        check_container(item, raw, names, &defaults, &requests)?;
        self.merge_defaults(defaults, requests);
        Ok(())
    }

    /// [`Builder::merge_defaults`] when `validate` re-reads the settings: the same
    /// defaulting (`default` from `max`; `defaultRequest` from `default`, then `min`), a value
    /// copied only for a resource that has none yet.
    fn merge_defaults_reread(&mut self, raw: &RawItem) {
        fn entries(l: &Option<ResourceList>) -> impl Iterator<Item = &(String, Quantity)> {
            l.iter().flat_map(|l| l.0.iter())
        }
        fn written<'a>(l: &'a Option<ResourceList>, n: &str) -> Option<&'a Quantity> {
            l.as_ref().and_then(|l| l.get(n))
        }
        for (name, q) in entries(&raw.default).chain(entries(&raw.max)) {
            let value = written(&raw.default, name).unwrap_or(q);
            self.place_default(name, value, true);
        }
        let from_default = entries(&raw.default).chain(entries(&raw.max));
        for (name, q) in entries(&raw.default_request)
            .chain(from_default)
            .chain(entries(&raw.min))
        {
            let default = written(&raw.default, name).or_else(|| written(&raw.max, name));
            let value = written(&raw.default_request, name).or(default).unwrap_or(q);
            self.place_default(name, value, false);
        }
    }

    /// Sets the default limit (`limit`) or request of `name` unless one came before.
    fn place_default(&mut self, name: &str, value: &Quantity, limit: bool) {
        if let Some(acc) = self.acc(name) {
            let slot = match limit {
                true => &mut acc.default,
                false => &mut acc.default_request,
            };
            if slot.is_none() {
                *slot = Some(Placed {
                    value: value.clone(),
                    at: String::new(),
                    origin: Origin::Written,
                });
            }
        }
    }

    /// Merges a Container item's defaults where none came before.
    fn merge_defaults(&mut self, defaults: Placements, requests: Placements) {
        for (name, d) in defaults {
            if let Some(acc) = self.acc(&name) {
                acc.default.get_or_insert(d);
            }
        }
        for (name, r) in requests {
            if let Some(acc) = self.acc(&name) {
                acc.default_request.get_or_insert(r);
            }
        }
    }
}

/// A Container item on its own: `min ≤ max`, the ratio within `max/min`, its defaults
/// within its bounds and ratio.
fn check_container(
    item: &str,
    raw: &RawItem,
    names: &[&str],
    defaults: &Placements,
    requests: &Placements,
) -> Result<(), SettingsError> {
    for name in names {
        let mut own = Tightest::default();
        own.tighten(item, raw, name);
        own.consistent()?;
        own.ratio_fits()?;
    }
    let lookup = |list: &Option<ResourceList>, field: &str, name: &str| {
        list.as_ref().and_then(|l| l.get(name)).map(|q| Placed {
            value: q.clone(),
            at: resource_path(item, field, name),
            origin: Origin::Written,
        })
    };
    for (name, d) in defaults {
        not_above(d, lookup(&raw.max, "max", name).as_ref(), "max", "")?;
        not_below(d, lookup(&raw.min, "min", name).as_ref(), "")?;
    }
    for (name, r) in requests {
        not_below(r, lookup(&raw.min, "min", name).as_ref(), "")?;
        not_above(r, lookup(&raw.max, "max", name).as_ref(), "max", "")?;
        let default = defaults.iter().find(|(n, _)| n == name).map(|(_, p)| p);
        not_above(r, default, "default", "")?;
        let ratio = lookup(&raw.max_limit_request_ratio, "maxLimitRequestRatio", name);
        if let (Some(d), Some(ratio)) = (default, ratio) {
            within_ratio(d, r, &ratio, "")?;
        }
    }
    Ok(())
}

impl Builder {
    /// Checks across items, then the merged settings.
    pub(super) fn finish(self) -> Result<LimitRanges, SettingsError> {
        let mut resources = Vec::with_capacity(self.resources.len());
        for (name, acc) in self.resources {
            if self.checked {
                check_across(&acc)?;
            }
            let q = |p: &Option<Placed>| p.as_ref().map(|p| p.value.clone());
            resources.push(Resource {
                name,
                container: acc.container.bound(),
                pod: acc.pod.bound(),
                default: q(&acc.default),
                default_request: q(&acc.default_request),
            });
        }
        Ok(LimitRanges {
            resources,
            claim: self.claim.bound(),
        })
    }
}

/// One resource across items: tightest `min ≤ max` per type; the merged defaults within
/// every Container item's bounds and the ratio, and below every Pod item's max.
fn check_across(acc: &Acc) -> Result<(), SettingsError> {
    acc.container.consistent()?;
    acc.pod.consistent()?;
    let c = &acc.container;
    for value in [&acc.default, &acc.default_request].into_iter().flatten() {
        not_above(value, c.max.as_ref(), "max", "at")?;
        not_below(value, c.min.as_ref(), "at")?;
        not_above(value, acc.pod.max.as_ref(), "max", "per Pod at")?;
    }
    if let (Some(d), Some(r)) = (&acc.default, &acc.default_request) {
        not_above(r, Some(d), "default", "at")?;
        if let Some(ratio) = &c.ratio {
            within_ratio(d, r, ratio, "at")?;
        }
    }
    Ok(())
}
