//! The built policy modules, loaded once each, to check settings and judge requests.

use std::collections::HashMap;
use std::path::PathBuf;

use policy_host::Host;
use serde_json::Value;

use crate::catalogue::Policy;
use crate::error::{Error, Result};

/// The policies' wasm modules found in one directory, compiled on first use.
#[derive(Debug)]
pub struct Hosts {
    wasm_dir: PathBuf,
    loaded: HashMap<&'static str, Host>,
}

impl Hosts {
    /// Modules are read from `wasm_dir` (`target/wasm32-wasip1/release` after `make policies`).
    pub fn new(wasm_dir: PathBuf) -> Self {
        Hosts {
            wasm_dir,
            loaded: HashMap::new(),
        }
    }

    /// The host running `policy`.
    pub fn host(&mut self, policy: &'static Policy) -> Result<&Host> {
        if !self.loaded.contains_key(policy.name) {
            let path = self.wasm_dir.join(policy.wasm_file());
            let wasm = std::fs::read(&path).map_err(|e| {
                Error::Invalid(format!(
                    "{}: {e} (build the policies first: make policies)",
                    path.display()
                ))
            })?;
            let host = Host::load(&wasm, Some(policy.metadata()?))?;
            self.loaded.insert(policy.name, host);
        }
        self.loaded
            .get(policy.name)
            .ok_or_else(|| Error::Invalid(format!("{} could not be loaded", policy.name)))
    }

    /// The policy's own `validate_settings` on `settings`: `None` when valid, else its message.
    pub fn refusal(&mut self, policy: &'static Policy, settings: &Value) -> Result<Option<String>> {
        let validation = self.host(policy)?.validate_settings(settings)?;
        Ok((!validation.valid).then(|| validation.message.unwrap_or_default()))
    }
}
