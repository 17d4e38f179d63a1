//! Pretokenization, shared by training and encoding: split text on special tokens, then into
//! pretokens with a preset's hand-written scanner, with any other pattern compiled into one
//! automaton over its character classes, or, for what that cannot run, with fancy-regex. Also
//! decides where a stream of text may be cut without changing the result (`safe_cut`).
//!
//! Why hand-written scanners: the GPT-2 pattern has a lookahead (`\s+(?!\S)`), which the
//! `regex` crate cannot run, and fancy-regex runs it at ~5-20 MB/s. The GPT-2 scanner
//! (`gpt2.rs`) follows the pattern's alternatives one by one, with character classes generated
//! from regex-syntax (`tables.rs`), the source of fancy-regex's classes, so it matches
//! fancy-regex and tiktoken exactly (`unicode.rs` checks every code point;
//! tests/test_unicode.py lists where the Python `regex` package differs); `gpt4.rs` and
//! `o200k.rs` do the same for cl100k and o200k. Other patterns (Llama 3's, Qwen's, Mistral's,
//! ...) are compiled (`compiled.rs`: the same classes, fancy-regex's own parse, exact by
//! construction and held to fancy-regex by tests), and HF pre-tokenizer sequences of splits
//! are `sequence.rs`'s. Special tokens and safe cuts are `specials.rs`'s; the SIMD fast paths
//! for ASCII `ascii.rs`, `gpt4_ascii.rs` and `block.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use gpt2::gpt2_token_end;
use gpt4::CL100K_PATTERN;
use o200k::O200K_PATTERN;

mod ascii;
mod block;
pub mod compiled;
mod gpt2;
pub mod gpt4;
mod gpt4_ascii;
mod gpt4_masks;
pub mod o200k;
mod sequence;
mod specials;
mod superword;

pub use compiled::{Compiled, Refusal};
pub(crate) use gpt2::{class_at, class_of, decode_at, SPACE};
pub use sequence::{Behavior, Nested, Split};
pub use specials::{Added, Piece, Specials};
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
    /// Any other pattern, or a sequence of splits (`Custom`).
    Regex(Custom),
}

/// A pattern that is not a preset, or a sequence of splits.
#[derive(Clone)]
pub enum Custom {
    /// Compiled into one scan over its character classes (`compiled.rs`).
    Compiled(Arc<Compiled>),
    /// Run by fancy-regex: what the compiler refuses (`Refusal`).
    Engine(Arc<fancy_regex::Regex>),
    /// Splits that keep every piece, compiled into one scan (`sequence.rs`).
    Sequence(Arc<Compiled>),
    /// Any other sequence of splits, run step by step.
    Nested(Arc<Nested>),
}

impl Pretokenizer {
    /// The scanner for a preset's pattern, the compiled scan for any other pattern the compiler
    /// takes, else fancy-regex.
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
        match Compiled::new(pattern) {
            Ok(c) => Ok(Self::Regex(Custom::Compiled(Arc::new(c)))),
            Err(_) => Self::regex(pattern),
        }
    }

    /// `pattern` on fancy-regex, whatever it is: the engine every other path is held to.
    pub fn regex(pattern: &str) -> Result<Self, PretokenizeError> {
        // Bounded compiled size: fancy-regex otherwise compiles some patterns (a lookbehind
        // over a large repetition) by asking for gigabytes, and a failed allocation aborts.
        fancy_regex::RegexBuilder::new(pattern)
            .delegate_size_limit(REGEX_SIZE_LIMIT)
            .delegate_dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map(|re| Self::Regex(Custom::Engine(Arc::new(re))))
            .map_err(|e| PretokenizeError::BadPattern {
                pattern: pattern.to_owned(),
                message: e.to_string(),
            })
    }

    /// Which path splits the text: a preset scanner's name ("gpt2", "cl100k", "o200k",
    /// "gpt2-superword", "gpt4-superword"), "compiled", "regex" (fancy-regex), or "sequence"
    /// (splits compiled into one scan) and "nested" (splits run step by step).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Gpt2 => "gpt2",
            Self::Cl100k => "cl100k",
            Self::O200k => "o200k",
            Self::SuperwordGpt2 => "gpt2-superword",
            Self::SuperwordGpt4 => "gpt4-superword",
            Self::Regex(Custom::Compiled(_)) => "compiled",
            Self::Regex(Custom::Engine(_)) => "regex",
            Self::Regex(Custom::Sequence(_)) => "sequence",
            Self::Regex(Custom::Nested(_)) => "nested",
        }
    }

    /// Whether every character of every text is in some pretoken (nothing between matches is
    /// dropped): the hand-written scanners' patterns all end in alternatives that match any
    /// character; a compiled pattern knows; false where that is not known.
    fn is_total(&self) -> bool {
        match self {
            Self::Regex(Custom::Compiled(c)) => c.total(),
            Self::Regex(_) => false,
            _ => true,
        }
    }

    /// Whether `can_cut_before` allows any cut at all (a pattern on fancy-regex allows none).
    pub fn cuts_anywhere(&self) -> bool {
        match self {
            Self::Regex(Custom::Compiled(c) | Custom::Sequence(c)) => c.cuts_anywhere(),
            Self::Regex(_) => false,
            _ => true,
        }
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
            Self::Regex(Custom::Compiled(c) | Custom::Sequence(c)) => c.for_each_span(text, f),
            Self::Regex(Custom::Nested(n)) => n.for_each_span(text, stop, &mut f)?,
            Self::Regex(Custom::Engine(re)) => {
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
    /// modules' `can_cut_before`; the superword patterns: after a newline; compiled patterns
    /// and sequences: by the classes on either side, as their table proves (`compiled/table.rs`);
    /// patterns on fancy-regex and sequences run step by step: never.
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
    pub(crate) fn can_cut_before(&self, b: &[u8], p: usize) -> bool {
        match self {
            Self::Gpt2 => {}
            Self::Cl100k => return gpt4::can_cut_before(b, p),
            Self::O200k => return o200k::can_cut_before(b, p),
            Self::SuperwordGpt2 | Self::SuperwordGpt4 => return superword::can_cut_before(b, p),
            Self::Regex(Custom::Compiled(c) | Custom::Sequence(c)) => {
                return c.can_cut_before(b, p)
            }
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
