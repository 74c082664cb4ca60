//! The servers a cluster directory runs, and how they stop: each is recorded in
//! `<dir>/pids` (`<name> <pid>` per line) as it starts, so that `control-plane down` (and the
//! Makefile's trap) stops whatever a run left, and those started for one run die with it
//! (`PR_SET_PDEATHSIG`) even when it is killed.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result, read};

/// The pid file of a cluster directory.
pub fn pid_file(dir: &Path) -> PathBuf {
    dir.join("pids")
}

/// How long a server lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Until this process ends (the kernel sends SIGTERM when it does).
    ThisRun,
    /// Until `control-plane down` (its own session, so a terminal's Ctrl-C spares it).
    UntilDown,
}

/// Starts `command` as the server `name` of `dir`, its output appended to `dir/<name>.log`,
/// and records it in the pid file.
pub fn spawn(dir: &Path, name: &str, mut command: Command, lifetime: Lifetime) -> Result<Child> {
    let log_path = dir.join(format!("{name}.log"));
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| Error::io(&log_path, e))?;
    let err = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
    command.stdin(Stdio::null()).stdout(log).stderr(err);
    // SAFETY: the closure only calls async-signal-safe functions (prctl, setsid, getppid)
    unsafe {
        command.pre_exec(move || {
            match lifetime {
                Lifetime::ThisRun => {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Lifetime::UntilDown => {
                    libc::setsid();
                }
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|e| Error::Command {
        program: name.to_owned(),
        detail: format!("cannot start: {e}"),
    })?;
    let pids = pid_file(dir);
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&pids)
        .map_err(|e| Error::io(&pids, e))?;
    writeln!(file, "{name} {}", child.id()).map_err(|e| Error::io(&pids, e))?;
    Ok(child)
}

/// Runs `program` with `args` to completion; returns its output, or fails with its output
/// and error output when it fails.
pub fn run(program: &Path, args: &[&str]) -> Result<String> {
    let name = program.file_name().map_or_else(
        || program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let what = || format!("{name} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| Error::Command {
            program: what(),
            detail: e.to_string(),
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(Error::Command {
            program: what(),
            detail: format!(
                "{}{}",
                stdout.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        })
    }
}

/// Whether `pid` runs (a zombie, which only waits to be reaped by its parent, does not).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists
    let exists = unsafe { libc::kill(pid, 0) == 0 };
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    exists && !zombie
}

/// Stops every server of the pid file, the last started first: SIGTERM, then SIGKILL when
/// it is alive after `grace`; returns the names of those that had to be killed. A missing pid file stops
/// nothing.
pub fn stop_all(dir: &Path, grace: Duration) -> Result<Vec<String>> {
    let pids = pid_file(dir);
    if !pids.exists() {
        return Ok(Vec::new());
    }
    let entries: Vec<(String, i32)> = read(&pids)?
        .lines()
        .filter_map(|l| {
            let (name, pid) = l.split_once(' ')?;
            Some((name.to_owned(), pid.trim().parse().ok()?))
        })
        .collect();
    // the last started first: the API servers before the etcd they write to
    let mut killed = Vec::new();
    for (name, pid) in entries.iter().rev() {
        // SAFETY: plain kill(2) on a recorded pid
        unsafe { libc::kill(*pid, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && alive(*pid) {
            reap();
            std::thread::sleep(Duration::from_millis(20));
        }
        if alive(*pid) {
            // SAFETY: as above
            unsafe { libc::kill(*pid, libc::SIGKILL) };
            killed.push(name.clone());
        }
    }
    reap();
    std::fs::remove_file(&pids).map_err(|e| Error::io(&pids, e))?;
    Ok(killed)
}

/// Collects exited children of this process, so that they do not linger as zombies.
fn reap() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with WNOHANG on any child
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_all_ends_every_recorded_server_and_removes_the_pid_file() {
        let dir = std::env::temp_dir().join(format!("control-plane-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sleeper = Command::new("sleep");
        sleeper.arg("30");
        let mut child = spawn(&dir, "sleeper", sleeper, Lifetime::ThisRun).unwrap();
        let pid = child.id() as i32;
        assert!(alive(pid));
        assert!(
            read(&pid_file(&dir))
                .unwrap()
                .contains(&format!("sleeper {pid}"))
        );
        stop_all(&dir, Duration::from_secs(5)).unwrap();
        assert!(!alive(pid));
        // reaped by stop_all already, or now
        let _ = child.wait();
        assert!(!pid_file(&dir).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
