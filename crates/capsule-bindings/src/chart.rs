//! The Helm chart `charts/tenancy-policies/` (`capsule-bindings chart`, `make chart`): the
//! install directory's objects ([`install`]) templated on its options, so that
//! `helm install -n kubewarden tenancy-policies charts/tenancy-policies -f values.yaml` writes
//! exactly the objects `capsule-bindings install` writes for the same options.
//!
//! The templates are never written by hand: install renders its objects for placeholder
//! options (distinctive strings such as `zz-policy-server-zz`), each placeholder becomes its
//! Helm expression (`{{ .Values.policyServer.name | quote }}`), and what a placeholder cannot
//! stand for (the mode, the failure policy, the timeout, the replicas, the opt-in rules) is
//! found by rendering install again with that one option changed and templating exactly what
//! changed. [`value_sets`] pairs values files with the install options that must give the same
//! objects, for the harness that renders the chart with `helm template`.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::binding::ModuleSource;
use crate::catalogue::opt_in_sets;
use crate::error::{Error, Result};
use crate::install::{InstallFile, InstallOptions, install};
use crate::placement::{FailurePolicy, MAX_TIMEOUT_SECONDS, Mode, Placement};

/// The chart's name.
pub const CHART_NAME: &str = "tenancy-policies";
/// The Kubernetes releases the chart installs on (`Chart.yaml` `kubeVersion`).
pub const KUBE_VERSION: &str = ">= 1.30.0-0";
/// The install file the chart leaves out: Helm lists its templates itself.
const KUSTOMIZATION: &str = "kustomization.yaml";
/// The first line of every template: what wrote it (a Go template comment, rendering nothing).
const TEMPLATE_HEADER: &str = "{{- /* Written by `capsule-bindings chart` (`make chart`) from \
                               `capsule-bindings install`'s objects; a test regenerates it \
                               and compares. */}}\n";
/// The first line of the other files of the chart.
const FILE_HEADER: &str = "# Written by `capsule-bindings chart` (`make chart`); a test \
                           regenerates it and compares.\n";

/// One file of the chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFile {
    /// Its path in the chart directory (`templates/baseline.yaml`).
    pub path: String,
    /// Its text.
    pub text: String,
}

/// A values file and the install options that must give the same objects.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueSet {
    /// What the set is (`defaults`, `every-value-changed`).
    pub name: &'static str,
    /// What a `-f` values file holds (a JSON object).
    pub values: Value,
    /// The install options whose objects (but kustomization.yaml) `helm template <chart>
    /// --namespace kubewarden -f <values>` renders.
    pub options: InstallOptions,
}

/// The chart's values with the options that give the same objects: the defaults, and a set
/// changing every value (the release namespace, `kubewarden`, is not a value).
pub fn value_sets() -> Vec<ValueSet> {
    let changed = InstallOptions {
        placement: Placement {
            policy_server: "tenancy-gate".into(),
            mode: Mode::Monitor,
            failure_policy: FailurePolicy::Ignore,
            timeout_seconds: 5,
            opt_in: vec!["openshift".into(), "legacy-ingress".into()],
        },
        source: ModuleSource {
            // install drops the trailing '/', and so must the chart
            registry: "registry.example.com/mirror/".into(),
            version: "v0.1.0-rc.1".into(),
        },
        image: "registry.example.com:5000/kubewarden/policy-server:v1.37.2".into(),
        replicas: 3,
        // unsorted, with a duplicate and the release namespace: both sort and merge them
        skip_namespaces: vec![
            "kube-system".into(),
            "argocd".into(),
            "kubewarden".into(),
            "monitoring".into(),
            "argocd".into(),
        ],
        tenant_label: "example.com/tenant".into(),
        ..InstallOptions::default()
    };
    let values = json!({
        "policyServer": {
            "name": "tenancy-gate",
            "image": {
                "repository": "registry.example.com:5000/kubewarden/policy-server",
                "tag": "v1.37.2",
            },
            "replicaCount": 3,
        },
        "module": {"registry": "registry.example.com/mirror/", "tag": "v0.1.0-rc.1"},
        "mode": "monitor",
        "failurePolicy": "Ignore",
        "timeoutSeconds": 5,
        "skipNamespaces": ["kube-system", "argocd", "kubewarden", "monitoring", "argocd"],
        "optIn": ["openshift", "legacy-ingress"],
        "tenantLabel": "example.com/tenant",
    });
    vec![
        ValueSet {
            name: "defaults",
            values: json!({}),
            options: InstallOptions::default(),
        },
        ValueSet {
            name: "every-value-changed",
            values,
            options: changed,
        },
    ]
}

/// The files of the chart: Chart.yaml, values.yaml, values.schema.json, templates/NOTES.txt
/// and one template per install file but kustomization.yaml.
pub fn chart() -> Result<Vec<ChartFile>> {
    let entries = entries()?;
    let templates = templates()?;
    let mut files = vec![
        ChartFile {
            path: "Chart.yaml".into(),
            text: chart_yaml()?,
        },
        ChartFile {
            path: "values.yaml".into(),
            text: values_yaml(&entries)?,
        },
        ChartFile {
            path: "values.schema.json".into(),
            text: schema_text(&entries)?,
        },
        ChartFile {
            path: "templates/NOTES.txt".into(),
            text: notes(&templates.baseline_names),
        },
    ];
    files.extend(templates.files);
    Ok(files)
}

/// Writes the chart into `dir` (created if missing; files of the same names replaced) and
/// returns its files.
pub fn write(dir: &Path) -> Result<Vec<ChartFile>> {
    let files = chart()?;
    for file in &files {
        let path = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        std::fs::write(&path, &file.text).map_err(|e| Error::io(&path, e))?;
    }
    Ok(files)
}

/// A string option install writes into its objects, the placeholder it is rendered with and
/// the Helm expression that replaces it.
struct Placeholder {
    text: &'static str,
    expr: &'static str,
}

/// The string placeholders, none a part of another.
const PLACEHOLDERS: [Placeholder; 7] = [
    Placeholder {
        text: "zz-policy-server-zz",
        expr: ".Values.policyServer.name",
    },
    Placeholder {
        text: "zz-namespace-zz",
        expr: ".Release.Namespace",
    },
    Placeholder {
        text: "zz-image-repository-zz",
        expr: ".Values.policyServer.image.repository",
    },
    Placeholder {
        text: "zz-image-tag-zz",
        expr: ".Values.policyServer.image.tag",
    },
    Placeholder {
        text: "zz-registry-zz",
        // install trims every trailing '/' of the registry
        expr: "(regexReplaceAll \"/+$\" .Values.module.registry \"\")",
    },
    Placeholder {
        text: "zz-module-tag-zz",
        expr: ".Values.module.tag",
    },
    Placeholder {
        text: "zz-tenant-label-zz",
        expr: ".Values.tenantLabel",
    },
];

/// The one namespace to skip the placeholder options give.
const SKIP_PLACEHOLDER: &str = "zz-skip-namespace-zz";
/// What the skipped namespaces become: the values' and the release namespace, sorted, each
/// once (as install's `namespaceSelector`).
const SKIPPED_EXPR: &str =
    "append (.Values.skipNamespaces | default list) .Release.Namespace | uniq | sortAlpha";

/// The install options every template is rendered from.
fn placeholder_options() -> InstallOptions {
    // the placeholder of the option `expr` stands for
    let text = |expr: &str| {
        PLACEHOLDERS
            .iter()
            .find(|p| p.expr.contains(expr))
            .map_or_else(String::new, |p| p.text.to_owned())
    };
    InstallOptions {
        placement: Placement {
            policy_server: text(".Values.policyServer.name"),
            ..Placement::default()
        },
        source: ModuleSource {
            registry: text(".Values.module.registry"),
            version: text(".Values.module.tag"),
        },
        namespace: text(".Release.Namespace"),
        image: format!(
            "{}:{}",
            text(".Values.policyServer.image.repository"),
            text(".Values.policyServer.image.tag")
        ),
        replicas: 2,
        skip_namespaces: vec![SKIP_PLACEHOLDER.into()],
        tenant_label: text(".Values.tenantLabel"),
    }
}

/// An option templated by what changes when it changes: the placeholder options with it
/// changed, what it writes in both, and its Helm expression.
struct Knob {
    variant: InstallOptions,
    base: Value,
    changed: Value,
    expr: &'static str,
}

fn knobs(base: &InstallOptions) -> Vec<Knob> {
    let varied = |change: &dyn Fn(&mut InstallOptions)| {
        let mut options = base.clone();
        change(&mut options);
        options
    };
    let mode = varied(&|o| o.placement.mode = Mode::Monitor);
    let failure = varied(&|o| o.placement.failure_policy = FailurePolicy::Ignore);
    let timeout = varied(&|o| o.placement.timeout_seconds = base.placement.timeout_seconds + 1);
    let replicas = varied(&|o| o.replicas = base.replicas + 1);
    vec![
        Knob {
            base: json!(base.placement.mode.to_string()),
            changed: json!(mode.placement.mode.to_string()),
            variant: mode,
            expr: "{{ .Values.mode | quote }}",
        },
        Knob {
            base: json!(base.placement.failure_policy.to_string()),
            changed: json!(failure.placement.failure_policy.to_string()),
            variant: failure,
            expr: "{{ .Values.failurePolicy | quote }}",
        },
        Knob {
            base: json!(base.placement.timeout_seconds),
            changed: json!(timeout.placement.timeout_seconds),
            variant: timeout,
            expr: "{{ .Values.timeoutSeconds | int }}",
        },
        Knob {
            base: json!(base.replicas),
            changed: json!(replicas.replicas),
            variant: replicas,
            expr: "{{ .Values.policyServer.replicaCount | int }}",
        },
    ]
}

/// What a token in the marked objects stands for.
enum Fill {
    /// An expression replacing the token where it stands.
    Inline(String),
    /// A list expression, as a block at the key's indentation.
    List(&'static str),
    /// Rules appended to a list per opt-in set named in `optIn`, in the order named.
    OptIn(Vec<(String, Vec<Value>)>),
}

/// The tokens standing in the marked objects for Helm expressions.
#[derive(Default)]
struct Tokens {
    fills: Vec<Fill>,
}

const TOKEN_PREFIX: &str = "__chart_token_";

impl Tokens {
    /// A new token for `fill`.
    fn add(&mut self, fill: Fill) -> Value {
        self.fills.push(fill);
        Value::String(format!("{TOKEN_PREFIX}{}__", self.fills.len() - 1))
    }

    /// The fill of `token`, if it is one.
    fn fill_mut(&mut self, token: &Value) -> Option<&mut Fill> {
        let index: usize = token
            .as_str()?
            .strip_prefix(TOKEN_PREFIX)?
            .strip_suffix("__")?
            .parse()
            .ok()?;
        self.fills.get_mut(index)
    }
}

/// What differs between install's objects for the placeholder options and for a variant.
enum Change<'a> {
    /// A scalar: the placeholder options' and the variant's.
    Leaf(&'a Value, &'a Value),
    /// Elements the variant appends to a list.
    Appended(&'a [Value]),
}

/// Walks `base` and `variant` together and calls `on` with the node of `marked` (`base`
/// with tokens) at every change; anything else that differs is an error.
fn mark(
    base: &Value,
    variant: &Value,
    marked: &mut Value,
    at: &str,
    on: &mut dyn FnMut(Change<'_>, &mut Value, &str) -> Result<()>,
) -> Result<()> {
    let mismatch = || Error::Invalid(format!("chart: {at}: install's objects differ in shape"));
    match (base, variant) {
        (Value::Object(b), Value::Object(v)) => {
            let Value::Object(m) = marked else {
                return Err(mismatch());
            };
            if b.len() != v.len() {
                return Err(mismatch());
            }
            for (key, bv) in b {
                let (Some(vv), Some(mv)) = (v.get(key), m.get_mut(key)) else {
                    return Err(mismatch());
                };
                mark(bv, vv, mv, &format!("{at}/{key}"), on)?;
            }
            Ok(())
        }
        (Value::Array(b), Value::Array(v)) => {
            let Value::Array(m) = marked else {
                return Err(mismatch());
            };
            if v.len() < b.len() || m.len() < b.len() {
                return Err(mismatch());
            }
            for (i, ((bv, vv), mv)) in b.iter().zip(v).zip(m.iter_mut()).enumerate() {
                mark(bv, vv, mv, &format!("{at}/{i}"), on)?;
            }
            match v.get(b.len()..) {
                Some(extra) if !extra.is_empty() => on(Change::Appended(extra), marked, at),
                _ => Ok(()),
            }
        }
        _ if base == variant => Ok(()),
        (b, v) if is_scalar(b) && is_scalar(v) => on(Change::Leaf(b, v), marked, at),
        _ => Err(mismatch()),
    }
}

fn is_scalar(value: &Value) -> bool {
    !value.is_array() && !value.is_object()
}

/// install's files for `options`, as one JSON list of lists of objects, kustomization.yaml
/// left out.
fn rendered(options: &InstallOptions) -> Result<(Vec<&'static str>, Value)> {
    let files: Vec<InstallFile> = install(options)?
        .into_iter()
        .filter(|f| f.name != KUSTOMIZATION)
        .collect();
    let names = files.iter().map(|f| f.name).collect();
    let objects = files
        .into_iter()
        .map(|f| Value::Array(f.manifests))
        .collect();
    Ok((names, Value::Array(objects)))
}

/// The templates and the names of the baseline bindings.
struct Templates {
    files: Vec<ChartFile>,
    baseline_names: Vec<String>,
}

/// install's objects for the placeholder options with every option replaced by its Helm
/// expression, one template per file.
fn templates() -> Result<Templates> {
    let options = placeholder_options();
    let (names, base) = rendered(&options)?;
    let mut marked = base.clone();
    let mut tokens = Tokens::default();
    for knob in knobs(&options) {
        let (_, variant) = rendered(&knob.variant)?;
        mark(
            &base,
            &variant,
            &mut marked,
            "",
            &mut |change, node, at| match change {
                Change::Leaf(b, v) if *b == knob.base && *v == knob.changed => {
                    *node = tokens.add(Fill::Inline(knob.expr.to_owned()));
                    Ok(())
                }
                _ => Err(Error::Invalid(format!(
                    "chart: {at}: changing one option ({}) changed what the chart cannot template",
                    knob.expr
                ))),
            },
        )?;
    }
    for set in opt_in_sets()? {
        let variant_options = InstallOptions {
            placement: Placement {
                opt_in: vec![set.clone()],
                ..options.placement.clone()
            },
            ..options.clone()
        };
        let (_, variant) = rendered(&variant_options)?;
        mark(&base, &variant, &mut marked, "", &mut |change, node, at| {
            let (Change::Appended(extra), Value::Array(list)) = (change, node) else {
                return Err(Error::Invalid(format!(
                    "chart: {at}: the opt-in set {set} changes more than rules appended"
                )));
            };
            let entry = (set.clone(), extra.to_vec());
            match list.last().cloned().and_then(|t| {
                tokens.fill_mut(&t).and_then(|fill| match fill {
                    Fill::OptIn(sets) => Some(sets),
                    _ => None,
                })
            }) {
                Some(sets) => sets.push(entry),
                None => list.push(tokens.add(Fill::OptIn(vec![entry]))),
            }
            Ok(())
        })?;
    }
    let skipped: BTreeSet<&str> = [SKIP_PLACEHOLDER, options.namespace.as_str()].into();
    let skipped = json!(skipped);
    mark_lists(&mut marked, &skipped, &mut tokens);
    mark_strings(&mut marked, &mut tokens)?;
    let baseline_names = baseline_names(&base, &names);
    let Value::Array(files) = marked else {
        return Err(Error::Invalid(
            "chart: install's files are not a list".into(),
        ));
    };
    let files = names
        .into_iter()
        .zip(files)
        .map(|(name, objects)| {
            let Value::Array(objects) = objects else {
                return Err(Error::Invalid(format!("chart: {name}: not a list")));
            };
            let yaml = crate::binding::to_yaml(&objects)?;
            Ok(ChartFile {
                path: format!("templates/{name}"),
                text: format!("{TEMPLATE_HEADER}{}", fill(&yaml, &tokens, name)?),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Templates {
        files,
        baseline_names,
    })
}

/// The names of the objects of baseline.yaml.
fn baseline_names(base: &Value, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .position(|n| *n == "baseline.yaml")
        .and_then(|i| base.get(i))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Replaces every list equal to the placeholder options' skipped namespaces by its token.
fn mark_lists(value: &mut Value, skipped: &Value, tokens: &mut Tokens) {
    if value == skipped {
        *value = tokens.add(Fill::List(SKIPPED_EXPR));
        return;
    }
    match value {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| mark_lists(v, skipped, tokens)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| mark_lists(v, skipped, tokens)),
        _ => {}
    }
}

/// Replaces every string holding placeholders by a token for its expression.
fn mark_strings(value: &mut Value, tokens: &mut Tokens) -> Result<()> {
    match value {
        Value::String(s) => {
            if let Some(expr) = string_expr(s)? {
                *value = tokens.add(Fill::Inline(expr));
            }
            Ok(())
        }
        Value::Array(items) => items.iter_mut().try_for_each(|v| mark_strings(v, tokens)),
        Value::Object(map) => {
            if let Some(key) = map.keys().find(|k| string_expr(k).ok().flatten().is_some()) {
                return Err(Error::Invalid(format!(
                    "chart: the key {key:?} holds an option, which the chart cannot template"
                )));
            }
            map.values_mut().try_for_each(|v| mark_strings(v, tokens))
        }
        _ => Ok(()),
    }
}

/// The Helm expression of a string holding placeholders: the value quoted, or the string
/// `printf`-ed from its parts; `None` without placeholders.
fn string_expr(s: &str) -> Result<Option<String>> {
    let mut format = String::new();
    let mut args = Vec::new();
    let mut rest = s;
    loop {
        let next = PLACEHOLDERS
            .iter()
            .filter_map(|p| rest.find(p.text).map(|at| (at, p)))
            .min_by_key(|(at, _)| *at);
        let Some((at, placeholder)) = next else {
            format.push_str(&rest.replace('%', "%%"));
            break;
        };
        let (literal, tail) = rest.split_at(at);
        format.push_str(&literal.replace('%', "%%"));
        format.push_str("%s");
        args.push(placeholder.expr);
        rest = tail.get(placeholder.text.len()..).unwrap_or_default();
    }
    Ok(match args.as_slice() {
        [] => None,
        [only] if format == "%s" => Some(format!("{{{{ {only} | quote }}}}")),
        _ => Some(format!(
            "{{{{ printf {} {} | quote }}}}",
            go_string(&format)?,
            args.join(" ")
        )),
    })
}

/// `s` as a Go string literal (a JSON string is one).
fn go_string(s: &str) -> Result<String> {
    serde_json::to_string(s).map_err(|e| Error::Invalid(format!("chart: {e}")))
}

/// The YAML text of `name` with every token replaced by its Helm text.
fn fill(yaml: &str, tokens: &Tokens, name: &str) -> Result<String> {
    if yaml.contains("{{") || yaml.contains("}}") {
        return Err(Error::Invalid(format!(
            "chart: {name}: install writes `{{{{` or `}}}}`, which Helm would read as a template"
        )));
    }
    let mut out = String::new();
    for line in yaml.lines() {
        let Some(start) = line.find(TOKEN_PREFIX) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (head, token) = line.split_at(start);
        let index: Option<usize> = token
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|t| t.strip_suffix("__"))
            .and_then(|t| t.parse().ok());
        let bad = || Error::Invalid(format!("chart: {name}: cannot template the line {line:?}"));
        match index.and_then(|i| tokens.fills.get(i)).ok_or_else(bad)? {
            Fill::Inline(expr) => {
                out.push_str(head);
                out.push_str(expr);
                out.push('\n');
            }
            Fill::List(expr) => {
                let key = head.strip_suffix(' ').ok_or_else(bad)?;
                out.push_str(&format!(
                    "{key} {{{{- toYaml ({expr}) | nindent {} }}}}\n",
                    key_column(key)
                ));
            }
            Fill::OptIn(sets) => {
                let indent = head.strip_suffix("- ").ok_or_else(bad)?;
                if !indent.chars().all(|c| c == ' ') {
                    return Err(bad());
                }
                out.push_str(&format!("{indent}{{{{- range .Values.optIn }}}}\n"));
                for (i, (set, rules)) in sets.iter().enumerate() {
                    let branch = if i == 0 { "if" } else { "else if" };
                    out.push_str(&format!(
                        "{indent}{{{{- {branch} eq . {} }}}}\n",
                        go_string(set)?
                    ));
                    let rules = serde_yaml::to_string(rules)
                        .map_err(|e| Error::Invalid(format!("cannot write YAML: {e}")))?;
                    for rule_line in rules.lines() {
                        out.push_str(&format!("{indent}{rule_line}\n"));
                    }
                }
                out.push_str(&format!("{indent}{{{{- end }}}}\n"));
                out.push_str(&format!("{indent}{{{{- end }}}}\n"));
            }
        }
    }
    Ok(out)
}

/// The column a mapping key starts at on a line (`  - key:` is 4).
fn key_column(head: &str) -> usize {
    let mut rest = head;
    let mut column = 0;
    loop {
        if let Some(r) = rest.strip_prefix(' ') {
            rest = r;
            column += 1;
        } else if let Some(r) = rest.strip_prefix("- ") {
            rest = r;
            column += 2;
        } else {
            return column;
        }
    }
}

/// One value of the chart.
struct Entry {
    /// Its path in the values (`policyServer.image.tag`).
    path: &'static [&'static str],
    /// What it is, for values.yaml and the schema.
    doc: String,
    /// Its default, from `InstallOptions::default()`.
    default: Value,
    /// Its JSON schema.
    schema: Value,
}

/// What a value that holds others is, for values.yaml and the schema.
fn group_doc(path: &[&str]) -> &'static str {
    match path {
        ["policyServer"] => {
            "The PolicyServer the bindings run on. Kubewarden's controller creates its \
             Deployment in the namespace it runs in, where the chart must be installed \
             (`helm install -n kubewarden`): the PolicyServer's ServiceAccount is written there."
        }
        ["policyServer", "image"] => {
            "The policy-server image, `<repository>:<tag>` (`capsule-bindings install \
             --image`): Kubewarden 1.36's; on a later controller give its own minor release."
        }
        ["module"] => {
            "Where the policy modules are published: \
             `registry://<registry>/tenancy-policies/<policy>:<tag>` (`--registry`, `--version`)."
        }
        _ => "",
    }
}

/// What an opt-in set adds, for values.yaml.
fn opt_in_doc(set: &str) -> String {
    match set {
        "legacy-ingress" => "`legacy-ingress` (Ingress v1beta1)".into(),
        "openshift" => "`openshift` (Projects, ProjectRequests)".into(),
        other => format!("`{other}`"),
    }
}

const DNS_LABEL: &str = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";

/// One value.
fn entry(path: &'static [&'static str], doc: &str, default: Value, schema: Value) -> Entry {
    Entry {
        path,
        doc: doc.to_owned(),
        default,
        schema,
    }
}

/// The chart's values, in values.yaml's order, with their defaults and schemas.
fn entries() -> Result<Vec<Entry>> {
    let defaults = InstallOptions::default();
    let mut all = server_entries(&defaults)?;
    all.extend(placement_entries(&defaults)?);
    Ok(all)
}

/// The values of the PolicyServer and of the modules' source.
fn server_entries(defaults: &InstallOptions) -> Result<Vec<Entry>> {
    let (repository, tag) = defaults
        .image
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "chart: the default image {} has no tag",
                defaults.image
            ))
        })?;
    let subdomain = format!("^{DNS_LABEL}(\\.{DNS_LABEL})*$");
    let text = json!({"type": "string", "minLength": 1});
    Ok(vec![
        entry(
            &["policyServer", "name"],
            "Its name, a DNS subdomain (`--policy-server`), and its ServiceAccount's; \
             `<name>-lookups` is the ClusterRole (and its binding) granting the reads the \
             policies' contextAwareResources name. A tenant's bindings name it too \
             (`capsule-bindings convert --policy-server`).",
            json!(defaults.placement.policy_server),
            // `<name>-lookups` is a name too
            json!({"type": "string", "pattern": subdomain, "maxLength": 245}),
        ),
        entry(
            &["policyServer", "image", "repository"],
            "Registry and repository.",
            json!(repository),
            text.clone(),
        ),
        entry(
            &["policyServer", "image", "tag"],
            "Tag.",
            json!(tag),
            text.clone(),
        ),
        entry(
            &["policyServer", "replicaCount"],
            "PolicyServer replicas (`--replicas`).",
            json!(defaults.replicas),
            json!({"type": "integer", "minimum": 0, "maximum": u32::MAX}),
        ),
        entry(
            &["module", "registry"],
            "Registry and path prefix (trailing `/` dropped).",
            json!(defaults.source.registry),
            text.clone(),
        ),
        entry(
            &["module", "tag"],
            "Tag: the bundle's release.",
            json!(defaults.source.version),
            text,
        ),
    ])
}

/// The values of the bindings' placement: mode, failure policy, timeout, skipped
/// namespaces, opt-in sets, tenant label.
fn placement_entries(defaults: &InstallOptions) -> Result<Vec<Entry>> {
    let prefix = format!("{DNS_LABEL}(\\.{DNS_LABEL})*/");
    let label_key = format!("^({prefix})?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$");
    let sets = opt_in_sets()?;
    Ok(vec![
        entry(
            &["mode"],
            "`protect` refuses what a policy refuses; `monitor` admits everything and logs \
             what `protect` would refuse, for a trial run (`--mode`).",
            json!(defaults.placement.mode.to_string()),
            json!({"type": "string", "enum": [Mode::Protect.to_string(), Mode::Monitor.to_string()]}),
        ),
        entry(
            &["failurePolicy"],
            "What the API server does when policy-server does not answer in time: `Fail` \
             refuses the request, `Ignore` admits it (`--failure-policy`).",
            json!(defaults.placement.failure_policy.to_string()),
            json!({"type": "string", "enum": [FailurePolicy::Fail.to_string(), FailurePolicy::Ignore.to_string()]}),
        ),
        entry(
            &["timeoutSeconds"],
            &format!(
                "Webhook timeout of the bindings, 1 to {MAX_TIMEOUT_SECONDS} seconds \
                 (`--timeout-seconds`)."
            ),
            json!(defaults.placement.timeout_seconds),
            json!({"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECONDS}),
        ),
        entry(
            &["skipNamespaces"],
            "Namespaces the baseline bindings skip (`--skip-namespace`), Kubewarden's system \
             namespaces by default; the release namespace is always skipped.",
            json!(defaults.skip_namespaces),
            json!({"type": "array", "items": {"type": "string", "pattern": format!("^{DNS_LABEL}$")}}),
        ),
        entry(
            &["optIn"],
            &format!(
                "Opt-in rule sets for APIs not every cluster serves (`--opt-in`): {}.",
                sets.iter()
                    .map(|s| opt_in_doc(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            json!(defaults.placement.opt_in),
            json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "enum": sets}}),
        ),
        entry(
            &["tenantLabel"],
            "The Namespace label naming the tenant, which the namespace-metadata baseline \
             protects (`--tenant-label`).",
            json!(defaults.tenant_label),
            json!({"type": "string", "pattern": label_key, "maxLength": 317}),
        ),
    ])
}

/// `text` as `#` comment lines at `indent`, wrapped.
fn comment(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + 2 + line.len() + 1 + word.len() > 96 {
            out.push_str(&format!("{indent}# {line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}# {line}\n"));
    }
    out
}

/// values.yaml: every value with its default and what it is.
fn values_yaml(entries: &[Entry]) -> Result<String> {
    let mut out = String::from(FILE_HEADER);
    out.push_str(&comment(
        "The options of `capsule-bindings install`, which writes the same objects into \
         deploy/ (README \"Installing\"); values.schema.json refuses what install refuses.",
        "",
    ));
    let mut open: &[&str] = &[];
    for entry in entries {
        let (Some((key, parents)), Some(first)) = (entry.path.split_last(), entry.path.first())
        else {
            continue;
        };
        let common = open.iter().zip(parents).take_while(|(a, b)| a == b).count();
        if open.first() != Some(first) {
            out.push('\n');
        }
        for depth in common..parents.len() {
            let indent = "  ".repeat(depth);
            let group = parents.get(..=depth).unwrap_or_default();
            out.push_str(&comment(group_doc(group), &indent));
            let name = group.last().copied().unwrap_or_default();
            out.push_str(&format!("{indent}{name}:\n"));
        }
        let indent = "  ".repeat(parents.len());
        out.push_str(&comment(&entry.doc, &indent));
        let mut one = Map::new();
        one.insert((*key).to_owned(), entry.default.clone());
        let yaml = serde_yaml::to_string(&one)
            .map_err(|e| Error::Invalid(format!("cannot write YAML: {e}")))?;
        for line in yaml.lines() {
            out.push_str(&format!("{indent}{line}\n"));
        }
        open = parents;
    }
    Ok(out)
}

/// values.schema.json (draft-07): every value required, typed and bounded, nothing else.
fn schema(entries: &[Entry]) -> Value {
    fn object(description: &str) -> Map<String, Value> {
        let mut schema = Map::new();
        if !description.is_empty() {
            schema.insert("description".into(), json!(description));
        }
        schema.insert("type".into(), json!("object"));
        schema.insert("additionalProperties".into(), json!(false));
        schema.insert("required".into(), json!([]));
        schema.insert("properties".into(), json!({}));
        schema
    }
    fn insert(node: &mut Map<String, Value>, done: &[&str], path: &[&str], entry: &Entry) {
        let Some((key, rest)) = path.split_first() else {
            return;
        };
        if let Some(Value::Array(required)) = node.get_mut("required")
            && !required.iter().any(|r| r == key)
        {
            required.push(json!(key));
        }
        let Some(Value::Object(properties)) = node.get_mut("properties") else {
            return;
        };
        let mut at = done.to_vec();
        at.push(key);
        if rest.is_empty() {
            let mut schema = Map::new();
            schema.insert("description".into(), json!(entry.doc));
            if let Value::Object(s) = &entry.schema {
                schema.extend(s.clone());
            }
            schema.insert("default".into(), entry.default.clone());
            properties.insert((*key).to_owned(), Value::Object(schema));
        } else {
            let child = properties
                .entry((*key).to_owned())
                .or_insert_with(|| Value::Object(object(group_doc(&at))));
            if let Value::Object(child) = child {
                insert(child, &at, rest, entry);
            }
        }
    }
    let mut root = Map::new();
    root.insert(
        "$schema".into(),
        json!("http://json-schema.org/draft-07/schema#"),
    );
    root.insert("title".into(), json!(format!("{CHART_NAME} values")));
    root.extend(object(
        "The options of `capsule-bindings install` (values.yaml says what each is).",
    ));
    for entry in entries {
        insert(&mut root, &[], entry.path, entry);
    }
    if let Some(Value::Object(properties)) = root.get_mut("properties") {
        properties.insert(
            "global".into(),
            json!({"description": "Helm's values shared with a parent chart; unused.", "type": "object"}),
        );
    }
    Value::Object(root)
}

fn schema_text(entries: &[Entry]) -> Result<String> {
    let text = serde_json::to_string_pretty(&schema(entries))
        .map_err(|e| Error::Invalid(format!("chart: {e}")))?;
    Ok(format!("{text}\n"))
}

/// Chart.yaml.
fn chart_yaml() -> Result<String> {
    let defaults = InstallOptions::default();
    let mut chart = json!({
        "apiVersion": "v2",
        "name": CHART_NAME,
        "description": "Kubewarden admission policies for multi-tenant clusters: the bundle's \
                        PolicyServer, the RBAC of its lookups and the cluster-wide baseline \
                        bindings (what `capsule-bindings install` writes into deploy/)",
        "type": "application",
        "version": env!("CARGO_PKG_VERSION"),
        "appVersion": defaults.source.version,
        "kubeVersion": KUBE_VERSION,
        "keywords": ["kubewarden", "multi-tenancy", "capsule", "admission", "policies"],
    });
    // empty unless the crate takes the workspace's `repository`
    let repository = env!("CARGO_PKG_REPOSITORY");
    if let (false, Value::Object(chart)) = (repository.is_empty(), &mut chart) {
        chart.insert("home".into(), json!(repository));
        chart.insert("sources".into(), json!([repository]));
    }
    let yaml = serde_yaml::to_string(&chart)
        .map_err(|e| Error::Invalid(format!("cannot write YAML: {e}")))?;
    Ok(format!("{FILE_HEADER}{yaml}"))
}

/// templates/NOTES.txt: what was installed, and how to convert a tenant for it.
fn notes(baseline: &[String]) -> String {
    format!(
        "{TEMPLATE_HEADER}\
tenancy-policies {{{{ .Chart.Version }}}} installed the PolicyServer {{{{ .Values.policyServer.name }}}}
(in {{{{ .Release.Namespace }}}}, where Kubewarden's controller must run) and the baseline
bindings {baseline}, in mode {{{{ .Values.mode }}}}.

Bind each Capsule Tenant with the same placement:

  capsule-bindings convert tenant.yaml --registry {{{{ .Values.module.registry }}}} \\
    --version {{{{ .Values.module.tag }}}} --policy-server {{{{ .Values.policyServer.name }}}} \\
    --mode {{{{ .Values.mode }}}} --failure-policy {{{{ .Values.failurePolicy }}}} \\
    --timeout-seconds {{{{ .Values.timeoutSeconds }}}} --tenant-label {{{{ .Values.tenantLabel }}}}
{{{{- range .Values.optIn }}}} --opt-in {{{{ . }}}}{{{{ end }}}} | kubectl apply -f -
",
        baseline = baseline.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<ChartFile> {
        chart().unwrap()
    }

    fn leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    path.push(k.clone());
                    leaves(v, path, out);
                    path.pop();
                }
            }
            _ => out.push((path.clone(), value.clone())),
        }
    }

    fn values_leaves() -> Vec<(Vec<String>, Value)> {
        let files = files();
        let values = files.iter().find(|f| f.path == "values.yaml").unwrap();
        let values: Value = serde_yaml::from_str(&values.text).unwrap();
        let mut out = Vec::new();
        leaves(&values, &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn no_placeholder_or_token_is_left() {
        for file in files() {
            for p in PLACEHOLDERS
                .iter()
                .map(|p| p.text)
                .chain([SKIP_PLACEHOLDER])
            {
                assert!(!file.text.contains(p), "{}: {p}", file.path);
            }
            assert!(!file.text.contains(TOKEN_PREFIX), "{}", file.path);
            assert!(!file.text.contains("zz-"), "{}", file.path);
        }
    }

    #[test]
    fn every_placeholder_stands_for_one_option() {
        let options = format!("{:?}", placeholder_options());
        for p in &PLACEHOLDERS {
            assert_eq!(options.matches(p.text).count(), 1, "{}", p.text);
        }
    }

    #[test]
    fn every_option_is_templated() {
        let files = files();
        let all: String = files.iter().map(|f| f.text.as_str()).collect();
        for expr in [
            "{{ .Values.policyServer.name | quote }}",
            "{{ printf \"%s-lookups\" .Values.policyServer.name | quote }}",
            "{{ .Release.Namespace | quote }}",
            "{{ printf \"%s:%s\" .Values.policyServer.image.repository .Values.policyServer.image.tag | quote }}",
            "{{ .Values.mode | quote }}",
            "{{ .Values.failurePolicy | quote }}",
            "{{ .Values.timeoutSeconds | int }}",
            "{{ .Values.policyServer.replicaCount | int }}",
            "{{ .Values.tenantLabel | quote }}",
            SKIPPED_EXPR,
            "{{- range .Values.optIn }}",
            "{{- if eq . \"openshift\" }}",
        ] {
            assert!(all.contains(expr), "{expr}");
        }
        let baseline = files
            .iter()
            .find(|f| f.path == "templates/baseline.yaml")
            .unwrap();
        assert_eq!(
            baseline.text.matches("{{ .Values.mode | quote }}").count(),
            3
        );
        assert!(
            !files.iter().any(|f| f.path.contains("kustomization")),
            "Helm lists its templates itself"
        );
    }

    #[test]
    fn every_value_is_used_by_a_template_and_every_used_value_exists() {
        let files = files();
        let templates: String = files
            .iter()
            .filter(|f| f.path.starts_with("templates/") && f.path.ends_with(".yaml"))
            .map(|f| f.text.as_str())
            .collect();
        let leaves = values_leaves();
        for (path, _) in &leaves {
            let reference = format!(".Values.{}", path.join("."));
            assert!(templates.contains(&reference), "{reference} is not used");
        }
        for (at, _) in templates.match_indices(".Values.") {
            let used: String = templates
                .get(at + ".Values.".len()..)
                .unwrap()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect();
            assert!(
                leaves.iter().any(|(p, _)| p.join(".") == used),
                ".Values.{used} is not in values.yaml"
            );
        }
    }

    #[test]
    fn values_yaml_holds_install_s_defaults_and_the_schema_every_value() {
        let leaves = values_leaves();
        let entries = entries().unwrap();
        assert_eq!(leaves.len(), entries.len());
        for ((path, value), entry) in leaves.iter().zip(&entries) {
            assert_eq!(path, &entry.path.to_vec(), "values.yaml's order");
            assert_eq!(value, &entry.default, "{path:?}");
        }
        let repo = leaves
            .iter()
            .find(|(p, _)| p.join(".") == "policyServer.image.repository")
            .unwrap();
        let tag = leaves
            .iter()
            .find(|(p, _)| p.join(".") == "policyServer.image.tag")
            .unwrap();
        assert_eq!(
            format!("{}:{}", repo.1.as_str().unwrap(), tag.1.as_str().unwrap()),
            InstallOptions::default().image
        );
        let schema = schema(&entries);
        assert_eq!(
            schema["properties"]["policyServer"]["properties"]["image"]["required"],
            json!(["repository", "tag"])
        );
        assert_eq!(
            schema["properties"]["optIn"]["items"]["enum"],
            json!(["legacy-ingress", "openshift"])
        );
        assert_eq!(schema["properties"]["timeoutSeconds"]["maximum"], 30);
        let pattern = schema["properties"]["tenantLabel"]["pattern"]
            .as_str()
            .unwrap();
        assert!(pattern.starts_with('^') && pattern.ends_with('$'));
    }

    #[test]
    fn the_changed_value_set_changes_every_value_and_every_option() {
        let sets = value_sets();
        let [defaults, changed] = sets.as_slice() else {
            panic!("two value sets");
        };
        assert_eq!(defaults.values, json!({}));
        assert_eq!(defaults.options, InstallOptions::default());
        let InstallOptions {
            placement:
                Placement {
                    policy_server,
                    mode,
                    failure_policy,
                    timeout_seconds,
                    opt_in,
                },
            source: ModuleSource { registry, version },
            namespace,
            image,
            replicas,
            skip_namespaces,
            tenant_label,
        } = &changed.options;
        let d = &defaults.options;
        assert_ne!(policy_server, &d.placement.policy_server);
        assert_ne!(mode, &d.placement.mode);
        assert_ne!(failure_policy, &d.placement.failure_policy);
        assert_ne!(timeout_seconds, &d.placement.timeout_seconds);
        assert_ne!(opt_in, &d.placement.opt_in);
        assert_eq!(
            opt_in.iter().collect::<BTreeSet<_>>(),
            opt_in_sets().unwrap().iter().collect::<BTreeSet<_>>(),
            "every opt-in set"
        );
        assert_ne!(registry, &d.source.registry);
        assert_ne!(version, &d.source.version);
        assert_eq!(
            namespace, &d.namespace,
            "the release namespace is not a value: the harness renders into kubewarden"
        );
        assert_ne!(image, &d.image);
        assert_ne!(replicas, &d.replicas);
        assert_ne!(skip_namespaces, &d.skip_namespaces);
        assert_ne!(tenant_label, &d.tenant_label);
        for (path, default) in values_leaves() {
            let mut at = &changed.values;
            for key in &path {
                at = at.get(key).unwrap_or_else(|| panic!("{path:?} not set"));
            }
            assert_ne!(at, &default, "{path:?} not changed");
        }
        for set in &sets {
            install(&set.options).unwrap();
        }
    }

    #[test]
    fn strings_become_quoted_or_printf_expressions() {
        assert_eq!(string_expr("plain").unwrap(), None);
        assert_eq!(
            string_expr("zz-tenant-label-zz").unwrap().unwrap(),
            "{{ .Values.tenantLabel | quote }}"
        );
        assert_eq!(
            string_expr("100%/zz-module-tag-zz\"").unwrap().unwrap(),
            "{{ printf \"100%%/%s\\\"\" .Values.module.tag | quote }}"
        );
        assert_eq!(key_column("      values:"), 6);
        assert_eq!(key_column("  - - values:"), 6);
    }

    #[test]
    fn comments_wrap() {
        let text = "word ".repeat(60);
        let lines = comment(&text, "  ");
        assert!(
            lines
                .lines()
                .all(|l| l.len() <= 96 && l.starts_with("  # "))
        );
        assert_eq!(lines.matches("word").count(), 60);
    }
}
