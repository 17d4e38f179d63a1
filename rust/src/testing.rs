//! Helpers of the unit tests (built only for `cargo test`): generated inputs that are the same
//! every run. No test lives here: each module keeps its own beside its code.

/// Pseudo-random numbers below `n` (a linear congruential generator), the same every run: the
/// tests' generated inputs.
pub(crate) fn numbers(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    }
}
