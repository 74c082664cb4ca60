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
//!   many entries it holds; the index is built the first time an address is looked up, so
//!   settings re-read for a request that carries no address never pay for it.
//!
//! ```
//! use policy_core::net::{Cidr, CidrList, IpAddress};
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

use crate::error::SettingsError;
use crate::message;

/// The IPv4-mapped IPv6 range `::ffff:0:0/96`: its network bits and its mask.
const MAPPED_NETWORK: u128 = 0xffff << 32;
const MAPPED_MASK: u128 = u128::MAX << 32;
/// The prefix length of the IPv4-mapped range.
const MAPPED_PREFIX: u8 = 96;

/// An IP address as it is compared: IPv4 (an IPv4-mapped IPv6 address included) or IPv6.
///
/// ```
/// use policy_core::net::IpAddress;
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
        check_text(text, Expected::Address)?;
        match written(text) {
            Some(Written::V4(bits)) => Ok(IpAddress::V4(bits)),
            Some(Written::V6(bits)) => Ok(IpAddress::from_v6(bits)),
            None => Err(NetError::NotAnAddress {
                text: text.to_owned(),
                expected: Expected::Address,
            }),
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
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

/// A CIDR range: a network address and a prefix length, no host bits set. An IPv4-mapped
/// IPv6 entry of prefix /96 or longer is the IPv4 range it maps (`::ffff:10.0.0.0/104` is
/// `10.0.0.0/8`, `::ffff:0:0/96` is every IPv4 address); any other IPv6 entry contains only
/// IPv6 addresses, even where it spans `::ffff:0:0/96` (`::/0` is every IPv6 address, no
/// IPv4 one).
///
/// ```
/// use policy_core::net::{Cidr, IpAddress};
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
        check_text(text, Expected::Range)?;
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let not_a_range = || NetError::NotAnAddress {
            text: text.to_owned(),
            expected: Expected::Range,
        };
        let address = written(address).ok_or_else(not_a_range)?;
        let width = address.width();
        let prefix = match prefix {
            None => width,
            Some(p) => parse_prefix(p, width).ok_or_else(|| NetError::Prefix {
                text: text.to_owned(),
                width,
            })?,
        };
        let network = address.masked(prefix);
        if network != address {
            return Err(NetError::HostBits {
                text: text.to_owned(),
                network: format!("{}/{prefix}", network.address()),
            });
        }
        Ok(network.range(prefix))
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
                crate::settings::converted(
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
            Written::V6(bits) if prefix >= MAPPED_PREFIX && bits & MAPPED_MASK == MAPPED_NETWORK => {
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

/// The address `text` spells (IPv6 when it has a `:`), or `None`. The standard parsers
/// refuse whitespace, zone indexes, leading zeros in IPv4 parts and IPv4 shorthands
/// (`10.1`, `0x0a.0.0.1`).
fn written(text: &str) -> Option<Written> {
    if text.contains(':') {
        Ipv6Addr::from_str(text)
            .ok()
            .map(|a| Written::V6(u128::from(a)))
    } else {
        Ipv4Addr::from_str(text)
            .ok()
            .map(|a| Written::V4(u32::from(a)))
    }
}

/// A prefix length of at most `width`: decimal digits, no sign, no leading zero.
fn parse_prefix(text: &str, width: u8) -> Option<u8> {
    let bytes = text.as_bytes();
    let well_formed = !bytes.is_empty()
        && bytes.len() <= 3
        && bytes.iter().all(u8::is_ascii_digit)
        && !(bytes.len() > 1 && bytes.first() == Some(&b'0'));
    if !well_formed {
        return None;
    }
    text.parse::<u8>().ok().filter(|p| *p <= width)
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
/// Membership is one hash lookup per distinct prefix length among the entries (at most 33
/// for IPv4, 129 for IPv6), never a scan of the entries. The index is built on the first
/// lookup (or by [`CidrList::first_duplicate`]), once.
#[derive(Clone, Debug, Default)]
pub struct CidrList {
    entries: Vec<Cidr>,
    index: OnceCell<Index>,
}

impl CidrList {
    /// The list of `entries`, in this order.
    pub fn new(entries: Vec<Cidr>) -> Self {
        CidrList {
            entries,
            index: OnceCell::new(),
        }
    }

    /// The entries in settings order.
    pub fn entries(&self) -> &[Cidr] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list has no entry (allows nothing).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `address` lies in one of the entries.
    pub fn contains(&self, address: IpAddress) -> bool {
        self.index().contains(address)
    }

    /// The index of the first entry that is the same range as an earlier one
    /// (`10.0.0.5` and `::ffff:10.0.0.5` are the same).
    pub fn first_duplicate(&self) -> Option<usize> {
        self.index().first_duplicate
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| Index::build(&self.entries))
    }
}

impl PartialEq for CidrList {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl From<Vec<Cidr>> for CidrList {
    fn from(entries: Vec<Cidr>) -> Self {
        CidrList::new(entries)
    }
}

/// The entries between brackets in settings order (`[10.0.0.0/24, 2001:db8::/32]`), the
/// first [`message::LISTED`] of a long list and a count of the rest.
impl fmt::Display for CidrList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&message::bracketed(self.entries.iter()))
    }
}

/// Decodes a list of strings, each a [`Cidr`] (refusals name `path[i]`).
impl<'de> Deserialize<'de> for CidrList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Cidr>::deserialize(deserializer).map(CidrList::new)
    }
}

/// The membership index of a [`CidrList`]: the prefix lengths present, per family, and the
/// set of `(prefix, network)` pairs.
#[derive(Clone, Debug, Default)]
struct Index {
    /// Bit `p` is set when an IPv4 entry has prefix `p` (0 to 32).
    v4_prefixes: u64,
    /// Bit `p % 64` of word `p / 64` is set when an IPv6 entry has prefix `p` (0 to 128).
    v6_prefixes: [u64; 3],
    /// IPv4 entries as `prefix << 32 | network`.
    v4: HashSet<u64, Mix>,
    /// IPv6 entries.
    v6: HashSet<(u8, u128), Mix>,
    first_duplicate: Option<usize>,
}

impl Index {
    fn build(entries: &[Cidr]) -> Self {
        let mut index = Index::default();
        let v4 = entries.iter().filter(|c| c.network.is_v4()).count();
        index.v4.reserve(v4);
        index.v6.reserve(entries.len() - v4);
        for (i, entry) in entries.iter().enumerate() {
            let new = match entry.network {
                IpAddress::V4(n) => {
                    index.v4_prefixes |= 1 << entry.prefix;
                    index.v4.insert(u64::from(entry.prefix) << 32 | u64::from(n))
                }
                IpAddress::V6(n) => {
                    let p = usize::from(entry.prefix);
                    if let Some(word) = index.v6_prefixes.get_mut(p / 64) {
                        *word |= 1 << (p % 64);
                    }
                    index.v6.insert((entry.prefix, n))
                }
            };
            if !new && index.first_duplicate.is_none() {
                index.first_duplicate = Some(i);
            }
        }
        index
    }

    fn contains(&self, address: IpAddress) -> bool {
        match address {
            IpAddress::V4(a) => prefixes(&[self.v4_prefixes]).any(|p| {
                self.v4
                    .contains(&(u64::from(p) << 32 | u64::from(a & mask_32(p))))
            }),
            IpAddress::V6(a) => {
                prefixes(&self.v6_prefixes).any(|p| self.v6.contains(&(p, a & mask_128(p))))
            }
        }
    }
}

/// The prefix lengths whose bits are set in `words` (bit `p % 64` of word `p / 64`),
/// longest first.
fn prefixes(words: &[u64]) -> impl Iterator<Item = u8> + '_ {
    words.iter().enumerate().rev().flat_map(|(w, &word)| {
        (0..64u8)
            .rev()
            .filter(move |bit| word & (1 << bit) != 0)
            .map(move |bit| (w as u8) * 64 + bit)
    })
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
    #[case(" 10.0.0.0/8", r#"" 10.0.0.0/8" is not an IP address or CIDR: it contains whitespace"#)]
    #[case("10.0.0.0/8 ", r#""10.0.0.0/8 " is not an IP address or CIDR: it contains whitespace"#)]
    #[case("10.0.0.0 /8", r#""10.0.0.0 /8" is not an IP address or CIDR: it contains whitespace"#)]
    #[case("fe80::1%eth0", r#""fe80::1%eth0" is not an IP address or CIDR: zone indexes (%...) are not allowed"#)]
    #[case("fe80::%eth0/64", r#""fe80::%eth0/64" is not an IP address or CIDR: zone indexes (%...) are not allowed"#)]
    #[case("010.0.0.0/8", r#""010.0.0.0/8" is not an IP address or CIDR: an IPv4 part has a leading zero, which some parsers read as octal"#)]
    #[case("::ffff:010.0.0.1", r#""::ffff:010.0.0.1" is not an IP address or CIDR: an IPv4 part has a leading zero, which some parsers read as octal"#)]
    #[case("10.0.0/8", r#""10.0.0/8" is not an IP address or CIDR"#)]
    #[case("10.1", r#""10.1" is not an IP address or CIDR"#)]
    #[case("0x0a.0.0.1", r#""0x0a.0.0.1" is not an IP address or CIDR"#)]
    #[case("256.0.0.0", r#""256.0.0.0" is not an IP address or CIDR"#)]
    #[case("garbage", r#""garbage" is not an IP address or CIDR"#)]
    #[case("/8", r#""/8" is not an IP address or CIDR"#)]
    #[case("10.0.0.0/8/8", r#""10.0.0.0/8/8" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#)]
    #[case("10.0.0.0/33", r#""10.0.0.0/33" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#)]
    #[case("10.0.0.0/", r#""10.0.0.0/" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#)]
    #[case("10.0.0.0/08", r#""10.0.0.0/08" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#)]
    #[case("10.0.0.0/+8", r#""10.0.0.0/+8" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#)]
    #[case("10.0.0.0/-1", r#""10.0.0.0/-1" has an invalid prefix length: 0 to 32 for IPv4, without leading zeros"#)]
    #[case("2001:db8::/129", r#""2001:db8::/129" has an invalid prefix length: 0 to 128 for IPv6, without leading zeros"#)]
    #[case("2001:db8::/1000", r#""2001:db8::/1000" has an invalid prefix length: 0 to 128 for IPv6, without leading zeros"#)]
    #[case("10.0.0.1/24", r#""10.0.0.1/24" has host bits set; write the network address "10.0.0.0/24""#)]
    #[case("10.20.30.40/16", r#""10.20.30.40/16" has host bits set; write the network address "10.20.0.0/16""#)]
    #[case("2001:db8:1::1/64", r#""2001:db8:1::1/64" has host bits set; write the network address "2001:db8:1::/64""#)]
    #[case("::ffff:10.0.0.1/104", r#""::ffff:10.0.0.1/104" has host bits set; write the network address "::ffff:10.0.0.0/104""#)]
    #[case("::ffff:0:0/95", r#""::ffff:0:0/95" has host bits set; write the network address "::fffe:0:0/95""#)]
    fn refused_entries_say_why(#[case] text: &str, #[case] message: &str) {
        assert_eq!(Cidr::parse(text).unwrap_err().to_string(), message);
    }

    #[rstest]
    #[case("", r#""" is not an IP address: it is empty"#)]
    #[case("10.0.0.5/32", r#""10.0.0.5/32" is not an IP address"#)]
    #[case(" 10.0.0.5", r#"" 10.0.0.5" is not an IP address: it contains whitespace"#)]
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
        let err = crate::settings::decode::<S>(crate::settings::Raw::Json(
            r#"{"allowed": ["10.0.0.0/24", "10.0.0.1/24"]}"#,
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"allowed[1]: "10.0.0.1/24" has host bits set; write the network address "10.0.0.0/24""#
        );
        let err =
            crate::settings::decode::<S>(&serde_json::json!({"allowed": ["10.0.0.0/8", 7]}))
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

    /// Random IPv4 or IPv6 networks with a prefix length, host bits possibly set.
    fn any_v4() -> impl Strategy<Value = (u32, u8)> {
        (any::<u32>(), 0u8..=32)
    }

    fn any_v6() -> impl Strategy<Value = (u128, u8)> {
        (any::<u128>(), 0u8..=128)
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
            let list = CidrList::new(entries.iter().map(|&(b, p)| {
                Written::V6(b & mask_128(p)).range(p)
            }).collect());
            for a in probes {
                let scan = list.entries().iter().any(|c| c.contains(a));
                prop_assert_eq!(list.contains(a), scan, "{}", a);
            }
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
