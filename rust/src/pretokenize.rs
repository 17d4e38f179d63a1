//! Pretokenization, shared by training and encoding: split text on special tokens, then into
//! pretokens with the GPT-2 pattern (a hand-written scanner) or with any other pattern (fancy-regex).
//! Also decides where a stream of text may be cut without changing the result (`safe_cut`).
//!
//! Why hand-written scanners: the GPT-2 pattern has a lookahead (`\s+(?!\S)`), which the
//! `regex` crate cannot run, and fancy-regex runs it at ~5-20 MB/s. The GPT-2 scanner
//! (`gpt2.rs`) follows the pattern's alternatives one by one, with character classes generated
//! from regex-syntax (`tables.rs`), the source of fancy-regex's classes, so it matches
//! fancy-regex and tiktoken exactly (`unicode.rs` checks every code point;
//! tests/test_unicode.py lists where the Python `regex` package differs); `gpt4.rs` and
//! `o200k.rs` do the same for cl100k and o200k. Special tokens and safe cuts are
//! `specials.rs`'s; the SIMD fast paths for ASCII `ascii.rs`, `gpt4_ascii.rs` and `block.rs`.

use std::sync::atomic::{AtomicBool, Ordering};

use gpt2::gpt2_token_end;
use gpt4::CL100K_PATTERN;
use o200k::O200K_PATTERN;

mod ascii;
mod block;
mod gpt2;
pub mod gpt4;
mod gpt4_ascii;
mod gpt4_masks;
pub mod o200k;
mod specials;
mod superword;

pub(crate) use gpt2::{class_at, class_of, decode_at, SPACE};
pub use specials::{Piece, Specials};
pub use superword::{SUPERWORD_GPT2_PATTERN, SUPERWORD_GPT4_PATTERN};

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
    /// The superword scanners of SuperBPE's second stage (`pretokenize/superword.rs`), after
    /// GPT-2's pattern and after GPT-4's.
    SuperwordGpt2,
    SuperwordGpt4,
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
        if pattern == SUPERWORD_GPT2_PATTERN {
            return Ok(Self::SuperwordGpt2);
        }
        if pattern == SUPERWORD_GPT4_PATTERN {
            return Ok(Self::SuperwordGpt4);
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
            Self::SuperwordGpt2 | Self::SuperwordGpt4 => {
                let gpt2 = matches!(self, Self::SuperwordGpt2);
                let mut i = 0;
                while i < b.len() {
                    let end = if gpt2 {
                        superword::gpt2_token_end(b, i)
                    } else {
                        superword::gpt4_token_end(b, i)
                    };
                    f(i, end);
                    i = end;
                }
            }
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
    /// modules' `can_cut_before`; the superword patterns: after a newline. Other patterns: never.
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
            Self::SuperwordGpt2 | Self::SuperwordGpt4 => return superword::can_cut_before(b, p),
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
