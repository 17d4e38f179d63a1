//! BPE of one pretoken by merge rank (docs/spec.md §2.2): repeatedly merge every occurrence, left
//! to right, of the adjacent pair of lowest rank, as GPT-2's `bpe()` does. This is the cache-miss
//! path of the encoder: ~1 in 12 pretokens of real text, most of the encoder's time when cold.
//! Here: the entry points and the plain loop for short pretokens; long ones take the heap
//! (`heap.rs`). Both merge a round's pairs before those they make, which is tiktoken's order
//! (lowest rank, leftmost first, one at a time) as long as a merge only makes pairs of higher
//! rank; where one makes a lower one (some tables of ranks, HF lists with every split of a
//! token), they give up and the word is merged one pair at a time (`exact.rs`).

use super::exact::merge_exact;
use super::heap::merge_heap;
use super::pair_table::PairTable;
use super::ranks::{Input, Rank};
use crate::types::TokenId;

/// Pretokens up to this many bytes use the plain loop on stack arrays; longer ones the heap,
/// O(n log n), so a 1 MB pretoken of one letter takes milliseconds.
pub const SHORT: usize = 64;

/// BPE of the bytes `word` (2 to `SHORT` of them, as ids `byte_ids`), appended to `out`: the
/// plain loop, on stack arrays of 8, 16, 32 or 64 entries.
pub fn merge_short(
    pairs: &PairTable,
    byte_ids: &[TokenId; 256],
    word: &[u8],
    out: &mut Vec<TokenId>,
) {
    let input = Input::Bytes(word, byte_ids);
    if !merge_input(pairs, input, out) {
        merge_exact(pairs, input, out);
    }
}

/// BPE of the bytes `word` (1 or more, as ids `byte_ids`), appended to `out`: a byte is its id,
/// short words take the plain loop (`merge_short`), longer ones the heap (`merge_long`).
pub fn merge_bytes(
    pairs: &PairTable,
    byte_ids: &[TokenId; 256],
    word: &[u8],
    out: &mut Vec<TokenId>,
) {
    match word {
        &[byte] => out.push(byte_ids[byte as usize]),
        _ if word.len() <= SHORT => merge_short(pairs, byte_ids, word, out),
        _ => merge_long_bytes(pairs, byte_ids, word, out),
    }
}

/// `merge_short` of tokens (2 to `SHORT` of them) instead of bytes: the second of `Phases`.
pub fn merge_short_ids(pairs: &PairTable, ids: &[TokenId], out: &mut Vec<TokenId>) {
    let input = Input::Ids(ids);
    if !merge_input(pairs, input, out) {
        merge_exact(pairs, input, out);
    }
}

/// The same result in O(n log n) for long pretokens (`tokens`, any number): a heap of (rank,
/// position) over a linked list (`heap.rs`).
pub fn merge_long(pairs: &PairTable, tokens: &[TokenId], out: &mut Vec<TokenId>) {
    let input = Input::Ids(tokens);
    if !merge_heap::<false>(pairs, input, out) {
        merge_exact(pairs, input, out);
    }
}

/// `merge_long` of bytes, their first pairs looked up in the byte-pair grid.
pub fn merge_long_bytes(
    pairs: &PairTable,
    byte_ids: &[TokenId; 256],
    word: &[u8],
    out: &mut Vec<TokenId>,
) {
    let input = Input::Bytes(word, byte_ids);
    if !merge_heap::<false>(pairs, input, out) {
        merge_exact(pairs, input, out);
    }
}

/// `merge_long` with positions in 64 bits whatever the length (for tests: words of 4 G tokens).
#[cfg(test)]
pub fn merge_long_wide(pairs: &PairTable, tokens: &[TokenId], out: &mut Vec<TokenId>) {
    let input = Input::Ids(tokens);
    if !merge_heap::<true>(pairs, input, out) {
        merge_exact(pairs, input, out);
    }
}

/// The plain loop with the table's rank type; false (and nothing appended) if a merge made a pair
/// of lower rank than its own.
#[inline(always)]
fn merge_input(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) -> bool {
    // 32-bit ranks (mid tables, as cl100k's and o200k's, and wide ones) with AVX2 when the CPU
    // has it: 8 to a compare, where SSE2 takes 4 and has no 32-bit minimum (misses of 2-64
    // bytes 7-9% faster on the multilingual corpus). i16 ranks stay with SSE2: with AVX2 they
    // were 3-5% slower.
    #[cfg(target_arch = "x86_64")]
    if pairs.narrow.is_empty() && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2
        return unsafe { merge_input_avx2(pairs, input, out) };
    }
    merge_ranked::<false>(pairs, input, out)
}

/// `merge_short` without AVX2, which `merge_input` takes whenever the CPU has it: for the tests
/// to check the two paths against each other.
#[cfg(test)]
pub fn merge_short_sse2(
    pairs: &PairTable,
    byte_ids: &[TokenId; 256],
    word: &[u8],
    out: &mut Vec<TokenId>,
) {
    let input = Input::Bytes(word, byte_ids);
    if !merge_ranked::<false>(pairs, input, out) {
        merge_exact(pairs, input, out);
    }
}

/// `merge_input` compiled for AVX2, whose rounds scan 8 i32 ranks to an instruction.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn merge_input_avx2(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) -> bool {
    merge_ranked::<true>(pairs, input, out)
}

/// `merge_sized` with the table's rank type; `AVX2`: the caller runs with AVX2.
#[inline(always)]
fn merge_ranked<const AVX2: bool>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) -> bool {
    // ranks in 16 bits when they fit (the narrow table), eight to a SIMD compare; ids for ranks
    // with a mid table, four to one (eight with AVX2)
    match (pairs.narrow.is_empty(), pairs.mid.is_empty()) {
        (false, _) => merge_sized::<i16, AVX2>(pairs, input, out),
        (true, false) => merge_sized::<i32, AVX2>(pairs, input, out),
        (true, true) => merge_sized::<u32, AVX2>(pairs, input, out),
    }
}

/// `merge_n` on arrays as long as the input needs: each round scans all `N` entries for the
/// lowest rank (branch-free), so N follows n.
#[inline(always)]
fn merge_sized<R: Rank, const AVX2: bool>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) -> bool {
    match input.len() {
        0..=8 => merge_n::<8, R, AVX2>(pairs, input, out),
        9..=16 => merge_n::<16, R, AVX2>(pairs, input, out),
        17..=32 => merge_n::<32, R, AVX2>(pairs, input, out),
        _ => merge_n::<SHORT, R, AVX2>(pairs, input, out),
    }
}

/// The plain loop over a linked list of at most `N` tokens: find the lowest-rank pair, merge all
/// its occurrences left to right, repeat. `order[i]` is the rank of the pair that starts at `i`
/// (`NONE` if it never merges or `i` is merged away), so the lowest rank and where it occurs
/// come from one pass over all `N` entries without branches: SIMD compares of 8 i16 ranks at a
/// time (SSE2 has no 32-bit minimum: with i32 entries the scan was ~65 instructions a round,
/// a third of the miss path's). A merge only makes pairs of higher rank, so the places found
/// at the start of a round are all it merges (less those an overlapping merge took). Entries
/// are looked up again only next to a merge; merged-away tokens stay in place, unlinked.
#[inline(always)]
fn merge_n<const N: usize, R: Rank, const AVX2: bool>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) -> bool {
    let n = input.len();
    debug_assert!((2..=N).contains(&n) && N <= 64 && N.is_multiple_of(8));
    let mut tok = [0 as TokenId; N];
    let mut merged = [0 as TokenId; N];
    let mut order = [R::NONE; N];
    // next[i]: the next token after i (n at the end); prev[i]: the one before (N at the start)
    let mut next = [0u8; N];
    let mut prev = [0u8; N];
    for i in 0..n {
        tok[i] = match input {
            Input::Bytes(word, byte_ids) => byte_ids[word[i] as usize],
            Input::Ids(ids) => ids[i],
        };
        next[i] = (i + 1) as u8;
        prev[i] = i.wrapping_sub(1).min(N) as u8;
    }
    let set = |order: &mut [R; N], merged: &mut [TokenId; N], i: usize, (r, id)| {
        order[i] = r;
        merged[i] = id;
    };
    for i in 0..n - 1 {
        let merge = match input {
            Input::Bytes(word, _) => R::get_bytes(pairs, word[i], word[i + 1]),
            Input::Ids(_) => R::get(pairs, tok[i], tok[i + 1]),
        };
        set(&mut order, &mut merged, i, merge);
    }
    loop {
        let (rank, mut at) = match AVX2 {
            // SAFETY: `AVX2` only when the CPU has it (`merge_input`)
            true => unsafe { R::lowest_avx2(&order) },
            false => R::lowest(&order),
        };
        if rank == R::NONE {
            break;
        }
        while at != 0 {
            let p = at.trailing_zeros() as usize;
            at &= at - 1;
            if order[p] != rank {
                continue; // merged away by the occurrence before it (as in "aaa")
            }
            // every entry of this rank is an occurrence of that one pair: merge it at p
            let q = next[p] as usize;
            tok[p] = merged[p];
            order[q] = R::NONE;
            order[p] = R::NONE;
            let after = next[q] as usize;
            next[p] = after as u8;
            // a pair of lower rank than this round's: tiktoken would merge it next, before this
            // round's other places (never with merges of a trained tokenizer, whose pairs rank
            // above the pairs that make their tokens)
            let mut lower = false;
            if after < n {
                prev[after] = p as u8;
                let merge = R::get(pairs, tok[p], tok[after]);
                lower |= merge.0 < rank;
                set(&mut order, &mut merged, p, merge);
            }
            let before = prev[p] as usize;
            if before < N {
                let merge = R::get(pairs, tok[before], tok[p]);
                lower |= merge.0 < rank;
                set(&mut order, &mut merged, before, merge);
            }
            if lower && pairs.one_at_a_time {
                return false;
            }
        }
    }
    let mut i = 0;
    while i < n {
        out.push(tok[i]);
        i = next[i] as usize;
    }
    true
}
