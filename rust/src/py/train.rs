//! Binding of training's merge stage: a `WordCounts` table to merges and the bytes of every id,
//! with progress reported and Ctrl-C seen while it runs. The merge loop is `train.rs`'s.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::count::PyWordCounts;
use super::errors::train_err;
use super::progress::Progress;
use crate::train;
use crate::types::TokenId;

/// Merges as id pairs, the bytes of every id, and why the loop ended (`Stop::name`).
type TrainOutput<'py> = (
    Vec<(TokenId, TokenId)>,
    Vec<Bound<'py, PyBytes>>,
    &'static str,
);

/// Runs `num_merges` merges on `counts`; returns (merges as id pairs, bytes of every id, why
/// it ended). With `consume`, the table is emptied (its memory is reused) instead of copied.
/// `start`: merges of an earlier run to continue from (counted in `num_merges`).
/// `min_frequency`, `max_token_length`, `superword` (max words, whether ": " may be made): the
/// loop's `Limits`, checked by the caller.
#[pyfunction]
#[pyo3(signature = (
    counts, num_merges, *, num_threads=1, consume=false, progress=None, start=Vec::new(),
    min_frequency=1, max_token_length=None, superword=None,
))]
#[allow(clippy::too_many_arguments)]
pub(super) fn train_bpe<'py>(
    py: Python<'py>,
    counts: &PyWordCounts,
    num_merges: usize,
    num_threads: usize,
    consume: bool,
    progress: Option<Py<PyAny>>,
    start: Vec<(TokenId, TokenId)>,
    min_frequency: u64,
    max_token_length: Option<usize>,
    superword: Option<(Option<usize>, bool)>,
) -> PyResult<TrainOutput<'py>> {
    let limits = train::Limits {
        min_frequency,
        max_token_length,
        superword: superword.map(|(max_words, colon_space)| train::Superword {
            max_words,
            colon_space,
        }),
    };
    let table = if consume {
        std::mem::take(&mut *counts.lock())
    } else {
        counts.lock().clone()
    };
    let mut reporter = Progress::new(progress);
    let result = py.detach(|| {
        train::train_from(table, &start, num_merges, limits, num_threads, &mut |n| {
            reporter.report(n as u64)
        })
    });
    let result = result.map_err(train_err);
    let result = result.map(|r| {
        let vocab = r.vocab.iter().map(|b| PyBytes::new(py, b)).collect();
        (r.merges, vocab, r.stop.name())
    });
    reporter.finish(py, result)
}
