//! A hand-written scanner for GPT-4's pattern (tiktoken `cl100k_base`), as `pretokenize.rs` has
//! for GPT-2's: it follows the pattern's alternatives one by one with the same generated classes
//! (`\p{L}`, `\p{N}`, `\s` from regex-syntax), so it matches fancy-regex (tiktoken's engine) on
//! every input; tests compare the two on every code point and on fuzzed text. Also where a stream
//! may be cut (`can_cut_before`). o200k's scanner is `o200k.rs`; the ASCII fast path of both is
//! `gpt4_ascii.rs`.

use crate::pretokenize::{class_at, decode_at, SPACE};

/// GPT-4's pattern, verbatim from tiktoken 0.14.0; a pattern equal to it runs on this scanner.
pub const CL100K_PATTERN: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
);

pub(crate) const LETTER: u8 = 1;
pub(crate) const NUMBER: u8 = 2;
const OTHER: u8 = 0;

/// The lower-case ASCII letter the character at `i` folds to under `(?i)`, if it is a letter
/// of the contractions: ASCII either case, and U+017F (long s), which folds to `s`.
#[inline]
fn folded(b: &[u8], i: usize) -> Option<(u8, usize)> {
    if i >= b.len() {
        return None;
    }
    let (cp, len) = decode_at(b, i);
    match cp {
        0x17f => Some((b's', len)),
        0x41..=0x5a | 0x61..=0x7a => Some(((cp as u8) | 0x20, len)),
        _ => None,
    }
}

/// End of `'(?i:[sdmt]|ll|ve|re)` at `i` (which holds `'`), if it matches.
#[inline]
pub(crate) fn contraction_end(b: &[u8], i: usize) -> Option<usize> {
    let (c1, l1) = folded(b, i + 1)?;
    if matches!(c1, b's' | b'd' | b'm' | b't') {
        return Some(i + 1 + l1);
    }
    let j = i + 1 + l1;
    let (c2, l2) = folded(b, j)?;
    matches!((c1, c2), (b'l', b'l') | (b'v', b'e') | (b'r', b'e')).then_some(j + l2)
}

/// End of the run of characters of class `class` from `i`, at most `max` of them.
#[inline]
fn run(b: &[u8], mut i: usize, class: u8, max: usize) -> usize {
    let mut k = 0;
    while i < b.len() && k < max {
        let (c, len) = class_at(b, i);
        if c != class {
            break;
        }
        i += len;
        k += 1;
    }
    i
}

/// End of the cl100k pretoken that starts at byte `i` (< len) of `b`, following the pattern's
/// alternatives in order, as a backtracking engine would.
#[inline]
pub(crate) fn cl100k_token_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    // 1. '(?i:[sdmt]|ll|ve|re)
    if b[i] == b'\'' {
        if let Some(end) = contraction_end(b, i) {
            return end;
        }
    }
    let (class, len) = class_at(b, i);
    // 2. [^\r\n\p{L}\p{N}]?+\p{L}++ : possessive, so a leading non-letter that is taken must be
    //    followed by a letter (the alternative does not retry without it).
    if class == LETTER {
        return run(b, i, LETTER, usize::MAX);
    }
    let optional = class != NUMBER && b[i] != b'\r' && b[i] != b'\n';
    if optional && i + len < n && class_at(b, i + len).0 == LETTER {
        return run(b, i + len, LETTER, usize::MAX);
    }
    // 3. \p{N}{1,3}+
    if class == NUMBER {
        return run(b, i, NUMBER, 3);
    }
    // 4.  ?[^\s\p{L}\p{N}]++[\r\n]*+
    let start = if b[i] == b' ' && i + 1 < n && class_at(b, i + 1).0 == OTHER {
        Some(i + 1)
    } else if class == OTHER {
        Some(i)
    } else {
        None
    };
    if let Some(start) = start {
        let mut j = run(b, start, OTHER, usize::MAX);
        while j < n && (b[j] == b'\r' || b[j] == b'\n') {
            j += 1;
        }
        return j;
    }
    debug_assert_eq!(class, SPACE);
    // The whitespace run [i, end), and where its last character and last \r or \n start.
    let (mut end, mut last, mut newline) = (i, i, None);
    while end < n {
        let (c, l) = class_at(b, end);
        if c != SPACE {
            break;
        }
        if b[end] == b'\r' || b[end] == b'\n' {
            newline = Some(end);
        }
        last = end;
        end += l;
    }
    // 5. \s++$ : the run reaches the end of the text.
    if end == n {
        return n;
    }
    // 6. \s*[\r\n] : the longest part of the run that ends with \r or \n.
    if let Some(p) = newline {
        return p + 1;
    }
    // 7. \s+(?!\S) : the run but its last character, if that leaves one; 8. \s : one character.
    if last > i {
        last
    } else {
        i + len
    }
}

/// Start of the character before byte `p` (a character boundary, > 0).
#[inline]
pub(crate) fn char_before(b: &[u8], p: usize) -> usize {
    let mut q = p - 1;
    while b[q] & 0xc0 == 0x80 {
        q -= 1; // continuation bytes are 0b10xxxxxx
    }
    q
}

/// Whether a cut before byte `p` (a character boundary, 0 < p < len) of a segment is safe for
/// cl100k: the pretokens of the two sides are then those of the whole.
///
/// With `x` the character before `p` and `y` the one at `p`, in GPT-2's classes (letter, number,
/// whitespace, other), the cut is safe when `x` is not whitespace, `y` is of another class, and
/// not `x` other with `y` a letter, `\r` or `\n`. Proof. (1) `p` ends the pretoken `t` holding
/// `x`. A pretoken mixes classes only as: a contraction, `'` + letters (`x = '` before a letter:
/// excluded); the optional first character before letters (`x` other or whitespace: excluded);
/// a space before a run of other, and whitespace runs (`x` whitespace: excluded); a run of other
/// and the `[\r\n]*+` after it (`x` other, `y` `\r` or `\n`: excluded). Runs of one class end
/// where the class changes, and so do the 1-3 digits of `\p{N}{1,3}+`. So `t` ends at `p`. (2)
/// The prefix gives the same pretokens: the scanner has no lookbehind, and past the end of a
/// pretoken it reads only to see a run stop (at `y`, of another class, or at the end of the
/// text: the run ends at `p` both ways), to try a contraction (`x = '` fails on a non-letter
/// `y` as on the end; a failed `'l` or `'v` before a letter `x` fails on either), the optional
/// first character (at `x` only when `y` is a letter: excluded), and `\s++$`, `\s+(?!\S)`,
/// which only whitespace pretokens try, and none ends at `p`. (3) The suffix starts at a
/// pretoken boundary of the whole, and pretokens from there depend only on the text from
/// there. Text has such cuts every few characters in every script: after a word before a space
/// or punctuation (`。`, `，`), digits, combining marks (class other here).
#[inline]
pub(crate) fn can_cut_before(b: &[u8], p: usize) -> bool {
    let (x, _) = class_at(b, char_before(b, p));
    let (y, _) = class_at(b, p);
    x != SPACE && y != x && !(x == OTHER && (y == LETTER || b[p] == b'\r' || b[p] == b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::Pretokenizer;

    fn both(text: &str) -> (Vec<&str>, Vec<&str>) {
        let (mut fast, mut engine) = (Vec::new(), Vec::new());
        let scanner = Pretokenizer::new(CL100K_PATTERN).unwrap();
        assert!(matches!(scanner, Pretokenizer::Cl100k));
        scanner.for_each(text, |t| fast.push(t)).unwrap();
        let regex = Pretokenizer::new(&format!("(?:{CL100K_PATTERN})")).unwrap();
        regex.for_each(text, |t| engine.push(t)).unwrap();
        (fast, engine)
    }

    #[test]
    fn scanner_follows_the_pattern() {
        let texts = [
            "Hello world's END 'LL it'S we'Ve 'ſ 'x '",
            "1234567 12 a1b2 ٣٤٥٦ ½",
            "  \n\n  x  \r\n\t y   ",
            "a \n",
            "!!!\r\n\r\n ??\n/x ...a .",
            "\u{3000}漢字 \u{a0}a \u{85}b ǅa",
            "x\n \n",
            "",
            " ",
            "'",
        ];
        for text in texts {
            let (fast, engine) = both(text);
            assert_eq!(fast, engine, "{text:?}");
        }
    }
}
