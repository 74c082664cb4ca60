//! The wasm side of a policy: the Kubewarden host's cluster callbacks, limited to the calls
//! a policy declares, and the waPC registration [`export_policy!`](crate::export_policy) uses.

pub use kubewarden_policy_sdk::protocol_version_guest;
pub use wapc_guest::register_function;

use serde_json::Value;

use crate::cluster::{Cluster, GetRequest, ListRequest, LookupFailure};
#[cfg(target_arch = "wasm32")]
use crate::cluster::{host_error_text, is_not_found, list_items};
#[cfg(target_arch = "wasm32")]
use crate::policy::Policy;

/// The refusal of a lookup whose host call the policy does not declare. The text must not
/// spell the capability's name: `kwctl annotate` would detect it in the module's data.
#[cfg(target_arch = "wasm32")]
fn undeclared(what: &str) -> LookupFailure {
    LookupFailure(format!(
        "cannot read {what}: the policy does not declare this lookup in its hostCapabilities"
    ))
}

/// The Kubewarden host's cluster callbacks for policy `P`, limited to the calls
/// `P::HOST_CAPABILITIES` declares (inside wasm only; outside, every lookup fails).
pub struct HostCluster<P>(std::marker::PhantomData<P>);

impl<P> Default for HostCluster<P> {
    fn default() -> Self {
        HostCluster(std::marker::PhantomData)
    }
}

impl<P> std::fmt::Debug for HostCluster<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostCluster")
    }
}

#[cfg(target_arch = "wasm32")]
impl<P: Policy> Cluster for HostCluster<P> {
    fn get(&mut self, request: &GetRequest) -> Result<Option<Value>, LookupFailure> {
        // a constant per policy: an undeclared call is not compiled in
        if !P::HOST_CAPABILITIES.get_resource {
            return Err(undeclared(&request.describe()));
        }
        let msg = serde_json::to_vec(request).map_err(|e| LookupFailure(e.to_string()))?;
        match wapc_guest::host_call("kubewarden", "kubernetes", "get_resource", &msg) {
            Ok(raw) => serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|e| LookupFailure(format!("undecodable answer: {e}"))),
            Err(e) => {
                let text = e.to_string();
                if is_not_found(request, &text) {
                    Ok(None)
                } else {
                    Err(LookupFailure(host_error_text(&text).to_owned()))
                }
            }
        }
    }

    fn list(&mut self, request: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
        let raw = self.list_json(request)?;
        let list: Value = serde_json::from_slice(&raw)
            .map_err(|e| LookupFailure(format!("undecodable answer: {e}")))?;
        list_items(list)
    }

    fn list_json(&mut self, request: &ListRequest) -> Result<Vec<u8>, LookupFailure> {
        let msg = serde_json::to_vec(request).map_err(|e| LookupFailure(e.to_string()))?;
        // each branch's condition is a constant per policy (see `get`)
        match request.namespace {
            Some(_) if P::HOST_CAPABILITIES.list_resources_by_namespace => wapc_guest::host_call(
                "kubewarden",
                "kubernetes",
                "list_resources_by_namespace",
                &msg,
            ),
            None if P::HOST_CAPABILITIES.list_resources_all => {
                wapc_guest::host_call("kubewarden", "kubernetes", "list_resources_all", &msg)
            }
            _ => return Err(undeclared(&request.describe())),
        }
        .map_err(|e| LookupFailure(host_error_text(&e.to_string()).to_owned()))
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl<P> Cluster for HostCluster<P> {
    fn get(&mut self, request: &GetRequest) -> Result<Option<Value>, LookupFailure> {
        Err(LookupFailure(format!(
            "no Kubewarden host outside wasm to read {}",
            request.describe()
        )))
    }

    fn list(&mut self, request: &ListRequest) -> Result<Vec<Value>, LookupFailure> {
        Err(LookupFailure(format!(
            "no Kubewarden host outside wasm to read {}",
            request.describe()
        )))
    }
}
