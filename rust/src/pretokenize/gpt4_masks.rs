//! The masks of a 64-byte block for the GPT-4 family's fast path (`gpt4_ascii.rs`): one bit per
//! byte for each class the rules read, and, for a block that holds characters beyond ASCII, the
//! same masks by character (`Masks::add_high`: each character classed by its first byte, the
//! masks squeezed to one bit per character with BMI2's PEXT, starts spread back with PDEP).

use super::block::BLOCK;

/// Per-byte masks of a block (bit k for byte k); per-character after `Masks::add_high`.
#[derive(Clone, Copy)]
pub(super) struct Masks {
    pub(super) lower: u64,
    pub(super) upper: u64,
    pub(super) digit: u64,
    pub(super) white: u64,
    pub(super) newline: u64,
    pub(super) space: u64,
    pub(super) apostrophe: u64,
    pub(super) slash: u64,
    /// Bytes of 0x80 and above.
    pub(super) high: u64,
}

#[cfg(target_arch = "x86_64")]
impl Masks {
    /// The masks of `block`, 16 bytes per SSE2 compare (x86-64 always has SSE2). Bytes of 0x80
    /// and above compare as negative, so they fall in no ASCII range.
    #[inline(always)]
    pub(super) fn of(block: &[u8; BLOCK]) -> Masks {
        use super::block::{is, within};
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads read 16 bytes inside `block`.
        unsafe {
            let v: [__m128i; 4] =
                std::array::from_fn(|k| _mm_loadu_si128(block.as_ptr().add(16 * k).cast()));
            let bits = |test: &dyn Fn(__m128i) -> __m128i| {
                (0..4).fold(0u64, |m, k| {
                    m | (_mm_movemask_epi8(test(v[k])) as u32 as u64) << (16 * k)
                })
            };
            let space = bits(&|x| is(x, b' '));
            Masks {
                lower: bits(&|x| within(x, b'a', b'z')),
                upper: bits(&|x| within(x, b'A', b'Z')),
                digit: bits(&|x| within(x, b'0', b'9')),
                white: bits(&|x| within(x, b'\t', b'\r')) | space,
                newline: bits(&|x| _mm_or_si128(is(x, b'\n'), is(x, b'\r'))),
                space,
                apostrophe: bits(&|x| is(x, b'\'')),
                slash: bits(&|x| is(x, b'/')),
                high: bits(&|x| x),
            }
        }
    }

    /// Adds the classes of the block's characters beyond ASCII (at `b[base..]`, which starts at
    /// a character), each on its first byte, and squeezes every mask to one bit per character
    /// (bit k for the block's k-th character): the rules of `gpt4_ascii.rs` then hold, as they
    /// follow characters, and all but `'`, `/`, `\r`, `\n` and space hold for every script.
    /// Whitespace beyond ASCII is horizontal white. Returns the first byte of each character
    /// (bit k for byte k), or None, leaving the masks as they were, where the scalar scanner
    /// must decide: U+017F, which `(?i:'s)` takes for `s`; with o200k, a mark after no letter
    /// (it then joins a run of other, not a word), and letters that are both upper- and
    /// lower-case (`Lm`, `Lo`, marks) in a block that has an upper-case one, as backtracking
    /// decides such words (`o200k.rs`); without them, those letters are lower-case here.
    /// Why: the block rules took ASCII alone, and the scalar scanners ran at 390 MB/s on
    /// text in other scripts, against 1,300+ on English.
    #[inline(always)]
    pub(super) fn add_high<const O200K: bool>(
        &mut self,
        block: &[u8; BLOCK],
        b: &[u8],
        base: usize,
    ) -> Option<u64> {
        use crate::pretokenize::o200k::flags_of;
        if !chars::fast() {
            return None;
        }
        // each character on its own (its length is its first byte's), its kind written at its
        // first byte, the masks then made by SIMD compares: no chain from one character to the
        // next, no branch on the class (a `match` there was a jump table, a fifth of the time
        // on multilingual text, and or-ing into a mask per kind a chain through memory)
        // (first bytes found here, not in `Masks::of`: most blocks hold none)
        let leads = chars::leads(block);
        let (mut firsts, mut kind, mut long_s) = (leads, [0u8; BLOCK], false);
        while firsts != 0 {
            let k = firsts.trailing_zeros() as usize;
            firsts &= firsts - 1;
            let (cp, _) = super::decode_at(b, base + k);
            kind[k] = match O200K {
                true => O200K_KIND[flags_of(cp) as usize & 31],
                false => super::class_of(cp),
            };
            long_s |= cp == 0x17f;
        }
        if long_s {
            return None;
        }
        let of = |v: u8| chars::equal(&kind, v);
        let mut m = *self;
        let lead = !(self.high & !leads);
        if O200K {
            let (upper, mark) = (of(UPPER_ONLY), of(MARK));
            let both = of(BOTH) | mark;
            if both != 0 && (m.upper | upper) != 0 {
                return None;
            }
            m.upper |= upper;
            m.lower |= of(LOWER_ONLY) | both;
            m.digit |= of(DIGIT);
            m.white |= of(WHITE);
            // SAFETY: `chars::fast` said the CPU has BMI2.
            unsafe { chars::squeeze(&mut m, lead) };
            // a mark after no letter (or mark) joins a run of other
            let mark = chars::squeeze_one(mark, lead);
            if mark & !((m.lower | m.upper) << 1) != 0 {
                return None;
            }
        } else {
            m.lower |= of(super::gpt4::LETTER);
            m.digit |= of(super::gpt4::NUMBER);
            m.white |= of(super::SPACE);
            // SAFETY: `chars::fast` said the CPU has BMI2.
            unsafe { chars::squeeze(&mut m, lead) };
        }
        *self = m;
        Some(lead)
    }
}

/// What `Masks::add_high` makes of a character's o200k flags (`o200k.rs`), by index: upper-case
/// only (`Lu`, `Lt`), lower-case only (`Ll`), both (`Lm`, `Lo`), a mark (both, not `\p{L}`),
/// a digit, white, or other (0).
const UPPER_ONLY: u8 = 4;
const LOWER_ONLY: u8 = 5;
const BOTH: u8 = 6;
const MARK: u8 = 7;
const DIGIT: u8 = 1;
const WHITE: u8 = 2;
static O200K_KIND: [u8; 32] = {
    use crate::pretokenize::o200k::{LETTER, LOWER, NUMBER, SPACE, UPPER};
    let mut t = [0u8; 32];
    let mut f = 0;
    while f < 32 {
        let flags = f as u8;
        t[f] = if flags & SPACE != 0 {
            WHITE
        } else if flags & NUMBER != 0 {
            DIGIT
        } else {
            match flags & (UPPER | LOWER) {
                UPPER => UPPER_ONLY,
                LOWER => LOWER_ONLY,
                0 => 0,
                _ if flags & LETTER != 0 => BOTH,
                _ => MARK,
            }
        };
        f += 1;
    }
    t
};

/// Masks by character instead of by byte: PEXT squeezes a mask to the bits of characters'
/// first bytes, PDEP spreads starts back. Both are single fast instructions with BMI2, except on
/// AMD CPUs before Zen 3, where they are microcoded (tens to hundreds of cycles): there,
/// and without BMI2, blocks beyond ASCII go to the scalar scanners.
#[cfg(target_arch = "x86_64")]
pub(super) mod chars {
    use super::Masks;
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// Whether PEXT and PDEP are fast here.
    #[inline(always)]
    pub(super) fn fast() -> bool {
        static FAST: OnceLock<bool> = OnceLock::new();
        *FAST.get_or_init(|| {
            if !std::arch::is_x86_feature_detected!("bmi2") {
                return false;
            }
            let (vendor, signature) = (__cpuid(0), __cpuid(1).eax);
            let amd = matches!(
                (vendor.ebx, vendor.edx, vendor.ecx),
                (0x6874_7541, 0x6974_6e65, 0x444d_4163) // "AuthenticAMD"
                    | (0x6f67_7948, 0x6e65_476e, 0x656e_6975) // "HygonGenuine"
            );
            let base = signature >> 8 & 0xf;
            let family = base
                + if base == 0xf {
                    signature >> 20 & 0xff
                } else {
                    0
                };
            !amd || family >= 0x19
        })
    }

    /// Squeezes every mask of `m` to the bits of `lead`.
    ///
    /// # Safety
    /// The CPU must have BMI2 (`fast`).
    #[target_feature(enable = "bmi2")]
    pub(super) unsafe fn squeeze(m: &mut Masks, lead: u64) {
        for x in [
            &mut m.lower,
            &mut m.upper,
            &mut m.digit,
            &mut m.white,
            &mut m.newline,
            &mut m.space,
            &mut m.apostrophe,
            &mut m.slash,
        ] {
            *x = _pext_u64(*x, lead);
        }
    }

    /// `x` squeezed to the bits of `lead`.
    #[inline(always)]
    pub(super) fn squeeze_one(x: u64, lead: u64) -> u64 {
        // SAFETY: `lead` came from `Masks::add_high`, which runs only if `fast`.
        unsafe { extract(x, lead) }
    }

    /// The bytes of `kind` equal to `v`, one bit each (bit k for byte k).
    #[inline(always)]
    pub(super) fn equal(kind: &[u8; 64], v: u8) -> u64 {
        // SAFETY: SSE2 is part of the x86-64 baseline.
        bytes_where(kind, |x| unsafe {
            _mm_cmpeq_epi8(x, _mm_set1_epi8(v as i8))
        })
    }

    /// The bytes of `block` of 0xc0 and above (the first bytes of characters beyond ASCII).
    #[inline(always)]
    pub(super) fn leads(block: &[u8; 64]) -> u64 {
        // SAFETY: as in `equal`; bytes of 0xc0 and above are -64..=-1 as i8
        bytes_where(block, |x| unsafe {
            _mm_and_si128(x, _mm_cmpgt_epi8(x, _mm_set1_epi8(-65)))
        })
    }

    /// The bytes of `bytes` whose top bit `test` sets, one bit each (bit k for byte k).
    #[inline(always)]
    fn bytes_where(bytes: &[u8; 64], test: impl Fn(__m128i) -> __m128i) -> u64 {
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads read 16 bytes inside `bytes`.
        unsafe {
            (0..4).fold(0u64, |m, k| {
                let x = _mm_loadu_si128(bytes.as_ptr().add(16 * k).cast());
                m | (_mm_movemask_epi8(test(x)) as u32 as u64) << (16 * k)
            })
        }
    }

    /// `starts` (bit k: the k-th character) at the characters' first bytes, `lead`.
    #[inline(always)]
    pub(in crate::pretokenize) fn spread(starts: u64, lead: u64) -> u64 {
        // SAFETY: `lead` came from `Masks::add_high`, which runs only if `fast`.
        unsafe { deposit(starts, lead) }
    }

    /// The byte of the block's k-th character.
    #[inline(always)]
    pub(in crate::pretokenize) fn byte_of(lead: u64, k: usize) -> usize {
        spread(1 << k, lead).trailing_zeros() as usize
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn deposit(x: u64, mask: u64) -> u64 {
        _pdep_u64(x, mask)
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn extract(x: u64, mask: u64) -> u64 {
        _pext_u64(x, mask)
    }
}
