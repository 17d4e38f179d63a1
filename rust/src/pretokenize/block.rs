//! What the scanners' SIMD fast paths share (`ascii.rs` for GPT-2, `gpt4_ascii.rs` for cl100k
//! and o200k): 64-byte blocks, SSE2 compares that give one bit per byte, and the pretokens that
//! a block's start bits decide. Which bytes start a pretoken is each pattern's own (its `Masks`).
//! (Each caller takes its block itself: through a helper that returned `Option<&[u8; 64]>`, the
//! scanners ran 0.4-2% more instructions, callgrind.)

/// Bytes per block.
pub(super) const BLOCK: usize = 64;
/// Starts are sure up to here in a block of ASCII bytes (a start reads up to 3 bytes ahead).
pub(super) const SURE: usize = BLOCK - 4;

/// One past the last byte of 0x80 and above (`high`, bit k for byte k) of the block at `base`:
/// the caller scans one character at a time up to there, rather than try this block again
/// after every pretoken.
#[inline(always)]
pub(super) fn past_high(base: usize, high: u64) -> usize {
    base + BLOCK - high.leading_zeros() as usize
}

/// Calls `f` on the pretokens that the starts in 1.. of the block at `*i` end (each ends the
/// pretoken before it) and moves `*i` to the last start; false when there is none.
#[inline(always)]
pub(super) fn emit_starts(starts: u64, i: &mut usize, mut f: impl FnMut(usize, usize)) -> bool {
    let (base, mut rest, mut from) = (*i, starts & !1, 0);
    if rest == 0 {
        return false;
    }
    while rest != 0 {
        let k = rest.trailing_zeros() as usize;
        f(base + from, base + k);
        from = k;
        rest &= rest - 1;
    }
    *i = base + from;
    true
}

/// The bytes of `x` in `lo..=hi` (ASCII bounds), as 0xff. Bytes of 0x80 and above compare as
/// negative, so they fall in no ASCII range. (x86-64 always has SSE2.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn within(x: std::arch::x86_64::__m128i, lo: u8, hi: u8) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU runs these. (The intrinsics
    // are marked unsafe only because they are `#[target_feature]` functions.)
    unsafe {
        let above = _mm_cmpgt_epi8(x, _mm_set1_epi8(lo as i8 - 1));
        _mm_and_si128(above, _mm_cmplt_epi8(x, _mm_set1_epi8(hi as i8 + 1)))
    }
}

/// The bytes of `x` equal to `c`, as 0xff.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn is(x: std::arch::x86_64::__m128i, c: u8) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    // SAFETY: as in `within`.
    unsafe { _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8)) }
}
