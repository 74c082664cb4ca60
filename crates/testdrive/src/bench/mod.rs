//! `testdrive bench`: per-request latency with a fresh instance per request
//! (what policy-server does) and with one reused instance (what `kwctl
//! bench` does), and the cost budgets (docs/semantics.md#cost) on generated inputs.
//!
//! `bench.yaml` in a policy directory is a list of entries:
//!
//! ```yaml
//! - name: toleration exists
//!   settings: {protectedTaints: [{key: dedicated, value: tenantA}]}
//!   request: ../../test_data/pod-toleration-policy/requests/pod-toleration-exists.json
//!   override: {userInfo: {username: bob}}    # optional
//!   replay: session.yml                        # optional, or cluster: [...]
//! ```
//!
//! An entry may generate a large input instead of committing it as a fixture:
//!
//! ```yaml
//! # a ~1 MiB object: one item is added to every listed place, `{i}` replaced by
//! # the item's number, until the serialised request.object reaches `bytes`
//! - name: 1 MiB Pod of containers
//!   settings: {allowed: [gold]}
//!   request: ../../test_data/priority-class-policy/requests/pod-gold.json
//!   grow:
//!     bytes: 1048576                         # optional, 1 MiB by default
//!     at:
//!     - {path: object.spec.containers, item: {name: "c-{i}", image: "nginx:{i}"}}
//!     - {path: object.spec.nodeSelector, key: "k-{i}", value: "v-{i}"}
//!
//! # settings whose list (or map) at `path` holds 10, 1,000 and 10,000 entries
//! # (existing entries count); one scenario per count
//! - name: allowed names
//!   settings: {allowed: [gold]}
//!   request: ../../test_data/priority-class-policy/requests/pod-gold.json
//!   scale:
//!     path: allowed
//!     item: "class-{i}"
//!     entries: [10, 1000, 10000]             # optional, these by default
//! ```
//!
//! Paths are dotted field names with `[n]` list indices and `["key"]` for keys
//! holding dots (`object.spec.containers[0].volumeMounts`,
//! `restrictions[0].spec.metadata.labels.values["app"].whitelist`); missing
//! maps and lists on the way to the last segment are created.
//!
//! Generated scenarios are also measured against the **host floor**: the same
//! payload with the operation replaced by `CONNECT`, which every policy of the
//! bundle accepts before reading its settings (`Policy::OPERATIONS`). The floor is
//! what any guest pays to be handed that payload: a fresh instance, the payload
//! copied into it and parsed, the settings skipped. Budgets (fresh instance,
//! median): a grown object under [`GROW_BUDGET`]; for scaled settings, what the
//! policy adds from the smallest to the largest entry count under
//! [`SCALE_BUDGET_RATIO`] times what the floor adds (see [`budget_checks`]).
//!
//! [`server`] runs the same scenarios in the real policy-server (`testdrive bench-server`);
//! its [`server::PolicyServer`] is the policy-server process every other real run starts.

pub mod goals;
pub mod load;
pub mod noop;
pub mod server;

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::cases::{CaseDefaults, RequestSpec, Scenario, resolve_scenario};
use policy_host::callbacks::SharedCallbacks;
use policy_host::error::{Error, Result, read_text};
use policy_host::host::serialize_validate_payload;
use policy_host::host::{Evaluation, Host};

/// Budget of one request carrying a grown (~1 MiB) object, fresh instance.
pub const GROW_BUDGET: Duration = Duration::from_millis(50);

/// Budget of scaled settings: the policy's growth in time from the smallest to the largest
/// entry count, relative to the host floor's growth for the same payloads (fresh instance).
pub const SCALE_BUDGET_RATIO: f64 = 5.0;

/// The operation of the floor request: accepted by every policy before its settings are
/// read (no policy of the bundle judges CONNECT; DELETE is judged by protected-objects,
/// namespace-metadata and tenant-cordon).
pub const FLOOR_OPERATION: &str = "CONNECT";

/// Default target size of a grown object.
pub const DEFAULT_GROW_BYTES: usize = 1 << 20;

/// Default entry counts of scaled settings.
pub const DEFAULT_SCALE_ENTRIES: [usize; 3] = [10, 1_000, 10_000];

/// One entry of `bench.yaml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchEntry {
    /// Short name shown in the table.
    pub name: String,
    /// Policy settings (default `{}`).
    #[serde(default)]
    pub settings: Option<Value>,
    /// The admission request (path relative to `bench.yaml`, or inline).
    pub request: RequestSpec,
    /// RFC 7386 merge patch applied to the request.
    #[serde(default, rename = "override")]
    pub override_: Option<Value>,
    /// kwctl replay session file.
    #[serde(default)]
    pub replay: Option<String>,
    /// Objects that exist in the cluster.
    #[serde(default)]
    pub cluster: Option<Vec<Value>>,
    /// Enlarge the request's object to about `bytes`.
    #[serde(default)]
    pub grow: Option<Grow>,
    /// Run with settings holding several entry counts.
    #[serde(default)]
    pub scale: Option<Scale>,
    /// Kubewarden's own policies that do the same job, for `bench-server`'s side-by-side.
    #[serde(default)]
    pub kubewarden: Vec<AnchorSpec>,
}

/// A Kubewarden policy measured beside a bench entry (`make bench-server`), with the same
/// request; its settings grow with the entry's `scale` when it has its own `scale`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorSpec {
    /// The module's file name without `.wasm` in the anchors directory
    /// (`priority_class_policy`).
    pub module: String,
    /// Its settings.
    #[serde(default)]
    pub settings: Option<Value>,
    /// Where its list grows (the entry's entry counts are used).
    #[serde(default)]
    pub scale: Option<Filler>,
}

/// A Kubewarden policy and its settings for one bench scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// The module's file name without `.wasm`.
    pub module: String,
    /// Its settings, scaled like the scenario's.
    pub settings: Value,
}

/// How to enlarge a request's object (`grow:` of a bench entry).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grow {
    /// Target size of the serialised `request.object`.
    #[serde(default = "default_grow_bytes")]
    pub bytes: usize,
    /// The places that get one more item per step (paths relative to the request).
    pub at: Vec<Filler>,
}

fn default_grow_bytes() -> usize {
    DEFAULT_GROW_BYTES
}

/// How to scale a settings list or map (`scale:` of a bench entry).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    /// Where the list or map is, in the settings.
    pub path: String,
    /// A list item (with `{i}`), for lists.
    #[serde(default)]
    pub item: Option<Value>,
    /// A map key (with `{i}`), for maps.
    #[serde(default)]
    pub key: Option<String>,
    /// A map value (with `{i}`), for maps.
    #[serde(default)]
    pub value: Option<Value>,
    /// The entry counts to run (existing entries count).
    #[serde(default = "default_scale_entries")]
    pub entries: Vec<usize>,
}

fn default_scale_entries() -> Vec<usize> {
    DEFAULT_SCALE_ENTRIES.to_vec()
}

/// One place that grows: a list getting `item`, or a map getting `key: value`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filler {
    /// Path of the list or map.
    pub path: String,
    /// A list item (with `{i}`), for lists.
    #[serde(default)]
    pub item: Option<Value>,
    /// A map key (with `{i}`), for maps.
    #[serde(default)]
    pub key: Option<String>,
    /// A map value (with `{i}`), for maps.
    #[serde(default)]
    pub value: Option<Value>,
}

/// What a bench scenario measures.
#[derive(Debug, Clone, PartialEq)]
pub enum BenchKind {
    /// A plain scenario from its fixtures.
    Plain,
    /// An object grown to `bytes` with `items` items per place.
    Grown {
        /// Serialised size of `request.object`.
        bytes: usize,
        /// Items added to each place.
        items: usize,
    },
    /// Settings scaled to `entries` entries (`group` is the entry's name).
    Scaled {
        /// The `bench.yaml` entry the scenario comes from.
        group: String,
        /// Entries in the scaled list or map.
        entries: usize,
    },
}

/// A resolved bench entry.
#[derive(Debug, Clone)]
pub struct BenchScenario {
    /// Entry name.
    pub name: String,
    /// Its inputs.
    pub scenario: Scenario,
    /// What it measures.
    pub kind: BenchKind,
    /// Kubewarden's policies measured beside it by `bench-server`.
    pub anchors: Vec<Anchor>,
}

/// Parses and resolves a `bench.yaml`; `grow` and `scale` entries are generated here
/// (a `scale` entry becomes one scenario per entry count).
pub fn load_bench_file(path: &Path) -> Result<Vec<BenchScenario>> {
    let entries: Vec<BenchEntry> =
        serde_yaml::from_str(&read_text(path)?).map_err(|e| Error::parse(path.display(), e))?;
    let mut out = Vec::new();
    for e in entries {
        entry_scenarios(path, &e, &mut out).map_err(|err| {
            Error::Invalid(format!("{}: bench `{}`: {err}", path.display(), e.name))
        })?;
    }
    Ok(out)
}

/// The scenarios of one `bench.yaml` entry, appended to `out`.
fn entry_scenarios(path: &Path, e: &BenchEntry, out: &mut Vec<BenchScenario>) -> Result<()> {
    let fields = CaseDefaults {
        settings: e.settings.clone(),
        request: Some(e.request.clone()),
        override_: None,
        replay: e.replay.clone(),
        cluster: e.cluster.clone(),
    };
    let overrides: Vec<&Value> = e.override_.iter().collect();
    let scenario = resolve_scenario(path, &CaseDefaults::default(), &fields, &overrides)?;
    match (&e.grow, &e.scale) {
        (Some(_), Some(_)) => {
            return Err(Error::Invalid(
                "`grow` and `scale` are mutually exclusive".into(),
            ));
        }
        (Some(grow), None) => out.push(grown_scenario(e, scenario, grow)?),
        (None, Some(scale)) => {
            for &entries in &scale.entries {
                out.push(scaled_scenario(e, scenario.clone(), scale, entries)?);
            }
        }
        (None, None) => out.push(BenchScenario {
            name: e.name.clone(),
            scenario,
            kind: BenchKind::Plain,
            anchors: anchors(e, None)?,
        }),
    }
    Ok(())
}

/// The scenario of a `grow` entry: its request object grown to the size asked.
fn grown_scenario(e: &BenchEntry, mut scenario: Scenario, grow: &Grow) -> Result<BenchScenario> {
    let request = scenario
        .request
        .as_mut()
        .ok_or_else(|| Error::Invalid("`grow` needs a request".into()))?;
    let (bytes, items) = grow_request(request, grow)?;
    Ok(BenchScenario {
        name: format!(
            "{} ({:.2} MiB, {} items)",
            e.name,
            bytes as f64 / f64::from(1u32 << 20),
            items
        ),
        scenario,
        kind: BenchKind::Grown { bytes, items },
        anchors: anchors(e, None)?,
    })
}

/// The scenario of a `scale` entry at `entries` settings entries.
fn scaled_scenario(
    e: &BenchEntry,
    mut scenario: Scenario,
    scale: &Scale,
    entries: usize,
) -> Result<BenchScenario> {
    let filler = Filler {
        path: scale.path.clone(),
        item: scale.item.clone(),
        key: scale.key.clone(),
        value: scale.value.clone(),
    };
    fill_to(&mut scenario.settings, &filler, entries)?;
    Ok(BenchScenario {
        name: format!("{} ×{entries}", e.name),
        scenario,
        kind: BenchKind::Scaled {
            group: e.name.clone(),
            entries,
        },
        anchors: anchors(e, Some(entries))?,
    })
}

/// The Kubewarden policies an entry is compared with, their settings scaled like ours.
fn anchors(e: &BenchEntry, entries: Option<usize>) -> Result<Vec<Anchor>> {
    e.kubewarden
        .iter()
        .map(|a| {
            let mut settings = a
                .settings
                .clone()
                .unwrap_or_else(|| Value::Object(Map::new()));
            if let (Some(filler), Some(n)) = (&a.scale, entries) {
                fill_to(&mut settings, filler, n)?;
            }
            Ok(Anchor {
                module: a.module.clone(),
                settings,
            })
        })
        .collect()
}

/// One segment of a generator path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Parses `a.b[0].c["x.y"]` into segments.
fn parse_path(path: &str) -> Result<Vec<Segment>> {
    let bad = |why: &str| Error::Invalid(format!("path {path:?}: {why}"));
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[\"") {
            let end = after.find("\"]").ok_or_else(|| bad("unclosed [\"..\"]"))?;
            out.push(Segment::Key(after[..end].to_owned()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or_else(|| bad("unclosed [..]"))?;
            let i = after[..end]
                .parse()
                .map_err(|_| bad("an index must be a number"))?;
            out.push(Segment::Index(i));
            rest = &after[end + 1..];
        } else {
            let rest_field = rest.strip_prefix('.').unwrap_or(rest);
            let end = rest_field.find(['.', '[']).unwrap_or(rest_field.len());
            if end == 0 {
                return Err(bad("empty field name"));
            }
            out.push(Segment::Key(rest_field[..end].to_owned()));
            rest = &rest_field[end..];
        }
    }
    if out.is_empty() {
        return Err(bad("empty path"));
    }
    Ok(out)
}

/// The value at `path` inside `root`, creating maps on the way and `leaf` at the end
/// when missing (or `null`).
fn walk_to<'a>(root: &'a mut Value, path: &str, leaf: Value) -> Result<&'a mut Value> {
    let segments = parse_path(path)?;
    let last = segments.len() - 1;
    let mut current = root;
    for (n, segment) in segments.into_iter().enumerate() {
        let fresh = if n == last {
            leaf.clone()
        } else {
            Value::Object(Map::new())
        };
        current = match segment {
            Segment::Key(k) => {
                let map = current.as_object_mut().ok_or_else(|| {
                    Error::Invalid(format!("path {path:?}: {k:?} is not in a map"))
                })?;
                let slot = map.entry(k).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = fresh;
                }
                slot
            }
            Segment::Index(i) => current
                .as_array_mut()
                .and_then(|l| l.get_mut(i))
                .ok_or_else(|| Error::Invalid(format!("path {path:?}: no element [{i}]")))?,
        };
    }
    Ok(current)
}

/// `template` with `{i}` replaced by `i` in every string and map key.
fn instantiate(template: &Value, i: usize) -> Value {
    let text = |s: &str| s.replace("{i}", &i.to_string());
    match template {
        Value::String(s) => Value::String(text(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| instantiate(v, i)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (text(k), instantiate(v, i)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl Filler {
    fn check(&self) -> Result<()> {
        match (&self.item, &self.key, &self.value) {
            (Some(_), None, None) | (None, Some(_), Some(_)) => Ok(()),
            _ => Err(Error::Invalid(format!(
                "{}: give either `item` (a list) or `key` and `value` (a map)",
                self.path
            ))),
        }
    }

    /// The list or map this filler adds to (created when missing).
    fn target<'a>(&self, root: &'a mut Value) -> Result<&'a mut Value> {
        self.check()?;
        let leaf = if self.item.is_some() {
            Value::Array(Vec::new())
        } else {
            Value::Object(Map::new())
        };
        let target = walk_to(root, &self.path, leaf)?;
        let fits = if self.item.is_some() {
            target.is_array()
        } else {
            target.is_object()
        };
        if !fits {
            return Err(Error::Invalid(format!(
                "{}: holds {}, not a {}",
                self.path,
                target,
                if self.item.is_some() { "list" } else { "map" }
            )));
        }
        Ok(target)
    }

    /// Number of entries at the target.
    fn len(&self, root: &mut Value) -> Result<usize> {
        let t = self.target(root)?;
        Ok(t.as_array()
            .map(Vec::len)
            .or_else(|| t.as_object().map(Map::len))
            .unwrap_or(0))
    }

    /// Serialised size of generated entry `i` (a map entry counts its key and colon).
    fn entry_bytes(&self, i: usize) -> Result<usize> {
        let len = |v: &Value| {
            serde_json::to_vec(v)
                .map(|b| b.len())
                .map_err(|e| Error::Invalid(e.to_string()))
        };
        match (&self.item, &self.key, &self.value) {
            (Some(item), None, None) => len(&instantiate(item, i)),
            (None, Some(key), Some(value)) => {
                Ok(len(&Value::String(key.replace("{i}", &i.to_string())))?
                    + 1
                    + len(&instantiate(value, i))?)
            }
            _ => self.check().map(|()| 0),
        }
    }

    /// Adds the generated entries `from..to`.
    fn add(&self, root: &mut Value, from: usize, to: usize) -> Result<()> {
        match (self.target(root)?, &self.item, &self.key, &self.value) {
            (Value::Array(list), Some(item), _, _) => {
                list.extend((from..to).map(|i| instantiate(item, i)));
            }
            (Value::Object(map), None, Some(key), Some(value)) => {
                for i in from..to {
                    let key = key.replace("{i}", &i.to_string());
                    if map.insert(key.clone(), instantiate(value, i)).is_some() {
                        return Err(Error::Invalid(format!(
                            "{}: generated key {key:?} already exists",
                            self.path
                        )));
                    }
                }
            }
            _ => {
                return Err(Error::Invalid(format!(
                    "{}: cannot add entries here",
                    self.path
                )));
            }
        }
        Ok(())
    }
}

/// Fills the list or map of `filler` up to `entries` entries (existing ones included).
fn fill_to(settings: &mut Value, filler: &Filler, entries: usize) -> Result<()> {
    let have = filler.len(settings)?;
    if have > entries {
        return Err(Error::Invalid(format!(
            "{}: already holds {have} entries, more than {entries}",
            filler.path
        )));
    }
    filler.add(settings, have, entries)
}

fn object_size(request: &Value) -> usize {
    request
        .get("object")
        .map(|o| serde_json::to_vec(o).map(|b| b.len()).unwrap_or(0))
        .unwrap_or(0)
}

/// Grows `request` until its object's serialisation reaches `grow.bytes`; returns the
/// object's size and the number of items added to each place.
fn grow_request(request: &mut Value, grow: &Grow) -> Result<(usize, usize)> {
    if grow.at.is_empty() {
        return Err(Error::Invalid("`grow.at` lists no place".into()));
    }
    let mut size = object_size(request);
    let mut items = 0;
    // Each step adds one entry to every place: its serialisation plus a separator (places
    // outside `object`, such as `oldObject`, do not count).
    if !grow.at.iter().any(|f| f.path.starts_with("object.")) {
        return Err(Error::Invalid(
            "`grow.at` needs a place under `object.`".into(),
        ));
    }
    while size < grow.bytes {
        for f in grow.at.iter().filter(|f| f.path.starts_with("object.")) {
            size += f.entry_bytes(items)? + 1;
        }
        items += 1;
    }
    for f in &grow.at {
        f.add(request, 0, items)?;
    }
    Ok((object_size(request), items))
}

/// The bench entries as inputs of a policy's native benchmark
/// (`policy_admission::bench::BenchInput`): `[{name, payload: {request, settings}, cluster,
/// iterations?}]`; generated inputs get few iterations.
pub fn native_inputs(benches: &[BenchScenario]) -> Value {
    Value::Array(
        benches
            .iter()
            .map(|b| {
                let cluster = match &b.scenario.cluster {
                    crate::cases::ClusterState::None => Vec::new(),
                    crate::cases::ClusterState::Replay(r) => r.objects(),
                    crate::cases::ClusterState::Objects(o) => o.objects().to_vec(),
                };
                let mut input = serde_json::json!({
                    "name": b.name,
                    "payload": {"request": b.scenario.request, "settings": b.scenario.settings},
                    "cluster": cluster,
                });
                let iterations = match b.kind {
                    BenchKind::Plain => None,
                    BenchKind::Grown { .. } => Some(20),
                    BenchKind::Scaled { entries, .. } if entries >= 1000 => Some(200),
                    BenchKind::Scaled { .. } => Some(2000),
                };
                if let (Some(n), Some(map)) = (iterations, input.as_object_mut()) {
                    map.insert("iterations".into(), Value::from(n));
                }
                input
            })
            .collect(),
    )
}

/// Latency statistics of one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Number of timed iterations.
    pub iterations: usize,
    /// Median, in microseconds.
    pub median_us: f64,
    /// Mean, in microseconds.
    pub mean_us: f64,
}

impl Stats {
    fn from_samples(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        let n = samples.len();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let at = |i: usize| samples.get(i).copied().map_or(0.0, us);
        let median_us = match n {
            0 => 0.0,
            _ if n % 2 == 1 => at(n / 2),
            _ => (at(n / 2 - 1) + at(n / 2)) / 2.0,
        };
        let mean_us = if n == 0 {
            0.0
        } else {
            samples.iter().copied().map(us).sum::<f64>() / n as f64
        };
        Stats {
            iterations: n,
            median_us,
            mean_us,
        }
    }
}

/// Result of benchmarking one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// Entry name.
    pub name: String,
    /// Verdict of the first evaluation (sanity check).
    pub allowed: bool,
    /// Fresh instance per request (instantiate + validate).
    pub fresh: Stats,
    /// One reused instance (validate only).
    pub reused: Stats,
    /// The host floor, fresh instance: the same payload with the operation
    /// [`FLOOR_OPERATION`] (generated scenarios only).
    pub floor: Option<Stats>,
}

/// Iteration counts and time budget of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchOptions {
    /// Iterations with a fresh instance each.
    pub fresh_iterations: usize,
    /// Iterations on one reused instance.
    pub reused_iterations: usize,
    /// Each measurement stops early once this much time was spent.
    pub budget: Duration,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            fresh_iterations: 200,
            reused_iterations: 2000,
            budget: Duration::from_secs(5),
        }
    }
}

impl BenchOptions {
    /// The options for a scenario of `kind`: generated inputs run fewer iterations and
    /// spend at most 2 s per measurement, so that `make bench` stays short.
    pub fn for_kind(&self, kind: &BenchKind) -> BenchOptions {
        let (fresh, reused) = match kind {
            BenchKind::Plain => return *self,
            BenchKind::Grown { .. } => (15, 15),
            BenchKind::Scaled { entries, .. } if *entries >= 1000 => (50, 100),
            BenchKind::Scaled { .. } => (self.fresh_iterations, self.reused_iterations),
        };
        BenchOptions {
            fresh_iterations: self.fresh_iterations.min(fresh),
            reused_iterations: self.reused_iterations.min(reused),
            budget: self.budget.min(Duration::from_secs(2)),
        }
    }
}

/// Benchmarks one scenario. Settings are validated first (an invalid
/// configuration is an error, not a number). The payload is serialised once, outside
/// the timings: they cover instantiation, the guest's `validate` and the host's handling
/// of its answer (a mutation's JSON Patch included).
pub fn bench_scenario(
    host: &Host,
    bench: &BenchScenario,
    options: &BenchOptions,
) -> Result<BenchResult> {
    let s = &bench.scenario;
    let settings = host.validate_settings(&s.settings)?;
    if !settings.valid {
        return Err(Error::Invalid(format!(
            "bench `{}`: settings rejected: {}",
            bench.name,
            settings.message.unwrap_or_default()
        )));
    }
    let request = s
        .request
        .as_ref()
        .ok_or_else(|| Error::Invalid(format!("bench `{}`: no request", bench.name)))?;
    // The request in the key order the host sends it in (what policy-server diffs a
    // mutation against), serialised once.
    let request = &policy_host::request::canonical(request);
    let payload = serialize_validate_payload(request, &s.settings)?;
    let callbacks = s.cluster.callbacks();
    let reset = || {
        if let Ok(mut cb) = callbacks.lock() {
            cb.reset();
        }
    };

    let first = sanity_run(host, bench, request, &payload, &callbacks)?;

    // The floor is timed in turn with the policy, so that both see the same machine.
    let floor_run = match bench.kind {
        BenchKind::Plain => None,
        BenchKind::Grown { .. } | BenchKind::Scaled { .. } => {
            Some(Floor::prepare(host, bench, request, &s.settings)?)
        }
    };
    let mut fresh = Vec::with_capacity(options.fresh_iterations);
    let mut floor_samples = Vec::with_capacity(options.fresh_iterations);
    let started = Instant::now();
    for _ in 0..options.fresh_iterations {
        reset();
        let t = Instant::now();
        let instance = host.instantiate()?;
        instance.validate_serialized(request, &payload, callbacks.clone())?;
        fresh.push(t.elapsed());
        if let Some(floor) = &floor_run {
            floor_samples.push(floor.time_once(host)?);
        }
        if started.elapsed() > options.budget {
            break;
        }
    }
    let floor = floor_run.map(|_| Stats::from_samples(floor_samples));

    let reused = time_reused(host, request, &payload, &callbacks, options)?;

    Ok(BenchResult {
        name: bench.name.clone(),
        allowed: first.response.allowed,
        fresh: Stats::from_samples(fresh),
        reused: Stats::from_samples(reused),
        floor,
    })
}

/// The first evaluation, untimed (it also warms up caches): a fixture problem or a failed
/// policy is an error, not a number.
fn sanity_run(
    host: &Host,
    bench: &BenchScenario,
    request: &Value,
    payload: &[u8],
    callbacks: &SharedCallbacks,
) -> Result<Evaluation> {
    let first = host
        .instantiate()?
        .validate_serialized(request, payload, callbacks.clone())?;
    if let Ok(cb) = callbacks.lock()
        && let Some(p) = cb.problems().first()
    {
        return Err(Error::Invalid(format!("bench `{}`: {p}", bench.name)));
    }
    if first.response.code() == Some(500) {
        return Err(Error::Invalid(format!(
            "bench `{}`: the policy failed: {}",
            bench.name,
            first.response.message().unwrap_or_default()
        )));
    }
    Ok(first)
}

/// The times of evaluations on one reused instance, as `kwctl bench` measures.
fn time_reused(
    host: &Host,
    request: &Value,
    payload: &[u8],
    callbacks: &SharedCallbacks,
    options: &BenchOptions,
) -> Result<Vec<Duration>> {
    let reset = || {
        if let Ok(mut cb) = callbacks.lock() {
            cb.reset();
        }
    };
    let instance = host.instantiate()?;
    reset();
    instance.validate_serialized(request, payload, callbacks.clone())?;
    let mut reused = Vec::with_capacity(options.reused_iterations);
    let started = Instant::now();
    for _ in 0..options.reused_iterations {
        reset();
        let t = Instant::now();
        instance.validate_serialized(request, payload, callbacks.clone())?;
        reused.push(t.elapsed());
        if started.elapsed() > options.budget {
            break;
        }
    }
    Ok(reused)
}

/// The host floor of a scenario: its payload with the operation [`FLOOR_OPERATION`], which
/// must be accepted unchanged without any host call.
struct Floor {
    request: Value,
    payload: Vec<u8>,
    callbacks: policy_host::SharedCallbacks,
}

impl Floor {
    fn prepare(
        host: &Host,
        bench: &BenchScenario,
        request: &Value,
        settings: &Value,
    ) -> Result<Floor> {
        let mut request = request.clone();
        if let Some(map) = request.as_object_mut() {
            map.insert("operation".into(), Value::from(FLOOR_OPERATION));
        }
        let payload = serialize_validate_payload(&request, settings)?;
        let floor = Floor {
            request,
            payload,
            callbacks: policy_host::shared(policy_host::NoCluster::default()),
        };
        let first = host.instantiate()?.validate_serialized(
            &floor.request,
            &floor.payload,
            floor.callbacks.clone(),
        )?;
        if !first.response.allowed || first.patch.is_some() || !first.host_call_errors.is_empty() {
            return Err(Error::Invalid(format!(
                "bench `{}`: the floor request ({FLOOR_OPERATION}) was judged, not accepted at once",
                bench.name
            )));
        }
        Ok(floor)
    }

    /// One fresh-instance evaluation of the floor request.
    fn time_once(&self, host: &Host) -> Result<Duration> {
        let t = Instant::now();
        host.instantiate()?.validate_serialized(
            &self.request,
            &self.payload,
            self.callbacks.clone(),
        )?;
        Ok(t.elapsed())
    }
}

/// The verdict of one cost budget (docs/semantics.md#cost).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetCheck {
    /// Policy name.
    pub policy: String,
    /// What was measured (`1 MiB Pod of containers (1.00 MiB, 5461 items)`,
    /// `allowed names ×10 / ×1000 / ×10000`).
    pub scenario: String,
    /// Fresh-instance medians in µs (one for a grown object; one per entry count for
    /// scaled settings, in the order of the entries).
    pub fresh_us: Vec<f64>,
    /// The host floor's fresh-instance medians in µs, in the same order (0 when not
    /// measured).
    pub floor_us: Vec<f64>,
    /// The budget as text (`< 50 ms`, `Δ < 5 Δfloor`).
    pub budget: String,
    /// Measured value relative to the budget's limit (≥ 1 is over).
    pub ratio: f64,
    /// The measured quantity: ms for objects; for scaled settings the policy's growth
    /// over the floor's growth.
    pub measured: f64,
    /// Scaled settings: the largest entry count's time over the smallest's, for the policy
    /// and for the floor (`None` for objects).
    pub growth: Option<(f64, f64)>,
}

impl BudgetCheck {
    /// Whether the budget is met.
    pub fn ok(&self) -> bool {
        self.ratio < 1.0
    }
}

/// One measured point of a scaled group: entries, policy µs, floor µs.
type ScalePoint = (usize, f64, f64);

/// The budget checks of one policy's results: every grown scenario against
/// [`GROW_BUDGET`]; every group of scaled scenarios against [`SCALE_BUDGET_RATIO`]:
/// `t(N) − t(n) < 5 × (floor(N) − floor(n))` for the smallest entry count `n` and the
/// largest `N`, i.e. each settings byte costs the policy less than five times what it
/// costs to hand it to a guest at all.
///
/// The bare ratio `t(N) / t(n)` is reported beside it (`growth`) but is not the budget:
/// at 10,000 entries the floor alone (a guest that ignores its settings) grows by several
/// times the 10-entry time, because the 10-entry time is mostly the instance's start.
pub fn budget_checks(policy: &str, results: &[(&BenchScenario, &BenchResult)]) -> Vec<BudgetCheck> {
    let mut out = Vec::new();
    let mut groups: Vec<(&str, Vec<ScalePoint>)> = Vec::new();
    for (b, r) in results {
        let floor = r.floor.map_or(0.0, |f| f.median_us);
        match &b.kind {
            BenchKind::Plain => {}
            BenchKind::Grown { .. } => {
                let limit = GROW_BUDGET.as_secs_f64() * 1e3;
                let ms = r.fresh.median_us / 1e3;
                out.push(BudgetCheck {
                    policy: policy.to_owned(),
                    scenario: b.name.clone(),
                    fresh_us: vec![r.fresh.median_us],
                    floor_us: vec![floor],
                    budget: format!("< {limit:.0} ms"),
                    ratio: ms / limit,
                    measured: ms,
                    growth: None,
                });
            }
            BenchKind::Scaled { group, entries } => {
                let point = (*entries, r.fresh.median_us, floor);
                match groups.iter_mut().find(|(g, _)| *g == group.as_str()) {
                    Some((_, v)) => v.push(point),
                    None => groups.push((group.as_str(), vec![point])),
                }
            }
        }
    }
    for (group, points) in groups {
        if let Some(check) = scale_check(policy, group, &points) {
            out.push(check);
        }
    }
    out
}

/// The budget of one scaled group (see [`budget_checks`]).
fn scale_check(policy: &str, group: &str, points: &[ScalePoint]) -> Option<BudgetCheck> {
    let &(n_small, t_small, f_small) = points.iter().min_by_key(|p| p.0)?;
    let &(n_large, t_large, f_large) = points.iter().max_by_key(|p| p.0)?;
    let quotient = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    let measured = quotient(t_large - t_small, f_large - f_small).max(0.0);
    let names: Vec<String> = points.iter().map(|(n, _, _)| format!("×{n}")).collect();
    Some(BudgetCheck {
        policy: policy.to_owned(),
        scenario: format!("{group} {}", names.join(" / ")),
        fresh_us: points.iter().map(|p| p.1).collect(),
        floor_us: points.iter().map(|p| p.2).collect(),
        budget: format!("Δ×{n_small}→×{n_large} < {SCALE_BUDGET_RATIO} Δfloor"),
        ratio: measured / SCALE_BUDGET_RATIO,
        measured,
        growth: Some((quotient(t_large, t_small), quotient(f_large, f_small))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats() {
        let s = Stats::from_samples(vec![
            Duration::from_micros(30),
            Duration::from_micros(10),
            Duration::from_micros(20),
        ]);
        assert_eq!(s.iterations, 3);
        assert!((s.median_us - 20.0).abs() < 1e-9);
        assert!((s.mean_us - 20.0).abs() < 1e-9);
        let s = Stats::from_samples(vec![Duration::from_micros(10), Duration::from_micros(20)]);
        assert!((s.median_us - 15.0).abs() < 1e-9);
        assert_eq!(Stats::from_samples(vec![]).iterations, 0);
    }

    #[test]
    fn parses_bench_file() {
        let d = std::env::temp_dir().join(format!("testdrive-bench-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("r.json"), r#"{"uid":"1","operation":"CREATE"}"#).unwrap();
        std::fs::write(
            d.join("bench.yaml"),
            "- name: a\n  request: r.json\n  override: {operation: UPDATE}\n- name: b\n  settings: {x: 1}\n  request: {uid: '2'}\n  cluster: []\n",
        )
        .unwrap();
        let b = load_bench_file(&d.join("bench.yaml")).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[0].scenario.request.as_ref().unwrap()["operation"],
            "UPDATE"
        );
        assert_eq!(b[1].scenario.settings["x"], 1);
        std::fs::write(
            d.join("bench.yaml"),
            "- name: a\n  request: r.json\n  iterations: 3\n",
        )
        .unwrap();
        assert!(load_bench_file(&d.join("bench.yaml")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("a.b[2][\"x.y\"].c").unwrap(),
            vec![
                Segment::Key("a".into()),
                Segment::Key("b".into()),
                Segment::Index(2),
                Segment::Key("x.y".into()),
                Segment::Key("c".into()),
            ]
        );
        assert!(parse_path("").is_err());
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a[x]").is_err());
        assert!(parse_path("a[\"x").is_err());
    }

    #[test]
    fn scale_fills_lists_and_maps_counting_existing_entries() {
        let mut settings = serde_json::json!({"allowed": ["gold"], "r": [{"w": {}}]});
        let list = Filler {
            path: "allowed".into(),
            item: Some(Value::from("c-{i}")),
            key: None,
            value: None,
        };
        fill_to(&mut settings, &list, 3).unwrap();
        assert_eq!(
            settings["allowed"],
            serde_json::json!(["gold", "c-1", "c-2"])
        );
        let map = Filler {
            path: "r[0].w[\"a.b\"]".into(),
            item: None,
            key: Some("k{i}".into()),
            value: Some(serde_json::json!({"v": "{i}"})),
        };
        fill_to(&mut settings, &map, 2).unwrap();
        assert_eq!(
            settings["r"][0]["w"]["a.b"],
            serde_json::json!({"k0": {"v": "0"}, "k1": {"v": "1"}})
        );
        assert!(
            fill_to(&mut settings, &list, 2).is_err(),
            "already 3 entries"
        );
        let wrong = Filler {
            path: "allowed".into(),
            item: None,
            key: Some("k".into()),
            value: Some(Value::Null),
        };
        assert!(
            fill_to(&mut settings, &wrong, 5).is_err(),
            "a list is not a map"
        );
    }

    #[test]
    fn grow_reaches_the_size_of_the_object_only() {
        let mut request = serde_json::json!({"object": {"spec": {}}, "oldObject": {"spec": {}}});
        let grow = Grow {
            bytes: 10_000,
            at: vec![
                Filler {
                    path: "object.spec.containers".into(),
                    item: Some(serde_json::json!({"name": "c-{i}"})),
                    key: None,
                    value: None,
                },
                Filler {
                    path: "oldObject.spec.nodeSelector".into(),
                    item: None,
                    key: Some("k-{i}".into()),
                    value: Some(Value::from("v")),
                },
            ],
        };
        let (bytes, items) = grow_request(&mut request, &grow).unwrap();
        assert_eq!(bytes, object_size(&request));
        assert!((10_000..10_100).contains(&bytes), "{bytes}");
        let containers = request["object"]["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers.len(), items);
        assert_eq!(containers[7]["name"], "c-7");
        let selector = request["oldObject"]["spec"]["nodeSelector"]
            .as_object()
            .unwrap();
        assert_eq!(selector.len(), items);
    }

    #[test]
    fn budgets() {
        let stats = |us: f64| Stats {
            iterations: 1,
            median_us: us,
            mean_us: us,
        };
        let scenario = |name: &str, kind: BenchKind| BenchScenario {
            name: name.into(),
            scenario: Scenario {
                settings: Value::Null,
                request: None,
                cluster: crate::cases::ClusterState::None,
                session_file: None,
            },
            kind,
            anchors: Vec::new(),
        };
        let result = |us: f64, floor: f64| BenchResult {
            name: String::new(),
            allowed: true,
            fresh: stats(us),
            reused: stats(us),
            floor: Some(stats(floor)),
        };
        let grown = scenario("big", BenchKind::Grown { bytes: 1, items: 1 });
        let plain = scenario("plain", BenchKind::Plain);
        let scaled = |n| {
            scenario(
                "names",
                BenchKind::Scaled {
                    group: "names".into(),
                    entries: n,
                },
            )
        };
        let (s10, s1k, s10k) = (scaled(10), scaled(1000), scaled(10_000));
        // The policy grows by 300 µs where the floor grows by 100 µs: 3× (under 5×), although
        // the bare ratio t(10,000) / t(10) is 4×.
        let (r_big, r_plain, r10, r1k, r10k) = (
            result(60_000.0, 1_000.0),
            result(1.0, 1.0),
            result(100.0, 50.0),
            result(150.0, 60.0),
            result(400.0, 150.0),
        );
        let checks = budget_checks(
            "p",
            &[
                (&grown, &r_big),
                (&plain, &r_plain),
                (&s10, &r10),
                (&s1k, &r1k),
                (&s10k, &r10k),
            ],
        );
        assert_eq!(checks.len(), 2);
        assert!(!checks[0].ok(), "60 ms is over 50 ms");
        assert!((checks[0].measured - 60.0).abs() < 1e-9);
        assert!(checks[1].ok(), "3× is under 5×");
        assert!((checks[1].measured - 3.0).abs() < 1e-9);
        assert_eq!(checks[1].growth, Some((4.0, 3.0)));
        assert_eq!(checks[1].fresh_us, vec![100.0, 150.0, 400.0]);
        assert_eq!(checks[1].floor_us, vec![50.0, 60.0, 150.0]);
        assert_eq!(checks[1].scenario, "names ×10 / ×1000 / ×10000");
        // A policy growing by 600 µs where the floor grows by 100 µs is over.
        let over = budget_checks(
            "p",
            &[(&s10, &result(100.0, 50.0)), (&s10k, &result(700.0, 150.0))],
        );
        assert!(!over[0].ok(), "6× is over 5×");
        assert!((over[0].measured - 6.0).abs() < 1e-9);
        // A floor that does not grow leaves no room for the policy to grow.
        let flat = budget_checks(
            "p",
            &[(&s10, &result(100.0, 50.0)), (&s10k, &result(101.0, 50.0))],
        );
        assert!(!flat[0].ok());
    }

    #[test]
    fn generated_entries_expand() {
        let d = std::env::temp_dir().join(format!("testdrive-bench-gen-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("r.json"),
            r#"{"uid":"1","operation":"CREATE","object":{"spec":{}}}"#,
        )
        .unwrap();
        std::fs::write(
            d.join("bench.yaml"),
            "- name: big\n  request: r.json\n  grow: {bytes: 2000, at: [{path: object.spec.c, item: x}]}\n\
             - name: names\n  settings: {allowed: [a]}\n  request: r.json\n  scale: {path: allowed, item: 'n-{i}', entries: [2, 5]}\n",
        )
        .unwrap();
        let b = load_bench_file(&d.join("bench.yaml")).unwrap();
        assert_eq!(b.len(), 3);
        assert!(matches!(b[0].kind, BenchKind::Grown { .. }));
        assert_eq!(b[1].name, "names ×2");
        assert_eq!(
            b[2].scenario.settings["allowed"].as_array().unwrap().len(),
            5
        );
        std::fs::write(
            d.join("bench.yaml"),
            "- name: both\n  request: r.json\n  grow: {at: [{path: object.x, item: 1}]}\n  scale: {path: a, item: 1}\n",
        )
        .unwrap();
        assert!(load_bench_file(&d.join("bench.yaml")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
