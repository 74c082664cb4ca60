//! IP addresses and CIDR ranges (`docs/semantics.md#addresses`): parsed strictly, once,
//! compared as numbers, IPv4-mapped IPv6 (`::ffff:10.0.0.5`) as the IPv4 address it carries.
//!
//! * [`IpAddress`] is a value read from a request (`spec.externalIPs[0]`): IPv4 or IPv6,
//!   without prefix.
//! * [`Cidr`] is a settings entry: an address with an optional prefix length (none is a
//!   single host, /32 or /128). Host bits set below the prefix are refused with the network
//!   address to write instead; so are empty strings, whitespace, zone indexes, leading zeros
//!   in IPv4 parts or in the prefix, and prefix lengths beyond the family's width.
//! * [`CidrList`] is an allow-list of entries in settings order (shown so in messages) whose
//!   membership test costs one hash lookup per distinct prefix length of the list, however
//!   many entries it holds. Settings are handed to a fresh instance with every request
//!   (`docs/semantics.md#cost`): when `validate` re-reads them the list stays the JSON text
//!   it was written in, and is read into the index the first time an address is looked up,
//!   so a request that carries no address pays nothing for it.
//!
//! ```
//! use kube_values::net::{Cidr, CidrList, IpAddress};
//! let list: CidrList = serde_json::from_str(r#"["10.0.0.0/24", "192.168.1.2", "2001:db8:1::/64"]"#).unwrap();
//! let contains = |a: &str| list.contains(IpAddress::parse(a).unwrap());
//! assert!(contains("10.0.0.5") && contains("::ffff:10.0.0.5") && contains("2001:db8:1::10"));
//! assert!(!contains("10.0.1.5") && !contains("192.168.1.3") && !contains("2001:db8:2::1"));
//! assert_eq!(list.to_string(), "[10.0.0.0/24, 192.168.1.2, 2001:db8:1::/64]");
//! assert_eq!(
//!     Cidr::parse("10.0.0.1/24").unwrap_err().to_string(),
//!     r#""10.0.0.1/24" has host bits set; write the network address "10.0.0.0/24""#
//! );
//! ```

use std::cell::OnceCell;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::de::{Deserialize, Deserializer, Visitor};
use serde_json::value::RawValue;

use policy_decode::error::SettingsError;
use policy_decode::message;
use policy_decode::names::NameList;
use policy_decode::settings::is_reread;

/// The IPv4-mapped IPv6 range `::ffff:0:0/96`: its network bits and its mask.
const MAPPED_NETWORK: u128 = 0xffff << 32;
const MAPPED_MASK: u128 = u128::MAX << 32;
/// The prefix length of the IPv4-mapped range.
const MAPPED_PREFIX: u8 = 96;

/// An IP address as it is compared: IPv4 (an IPv4-mapped IPv6 address included) or IPv6.
///
/// ```
/// use kube_values::net::IpAddress;
/// assert_eq!(IpAddress::parse("::ffff:10.0.0.5").unwrap(), IpAddress::parse("10.0.0.5").unwrap());
/// assert_eq!(IpAddress::parse("2001:DB8::1").unwrap().to_string(), "2001:db8::1");
/// assert!(IpAddress::parse("010.0.0.5").is_err() && IpAddress::parse("fe80::1%eth0").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpAddress {
    /// An IPv4 address, as its 32 bits.
    V4(u32),
    /// An IPv6 address outside `::ffff:0:0/96`, as its 128 bits.
    V6(u128),
}

impl IpAddress {
    /// Parses a single address (no prefix), refusing what [`NetError`] describes.
    pub fn parse(text: &str) -> Result<Self, NetError> {
        match written(text) {
            Some(Written::V4(bits)) => Ok(IpAddress::V4(bits)),
            Some(Written::V6(bits)) => Ok(IpAddress::from_v6(bits)),
            None => {
                // the precise reason is looked for only once the text is refused
                check_text(text, Expected::Address)?;
                Err(NetError::NotAnAddress {
                    text: text.to_owned(),
                    expected: Expected::Address,
                })
            }
        }
    }

    /// The address of 128 IPv6 bits: IPv4 when they lie in `::ffff:0:0/96`.
    fn from_v6(bits: u128) -> Self {
        if bits & MAPPED_MASK == MAPPED_NETWORK {
            IpAddress::V4(low_32(bits))
        } else {
            IpAddress::V6(bits)
        }
    }

    /// Whether this is an IPv4 address.
    pub fn is_v4(&self) -> bool {
        matches!(self, IpAddress::V4(_))
    }
}

impl FromStr for IpAddress {
    type Err = NetError;
    fn from_str(s: &str) -> Result<Self, NetError> {
        IpAddress::parse(s)
    }
}

impl fmt::Display for IpAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IpAddress::V4(bits) => Ipv4Addr::from(bits).fmt(f),
            IpAddress::V6(bits) => Ipv6Addr::from(bits).fmt(f),
        }
    }
}

/// The low 32 bits of `bits` (the IPv4 address of an IPv4-mapped one).
fn low_32(bits: u128) -> u32 {
    (bits & u128::from(u32::MAX)) as u32
}

/// The mask of the first `prefix` of 32 bits.
fn mask_32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

/// The mask of the first `prefix` of 128 bits.
fn mask_128(prefix: u8) -> u128 {
    // in 64-bit halves: a variable 128-bit shift is a library call in wasm
    let prefix = u32::from(prefix);
    let high = u64::MAX
        .checked_shl(64u32.saturating_sub(prefix))
        .unwrap_or(0);
    let low = u64::MAX
        .checked_shl(128u32.saturating_sub(prefix))
        .unwrap_or(0);
    u128::from(high) << 64 | u128::from(low)
}

/// A CIDR range: a network address and a prefix length, no host bits set. An IPv4-mapped
/// IPv6 entry of prefix /96 or longer is the IPv4 range it maps (`::ffff:10.0.0.0/104` is
/// `10.0.0.0/8`, `::ffff:0:0/96` is every IPv4 address); any other IPv6 entry contains only
/// IPv6 addresses, even where it spans `::ffff:0:0/96` (`::/0` is every IPv6 address, no
/// IPv4 one).
///
/// ```
/// use kube_values::net::{Cidr, IpAddress};
/// let net = Cidr::parse("10.20.0.0/16").unwrap();
/// assert!(net.contains(IpAddress::parse("10.20.3.4").unwrap()));
/// assert_eq!(Cidr::parse("192.168.1.2").unwrap().to_string(), "192.168.1.2");
/// assert_eq!(Cidr::parse("2001:db8::1").unwrap().prefix(), 128);
/// assert_eq!(Cidr::parse("::ffff:10.0.0.0/104").unwrap(), Cidr::parse("10.0.0.0/8").unwrap());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: IpAddress,
    prefix: u8,
}

impl Cidr {
    /// Parses `address` or `address/prefix`, refusing what [`NetError`] describes.
    pub fn parse(text: &str) -> Result<Self, NetError> {
        // why a text is refused is worked out only once it is
        Self::read(text).ok_or_else(|| Self::refusal(text))
    }

    /// The range `text` writes, or `None`: one pass over the bytes, no error built.
    fn read(text: &str) -> Option<Self> {
        Self::read_at(text.as_bytes())
            .filter(|(_, end)| *end == text.len())
            .map(|(range, _)| range)
    }

    /// The range written at the start of `bytes`, up to their end or a `"`, and where it
    /// ends (the index of a [`CidrList`] reads its entries straight from the JSON text,
    /// on every request that looks an address up).
    fn read_at(bytes: &[u8]) -> Option<(Self, usize)> {
        let (address, end) = written_at(bytes)?;
        let width = address.width();
        let (prefix, end) = match bytes.get(end) {
            Some(b'/') => {
                let digits = bytes.get(end + 1..)?;
                let count = digits.iter().take_while(|d| d.is_ascii_digit()).count();
                (parse_prefix(digits.get(..count)?, width)?, end + 1 + count)
            }
            _ => (width, end),
        };
        let network = address.masked(prefix);
        (network == address).then(|| (network.range(prefix), end))
    }

    /// Why [`Cidr::read`] refuses `text`.
    fn refusal(text: &str) -> NetError {
        let not_a_range = NetError::NotAnAddress {
            text: text.to_owned(),
            expected: Expected::Range,
        };
        if let Err(precise) = check_text(text, Expected::Range) {
            return precise;
        }
        let bytes = text.as_bytes();
        let Some((address, end)) = written_at(bytes) else {
            return not_a_range;
        };
        let width = address.width();
        let prefix = match bytes.get(end..) {
            Some([]) => width,
            Some([b'/', digits @ ..]) => match parse_prefix(digits, width) {
                Some(prefix) => prefix,
                None => {
                    return NetError::Prefix {
                        text: text.to_owned(),
                        width,
                    };
                }
            },
            _ => return not_a_range,
        };
        NetError::HostBits {
            text: text.to_owned(),
            network: format!("{}/{prefix}", address.masked(prefix).address()),
        }
    }

    /// Parses a range read from a request (`spec.loadBalancerSourceRanges[0]`):
    /// `address/prefix` or a single address, by the same rules as [`Cidr::parse`] except
    /// that host bits below the prefix are cleared rather than refused, as the API server
    /// accepts `10.0.0.1/8` for the range `10.0.0.0/8`.
    ///
    /// ```
    /// use kube_values::net::Cidr;
    /// assert_eq!(Cidr::parse_masked("10.0.0.1/8").unwrap(), Cidr::parse("10.0.0.0/8").unwrap());
    /// assert!(Cidr::parse_masked("10.0.0.0/33").is_err() && Cidr::parse_masked(" 10.0.0.0/8").is_err());
    /// ```
    pub fn parse_masked(text: &str) -> Result<Self, NetError> {
        let bytes = text.as_bytes();
        let read = written_at(bytes).and_then(|(address, end)| {
            let width = address.width();
            let prefix = match bytes.get(end..) {
                Some([]) => width,
                Some([b'/', digits @ ..]) => parse_prefix(digits, width)?,
                _ => return None,
            };
            Some(address.masked(prefix).range(prefix))
        });
        // a text with an address and a valid prefix is read, so the refusal is never
        // about host bits
        read.ok_or_else(|| Self::refusal(text))
    }

    /// Whether every address of `other` lies in this range: same family, a prefix no
    /// longer than `other`'s, and `other`'s network inside.
    ///
    /// ```
    /// use kube_values::net::Cidr;
    /// let net = Cidr::parse("10.0.0.0/8").unwrap();
    /// assert!(net.covers(&Cidr::parse("10.1.0.0/16").unwrap()) && net.covers(&net));
    /// assert!(!net.covers(&Cidr::parse("0.0.0.0/0").unwrap()));
    /// ```
    pub fn covers(&self, other: &Cidr) -> bool {
        self.prefix <= other.prefix && self.contains(other.network)
    }

    /// The single-host range of `address` (/32 or /128).
    pub fn host(address: IpAddress) -> Self {
        let prefix = match address {
            IpAddress::V4(_) => 32,
            IpAddress::V6(_) => 128,
        };
        Cidr {
            network: address,
            prefix,
        }
    }

    /// The network address.
    pub fn network(&self) -> IpAddress {
        self.network
    }

    /// The prefix length, in the family compared (an IPv4-mapped entry's is IPv4's).
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `address` lies in the range: same family, and its first `prefix` bits are the
    /// network's.
    pub fn contains(&self, address: IpAddress) -> bool {
        match (self.network, address) {
            (IpAddress::V4(n), IpAddress::V4(a)) => a & mask_32(self.prefix) == n,
            (IpAddress::V6(n), IpAddress::V6(a)) => a & mask_128(self.prefix) == n,
            _ => false,
        }
    }

    /// Whether the range is one address.
    pub fn is_host(&self) -> bool {
        self.prefix
            == match self.network {
                IpAddress::V4(_) => 32,
                IpAddress::V6(_) => 128,
            }
    }
}

impl FromStr for Cidr {
    type Err = NetError;
    fn from_str(s: &str) -> Result<Self, NetError> {
        Cidr::parse(s)
    }
}

/// A single host as its address (`192.168.1.2`), a range as `network/prefix`
/// (`10.0.0.0/24`); IPv6 compressed and lower-case, IPv4-mapped entries as IPv4.
impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_host() {
            self.network.fmt(f)
        } else {
            write!(f, "{}/{}", self.network, self.prefix)
        }
    }
}

/// Decodes a settings entry from a string; a refusal names the entry's settings path
/// (`externalIPs.allowed[2]: "10.0.0.1/24" has host bits set; ...`).
impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CidrVisitor;
        impl Visitor<'_> for CidrVisitor {
            type Value = Cidr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an IP address or CIDR string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Cidr, E> {
                policy_decode::settings::converted(
                    Cidr::parse(v).map_err(|e| SettingsError::new("", e.to_string())),
                )
            }
        }
        deserializer.deserialize_str(CidrVisitor)
    }
}

/// An address as written, before IPv4-mapped IPv6 is read as IPv4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Written {
    V4(u32),
    V6(u128),
}

impl Written {
    fn width(self) -> u8 {
        match self {
            Written::V4(_) => 32,
            Written::V6(_) => 128,
        }
    }

    fn masked(self, prefix: u8) -> Self {
        match self {
            Written::V4(bits) => Written::V4(bits & mask_32(prefix)),
            Written::V6(bits) => Written::V6(bits & mask_128(prefix)),
        }
    }

    /// The address as written (an IPv4-mapped one keeps its IPv6 spelling).
    fn address(self) -> String {
        match self {
            Written::V4(bits) => Ipv4Addr::from(bits).to_string(),
            Written::V6(bits) => Ipv6Addr::from(bits).to_string(),
        }
    }

    /// The range of this network at `prefix`, an IPv4-mapped one as IPv4.
    fn range(self, prefix: u8) -> Cidr {
        match self {
            Written::V4(bits) => Cidr {
                network: IpAddress::V4(bits),
                prefix,
            },
            Written::V6(bits)
                if prefix >= MAPPED_PREFIX && bits & MAPPED_MASK == MAPPED_NETWORK =>
            {
                Cidr {
                    network: IpAddress::V4(low_32(bits)),
                    prefix: prefix - MAPPED_PREFIX,
                }
            }
            Written::V6(bits) => Cidr {
                network: IpAddress::V6(bits),
                prefix,
            },
        }
    }
}

/// The address `text` spells (IPv6 when it has a `:`), or `None`: the standard textual
/// forms only, so that whitespace, zone indexes, leading zeros in IPv4 parts and IPv4
/// shorthands (`10.1`, `0x0a.0.0.1`) are refused. It accepts exactly what the standard
/// library's parsers accept (a property test compares them).
fn written(text: &str) -> Option<Written> {
    written_at(text.as_bytes())
        .filter(|(_, end)| *end == text.len())
        .map(|(address, _)| address)
}

/// The address at the start of `bytes`, read up to their end or a `/`, and where it ends.
///
/// A settings list of 10,000 entries is parsed on every request that looks an address up,
/// in wasm, where each pass over the bytes costs a few nanoseconds per byte: the bytes are
/// read once, with no iterator adapters, the end found on the way.
fn written_at(bytes: &[u8]) -> Option<(Written, usize)> {
    // an IPv6 address has a `:` among its first five bytes (a group has at most four
    // digits), an IPv4 address has none
    let head = bytes.get(..5).unwrap_or(bytes);
    if head.contains(&b':') {
        v6_bits(bytes).map(|(bits, end)| (Written::V6(bits), end))
    } else {
        v4_bits(bytes).map(|(bits, end)| (Written::V4(bits), end))
    }
}

/// A dotted-quad IPv4 address (four decimal parts of 0 to 255, without leading zeros) up
/// to the end or a `/`, and where it ends.
fn v4_bits(bytes: &[u8]) -> Option<(u32, usize)> {
    let (mut bits, mut parts) = (0u32, 0u32);
    let (mut part, mut digits, mut leading_zero) = (0u32, 0u32, false);
    let mut end = bytes.len();
    for (i, &c) in bytes.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 3 || leading_zero {
                return None;
            }
            leading_zero = digits == 0 && c == b'0';
            part = part * 10 + u32::from(c - b'0');
            digits += 1;
        } else if c == b'.' && digits > 0 && part <= 255 && parts < 3 {
            bits = bits << 8 | part;
            parts += 1;
            (part, digits, leading_zero) = (0, 0, false);
        } else if c == b'/' || c == b'"' {
            end = i;
            break;
        } else {
            return None;
        }
    }
    (digits > 0 && part <= 255 && parts == 3).then_some((bits << 8 | part, end))
}

/// An IPv6 address (eight groups of one to four hex digits, `::` once for a run of zero
/// groups, the last two groups possibly written as an IPv4 address) up to the end or a
/// `/`, and where it ends. The groups before and after `::` are accumulated as bits.
fn v6_bits(bytes: &[u8]) -> Option<(u128, usize)> {
    // a leading `:` only as the start of `::`
    if bytes.first() == Some(&b':') && bytes.get(1) != Some(&b':') {
        return None;
    }
    let mut groups = V6Groups::default();
    let (mut group, mut digits) = (0u16, 0usize);
    // the colons just read: 0, 1, or 2 for `::`
    let mut colons = 0;
    let mut end = bytes.len();
    for (i, &c) in bytes.iter().enumerate() {
        let d = hex_value(c);
        if d < 16 {
            if digits == 4 {
                return None;
            }
            (group, digits, colons) = (group << 4 | u16::from(d), digits + 1, 0);
        } else if c == b':' {
            if digits > 0 {
                groups.push(group)?;
                (group, digits, colons) = (0, 0, 1);
            } else if colons == 1 && !groups.after_gap {
                (groups.after_gap, colons) = (true, 2);
            } else if i == 0 {
                colons = 1;
            } else {
                return None;
            }
        } else if c == b'.' && digits > 0 {
            // the IPv4 tail, from the first digit of the group being read
            let start = i - digits;
            let (v4, v4_end) = v4_bits(bytes.get(start..)?)?;
            groups.push((v4 >> 16) as u16)?;
            groups.push(v4 as u16)?;
            return Some((groups.bits()?, start + v4_end));
        } else if c == b'/' || c == b'"' {
            end = i;
            break;
        } else {
            return None;
        }
    }
    if digits > 0 {
        groups.push(group)?;
    } else if colons != 2 {
        // a trailing single `:` (or nothing at all)
        return None;
    }
    Some((groups.bits()?, end))
}

/// The groups of an IPv6 address read so far: those before `::` (all of them without
/// one) and those after it, each run as bits, first group most significant.
#[derive(Default)]
struct V6Groups {
    front: u128,
    front_count: u32,
    back: u128,
    back_count: u32,
    after_gap: bool,
}

impl V6Groups {
    fn push(&mut self, group: u16) -> Option<()> {
        if self.front_count + self.back_count == 8 {
            return None;
        }
        if self.after_gap {
            self.back = self.back << 16 | u128::from(group);
            self.back_count += 1;
        } else {
            self.front = self.front << 16 | u128::from(group);
            self.front_count += 1;
        }
        Some(())
    }

    /// The address: eight groups, or fewer around a `::` standing for at least one.
    fn bits(&self) -> Option<u128> {
        if !self.after_gap {
            return (self.front_count == 8).then_some(self.front);
        }
        if self.front_count + self.back_count > 7 {
            return None;
        }
        // the front groups start the address (constant shifts: a variable 128-bit shift
        // is a library call in wasm)
        let mut front = self.front;
        for _ in self.front_count..8 {
            front <<= 16;
        }
        Some(front | self.back)
    }
}

/// The value of `c` as a hex digit, 16 or more when it is not one.
fn hex_value(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0xff,
    }
}

/// A prefix length of at most `width`: decimal digits, no sign, no leading zero.
fn parse_prefix(bytes: &[u8], width: u8) -> Option<u8> {
    if bytes.is_empty() || bytes.len() > 3 || (bytes.len() > 1 && bytes.first() == Some(&b'0')) {
        return None;
    }
    let mut n = 0u16;
    for &d in bytes {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u16::from(d - b'0');
    }
    u8::try_from(n).ok().filter(|p| *p <= width)
}

/// Refusals that name their cause more precisely than "not an address".
fn check_text(text: &str, expected: Expected) -> Result<(), NetError> {
    let problem = if text.is_empty() {
        Some(Problem::Empty)
    } else if text.chars().any(char::is_whitespace) {
        Some(Problem::Whitespace)
    } else if text.contains('%') {
        Some(Problem::Zone)
    } else if has_leading_zero(text) {
        Some(Problem::LeadingZero)
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(NetError::Refused {
            text: text.to_owned(),
            expected,
            problem,
        }),
    }
}

/// Whether a dotted IPv4 part of the address (alone or at the end of an IPv6 one) has a
/// part with a leading zero (`010.0.0.5`), which some parsers read as octal.
fn has_leading_zero(text: &str) -> bool {
    let address = text.split('/').next().unwrap_or(text);
    let dotted = address.rsplit(':').next().unwrap_or(address);
    dotted.contains('.')
        && dotted.split('.').any(|part| {
            part.len() > 1 && part.starts_with('0') && part.bytes().all(|b| b.is_ascii_digit())
        })
}

/// What a text was read as, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// A single address (a request value).
    Address,
    /// An address or CIDR (a settings entry).
    Range,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Address => "an IP address",
            Expected::Range => "an IP address or CIDR",
        })
    }
}

/// Why a text was refused before it was parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The text is empty.
    Empty,
    /// The text contains whitespace.
    Whitespace,
    /// The text has a zone index (`fe80::1%eth0`).
    Zone,
    /// An IPv4 part has a leading zero (`010.0.0.5`).
    LeadingZero,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Problem::Empty => "it is empty",
            Problem::Whitespace => "it contains whitespace",
            Problem::Zone => "zone indexes (%...) are not allowed",
            Problem::LeadingZero => {
                "an IPv4 part has a leading zero, which some parsers read as octal"
            }
        })
    }
}

/// Why a text is not an address or a CIDR range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// Refused for a cause named in the message.
    #[error("{text:?} is not {expected}: {problem}")]
    Refused {
        /// The text.
        text: String,
        /// What it was read as.
        expected: Expected,
        /// Why it was refused.
        problem: Problem,
    },
    /// Not an address at all.
    #[error("{text:?} is not {expected}")]
    NotAnAddress {
        /// The text.
        text: String,
        /// What it was read as.
        expected: Expected,
    },
    /// The prefix length is not a number from 0 to the family's width.
    #[error(
        "{text:?} has an invalid prefix length: 0 to {width} for IPv{family}, without leading zeros",
        family = if *width == 32 { 4 } else { 6 }
    )]
    Prefix {
        /// The text.
        text: String,
        /// The address family's width in bits (32 or 128).
        width: u8,
    },
    /// Bits below the prefix are set.
    #[error("{text:?} has host bits set; write the network address {network:?}")]
    HostBits {
        /// The text.
        text: String,
        /// The network address to write instead, in the family written.
        network: String,
    },
}

/// An allow-list of CIDR ranges, in settings order.
///
/// Decoded from a list of strings. When settings are validated every entry is parsed: the
/// first that does not parse, or that repeats an earlier range, is refused at `path[i]`.
/// When `validate` re-reads them ([`policy_decode::settings::is_reread`]) the list is kept as the
/// JSON text it was written in, and read the first time an address is looked up, each
/// entry parsed straight into the index: a request without address pays no more for the
/// list than the host's copy of it. An entry that does not parse (possible only in settings
/// `validate_settings` refused) allows nothing.
///
/// Membership is one hash lookup per distinct prefix length among the entries (at most 33
/// for IPv4, 129 for IPv6), never a scan of the entries.
#[derive(Clone, Debug, Default)]
pub struct CidrList {
    /// The list as written, a JSON list of strings; `None`: no entry.
    raw: Option<Box<RawValue>>,
    index: OnceCell<Index>,
}

impl CidrList {
    /// The list of `entries`, in this order.
    pub fn new(entries: Vec<Cidr>) -> Self {
        let texts: Vec<String> = entries.iter().map(ToString::to_string).collect();
        CidrList {
            raw: serde_json::value::to_raw_value(&texts).ok(),
            index: OnceCell::new(),
        }
    }

    /// The list written `raw` (a JSON list of strings), checked unless settings are
    /// re-read: every entry must parse and be a range not listed before (refusals name
    /// `[i]`).
    pub fn from_raw(raw: Box<RawValue>) -> Result<Self, SettingsError> {
        let list = CidrList {
            raw: Some(raw),
            index: OnceCell::new(),
        };
        if !is_reread() {
            let index = Index::checked(list.text())?;
            let _ = list.index.set(index);
        }
        Ok(list)
    }

    /// The JSON text of the list.
    fn text(&self) -> &str {
        self.raw.as_deref().map_or("[]", RawValue::get)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.index().count
    }

    /// Whether the list has no entry (allows nothing).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `address` lies in one of the entries.
    pub fn contains(&self, address: IpAddress) -> bool {
        self.index().contains(address)
    }

    /// Whether `range` lies entirely in one of the entries (one lookup per prefix length
    /// of its family no longer than `range`'s).
    ///
    /// ```
    /// use kube_values::net::{Cidr, CidrList};
    /// let list: CidrList = serde_json::from_str(r#"["10.0.0.0/16", "10.1.0.0/24"]"#).unwrap();
    /// let covers = |r: &str| list.contains_range(&Cidr::parse(r).unwrap());
    /// assert!(covers("10.0.3.0/24") && covers("10.1.0.128/25") && covers("10.0.0.1"));
    /// assert!(!covers("10.1.0.0/16") && !covers("10.0.0.0/8") && !covers("::/0"));
    /// ```
    pub fn contains_range(&self, range: &Cidr) -> bool {
        self.index().contains_range(range)
    }

    /// The index of the first entry that is the same range as an earlier one
    /// (`10.0.0.5` and `::ffff:10.0.0.5` are the same).
    pub fn first_duplicate(&self) -> Option<usize> {
        self.index().first_duplicate
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| Index::lenient(self.text()))
    }
}

impl PartialEq for CidrList {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl From<Vec<Cidr>> for CidrList {
    fn from(entries: Vec<Cidr>) -> Self {
        CidrList::new(entries)
    }
}

/// The entries between brackets in settings order, each in its canonical form
/// (`[10.0.0.0/24, 2001:db8::/32]`), the first [`message::LISTED`] of a long list and a
/// count of the rest.
impl fmt::Display for CidrList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let index = self.index();
        let shown = message::join_counted(index.shown.iter(), index.count);
        write!(f, "[{shown}]")
    }
}

/// Decodes a list of strings, each a [`Cidr`] (refusals name `path[i]`).
impl<'de> Deserialize<'de> for CidrList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        policy_decode::settings::converted(CidrList::from_raw(raw))
    }
}

/// Calls `f` with each entry of the JSON list `text` (a list `validate_settings` checked),
/// in order: the range it writes, if any, and its text; stops at anything that is not a
/// string (the entries read so far are all that a list that is not one allows).
///
/// A scanner of its own rather than a deserializer, and the ranges read straight from the
/// JSON text: the list is read on every request that looks an address up, in wasm, where
/// every pass over its bytes costs about two nanoseconds a byte. A string that does not
/// end where its range does (escapes, or no range at all) is decoded as JSON first.
fn each_entry(text: &str, mut f: impl FnMut(Option<Cidr>, &str)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    loop {
        while bytes
            .get(i)
            .is_some_and(|c| matches!(c, b'[' | b',' | b' ' | b'\t' | b'\n' | b'\r'))
        {
            i += 1;
        }
        if bytes.get(i) != Some(&b'"') {
            return;
        }
        let start = i + 1;
        let read = bytes.get(start..).and_then(Cidr::read_at);
        if let Some((range, length)) = read
            && bytes.get(start + length) == Some(&b'"')
        {
            f(
                Some(range),
                text.get(start..start + length).unwrap_or_default(),
            );
            i = start + length + 1;
            continue;
        }
        let Some((string, end)) = json_string(text, i) else {
            return;
        };
        f(Cidr::read(&string), &string);
        i = end + 1;
    }
}

/// The JSON string whose opening quote is at `open` in `text`, decoded, and the index of
/// its closing quote.
fn json_string(text: &str, open: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let mut end = open + 1;
    while let Some(&c) = bytes.get(end) {
        match c {
            b'"' => break,
            b'\\' => end += 2,
            _ => end += 1,
        }
    }
    let quoted = text.get(open..=end)?;
    serde_json::from_str(quoted).ok().map(|s| (s, end))
}

/// The membership index of a [`CidrList`]: per family, one hash set of network addresses
/// per prefix length present. An IPv4 network is its 32 bits; an IPv6 network of prefix
/// /64 or shorter is its first 64 bits, a longer one its 128 bits: keys as small as the
/// prefix allows, so that the tables a request builds stay small. It also counts the
/// entries and keeps the first [`message::LISTED`] for messages.
#[derive(Clone, Debug, Default)]
struct Index {
    v4: PrefixSets<u32>,
    v6_short: PrefixSets<u64>,
    v6_long: PrefixSets<(u64, u64)>,
    first_duplicate: Option<usize>,
    count: usize,
    shown: Vec<String>,
    room: Room,
}

impl Index {
    /// An index for about `entries` entries.
    fn sized(entries: usize) -> Self {
        Index {
            room: Room {
                reserved: 0,
                limit: 4 * entries,
                left: entries,
            },
            ..Index::default()
        }
    }

    /// Every entry of the JSON list `text` parsed and indexed; the first whose type is
    /// wrong, that does not parse or that repeats an earlier range is refused at `[i]`.
    fn checked(text: &str) -> Result<Self, SettingsError> {
        // types first, named by position
        let texts: NameList =
            policy_decode::settings::decode(policy_decode::settings::Raw::Json(text))?;
        let mut index = Index::sized(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let entry = Cidr::parse(text)
                .map_err(|e| SettingsError::new(format!("[{i}]"), e.to_string()))?;
            if !index.add(Some(entry), text) {
                return Err(SettingsError::new(
                    format!("[{i}]"),
                    format!("duplicate entry {text:?}: the range {entry} is listed before"),
                ));
            }
        }
        Ok(index)
    }

    /// The entries of the JSON list `text` that parse, indexed (what it holds up to a
    /// problem, if it is not a list of strings).
    fn lenient(text: &str) -> Self {
        // about one entry per 16 bytes of JSON (`"10.20.30.0/24",`): a set sized for the
        // entries left is seldom rehashed
        let mut index = Index::sized(text.len() / 16);
        each_entry(text, |entry, written| {
            index.add(entry, written);
        });
        index
    }

    /// Adds the next entry, written `text`, when it parsed; whether it is a range not
    /// listed before.
    fn add(&mut self, entry: Option<Cidr>, text: &str) -> bool {
        let i = self.count;
        self.count += 1;
        self.room.left = self.room.left.saturating_sub(1).max(1);
        if self.shown.len() < message::LISTED {
            self.shown
                .push(entry.map_or_else(|| text.to_owned(), |e| e.to_string()));
        }
        let Some(entry) = entry else {
            return true;
        };
        let p = entry.prefix;
        let new = match entry.network {
            IpAddress::V4(network) => self.v4.insert(p, network, &mut self.room),
            IpAddress::V6(network) if p <= 64 => {
                self.v6_short
                    .insert(p, (network >> 64) as u64, &mut self.room)
            }
            IpAddress::V6(network) => {
                let key = ((network >> 64) as u64, network as u64);
                self.v6_long.insert(p, key, &mut self.room)
            }
        };
        if !new && self.first_duplicate.is_none() {
            self.first_duplicate = Some(i);
        }
        new
    }

    /// Whether a range holds `address`: one lookup per prefix length of its family.
    fn contains(&self, address: IpAddress) -> bool {
        match address {
            IpAddress::V4(a) => self
                .v4
                .sets
                .iter()
                .any(|(p, set)| set.contains(&(a & mask_32(*p)))),
            IpAddress::V6(a) => {
                let short = |(p, set): &(u8, HashSet<u64, Mix>)| {
                    set.contains(&(((a & mask_128(*p)) >> 64) as u64))
                };
                let long = |(p, set): &(u8, HashSet<(u64, u64), Mix>)| {
                    let network = a & mask_128(*p);
                    set.contains(&((network >> 64) as u64, network as u64))
                };
                self.v6_short.sets.iter().any(short) || self.v6_long.sets.iter().any(long)
            }
        }
    }

    /// Whether an entry holds every address of `range`: one lookup per prefix length of
    /// its family no longer than `range`'s.
    fn contains_range(&self, range: &Cidr) -> bool {
        let within = range.prefix;
        match range.network {
            IpAddress::V4(a) => self
                .v4
                .sets
                .iter()
                .any(|(p, set)| *p <= within && set.contains(&(a & mask_32(*p)))),
            IpAddress::V6(a) => {
                let short = |(p, set): &(u8, HashSet<u64, Mix>)| {
                    *p <= within && set.contains(&(((a & mask_128(*p)) >> 64) as u64))
                };
                let long = |(p, set): &(u8, HashSet<(u64, u64), Mix>)| {
                    let network = a & mask_128(*p);
                    *p <= within && set.contains(&((network >> 64) as u64, network as u64))
                };
                self.v6_short.sets.iter().any(short) || self.v6_long.sets.iter().any(long)
            }
        }
    }
}

/// How many keys a new set of the index has room for: the entries left, so that it is
/// never rehashed, until four times the list's length is reserved (a list of many prefix
/// lengths); sets created after that grow as they fill.
#[derive(Clone, Copy, Debug, Default)]
struct Room {
    reserved: usize,
    limit: usize,
    left: usize,
}

impl Room {
    fn take(&mut self) -> usize {
        if self.reserved + self.left > self.limit {
            return 0;
        }
        self.reserved += self.left;
        self.left
    }
}

/// One hash set of network keys per prefix length, in order of first appearance.
#[derive(Clone, Debug)]
struct PrefixSets<K> {
    sets: Vec<(u8, HashSet<K, Mix>)>,
    /// For each prefix length, 1 + the position of its set in `sets` (0: none).
    slot: [u8; 129],
}

impl<K> Default for PrefixSets<K> {
    fn default() -> Self {
        PrefixSets {
            sets: Vec::new(),
            slot: [0; 129],
        }
    }
}

impl<K: std::hash::Hash + Eq> PrefixSets<K> {
    /// Adds `key` to the set of `prefix` (created with the room `room` gives); whether it
    /// was new.
    fn insert(&mut self, prefix: u8, key: K, room: &mut Room) -> bool {
        let Some(slot) = self.slot.get_mut(usize::from(prefix)) else {
            return false;
        };
        if *slot == 0 {
            let set = HashSet::with_capacity_and_hasher(room.take(), Mix::default());
            self.sets.push((prefix, set));
            // at most 129 prefix lengths
            *slot = u8::try_from(self.sets.len()).unwrap_or(u8::MAX);
        }
        match self.sets.get_mut(usize::from(*slot) - 1) {
            Some((_, set)) => set.insert(key),
            None => false,
        }
    }
}

/// A fast hasher for the index's integer keys (the murmur3 finaliser per word). Keys come
/// from the operator's settings; the tenant's addresses are only looked up.
type Mix = BuildHasherDefault<MixHasher>;

/// The state of [`Mix`].
#[derive(Clone, Copy, Debug, Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        let mut x = self.0 ^ n;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        self.0 = x.wrapping_add(n.rotate_left(17));
    }

    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn cidr(s: &str) -> Cidr {
        Cidr::parse(s).unwrap()
    }

    fn addr(s: &str) -> IpAddress {
        IpAddress::parse(s).unwrap()
    }

    #[rstest]
    #[case("10.20.0.0/16", "10.20.0.0/16")]
    #[case("192.168.1.2", "192.168.1.2")]
    #[case("192.168.1.2/32", "192.168.1.2")]
    #[case("0.0.0.0/0", "0.0.0.0/0")]
    #[case("2001:db8:1::/64", "2001:db8:1::/64")]
    #[case("2001:DB8:1::/64", "2001:db8:1::/64")]
    #[case("2001:0db8:0001::/64", "2001:db8:1::/64")]
    #[case("2001:db8::1", "2001:db8::1")]
    #[case("2001:db8::1/128", "2001:db8::1")]
    #[case("::/0", "::/0")]
    #[case("::ffff:10.0.0.5", "10.0.0.5")]
    #[case("::ffff:10.0.0.0/104", "10.0.0.0/8")]
    #[case("::ffff:0:0/96", "0.0.0.0/0")]
    #[case("::ffff:a00:0/120", "10.0.0.0/24")]
    #[case("::/80", "::/80")]
    fn entries_parse_to_their_canonical_form(#[case] text: &str, #[case] shown: &str) {
        assert_eq!(cidr(text).to_string(), shown);
        assert_eq!(cidr(shown), cidr(text), "the canonical form parses back");
    }

    #[test]
    fn single_hosts_are_full_length_prefixes_without_32_on_ipv6() {
        assert_eq!(cidr("192.168.1.2").prefix(), 32);
        assert_eq!(cidr("2001:db8::1").prefix(), 128);
        assert_eq!(cidr("2001:db8::1"), Cidr::host(addr("2001:db8::1")));
        // an IPv6 /32 is a network of 2^96 addresses, never a host
        assert!(!cidr("2001:db8::/32").is_host());
        assert!(cidr("2001:db8::/32").contains(addr("2001:db8:ffff::1")));
        assert!(!cidr("2001:db8::1").contains(addr("2001:db8::2")));
    }

    #[rstest]
    #[case("", r#""" is not an IP address or CIDR: it is empty"#)]
    #[case(
        " 10.0.0.0/8",
        r#"" 10.0.0.0/8" is not an IP address or CIDR: it contains whitespace"#
    )]
    #[case(
        "10.0.0.0/8 ",
        r#""10.0.0.0/8 " is not an IP address or CIDR: it contains whitespace"#
    )]
    #[case(
        "10.0.0.0 /8",
        r#""10.0.0.0 /8" is not an IP address or CIDR: it contains whitespace"#
    )]
    #[case(
        "fe80::1%eth0",
        r#""fe80::1%eth0" is not an IP address or CIDR: zone indexes (%...) are not allowed"#
    )]
    #[case(
        "fe80::%eth0/64",
        r#""fe80::%eth0/64" is not an IP address or CIDR: zone indexes (%...) are not allowed"#
    )]
    #[case("010.0.0.0/8", r#""010.0.0.0/8" is not an IP address or CIDR: an IPv4 part has a leading zero, which some parsers read as octal"#)]
    #[case("::ffff:010.0.0.1", r#""::ffff:010.0.0.1" is not an IP address or CIDR: an IPv4 part has a leading zero, which some parsers read as octal"#)]
    #[case("10.0.0/8", r#""10.0.0/8" is not an IP address or CIDR"#)]
    #[case("10.1", r#""10.1" is not an IP address or CIDR"#)]
    #[case("0x0a.0.0.1", r#""0x0a.0.0.1" is not an IP address or CIDR"#)]
    #[case("256.0.0.0", r#""256.0.0.0" is not an IP address or CIDR"#)]
    #[case("garbage", r#""garbage" is not an IP address or CIDR"#)]
    #[case("/8", r#""/8" is not an IP address or CIDR"#)]
    #[case(
        "10.0.0.0/8/8",
        r#""10.0.0.0/8/8" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#
    )]
    #[case(
        "10.0.0.0/33",
        r#""10.0.0.0/33" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#
    )]
    #[case(
        "10.0.0.0/",
        r#""10.0.0.0/" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#
    )]
    #[case(
        "10.0.0.0/08",
        r#""10.0.0.0/08" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#
    )]
    #[case(
        "10.0.0.0/+8",
        r#""10.0.0.0/+8" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#
    )]
    #[case(
        "10.0.0.0/-1",
        r#""10.0.0.0/-1" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#
    )]
    #[case("2001:db8::/129", r#""2001:db8::/129" has an invalid prefix length: 0 to 128 for IPv6, without leading zeros"#)]
    #[case("2001:db8::/1000", r#""2001:db8::/1000" has an invalid prefix length: 0 to 128 for IPv6, without leading zeros"#)]
    #[case(
        "10.0.0.1/24",
        r#""10.0.0.1/24" has host bits set; write the network address "10.0.0.0/24""#
    )]
    #[case(
        "10.20.30.40/16",
        r#""10.20.30.40/16" has host bits set; write the network address "10.20.0.0/16""#
    )]
    #[case(
        "2001:db8:1::1/64",
        r#""2001:db8:1::1/64" has host bits set; write the network address "2001:db8:1::/64""#
    )]
    #[case("::ffff:10.0.0.1/104", r#""::ffff:10.0.0.1/104" has host bits set; write the network address "::ffff:10.0.0.0/104""#)]
    #[case(
        "::ffff:0:0/95",
        r#""::ffff:0:0/95" has host bits set; write the network address "::fffe:0:0/95""#
    )]
    fn refused_entries_say_why(#[case] text: &str, #[case] message: &str) {
        assert_eq!(Cidr::parse(text).unwrap_err().to_string(), message);
    }

    #[rstest]
    #[case("", r#""" is not an IP address: it is empty"#)]
    #[case("10.0.0.5/32", r#""10.0.0.5/32" is not an IP address"#)]
    #[case(
        " 10.0.0.5",
        r#"" 10.0.0.5" is not an IP address: it contains whitespace"#
    )]
    #[case("010.0.0.5", r#""010.0.0.5" is not an IP address: an IPv4 part has a leading zero, which some parsers read as octal"#)]
    #[case("10.0.0.5.", r#""10.0.0.5." is not an IP address"#)]
    fn refused_addresses_say_why(#[case] text: &str, #[case] message: &str) {
        assert_eq!(IpAddress::parse(text).unwrap_err().to_string(), message);
    }

    #[test]
    fn ipv4_mapped_addresses_are_ipv4() {
        assert_eq!(addr("::ffff:10.0.0.5"), IpAddress::V4(0x0a00_0005));
        assert_eq!(addr("::FFFF:a00:5"), addr("10.0.0.5"));
        assert!(cidr("10.0.0.0/24").contains(addr("::ffff:10.0.0.5")));
        assert!(cidr("::ffff:10.0.0.0/120").contains(addr("10.0.0.5")));
        // an IPv6 range never contains an IPv4 address, even where it spans ::ffff:0:0/96
        assert!(!cidr("::/0").contains(addr("10.0.0.5")));
        assert!(!cidr("::/80").contains(addr("::ffff:10.0.0.5")));
        assert!(cidr("::/0").contains(addr("2001:db8::1")));
        // IPv4-compatible (deprecated) addresses are plain IPv6
        assert_eq!(addr("::10.0.0.5"), IpAddress::V6(0x0a00_0005));
        assert!(!cidr("10.0.0.0/8").contains(addr("::10.0.0.5")));
    }

    #[test]
    fn list_membership_and_display() {
        let list: CidrList = serde_json::from_str(
            r#"["10.20.0.0/16", "192.168.1.2", "2001:db8:1::/64", "2001:db8::1", "::ffff:172.16.0.0/108"]"#,
        )
        .unwrap();
        for a in [
            "10.20.0.1",
            "10.20.255.255",
            "192.168.1.2",
            "::ffff:192.168.1.2",
            "2001:db8:1::10",
            "2001:db8::1",
            "172.16.3.4",
        ] {
            assert!(list.contains(addr(a)), "{a}");
        }
        for a in [
            "10.21.0.0",
            "192.168.1.3",
            "2001:db8:2::1",
            "2001:db8::2",
            "172.32.0.0",
            "::",
        ] {
            assert!(!list.contains(addr(a)), "{a}");
        }
        assert_eq!(
            list.to_string(),
            "[10.20.0.0/16, 192.168.1.2, 2001:db8:1::/64, 2001:db8::1, 172.16.0.0/12]"
        );
        assert_eq!(list.first_duplicate(), None);
        let empty = CidrList::default();
        assert!(!empty.contains(addr("10.0.0.1")) && empty.to_string() == "[]");
    }

    #[test]
    fn duplicates_are_the_same_range_however_written() {
        let list = CidrList::new(vec![
            cidr("10.0.0.5"),
            cidr("10.0.0.0/24"),
            cidr("::ffff:10.0.0.5"),
        ]);
        assert_eq!(list.first_duplicate(), Some(2));
        let overlapping = CidrList::new(vec![cidr("10.0.0.0/24"), cidr("10.0.0.0/16")]);
        assert_eq!(overlapping.first_duplicate(), None);
    }

    #[test]
    fn refusals_in_a_settings_list_name_the_entry() {
        #[derive(Debug, serde::Deserialize)]
        struct S {
            #[allow(dead_code)]
            allowed: CidrList,
        }
        let err = policy_decode::settings::decode::<S>(policy_decode::settings::Raw::Json(
            r#"{"allowed": ["10.0.0.0/24", "10.0.0.1/24"]}"#,
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"allowed[1]: "10.0.0.1/24" has host bits set; write the network address "10.0.0.0/24""#
        );
        let err = policy_decode::settings::decode::<S>(
            &serde_json::json!({"allowed": ["10.0.0.0/8", 7]}),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("allowed[1]: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn long_lists_are_shown_cut() {
        let list = CidrList::new((0..30u32).map(|i| Cidr::host(IpAddress::V4(i))).collect());
        assert!(list.to_string().ends_with("0.0.0.19, ... (10 more)]"));
    }

    /// What [`each_entry`] hands over for a list: the range and the text of each entry.
    fn scanned(json: &str) -> Vec<(Option<Cidr>, String)> {
        let mut out = Vec::new();
        each_entry(json, |range, text| out.push((range, text.to_owned())));
        out
    }

    #[test]
    fn entries_are_read_from_the_json_text() {
        let expected = |texts: &[&str]| -> Vec<(Option<Cidr>, String)> {
            texts
                .iter()
                .map(|t| (Cidr::parse(t).ok(), t.to_string()))
                .collect()
        };
        // escapes are decoded; an entry that is no range is handed over as text
        assert_eq!(
            scanned(
                r#"[ "10.0.0.0/8" ,"\u0031\u0030.0.0.1", "x\"y",
                "10.0.0.0/8x", "2001:db8::/32"]"#
            ),
            expected(&[
                "10.0.0.0/8",
                "10.0.0.1",
                "x\"y",
                "10.0.0.0/8x",
                "2001:db8::/32"
            ])
        );
        assert_eq!(scanned("[]"), expected(&[]));
        // what is not a list of strings ends the list (fail closed: nothing more allowed)
        assert_eq!(
            scanned(r#"["10.0.0.0/8", 7, "11.0.0.0/8"]"#),
            expected(&["10.0.0.0/8"])
        );
        assert_eq!(scanned(r#""10.0.0.0/8""#), expected(&["10.0.0.0/8"]));
        assert_eq!(scanned(r#"{"a": "10.0.0.0/8"}"#), expected(&[]));
        assert_eq!(scanned(r#"["10.0.0.0/8"#), expected(&[]));
    }

    #[test]
    fn re_read_lists_are_read_when_an_address_is_looked_up() {
        let json = r#"["10.0.0.0/24", "bad", "10.0.1.5/24", "2001:db8::/32"]"#;
        assert!(serde_json::from_str::<CidrList>(json).is_err());
        let list: CidrList =
            policy_decode::settings::reread(|| serde_json::from_str(json)).unwrap();
        assert!(list.index.get().is_none(), "kept as JSON text");
        assert!(list.contains(addr("10.0.0.7")) && list.contains(addr("2001:db8::1")));
        // entries validate_settings refuses allow nothing
        assert!(!list.contains(addr("10.0.1.5")) && !list.contains(addr("10.0.1.0")));
        assert_eq!(list.len(), 4);
        assert_eq!(
            list.to_string(),
            "[10.0.0.0/24, bad, 10.0.1.5/24, 2001:db8::/32]"
        );
    }

    /// Random IPv4 or IPv6 networks with a prefix length, host bits possibly set.
    fn any_v4() -> impl Strategy<Value = (u32, u8)> {
        (any::<u32>(), 0u8..=32)
    }

    fn any_v6() -> impl Strategy<Value = (u128, u8)> {
        (any::<u128>(), 0u8..=128)
    }

    #[test]
    fn masked_ranges_refuse_what_entries_refuse_but_host_bits() {
        for text in [
            "",
            " 10.0.0.0/8",
            "10.0.0.0/33",
            "10.0.0.0/08",
            "010.0.0.0/8",
            "fe80::/10%x",
            "10.1/16",
            "10.0.0.0/",
        ] {
            let refused = Cidr::parse_masked(text).unwrap_err();
            assert!(!matches!(refused, NetError::HostBits { .. }), "{text}");
            assert_eq!(refused, Cidr::parse(text).unwrap_err(), "{text}");
        }
        assert_eq!(Cidr::parse_masked("10.0.0.5").unwrap(), cidr("10.0.0.5"));
        assert_eq!(
            Cidr::parse_masked("::ffff:10.0.0.1/104").unwrap(),
            cidr("10.0.0.0/8")
        );
        assert_eq!(
            Cidr::parse_masked("2001:db8::1/32").unwrap(),
            cidr("2001:db8::/32")
        );
    }

    proptest! {
        /// An IPv4 address is in a range iff it lies between the network and its last
        /// address (a numeric oracle, not the mask).
        #[test]
        fn v4_containment_is_the_numeric_interval((bits, p) in any_v4(), a in any::<u32>()) {
            let network = bits & mask_32(p);
            let net = Cidr::parse(&format!("{}/{p}", Ipv4Addr::from(network))).unwrap();
            let last = u64::from(network) + (1u64 << (32 - u32::from(p))) - 1;
            let inside = u64::from(a) >= u64::from(network) && u64::from(a) <= last;
            prop_assert_eq!(net.contains(IpAddress::V4(a)), inside);
            prop_assert_eq!(net.contains(IpAddress::V4(a)), a & mask_32(p) == network);
            prop_assert!(!net.contains(IpAddress::V6(u128::from(a))));
        }

        #[test]
        fn v6_containment_is_the_numeric_interval((bits, p) in any_v6(), a in any::<u128>()) {
            prop_assume!(a & MAPPED_MASK != MAPPED_NETWORK);
            let network = bits & mask_128(p);
            prop_assume!(!(p >= MAPPED_PREFIX && network & MAPPED_MASK == MAPPED_NETWORK));
            let net = Cidr::parse(&format!("{}/{p}", Ipv6Addr::from(network))).unwrap();
            let last = network | !mask_128(p);
            prop_assert_eq!(net.contains(IpAddress::V6(a)), a >= network && a <= last);
        }

        /// Host bits are refused exactly when set, and the network suggested parses to the
        /// range of the masked address.
        #[test]
        fn host_bits_are_refused_with_the_network_to_write((bits, p) in any_v4(), (bits6, p6) in any_v6()) {
            for (text, masked, host_bits) in [
                (format!("{}/{p}", Ipv4Addr::from(bits)), format!("{}/{p}", Ipv4Addr::from(bits & mask_32(p))), bits & !mask_32(p) != 0),
                (format!("{}/{p6}", Ipv6Addr::from(bits6)), format!("{}/{p6}", Ipv6Addr::from(bits6 & mask_128(p6))), bits6 & !mask_128(p6) != 0),
            ] {
                match Cidr::parse(&text) {
                    Ok(_) => prop_assert!(!host_bits, "{}", text),
                    Err(NetError::HostBits { network, .. }) => {
                        prop_assert!(host_bits, "{}", text);
                        prop_assert_eq!(&network, &masked);
                        prop_assert!(Cidr::parse(&network).is_ok());
                    }
                    Err(e) => prop_assert!(false, "{}: {}", text, e),
                }
            }
        }

        /// `::ffff:a.b.c.d` is `a.b.c.d`, as a value and as an entry (`/96 + p` is `/p`).
        #[test]
        fn v4_mapped_is_v4((bits, p) in any_v4(), a in any::<u32>()) {
            let v4 = Ipv4Addr::from(a);
            prop_assert_eq!(addr(&format!("::ffff:{v4}")), addr(&v4.to_string()));
            prop_assert_eq!(addr(&Ipv4Addr::from(a).to_ipv6_mapped().to_string()), IpAddress::V4(a));
            let network = Ipv4Addr::from(bits & mask_32(p));
            let mapped = cidr(&format!("::ffff:{network}/{}", u16::from(p) + 96));
            prop_assert_eq!(mapped, cidr(&format!("{network}/{p}")));
            prop_assert_eq!(mapped.contains(addr(&format!("::ffff:{v4}"))), mapped.contains(IpAddress::V4(a)));
        }

        /// What an entry shows parses back to the same entry.
        #[test]
        fn display_round_trips((bits, p) in any_v4(), (bits6, p6) in any_v6()) {
            for c in [
                Cidr::parse(&format!("{}/{p}", Ipv4Addr::from(bits & mask_32(p)))).unwrap(),
                Cidr::parse(&format!("{}/{p6}", Ipv6Addr::from(bits6 & mask_128(p6)))).unwrap(),
            ] {
                prop_assert_eq!(cidr(&c.to_string()), c);
            }
        }

        /// The index answers as a scan of every entry would.
        #[test]
        fn index_is_a_scan(
            entries in proptest::collection::vec(prop_oneof![
                any_v4().prop_map(|(b, p)| (u128::from(b) | MAPPED_NETWORK, p + 96)),
                // few distinct IPv6 networks, so that addresses near them are drawn
                (0u128..4, 0u8..=128).prop_map(|(b, p)| (b << 120 | b, p)),
            ], 0..40),
            probes in proptest::collection::vec(prop_oneof![
                any::<u32>().prop_map(IpAddress::V4),
                (0u128..4, any::<u16>()).prop_map(|(b, low)| IpAddress::from_v6(b << 120 | u128::from(low))),
            ], 1..20),
        ) {
            let ranges: Vec<Cidr> = entries.iter().map(|&(b, p)| {
                Written::V6(b & mask_128(p)).range(p)
            }).collect();
            let list = CidrList::new(ranges.clone());
            for a in probes {
                let scan = ranges.iter().any(|c| c.contains(a));
                prop_assert_eq!(list.contains(a), scan, "{}", a);
            }
        }

        /// Range containment answers as a scan of every entry with [`Cidr::covers`] would,
        /// and `covers` is the numeric interval inclusion.
        #[test]
        fn range_containment_is_a_scan(
            entries in proptest::collection::vec(prop_oneof![
                (0u32..4, 0u8..=32).prop_map(|(b, p)| (u128::from(b << 28 | b) | MAPPED_NETWORK, p + 96)),
                (0u128..4, 0u8..=128).prop_map(|(b, p)| (b << 120 | b, p)),
            ], 0..30),
            probes in proptest::collection::vec(prop_oneof![
                (0u32..4, any::<u16>(), 0u8..=32).prop_map(|(b, low, p)| (u128::from(b << 28 | u32::from(low)) | MAPPED_NETWORK, p + 96)),
                (0u128..4, any::<u16>(), 0u8..=128).prop_map(|(b, low, p)| (b << 120 | u128::from(low), p)),
            ], 1..20),
        ) {
            let range = |(b, p): (u128, u8)| Written::V6(b & mask_128(p)).range(p);
            let ranges: Vec<Cidr> = entries.into_iter().map(range).collect();
            let list = CidrList::new(ranges.clone());
            for probe in probes.into_iter().map(range) {
                let scan = ranges.iter().any(|c| c.covers(&probe));
                prop_assert_eq!(list.contains_range(&probe), scan, "{}", probe);
                for c in &ranges {
                    let interval = |r: &Cidr| match r.network {
                        IpAddress::V4(n) => (u128::from(n), u128::from(n | !mask_32(r.prefix)), 4),
                        IpAddress::V6(n) => (n, n | !mask_128(r.prefix), 6),
                    };
                    let ((lo, hi, f), (plo, phi, pf)) = (interval(c), interval(&probe));
                    prop_assert_eq!(c.covers(&probe), f == pf && lo <= plo && phi <= hi, "{} {}", c, probe);
                }
            }
        }

        /// A request range reads as the entry its masked text writes; only host bits
        /// differ from a settings entry.
        #[test]
        fn masked_ranges_are_their_networks((bits, p) in any_v4(), (bits6, p6) in any_v6()) {
            for (text, masked) in [
                (format!("{}/{p}", Ipv4Addr::from(bits)), format!("{}/{p}", Ipv4Addr::from(bits & mask_32(p)))),
                (format!("{}/{p6}", Ipv6Addr::from(bits6)), format!("{}/{p6}", Ipv6Addr::from(bits6 & mask_128(p6)))),
            ] {
                prop_assert_eq!(Cidr::parse_masked(&text).unwrap(), cidr(&masked));
            }
        }

        /// The one-pass parser accepts exactly what the standard library's parsers accept,
        /// with the same value: on addresses written in every textual form (compressed or
        /// not, leading zeros in groups, either case, an IPv4 tail), on single-character
        /// edits of them, and on arbitrary text.
        #[test]
        fn one_pass_parser_is_the_standard_one(
            bits in any::<u128>(),
            zeros in 0u128..256,
            form in 0u8..4,
            edit in (0usize..48, 0usize..3, proptest::sample::select(&[':', '.', '0', 'f', 'F', '9', '/', ' ', '%', 'g'][..])),
            text in "[0-9a-fA-F:.]{0,24}",
        ) {
            // runs of zero groups, so that `::` forms occur
            let bits = bits & !(zeros << 48) & !(zeros << 8);
            let v6 = Ipv6Addr::from(bits);
            let segments = v6.segments();
            let written_forms = [
                v6.to_string(),
                segments.iter().map(|g| format!("{g:04X}")).collect::<Vec<_>>().join(":"),
                format!("::ffff:{}", Ipv4Addr::from(bits as u32)),
                format!("{}:{}", segments.iter().take(6).map(|g| format!("{g:x}")).collect::<Vec<_>>().join(":"), Ipv4Addr::from(bits as u32)),
            ];
            let written_form = written_forms.get(usize::from(form)).cloned().unwrap_or_default();
            let mut edited: Vec<char> = written_form.chars().collect();
            let (at, how, c) = edit;
            let at = at.min(edited.len());
            match how {
                0 => edited.insert(at, c),
                1 if at < edited.len() => { edited.remove(at); }
                _ if at < edited.len() => edited[at] = c,
                _ => {}
            }
            let edited: String = edited.into_iter().collect();
            let v4_text = Ipv4Addr::from(bits as u32).to_string();
            for t in [written_form.as_str(), edited.as_str(), text.as_str(), v4_text.as_str()] {
                let ours = written(t);
                let std = if t.contains(':') {
                    t.parse::<Ipv6Addr>().ok().map(|a| Written::V6(u128::from(a)))
                } else {
                    t.parse::<Ipv4Addr>().ok().map(|a| Written::V4(u32::from(a)))
                };
                prop_assert_eq!(ours, std, "{:?}", t);
            }
        }

        /// The scanner reads a list as serde_json does, compact or pretty, escapes and all,
        /// and the ranges it reads straight from the text are the entries' ranges.
        #[test]
        fn the_scanner_reads_lists_as_json_does(
            entries in proptest::collection::vec(prop_oneof![
                "[0-9./:a-f]{0,18}",
                any_v4().prop_map(|(b, p)| format!("{}/{p}", Ipv4Addr::from(b & mask_32(p)))),
                any_v6().prop_map(|(b, p)| format!("{}/{p}", Ipv6Addr::from(b & mask_128(p)))),
                "\\PC{0,6}",
            ], 0..12),
            pretty in any::<bool>(),
        ) {
            let json = if pretty {
                serde_json::to_string_pretty(&entries).unwrap()
            } else {
                serde_json::to_string(&entries).unwrap()
            };
            let expected: Vec<(Option<Cidr>, String)> =
                entries.iter().map(|t| (Cidr::parse(t).ok(), t.clone())).collect();
            prop_assert_eq!(scanned(&json), expected);
            let reread: CidrList = policy_decode::settings::reread(|| serde_json::from_str(&json)).unwrap();
            prop_assert_eq!(reread.len(), entries.len());
        }

        /// Arbitrary text never panics the parsers, and what parses displays as itself again.
        #[test]
        fn arbitrary_text_is_parsed_or_refused(text in "[0-9a-fA-F:./% x]{0,24}") {
            if let Ok(c) = Cidr::parse(&text) {
                prop_assert_eq!(cidr(&c.to_string()), c);
            }
            if let Ok(a) = IpAddress::parse(&text) {
                prop_assert_eq!(addr(&a.to_string()), a);
            }
        }
    }
}
