//! The test host: a network namespace of the cluster directory's own, joined to this host by
//! a veth pair in 198.18.0.0/30 (this side 198.18.0.1, the test host 198.18.0.2), for a
//! server that listens on every interface and cannot be told otherwise (Capsule's health
//! probe and webhook server). Its name is recorded in `<dir>/netns` as it is created, so that
//! `control-plane down` removes it (and its veth pair with it) whatever a run left.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use super::process::run;
use crate::error::{Error, Result, read, write};

/// This side of the veth pair.
pub const HOST_SIDE: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The test host's address.
pub const TEST_HOST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

/// The network namespace the test host is, and its veth pair's names.
const NETNS: &str = "tenancy-test-host";
const HOST_LINK: &str = "tenancy-h0";
const TEST_LINK: &str = "tenancy-t0";

/// The record of the test host in a cluster directory.
fn record(dir: &Path) -> std::path::PathBuf {
    dir.join("netns")
}

fn ip(args: &[&str]) -> Result<()> {
    run(Path::new("ip"), args).map(drop)
}

/// Whether the network namespace `name` exists.
fn exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Creates the test host for `dir` (removing one a failed run left), up and addressed.
pub fn create(dir: &Path) -> Result<()> {
    if exists(NETNS) {
        ip(&["netns", "delete", NETNS])?;
    }
    write(&record(dir), NETNS)?;
    let local_address = format!("{HOST_SIDE}/30");
    let test_address = format!("{TEST_HOST}/30");
    let steps: [&[&str]; 7] = [
        &["netns", "add", NETNS],
        &[
            "link", "add", HOST_LINK, "type", "veth", "peer", "name", TEST_LINK,
        ],
        &["link", "set", TEST_LINK, "netns", NETNS],
        &["addr", "add", &local_address, "dev", HOST_LINK],
        &["link", "set", HOST_LINK, "up"],
        &["-n", NETNS, "addr", "add", &test_address, "dev", TEST_LINK],
        &["-n", NETNS, "link", "set", TEST_LINK, "up"],
    ];
    for step in steps {
        ip(step)?;
    }
    ip(&["-n", NETNS, "link", "set", "lo", "up"])
}

/// `program` run on the test host.
pub fn command(program: &Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", NETNS]).arg(program);
    c
}

/// Removes the test host `dir` recorded, if any (its veth pair goes with it).
pub fn remove(dir: &Path) -> Result<()> {
    let path = record(dir);
    if !path.exists() {
        return Ok(());
    }
    let name = read(&path)?;
    let name = name.trim();
    if exists(name) {
        ip(&["netns", "delete", name])?;
    }
    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))
}
