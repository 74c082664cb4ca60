//! A minimal HTTP/1.0 client for loopback servers (policy-server, the fake API server):
//! one request per connection, so that answers are neither chunked nor kept alive.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use policy_host::error::{Error, Result};

/// One request on a fresh loopback connection, read until the server closes it: the status
/// and the body.
fn http_exchange(port: u16, head: String, body: &[u8]) -> Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| Error::Invalid(format!("127.0.0.1:{port}: {e}")))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| Error::Invalid(e.to_string()))?;
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| Error::Invalid(format!("127.0.0.1:{port}: {e}")))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| Error::Invalid(format!("127.0.0.1:{port}: {e}")))?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| Error::Invalid("HTTP answer without headers".into()))?;
    let status = String::from_utf8_lossy(answer.get(..split).unwrap_or_default())
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, answer.get(split + 4..).unwrap_or_default().to_vec()))
}

/// HTTP/1.0 POST (so that the answer is neither chunked nor kept alive).
pub fn http_post(port: u16, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
    let head = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    http_exchange(port, head, body)
}

/// HTTP/1.0 GET: the status and the body.
pub fn http_get(port: u16, path: &str) -> Result<(u16, Vec<u8>)> {
    let head = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    http_exchange(port, head, b"")
}

/// The lowest port [`free_port`] picks: above the ports services are configured on.
const LOWEST_PICKED: u16 = 10_000;

/// Where the kernel's ephemeral ports start (`/proc/sys/net/ipv4/ip_local_port_range`;
/// 32768 where it cannot be read): every outgoing connection takes its local port from
/// there on, so one may take a port picked in that range before the server binds it.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A loopback port free now, with the next one free too when `pair` (policy-server listens
/// on a port and answers readiness on the next one). It is picked below the ephemeral
/// ports, so that no outgoing connection (policy-server's own downloads among them) takes
/// it before it is used; another server may still bind it first: good enough for tests on
/// one machine.
pub fn free_port(pair: bool) -> Result<u16> {
    let bind = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port));
    let span = ephemeral_start().saturating_sub(LOWEST_PICKED + 1);
    // a start that differs between processes and between calls, so that concurrent tests
    // rarely try the same ports first
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    let start = u64::from(std::process::id())
        .wrapping_mul(7_919)
        .wrapping_add(nanos)
        .wrapping_add(CALLS.fetch_add(1, Ordering::Relaxed).wrapping_mul(104_729));
    for attempt in 0..256u64 {
        let port = if span > 1 {
            let offset = start.wrapping_add(attempt.wrapping_mul(2)) % u64::from(span);
            LOWEST_PICKED + u16::try_from(offset).unwrap_or(0)
        } else {
            // no room below the ephemeral ports: let the kernel choose
            let any = bind(0).map_err(|e| Error::Invalid(format!("no free loopback port: {e}")))?;
            any.local_addr()
                .map_err(|e| Error::Invalid(format!("no free loopback port: {e}")))?
                .port()
        };
        let Ok(_first) = bind(port) else { continue };
        if !pair || port.checked_add(1).is_some_and(|next| bind(next).is_ok()) {
            return Ok(port);
        }
    }
    Err(Error::Invalid(
        "no two free consecutive loopback ports".into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn free_ports_lie_below_the_ephemeral_ones_and_come_in_pairs() {
        for _ in 0..20 {
            let port = free_port(true).unwrap();
            assert!(port >= LOWEST_PICKED, "{port}");
            assert!(port + 1 < ephemeral_start(), "{port}");
            let first = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
            let second = std::net::TcpListener::bind(("127.0.0.1", port + 1)).unwrap();
            drop((first, second));
        }
    }
}
