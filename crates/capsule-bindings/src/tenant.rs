//! Capsule Tenant manifests: one or more `capsule.clastix.io/v1beta2` `Tenant` documents.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The only Tenant API version read: v1beta1 names its fields differently.
pub const API_VERSION: &str = "capsule.clastix.io/v1beta2";

/// One Tenant: its name and its `spec`, read as generic JSON so that no field is dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    /// `metadata.name`.
    pub name: String,
    /// `spec` (empty when absent).
    pub spec: Map<String, Value>,
}

/// Whether `name` can name bindings: lower-case letters, digits, `-` and `.`, starting and
/// ending with a letter or digit, at most 63 characters (the binding names add a suffix).
fn is_tenant_name(name: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| alnum(b) || b == b'-' || b == b'.')
        && name.bytes().next().is_some_and(alnum)
        && name.bytes().last().is_some_and(alnum)
}

/// Reads every Tenant of a YAML text: `---` documents, each a Tenant or a list (`kind: List`
/// or `TenantList`, `items`). Empty documents are skipped; anything else is an error naming
/// `origin` and the document.
///
/// ```
/// let tenants = capsule_bindings::parse_tenants(
///     "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: solar}\nspec: {nodeSelector: {pool: renewable}}\n",
///     "solar.yaml",
/// ).unwrap();
/// assert_eq!(tenants[0].name, "solar");
/// assert!(tenants[0].spec.contains_key("nodeSelector"));
/// ```
pub fn parse_tenants(text: &str, origin: &str) -> Result<Vec<Tenant>> {
    let mut tenants = Vec::new();
    for (n, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let where_ = format!("{origin}, document {}", n + 1);
        let value = Value::deserialize(document)
            .map_err(|e| Error::Invalid(format!("{where_}: not YAML: {e}")))?;
        match value {
            Value::Null => {}
            Value::Object(object) => read_document(object, &where_, &mut tenants)?,
            _ => return Err(Error::Invalid(format!("{where_}: not an object"))),
        }
    }
    if tenants.is_empty() {
        return Err(Error::Invalid(format!("{origin}: no Tenant")));
    }
    Ok(tenants)
}

fn read_document(object: Map<String, Value>, where_: &str, out: &mut Vec<Tenant>) -> Result<()> {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == "List" || kind == "TenantList" {
        let items = object
            .get("items")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Invalid(format!("{where_}: a {kind} without items")))?;
        for (i, item) in items.iter().enumerate() {
            let item_where = format!("{where_}, items[{i}]");
            let Value::Object(item) = item else {
                return Err(Error::Invalid(format!("{item_where}: not an object")));
            };
            out.push(read_tenant(item.clone(), &item_where)?);
        }
        return Ok(());
    }
    out.push(read_tenant(object, where_)?);
    Ok(())
}

fn read_tenant(mut object: Map<String, Value>, where_: &str) -> Result<Tenant> {
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    if kind != Some("Tenant") {
        return Err(Error::Invalid(format!(
            "{where_}: kind {:?} is not a Capsule Tenant",
            kind.unwrap_or_default()
        )));
    }
    if api_version != Some(API_VERSION) {
        return Err(Error::Invalid(format!(
            "{where_}: apiVersion {:?}: only {API_VERSION} Tenants are read (convert older ones with Capsule's conversion webhook first)",
            api_version.unwrap_or_default()
        )));
    }
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !is_tenant_name(&name) {
        return Err(Error::Invalid(format!(
            "{where_}: metadata.name {name:?} is not a valid Tenant name"
        )));
    }
    let spec = match object.remove("spec") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(spec)) => spec,
        Some(_) => {
            return Err(Error::Invalid(format!(
                "{where_}: Tenant {name}: spec is not an object"
            )));
        }
    };
    Ok(Tenant { name, spec })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOLAR: &str = "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: solar}\nspec: {owners: [{name: alice, kind: User}]}\n";

    #[test]
    fn reads_documents_and_lists() {
        let text = format!(
            "{SOLAR}---\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: capsule.clastix.io/v1beta2\n  kind: Tenant\n  metadata: {{name: oil}}\n"
        );
        let tenants = parse_tenants(&text, "t.yaml").unwrap();
        let names: Vec<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["solar", "oil"]);
        assert!(tenants[1].spec.is_empty());
    }

    #[test]
    fn refuses_what_is_not_a_v1beta2_tenant() {
        for (text, needle) in [
            ("", "no Tenant"),
            ("[1]", "not an object"),
            (": :", "not YAML"),
            (
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
                "not a Capsule Tenant",
            ),
            (
                "apiVersion: capsule.clastix.io/v1beta1\nkind: Tenant\nmetadata: {name: a}\n",
                "only capsule.clastix.io/v1beta2",
            ),
            (
                "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: Solar}\n",
                "not a valid Tenant name",
            ),
            (
                "apiVersion: capsule.clastix.io/v1beta2\nkind: Tenant\nmetadata: {name: a}\nspec: []\n",
                "spec is not an object",
            ),
            ("kind: List\n", "without items"),
        ] {
            let err = parse_tenants(text, "t.yaml").unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn tenant_names() {
        assert!(is_tenant_name("solar"));
        assert!(is_tenant_name("solar.prod-1"));
        for bad in ["", "-a", "a-", "A", "a_b", &"a".repeat(64)] {
            assert!(!is_tenant_name(bad), "{bad}");
        }
    }
}
