//! The scanners of the superword patterns, the pretokenization of SuperBPE's second stage
//! (docs/spec.md §1.9): whitespace no longer splits, numbers are split off as the first stage's
//! pattern splits them, and a pretoken ends after each newline. A pretoken is thus a line, or
//! the stretch of a line between numbers. The scanners follow the patterns' alternatives one by
//! one (numbers by the shared class tables, as `gpt2.rs`); `unicode.rs` holds them to
//! fancy-regex on every code point in context, and the tests below on random text.

use super::gpt2::class_at;

/// After the GPT-2 pattern: a number with the space before it (` ?\p{N}+`, as GPT-2 splits it),
/// else a run of anything up to and with a newline, else a newline.
pub const SUPERWORD_GPT2_PATTERN: &str = r" ?\p{N}+|(?:(?! ?\p{N})[^\n])+\n?|\n";

/// After the GPT-4 patterns (cl100k, o200k): numbers in groups of 1-3 digits from the left, as
/// they split them, else a run of anything up to and with a newline, else a newline.
pub const SUPERWORD_GPT4_PATTERN: &str = r"\p{N}{1,3}|[^\n\p{N}]+\n?|\n";

/// The class of `\p{N}` in `tables.rs`.
const NUMBER: u8 = 2;

/// Whether the character at `j` (< len) is a number (`\p{N}`).
#[inline(always)]
fn number_at(b: &[u8], j: usize) -> bool {
    if b[j] < 0x80 {
        return b[j].is_ascii_digit();
    }
    class_at(b, j).0 == NUMBER
}

/// The length of the character at `j`.
#[inline(always)]
fn char_len(b: u8) -> usize {
    match b {
        0..=0x7f => 1,
        0x80..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// The end of the pretoken of `SUPERWORD_GPT2_PATTERN` that starts at `i` (< len).
pub(crate) fn gpt2_token_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    // ` ?\p{N}+`
    let mut j = i + usize::from(b[i] == b' ' && i + 1 < n && number_at(b, i + 1));
    if number_at(b, j) {
        while j < n && number_at(b, j) {
            j += char_len(b[j]);
        }
        return j;
    }
    if b[i] == b'\n' {
        return i + 1;
    }
    // `(?:(?! ?\p{N})[^\n])+\n?`: at `i` the lookahead fails (the number alternative did)
    j = i;
    while j < n {
        let c = b[j];
        if c == b'\n' {
            return j + 1;
        }
        if c.is_ascii_digit() || (c == b' ' && j + 1 < n && number_at(b, j + 1)) {
            return j;
        }
        if c >= 0x80 && number_at(b, j) {
            return j;
        }
        j += char_len(c);
    }
    j
}

/// The end of the pretoken of `SUPERWORD_GPT4_PATTERN` that starts at `i` (< len).
pub(crate) fn gpt4_token_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    let mut j = i;
    if number_at(b, i) {
        // `\p{N}{1,3}`
        for _ in 0..3 {
            if j == n || !number_at(b, j) {
                break;
            }
            j += char_len(b[j]);
        }
        return j;
    }
    while j < n {
        let c = b[j];
        if c == b'\n' {
            return j + 1;
        }
        if c.is_ascii_digit() || (c >= 0x80 && number_at(b, j)) {
            return j;
        }
        j += char_len(c);
    }
    j
}

/// Whether a cut before byte `p` (0 < p < len) is safe: when a newline precedes it. Proof. No
/// alternative matches past a newline: a number holds none, the run stops at the first and takes
/// it, the third is one. So a pretoken ends after every newline, in the whole text and in the
/// prefix alike (the run's lookahead, ` ?\p{N}`, reads past its end only within the line), and
/// the suffix's pretokens depend only on the text from `p` (there is no lookbehind).
#[inline]
pub(crate) fn can_cut_before(b: &[u8], p: usize) -> bool {
    b[p - 1] == b'\n'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::Pretokenizer;

    fn both(pattern: &str, text: &str) -> (Vec<String>, Vec<String>) {
        let (mut fast, mut engine) = (Vec::new(), Vec::new());
        let scanner = Pretokenizer::new(pattern).unwrap();
        assert!(!matches!(scanner, Pretokenizer::Regex(_)));
        scanner.for_each(text, |t| fast.push(t.to_owned())).unwrap();
        let regex = Pretokenizer::new(&format!("(?:{pattern})")).unwrap();
        regex.for_each(text, |t| engine.push(t.to_owned())).unwrap();
        (fast, engine)
    }

    #[test]
    fn scanners_follow_their_patterns() {
        let texts = [
            "By the way, I am a fan of the Milky Way.\n",
            "in 2019  and 12345678 x1 ½² ٣٤٥٦ end\r\n\n\nnext",
            "  1 a  22\n 3\n\n",
            "漢字 123 ไทย\u{a0}4\u{3000}5",
            " ",
            "\n",
            "",
            "7",
            "a b ",
        ];
        for pattern in [SUPERWORD_GPT2_PATTERN, SUPERWORD_GPT4_PATTERN] {
            for text in texts {
                let (fast, engine) = both(pattern, text);
                assert_eq!(fast, engine, "{pattern}: {text:?}");
            }
        }
    }

    #[test]
    fn scanners_follow_their_patterns_on_random_text() {
        let alphabet: Vec<char> = " \n\r\ta1Z:.'9²½٣漢\u{a0}\u{3000}".chars().collect();
        let mut next = crate::testing::numbers(7);
        for _ in 0..20_000 {
            let len = next(24) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                .collect();
            for pattern in [SUPERWORD_GPT2_PATTERN, SUPERWORD_GPT4_PATTERN] {
                let (fast, engine) = both(pattern, &text);
                assert_eq!(fast, engine, "{pattern}: {text:?}");
            }
        }
    }

    #[test]
    fn a_cut_after_a_newline_splits_text_as_a_whole() {
        let text = "a 1\nb  22 c\n\nd 3";
        for pattern in [SUPERWORD_GPT2_PATTERN, SUPERWORD_GPT4_PATTERN] {
            let pretok = Pretokenizer::new(pattern).unwrap();
            let (whole, _) = both(pattern, text);
            for p in 1..text.len() {
                if pretok.can_cut_before(text.as_bytes(), p) {
                    let (mut left, right) =
                        (both(pattern, &text[..p]).0, both(pattern, &text[p..]).0);
                    left.extend(right);
                    assert_eq!(left, whole, "cut at {p}");
                }
            }
        }
    }
}
