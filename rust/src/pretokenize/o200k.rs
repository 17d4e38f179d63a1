//! A hand-written scanner for GPT-4o's pattern (tiktoken `o200k_base`), as `gpt4.rs` has for
//! cl100k: it follows the pattern's alternatives in the order a backtracking engine tries them,
//! with classes generated from regex-syntax (`tables.rs`, `O200K_` flags), so it matches
//! fancy-regex (tiktoken's engine) on every input: `unicode.rs` compares the two on every code
//! point in context, `gpt4_ascii.rs` and tests/test_presets.py on fuzzed text.
//!
//! The letter alternatives are not possessive, so backtracking decides where a word ends. With
//! U = `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` and W = `[\p{Ll}\p{Lm}\p{Lo}\p{M}]` (Lm, Lo and marks are
//! in both): `U*W+` takes the run of U, then needs a W. If the character after the run is in
//! W (so lower-case), W+ takes the run of W from there; otherwise U* gives back characters one
//! at a time until W+ can start at one, which is the last U-and-W character of the run; W+ then
//! takes that one alone (the ones after it are upper-case). `U+W*` takes both runs greedily.

use crate::pretokenize::decode_at;
use crate::pretokenize::gpt4::{char_before, contraction_end};
use crate::tables::{BLOCK_SHIFT, O200K_BLOCKS, O200K_BLOCK_INDEX};

/// GPT-4o's pattern, verbatim from tiktoken 0.14.0; a pattern equal to it runs on this scanner.
pub const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// Flags of `tables.rs`'s `O200K_` table: U, W (see above), `\p{L}`, `\p{N}`, `\s`.
pub(crate) const UPPER: u8 = 1;
pub(crate) const LOWER: u8 = 2;
pub(crate) const LETTER: u8 = 4;
pub(crate) const NUMBER: u8 = 8;
pub(crate) const SPACE: u8 = 16;

/// Flags of the ASCII characters (a test checks them against the table).
static ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        t[c] = match c as u8 {
            b'A'..=b'Z' => UPPER | LETTER,
            b'a'..=b'z' => LOWER | LETTER,
            b'0'..=b'9' => NUMBER,
            b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' => SPACE,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// Flags of a code point.
#[inline(always)]
pub(crate) fn flags_of(cp: u32) -> u8 {
    let block = O200K_BLOCK_INDEX[(cp >> BLOCK_SHIFT) as usize] as usize;
    O200K_BLOCKS[block][(cp & 0xff) as usize]
}

/// Flags of the character at byte `i`, with its length.
#[inline(always)]
fn flags_at(b: &[u8], i: usize) -> (u8, usize) {
    if b[i] < 0x80 {
        return (ASCII[b[i] as usize], 1);
    }
    let (cp, len) = decode_at(b, i);
    (flags_of(cp), len)
}

/// End of the run from `i` of at most `max` characters whose flags satisfy `keep`.
#[inline(always)]
fn run(b: &[u8], mut i: usize, max: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut k = 0;
    while i < b.len() && k < max {
        let (f, len) = flags_at(b, i);
        if !keep(f) {
            break;
        }
        i += len;
        k += 1;
    }
    i
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`: the end of the contraction there, or `i`.
#[inline(always)]
fn contraction(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'\'') => contraction_end(b, i).unwrap_or(i),
        _ => i,
    }
}

/// A letter alternative: the end of its match from a byte offset, if it matches.
type Word = fn(&[u8], usize) -> Option<usize>;

/// End of `U*W+C?` from `s` (C the contraction), if it matches.
#[inline]
fn lower_word(b: &[u8], s: usize) -> Option<usize> {
    let (mut j, mut both_end) = (s, None);
    while j < b.len() {
        let (f, len) = flags_at(b, j);
        if f & UPPER == 0 {
            if f & LOWER != 0 {
                return Some(contraction(b, run(b, j, usize::MAX, |f| f & LOWER != 0)));
            }
            break;
        }
        j += len;
        if f & LOWER != 0 {
            both_end = Some(j);
        }
    }
    // backtracking: W+ is the last U-and-W character alone (an upper-case letter follows it,
    // or the run ends there, where the contraction may follow)
    both_end.map(|e| contraction(b, e))
}

/// End of `U+W*C?` from `s`, if it matches.
#[inline]
fn upper_word(b: &[u8], s: usize) -> Option<usize> {
    let e = run(b, s, usize::MAX, |f| f & UPPER != 0);
    (e > s).then(|| contraction(b, run(b, e, usize::MAX, |f| f & LOWER != 0)))
}

/// End of the o200k pretoken that starts at byte `i` (< len) of `b`, following the pattern's
/// alternatives in order, as a backtracking engine would.
#[inline]
pub(crate) fn o200k_token_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    let (f, len) = flags_at(b, i);
    // 1-2. the letter alternatives, each first with the optional `[^\r\n\p{L}\p{N}]` taken
    let prefix = f & (LETTER | NUMBER) == 0 && b[i] != b'\r' && b[i] != b'\n';
    let cased = f & (UPPER | LOWER) != 0; // a letter or a mark
    for word in [lower_word as Word, upper_word] {
        for (tried, from) in [(prefix, i + len), (cased, i)] {
            if let Some(end) = tried.then(|| word(b, from)).flatten() {
                return end;
            }
        }
    }
    // 3. \p{N}{1,3}
    if f & NUMBER != 0 {
        return run(b, i, 3, |f| f & NUMBER != 0);
    }
    // 4.  ?[^\s\p{L}\p{N}]+[\r\n/]*
    let other = |f: u8| f & (LETTER | NUMBER | SPACE) == 0;
    let start = if b[i] == b' ' && i + 1 < n && other(flags_at(b, i + 1).0) {
        Some(i + 1)
    } else {
        other(f).then_some(i)
    };
    if let Some(start) = start {
        let mut j = run(b, start, usize::MAX, other);
        while j < n && matches!(b[j], b'\r' | b'\n' | b'/') {
            j += 1;
        }
        return j;
    }
    debug_assert!(f & SPACE != 0);
    // The whitespace run [i, end), and where its last character and last \r or \n start.
    let (mut end, mut last, mut newline) = (i, i, None);
    while end < n {
        let (c, l) = flags_at(b, end);
        if c & SPACE == 0 {
            break;
        }
        if b[end] == b'\r' || b[end] == b'\n' {
            newline = Some(end);
        }
        last = end;
        end += l;
    }
    // 5. \s*[\r\n]+ : up to the run's last \r or \n.
    if let Some(p) = newline {
        return p + 1;
    }
    // 6. \s+(?!\S) : the run, but its last character if a non-space follows (and one is left);
    // 7. \s+ : the run (then a single character).
    if end < n && last > i {
        last
    } else {
        end
    }
}

/// Whether a cut before byte `p` (a character boundary, 0 < p < len) of a segment is safe for
/// o200k: the pretokens of the two sides are then those of the whole.
///
/// With `x` the character before `p` and `y` the one at `p`, in the classes letter, mark,
/// number, whitespace, other, the cut is safe when: `x` is a number and `y` is not; `x` is a
/// letter and `y` a number, whitespace or other but `'`; `x` is other or a mark and `y` a number
/// or whitespace but `\r`, `\n`. Proof. (1) `p` ends the pretoken `t` holding `x`. A word (a
/// letter pretoken) is an optional first character (neither letter, number, `\r` nor `\n`),
/// letters and marks, and a contraction, so it goes on at `p` only if `y` is a letter, a mark
/// or `'` (excluded for a letter `x`), or if `x` is its first character (`y` is then a letter
/// or a mark: excluded). A run of other (marks are other there) and the `[\r\n/]*` after it go
/// on only into other, a mark, `\r` or `\n` (excluded); numbers only into numbers;
/// whitespace pretokens hold no `x`. So `t` ends at `p`. (2) The prefix gives the same
/// pretokens: the scanner has no lookbehind, and past the end of a pretoken it reads only to see
/// a run of some classes stop, at `y` (a character none of those runs takes, as shown) or at the
/// end of the text, with the same outcome, including where `U*` gives characters back (the
/// character after the run is not lower-case either way); to try a contraction (none at `y`,
/// nor at the end); and for `\s+(?!\S)`, which only whitespace pretokens try, none ending at
/// `p`. (3) The suffix starts at a pretoken boundary of the whole, and pretokens from there
/// depend only on the text from there. Text has such cuts in every script: after a word (or a
/// word ending in a mark, as Thai and Devanagari ones often do) before a space, after a word
/// before punctuation, around digits.
#[inline]
pub(crate) fn can_cut_before(b: &[u8], p: usize) -> bool {
    let (x, _) = flags_at(b, char_before(b, p));
    let (y, _) = flags_at(b, p);
    let horizontal = y & SPACE != 0 && b[p] != b'\r' && b[p] != b'\n';
    if x & NUMBER != 0 {
        y & NUMBER == 0
    } else if x & LETTER != 0 {
        y & (UPPER | LOWER) == 0 && b[p] != b'\''
    } else {
        x & SPACE == 0 && (y & NUMBER != 0 || horizontal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::Pretokenizer;

    #[test]
    fn ascii_flags_are_the_table_s() {
        for c in 0..128u32 {
            assert_eq!(ASCII[c as usize], flags_of(c), "{c:#x}");
        }
    }

    #[test]
    fn scanner_follows_the_pattern() {
        let scanner = Pretokenizer::new(O200K_PATTERN).unwrap();
        assert!(matches!(scanner, Pretokenizer::O200k));
        let engine = Pretokenizer::new(&format!("(?:{O200K_PATTERN})")).unwrap();
        let texts = [
            "Hello world's END 'LL it'S we'Ve 'ſ 'x ' don'tknow I'M it's's",
            "HTTPServer camelCase ABCdefGHI aB Ab ABC",
            "1234567 12 a1b2 ٣٤٥٦ ½",
            "  \n\n  x  \r\n\t y   ",
            "!!!\r\n\r\n ??\n/x ...a . a/b !\n/\nc //x",
            "\u{3000}漢字です 。\u{a0}a \u{85}b ǅa ǅǅb Ǆa",
            "\u{301}'s !\u{301}a \u{301}AB' x\u{301}Y ÀB\u{301}C",
            "Привет МИР мИр",
            "x\n \n",
            "",
            " ",
            "'",
        ];
        for text in texts {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            scanner.for_each(text, |t| fast.push(t)).unwrap();
            engine.for_each(text, |t| slow.push(t)).unwrap();
            assert_eq!(fast, slow, "{text:?}");
        }
    }
}
