//! Container image references (`docs/semantics.md#parsers`), parsed by hand after the
//! distribution reference grammar and normalised the way Docker does. The pull policy
//! Kubernetes defaults from a reference is [`crate::pull_policy`]'s.
//!
//! * a digest (`@sha256:` + 64 lower-case hex; `sha384`/`sha512` with 96/128) is split off;
//! * the tag follows the last `:` after the last `/` (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`);
//! * the first `/`-component is a registry only if it contains `.` or `:` or is `localhost`;
//!   otherwise the registry is `docker.io` and a one-component repository gets `library/`;
//! * `index.docker.io` and `registry-1.docker.io` become `docker.io`; hosts are lower-cased
//!   (a registry may carry a `:port` and may be a bracketed IPv6 address);
//! * repository components are `[a-z0-9]+` joined by `.`, `_`, `__` or runs of `-`;
//!   upper case, empty components, spaces and anything else are refused.
//!
//! Unlike Docker, a first component with upper-case letters but no `.`/`:` is not taken as
//! a registry host (`docs/semantics.md#parsers`: only `.`, `:` or `localhost` name a
//! registry), so `Foo/bar` is refused instead of pulling from host `foo`.
//!
//! ```
//! use kube_values::image::ImageRef;
//! let r = ImageRef::parse("nginx:1.25").unwrap();
//! assert_eq!(r.registry, "docker.io");
//! assert_eq!(r.repository, "library/nginx");
//! assert_eq!(r.tag.as_deref(), Some("1.25"));
//! assert_eq!(r.to_string(), "docker.io/library/nginx:1.25");
//! ```

use std::fmt;
use std::str::FromStr;

/// The Docker Hub registry as named after normalisation.
pub const DOCKER_HUB: &str = "docker.io";

/// Longest repository name (`registry/repository`) the distribution grammar accepts.
const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// A parsed, normalised image reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    /// Lower-cased registry host, with its port if any (`docker.io`, `localhost:5000`).
    pub registry: String,
    /// Repository path (`library/nginx`, `team/app`).
    pub repository: String,
    /// The tag, if the reference names one.
    pub tag: Option<String>,
    /// The digest (`sha256:<hex>`), if the reference names one.
    pub digest: Option<String>,
}

/// Why a string is not a valid image reference.
///
/// Every variant renders as `invalid image reference <ref>: <reason>`; policies report the
/// violation as `invalid image reference`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image reference {reference:?}: {reason}")]
pub struct ImageError {
    /// The reference as written.
    pub reference: String,
    /// What is wrong with it.
    pub reason: ImageErrorReason,
}

/// The rule an invalid image reference breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageErrorReason {
    /// The empty string.
    #[error("empty reference")]
    Empty,
    /// Upper-case letters in the repository path.
    #[error("repository name must be lowercase")]
    Uppercase,
    /// An empty repository path component (`a//b`, `a/`, a bare registry).
    #[error("empty repository path component")]
    EmptyComponent,
    /// A repository path component outside the grammar.
    #[error("invalid repository path component {0:?}")]
    BadComponent(String),
    /// A registry host (or port) outside the grammar.
    #[error("invalid registry {0:?}")]
    BadRegistry(String),
    /// A tag outside `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
    #[error("invalid tag {0:?}")]
    BadTag(String),
    /// A digest that is not `sha256:` + 64 lower-case hex (or sha384/sha512).
    #[error("invalid digest {0:?}")]
    BadDigest(String),
    /// Registry and repository together longer than 255 characters.
    #[error("repository name longer than 255 characters")]
    TooLong,
}

impl ImageRef {
    /// Parses and normalises a reference (`nginx`, `quay.io/org/app:v1@sha256:…`).
    ///
    /// ```
    /// use kube_values::image::ImageRef;
    /// let r = ImageRef::parse("Index.Docker.io/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").unwrap();
    /// assert_eq!(r.name(), "docker.io/library/nginx");
    /// assert!(r.tag.is_none() && r.digest.is_some());
    /// assert!(ImageRef::parse("Nginx").is_err());
    /// ```
    pub fn parse(raw: &str) -> Result<ImageRef, ImageError> {
        parse(raw).map_err(|reason| ImageError {
            reference: raw.to_owned(),
            reason,
        })
    }

    /// `registry/repository`, without tag or digest (`docker.io/library/nginx`).
    pub fn name(&self) -> String {
        let mut name = String::with_capacity(self.registry.len() + 1 + self.repository.len());
        name.push_str(&self.registry);
        name.push('/');
        name.push_str(&self.repository);
        name
    }
}

impl fmt::Display for ImageRef {
    /// The canonical form `registry/repository[:tag][@digest]`, which parses back to the
    /// same reference.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for ImageRef {
    type Err = ImageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ImageRef::parse(s)
    }
}

/// Whether the raw reference names its registry explicitly (`quay.io/x`, `localhost/x`,
/// `docker.io/nginx`) rather than relying on the Docker Hub default (`nginx`, `org/app`).
/// Only the syntax of the first path component is looked at; validity is [`ImageRef::parse`]'s
/// business.
///
/// ```
/// use kube_values::image::fully_qualified;
/// assert!(fully_qualified("docker.io/library/nginx"));
/// assert!(fully_qualified("localhost:5000/app"));
/// assert!(!fully_qualified("library/nginx:1.25"));
/// assert!(!fully_qualified("nginx"));
/// ```
pub fn fully_qualified(raw: &str) -> bool {
    let name = split_once(raw, b'@').map_or(raw, |(n, _)| n);
    match split_once(name, b'/') {
        Some((first, _)) => names_registry(first),
        None => false,
    }
}

/// Whether the first component of a name is a registry host.
fn names_registry(first: &str) -> bool {
    first.bytes().any(|b| b == b'.' || b == b':') || first == "localhost"
}

fn parse(raw: &str) -> Result<ImageRef, ImageErrorReason> {
    if raw.is_empty() {
        return Err(ImageErrorReason::Empty);
    }
    let (rest, digest) = match split_once(raw, b'@') {
        Some((rest, digest)) => {
            validate_digest(digest)?;
            (rest, Some(digest.to_owned()))
        }
        None => (raw, None),
    };
    let last_slash = rfind(rest, b'/').map_or(0, |i| i + 1);
    let (name, tag) = match rfind(&rest[last_slash..], b':') {
        Some(i) => {
            let colon = last_slash + i;
            let tag = &rest[colon + 1..];
            validate_tag(tag)?;
            (&rest[..colon], Some(tag.to_owned()))
        }
        None => (rest, None),
    };
    if name.len() > NAME_TOTAL_LENGTH_MAX {
        return Err(ImageErrorReason::TooLong);
    }
    let (registry, path) = match split_once(name, b'/') {
        Some((first, path)) if names_registry(first) => (normalise_registry(first)?, path),
        _ => (DOCKER_HUB.to_owned(), name),
    };
    validate_path(path)?;
    let repository = if registry == DOCKER_HUB && find(path, b'/').is_none() {
        format!("library/{path}")
    } else {
        path.to_owned()
    };
    Ok(ImageRef {
        registry,
        repository,
        tag,
        digest,
    })
}

/// The first index of the ASCII byte `sep` in `s`. References are short, and for them a plain
/// loop is faster than `str::find`'s searcher, which is built for long haystacks.
fn find(s: &str, sep: u8) -> Option<usize> {
    s.bytes().position(|b| b == sep)
}

/// The last index of the ASCII byte `sep` in `s` (see [`find`]).
fn rfind(s: &str, sep: u8) -> Option<usize> {
    s.bytes().rposition(|b| b == sep)
}

/// `s` split around the first ASCII byte `sep` (see [`find`]).
fn split_once(s: &str, sep: u8) -> Option<(&str, &str)> {
    let i = find(s, sep)?;
    Some((s.get(..i)?, s.get(i + 1..)?))
}

/// The pieces of `s` between the ASCII bytes `sep`, by a predicate, which tests each
/// character in turn, rather than the searcher `str::split(char)` builds (see [`find`]).
#[allow(
    clippy::manual_pattern_char_comparison,
    reason = "the predicate is the point: the char pattern builds the searcher"
)]
fn split(s: &str, sep: u8) -> impl Iterator<Item = &str> {
    let sep = char::from(sep);
    s.split(move |c: char| c == sep)
}

fn validate_digest(digest: &str) -> Result<(), ImageErrorReason> {
    let bad = || ImageErrorReason::BadDigest(digest.to_owned());
    let (algorithm, hex) = split_once(digest, b':').ok_or_else(bad)?;
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err(bad()),
    };
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if hex.len() == len && hex.bytes().all(lower_hex) {
        Ok(())
    } else {
        Err(bad())
    }
}

fn validate_tag(tag: &str) -> Result<(), ImageErrorReason> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    let ok = match bytes.split_first() {
        Some((&first, rest)) => {
            word(first)
                && rest.len() <= 127
                && rest.iter().all(|&b| word(b) || b == b'.' || b == b'-')
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ImageErrorReason::BadTag(tag.to_owned()))
    }
}

/// Lower-cases and checks a registry host (`host[:port]`, `[ipv6][:port]`) and maps the
/// Docker Hub aliases to `docker.io`.
fn normalise_registry(raw: &str) -> Result<String, ImageErrorReason> {
    let bad = || ImageErrorReason::BadRegistry(raw.to_owned());
    let (host, port) = if let Some(inner) = raw.strip_prefix('[') {
        let (addr, after) = split_once(inner, b']').ok_or_else(bad)?;
        let ipv6_ok = !addr.is_empty()
            && find(addr, b':').is_some()
            && addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
        if !ipv6_ok {
            return Err(bad());
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(bad)?),
        };
        (&raw[..addr.len() + 2], port)
    } else {
        match split_once(raw, b':') {
            Some((host, port)) => (host, Some(port)),
            None => (raw, None),
        }
    };
    if !host.starts_with('[') && !split(host, b'.').all(valid_domain_component) {
        return Err(bad());
    }
    if let Some(port) = port
        && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(bad());
    }
    let lower = raw.to_ascii_lowercase();
    Ok(match lower.as_str() {
        "index.docker.io" | "registry-1.docker.io" => DOCKER_HUB.to_owned(),
        _ => lower,
    })
}

/// `[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]`.
fn valid_domain_component(c: &str) -> bool {
    let b = c.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
        }
        _ => false,
    }
}

fn validate_path(path: &str) -> Result<(), ImageErrorReason> {
    for component in split(path, b'/') {
        if component.is_empty() {
            return Err(ImageErrorReason::EmptyComponent);
        }
        if component.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(ImageErrorReason::Uppercase);
        }
        if !valid_path_component(component) {
            return Err(ImageErrorReason::BadComponent(component.to_owned()));
        }
    }
    Ok(())
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`.
fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    let mut i = 0;
    // Each iteration reads one alphanumeric run, then at most one separator.
    loop {
        let start = i;
        while b.get(i).is_some_and(|&x| alnum(x)) {
            i += 1;
        }
        if i == start {
            return false; // empty run: leading, trailing or doubled separator
        }
        match b.get(i) {
            None => return true,
            Some(b'.') => i += 1,
            Some(b'_') => {
                i += 1;
                if b.get(i) == Some(&b'_') {
                    i += 1;
                }
            }
            Some(b'-') => {
                while b.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            Some(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn r(registry: &str, repository: &str, tag: Option<&str>, digest: Option<&str>) -> ImageRef {
        ImageRef {
            registry: registry.into(),
            repository: repository.into(),
            tag: tag.map(Into::into),
            digest: digest.map(Into::into),
        }
    }

    #[rstest]
    #[case("nginx", r("docker.io", "library/nginx", None, None))]
    #[case("nginx:1.25", r("docker.io", "library/nginx", Some("1.25"), None))]
    #[case("nginx:latest", r("docker.io", "library/nginx", Some("latest"), None))]
    #[case("org/app:v1", r("docker.io", "org/app", Some("v1"), None))]
    #[case("org/team/app", r("docker.io", "org/team/app", None, None))]
    #[case("docker.io/nginx", r("docker.io", "library/nginx", None, None))]
    #[case("docker.io/library/nginx", r("docker.io", "library/nginx", None, None))]
    #[case("index.docker.io/nginx", r("docker.io", "library/nginx", None, None))]
    #[case("registry-1.docker.io/org/app", r("docker.io", "org/app", None, None))]
    #[case("Index.Docker.IO/org/app", r("docker.io", "org/app", None, None))]
    #[case(
        "quay.io/org/app:v1.2.3",
        r("quay.io", "org/app", Some("v1.2.3"), None)
    )]
    #[case("Quay.IO/org/app", r("quay.io", "org/app", None, None))]
    #[case("quay.io/app", r("quay.io", "app", None, None))]
    #[case("localhost/app", r("localhost", "app", None, None))]
    #[case(
        "localhost:5000/app:dev",
        r("localhost:5000", "app", Some("dev"), None)
    )]
    #[case("registry:5000/app", r("registry:5000", "app", None, None))]
    #[case("10.0.0.1:5000/a/b", r("10.0.0.1:5000", "a/b", None, None))]
    #[case("[::1]:5000/app", r("[::1]:5000", "app", None, None))]
    #[case("[FE80::1]/app", r("[fe80::1]", "app", None, None))]
    #[case(
        "my-registry.example.com/a_b/c__d/e--f/g.h:T_a-g.1",
        r("my-registry.example.com", "a_b/c__d/e--f/g.h", Some("T_a-g.1"), None)
    )]
    #[case(
        "localhost:5000",
        r("docker.io", "library/localhost", Some("5000"), None)
    )]
    #[case("gcr.io/x:1", r("gcr.io", "x", Some("1"), None))]
    fn parses_and_normalises(#[case] raw: &str, #[case] expected: ImageRef) {
        assert_eq!(ImageRef::parse(raw).unwrap(), expected, "{raw}");
    }

    #[test]
    fn digests() {
        let d = format!("sha256:{HEX}");
        let got = ImageRef::parse(&format!("nginx@{d}")).unwrap();
        assert_eq!(got, r("docker.io", "library/nginx", None, Some(&d)));
        let got = ImageRef::parse(&format!("quay.io/a/b:v1@{d}")).unwrap();
        assert_eq!(got, r("quay.io", "a/b", Some("v1"), Some(&d)));
        assert_eq!(got.to_string(), format!("quay.io/a/b:v1@{d}"));
        let got = ImageRef::parse(&format!("localhost:5000/app@{d}")).unwrap();
        assert_eq!(got, r("localhost:5000", "app", None, Some(&d)));
        let d512 = format!("sha512:{HEX}{HEX}");
        assert!(ImageRef::parse(&format!("app@{d512}")).is_ok());
        let d384 = format!("sha384:{}", &format!("{HEX}{HEX}")[..96]);
        assert!(ImageRef::parse(&format!("app@{d384}")).is_ok());
    }

    #[rstest]
    #[case("", ImageErrorReason::Empty)]
    #[case("Nginx", ImageErrorReason::Uppercase)]
    #[case("quay.io/Org/app", ImageErrorReason::Uppercase)]
    #[case("Foo/bar", ImageErrorReason::Uppercase)]
    #[case("LOCALHOST/app", ImageErrorReason::Uppercase)]
    #[case("a//b", ImageErrorReason::EmptyComponent)]
    #[case("a/", ImageErrorReason::EmptyComponent)]
    #[case("/a", ImageErrorReason::EmptyComponent)]
    #[case("quay.io/", ImageErrorReason::EmptyComponent)]
    #[case("quay.io//a", ImageErrorReason::EmptyComponent)]
    #[case(":tag", ImageErrorReason::EmptyComponent)]
    #[case("nginx ", ImageErrorReason::BadComponent("nginx ".into()))]
    #[case("ng inx", ImageErrorReason::BadComponent("ng inx".into()))]
    #[case(" nginx", ImageErrorReason::BadComponent(" nginx".into()))]
    #[case("a/-b", ImageErrorReason::BadComponent("-b".into()))]
    #[case("a/b-", ImageErrorReason::BadComponent("b-".into()))]
    #[case("a/b..c", ImageErrorReason::BadComponent("b..c".into()))]
    #[case("a/b___c", ImageErrorReason::BadComponent("b___c".into()))]
    #[case("a/b._c", ImageErrorReason::BadComponent("b._c".into()))]
    #[case("a/.b", ImageErrorReason::BadComponent(".b".into()))]
    #[case("a/b+c", ImageErrorReason::BadComponent("b+c".into()))]
    #[case("a/b\u{e9}", ImageErrorReason::BadComponent("b\u{e9}".into()))]
    #[case("nginx:", ImageErrorReason::BadTag("".into()))]
    #[case("nginx:-x", ImageErrorReason::BadTag("-x".into()))]
    #[case("nginx:.x", ImageErrorReason::BadTag(".x".into()))]
    #[case("nginx:a b", ImageErrorReason::BadTag("a b".into()))]
    #[case("nginx:a+b", ImageErrorReason::BadTag("a+b".into()))]
    #[case("nginx:1:2", ImageErrorReason::BadComponent("nginx:1".into()))]
    #[case("-bad.io/app", ImageErrorReason::BadRegistry("-bad.io".into()))]
    #[case("bad-.io/app", ImageErrorReason::BadRegistry("bad-.io".into()))]
    #[case("bad..io/app", ImageErrorReason::BadRegistry("bad..io".into()))]
    #[case("bad_io.com/app", ImageErrorReason::BadRegistry("bad_io.com".into()))]
    #[case("host:port/app", ImageErrorReason::BadRegistry("host:port".into()))]
    #[case("host:/app", ImageErrorReason::BadRegistry("host:".into()))]
    #[case("host:1:2/app", ImageErrorReason::BadRegistry("host:1:2".into()))]
    #[case("[::1/app", ImageErrorReason::BadRegistry("[::1".into()))]
    #[case("[]:5000/app", ImageErrorReason::BadRegistry("[]:5000".into()))]
    #[case("[::1]x/app", ImageErrorReason::BadRegistry("[::1]x".into()))]
    #[case("[zz::1]/app", ImageErrorReason::BadRegistry("[zz::1]".into()))]
    #[case("nginx@sha256:abc", ImageErrorReason::BadDigest("sha256:abc".into()))]
    #[case("nginx@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", ImageErrorReason::BadDigest("sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef".into()))]
    #[case("nginx@md5:0123456789abcdef0123456789abcdef", ImageErrorReason::BadDigest("md5:0123456789abcdef0123456789abcdef".into()))]
    #[case("nginx@", ImageErrorReason::BadDigest("".into()))]
    #[case("nginx@sha256", ImageErrorReason::BadDigest("sha256".into()))]
    #[case("nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef@x", ImageErrorReason::BadDigest("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef@x".into()))]
    fn refuses(#[case] raw: &str, #[case] reason: ImageErrorReason) {
        assert_eq!(ImageRef::parse(raw).unwrap_err().reason, reason, "{raw}");
    }

    #[test]
    fn tag_length_limit() {
        let ok = format!("nginx:{}", "a".repeat(128));
        assert!(ImageRef::parse(&ok).is_ok());
        let long = format!("nginx:{}", "a".repeat(129));
        assert!(matches!(
            ImageRef::parse(&long).unwrap_err().reason,
            ImageErrorReason::BadTag(_)
        ));
    }

    #[test]
    fn name_length_limit() {
        let ok = format!("quay.io/{}", "a".repeat(255 - 8));
        assert!(ImageRef::parse(&ok).is_ok());
        let long = format!("quay.io/{}", "a".repeat(256 - 8));
        assert_eq!(
            ImageRef::parse(&long).unwrap_err().reason,
            ImageErrorReason::TooLong
        );
    }

    #[test]
    fn error_message() {
        let e = ImageRef::parse("Nginx").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"invalid image reference "Nginx": repository name must be lowercase"#
        );
    }

    #[rstest]
    #[case("nginx", "docker.io/library/nginx", "docker.io/library/nginx")]
    #[case("nginx:1", "docker.io/library/nginx:1", "docker.io/library/nginx")]
    #[case("Quay.io/a/b:v1", "quay.io/a/b:v1", "quay.io/a/b")]
    #[case("localhost:5000/a:v1", "localhost:5000/a:v1", "localhost:5000/a")]
    fn displays_canonically(#[case] raw: &str, #[case] canonical: &str, #[case] name: &str) {
        let parsed = ImageRef::parse(raw).unwrap();
        assert_eq!(parsed.to_string(), canonical);
        assert_eq!(parsed.name(), name);
        assert_eq!(canonical.parse::<ImageRef>().unwrap(), parsed);
    }

    #[rstest]
    #[case("nginx", false)]
    #[case("library/nginx", false)]
    #[case("org/app:v1", false)]
    #[case("docker.io/nginx", true)]
    #[case("quay.io/org/app", true)]
    #[case("localhost/app", true)]
    #[case("registry:5000/app", true)]
    #[case("localhost:5000", false)]
    #[case(
        "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        false
    )]
    fn qualified(#[case] raw: &str, #[case] expected: bool) {
        assert_eq!(fully_qualified(raw), expected, "{raw}");
    }

    fn component() -> impl Strategy<Value = String> {
        "[a-z0-9]{1,4}((\\.|_|__|-{1,3})[a-z0-9]{1,4}){0,2}"
    }

    fn valid_ref() -> impl Strategy<Value = ImageRef> {
        let registry = prop_oneof![
            Just("docker.io".to_owned()),
            Just("localhost".to_owned()),
            "[a-z0-9]{1,5}(-[a-z0-9]{1,3})?\\.[a-z]{2,4}(:[0-9]{1,5})?",
            "[a-z]{1,6}:[0-9]{1,5}",
            Just("[::1]:5000".to_owned()),
        ];
        let tag = proptest::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}");
        let digest = proptest::option::of("[0-9a-f]{64}".prop_map(|h| format!("sha256:{h}")));
        (
            registry,
            proptest::collection::vec(component(), 1..4),
            tag,
            digest,
        )
            .prop_map(|(registry, mut path, tag, digest)| {
                if registry == DOCKER_HUB && path.len() == 1 {
                    path.insert(0, "library".to_owned());
                }
                ImageRef {
                    registry,
                    repository: path.join("/"),
                    tag,
                    digest,
                }
            })
    }

    proptest! {
        #[test]
        fn display_round_trips(x in valid_ref()) {
            let shown = x.to_string();
            prop_assert_eq!(ImageRef::parse(&shown).unwrap(), x.clone());
            prop_assert!(fully_qualified(&shown));
            prop_assert_eq!(x.name(), format!("{}/{}", x.registry, x.repository));
        }

        #[test]
        fn registry_is_always_lower_case(s in "[A-Za-z0-9.:/_-]{1,30}") {
            if let Ok(parsed) = ImageRef::parse(&s) {
                prop_assert_eq!(parsed.registry.to_ascii_lowercase(), parsed.registry.clone());
                prop_assert_eq!(parsed.repository.to_ascii_lowercase(), parsed.repository.clone());
                let again = ImageRef::parse(&parsed.to_string()).unwrap();
                prop_assert_eq!(again, parsed);
            }
        }

        #[test]
        fn upper_case_hosts_are_lower_cased(x in valid_ref()) {
            let shouted = format!("{}/{}", x.registry.to_ascii_uppercase(), x.repository);
            // An upper-cased registry still names a registry when it has '.' or ':'.
            if x.registry.contains(['.', ':']) {
                let parsed = ImageRef::parse(&shouted).unwrap();
                prop_assert_eq!(parsed.registry, x.registry);
            }
        }

        #[test]
        fn byte_searches_agree_with_str_searches(s in "[a-z@/:\\].é]{0,12}") {
            for sep in [b'@', b'/', b':', b']', b'.'] {
                let c = char::from(sep);
                prop_assert_eq!(find(&s, sep), s.find(c));
                prop_assert_eq!(rfind(&s, sep), s.rfind(c));
                prop_assert_eq!(split_once(&s, sep), s.split_once(c));
                prop_assert_eq!(split(&s, sep).collect::<Vec<_>>(), s.split(c).collect::<Vec<_>>());
            }
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = ImageRef::parse(&s);
            let _ = fully_qualified(&s);
        }

        #[test]
        fn never_panics_on_reference_like_text(s in "[A-Za-z0-9.:/@_\\[\\]-]{0,60}") {
            let _ = ImageRef::parse(&s);
        }
    }
}
