//! What an evaluation leaves behind (`docs/semantics.md#cost`).
//!
//! policy-server makes a fresh instance for every request and discards it with its memory,
//! so freeing the decoded request, the settings and the response block by block at the end
//! of an evaluation is work nobody gains from: on an instance's first evaluation they are
//! left in place. From the second evaluation on (an instance reused, as `kwctl bench` and
//! testdrive's reused runs do) they are freed as usual, so an instance never keeps more than
//! one evaluation's leftovers. Outside wasm (tests, native benchmarks) they are always freed.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this instance has finished an evaluation.
static EVALUATED: AtomicBool = AtomicBool::new(false);

/// Lets `value` go at the end of an evaluation: left in place during the instance's first
/// evaluation inside wasm, dropped otherwise.
pub fn release<T>(value: T) {
    if cfg!(target_arch = "wasm32") && !EVALUATED.load(Ordering::Relaxed) {
        std::mem::forget(value);
    }
}

/// Marks the end of an evaluation: what later evaluations leave behind is freed.
pub fn evaluation_done() {
    EVALUATED.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn outside_wasm_a_released_value_is_dropped() {
        let shared = Rc::new(());
        release(Rc::clone(&shared));
        assert_eq!(Rc::strong_count(&shared), 1);
        evaluation_done();
        release(Rc::clone(&shared));
        assert_eq!(Rc::strong_count(&shared), 1);
    }
}
