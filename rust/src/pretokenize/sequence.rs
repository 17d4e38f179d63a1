//! HF `tokenizer.json` pre-tokenizer sequences of `Split` steps, with HF tokenizers' semantics:
//! each step works on the previous step's pieces, one piece at a time (a lookahead or `$` sees a
//! piece's end as the end of the text); a step's matches and the gaps between them are its
//! ranges, flagged match or not (`invert` flips the flags), and its behaviour makes pieces of
//! them; empty pieces are dropped. The regex engine is the project's (fancy-regex, or its
//! compiled form), not HF's Oniguruma.
//!
//! Two paths: steps that all keep every range (`Isolated`) compile into one scan when the
//! earlier ones settle their pieces at once (`Compiled::sequence`: DeepSeek V3's digits, CJK,
//! then its main pattern; StarCoder2's digits then GPT-2's pattern); any other sequence runs
//! step by step (`Nested`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::{Compiled, Custom, PretokenizeError, Pretokenizer};

#[cfg(test)]
mod tests;

/// One `Split` step: a pattern, what becomes of its matches, and whether they are flipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The regex (HF's `{"Regex": ...}`; a `{"String": ...}` pattern is given escaped).
    pub pattern: String,
    /// What the step makes of its matches and the gaps between them.
    pub behavior: Behavior,
    /// Whether matches and gaps swap roles.
    pub invert: bool,
}

/// HF `SplitDelimiterBehavior`: what a `Split` makes of its ranges (a range is a match or a gap
/// between matches; `invert` swaps the two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    /// Every range is a piece.
    Isolated,
    /// Matches are dropped, gaps kept.
    Removed,
    /// A match joins the gap before it.
    MergedWithPrevious,
    /// A match joins the gap after it.
    MergedWithNext,
    /// Adjacent matches join.
    Contiguous,
}

/// A sequence of splits run step by step.
pub struct Nested {
    steps: Vec<(Pretokenizer, Behavior, bool)>,
}

impl Pretokenizer {
    /// The pretokenizer of a sequence of `Split` steps. A single step that keeps its matches
    /// and drops what is between them is `new(pattern)`, and so is one that keeps everything
    /// (`Isolated`) when its pattern leaves nothing between matches, as every model's does.
    pub fn sequence(splits: &[Split]) -> Result<Self, PretokenizeError> {
        let bad = |pattern: &str, message: String| PretokenizeError::BadPattern {
            pattern: pattern.to_owned(),
            message,
        };
        if let [one] = splits {
            let keeps_matches = one.behavior == Behavior::Removed && one.invert;
            let single = Self::new(&one.pattern)?;
            if keeps_matches || (one.behavior == Behavior::Isolated && single.is_total()) {
                return Ok(single);
            }
        }
        let isolated = splits.iter().all(|s| s.behavior == Behavior::Isolated);
        if isolated && !splits.is_empty() {
            let patterns: Vec<&str> = splits.iter().map(|s| s.pattern.as_str()).collect();
            if let Ok(fused) = Compiled::sequence(&patterns) {
                return Ok(Self::Regex(Custom::Sequence(Arc::new(fused))));
            }
        }
        let mut steps = Vec::with_capacity(splits.len());
        for s in splits {
            // compiled where it can be, its unmatched text dropped (the gaps are what is left)
            let pretok = match Compiled::new(&s.pattern) {
                Ok(c) => Self::Regex(Custom::Compiled(Arc::new(c))),
                Err(_) => Self::regex(&s.pattern).map_err(|e| bad(&s.pattern, e.to_string()))?,
            };
            steps.push((pretok, s.behavior, s.invert));
        }
        Ok(Self::Regex(Custom::Nested(Arc::new(Nested { steps }))))
    }
}

impl Nested {
    /// Calls `f(start, end)` on each piece of `text`, in order.
    pub(super) fn for_each_span(
        &self,
        text: &str,
        stop: &AtomicBool,
        f: &mut impl FnMut(usize, usize),
    ) -> Result<(), PretokenizeError> {
        self.pieces(text, 0, 0, stop, f)
    }

    /// Calls `f` on the pieces that steps `k..` make of `text`, which starts at `offset`.
    fn pieces(
        &self,
        text: &str,
        k: usize,
        offset: usize,
        stop: &AtomicBool,
        f: &mut impl FnMut(usize, usize),
    ) -> Result<(), PretokenizeError> {
        let Some((pretok, behavior, invert)) = self.steps.get(k) else {
            if !text.is_empty() {
                f(offset, offset + text.len());
            }
            return Ok(());
        };
        let ranges = ranges(pretok, text, stop, *invert)?;
        for (s, e) in apply(&ranges, *behavior) {
            self.pieces(&text[s..e], k + 1, offset + s, stop, f)?;
        }
        Ok(())
    }
}

/// The ranges of one step on one piece: each match (empty ones too, as HF splits at them) and
/// each gap between, with whether it is a match (flipped by `invert`).
fn ranges(
    pretok: &Pretokenizer,
    text: &str,
    stop: &AtomicBool,
    invert: bool,
) -> Result<Vec<(usize, usize, bool)>, PretokenizeError> {
    let mut out = Vec::new();
    let mut last = 0;
    let mut push = |s: usize, e: usize| {
        if last < s {
            out.push((last, s, invert));
        }
        out.push((s, e, !invert));
        last = e;
    };
    match pretok {
        Pretokenizer::Regex(Custom::Engine(re)) => {
            for m in re.find_iter(text) {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(PretokenizeError::Stopped);
                }
                let m = m.map_err(|e| PretokenizeError::MatchFailed {
                    pattern: re.as_str().to_owned(),
                    message: e.to_string(),
                })?;
                push(m.start(), m.end());
            }
        }
        other => other.for_each_span(text, stop, &mut push)?,
    }
    if last < text.len() {
        out.push((last, text.len(), invert));
    }
    Ok(out)
}

/// The pieces a behaviour makes of a step's ranges (empty ones dropped later).
fn apply(ranges: &[(usize, usize, bool)], behavior: Behavior) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    let mut prev: Option<bool> = None; // the flag of the range that made the last piece
    for &(s, e, matched) in ranges {
        let join = match behavior {
            Behavior::Isolated | Behavior::Removed => false,
            Behavior::MergedWithPrevious => matched && prev == Some(false),
            Behavior::MergedWithNext => !matched && prev == Some(true),
            Behavior::Contiguous => prev == Some(matched),
        };
        prev = Some(matched);
        if behavior == Behavior::Removed && matched {
            continue;
        }
        match out.last_mut() {
            Some(last) if join => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out.retain(|&(s, e)| s < e);
    out
}
