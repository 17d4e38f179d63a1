//! Bindings of pretokenization: a text's pieces (special tokens and pretokens), and which
//! scanner runs a pattern. The scanners are `pretokenize`'s.

use pyo3::prelude::*;

use super::errors::pretokenize_err;
use crate::pretokenize::{Piece, Pretokenizer, Specials};

/// The pieces of `text`: special tokens (as themselves) and pretokens, in order.
#[pyfunction]
#[pyo3(signature = (text, *, special_tokens, pattern))]
pub(super) fn pretokenize(
    text: &str,
    special_tokens: Vec<String>,
    pattern: &str,
) -> PyResult<Vec<String>> {
    let specials = Specials::new(&special_tokens).map_err(pretokenize_err)?;
    let pretok = Pretokenizer::new(pattern).map_err(pretokenize_err)?;
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

/// Which pretokenizer runs `pattern`: a hand-written scanner's name ("gpt2", ...) or "regex".
#[pyfunction]
pub(super) fn pretokenizer_kind(pattern: &str) -> PyResult<&'static str> {
    Ok(match Pretokenizer::new(pattern).map_err(pretokenize_err)? {
        Pretokenizer::Gpt2 => "gpt2",
        Pretokenizer::Cl100k => "cl100k",
        Pretokenizer::O200k => "o200k",
        Pretokenizer::SuperwordGpt2 => "gpt2-superword",
        Pretokenizer::SuperwordGpt4 => "gpt4-superword",
        Pretokenizer::Regex(_) => "regex",
    })
}
