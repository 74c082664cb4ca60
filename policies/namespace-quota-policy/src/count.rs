//! README rule 3: the namespaces an organization has, counted from one list of the
//! Namespaces carrying its label, Terminating ones included. The host keeps and hands over
//! only their metadata (`docs/semantics.md#lookups`, `docs/semantics.md#cost`); each item is
//! decoded into its name alone, the rest skipped unparsed.

use policy_admission::cluster::{ListRequest, Lookups};
use policy_decode::PolicyError;
use serde::Deserialize;

/// The list of `org`'s Namespaces: every Namespace with label `<label>=<org>`, masked to
/// metadata. (A mask naming a metadata field keeps nothing else: the host always keeps the
/// whole `metadata`, and an empty mask list would keep everything.)
pub fn namespaces_of(label: &str, org: &str) -> ListRequest {
    ListRequest {
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        namespace: None,
        label_selector: Some(format!("{label}={org}")),
        field_selector: None,
        field_masks: Some(vec!["metadata.name".to_owned()]),
    }
}

/// A listed Namespace as the count reads it: its name only.
#[derive(Debug, Deserialize)]
struct Listed {
    metadata: ListedMetadata,
}

#[derive(Debug, Deserialize)]
struct ListedMetadata {
    name: String,
}

/// How many Namespaces `org` has, not counting `exclude` (the namespace an UPDATE moves).
pub fn count(
    label: &str,
    org: &str,
    exclude: Option<&str>,
    lookups: &mut Lookups<'_>,
) -> Result<u64, PolicyError> {
    let listed: Vec<Listed> = lookups.list_of(&namespaces_of(label, org))?;
    let counted = listed
        .iter()
        .filter(|n| Some(n.metadata.name.as_str()) != exclude)
        .count();
    Ok(u64::try_from(counted).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_admission::cluster::Objects;
    use serde_json::{Value, json};

    fn ns(name: &str, org: &str, phase: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"appuio.io/organization": org}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": phase}})
    }

    #[test]
    fn terminating_namespaces_count_and_the_moved_one_does_not() {
        let label = "appuio.io/organization";
        let mut cluster = Objects::new(vec![
            ns("acme-1", "acme", "Active"),
            ns("acme-2", "acme", "Terminating"),
            ns("beta-1", "beta", "Active"),
            ns("acme-lookalike", "acme-corp", "Active"),
        ]);
        let mut lookups = Lookups::new(&mut cluster);
        assert_eq!(count(label, "acme", None, &mut lookups).unwrap(), 2);
        assert_eq!(
            count(label, "acme", Some("acme-1"), &mut lookups).unwrap(),
            1
        );
        assert_eq!(count(label, "beta", None, &mut lookups).unwrap(), 1);
        assert_eq!(count(label, "gamma", None, &mut lookups).unwrap(), 0);
        let mut failing = Objects::default().failing("Namespace");
        let err = count(label, "acme", None, &mut Lookups::new(&mut failing)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read Namespace list: connection refused"
        );
    }

    #[test]
    fn the_list_is_masked_to_metadata() {
        let mut cluster = Objects::new(vec![ns("acme-1", "acme", "Active")]);
        let listed = policy_admission::cluster::Cluster::list(
            &mut cluster,
            &namespaces_of("appuio.io/organization", "acme"),
        )
        .unwrap();
        assert_eq!(
            listed,
            [json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "acme-1", "labels": {"appuio.io/organization": "acme"}}})]
        );
    }
}
