//! Registry allow- and deny-lists over parsed image references (`docs/semantics.md#registries`).
//!
//! An entry is a registry host (`docker.io`, `localhost:5000`) or a host and repository
//! prefix (`ghcr.io/acme`). Entries are normalised like image references — hosts
//! lower-cased, `index.docker.io` and `registry-1.docker.io` read as `docker.io` — and
//! refused with a scheme, tag, digest, upper-case path or a first component that no image
//! could name as its registry. A prefix matches the repository it names and every
//! repository below it (`ghcr.io/acme` matches `ghcr.io/acme/app`, not
//! `ghcr.io/acme-evil/app`); a prefix is never completed with Docker Hub's `library/`
//! (`docker.io/bitnami` names the organisation).
//!
//! Membership costs one set lookup per host and per path component of the image, never a
//! scan of the list ([`NameList`]); regexes are full matches compiled on first use.
//!
//! ```
//! use kube_values::image::ImageRef;
//! use tenancy_rules::registry::RegistryList;
//! let list = RegistryList::build(
//!     "allowed",
//!     ["Docker.io", "ghcr.io/acme", "localhost:5000"].into(),
//!     &["internal\\.registry\\.[a-z]+\\.tld".into()],
//!     &[],
//! )
//! .unwrap();
//! let m = |s: &str| list.first_match(&ImageRef::parse(s).unwrap()).is_some();
//! assert!(m("nginx:1.25") && m("ghcr.io/acme/app:1") && m("localhost:5000/app"));
//! assert!(m("internal.registry.eu.tld/app:1"));
//! assert!(!m("ghcr.io/acme-evil/app:1") && !m("localhost:5001/app") && !m("evil.com/docker.io/nginx"));
//! assert_eq!(
//!     list.to_string(),
//!     "[docker.io, ghcr.io/acme, localhost:5000], regex [internal\\.registry\\.[a-z]+\\.tld]"
//! );
//! ```

use std::fmt;

use kube_values::image::ImageRef;
use policy_decode::error::SettingsError;
use policy_decode::matcher::{FullMatch, regexes};
use policy_decode::message;
use policy_decode::names::NameList;

/// One settings entry, normalised: a registry host, or a host and repository prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryEntry {
    /// The lower-cased host with its port (`docker.io`, `localhost:5000`).
    pub host: String,
    /// The repository prefix, if the entry names one (`acme`, `library/ubuntu`).
    pub path: Option<String>,
}

impl RegistryEntry {
    /// Reads and normalises one entry; the error says what to write instead.
    ///
    /// ```
    /// use tenancy_rules::registry::RegistryEntry;
    /// let e = RegistryEntry::parse("Index.Docker.IO/library/ubuntu").unwrap();
    /// assert_eq!(e.to_string(), "docker.io/library/ubuntu");
    /// assert!(RegistryEntry::parse("https://docker.io").is_err());
    /// assert!(RegistryEntry::parse("quay.io/Acme").is_err());
    /// assert!(RegistryEntry::parse("library").is_err());
    /// ```
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() {
            return Err("must not be empty".to_owned());
        }
        if raw.contains("://") {
            return Err(format!(
                "{raw:?} has a scheme; write the registry host only, e.g. \"docker.io\""
            ));
        }
        if raw.contains('@') {
            return Err(format!(
                "{raw:?} has a digest; entries name registries or repository prefixes, never images"
            ));
        }
        let (first, path) = match raw.split_once('/') {
            Some((first, path)) => (first, Some(path)),
            None => (raw, None),
        };
        let lower = first.to_ascii_lowercase();
        if !(lower.contains(['.', ':']) || lower == "localhost") {
            return Err(format!(
                "{first:?} is not a registry host: an image names its registry only with a '.', a ':' or localhost (Docker Hub images are docker.io/<name>)"
            ));
        }
        let probe = match path {
            Some(path) => format!("{lower}/{path}"),
            None => format!("{lower}/probe"),
        };
        let image = ImageRef::parse(&probe).map_err(|e| format!("{raw:?}: {}", e.reason))?;
        if image.tag.is_some() {
            return Err(format!(
                "{raw:?} has a tag; entries name registries or repository prefixes, never images"
            ));
        }
        Ok(RegistryEntry {
            host: image.registry,
            path: path.map(str::to_owned),
        })
    }
}

impl fmt::Display for RegistryEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}/{path}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// Whether a valid entry is already in normal form: its host has no upper case and is not a
/// Docker Hub alias.
fn is_normal(raw: &str) -> bool {
    let host = raw.split_once('/').map_or(raw, |(host, _)| host);
    !host.bytes().any(|b| b.is_ascii_uppercase()) && !is_docker_alias(host)
}

fn is_docker_alias(host: &str) -> bool {
    ["index.docker.io", "registry-1.docker.io"]
        .iter()
        .any(|alias| alias.eq_ignore_ascii_case(host))
}

/// The `host/repository` prefixes of an image's name (`host/repository`, see
/// [`ImageRef::name`]) at which a prefix entry may match, shortest first: `ghcr.io/acme`,
/// `ghcr.io/acme/app` for `ghcr.io/acme/app`. Slices of the one name, not copies.
fn prefixes<'n>(name: &'n str, registry: &str) -> impl Iterator<Item = &'n str> + 'n {
    let repository_start = registry.len() + 1;
    let repository = name.get(repository_start..).unwrap_or_default();
    // a byte loop: `match_indices` builds a searcher for long haystacks, slower on a name
    repository
        .bytes()
        .enumerate()
        .filter_map(|(i, b)| (b == b'/').then_some(i))
        .chain(std::iter::once(repository.len()))
        .filter_map(move |end| name.get(..repository_start + end))
}

/// Registry entries plus full-match regexes over the host and over `host/repository`: an
/// `allowed…` or `denied…` group of settings.
#[derive(Clone, Debug, Default)]
pub struct RegistryList {
    /// Every entry, normalised, in settings order. A host entry has no `/` and a prefix
    /// entry has one, so looking up a host finds only host entries and looking up
    /// `host/path` only prefix entries: one list serves both.
    entries: NameList,
    host_regexes: Vec<FullMatch>,
    repository_regexes: Vec<FullMatch>,
}

/// What matched an image in a [`RegistryList`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryMatch {
    /// The entry at that index of the settings list.
    Entry(usize),
    /// The host regex at that index.
    HostRegex(usize),
    /// The repository regex at that index.
    RepositoryRegex(usize),
}

impl RegistryList {
    /// Reads entries (settings path `path`, e.g. `allowed`) and the regexes of the
    /// `<path>Regex` and `<path>RepositoryRegex` settings. When settings are validated
    /// (not when `validate` re-reads them), an entry listed twice after normalisation is
    /// refused.
    pub fn build(
        path: &str,
        entries: NameList,
        host_regexes: &[String],
        repository_regexes: &[String],
    ) -> Result<Self, SettingsError> {
        let mut list = RegistryList {
            host_regexes: regexes(&format!("{path}Regex"), host_regexes)?,
            repository_regexes: regexes(&format!("{path}RepositoryRegex"), repository_regexes)?,
            ..Default::default()
        };
        if policy_decode::settings::is_reread() {
            // Validated when the policy was loaded: normalised without re-checking, and
            // kept as decoded when (as usual) nothing needs normalising.
            if entries.iter().all(is_normal) {
                list.entries = entries;
            } else {
                for raw in entries.iter() {
                    list.push_valid(raw);
                }
            }
            return Ok(list);
        }
        for (i, raw) in entries.iter().enumerate() {
            let entry = RegistryEntry::parse(raw)
                .map_err(|e| SettingsError::new(format!("{path}[{i}]"), e))?;
            list.push(&entry);
        }
        if let Some(i) = list.entries.first_duplicate() {
            let again = list.entries.get(i).unwrap_or_default();
            return Err(SettingsError::new(
                format!("{path}[{i}]"),
                format!("{again} is listed twice (entries are compared after normalisation)"),
            ));
        }
        Ok(list)
    }

    /// Appends a parsed entry.
    pub fn push(&mut self, entry: &RegistryEntry) {
        self.entries.push(&entry.to_string());
    }

    /// Appends an entry already known to be valid, normalised as [`RegistryEntry::parse`]
    /// would without checking it again (`docs/semantics.md#cost`).
    fn push_valid(&mut self, raw: &str) {
        if is_normal(raw) {
            self.entries.push(raw);
            return;
        }
        let (host, path) = match raw.split_once('/') {
            Some((host, path)) => (host, Some(path)),
            None => (raw, None),
        };
        let host = if is_docker_alias(host) {
            kube_values::image::DOCKER_HUB.to_owned()
        } else {
            host.to_ascii_lowercase()
        };
        match path {
            Some(path) => self.entries.push(&format!("{host}/{path}")),
            None => self.entries.push(&host),
        }
    }

    /// Whether the list has neither entries nor regexes (matches nothing).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
            && self.host_regexes.is_empty()
            && self.repository_regexes.is_empty()
    }

    /// The first thing (entry, host regex, repository regex, in that order) that matches
    /// `image`, if any.
    pub fn first_match(&self, image: &ImageRef) -> Option<RegistryMatch> {
        // `registry/repository`, read by prefix entries and repository regexes: made once
        // for both, and only when either is set.
        let name = match self.entries.is_empty() && self.repository_regexes.is_empty() {
            true => String::new(),
            false => image.name(),
        };
        if let Some(i) = self.named_entry_match(image, &name) {
            return Some(RegistryMatch::Entry(i));
        }
        if let Some(i) = self
            .host_regexes
            .iter()
            .position(|r| r.is_match(&image.registry))
        {
            return Some(RegistryMatch::HostRegex(i));
        }
        self.repository_regexes
            .iter()
            .position(|r| r.is_match(&name))
            .map(RegistryMatch::RepositoryRegex)
    }

    /// The index (in settings order) of the first entry matching `image`.
    pub fn entry_match(&self, image: &ImageRef) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        self.named_entry_match(image, &image.name())
    }

    /// [`RegistryList::entry_match`] for `image` whose name (`registry/repository`) is `name`.
    fn named_entry_match(&self, image: &ImageRef, name: &str) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        let mut best = self.entries.position(&image.registry);
        for prefix in prefixes(name, &image.registry) {
            if let Some(i) = self.entries.position(prefix) {
                best = Some(best.map_or(i, |b: usize| b.min(i)));
            }
        }
        best
    }

    /// How `m` reads in a message: the entry, or the regex with its kind.
    pub fn describe_match(&self, m: &RegistryMatch) -> String {
        match m {
            RegistryMatch::Entry(i) => self.entries.get(*i).unwrap_or_default().to_owned(),
            RegistryMatch::HostRegex(i) => self
                .host_regexes
                .get(*i)
                .map_or_else(String::new, |r| format!("regex {}", r.pattern())),
            RegistryMatch::RepositoryRegex(i) => self
                .repository_regexes
                .get(*i)
                .map_or_else(String::new, |r| format!("repository regex {}", r.pattern())),
        }
    }
}

impl fmt::Display for RegistryList {
    /// `[docker.io, ghcr.io/acme], regex [a, b], repository regex [c]`: entries in settings
    /// order (at most [`message::LISTED`] of each kind shown), then the regexes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![message::bracketed(self.entries.iter())];
        if !self.host_regexes.is_empty() {
            let r = self.host_regexes.iter().map(FullMatch::pattern);
            parts.push(format!("regex {}", message::bracketed(r)));
        }
        if !self.repository_regexes.is_empty() {
            let r = self.repository_regexes.iter().map(FullMatch::pattern);
            parts.push(format!("repository regex {}", message::bracketed(r)));
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn list(entries: &[&str]) -> RegistryList {
        let names: NameList = entries.iter().copied().collect();
        RegistryList::build("allowed", names, &[], &[]).unwrap()
    }

    fn img(s: &str) -> ImageRef {
        ImageRef::parse(s).unwrap()
    }

    #[rstest]
    #[case("docker.io", "docker.io")]
    #[case("Docker.IO", "docker.io")]
    #[case("index.docker.io", "docker.io")]
    #[case("registry-1.docker.io/bitnami", "docker.io/bitnami")]
    #[case("localhost:5000", "localhost:5000")]
    #[case("LOCALHOST", "localhost")]
    #[case("ghcr.io/acme/team", "ghcr.io/acme/team")]
    #[case("myregistry.azurecr.io", "myregistry.azurecr.io")]
    #[case("[::1]:5000", "[::1]:5000")]
    fn entries_normalise(#[case] raw: &str, #[case] expected: &str) {
        assert_eq!(RegistryEntry::parse(raw).unwrap().to_string(), expected);
    }

    #[rstest]
    #[case("", "must not be empty")]
    #[case("https://docker.io", "has a scheme")]
    #[case(
        "docker.io/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "has a digest"
    )]
    #[case("docker.io/library/nginx:1.25", "has a tag")]
    #[case("quay.io/Acme", "repository name must be lowercase")]
    #[case("library", "is not a registry host")]
    #[case("acme/app", "is not a registry host")]
    #[case("quay.io/", "empty repository path component")]
    #[case("quay.io//x", "empty repository path component")]
    #[case("bad_host.io", "invalid registry")]
    fn bad_entries_are_refused(#[case] raw: &str, #[case] problem: &str) {
        let e = RegistryEntry::parse(raw).unwrap_err();
        assert!(e.contains(problem), "{raw}: {e}");
    }

    #[rstest]
    #[case("nginx:latest", true)]
    #[case("docker.io/library/nginx:latest", true)]
    #[case("Docker.IO/library/nginx:1", true)]
    #[case("index.docker.io/library/nginx", true)]
    #[case("library/nginx:1.25", true)]
    #[case("quay.io/org/app", true)]
    #[case("evil.com/docker.io/library/nginx:1", false)]
    #[case("docker.io.evil.com/nginx", false)]
    #[case("gcr.io/invalid/pause:3.9", false)]
    fn hosts_match_exactly(#[case] image: &str, #[case] allowed: bool) {
        let l = list(&["docker.io", "quay.io"]);
        assert_eq!(l.first_match(&img(image)).is_some(), allowed, "{image}");
    }

    #[rstest]
    #[case("ghcr.io/acme/app:1", true)]
    #[case("ghcr.io/acme:1", true)]
    #[case("ghcr.io/acme/team/app:1", true)]
    #[case("ghcr.io/acme-evil/app:1", false)]
    #[case("ghcr.io/acmeapp", false)]
    #[case("ghcr.io/other/app", false)]
    fn prefixes_match_at_component_boundaries(#[case] image: &str, #[case] allowed: bool) {
        let l = list(&["ghcr.io/acme"]);
        assert_eq!(l.first_match(&img(image)).is_some(), allowed, "{image}");
    }

    #[test]
    fn the_first_matching_entry_in_settings_order_is_reported() {
        let l = list(&["docker.io/library/ubuntu", "quay.io", "docker.io/library"]);
        assert_eq!(l.entry_match(&img("ubuntu:22.04")), Some(0));
        assert_eq!(l.entry_match(&img("nginx")), Some(2));
        assert_eq!(l.entry_match(&img("quay.io/x/y")), Some(1));
        assert_eq!(
            l.describe_match(&RegistryMatch::Entry(2)),
            "docker.io/library"
        );
        let l = list(&["docker.io/bitnami"]);
        assert!(l.entry_match(&img("bitnami/nginx")).is_some());
        assert!(l.entry_match(&img("nginx")).is_none());
    }

    #[test]
    fn ports_are_part_of_the_host() {
        let l = list(&["localhost:5000"]);
        assert!(l.first_match(&img("localhost:5000/app:1")).is_some());
        assert!(l.first_match(&img("localhost:5001/app:1")).is_none());
        assert!(l.first_match(&img("localhost/app:1")).is_none());
    }

    #[test]
    fn regexes_match_whole_hosts_and_names() {
        let l = RegistryList::build(
            "allowed",
            NameList::new(),
            &["internal.registry.io".into()],
            &["quay\\.io/acme/.*".into()],
        )
        .unwrap();
        assert!(l.first_match(&img("internal.registry.io/app:1")).is_some());
        assert!(
            l.first_match(&img("internal.registry.io.evil.com/app:1"))
                .is_none()
        );
        assert_eq!(
            l.first_match(&img("quay.io/acme/app")),
            Some(RegistryMatch::RepositoryRegex(0))
        );
        assert!(l.first_match(&img("quay.io/other/app")).is_none());
        assert_eq!(
            l.to_string(),
            "[], regex [internal.registry.io], repository regex [quay\\.io/acme/.*]"
        );
        let e = RegistryList::build("denied", NameList::new(), &["(".into()], &[]).unwrap_err();
        assert!(
            e.to_string().starts_with("deniedRegex[0]: invalid regex"),
            "{e}"
        );
    }

    #[test]
    fn duplicates_after_normalisation_are_refused() {
        let e = RegistryList::build("allowed", ["docker.io", "Index.Docker.io"].into(), &[], &[])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "allowed[1]: docker.io is listed twice (entries are compared after normalisation)"
        );
        let e = RegistryList::build("allowed", ["quay.io", "https://x.io"].into(), &[], &[])
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("allowed[1]: \"https://x.io\" has a scheme"),
            "{e}"
        );
    }

    #[test]
    fn reread_normalises_like_validation() {
        let raw: NameList = [
            "Quay.IO",
            "index.docker.io/bitnami",
            "ghcr.io/acme",
            "LOCALHOST:5000",
        ]
        .into();
        let checked = RegistryList::build("allowed", raw.clone(), &[], &[]).unwrap();
        let reread =
            policy_decode::settings::reread(|| RegistryList::build("allowed", raw, &[], &[]))
                .unwrap();
        assert_eq!(checked.to_string(), reread.to_string());
        assert_eq!(
            reread.to_string(),
            "[quay.io, docker.io/bitnami, ghcr.io/acme, localhost:5000]"
        );
        assert_eq!(reread.entry_match(&img("bitnami/nginx")), Some(1));
    }

    #[test]
    fn many_entries_cost_lookups_not_scans() {
        let entries: Vec<String> = (0..10_000)
            .map(|i| format!("registry-{i}.example.com"))
            .collect();
        let l = RegistryList::build("allowed", entries.into(), &[], &[]).unwrap();
        for i in 0..100 {
            let image = img(&format!("registry-{}.example.com/app:1", i * 97));
            assert_eq!(l.entry_match(&image), Some(i * 97));
        }
        assert!(l.to_string().ends_with("... (9980 more)]"));
    }
}
