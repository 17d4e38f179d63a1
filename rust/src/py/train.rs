//! Binding of training's merge stage: a `WordCounts` table to merges and the bytes of every id,
//! with progress reported and Ctrl-C seen while it runs. The merge loop is `train.rs`'s.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::count::PyWordCounts;
use super::errors::train_err;
use super::progress::Progress;
use crate::train;
use crate::types::TokenId;

/// Merges as id pairs, and the bytes of every id.
type TrainOutput<'py> = (Vec<(TokenId, TokenId)>, Vec<Bound<'py, PyBytes>>);

/// Runs `num_merges` merges on `counts`; returns (merges as id pairs, bytes of every id).
/// With `consume`, the table is emptied (its memory is reused) instead of copied. `start`:
/// merges of an earlier run to continue from (counted in `num_merges`).
#[pyfunction]
#[pyo3(signature = (counts, num_merges, *, num_threads=1, consume=false, progress=None, start=Vec::new()))]
pub(super) fn train_bpe<'py>(
    py: Python<'py>,
    counts: &PyWordCounts,
    num_merges: usize,
    num_threads: usize,
    consume: bool,
    progress: Option<Py<PyAny>>,
    start: Vec<(TokenId, TokenId)>,
) -> PyResult<TrainOutput<'py>> {
    let table = if consume {
        std::mem::take(&mut *counts.lock())
    } else {
        counts.lock().clone()
    };
    let mut reporter = Progress::new(progress);
    let result = py.detach(|| {
        train::train_from(table, &start, num_merges, num_threads, &mut |n| {
            reporter.report(n as u64)
        })
    });
    let result = result.map_err(train_err);
    let result = result.map(|r| {
        let vocab = r.vocab.iter().map(|b| PyBytes::new(py, b)).collect();
        (r.merges, vocab)
    });
    reporter.finish(py, result)
}
