//! Pretokenization, shared by training and encoding: split text on special tokens, then into
//! pretokens with the GPT-2 pattern (a hand-written scanner) or with any other pattern (fancy-regex).
//! Also decides where a stream of text may be cut without changing the result (`safe_cut`).
//!
//! Why a hand-written scanner: the GPT-2 pattern has a lookahead (`\s+(?!\S)`), which the `regex`
//! crate cannot run, and fancy-regex runs it at ~5-20 MB/s. The scanner below follows the pattern's
//! alternatives one by one, with character classes generated from regex-syntax (`tables.rs`), the
//! source of fancy-regex's classes, so it matches fancy-regex and tiktoken exactly (`unicode.rs`
//! checks every code point; tests/test_unicode.py lists where the Python `regex` package differs).

use aho_corasick::{AhoCorasick, MatchKind};

use crate::tables::{BLOCKS, BLOCK_INDEX, BLOCK_SHIFT};

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
}

/// The class of `\s` in `tables.rs` (0 is other, 1 `\p{L}`, 2 `\p{N}`).
const SPACE: u8 = 3;

/// Class of a code point under the GPT-2 pattern: other, `\p{L}`, `\p{N}` or `\s`.
#[inline(always)]
pub(crate) fn class_of(cp: u32) -> u8 {
    let block = BLOCK_INDEX[(cp >> BLOCK_SHIFT) as usize] as usize;
    BLOCKS[block][(cp & 0xff) as usize]
}

/// Decodes the code point starting at `i` of valid UTF-8; returns it and its length in bytes.
#[inline(always)]
fn decode_at(b: &[u8], i: usize) -> (u32, usize) {
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

/// Class of the character at byte `i`, with its length.
#[inline(always)]
fn class_at(b: &[u8], i: usize) -> (u8, usize) {
    let (cp, len) = decode_at(b, i);
    (class_of(cp), len)
}

/// End of the run of characters of class `class` starting at `i`.
#[inline(always)]
fn run_end(b: &[u8], mut i: usize, class: u8) -> usize {
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

/// Splits text into pretokens.
pub enum Pretokenizer {
    /// The hand-written GPT-2 scanner.
    Gpt2,
    /// Any other pattern, run by fancy-regex.
    Regex(Box<fancy_regex::Regex>),
}

impl Pretokenizer {
    /// The scanner for the GPT-2 pattern, fancy-regex for any other.
    pub fn new(pattern: &str) -> Result<Self, PretokenizeError> {
        if pattern == GPT2_PATTERN {
            return Ok(Self::Gpt2);
        }
        fancy_regex::Regex::new(pattern)
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
        mut f: impl FnMut(&'t str),
    ) -> Result<(), PretokenizeError> {
        match self {
            Self::Gpt2 => {
                let b = text.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    let end = gpt2_token_end(b, i);
                    f(&text[i..end]);
                    i = end;
                }
            }
            Self::Regex(re) => {
                for m in re.find_iter(text) {
                    let m = m.map_err(|e| PretokenizeError::MatchFailed {
                        pattern: re.as_str().to_owned(),
                        message: e.to_string(),
                    })?;
                    if !m.as_str().is_empty() {
                        f(m.as_str());
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether a cut before byte `p` of a segment is safe: pretokens of the two sides are then
    /// those of the whole. For the GPT-2 pattern: the character before `p` is not whitespace and
    /// the one at `p` is. No pretoken holds a non-space followed by a space, the pattern looks
    /// behind nowhere, and its one lookahead ends a whitespace run, which cannot end at `p - 1`.
    /// Only ASCII is considered, which keeps `p` on a character boundary. Other patterns: never.
    #[inline]
    fn can_cut_before(&self, b: &[u8], p: usize) -> bool {
        matches!(self, Self::Gpt2)
            && p > 0
            && matches!(b[p], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
            && b[p - 1] < 0x80
            && class_of(b[p - 1] as u32) != SPACE
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
            if pretok.can_cut_before(b, p) {
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
}
