//! The [`robustness_tests!`](crate::robustness_tests) macro. It is defined whatever the
//! features, so that policy crates can invoke it unconditionally; what it expands to is
//! compiled for tests only, with `policy_admission::testing`.

/// Declares a policy's robustness suite: a module `robustness` compiled only for tests
/// (it needs the feature `testing`, a dev-dependency of every policy) checking that the
/// representative settings are valid and that properties a, b and c of `testing` hold.
///
/// Arguments: the policy type and a `policy_admission::testing::Robustness` value.
#[macro_export]
macro_rules! robustness_tests {
    ($policy:ty, $config:expr $(,)?) => {
        #[cfg(test)]
        mod robustness {
            #[allow(unused_imports)]
            use super::*;

            fn config() -> $crate::testing::Robustness {
                $config
            }

            #[test]
            fn representative_settings_are_valid() {
                $crate::testing::representative_settings_are_valid::<$policy>(&config());
            }

            #[test]
            fn arbitrary_requests_are_judged() {
                $crate::testing::arbitrary_requests_are_judged::<$policy>(&config());
            }

            #[test]
            fn failed_lookups_never_fail_open() {
                $crate::testing::failed_lookups_never_fail_open::<$policy>(&config());
            }

            #[test]
            fn arbitrary_settings_are_consistent() {
                $crate::testing::arbitrary_settings_are_consistent::<$policy>(&config());
            }
        }
    };
}
