//! Pretokenization, shared by training and encoding: split text on special tokens, then into
//! pretokens with the GPT-2 pattern (a hand-written scanner) or with any other pattern (fancy-regex).
//! Also decides where a stream of text may be cut without changing the result (`safe_cut`).
//!
//! Why a hand-written scanner: the GPT-2 pattern has a lookahead (`\s+(?!\S)`), which the `regex`
//! crate cannot run, and fancy-regex runs it at ~5-20 MB/s. The scanner below follows the pattern's
//! alternatives one by one, with character classes generated from regex-syntax (`tables.rs`), the
//! source of fancy-regex's classes, so it matches fancy-regex and tiktoken exactly (`unicode.rs`
//! checks every code point; tests/test_unicode.py lists where the Python `regex` package differs).

use std::sync::atomic::{AtomicBool, Ordering};

use aho_corasick::{AhoCorasick, MatchKind};

use crate::tables::{BLOCKS, BLOCK_INDEX, BLOCK_SHIFT};
use gpt4::CL100K_PATTERN;
use o200k::O200K_PATTERN;

mod ascii;
pub mod gpt4;
mod gpt4_ascii;
pub mod o200k;

/// The GPT-2 pretokenization pattern; a pattern equal to it runs on the hand-written scanner.
pub const GPT2_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Errors of this stage.
#[derive(Debug, thiserror::Error)]
pub enum PretokenizeError {
    /// The pattern does not compile.
    #[error("invalid pattern {pattern:?}: {message}")]
    BadPattern { pattern: String, message: String },
    /// The regex engine gave up on a piece of text (e.g. its backtracking limit).
    #[error("pattern {pattern:?} failed on the input: {message}")]
    MatchFailed { pattern: String, message: String },
    /// A special token is the empty string.
    #[error("special tokens must not be empty")]
    EmptySpecial,
    /// Another thread asked to stop (an error elsewhere, or Ctrl-C).
    #[error("stopped")]
    Stopped,
}

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
fn gpt2_token_end(b: &[u8], i: usize) -> usize {
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

/// The most memory a custom pattern's compiled form may take (the `regex` crate's default is
/// 10 MiB; a pattern past this is refused with an error naming the limit).
const REGEX_SIZE_LIMIT: usize = 64 << 20;

/// Splits text into pretokens. (A clone of a custom pattern shares its compiled program.)
#[derive(Clone)]
pub enum Pretokenizer {
    /// The hand-written GPT-2 scanner.
    Gpt2,
    /// The hand-written GPT-4 (cl100k) scanner (`pretokenize/gpt4.rs`).
    Cl100k,
    /// The hand-written GPT-4o (o200k) scanner (`pretokenize/o200k.rs`).
    O200k,
    /// Any other pattern, run by fancy-regex.
    Regex(Box<fancy_regex::Regex>),
}

impl Pretokenizer {
    /// The scanner for the GPT-2 pattern, fancy-regex for any other.
    pub fn new(pattern: &str) -> Result<Self, PretokenizeError> {
        if pattern == GPT2_PATTERN {
            return Ok(Self::Gpt2);
        }
        if pattern == CL100K_PATTERN {
            return Ok(Self::Cl100k);
        }
        if pattern == O200K_PATTERN {
            return Ok(Self::O200k);
        }
        // Bounded compiled size: fancy-regex otherwise compiles some patterns (a lookbehind
        // over a large repetition) by asking for gigabytes, and a failed allocation aborts.
        fancy_regex::RegexBuilder::new(pattern)
            .delegate_size_limit(REGEX_SIZE_LIMIT)
            .delegate_dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map(|re| Self::Regex(Box::new(re)))
            .map_err(|e| PretokenizeError::BadPattern {
                pattern: pattern.to_owned(),
                message: e.to_string(),
            })
    }

    /// Calls `f` on each non-empty pretoken of `text`, in order.
    #[inline]
    pub fn for_each<'t>(
        &self,
        text: &'t str,
        f: impl FnMut(&'t str),
    ) -> Result<(), PretokenizeError> {
        self.for_each_until(text, &AtomicBool::new(false), f)
    }

    /// `for_each`, giving up with `Stopped` once `stop` is set. The regex engine checks it
    /// between matches: some custom patterns take seconds per match, and a counting worker
    /// must stop soon when another thread failed or Ctrl-C was pressed.
    #[inline]
    pub fn for_each_until<'t>(
        &self,
        text: &'t str,
        stop: &AtomicBool,
        mut f: impl FnMut(&'t str),
    ) -> Result<(), PretokenizeError> {
        self.for_each_span(text, stop, |s, e| f(&text[s..e]))
    }

    /// Calls `f(start, end)` with the byte range of each non-empty pretoken of `text`, in
    /// order (ranges on character boundaries). The encoder's loop takes ranges, not `&str`:
    /// slicing a `str` checks both ends for a character boundary, a tenth of its instructions.
    #[inline]
    pub fn for_each_span(
        &self,
        text: &str,
        stop: &AtomicBool,
        mut f: impl FnMut(usize, usize),
    ) -> Result<(), PretokenizeError> {
        let b = text.as_bytes();
        match self {
            Self::Gpt2 => {
                let (mut i, mut ascii_from) = (0, 0);
                while i < b.len() {
                    if i >= ascii_from && ascii::scan_block(b, &mut i, &mut ascii_from, &mut f) {
                        continue;
                    }
                    let end = gpt2_token_end(b, i);
                    f(i, end);
                    i = end;
                }
            }
            Self::Cl100k => gpt4_ascii::for_each_span::<false>(b, &mut f),
            Self::O200k => gpt4_ascii::for_each_span::<true>(b, &mut f),
            Self::Regex(re) => {
                for m in re.find_iter(text) {
                    if stop.load(Ordering::Relaxed) {
                        return Err(PretokenizeError::Stopped);
                    }
                    let m = m.map_err(|e| PretokenizeError::MatchFailed {
                        pattern: re.as_str().to_owned(),
                        message: e.to_string(),
                    })?;
                    if !m.as_str().is_empty() {
                        f(m.start(), m.end());
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether a cut before byte `p` (a character boundary, 0 < p < len) of a segment is safe:
    /// the pretokens of the two sides are then those of the whole. cl100k and o200k: their
    /// modules' `can_cut_before`. Other patterns: never.
    ///
    /// For the GPT-2 pattern, with `x` the character before `p` and `y` the one at `p`, the cut
    /// is safe when `x` is not whitespace and either `y` is whitespace or `y` is of another class
    /// than `x` (letter, number, other), except `x = '` before an ASCII letter (a contraction).
    /// Proof. (1) `p` ends the pretoken `t` holding `x` in the whole text. A pretoken mixes
    /// classes only as an optional leading space before a run (`x` would be that space:
    /// excluded), a whitespace run (excluded), or a contraction `'` + 1-2 ASCII letters (`t`
    /// could go on from `x = '` to a letter: excluded; from a letter only to a letter of the
    /// same class: excluded). So `t` ends at `p`. (2) The prefix gives the same pretokens. The
    /// scanner has no lookbehind; from a start `s` it reads past a match's end only to see that
    /// a run stops (a character of another class, or the end of the text, which `p` now is), to
    /// try a contraction (a failed try fails as well on fewer characters), or to decide
    /// `\s+(?!\S)`, which only pretokens of whitespace do, and none ends at `p`. (3) The suffix
    /// starts at a pretoken boundary of the whole, and pretokens from there depend only on the
    /// text from there. Nearly all text has such cuts every few characters, in every script:
    /// spaces, punctuation (`。`), digits, combining marks (class other) all make one.
    #[inline]
    fn can_cut_before(&self, b: &[u8], p: usize) -> bool {
        match self {
            Self::Gpt2 => {}
            Self::Cl100k => return gpt4::can_cut_before(b, p),
            Self::O200k => return o200k::can_cut_before(b, p),
            Self::Regex(_) => return false,
        }
        let (y, _) = class_at(b, p);
        let mut q = p - 1;
        while b[q] & 0xc0 == 0x80 {
            q -= 1; // start of the character before `p`
        }
        let (x, _) = class_at(b, q);
        if x == SPACE {
            return false;
        }
        y == SPACE || (y != x && !(b[q] == b'\'' && b[p].is_ascii_alphabetic()))
    }
}

/// Finds special tokens in text: the leftmost occurrence, the longest where several start there.
pub struct Specials {
    matcher: Option<AhoCorasick>,
    max_len: usize,
}

/// A piece of text between special tokens, or a special token (by its index in the list).
pub enum Piece<'t> {
    /// Ordinary text, to be pretokenized.
    Text(&'t str),
    /// An occurrence of the special token with this index.
    Special(usize),
}

impl Specials {
    /// A matcher for these tokens (none may be empty).
    pub fn new<S: AsRef<str>>(tokens: &[S]) -> Result<Self, PretokenizeError> {
        if tokens.iter().any(|t| t.as_ref().is_empty()) {
            return Err(PretokenizeError::EmptySpecial);
        }
        let max_len = tokens.iter().map(|t| t.as_ref().len()).max().unwrap_or(0);
        let matcher = if tokens.is_empty() {
            None
        } else {
            let built = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(tokens.iter().map(|t| t.as_ref()));
            Some(built.map_err(|e| PretokenizeError::BadPattern {
                pattern: "special tokens".into(),
                message: e.to_string(),
            })?)
        };
        Ok(Self { matcher, max_len })
    }

    /// Calls `f` on the pieces of `text` in order; empty text pieces are skipped.
    #[inline]
    pub fn for_each_piece<'t>(&self, text: &'t str, mut f: impl FnMut(Piece<'t>)) {
        let Some(ac) = &self.matcher else {
            if !text.is_empty() {
                f(Piece::Text(text));
            }
            return;
        };
        let mut last = 0;
        for m in ac.find_iter(text) {
            if m.start() > last {
                f(Piece::Text(&text[last..m.start()]));
            }
            f(Piece::Special(m.pattern().as_usize()));
            last = m.end();
        }
        if last < text.len() {
            f(Piece::Text(&text[last..]));
        }
    }

    /// The last byte offset `p` (0 < p < text.len()) where `text`, a prefix of a longer stream
    /// that starts at a safe cut, can be cut: the end of a special token whose match cannot change
    /// with more text, or a cut the pretokenizer allows that no special token straddles.
    pub fn safe_cut(&self, text: &str, pretok: &Pretokenizer) -> Option<usize> {
        let b = text.as_bytes();
        // Matches starting at or before `settled` are final whatever follows (no token is longer).
        let settled = b.len().checked_sub(self.max_len.max(1))?;
        let mut special_end = 0;
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if let Some(ac) = &self.matcher {
            for m in ac.find_iter(text) {
                if m.start() > settled {
                    break;
                }
                if m.end() < b.len() {
                    special_end = m.end();
                }
                spans.push((m.start(), m.end()));
            }
        }
        let mut p = settled;
        while p > special_end {
            // only character boundaries: continuation bytes are 0b10xxxxxx
            if b[p] & 0xc0 != 0x80 && pretok.can_cut_before(b, p) {
                let inside = spans.iter().rev().any(|&(s, e)| s < p && p < e);
                if !inside {
                    return Some(p);
                }
            }
            p -= 1;
        }
        (special_end > 0).then_some(special_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpt2(text: &str) -> Vec<&str> {
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

    #[test]
    fn specials_prefer_the_longest() {
        let sp = Specials::new(&["<a>", "<a><b>"]).unwrap();
        let mut pieces = Vec::new();
        sp.for_each_piece("x<a><b>y<a>", |p| {
            pieces.push(match p {
                Piece::Text(t) => t.to_owned(),
                Piece::Special(i) => format!("#{i}"),
            })
        });
        assert_eq!(pieces, ["x", "#1", "y", "#0"]);
    }

    #[test]
    fn safe_cut_avoids_special_tokens_and_space_runs() {
        let none = Specials::new::<&str>(&[]).unwrap();
        let g = Pretokenizer::Gpt2;
        assert_eq!(none.safe_cut("ab cd  ef", &g), Some(5));
        assert_eq!(none.safe_cut("abcdef", &g), None);
        let sp = Specials::new(&["x y"]).unwrap();
        assert_eq!(sp.safe_cut("ab x y cd efgh", &g), Some(9));
        assert_eq!(sp.safe_cut("abx y", &g), None);
    }

    #[test]
    fn safe_cut_in_text_without_ascii_spaces() {
        let none = Specials::new::<&str>(&[]).unwrap();
        let g = Pretokenizer::Gpt2;
        // letter → punctuation, in Chinese
        assert_eq!(none.safe_cut("我们。你好", &g), Some("我们。".len()));
        // a contraction is never split; other class changes are cuts
        assert_eq!(none.safe_cut("ab'sx", &g), Some(2));
        assert_eq!(none.safe_cut("{\"a\":1}", &g), Some(6));
        // whitespace after a non-space, but not inside a whitespace run
        assert_eq!(none.safe_cut("\u{3000}\u{3000}\u{3000}x", &g), None);
        assert_eq!(none.safe_cut("中\u{3000}\u{3000}x", &g), Some("中".len()));
    }

    /// Every cut `safe_cut` may choose gives, on both sides, the pretokens of the whole.
    #[test]
    fn every_safe_cut_keeps_the_pretokens() {
        let none = Specials::new::<&str>(&[]).unwrap();
        let texts = [
            "it's 12 cats' 'lltoys\r\n\n  x?!  ",
            "我们。你好，世界！\n\n第2章 test",
            "{\"a\":[1,2.5e3,\"x y\"],\"b's\":null}",
            "สวัสดีครับ ภาษาไทย١٢٣ مرحبا\u{3000}\u{3000}ok",
            "'s'S'll've're'd'm't 'x\t\u{a0}\u{2028}a",
        ];
        for text in texts {
            let whole = gpt2(text);
            for end in 1..=text.len() {
                if !text.is_char_boundary(end) {
                    continue;
                }
                let Some(p) = none.safe_cut(&text[..end], &Pretokenizer::Gpt2) else {
                    continue;
                };
                let mut parts = gpt2(&text[..p]);
                parts.extend(gpt2(&text[p..]));
                assert_eq!(parts, whole, "cut at {p} of {text:?}");
            }
        }
    }
}
