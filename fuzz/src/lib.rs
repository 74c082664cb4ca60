//! The fuzz targets' shared bodies: each target file is one macro call naming the policy.
//! The checks are `policy_admission::testing::fuzz_validate` and `fuzz_settings`; a target
//! panics (a crash for libFuzzer) only when a robustness property is broken.

pub use libfuzzer_sys;

/// A `validate` target: the input is a `validate` payload `{"request": …, "settings": …}`.
#[macro_export]
macro_rules! fuzz_validate {
    ($policy:ty) => {
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            ::policy_admission::testing::fuzz_validate::<$policy>(data);
        });
    };
}

/// A `validate_settings` target: the input is a settings document.
#[macro_export]
macro_rules! fuzz_settings {
    ($policy:ty) => {
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            ::policy_admission::testing::fuzz_settings::<$policy>(data);
        });
    };
}
