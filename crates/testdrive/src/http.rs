//! A minimal HTTP/1.0 client for loopback servers (policy-server, the fake API server):
//! one request per connection, so that answers are neither chunked nor kept alive.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

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
pub(crate) fn http_post(port: u16, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
    let head = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    http_exchange(port, head, body)
}

/// HTTP/1.0 GET: the status and the body.
pub(crate) fn http_get(port: u16, path: &str) -> Result<(u16, Vec<u8>)> {
    let head = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    http_exchange(port, head, b"")
}

/// A loopback port free now, with the next one free too when `pair` (policy-server listens
/// on a port and answers readiness on the next one). Another process may take it before it
/// is used: good enough for tests on one machine.
pub(crate) fn free_port(pair: bool) -> Result<u16> {
    let bind = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port));
    for _ in 0..64 {
        let first = bind(0).map_err(|e| Error::Invalid(format!("no free loopback port: {e}")))?;
        let port = first
            .local_addr()
            .map_err(|e| Error::Invalid(format!("no free loopback port: {e}")))?
            .port();
        if !pair || port.checked_add(1).is_some_and(|next| bind(next).is_ok()) {
            return Ok(port);
        }
    }
    Err(Error::Invalid(
        "no two free consecutive loopback ports".into(),
    ))
}
