//! The GPT-2 pattern's scalar scanner (`gpt2_token_end`), which follows the pattern's
//! alternatives one by one and stays its definition, and the character classes (letter, number,
//! whitespace, other) that the cl100k and o200k scanners share. Its SIMD fast path for ASCII is
//! `ascii.rs`; choosing a scanner is `Pretokenizer`'s.

use crate::tables::{BLOCKS, BLOCK_INDEX, BLOCK_SHIFT};

/// The class of `\s` in `tables.rs` (0 is other, 1 `\p{L}`, 2 `\p{N}`).
pub(crate) const SPACE: u8 = 3;

/// Class of a code point under the GPT-2 pattern: other, `\p{L}`, `\p{N}` or `\s`.
#[inline(always)]
pub(crate) fn class_of(cp: u32) -> u8 {
    let block = BLOCK_INDEX[(cp >> BLOCK_SHIFT) as usize] as usize;
    BLOCKS[block][(cp & 0xff) as usize]
}

/// Decodes the code point starting at `i` of valid UTF-8; returns it and its length in bytes.
#[inline(always)]
pub(crate) fn decode_at(b: &[u8], i: usize) -> (u32, usize) {
    let b0 = b[i] as u32;
    if b0 < 0x80 {
        (b0, 1)
    } else if b0 < 0xe0 {
        (((b0 & 0x1f) << 6) | (b[i + 1] as u32 & 0x3f), 2)
    } else if b0 < 0xf0 {
        let cp = ((b0 & 0x0f) << 12) | ((b[i + 1] as u32 & 0x3f) << 6) | (b[i + 2] as u32 & 0x3f);
        (cp, 3)
    } else {
        let cp = ((b0 & 0x07) << 18)
            | ((b[i + 1] as u32 & 0x3f) << 12)
            | ((b[i + 2] as u32 & 0x3f) << 6)
            | (b[i + 3] as u32 & 0x3f);
        (cp, 4)
    }
}

/// Classes of the ASCII characters, one load instead of decoding and two table loads (a test
/// checks it against `class_of`): letters, digits, and `\t \n \x0b \x0c \r` and space.
static ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        t[c] = match c as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => 1,
            b'0'..=b'9' => 2,
            b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' => SPACE,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// Class of the character at byte `i`, with its length.
#[inline(always)]
pub(crate) fn class_at(b: &[u8], i: usize) -> (u8, usize) {
    if b[i] < 0x80 {
        return (ASCII[b[i] as usize], 1);
    }
    let (cp, len) = decode_at(b, i);
    (class_of(cp), len)
}

/// End of the run of characters of class `class` starting at `i`. ASCII letters, the bulk of
/// most text, are skipped 8 bytes at a time.
#[inline(always)]
fn run_end(b: &[u8], mut i: usize, class: u8) -> usize {
    if class == 1 {
        while let Some(word) = b.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
            // a byte is an ASCII letter iff it is < 0x80 and (byte | 0x20) is in 'a'..='z'
            let lower = w | 0x2020_2020_2020_2020;
            let ge_a = lower.wrapping_add(0x1f1f_1f1f_1f1f_1f1f) & !w; // no carry out: bytes < 0x80
            let le_z = 0x7a7a_7a7a_7a7a_7a7a_u64.wrapping_sub(lower & 0x7f7f_7f7f_7f7f_7f7f)
                | (w & 0x8080_8080_8080_8080);
            let not_letter = !(ge_a & !le_z) & 0x8080_8080_8080_8080;
            if not_letter != 0 {
                i += (not_letter.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
    }
    while i < b.len() {
        let (c, len) = class_at(b, i);
        if c != class {
            break;
        }
        i += len;
    }
    i
}

/// End of the GPT-2 pretoken that starts at byte `i` (< len) of `b`, following the pattern's
/// alternatives in order, as a backtracking engine would.
#[inline]
pub(super) fn gpt2_token_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    let first = b[i];
    // 1. '(?:[sdmt]|ll|ve|re)
    if first == b'\'' && i + 1 < n {
        match b[i + 1] {
            b's' | b'd' | b'm' | b't' => return i + 2,
            b'l' | b'v' | b'r' if i + 2 < n => {
                if matches!(
                    (b[i + 1], b[i + 2]),
                    (b'l', b'l') | (b'v', b'e') | (b'r', b'e')
                ) {
                    return i + 3;
                }
            }
            _ => {}
        }
    }
    // 2-4. ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
    let (class, len) = class_at(b, i);
    if first == b' ' && i + 1 < n {
        let (next, _) = class_at(b, i + 1);
        if next != SPACE {
            return run_end(b, i + 1, next);
        }
    }
    if class != SPACE {
        return run_end(b, i, class);
    }
    // 5. `\s+(?!\S)`: the whitespace run, minus its last character when a non-space follows
    //    (unless that leaves nothing); 6. `\s+`: then the run is the single character.
    let mut last = i;
    let mut j = i + len;
    while j < n {
        let (c, l) = class_at(b, j);
        if c != SPACE {
            return if last > i { last } else { j };
        }
        last = j;
        j += l;
    }
    n
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::pretokenize::Pretokenizer;

    pub(crate) fn gpt2(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        Pretokenizer::Gpt2.for_each(text, |t| out.push(t)).unwrap();
        out
    }

    #[test]
    fn gpt2_scanner_follows_the_pattern() {
        assert_eq!(gpt2("Hello world"), ["Hello", " world"]);
        assert_eq!(gpt2("it's  a\n\n b"), ["it", "'s", " ", " a", "\n\n", " b"]);
        assert_eq!(gpt2("x 'll?'s  "), ["x", " '", "ll", "?'", "s", "  "]);
        assert_eq!(
            gpt2("a\tb \u{3000}c 12 3"),
            ["a", "\t", "b", " ", "\u{3000}", "c", " 12", " 3"]
        );
        assert_eq!(gpt2(""), Vec::<&str>::new());
    }

    #[test]
    fn ascii_table_and_letter_runs_follow_the_classes() {
        for c in 0..128u32 {
            assert_eq!(ASCII[c as usize], class_of(c), "{c:#x}");
        }
        // the fast path against a plain loop: every ASCII byte at every position of a 17-byte
        // run, and non-ASCII characters at every position
        let naive = |t: &str| {
            t.find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(t.len())
        };
        let mut texts: Vec<String> = Vec::new();
        for k in 0..17 {
            for x in 0..128u8 {
                let mut b = b"abcdefghijklmnopq".to_vec();
                b[k] = x;
                texts.push(String::from_utf8(b).unwrap());
            }
            for c in ['é', 'ÿ', 'Ā', '你', '🙃', '\u{80}', '\u{10ffff}'] {
                let mut t: Vec<char> = "abcdefghijklmnopq".chars().collect();
                t[k] = c;
                texts.push(t.into_iter().collect());
            }
        }
        for t in texts {
            let want = naive(&t);
            let got = run_end(t.as_bytes(), 0, 1);
            // a non-ASCII letter may continue the run: the fast path must stop at or before it
            assert_eq!(got.min(want), want, "{t:?}");
            assert_eq!(got, run_end_plain(t.as_bytes(), 0, 1), "{t:?}");
        }
    }

    fn run_end_plain(b: &[u8], mut i: usize, class: u8) -> usize {
        while i < b.len() && class_at(b, i).0 == class {
            i += class_at(b, i).1;
        }
        i
    }
}
