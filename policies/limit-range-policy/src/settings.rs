//! Settings of limit-range-policy (README "Settings"): exactly one of `limits` (one
//! LimitRange spec) and `items` (several, Capsule's shape), validated and merged by
//! `tenancy_rules::limit_range::settings`.

pub use tenancy_rules::limit_range::RawSettings;

/// Validated settings: the items merged by type.
pub type Settings = tenancy_rules::limit_range::LimitRanges;

#[cfg(test)]
mod tests {
    use super::*;
    use policy_decode::settings::Validated;
    use serde_json::json;

    /// The README's seed: Capsule's three LimitRange items as `items`.
    #[test]
    fn the_readme_seed_is_valid() {
        let s = Settings::parse(&json!({"items": [
            {"limits": [{"type": "Pod", "min": {"cpu": "50m", "memory": "5Mi"}, "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "10Mi"},
                "default": {"cpu": "200m", "memory": "100Mi"}, "min": {"cpu": "50m", "memory": "5Mi"},
                "max": {"cpu": "1", "memory": "1Gi"}}]},
            {"limits": [{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]}
        ]}))
        .unwrap();
        assert_eq!(s.resources.len(), 2);
        assert!(!s.claim.is_empty());
    }

    #[test]
    fn the_minimal_configuration_is_valid() {
        assert!(
            Settings::parse(&json!({"limits": [{"type": "Container", "max": {"memory": "1Gi"}}]}))
                .is_ok()
        );
        let err = Settings::parse(&json!({})).unwrap_err().to_string();
        assert!(err.starts_with("missing: give limits"), "{err}");
    }
}
