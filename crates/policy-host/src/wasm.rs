//! Reading and writing wasm custom sections (what `kwctl annotate` does).
//!
//! A wasm module is the 8-byte header (`\0asm` + version 1) followed by
//! sections: one id byte, the section size as unsigned LEB128, the content.
//! A custom section has id 0 and its content starts with its name (LEB128
//! length + UTF-8 bytes); the rest is the payload.

use crate::error::{Error, Result};

/// Name of the custom section holding Kubewarden metadata.
pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

const HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

/// A section located inside a module.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    id: u8,
    /// Byte range of the whole section (id byte included).
    whole: std::ops::Range<usize>,
    /// Custom sections only: name and payload range.
    custom: Option<(String, std::ops::Range<usize>)>,
}

/// Reads an unsigned LEB128 u32 at `*pos`, advancing `*pos`.
fn read_leb_u32(bytes: &[u8], pos: &mut usize) -> Result<u32> {
    let mut result: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *bytes
            .get(*pos)
            .ok_or_else(|| Error::Wasm("truncated LEB128 number".into()))?;
        *pos += 1;
        result |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 28 {
            return Err(Error::Wasm("LEB128 number too long".into()));
        }
    }
    u32::try_from(result).map_err(|_| Error::Wasm("LEB128 number overflows u32".into()))
}

/// Appends `value` as unsigned LEB128.
fn write_leb_u32(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn sections(bytes: &[u8]) -> Result<Vec<Section>> {
    if bytes.get(..HEADER.len()) != Some(&HEADER[..]) {
        return Err(Error::Wasm(
            "not a wasm module (bad magic number or version)".into(),
        ));
    }
    let mut pos = HEADER.len();
    let mut out = Vec::new();
    while let Some(&id) = bytes.get(pos) {
        let start = pos;
        pos += 1;
        let size = read_leb_u32(bytes, &mut pos)? as usize;
        let end = pos
            .checked_add(size)
            .filter(|end| *end <= bytes.len())
            .ok_or_else(|| {
                Error::Wasm(format!("section at offset {start} overflows the module"))
            })?;
        let custom = if id == 0 {
            let mut p = pos;
            let name_len = read_leb_u32(bytes, &mut p)? as usize;
            let name_end = p
                .checked_add(name_len)
                .filter(|e| *e <= end)
                .ok_or_else(|| Error::Wasm("custom section name overflows its section".into()))?;
            let name = std::str::from_utf8(bytes.get(p..name_end).unwrap_or_default())
                .map_err(|_| Error::Wasm("custom section name is not UTF-8".into()))?
                .to_owned();
            Some((name, name_end..end))
        } else {
            None
        };
        out.push(Section {
            id,
            whole: start..end,
            custom,
        });
        pos = end;
    }
    Ok(out)
}

/// Returns the payload of the last custom section called `name`, if any.
///
/// ```
/// let module = policy_host::wasm::set_custom_section(
///     b"\0asm\x01\0\0\0", "hello", b"world").unwrap();
/// let payload = policy_host::wasm::read_custom_section(&module, "hello").unwrap();
/// assert_eq!(payload, Some(&b"world"[..]));
/// ```
pub fn read_custom_section<'a>(module: &'a [u8], name: &str) -> Result<Option<&'a [u8]>> {
    Ok(sections(module)?
        .into_iter()
        .filter_map(|s| s.custom)
        .rfind(|(n, _)| n == name)
        .and_then(|(_, range)| module.get(range)))
}

/// The Kubernetes host capabilities testdrive answers, as `metadata.yml` names them.
pub const KUBERNETES_CAPABILITIES: [&str; 4] = [
    "kubernetes/can_i",
    "kubernetes/get_resource",
    "kubernetes/list_resources_all",
    "kubernetes/list_resources_by_namespace",
];

/// The Kubernetes host capabilities a module can call, found as `kwctl annotate` finds
/// them: the namespace and the operation names appear in its data section (a waPC host
/// call names them as strings). kwctl warns when this set differs from the metadata's
/// `hostCapabilities`; it knows more namespaces (oci, net, crypto) than the ones listed in
/// [`KUBERNETES_CAPABILITIES`].
///
/// ```
/// let none = policy_host::wasm::detected_host_capabilities(b"\0asm\x01\0\0\0").unwrap();
/// assert!(none.is_empty());
/// ```
pub fn detected_host_capabilities(module: &[u8]) -> Result<std::collections::BTreeSet<String>> {
    let data: Vec<u8> = sections(module)?
        .into_iter()
        .filter(|s| s.id == DATA_SECTION)
        .filter_map(|s| module.get(s.whole))
        .flat_map(|bytes| bytes.iter().copied().chain([0xff]))
        .collect();
    let contains = |needle: &str| data.windows(needle.len()).any(|w| w == needle.as_bytes());
    Ok(KUBERNETES_CAPABILITIES
        .iter()
        .filter(|full| {
            full.split_once('/')
                .is_some_and(|(namespace, operation)| contains(namespace) && contains(operation))
        })
        .map(|full| (*full).to_owned())
        .collect())
}

/// Section id of the data section.
const DATA_SECTION: u8 = 11;

/// Returns a copy of `module` where every custom section called `name` is
/// removed and one new custom section `name` with `payload` is appended.
pub fn set_custom_section(module: &[u8], name: &str, payload: &[u8]) -> Result<Vec<u8>> {
    let all = sections(module)?;
    let mut out = Vec::with_capacity(module.len() + payload.len() + name.len() + 16);
    out.extend_from_slice(&HEADER);
    for section in &all {
        let same_name = matches!(&section.custom, Some((n, _)) if n == name);
        if section.id == 0 && same_name {
            continue;
        }
        let bytes = module
            .get(section.whole.clone())
            .ok_or_else(|| Error::Wasm("section overflows the module".into()))?;
        out.extend_from_slice(bytes);
    }
    let name_len = u32::try_from(name.len())
        .map_err(|_| Error::Invalid("custom section name too long".into()))?;
    let mut content = Vec::with_capacity(name.len() + payload.len() + 5);
    write_leb_u32(&mut content, name_len);
    content.extend_from_slice(name.as_bytes());
    content.extend_from_slice(payload);
    let size = u32::try_from(content.len())
        .map_err(|_| Error::Invalid("custom section too large".into()))?;
    out.push(0);
    write_leb_u32(&mut out, size);
    out.extend_from_slice(&content);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest valid module plus a type section, to make sure
    /// non-custom sections survive.
    fn module_with_type_section() -> Vec<u8> {
        let mut m = HEADER.to_vec();
        // type section: 1 type, func () -> ()
        m.extend_from_slice(&[0x01, 0x04, 0x01, 0x60, 0x00, 0x00]);
        m
    }

    #[test]
    fn leb_round_trip() {
        for v in [0u32, 1, 127, 128, 300, 16_384, u32::MAX] {
            let mut buf = Vec::new();
            write_leb_u32(&mut buf, v);
            let mut pos = 0;
            assert_eq!(read_leb_u32(&buf, &mut pos).unwrap(), v);
            assert_eq!(pos, buf.len());
        }
    }

    #[test]
    fn custom_section_round_trip_and_replace() {
        let module = module_with_type_section();
        assert_eq!(
            read_custom_section(&module, METADATA_SECTION).unwrap(),
            None
        );

        let big = vec![b'x'; 300]; // size needs a 2-byte LEB128
        let once = set_custom_section(&module, METADATA_SECTION, &big).unwrap();
        assert_eq!(
            read_custom_section(&once, METADATA_SECTION).unwrap(),
            Some(&big[..])
        );
        let twice = set_custom_section(&once, METADATA_SECTION, b"{}").unwrap();
        assert_eq!(
            read_custom_section(&twice, METADATA_SECTION).unwrap(),
            Some(&b"{}"[..])
        );
        // the type section is still there, and only one metadata section
        let secs = sections(&twice).unwrap();
        assert_eq!(secs.len(), 2);
        assert_eq!(secs[0].id, 1);
        assert_eq!(&twice[..module.len()], &module[..]);
    }

    #[test]
    fn other_custom_sections_are_kept() {
        let module = set_custom_section(&module_with_type_section(), "name", b"n").unwrap();
        let annotated = set_custom_section(&module, METADATA_SECTION, b"{}").unwrap();
        assert_eq!(
            read_custom_section(&annotated, "name").unwrap(),
            Some(&b"n"[..])
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(read_custom_section(b"not wasm", "x").is_err());
        let mut truncated = HEADER.to_vec();
        truncated.extend_from_slice(&[0x00, 0x10, 0x01]);
        assert!(read_custom_section(&truncated, "x").is_err());
    }
}
