//! Binding of the cut finder: where a file may be split into shards counted apart. The rule of
//! a safe cut is `cuts.rs`'s; planning the shards is the Python caller's.

use std::path::PathBuf;

use pyo3::prelude::*;

use super::errors::{count_err, pretokenize_err};
use super::pretokenize::pretokenizer_of;
use crate::count::CountError;
use crate::cuts::CutFinder;

/// For each target byte offset of the file at `path` (ascending), the last safe cut at or
/// before it, after the previous cut, at most `max_back` bytes back; None where there is none
/// (see `cuts::CutFinder`).
#[pyfunction]
#[pyo3(signature = (path, targets, *, special_tokens, pattern, max_back=crate::cuts::MAX_BACK))]
pub(super) fn find_cuts(
    py: Python<'_>,
    path: PathBuf,
    targets: Vec<u64>,
    special_tokens: Vec<String>,
    pattern: &Bound<'_, PyAny>,
    max_back: u64,
) -> PyResult<Vec<Option<u64>>> {
    let pretok = pretokenizer_of(pattern)?;
    let finder = CutFinder::new(&special_tokens, pretok).map_err(pretokenize_err)?;
    py.detach(|| finder.find_cuts(&path, &targets, max_back))
        .map_err(|e| count_err(CountError::Io { path, source: e }))
}
