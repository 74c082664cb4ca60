//! Module references of bindings (`registry://…/<policy>:<tag>`, `file://…`, or no scheme,
//! which Kubewarden reads as `registry://`) mapped to local annotated modules.

use std::path::{Path, PathBuf};

use policy_host::error::{Error, Result};

/// Where the local module of each policy is: `<dir>/<policy>.wasm`.
#[derive(Debug, Clone)]
pub struct ModulesDir {
    dir: PathBuf,
}

/// The policy a module reference names: its last path segment, without tag, digest or
/// `.wasm` extension.
///
/// ```
/// use testdrive::kube::controller::policy_of_module;
/// assert_eq!(policy_of_module("registry://ghcr.io/acme/tenancy-policies/pod-toleration-policy:v0.1.0"), "pod-toleration-policy");
/// assert_eq!(policy_of_module("ghcr.io/acme/x-policy@sha256:ab"), "x-policy");
/// assert_eq!(policy_of_module("file:///tmp/annotated/x-policy.wasm"), "x-policy");
/// ```
pub fn policy_of_module(module: &str) -> &str {
    let path = module.split_once("://").map_or(module, |(_, rest)| rest);
    let last = path.rsplit('/').next().unwrap_or(path);
    let last = last.split('@').next().unwrap_or(last);
    let last = if module.starts_with("file://") {
        last
    } else {
        last.split(':').next().unwrap_or(last)
    };
    last.strip_suffix(".wasm").unwrap_or(last)
}

impl ModulesDir {
    /// Modules in `dir` (made absolute, as policy-server needs).
    pub fn new(dir: &Path) -> Result<Self> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        Ok(ModulesDir { dir })
    }

    /// The local file of `module`, which must exist.
    pub fn file(&self, module: &str) -> Result<PathBuf> {
        let policy = policy_of_module(module);
        let file = self.dir.join(format!("{policy}.wasm"));
        if policy.is_empty() || !file.is_file() {
            return Err(Error::Invalid(format!(
                "module {module:?}: no {} (make annotate)",
                file.display()
            )));
        }
        Ok(file)
    }

    /// `module` as the `file://` URI of its local file.
    pub fn uri(&self, module: &str) -> Result<String> {
        Ok(format!("file://{}", self.file(module)?.display()))
    }
}
