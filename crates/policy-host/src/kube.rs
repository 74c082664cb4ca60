//! What the host knows of Kubernetes names and admission rules: the resource name of a kind,
//! the strings of a rule's list and whether such a list names a value.

use serde_json::Value;

/// The strings of the list at `key` of `value` (none when absent or of another shape).
pub fn strings(value: &Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Whether a rule's list names `value`, itself or by `*`.
pub fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// The resource name of a kind, by the API's English pluralisation (`Ingress` → `ingresses`,
/// `NetworkPolicy` → `networkpolicies`).
pub fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_the_api() {
        assert_eq!(plural("Namespace"), "namespaces");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("PriorityClass"), "priorityclasses");
        assert_eq!(plural("Gateway"), "gateways");
    }
}
