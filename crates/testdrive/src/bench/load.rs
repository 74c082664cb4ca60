//! One load measurement of `testdrive bench-server`: `wrk` posting a body to a policy-server
//! endpoint while `perf stat` counts the policy-server process's page faults and CPU time.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use policy_host::error::{Error, Result};

/// req/s and request count of one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Requests per second.
    pub requests_per_second: f64,
    /// Requests completed.
    pub requests: u64,
}

/// What `perf stat` counted in the policy-server process over one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counters {
    /// Page faults.
    pub page_faults: f64,
    /// CPU time (`task-clock`), in milliseconds.
    pub task_clock_ms: f64,
    /// Instructions, where the machine exposes the counter.
    pub instructions: Option<f64>,
}

/// One measurement: the throughput, and the counters per request when perf could count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// wrk's report.
    pub throughput: Throughput,
    /// Counters divided by the requests completed.
    pub per_request: Option<Counters>,
}

/// How to load an endpoint.
#[derive(Debug, Clone)]
pub struct Load<'a> {
    /// policy-server's port.
    pub port: u16,
    /// wrk connections.
    pub connections: usize,
    /// Duration.
    pub seconds: u64,
    /// The wrk script posting the file named by `WRK_BODY`.
    pub script: &'a Path,
    /// Whether `perf stat` is available (checked once by [`perf_available`]).
    pub perf: bool,
}

/// The wrk script: a POST of the file named by `WRK_BODY`.
pub const WRK_SCRIPT: &str = "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\n\
     local f = assert(io.open(os.getenv(\"WRK_BODY\"), \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n";

/// The events counted; `instructions` reads `<not supported>` on VMs without the counter.
const PERF_EVENTS: &str = "page-faults,task-clock,instructions";

/// Whether `perf stat` can count this process's software events.
pub fn perf_available() -> bool {
    Command::new("perf")
        .args(["stat", "-x,", "-e", "page-faults", "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Load<'_> {
    /// Posts `body` to `path` with wrk for the set duration, with `perf stat` attached to
    /// process `pid` over the same window when available.
    pub fn measure(&self, pid: u32, path: &str, body: &Path) -> Result<Measurement> {
        let perf = if self.perf {
            Some(start_perf(pid)?)
        } else {
            None
        };
        let out = Command::new("wrk")
            .args(["-t1", &format!("-c{}", self.connections)])
            .arg(format!("-d{}s", self.seconds))
            .arg("-s")
            .arg(self.script)
            .arg(format!("http://127.0.0.1:{}{path}", self.port))
            .env("WRK_BODY", body)
            .output();
        let counters = perf.map(stop_perf).transpose()?;
        let out = out.map_err(|e| Error::Invalid(format!("cannot run wrk: {e}")))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let throughput = parse_wrk(&text)
            .ok_or_else(|| Error::Invalid(format!("unexpected wrk output: {text}")))?;
        let per_request = counters.flatten().and_then(|c| {
            let n = throughput.requests as f64;
            (throughput.requests > 0).then(|| Counters {
                page_faults: c.page_faults / n,
                task_clock_ms: c.task_clock_ms / n,
                instructions: c.instructions.map(|i| i / n),
            })
        });
        Ok(Measurement {
            throughput,
            per_request,
        })
    }
}

/// Starts `perf stat` on process `pid` (it counts until interrupted).
fn start_perf(pid: u32) -> Result<Child> {
    let child = Command::new("perf")
        .args(["stat", "-x,", "-e", PERF_EVENTS, "-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Invalid(format!("cannot run perf: {e}")))?;
    // perf attaches before wrk's first request
    std::thread::sleep(Duration::from_millis(100));
    Ok(child)
}

/// Interrupts `perf stat` (which then prints its counts) and reads them; `None` when it
/// printed none.
fn stop_perf(child: Child) -> Result<Option<Counters>> {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child
        .wait_with_output()
        .map_err(|e| Error::Invalid(format!("perf: {e}")))?;
    Ok(parse_perf(&String::from_utf8_lossy(&out.stderr)))
}

/// The counts of `perf stat -x,` output (`value,unit,event,...` per line).
pub fn parse_perf(text: &str) -> Option<Counters> {
    let count = |event: &str| {
        text.lines().find_map(|line| {
            let mut fields = line.split(',');
            let value = fields.next()?;
            let _unit = fields.next()?;
            (fields.next()? == event)
                .then(|| value.trim().parse::<f64>().ok())
                .flatten()
        })
    };
    Some(Counters {
        page_faults: count("page-faults")?,
        task_clock_ms: count("task-clock")?,
        instructions: count("instructions"),
    })
}

/// req/s and request count from wrk's report; `None` when it had errors or no numbers.
pub fn parse_wrk(text: &str) -> Option<Throughput> {
    if text.contains("Non-2xx or 3xx responses") || text.contains("Socket errors") {
        return None;
    }
    let requests_per_second = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())?;
    let requests = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in "))
        .and_then(|(n, _)| n.trim().parse().ok())?;
    Some(Throughput {
        requests_per_second,
        requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wrk_reports() {
        let report = "Running 6s test @ http://127.0.0.1:3300/validate/x\n  1 threads and 2 connections\n  Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency   512.34us  100.00us   2.00ms   90.00%\n    Req/Sec     3.87k   100.00     4.00k    70.00%\n  23196 requests in 6.00s, 5.00MB read\nRequests/sec:   3866.12\nTransfer/sec:      0.83MB\n";
        let t = parse_wrk(report).unwrap();
        assert_eq!(t.requests_per_second, 3866.12);
        assert_eq!(t.requests, 23196);
        let errors = format!("{report}  Non-2xx or 3xx responses: 12\n");
        assert_eq!(parse_wrk(&errors), None);
        assert_eq!(parse_wrk("nothing"), None);
    }

    #[test]
    fn reads_perf_counts_with_and_without_an_instruction_counter() {
        let vm = "49,,page-faults,489918,100.00,100.017,K/sec\n\
                  3001.25,msec,task-clock,3001250000,100.00,0.998,CPUs utilized\n\
                  <not supported>,,instructions,0,100.00,,\n";
        let c = parse_perf(vm).unwrap();
        assert_eq!(c.page_faults, 49.0);
        assert_eq!(c.task_clock_ms, 3001.25);
        assert_eq!(c.instructions, None);
        let metal = vm.replace("<not supported>,,instructions", "123456,,instructions");
        assert_eq!(parse_perf(&metal).unwrap().instructions, Some(123456.0));
        assert_eq!(parse_perf("perf: no such process\n"), None);
    }
}
