//! `testdrive publish-local`: the release rehearsed on this machine against a real OCI
//! registry, with the same script the release workflow runs (`.github/scripts/release.sh`).
//!
//! 1. a local registry (Debian's `docker-registry`) on a free loopback port (`registry`);
//! 2. every annotated module pushed to it by `release.sh push`
//!    (`registry://127.0.0.1:<port>/tenancy-policies/<policy>:v<version>`), which reads the
//!    immutable reference from kwctl's JSON output (`release`);
//! 3. the real policy-server started on every module by that immutable reference, pulling
//!    them all from the registry, and one declarative case per policy sent to it: the answer
//!    must meet the case's expectations and be testdrive's (`server`);
//! 4. `release.sh artifacthub` for every policy and all `release.sh artifacthub-push` at
//!    once into one local bare repository; the branch read back and every package checked
//!    against its policy's metadata (`branch`, [`crate::release::artifacthub`]);
//! 5. every README's `kwctl scaffold manifest` command run against the local registry, the
//!    manifests written to `<work>/scaffold/<policy>.yaml` (`scaffold`).
//!
//! Every problem is collected per policy; the run ends with
//! `publish-local: N pushed, N pulled by policy-server, N/N answered as expected`.

mod branch;
mod registry;
mod release;
mod scaffold;
pub(crate) mod server;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bench::server::PolicyBinding;
use crate::cases::policy_metadata;
use crate::e2e::{kwctl_version, prepare_work_dir};
use crate::kube::apiserver::FakeApi;
use crate::release::artifacthub::metadata_version;
use policy_host::error::{Error, Result};
use policy_host::metadata::Metadata;

use registry::{Registry, sources_yaml};
use release::Release;
use server::Pick;

/// The repository namespace of the local registry: `<host>/tenancy-policies/<policy>`.
pub const LOCAL_NAMESPACE: &str = "tenancy-policies";

/// Options of [`run`].
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The kwctl binary.
    pub kwctl: PathBuf,
    /// The policy-server binary.
    pub policy_server: PathBuf,
    /// The registry binary (`docker-registry`, run as `<binary> serve <config>`).
    pub registry: PathBuf,
    /// The release script.
    pub release_script: PathBuf,
    /// Where the policy wasm files are (testdrive judges each case first).
    pub wasm_dir: PathBuf,
    /// Where the annotated modules are (`<policy>.wasm`, make annotate): what is pushed.
    pub annotated_dir: PathBuf,
    /// Where everything is written (its subdirectories are wiped first).
    pub work_dir: PathBuf,
    /// `RELEASE_PUSH_ATTEMPTS` of the concurrent Artifact Hub pushes (default: the script's
    /// own, as the workflow runs it).
    pub push_attempts: Option<u32>,
}

/// One policy through the rehearsal: what it is and what happened to it.
struct Entry {
    /// Its directory.
    dir: PathBuf,
    /// Its name.
    policy: String,
    /// Its metadata version.
    version: String,
    /// Its metadata (the Artifact Hub package is checked against it).
    metadata: Metadata,
    /// Its modules and policy-server binding.
    binding: PolicyBinding,
    /// The case policy-server answers.
    pick: Option<Pick>,
    /// The immutable reference `release.sh push` printed.
    pushed: Option<String>,
    /// policy-server downloaded exactly the pushed module.
    pulled: bool,
    /// policy-server answered its case as expected.
    answered: bool,
    /// Attempts of its Artifact Hub push.
    attempts: Option<u32>,
    /// Its package and README are right on the Artifact Hub branch.
    packaged: bool,
    /// Its README command wrote a manifest.
    scaffolded: bool,
    /// Everything that went wrong.
    problems: Vec<String>,
}

impl Entry {
    /// The policy of `dir`, nothing done yet; an error when a module or the metadata version
    /// is missing.
    fn load(dir: &Path, options: &PublishOptions) -> Result<Self> {
        let binding = PolicyBinding::load(dir, &options.wasm_dir, &options.annotated_dir)?;
        let metadata = policy_metadata(dir)?
            .ok_or_else(|| Error::Invalid(format!("{}: no metadata.yml", dir.display())))?;
        let version = metadata_version(&metadata)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: no io.kubewarden.policy.version in metadata.yml",
                    dir.display()
                ))
            })?
            .to_owned();
        Ok(Entry {
            dir: dir.to_path_buf(),
            policy: binding.policy.clone(),
            version,
            metadata,
            binding,
            pick: None,
            pushed: None,
            pulled: false,
            answered: false,
            attempts: None,
            packaged: false,
            scaffolded: false,
            problems: Vec::new(),
        })
    }
}

/// The files of a run under the work directory.
struct Layout {
    /// The registry's config, storage and log.
    registry: PathBuf,
    /// policy-server's policies.yml, log, kubeconfig, request bodies and downloads.
    server: PathBuf,
    /// `release.sh artifacthub` output, one directory per policy.
    packages: PathBuf,
    /// The bare repository standing for the GitHub remote.
    remote: PathBuf,
    /// release.sh logs.
    logs: PathBuf,
    /// The README commands' manifests.
    scaffold: PathBuf,
    /// kwctl's `XDG_CACHE_HOME`.
    cache: PathBuf,
    /// The sources file (the local registry is insecure).
    sources: PathBuf,
    /// The empty Sigstore trust configuration.
    trust: PathBuf,
    /// `<policy>=<immutable reference>` lines.
    refs: PathBuf,
}

impl Layout {
    /// The layout under `work_dir` (made absolute), every part of it wiped.
    fn prepare(work_dir: &Path) -> Result<Self> {
        let (root, trust) = prepare_work_dir(work_dir)?;
        let layout = Layout {
            registry: root.join("registry"),
            server: root.join("server"),
            packages: root.join("artifacthub"),
            remote: root.join("artifacthub.git"),
            logs: root.join("logs"),
            scaffold: root.join("scaffold"),
            cache: root.join("kwctl-cache"),
            sources: root.join("sources.yml"),
            trust,
            refs: root.join("refs.txt"),
        };
        for dir in [
            &layout.registry,
            &layout.server,
            &layout.packages,
            &layout.remote,
            &layout.logs,
            &layout.scaffold,
            &layout.cache,
        ] {
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        for file in [&layout.sources, &layout.refs] {
            if file.exists() {
                std::fs::remove_file(file).map_err(|e| Error::io(file, e))?;
            }
        }
        Ok(layout)
    }
}

/// How long each step took.
#[derive(Debug, Default)]
struct Timings {
    push: Duration,
    server: Duration,
    ready: Option<Duration>,
    artifacthub: Duration,
    scaffold: Duration,
}

/// Rehearses the release of every policy of `dirs`; prints each policy's outcome, every
/// problem and the summary. Whether everything went as it must.
pub fn run(dirs: &[PathBuf], options: &PublishOptions) -> Result<bool> {
    let started = Instant::now();
    let options = &absolute_tools(options)?;
    let layout = Layout::prepare(&options.work_dir)?;
    let release = Release {
        script: options.release_script.clone(),
        kwctl: options.kwctl.clone(),
        cache: layout.cache.clone(),
        push_attempts: options.push_attempts.map(|n| n.max(1)),
    };
    let published = release.identity("REGISTRY")?;
    let mut entries = dirs
        .iter()
        .map(|dir| Entry::load(dir, options))
        .collect::<Result<Vec<_>>>()?;
    let cluster = pick_cases(&mut entries);
    let registry = Registry::start(&options.registry, &layout.registry)?;
    println!(
        "publish-local: {} policies, registry {} ({}), {}, {}",
        entries.len(),
        registry.host(),
        options.registry.display(),
        kwctl_version(&options.kwctl)?,
        kwctl_version(&options.policy_server)?
    );
    std::fs::write(&layout.sources, sources_yaml(&registry.insecure_hosts()))
        .map_err(|e| Error::io(&layout.sources, e))?;
    let mut timings = Timings::default();
    let step = Instant::now();
    push_all(&mut entries, &release, &registry.host(), &layout)?;
    timings.push = step.elapsed();
    let step = Instant::now();
    let setup = server::ServerSetup {
        binary: &options.policy_server,
        dir: &layout.server,
        sources: &layout.sources,
    };
    timings.ready = server::answer_cases(&mut entries, cluster, &setup)?;
    timings.server = step.elapsed();
    let step = Instant::now();
    let branch = branch::rehearse(&mut entries, &release, &layout)?;
    timings.artifacthub = step.elapsed();
    let step = Instant::now();
    let local = format!("{}/{LOCAL_NAMESPACE}", registry.host());
    let setup = scaffold::ScaffoldSetup {
        kwctl: &options.kwctl,
        cache: &layout.cache,
        published: &published,
        local: &local,
        sources: &layout.sources,
        trust: &layout.trust,
        out: &layout.scaffold,
    };
    scaffold::scaffold_all(&mut entries, &setup)?;
    timings.scaffold = step.elapsed();
    drop(registry);
    Ok(report(
        &entries,
        &branch,
        &timings,
        &layout,
        started.elapsed(),
    ))
}

/// The options with kwctl, policy-server and the script made absolute when given as paths
/// (kwctl runs in the policies' directories).
fn absolute_tools(options: &PublishOptions) -> Result<PublishOptions> {
    let absolute = |p: &PathBuf| -> Result<PathBuf> {
        if p.components().count() > 1 {
            std::path::absolute(p).map_err(|e| Error::io(p, e))
        } else {
            Ok(p.clone())
        }
    };
    Ok(PublishOptions {
        kwctl: absolute(&options.kwctl)?,
        policy_server: absolute(&options.policy_server)?,
        release_script: absolute(&options.release_script)?,
        ..options.clone()
    })
}

/// Chooses every entry's case; the fake API server state that answers their lookups.
fn pick_cases(entries: &mut [Entry]) -> FakeApi {
    let mut cluster = FakeApi::default();
    for entry in entries.iter_mut() {
        match server::pick_case(&entry.dir, &entry.binding, &mut cluster) {
            Ok(pick) => entry.pick = Some(pick),
            Err(why) => entry
                .problems
                .push(format!("no case for policy-server: {why}")),
        }
    }
    cluster
}

/// Pushes every annotated module with `release.sh push`; writes the references file.
fn push_all(entries: &mut [Entry], release: &Release, host: &str, layout: &Layout) -> Result<()> {
    let mut refs = String::new();
    for entry in entries.iter_mut() {
        let uri = format!(
            "registry://{host}/{LOCAL_NAMESPACE}/{}:v{}",
            entry.policy, entry.version
        );
        match release.push(&entry.binding.module, &uri, &layout.sources) {
            Ok(reference) => {
                refs.push_str(&format!("{}={reference}\n", entry.policy));
                entry.pushed = Some(reference);
            }
            Err(why) => entry.problems.push(format!("release.sh push {uri}: {why}")),
        }
    }
    std::fs::write(&layout.refs, refs).map_err(|e| Error::io(&layout.refs, e))
}

/// Prints each policy's line and problems, then the summary; whether all went well.
fn report(
    entries: &[Entry],
    branch: &branch::BranchReport,
    timings: &Timings,
    layout: &Layout,
    took: Duration,
) -> bool {
    for entry in entries {
        println!("{}", entry_line(entry));
        for problem in &entry.problems {
            println!("    FAIL {problem}");
        }
    }
    for problem in &branch.problems {
        println!("FAIL artifacthub branch: {problem}");
    }
    let n = entries.len();
    let count = |f: fn(&Entry) -> bool| entries.iter().filter(|e| f(e)).count();
    let (pushed, pulled, answered) = (
        count(|e| e.pushed.is_some()),
        count(|e| e.pulled),
        count(|e| e.answered),
    );
    let attempts: Vec<u32> = entries.iter().filter_map(|e| e.attempts).collect();
    let retried = attempts.iter().filter(|a| **a > 1).count();
    let lookups: usize = entries
        .iter()
        .filter(|e| e.answered)
        .filter_map(|e| e.pick.as_ref().map(|p| p.lookups))
        .sum();
    println!(
        "push: {pushed}/{n} through release.sh push in {:.1} s (immutable references in {})",
        timings.push.as_secs_f64(),
        layout.refs.display()
    );
    println!(
        "policy-server: {pulled}/{n} modules pulled from the registry ({}), \
         {answered}/{n} cases answered as expected ({lookups} lookups served by the fake API \
         server), {:.1} s",
        timings.ready.map_or_else(
            || "never ready".to_owned(),
            |d| format!("ready after {:.1} s", d.as_secs_f64())
        ),
        timings.server.as_secs_f64()
    );
    println!(
        "artifacthub: {}/{n} packages right on the artifacthub branch of {} ({} commits); \
         {retried} of {} concurrent pushes needed a retry ({} retries in all, at most {} \
         attempts), {:.1} s",
        count(|e| e.packaged),
        layout.remote.display(),
        branch.commits,
        attempts.len(),
        attempts.iter().map(|a| a.saturating_sub(1)).sum::<u32>(),
        attempts.iter().max().copied().unwrap_or(0),
        timings.artifacthub.as_secs_f64()
    );
    println!(
        "scaffold: {}/{n} README commands wrote their manifest to {}, {:.1} s",
        count(|e| e.scaffolded),
        layout.scaffold.display(),
        timings.scaffold.as_secs_f64()
    );
    let failed: Vec<&str> = entries
        .iter()
        .filter(|e| !e.problems.is_empty())
        .map(|e| e.policy.as_str())
        .collect();
    if !failed.is_empty() {
        println!("failed: {}", failed.join(", "));
    }
    println!("publish-local: took {:.1} s", took.as_secs_f64());
    println!(
        "publish-local: {pushed} pushed, {pulled} pulled by policy-server, {answered}/{n} answered as expected"
    );
    let all = [pushed, pulled, answered].iter().all(|c| *c == n);
    all && failed.is_empty() && branch.problems.is_empty() && n > 0
}

/// One policy's outcome on a line.
fn entry_line(entry: &Entry) -> String {
    let digest = entry
        .pushed
        .as_deref()
        .and_then(|r| r.rsplit_once('@'))
        .map_or("not pushed", |(_, d)| d.get(..19).unwrap_or(d));
    let case = entry.pick.as_ref().map_or_else(
        || "no case".to_owned(),
        |p| {
            format!(
                "case {:?} ({}){}",
                p.name,
                if p.testdrive.response.allowed {
                    "allowed"
                } else {
                    "refused"
                },
                if entry.answered {
                    " answered as expected"
                } else {
                    " NOT answered as expected"
                }
            )
        },
    );
    format!(
        "{:<32} v{} {digest} {} {case}; artifacthub push: {} attempt(s); manifest {}",
        entry.policy,
        entry.version,
        if entry.pulled { "pulled" } else { "NOT pulled" },
        entry.attempts.map_or("no".to_owned(), |a| a.to_string()),
        if entry.scaffolded {
            "written"
        } else {
            "NOT written"
        }
    )
}
