//! Merge ranks as the BPE loops keep them (`Rank`): i16 for a narrow pair table, i32 (the merged
//! id, which stands for the rank) for a mid one, u32 otherwise; the lowest of an array of them
//! with SIMD; and what a loop starts from (`Input`: bytes, or ids).

use super::pair_table::{id_of, rank_of, Merge, PairTable};
use crate::types::TokenId;

/// What the plain loop starts from.
#[derive(Clone, Copy)]
pub(super) enum Input<'a> {
    Bytes(&'a [u8], &'a [TokenId; 256]),
    Ids(&'a [TokenId]),
}

impl Input<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Input::Bytes(b, _) => b.len(),
            Input::Ids(ids) => ids.len(),
        }
    }
}

/// A merge rank as `merge_n` keeps it: i16 (biased by 2^15) for ranks below 2^16 - 1; i32, the
/// merged id, with a mid pair table; else u32.
pub(super) trait Rank: Copy + Ord {
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
