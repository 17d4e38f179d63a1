//! Every Python binding of the core: coarse calls (a file, a batch, a whole table), inputs
//! extracted before the GIL is released, no Python object touched while it is released.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::PyArray1;
use pyo3::exceptions::{
    PyKeyError, PyKeyboardInterrupt, PyMemoryError, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::count::{self, CountConfig, CountError, WordCounts};
use crate::encode::{EncodeError, Encoder, SpecialSet};
use crate::pretokenize::{Piece, PretokenizeError, Pretokenizer, Specials, GPT2_PATTERN};
use crate::train::{self, TokenId};

fn pretokenize_err(e: PretokenizeError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn count_err(e: CountError) -> PyErr {
    match e {
        CountError::Io { path, source } => {
            let errno = source.raw_os_error().unwrap_or(0);
            PyOSError::new_err((errno, source.to_string(), path.display().to_string()))
        }
        CountError::InvalidUtf8 { .. } => PyValueError::new_err(e.to_string()),
        CountError::Pretokenize(e) => pretokenize_err(e),
        CountError::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        CountError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
    }
}

fn encode_err(e: EncodeError) -> PyErr {
    match e {
        EncodeError::UnknownId(id) => PyKeyError::new_err(id),
        EncodeError::OutOfMemory(_) => PyMemoryError::new_err(e.to_string()),
        EncodeError::Pretokenize(e) => pretokenize_err(e),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Wraps an optional Python callable as a progress callback that runs under the GIL; an
/// exception it raises (or a pending Ctrl-C) stops the core and is re-raised afterwards.
struct Progress {
    callback: Option<Py<PyAny>>,
    error: Option<PyErr>,
}

impl Progress {
    fn new(callback: Option<Py<PyAny>>) -> Self {
        Progress {
            callback,
            error: None,
        }
    }

    fn report(&mut self, done: u64) -> bool {
        Python::attach(|py| {
            let result = py.check_signals().and_then(|()| match &self.callback {
                Some(cb) => cb.call1(py, (done,)).map(|_| ()),
                None => Ok(()),
            });
            match result {
                Ok(()) => true,
                Err(e) => {
                    self.error = Some(e);
                    false
                }
            }
        })
    }

    fn finish<T>(self, result: PyResult<T>) -> PyResult<T> {
        match self.error {
            Some(e) => Err(e),
            None => result,
        }
    }
}

/// Word counts: distinct pretokens (bytes) and their u64 counts. The result of counting one
/// shard; tables of several shards add up with `merge`, and pickle for shipping elsewhere.
#[pyclass(name = "WordCounts", module = "bytepair._core")]
pub struct PyWordCounts {
    inner: Mutex<WordCounts>,
}

impl PyWordCounts {
    fn wrap(counts: WordCounts) -> Self {
        PyWordCounts {
            inner: Mutex::new(counts),
        }
    }

    /// Adds `found` into this table, holding its lock with the GIL released (the lock is
    /// only ever held for a moment or without the GIL, so no thread waits on both).
    fn absorb(&self, py: Python<'_>, found: WordCounts) {
        py.detach(|| self.lock().merge(found));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WordCounts> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[pymethods]
impl PyWordCounts {
    #[new]
    #[pyo3(signature = (items=None))]
    fn py_new(items: Option<Vec<(Vec<u8>, u64)>>) -> Self {
        let mut counts = WordCounts::default();
        for (word, n) in items.unwrap_or_default() {
            counts.add(&word, n);
        }
        Self::wrap(counts)
    }

    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// Total number of words counted.
    fn total(&self) -> u64 {
        let mut total = 0;
        self.lock().for_each(|_, n| total += n);
        total
    }

    /// Adds the counts of `other` into this table.
    fn merge(&self, py: Python<'_>, other: &PyWordCounts) -> PyResult<()> {
        if std::ptr::eq(self, other) {
            return Err(PyValueError::new_err(
                "cannot merge a WordCounts into itself",
            ));
        }
        let theirs = other.lock().clone();
        self.absorb(py, theirs);
        Ok(())
    }

    /// (word bytes, count) pairs, sorted by word.
    fn items<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u64)> {
        let mut items = Vec::new();
        self.lock().for_each(|w, n| items.push((w.to_vec(), n)));
        items.sort_unstable();
        items
            .into_iter()
            .map(|(w, n)| (PyBytes::new(py, &w), n))
            .collect()
    }

    fn __getnewargs__<'py>(&self, py: Python<'py>) -> (Vec<(Bound<'py, PyBytes>, u64)>,) {
        (self.items(py),)
    }
}

/// Counts the words of bytes `start..end` of the file at `path`.
/// Returns (counts, bytes read, invalid sequences replaced).
#[pyfunction]
#[pyo3(signature = (path, *, start, end, special_tokens, pattern, strict, chunk_size, num_threads, progress=None))]
#[allow(clippy::too_many_arguments)]
fn count_file(
    py: Python<'_>,
    path: PathBuf,
    start: u64,
    end: u64,
    special_tokens: Vec<String>,
    pattern: &str,
    strict: bool,
    chunk_size: usize,
    num_threads: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<(PyWordCounts, u64, u64)> {
    let config = CountConfig {
        specials: Specials::new(&special_tokens).map_err(pretokenize_err)?,
        pretok: Pretokenizer::new(pattern).map_err(pretokenize_err)?,
        strict,
        chunk_size,
        num_threads,
    };
    let mut reporter = Progress::new(progress);
    let result =
        py.detach(|| count::count_file(&path, start, end, &config, &mut |n| reporter.report(n)));
    let result = result
        .map(|(counts, stats)| (PyWordCounts::wrap(counts), stats.n_bytes, stats.n_replaced))
        .map_err(count_err);
    reporter.finish(result)
}

/// Counts the words of independent texts (no pretoken spans two texts) into `counts`.
#[pyfunction]
#[pyo3(signature = (counts, texts, *, special_tokens, pattern, num_threads))]
fn count_texts(
    py: Python<'_>,
    counts: &PyWordCounts,
    texts: Vec<String>,
    special_tokens: Vec<String>,
    pattern: &str,
    num_threads: usize,
) -> PyResult<()> {
    let config = CountConfig {
        specials: Specials::new(&special_tokens).map_err(pretokenize_err)?,
        pretok: Pretokenizer::new(pattern).map_err(pretokenize_err)?,
        strict: true,
        chunk_size: 0,
        num_threads,
    };
    let found = py
        .detach(|| count::count_texts(&texts, &config))
        .map_err(pretokenize_err)?;
    counts.absorb(py, found);
    Ok(())
}

/// The pieces of `text`: special tokens (as themselves) and pretokens, in order.
#[pyfunction]
#[pyo3(signature = (text, *, special_tokens, pattern))]
fn pretokenize(text: &str, special_tokens: Vec<String>, pattern: &str) -> PyResult<Vec<String>> {
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

/// Merges as id pairs, and the bytes of every id.
type TrainOutput<'py> = (Vec<(TokenId, TokenId)>, Vec<Bound<'py, PyBytes>>);

/// Runs `num_merges` merges on `counts`; returns (merges as id pairs, bytes of every id).
/// With `consume`, the table is emptied (its memory is reused) instead of copied.
#[pyfunction]
#[pyo3(signature = (counts, num_merges, *, num_threads=1, consume=false, progress=None))]
fn train_bpe<'py>(
    py: Python<'py>,
    counts: &PyWordCounts,
    num_merges: usize,
    num_threads: usize,
    consume: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<TrainOutput<'py>> {
    let table = if consume {
        std::mem::take(&mut *counts.lock())
    } else {
        counts.lock().clone()
    };
    let mut reporter = Progress::new(progress);
    let result = py.detach(|| {
        train::train(table, num_merges, num_threads, &mut |n| {
            reporter.report(n as u64)
        })
    });
    let result =
        result.map_err(|e| PyRuntimeError::new_err(format!("could not start threads: {e}")))?;
    let vocab = result.vocab.iter().map(|b| PyBytes::new(py, b)).collect();
    reporter.finish(Ok((result.merges, vocab)))
}

/// A byte-level BPE encoder with all its tables built once (see `encode.rs`).
#[pyclass(name = "Encoder", module = "bytepair._core", frozen)]
pub struct PyEncoder {
    inner: Encoder,
}

#[pymethods]
impl PyEncoder {
    #[new]
    #[pyo3(signature = (vocab, merges, special_tokens, pattern))]
    fn py_new(
        py: Python<'_>,
        vocab: Vec<(TokenId, Vec<u8>)>,
        merges: Vec<(Vec<u8>, Vec<u8>)>,
        special_tokens: Vec<(String, TokenId)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let inner = py.detach(|| Encoder::new(vocab, merges, special_tokens, pattern));
        Ok(PyEncoder {
            inner: inner.map_err(encode_err)?,
        })
    }

    /// Ids of `text`; `allowed_special` None means all special tokens are matched.
    #[pyo3(signature = (text, allowed_special=None))]
    fn encode(
        &self,
        py: Python<'_>,
        text: &str,
        allowed_special: Option<Vec<String>>,
    ) -> PyResult<Vec<TokenId>> {
        let set = self.set(allowed_special)?;
        py.detach(|| self.inner.encode(text, &set))
            .map_err(encode_err)
    }

    /// The same ids as `encode`, as a numpy array (uint16 when `small`, else uint32).
    #[pyo3(signature = (text, allowed_special=None, small=false))]
    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: Option<Vec<String>>,
        small: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let set = self.set(allowed_special)?;
        let ids = py
            .detach(|| self.inner.encode(text, &set))
            .map_err(encode_err)?;
        if small {
            let narrow: Vec<u16> = py.detach(|| ids.iter().map(|&i| i as u16).collect());
            Ok(PyArray1::from_vec(py, narrow).into_any())
        } else {
            Ok(PyArray1::from_vec(py, ids).into_any())
        }
    }

    /// Ids of each text, on `num_threads` threads.
    #[pyo3(signature = (texts, allowed_special=None, num_threads=1))]
    fn encode_batch(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
    ) -> PyResult<Vec<Vec<TokenId>>> {
        let set = self.set(allowed_special)?;
        py.detach(|| self.inner.encode_batch(&texts, &set, num_threads))
            .map_err(encode_err)
    }

    /// Encodes the longest prefix of `text` whose ids cannot change with more text; returns the
    /// ids and the prefix length in characters (0 when more text is needed).
    #[pyo3(signature = (text, allowed_special=None))]
    fn encode_prefix(
        &self,
        py: Python<'_>,
        text: &str,
        allowed_special: Option<Vec<String>>,
    ) -> PyResult<(Vec<TokenId>, usize)> {
        let set = self.set(allowed_special)?;
        py.detach(|| {
            let (ids, n_bytes) = self.inner.encode_prefix(text, &set)?;
            Ok((ids, text[..n_bytes].chars().count()))
        })
        .map_err(encode_err)
    }

    /// The bytes of `ids`, concatenated; an unknown id raises KeyError.
    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<TokenId>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py
            .detach(|| self.inner.decode_bytes(&ids))
            .map_err(encode_err)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

impl PyEncoder {
    fn set(&self, allowed: Option<Vec<String>>) -> PyResult<Option<SpecialSet>> {
        self.inner
            .special_set(allowed.as_deref())
            .map_err(encode_err)
    }
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GPT2_PATTERN", GPT2_PATTERN)?;
    m.add("UNICODE_VERSION", crate::UNICODE_VERSION)?;
    m.add_class::<PyWordCounts>()?;
    m.add_class::<PyEncoder>()?;
    m.add_function(wrap_pyfunction!(count_file, m)?)?;
    m.add_function(wrap_pyfunction!(count_texts, m)?)?;
    m.add_function(wrap_pyfunction!(train_bpe, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    Ok(())
}
