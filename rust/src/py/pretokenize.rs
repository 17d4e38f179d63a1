//! Bindings of pretokenization: a text's pieces (special tokens and pretokens), and which
//! scanner runs a pattern. The scanners are `pretokenize`'s.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::errors::pretokenize_err;
use crate::pretokenize::{Behavior, Piece, Pretokenizer, Specials, Split};

/// The pretokenizer of a pattern from Python: one regex, whose unmatched text is kept as pieces
/// of its own (as HF's `Split` keeps it), or a sequence of steps, each a regex (an isolated
/// split) or a `(regex, behavior, invert)` triple (HF's `Split`).
pub(super) fn pretokenizer_of(pattern: &Bound<'_, PyAny>) -> PyResult<Pretokenizer> {
    if let Ok(regex) = pattern.extract::<String>() {
        return Pretokenizer::sequence(&[isolated(regex)]).map_err(pretokenize_err);
    }
    let mut splits = Vec::new();
    for step in pattern.try_iter()? {
        let step = step?;
        splits.push(match step.extract::<String>() {
            Ok(regex) => isolated(regex),
            Err(_) => {
                let (regex, behavior, invert) = step.extract::<(String, String, bool)>()?;
                Split {
                    pattern: regex,
                    behavior: behavior_of(&behavior)?,
                    invert,
                }
            }
        });
    }
    if splits.is_empty() {
        return Err(PyValueError::new_err(
            "a sequence of splits needs at least one",
        ));
    }
    Pretokenizer::sequence(&splits).map_err(pretokenize_err)
}

fn isolated(pattern: String) -> Split {
    Split {
        pattern,
        behavior: Behavior::Isolated,
        invert: false,
    }
}

fn behavior_of(name: &str) -> PyResult<Behavior> {
    Ok(match name {
        "Isolated" => Behavior::Isolated,
        "Removed" => Behavior::Removed,
        "MergedWithPrevious" => Behavior::MergedWithPrevious,
        "MergedWithNext" => Behavior::MergedWithNext,
        "Contiguous" => Behavior::Contiguous,
        _ => {
            return Err(PyValueError::new_err(format!(
                "a split's behavior is Isolated, Removed, MergedWithPrevious, MergedWithNext \
                 or Contiguous (HF's), got {name:?}"
            )))
        }
    })
}

/// The pieces of `text`: special tokens (as themselves) and pretokens, in order.
#[pyfunction]
#[pyo3(signature = (text, *, special_tokens, pattern))]
pub(super) fn pretokenize(
    text: &str,
    special_tokens: Vec<String>,
    pattern: &Bound<'_, PyAny>,
) -> PyResult<Vec<String>> {
    let specials = Specials::new(&special_tokens).map_err(pretokenize_err)?;
    let pretok = pretokenizer_of(pattern)?;
    let mut out = Vec::new();
    let mut result = Ok(());
    specials.for_each_piece(text, |piece| match piece {
        Piece::Special(i) => out.push(special_tokens[i].clone()),
        Piece::Text(t) if result.is_ok() => result = pretok.for_each(t, |w| out.push(w.to_owned())),
        Piece::Text(_) => {}
    });
    result.map_err(pretokenize_err)?;
    Ok(out)
}

/// Which pretokenizer runs `pattern`: a hand-written scanner's name ("gpt2", ...),
/// "compiled", "sequence" (compiled splits in turn, or a regex whose gaps are kept), "nested"
/// (splits run step by step) or "regex" (fancy-regex).
#[pyfunction]
pub(super) fn pretokenizer_kind(pattern: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    Ok(pretokenizer_of(pattern)?.kind())
}
