//! The wasm side of a policy: the Kubewarden host's cluster callbacks, limited to the calls
//! a policy declares, the waPC registration [`export_policy!`](crate::export_policy) uses,
//! and the pages a fresh instance writes before anything reads them ([`touch_first`]).

pub use kubewarden_policy_sdk::protocol_version_guest;
pub use wapc_guest::register_function;

use std::sync::atomic::{AtomicU32, Ordering};

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

/// A static with a non-zero initial value: the linker places it in the module's `.data`,
/// beside the statics the guest runtime sets up on its first call (wapc-guest's function
/// registry), which it reads before it writes them.
static WRITABLE_DATA: AtomicU32 = AtomicU32::new(1);

/// The bytes below the stack's top that [`touch_first`] writes: into the second 4 KiB page,
/// which decoding any request reaches (its nested frames take more than one page).
pub const STACK_TOUCHED: usize = 6 * 1024;

/// Writes the pages of linear memory that every evaluation of a fresh instance uses, before
/// anything reads them (`docs/semantics.md#cost`): the top [`STACK_TOUCHED`] bytes of the
/// stack and the page of `.data`. A page read first is mapped read-only (the zero page, or
/// the module's data image) and faults again when written; written first, it faults once.
/// Called first by the `wapc_init` of [`export_policy!`](crate::export_policy).
#[inline(never)]
pub fn touch_first() {
    std::hint::black_box(&WRITABLE_DATA).store(2, Ordering::Relaxed);
    touch_stack();
}

/// Writes the top [`STACK_TOUCHED`] bytes of the stack: this frame's array lies just below
/// its caller's, which the host calls with the stack empty.
#[inline(never)]
fn touch_stack() {
    let mut top = [0u8; STACK_TOUCHED];
    std::hint::black_box(&mut top);
}
