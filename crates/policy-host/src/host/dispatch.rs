//! Host callbacks: the waPC calls a guest makes (`kubewarden/kubernetes/get_resource`, the
//! list calls, logging), checked against the policy's metadata and answered by the
//! evaluation's callbacks, as policy-evaluator's callback handler answers them.

use std::sync::{Arc, Mutex};

use crate::callbacks::{KubernetesRequest, SharedCallbacks};
use crate::metadata::Metadata;

#[derive(Default)]
pub(super) struct CallState {
    /// The evaluation's callbacks (none outside `validate`).
    pub(super) callbacks: Option<SharedCallbacks>,
    /// Host calls that failed, in order.
    pub(super) errors: Vec<String>,
}

pub(super) fn make_host_callback(
    state: Arc<Mutex<CallState>>,
    metadata: Option<Arc<Metadata>>,
    verbose: bool,
) -> Box<wapc::HostCallback> {
    Box::new(move |_id, binding, namespace, operation, payload| {
        let answer = dispatch(
            &state,
            metadata.as_deref(),
            verbose,
            binding,
            namespace,
            operation,
            payload,
        );
        if let Err(message) = &answer {
            if verbose {
                eprintln!(
                    "testdrive: host call {binding}/{namespace}/{operation} failed: {message}"
                );
            }
            if let Ok(mut s) = state.lock() {
                s.errors.push(format!("{namespace}/{operation}: {message}"));
            }
        }
        answer.map_err(Into::into)
    })
}

/// Answers one host call: logging, Kubernetes reads, or an error for what the host does not
/// support.
fn dispatch(
    state: &Mutex<CallState>,
    metadata: Option<&Metadata>,
    verbose: bool,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    if binding != "kubewarden" {
        return Err(format!("unknown binding: {binding}"));
    }
    match (namespace, operation) {
        ("tracing", "log") => {
            if verbose {
                eprintln!("guest log: {}", String::from_utf8_lossy(payload));
            }
            Ok(Vec::new())
        }
        ("tracing", _) => Err(format!("unknown operation: {operation}")),
        ("kubernetes", "can_i") => Err("kubernetes/can_i is not supported by testdrive".to_owned()),
        ("kubernetes", _) => kubernetes(state, metadata, verbose, operation, payload),
        _ => Err(format!(
            "host capability {namespace}/{operation} is not supported by testdrive"
        )),
    }
}

/// Answers a `kubewarden/kubernetes/<operation>` call from the evaluation's callbacks, after
/// the checks policy-server makes: the capability is allowed and the kind is a declared
/// context-aware resource.
fn kubernetes(
    state: &Mutex<CallState>,
    metadata: Option<&Metadata>,
    verbose: bool,
    operation: &str,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    // policy-server and kwctl refuse a call outside the allowed host capabilities
    // with this text; testdrive allows exactly the metadata's hostCapabilities
    let capability = format!("kubernetes/{operation}");
    if metadata.is_some_and(|m| !m.allows_capability(&capability)) {
        return Err(format!(
            "Policy has not been granted access to the '{capability}' host capability. \
             The violation has been reported."
        ));
    }
    let request = KubernetesRequest::from_host_call(operation, payload)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("unknown operation: {operation}"))?;
    let allowed =
        metadata.is_some_and(|m| m.allows_resource(request.api_version(), request.kind()));
    if !allowed {
        return Err(format!(
            "Policy has not been granted access to Kubernetes {}/{} resources. \
             The violation has been reported.",
            request.api_version(),
            request.kind()
        ));
    }
    let callbacks = state
        .lock()
        .map_err(|_| "testdrive: internal lock poisoned".to_owned())?
        .callbacks
        .clone();
    let Some(callbacks) = callbacks else {
        return Err("testdrive: no cluster state is available outside of `validate`".to_owned());
    };
    // policy-evaluator hands a failed read to the guest as `Callback evaluation
    // failure: {error:?}`, the anyhow debug form with a stack backtrace after the
    // first line; the guest must read only that first line.
    let answer = callbacks
        .lock()
        .map_err(|_| "testdrive: callbacks lock poisoned".to_owned())?
        .kubernetes(&request)
        .map_err(|message| {
            format!(
                "Callback evaluation failure: {message}\n\nStack backtrace:\n   0: <host frames, as kwctl prints them>"
            )
        });
    if verbose {
        match &answer {
            Ok(bytes) => eprintln!("testdrive: {} -> {} bytes", request.summary(), bytes.len()),
            Err(e) => eprintln!("testdrive: {} -> error: {e}", request.summary()),
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn dispatch_enforces_context_aware_resources() {
        let state = Mutex::new(CallState::default());
        let m = Metadata::from_yaml_str(
            "contextAwareResources:\n- apiVersion: v1\n  kind: Namespace\n",
            "t",
        )
        .unwrap();
        let payload = br#"{"api_version":"v1","kind":"Pod","name":"a","namespace":"b","disable_cache":false}"#;
        let err = dispatch(
            &state,
            Some(&m),
            false,
            "kubewarden",
            "kubernetes",
            "get_resource",
            payload,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "Policy has not been granted access to Kubernetes v1/Pod resources. The violation has been reported."
        );
        let ns = br#"{"api_version":"v1","kind":"Namespace","name":"a","namespace":null,"disable_cache":false}"#;
        // allowed, but no callbacks outside validate
        assert!(
            dispatch(
                &state,
                Some(&m),
                false,
                "kubewarden",
                "kubernetes",
                "get_resource",
                ns
            )
            .unwrap_err()
            .contains("no cluster state")
        );
        state.lock().unwrap().callbacks = Some(crate::callbacks::shared(
            crate::ClusterObjects::new(vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
            ])
            .unwrap(),
        ));
        let reply = dispatch(
            &state,
            Some(&m),
            false,
            "kubewarden",
            "kubernetes",
            "get_resource",
            ns,
        )
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&reply).unwrap()["metadata"]["name"],
            "a"
        );
        // no metadata: everything refused
        assert!(
            dispatch(
                &state,
                None,
                false,
                "kubewarden",
                "kubernetes",
                "get_resource",
                ns
            )
            .is_err()
        );
        // other calls
        assert!(dispatch(&state, None, false, "kubewarden", "tracing", "log", b"{}").is_ok());
        assert!(
            dispatch(
                &state,
                None,
                false,
                "kubewarden",
                "kubernetes",
                "can_i",
                b"{}"
            )
            .unwrap_err()
            .contains("not supported")
        );
        assert!(
            dispatch(
                &state,
                None,
                false,
                "kubewarden",
                "oci",
                "v1/manifest_digest",
                b"{}"
            )
            .is_err()
        );
        assert!(
            dispatch(
                &state,
                None,
                false,
                "other",
                "kubernetes",
                "get_resource",
                ns
            )
            .is_err()
        );
        assert!(
            dispatch(
                &state,
                Some(&m),
                false,
                "kubewarden",
                "kubernetes",
                "delete_everything",
                ns
            )
            .is_err()
        );
    }
}
