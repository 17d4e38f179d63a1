//! Helpers of the unit tests (built only for `cargo test`): generated inputs that are the same
//! every run, and the definitions they check against. No test lives here: each module keeps
//! its own beside its code.

use crate::types::{Pair, TokenId};

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

/// The BPE of `word` by the definition (docs/spec.md §2.2): the adjacent pair of lowest rank,
/// merged left to right, until none is left (merge i makes id 256 + i).
pub(crate) fn bpe_by_definition(word: &[u8], merges: &[Pair]) -> Vec<TokenId> {
    let mut t: Vec<TokenId> = word.iter().map(|&b| b as TokenId).collect();
    loop {
        let best = (0..t.len().saturating_sub(1))
            .filter_map(|i| {
                let r = merges.iter().position(|&m| m == (t[i], t[i + 1]))?;
                Some(r)
            })
            .min();
        let Some(r) = best else { return t };
        let (a, b) = merges[r];
        let mut out = Vec::new();
        let mut i = 0;
        while i < t.len() {
            if i + 1 < t.len() && (t[i], t[i + 1]) == (a, b) {
                out.push(256 + r as TokenId);
                i += 2;
            } else {
                out.push(t[i]);
                i += 1;
            }
        }
        t = out;
    }
}
