//! BPE of one pretoken by merge rank (docs/spec.md §2.2): repeatedly merge every occurrence, left
//! to right, of the adjacent pair of lowest rank, as GPT-2's `bpe()` does. This is the cache-miss
//! path of the encoder: ~1 in 12 pretokens of real text, most of the encoder's time when cold.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::pair_table::{id_of, rank_of, Merge, PairTable};
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
    merge_input(pairs, Input::Bytes(word, byte_ids), out);
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
    merge_input(pairs, Input::Ids(ids), out);
}

/// What the plain loop starts from.
#[derive(Clone, Copy)]
enum Input<'a> {
    Bytes(&'a [u8], &'a [TokenId; 256]),
    Ids(&'a [TokenId]),
}

impl Input<'_> {
    fn len(&self) -> usize {
        match self {
            Input::Bytes(b, _) => b.len(),
            Input::Ids(ids) => ids.len(),
        }
    }
}

#[inline(always)]
fn merge_input(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) {
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
    merge_ranked::<false>(pairs, Input::Bytes(word, byte_ids), out);
}

/// `merge_input` compiled for AVX2, whose rounds scan 8 i32 ranks to an instruction.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn merge_input_avx2(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) {
    merge_ranked::<true>(pairs, input, out)
}

/// `merge_sized` with the table's rank type; `AVX2`: the caller runs with AVX2.
#[inline(always)]
fn merge_ranked<const AVX2: bool>(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) {
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
) {
    match input.len() {
        0..=8 => merge_n::<8, R, AVX2>(pairs, input, out),
        9..=16 => merge_n::<16, R, AVX2>(pairs, input, out),
        17..=32 => merge_n::<32, R, AVX2>(pairs, input, out),
        _ => merge_n::<SHORT, R, AVX2>(pairs, input, out),
    }
}

/// A merge rank as `merge_n` keeps it: i16 (biased by 2^15) for ranks below 2^16 - 1; i32, the
/// merged id, with a mid pair table; else u32.
trait Rank: Copy + Ord {
    /// No pair here (or one that never merges); above every rank.
    const NONE: Self;
    /// The merge of (a, b): its rank (or `NONE`) and merged id.
    fn get(pairs: &PairTable, a: TokenId, b: TokenId) -> (Self, TokenId);
    /// The merge of the single bytes a and b.
    fn get_bytes(pairs: &PairTable, a: u8, b: u8) -> (Self, TokenId);
    /// The lowest of `ranks`, and where it occurs (bit i: at `ranks[i]`).
    fn lowest<const N: usize>(ranks: &[Self; N]) -> (Self, u64);
    /// `lowest`, with AVX2.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[inline(always)]
    unsafe fn lowest_avx2<const N: usize>(ranks: &[Self; N]) -> (Self, u64) {
        Self::lowest(ranks)
    }
    /// The rank as a u32 in the same order (`merge_heap`'s keys).
    fn order(self) -> u32;
}

/// A merge as a u32 rank (`u32::MAX` for none) and its id.
#[inline(always)]
fn wide(merge: Merge) -> (u32, TokenId) {
    (rank_of(merge).min(u32::MAX as u64) as u32, id_of(merge))
}

impl Rank for u32 {
    const NONE: Self = u32::MAX;

    #[inline(always)]
    fn get(pairs: &PairTable, a: TokenId, b: TokenId) -> (Self, TokenId) {
        wide(pairs.get(a, b))
    }

    #[inline(always)]
    fn get_bytes(pairs: &PairTable, a: u8, b: u8) -> (Self, TokenId) {
        wide(pairs.get_bytes(a, b))
    }

    #[inline(always)]
    fn order(self) -> u32 {
        self
    }

    #[inline(always)]
    fn lowest<const N: usize>(ranks: &[Self; N]) -> (Self, u64) {
        lowest_scalar(ranks)
    }
}

/// `Rank::lowest` one entry at a time.
#[inline(always)]
fn lowest_scalar<R: Rank + Ord, const N: usize>(ranks: &[R; N]) -> (R, u64) {
    let low = ranks.iter().copied().min().unwrap_or(R::NONE);
    let at = ranks
        .iter()
        .enumerate()
        .fold(0, |at, (i, &r)| at | ((r == low) as u64) << i);
    (low, at)
}

/// A mid table's id (`u32::MAX`: none) as an i32 rank (ids are below 2^21) and the id.
#[inline(always)]
fn mid_merge(id: u32) -> (i32, TokenId) {
    (id.min(i32::MAX as u32) as i32, id)
}

impl Rank for i32 {
    const NONE: Self = i32::MAX;

    #[inline(always)]
    fn get(pairs: &PairTable, a: TokenId, b: TokenId) -> (Self, TokenId) {
        mid_merge(pairs.get_mid(a, b))
    }

    #[inline(always)]
    fn get_bytes(pairs: &PairTable, a: u8, b: u8) -> (Self, TokenId) {
        mid_merge(pairs.get_bytes_mid(a, b))
    }

    #[inline(always)]
    fn order(self) -> u32 {
        self as u32 // an id below 2^21, or i32::MAX
    }

    #[inline(always)]
    fn lowest<const N: usize>(ranks: &[Self; N]) -> (Self, u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads read 4 i32s inside `ranks`
        // (N is a multiple of 8).
        unsafe {
            use std::arch::x86_64::*;
            let load = |k: usize| _mm_loadu_si128(ranks.as_ptr().add(4 * k).cast());
            // SSE2 has no 32-bit minimum: a compare and a select
            let min = |x: __m128i, y: __m128i| {
                let lt = _mm_cmplt_epi32(x, y);
                _mm_or_si128(_mm_and_si128(lt, x), _mm_andnot_si128(lt, y))
            };
            let mut low = load(0);
            for k in 1..N / 4 {
                low = min(low, load(k));
            }
            low = min(low, _mm_shuffle_epi32::<0x4e>(low));
            low = min(low, _mm_shuffle_epi32::<0xb1>(low));
            let mut at = 0u64;
            for k in 0..N / 4 {
                let eq = _mm_castsi128_ps(_mm_cmpeq_epi32(load(k), low));
                at |= (_mm_movemask_ps(eq) as u64) << (4 * k);
            }
            (_mm_cvtsi128_si32(low), at)
        }
        #[cfg(not(target_arch = "x86_64"))]
        lowest_scalar(ranks)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn lowest_avx2<const N: usize>(ranks: &[Self; N]) -> (Self, u64) {
        use std::arch::x86_64::*;
        // SAFETY: the loads read 8 i32s inside `ranks` (N is a multiple of 8)
        let load = |k: usize| unsafe { _mm256_loadu_si256(ranks.as_ptr().add(8 * k).cast()) };
        let mut low = load(0);
        for k in 1..N / 8 {
            low = _mm256_min_epi32(low, load(k));
        }
        let half = _mm_min_epi32(
            _mm256_castsi256_si128(low),
            _mm256_extracti128_si256::<1>(low),
        );
        let half = _mm_min_epi32(half, _mm_shuffle_epi32::<0x4e>(half));
        let half = _mm_min_epi32(half, _mm_shuffle_epi32::<0xb1>(half));
        let low = _mm256_broadcastd_epi32(half);
        let mut at = 0u64;
        for k in 0..N / 8 {
            let eq = _mm256_castsi256_ps(_mm256_cmpeq_epi32(load(k), low));
            at |= (_mm256_movemask_ps(eq) as u32 as u64) << (8 * k);
        }
        (_mm_cvtsi128_si32(half), at)
    }
}

/// A narrow table's `rank << 16 | id` (`u32::MAX`: none, which gives `i16::MAX`) as an i16
/// rank biased by 2^15 and its id.
#[inline(always)]
fn narrow_merge(m: u32) -> (i16, TokenId) {
    (((m >> 16) as i32 - 0x8000) as i16, m & 0xffff)
}

impl Rank for i16 {
    const NONE: Self = i16::MAX;

    #[inline(always)]
    fn get(pairs: &PairTable, a: TokenId, b: TokenId) -> (Self, TokenId) {
        narrow_merge(pairs.get_narrow(a, b))
    }

    #[inline(always)]
    fn get_bytes(pairs: &PairTable, a: u8, b: u8) -> (Self, TokenId) {
        narrow_merge(pairs.get_bytes_narrow(a, b))
    }

    #[inline(always)]
    fn order(self) -> u32 {
        (self as i32 + (1 << 15)) as u32 // the bias undone
    }

    #[inline(always)]
    fn lowest<const N: usize>(ranks: &[Self; N]) -> (Self, u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads read 8 i16s inside `ranks`
        // (N is a multiple of 8).
        unsafe {
            use std::arch::x86_64::*;
            let load = |k: usize| _mm_loadu_si128(ranks.as_ptr().add(8 * k).cast());
            let mut low = load(0);
            for k in 1..N / 8 {
                low = _mm_min_epi16(low, load(k));
            }
            low = _mm_min_epi16(low, _mm_shuffle_epi32::<0x4e>(low));
            low = _mm_min_epi16(low, _mm_shuffle_epi32::<0xb1>(low));
            low = _mm_min_epi16(low, _mm_shufflelo_epi16::<0xb1>(low));
            let low = _mm_shuffle_epi32::<0>(_mm_shufflelo_epi16::<0>(low));
            let mut at = 0u64;
            for k in 0..N / 8 {
                let eq = _mm_packs_epi16(_mm_cmpeq_epi16(load(k), low), _mm_setzero_si128());
                at |= ((_mm_movemask_epi8(eq) & 0xff) as u64) << (8 * k);
            }
            (_mm_cvtsi128_si32(low) as i16, at)
        }
        #[cfg(not(target_arch = "x86_64"))]
        lowest_scalar(ranks)
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
) {
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
            if after < n {
                prev[after] = p as u8;
                set(
                    &mut order,
                    &mut merged,
                    p,
                    R::get(pairs, tok[p], tok[after]),
                );
            }
            let before = prev[p] as usize;
            if before < N {
                set(
                    &mut order,
                    &mut merged,
                    before,
                    R::get(pairs, tok[before], tok[p]),
                );
            }
        }
    }
    let mut i = 0;
    while i < n {
        out.push(tok[i]);
        i = next[i] as usize;
    }
}

/// The same result in O(n log n) for long pretokens (`tokens`, any number): a heap of (rank,
/// position) over a linked list (`merge_heap_at`).
pub fn merge_long(pairs: &PairTable, tokens: &[TokenId], out: &mut Vec<TokenId>) {
    merge_heap::<false>(pairs, Input::Ids(tokens), out);
}

/// `merge_long` of bytes, their first pairs looked up in the byte-pair grid.
pub fn merge_long_bytes(
    pairs: &PairTable,
    byte_ids: &[TokenId; 256],
    word: &[u8],
    out: &mut Vec<TokenId>,
) {
    merge_heap::<false>(pairs, Input::Bytes(word, byte_ids), out);
}

/// `merge_long` with positions in 64 bits whatever the length (for tests: words of 4 G tokens).
#[cfg(test)]
pub fn merge_long_wide(pairs: &PairTable, tokens: &[TokenId], out: &mut Vec<TokenId>) {
    merge_heap::<true>(pairs, Input::Ids(tokens), out);
}

/// `merge_heap_at` with the table's own rank type (as `merge_input` picks it) and positions in
/// 32 bits when they fit: heap entries of 8 bytes, not 16.
fn merge_heap<const WIDE: bool>(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) {
    match (pairs.narrow.is_empty(), pairs.mid.is_empty()) {
        (false, _) => merge_heap_ranked::<i16, WIDE>(pairs, input, out),
        (true, false) => merge_heap_ranked::<i32, WIDE>(pairs, input, out),
        (true, true) => merge_heap_ranked::<u32, WIDE>(pairs, input, out),
    }
}

/// `merge_heap_at` with positions in 32 bits unless they do not fit (or `WIDE` asks for 64).
fn merge_heap_ranked<R: Rank, const WIDE: bool>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) {
    match u32::try_from(input.len()) {
        Ok(n) if n < u32::MAX && !WIDE => merge_heap_at::<R, u32>(pairs, input, out),
        _ => merge_heap_at::<R, usize>(pairs, input, out),
    }
}

/// A token's position in `merge_heap_at`; `END` marks no neighbour. A heap entry (`Key`) is a
/// rank (`Rank::order`) and a position, ordered by rank, then position.
trait Pos: Copy + Ord {
    const END: Self;
    type Key: Copy + Ord;
    fn of(i: usize) -> Self;
    fn at(self) -> usize;
    fn key(rank: u32, at: Self) -> Self::Key;
    fn rank(key: Self::Key) -> u32;
    fn pos(key: Self::Key) -> Self;
}

impl Pos for u32 {
    const END: Self = u32::MAX;
    type Key = u64; // one compare a step
    fn of(i: usize) -> Self {
        i as u32
    }
    fn at(self) -> usize {
        self as usize
    }
    fn key(rank: u32, at: Self) -> u64 {
        (rank as u64) << 32 | at as u64
    }
    fn rank(key: u64) -> u32 {
        (key >> 32) as u32
    }
    fn pos(key: u64) -> Self {
        key as u32
    }
}

impl Pos for usize {
    const END: Self = usize::MAX;
    type Key = (u32, usize);
    fn of(i: usize) -> Self {
        i
    }
    fn at(self) -> usize {
        self
    }
    fn key(rank: u32, at: Self) -> (u32, usize) {
        (rank, at)
    }
    fn rank(key: (u32, usize)) -> u32 {
        key.0
    }
    fn pos(key: (u32, usize)) -> Self {
        key.1
    }
}

/// BPE of any number of tokens. All entries of one rank are merged, left to right, before the pairs
/// they make are queued, as in the plain loop. An entry is checked when it comes out by looking
/// its pair up again, which also gives the merged id: a changed pair has another rank or none,
/// since the tokens of two entries at one position with one rank (one merged token) cover the
/// same bytes. A byte input's first pairs come from the byte-pair grid.
fn merge_heap_at<R: Rank, P: Pos>(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) {
    let n = input.len();
    let mut tok: Vec<TokenId> = match input {
        Input::Bytes(word, byte_ids) => word.iter().map(|&b| byte_ids[b as usize]).collect(),
        Input::Ids(ids) => ids.to_vec(),
    };
    if n < 2 {
        out.append(&mut tok);
        return;
    }
    // next: the token after (END: none, or merged away); prev: the one before (END: none)
    let mut next: Vec<P> = (1..=n)
        .map(|i| if i < n { P::of(i) } else { P::END })
        .collect();
    let mut prev: Vec<P> = (0..n)
        .map(|i| if i > 0 { P::of(i - 1) } else { P::END })
        .collect();
    let first = (0..n - 1).filter_map(|i| {
        let (rank, _) = match input {
            Input::Bytes(word, _) => R::get_bytes(pairs, word[i], word[i + 1]),
            Input::Ids(_) => R::get(pairs, tok[i], tok[i + 1]),
        };
        (rank != R::NONE).then(|| Reverse(P::key(rank.order(), P::of(i))))
    });
    let mut heap: BinaryHeap<Reverse<P::Key>> = first.collect();
    let queue = |heap: &mut BinaryHeap<_>, tok: &[TokenId], next: &[P], i: P| {
        let j = next[i.at()];
        if j != P::END {
            let (rank, _) = R::get(pairs, tok[i.at()], tok[j.at()]);
            if rank != R::NONE {
                heap.push(Reverse(P::key(rank.order(), i)));
            }
        }
    };
    let mut pending = Vec::new();
    while let Some(&Reverse(top)) = heap.peek() {
        let rank = P::rank(top);
        while let Some(&Reverse(key)) = heap.peek() {
            if P::rank(key) != rank {
                break;
            }
            heap.pop();
            let i = P::pos(key);
            let j = next[i.at()];
            if j == P::END {
                continue; // merged away, or its right neighbour was
            }
            let (now, merged) = R::get(pairs, tok[i.at()], tok[j.at()]);
            if now.order() != rank {
                continue; // the pair has changed since it was queued
            }
            tok[i.at()] = merged;
            let after = next[j.at()];
            next[i.at()] = after;
            next[j.at()] = P::END;
            if after != P::END {
                prev[after.at()] = i;
            }
            pending.push(i);
            if prev[i.at()] != P::END {
                pending.push(prev[i.at()]);
            }
        }
        for i in pending.drain(..) {
            queue(&mut heap, &tok, &next, i);
        }
    }
    let mut i = P::of(0);
    while i != P::END {
        out.push(tok[i.at()]);
        i = next[i.at()];
    }
}
