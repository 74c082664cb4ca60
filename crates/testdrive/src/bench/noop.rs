//! The no-op guest `testdrive bench-server` measures beside each Kubewarden pair: a waPC
//! policy that receives every request and its settings and reads neither (`noop.wat`).
//! Handed our policy's settings, policy-server spends on it what it spends on any request
//! with these settings apart from the guest's own work, so its throughput is the most a
//! policy can reach there, and its ratio to Kubewarden's policy the most a policy can be
//! ahead of it (README "Performance in policy-server").

use policy_host::error::{Error, Result};
use policy_host::metadata::{Metadata, annotate};

/// The guest's text.
const WAT: &str = include_str!("noop.wat");

/// The no-op guest as policy-server loads it: compiled from its text and annotated (protocol
/// v1, kwctl's defaults, no rules).
pub fn annotated_module() -> Result<Vec<u8>> {
    let wasm = wat::parse_str(WAT).map_err(|e| Error::Invalid(format!("noop.wat: {e}")))?;
    annotate(&wasm, Metadata::default(), "v1", None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;
    use policy_host::callbacks::{NoCluster, shared};
    use policy_host::host::Host;
    use serde_json::json;

    fn host() -> Host {
        Host::load(&annotated_module().unwrap(), None).unwrap()
    }

    #[test]
    fn it_is_an_annotated_v1_policy_with_valid_settings() {
        let host = host();
        assert!(host.is_annotated());
        assert_eq!(host.protocol_version().unwrap(), "v1");
        let settings = host
            .validate_settings(&json!({"anything": [1, 2]}))
            .unwrap();
        assert!(settings.valid, "{settings:?}");
    }

    #[test]
    fn it_accepts_any_request_without_changing_it() {
        let host = host();
        // a privileged Pod, which pod-security-policy refuses under the baseline and
        // restricted presets
        let privileged_pod = json!({
            "uid": "u", "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "object": {"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "c", "image": "x", "securityContext": {"privileged": true}}
            ]}}
        });
        let eval = host
            .validate(&privileged_pod, &json!({}), shared(NoCluster::default()))
            .unwrap();
        assert!(eval.response.allowed);
        assert_eq!(eval.patch, None);
        assert_eq!(eval.mutated_object, None);
    }

    #[test]
    fn it_receives_a_payload_larger_than_its_memory() {
        // ~2.8 MB of labels: the guest grows its memory past its first 64 KiB page
        let labels: serde_json::Map<String, serde_json::Value> = (0..100_000)
            .map(|i| (format!("label-{i}"), json!(format!("value-{i}"))))
            .collect();
        let request =
            json!({"uid": "u", "operation": "CREATE", "object": {"metadata": {"labels": labels}}});
        let host = host();
        let eval = host
            .validate(&request, &json!({}), shared(NoCluster::default()))
            .unwrap();
        assert!(eval.response.allowed);
        let peak = host
            .peak_memory(&request, &json!({}), &|| shared(NoCluster::default()))
            .unwrap();
        let payload = serde_json::to_vec(&json!({"request": request, "settings": {}})).unwrap();
        assert!(
            peak >= payload.len(),
            "peak {peak} < payload {}",
            payload.len()
        );
    }
}
