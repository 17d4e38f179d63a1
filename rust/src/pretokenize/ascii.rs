//! The GPT-2 scanner's fast path: 64 bytes at a time, the pretoken starts of a block are found
//! with bit masks (one bit per byte) instead of one character at a time. Most text in most
//! corpora (English, code, markup) is ASCII; a character beyond ASCII gets its class on all its
//! bytes (`Masks::add_high`), and only whitespace beyond ASCII goes to the scalar scanner, which
//! stays the definition (tests compare the two on every kind of text).
//!
//! Where pretokens start, for ASCII text under `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+|
//! ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, with classes letter, number, whitespace, other:
//! - between two non-whitespace characters of different classes;
//! - at whitespace that follows non-whitespace;
//! - where whitespace is followed by non-whitespace at `k`: at `k - 1` (a whitespace run gives
//!   up its last character, which either is a space and prefixes the next run, or stands
//!   alone), and at `k` too unless `k - 1` is a space;
//! - a contraction (`'` at a start, then `s`, `t`, `m`, `d`, or `ll`, `ve`, `re`) is one
//!   pretoken: no start inside it, one right after it.
//!
//! (A first version built the masks 8 bytes at a time in a u64: 15 instructions per byte, no
//! fewer than the scalar scanner's 18. SSE2 compares do 16 bytes at once.)
//!
//! A start at `k` depends on bytes `k - 1` to `k + 3`, so a block's starts are sure up to
//! byte 60; the next block begins at the last sure start.

use super::block::{emit_starts, past_high, BLOCK, SURE};

/// Per-byte masks of a block (bit k for byte k).
struct Masks {
    letter: u64,
    number: u64,
    white: u64,
    space: u64,
    apostrophe: u64,
    /// Bytes of 0x80 and above.
    high: u64,
}

impl Masks {
    /// The masks of `block`, 16 bytes per SSE2 compare (x86-64 always has SSE2). Bytes of 0x80
    /// and above compare as negative, so they fall in no ASCII range.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn of(block: &[u8; BLOCK]) -> Masks {
        use super::block::{is, within};
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU runs these. (The
        // intrinsics are marked unsafe only because they are `#[target_feature]` functions.)
        unsafe {
            let mut m = Masks {
                letter: 0,
                number: 0,
                white: 0,
                space: 0,
                apostrophe: 0,
                high: 0,
            };
            for (k, chunk) in block.chunks_exact(16).enumerate() {
                let half = |at: usize| {
                    i64::from_le_bytes(chunk[at..at + 8].try_into().unwrap_or_default())
                };
                let x = _mm_set_epi64x(half(8), half(0));
                let bits = |v| (_mm_movemask_epi8(v) as u32 as u64) << (16 * k);
                let space = is(x, b' ');
                m.letter |= bits(within(_mm_or_si128(x, _mm_set1_epi8(0x20)), b'a', b'z'));
                m.number |= bits(within(x, b'0', b'9'));
                m.white |= bits(_mm_or_si128(within(x, b'\t', b'\r'), space));
                m.space |= bits(space);
                m.apostrophe |= bits(is(x, b'\''));
                m.high |= bits(x);
            }
            m
        }
    }

    /// Adds the classes of the block's characters beyond ASCII (at `b[base..]`, which starts
    /// at a character): every byte of a letter or number sets that mask, and a run of them or
    /// of other characters then has no start inside, as with ASCII. False if one is whitespace,
    /// for which the rules above hold only with one-byte characters (`k - 1`).
    /// Why: before, a block with any such byte went to the scalar scanner up to its last one;
    /// on the large corpus (12% of bytes beyond ASCII, mostly in English text: quotes, dashes,
    /// accented letters) that scanner was 14% of a warm pass's instructions.
    #[inline(always)]
    fn add_high(&mut self, b: &[u8], base: usize) -> bool {
        let mut high = self.high;
        while high != 0 {
            // the lowest high byte left starts a character: the block starts at one, and each
            // character's bytes are cleared as it is read
            let k = high.trailing_zeros() as usize;
            let (cp, len) = super::decode_at(b, base + k);
            let bytes = (u64::MAX >> (64 - len)) << k;
            high &= !bytes;
            match super::class_of(cp) {
                1 => self.letter |= bytes,
                2 => self.number |= bytes,
                super::SPACE => return false,
                _ => {}
            }
        }
        true
    }

    /// Pretoken starts (bit k: a pretoken starts at byte k), given that one starts at byte 0,
    /// not counting contractions (see `scan_block`).
    #[inline(always)]
    fn starts(&self) -> u64 {
        let other = !(self.letter | self.number | self.white);
        let solid = !self.white;
        // two non-whitespace characters of different classes
        let differ = (self.letter ^ self.letter << 1)
            | (self.number ^ self.number << 1)
            | (other ^ other << 1);
        let mut starts = 1 | (solid & solid << 1 & differ);
        // whitespace after non-whitespace
        starts |= self.white & solid << 1;
        // non-whitespace after whitespace: the last whitespace character starts a pretoken, and
        // so does the non-whitespace one unless that character is a space
        let after_white = solid & self.white << 1;
        starts | after_white >> 1 | (after_white & !(self.space << 1))
    }
}

/// Calls `f` on the pretokens of `b[*i..]` that the block at `*i` decides, advancing `*i` to
/// the end of the last; false (and `*i` unchanged) when it decides none, because the block
/// holds whitespace beyond ASCII or one pretoken runs past it: the caller then scans one
/// pretoken the slow way, or, when such whitespace was the reason, every pretoken that starts
/// before `*ascii_from`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn scan_block(
    b: &[u8],
    i: &mut usize,
    ascii_from: &mut usize,
    f: impl FnMut(usize, usize),
) -> bool {
    let base = *i;
    let Some(block) = b.get(base..base + BLOCK) else {
        return false;
    };
    let block: &[u8; BLOCK] = block.try_into().unwrap_or(&[0; BLOCK]);
    let mut masks = Masks::of(block);
    if masks.high != 0 && !masks.add_high(b, base) {
        // whitespace beyond ASCII: the caller scans one character at a time up to the block's
        // last byte of 0x80 and above, rather than try this block again after every pretoken
        *ascii_from = past_high(base, masks.high);
        return false;
    }
    let mut starts = masks.starts();
    // contractions: a `'` at a start, then `s t m d` or `ll ve re`, is one pretoken (rare: one
    // byte at a time)
    let mut quotes = masks.apostrophe & starts & (u64::MAX >> (63 - SURE));
    while quotes != 0 {
        let k = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        let len = match (block[k + 1], block[k + 2]) {
            (b's' | b't' | b'm' | b'd', _) => 2,
            (b'l', b'l') | (b'v', b'e') | (b'r', b'e') => 3,
            _ => continue,
        };
        starts = starts & !(1 << (k + 1)) | 1 << (k + len);
    }
    // starts in 1..=SURE: each ends the pretoken before it
    emit_starts(starts & (u64::MAX >> (63 - SURE)), i, f)
}

/// Other targets scan one character at a time.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn scan_block(_: &[u8], _: &mut usize, _: &mut usize, _: impl FnMut(usize, usize)) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use crate::pretokenize::gpt2::gpt2_token_end;
    use crate::pretokenize::{Pretokenizer, GPT2_PATTERN};

    /// The pretokens of the scalar scanner alone.
    fn scalar(text: &str) -> Vec<&str> {
        let (b, mut i, mut out) = (text.as_bytes(), 0, vec![]);
        while i < b.len() {
            let end = gpt2_token_end(b, i);
            out.push(&text[i..end]);
            i = end;
        }
        out
    }

    #[test]
    fn blocks_split_as_the_scalar_scanner_does() {
        // every rule's characters, and non-ASCII letters, spaces and others at block edges
        let parts = [
            "a", "Zq", "s", "t", "m", "d", "ll", "ve", "re", "l", "v", "r", "e", "'", "''", " ",
            "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "1", "42", ".", "-;", "é", "中", "\u{a0}",
            "\u{3000}", "\u{85}", "😀", "_", "@", "[", "`", "{", "~", "\x7f", "\0",
        ];
        let pretok = Pretokenizer::new(GPT2_PATTERN).unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for round in 0..20_000 {
            let mut text = String::new();
            let len = 1 + round % 200;
            while text.len() < len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // mostly ASCII letters and spaces, as in prose, for long ASCII stretches
                let pick = (seed % 64) as usize;
                text.push_str(if pick < parts.len() {
                    parts[pick]
                } else if pick.is_multiple_of(3) {
                    " "
                } else {
                    "x"
                });
            }
            let mut got = vec![];
            pretok.for_each(&text, |w| got.push(w)).unwrap();
            assert_eq!(got, scalar(&text), "{text:?}");
        }
    }
}
