//! Test doubles for the APIs OpenShift serves and a plain kube-apiserver does not: the
//! `user.openshift.io/v1` Groups and Users namespace-organization and namespace-quota read
//! when their settings opt in. Each is a CustomResourceDefinition of that group and kind,
//! cluster-scoped like OpenShift's, whose schema keeps every field (OpenShift's own schema
//! is not this repository's to copy): enough for the objects the cases hold to exist and
//! for RBAC to judge the reads. Everything else the cluster serves is the real thing.

use serde_json::{Value, json};

/// The CRDs of OpenShift's Groups and Users.
pub fn openshift_user_api() -> Vec<Value> {
    [("Group", "groups", "group"), ("User", "users", "user")]
        .into_iter()
        .map(|(kind, plural, singular)| {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {
                    "name": format!("{plural}.user.openshift.io"),
                    "labels": {"tenancy-policies.io/test-double": "openshift"},
                },
                "spec": {
                    "group": "user.openshift.io",
                    "scope": "Cluster",
                    "names": {"kind": kind, "plural": plural, "singular": singular, "listKind": format!("{kind}List")},
                    "versions": [{
                        "name": "v1",
                        "served": true,
                        "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    }],
                },
            })
        })
        .collect()
}
