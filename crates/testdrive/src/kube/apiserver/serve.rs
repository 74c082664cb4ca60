//! Serving a [`FakeApi`] on loopback: one thread per connection, HTTP/1.1 keep-alive, and
//! watches held open (chunked, no events) until the server stops or the watch times out.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Access, Answer, Authorization, FakeApi, Reply, status_answer};
use policy_host::error::{Error, Result};

/// How often a held watch looks whether the server stopped.
const WATCH_POLL: Duration = Duration::from_millis(100);

impl FakeApi {
    /// Serves this state on an ephemeral loopback port until the server is dropped.
    pub fn serve(self) -> Result<RunningApi> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| Error::Invalid(format!("fake API server: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::Invalid(format!("fake API server: {e}")))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(Mutex::new(Vec::new()));
        let api = Arc::new(self);
        let stopping = stop.clone();
        let log = reads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(stream) = stream {
                    let api = api.clone();
                    let stopping = stopping.clone();
                    let log = log.clone();
                    std::thread::spawn(move || serve_connection(&api, stream, &stopping, &log));
                }
            }
        });
        Ok(RunningApi { port, stop, reads })
    }
}

/// A served [`FakeApi`]; stops accepting connections, and ends held watches, when dropped.
#[derive(Debug)]
pub struct RunningApi {
    pub(super) port: u16,
    stop: Arc<AtomicBool>,
    reads: ReadLog,
}

/// Every read served so far, with whether the RBAC granted it.
type ReadLog = Arc<Mutex<Vec<(Access, bool)>>>;

impl RunningApi {
    /// The port it listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every read answered so far (discovery aside), in order, with whether it was granted.
    pub fn reads(&self) -> Vec<(Access, bool)> {
        self.reads.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Writes a kubeconfig that points a client at this server.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{}\n\
             users:\n- name: bench\n  user:\n    token: bench\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: bench\n\
             current-context: fake\n",
            self.port
        );
        std::fs::write(path, text).map_err(|e| Error::io(path, e))
    }
}

impl Drop for RunningApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // wake the accept loop so that it sees the flag
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One request's head: method, target, and whether the connection stays open after it.
struct Head {
    method: String,
    target: String,
    keep_alive: bool,
}

/// Reads one request (head and body); `None` when the client closed the connection.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Head> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let mut keep_alive = parts.next() == Some("HTTP/1.1");
    let mut content_length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("connection") {
                keep_alive &= !value.eq_ignore_ascii_case("close");
            }
        }
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body).ok()?;
    Some(Head {
        method,
        target,
        keep_alive,
    })
}

/// Answers requests on one connection: kept alive for HTTP/1.1 until the client closes it
/// or asks `Connection: close`, one request for HTTP/1.0; a watch ends the connection.
fn serve_connection(api: &FakeApi, stream: TcpStream, stop: &AtomicBool, log: &ReadLog) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(head) = read_request(&mut reader) {
        let authorization = api.authorize(&head.target);
        if let (Authorization::Granted(access) | Authorization::Refused(access), Ok(mut log)) =
            (&authorization, log.lock())
        {
            log.push((
                access.clone(),
                matches!(authorization, Authorization::Granted(_)),
            ));
        }
        let reply = if let Authorization::Refused(access) = &authorization {
            Reply::Full(api.forbidden(access))
        } else if head.method == "GET" {
            api.reply(&head.target)
        } else {
            Reply::Full(status_answer(
                405,
                "MethodNotAllowed",
                &format!("{} is not served", head.method),
            ))
        };
        match reply {
            Reply::Full(answer) => {
                if write_answer(&mut writer, &answer).is_err() || !head.keep_alive {
                    return;
                }
            }
            Reply::Watch { seconds } => {
                hold_watch(&mut writer, seconds, stop);
                return;
            }
        }
    }
}

fn write_answer(writer: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        answer.status,
        reason_phrase(answer.status),
        answer.body.len(),
        answer.body
    );
    writer.write_all(response.as_bytes())
}

/// A watch that sees no change: the chunked stream opens, stays silent until the server
/// stops or `seconds` pass, then ends as the API server ends a timed-out watch.
fn hold_watch(writer: &mut TcpStream, seconds: u64, stop: &AtomicBool) {
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if writer.write_all(head.as_bytes()).is_err() || writer.flush().is_err() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(seconds);
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(WATCH_POLL);
    }
    let _ = writer.write_all(b"0\r\n\r\n");
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    }
}
