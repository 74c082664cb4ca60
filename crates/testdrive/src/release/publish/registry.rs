//! A local OCI registry: the CNCF distribution registry (Debian's `docker-registry`) on a
//! free loopback port, its storage wiped at start, stopped when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::{free_port, http_get};
use policy_host::error::{Error, Result};

/// How long the registry may take to answer `GET /v2/`.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running registry, stopped (killed and reaped) on drop.
pub(super) struct Registry {
    child: Child,
    port: u16,
}

impl Registry {
    /// Starts `binary serve <dir>/config.yml` with its storage in `<dir>/storage` (wiped
    /// first) and its log in `<dir>/registry.log`; returns once `GET /v2/` answers 200.
    pub(super) fn start(binary: &Path, dir: &Path) -> Result<Self> {
        let storage = dir.join("storage");
        if storage.exists() {
            std::fs::remove_dir_all(&storage).map_err(|e| Error::io(&storage, e))?;
        }
        std::fs::create_dir_all(&storage).map_err(|e| Error::io(&storage, e))?;
        let port = free_port(false)?;
        let config = dir.join("config.yml");
        std::fs::write(&config, config_yaml(&storage, port)).map_err(|e| Error::io(&config, e))?;
        let log_path = dir.join("registry.log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
        let err = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| Error::Invalid(format!("cannot run {}: {e}", binary.display())))?;
        let mut registry = Registry { child, port };
        registry.wait_ready(&log_path)?;
        Ok(registry)
    }

    /// Waits for `GET /v2/` to answer 200 (the registry is stopped when it does not).
    fn wait_ready(&mut self, log: &Path) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::Invalid(format!(
                    "the registry exited ({status}); see {}",
                    log.display()
                )));
            }
            if matches!(http_get(self.port, "/v2/"), Ok((200, _))) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(Error::Invalid(format!(
                    "the registry did not answer GET /v2/ within {} s; see {}",
                    READY_WITHIN.as_secs(),
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `127.0.0.1:<port>`, the registry's host in references.
    pub(super) fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The hosts a sources file must declare insecure (plain HTTP) for this registry.
    pub(super) fn insecure_hosts(&self) -> [String; 2] {
        [self.host(), format!("localhost:{}", self.port)]
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The registry's configuration: filesystem storage at `storage` (absolute), plain HTTP on
/// `127.0.0.1:<port>`, deletes allowed, warnings only.
fn config_yaml(storage: &Path, port: u16) -> String {
    // a JSON string is a YAML string: any path is quoted right
    let root = serde_json::Value::String(storage.display().to_string());
    format!(
        "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  \
         filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\nhttp:\n  \
         addr: 127.0.0.1:{port}\n"
    )
}

/// The kwctl and policy-server sources file that makes exactly `hosts` insecure.
pub(super) fn sources_yaml(hosts: &[String]) -> String {
    let quoted: Vec<String> = hosts
        .iter()
        .map(|h| serde_json::Value::String(h.clone()).to_string())
        .collect();
    format!("insecure_sources: [{}]\n", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_and_sources_are_yaml() {
        let config: serde_json::Value =
            serde_yaml::from_str(&config_yaml(Path::new("/tmp/a b/storage"), 5000)).unwrap();
        assert_eq!(
            config.pointer("/storage/filesystem/rootdirectory"),
            Some(&serde_json::json!("/tmp/a b/storage"))
        );
        assert_eq!(
            config.pointer("/http/addr"),
            Some(&serde_json::json!("127.0.0.1:5000"))
        );
        let sources = sources_yaml(&["127.0.0.1:5000".into(), "localhost:5000".into()]);
        assert_eq!(
            sources,
            "insecure_sources: [\"127.0.0.1:5000\", \"localhost:5000\"]\n"
        );
        let parsed: serde_json::Value = serde_yaml::from_str(&sources).unwrap();
        assert_eq!(parsed["insecure_sources"][1], "localhost:5000");
    }
}
