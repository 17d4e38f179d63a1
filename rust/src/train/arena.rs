//! How a word sits in the merge loop's arena, and reading and writing it there; laying the words
//! out is `words.rs`'s.
//!
//! Every word lives in one arena: a 16-byte header (its length now, its length at the start,
//! its count) and then its tokens, padded to 16 bytes. A word is named by its offset in these
//! 16-byte units, a u32 (arenas up to 64 GB). Why: a merge visits up to millions of words
//! scattered over the arena; with the header beside the tokens a visit is one memory access
//! instead of three (spans, counts, tokens), and words shrink in place. Tokens are u16 when
//! every id of the run fits (see `Token`).

use crate::types::TokenId;

/// How the arena stores a token id: as a u16 when every id of the run is below 2^16 (up to
/// 65,280 merges), else as a u32. Why: the arena is most of the loop's memory, and laying it
/// out and reading it back are two of its steps; on the large corpus u16 tokens make it 35%
/// smaller, and training's peak RSS lower by about the bytes saved.
pub(super) trait Token: Copy + Eq + Send + Sync + 'static {
    /// Tokens per 16-byte unit; the header is one unit.
    const UNIT: usize = 16 / std::mem::size_of::<Self>();
    /// The id of a token.
    fn id(self) -> TokenId;
    /// The token of an id, which fits (the loop picks the type by its largest id).
    fn of(id: TokenId) -> Self;
    /// The four u32 fields of the header that `h` starts with: 0 the length now, 1 the length
    /// at the start, 2 and 3 the count's low and high halves. Read together, with one bounds
    /// check: field by field they were an eighth of a merge's instructions (callgrind).
    fn header(h: &[Self]) -> [u32; 4];
    /// Sets field `k` of the header `h`.
    fn set_field(h: &mut [Self], k: usize, v: u32);
    /// Bit k set where `block[k] == x`, for a block of `UNIT` tokens.
    fn eq_bits(block: &[Self], x: Self) -> u64;
}

impl Token for u32 {
    #[inline(always)]
    fn id(self) -> TokenId {
        self
    }
    #[inline(always)]
    fn of(id: TokenId) -> Self {
        id
    }
    #[inline(always)]
    fn header(h: &[Self]) -> [u32; 4] {
        *<&[u32; 4]>::try_from(&h[..4]).expect("bug: a header is one unit")
    }
    #[inline(always)]
    fn set_field(h: &mut [Self], k: usize, v: u32) {
        h[k] = v;
    }
    #[inline(always)]
    fn eq_bits(block: &[Self], x: Self) -> u64 {
        let block: &[Self; 4] = block.try_into().expect("bug: a block is one unit");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `block`.
        unsafe {
            use std::arch::x86_64::*;
            let eq = _mm_cmpeq_epi32(
                _mm_loadu_si128(block.as_ptr().cast()),
                _mm_set1_epi32(x as i32),
            );
            _mm_movemask_ps(_mm_castsi128_ps(eq)) as u64
        }
        #[cfg(not(target_arch = "x86_64"))]
        scalar_eq_bits(block, x)
    }
}

impl Token for u16 {
    #[inline(always)]
    fn id(self) -> TokenId {
        self as TokenId
    }
    #[inline(always)]
    fn of(id: TokenId) -> Self {
        debug_assert!(id <= u16::MAX as TokenId, "bug: token {id} stored as a u16");
        id as u16
    }
    #[inline(always)]
    fn header(h: &[Self]) -> [u32; 4] {
        let h: &[u16; 8] = h[..8].try_into().expect("bug: a header is one unit");
        std::array::from_fn(|k| h[2 * k] as u32 | (h[2 * k + 1] as u32) << 16)
    }
    #[inline(always)]
    fn set_field(h: &mut [Self], k: usize, v: u32) {
        h[2 * k] = v as u16;
        h[2 * k + 1] = (v >> 16) as u16;
    }
    #[inline(always)]
    fn eq_bits(block: &[Self], x: Self) -> u64 {
        let block: &[Self; 8] = block.try_into().expect("bug: a block is one unit");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `block`.
        unsafe {
            use std::arch::x86_64::*;
            let eq = _mm_cmpeq_epi16(
                _mm_loadu_si128(block.as_ptr().cast()),
                _mm_set1_epi16(x as i16),
            );
            (_mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) & 0xff) as u64
        }
        #[cfg(not(target_arch = "x86_64"))]
        scalar_eq_bits(block, x)
    }
}

/// `Token::eq_bits` without SIMD.
#[cfg(not(target_arch = "x86_64"))]
fn scalar_eq_bits<T: Token>(block: &[T], x: T) -> u64 {
    block
        .iter()
        .enumerate()
        .map(|(k, &t)| ((t == x) as u64) << k)
        .sum()
}

/// Where the pair (a, b) occurs in the `len` tokens of `t`, which holds the word's whole units
/// (its padding too): bit i is set where a is at i and b at i + 1 (overlapping occurrences
/// too). None for words of more than 64 tokens. Words are compared a unit at a time, into bit
/// masks: a merge visits tens of millions of words, 30% of which have lost the pair since they
/// were listed, and the token-by-token search was a fifth of the merging step.
#[inline(always)]
pub(super) fn pair_bits<T: Token>(t: &[T], len: usize, a: T, b: T) -> Option<u64> {
    if len > 64 {
        return None;
    }
    if len < 2 {
        return Some(0);
    }
    let (mut at_a, mut at_b) = (0u64, 0u64);
    for (k, block) in t[..len.div_ceil(T::UNIT) * T::UNIT]
        .chunks_exact(T::UNIT)
        .enumerate()
    {
        at_a |= T::eq_bits(block, a) << (k * T::UNIT);
        at_b |= T::eq_bits(block, b) << (k * T::UNIT);
    }
    // a at i and b at i + 1, for i + 1 < len
    Some(at_a & (at_b >> 1) & ((1u64 << (len - 1)) - 1))
}

/// Units a word of `cap` tokens takes, header included.
#[inline(always)]
pub(super) fn units<T: Token>(cap: usize) -> usize {
    1 + cap.div_ceil(T::UNIT)
}

/// Sets the length of the word whose header starts at `o`.
#[inline(always)]
pub(super) fn set_len<T: Token>(arena: &mut [T], o: usize, len: usize) {
    T::set_field(&mut arena[o..], 0, len as u32);
}

/// The length now, the length at the start and the count of the word whose header starts at `o`.
#[inline(always)]
pub(super) fn header_at<T: Token>(arena: &[T], o: usize) -> (usize, usize, u64) {
    let [len, cap, low, high] = T::header(&arena[o..]);
    (len as usize, cap as usize, low as u64 | (high as u64) << 32)
}

/// The offset one past the word whose header starts at `o`.
#[inline(always)]
pub(super) fn end_at<T: Token>(arena: &[T], o: usize) -> usize {
    o + units::<T>(header_at(arena, o).1) * T::UNIT
}

/// The length now and the count of the word whose header starts at `o`, and its tokens with
/// the padding of its last unit.
#[inline(always)]
pub(super) fn word_at<T: Token>(arena: &mut [T], o: usize) -> (usize, u64, &mut [T]) {
    let (len, cap, count) = header_at(arena, o);
    let end = o + units::<T>(cap) * T::UNIT;
    (len, count, &mut arena[o + T::UNIT..end])
}

/// Cuts `arena` into the disjoint regions `lo..hi` (increasing), as mutable slices.
pub(super) fn regions<T>(
    arena: &mut [T],
    bounds: impl IntoIterator<Item = (usize, usize)>,
) -> Vec<&mut [T]> {
    let mut out = Vec::new();
    let mut rest = arena;
    let mut offset = 0;
    for (lo, hi) in bounds {
        let tail = std::mem::take(&mut rest).split_at_mut(lo - offset).1;
        let (region, tail) = tail.split_at_mut(hi - lo);
        out.push(region);
        rest = tail;
        offset = hi;
    }
    out
}

/// `refs` cut into `n` runs of about equal size (none empty).
pub(super) fn runs(refs: &[u32], n: usize) -> std::slice::Chunks<'_, u32> {
    refs.chunks(refs.len().div_ceil(n.max(1)).max(1))
}
