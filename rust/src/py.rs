//! Every Python binding of the core: coarse calls (a file, a batch, a whole table), inputs
//! extracted before the GIL is released, no Python object touched while it is released (but
//! for a batch's strings and lists, read and made by each worker with the GIL: `PyTexts`,
//! `PyEncoder::encode_batch`).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{
    PyKeyError, PyKeyboardInterrupt, PyMemoryError, PyOSError, PyOverflowError, PyRuntimeError,
    PyUnicodeDecodeError, PyValueError,
};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyList, PyString};
use rayon::prelude::*;

use crate::count::{self, CountConfig, CountError, TableError, WordCounts};
use crate::counts_file::{self, CountsFileError};
use crate::encode::{BatchIds, BatchTexts, EncodeError, Encoder, RunPiece, SpecialSet};
use crate::pretokenize::{Piece, PretokenizeError, Pretokenizer, Specials, GPT2_PATTERN};
use crate::shards::CutFinder;
use crate::train::{self, TokenId, TrainError};

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
        CountError::OutOfMemory { .. } | CountError::TableFull => {
            PyMemoryError::new_err(e.to_string())
        }
        CountError::Overflow => PyOverflowError::new_err(e.to_string()),
        CountError::Internal(_) | CountError::Threads => PyRuntimeError::new_err(e.to_string()),
    }
}

fn table_err(e: TableError) -> PyErr {
    count_err(e.into())
}

fn encode_err(e: EncodeError) -> PyErr {
    match e {
        EncodeError::UnknownId(id) => PyKeyError::new_err(id),
        EncodeError::OutOfMemory(_) => PyMemoryError::new_err(e.to_string()),
        EncodeError::Pretokenize(e) => pretokenize_err(e),
        EncodeError::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Wraps an optional Python callable as a progress callback that runs under the GIL at most
/// every `PROGRESS_EVERY`; an exception it raises (or a pending Ctrl-C) stops the core and is
/// re-raised afterwards. Called often from the core, it costs a clock read between reports.
struct Progress {
    callback: Option<Py<PyAny>>,
    error: Option<PyErr>,
    last: Instant,
    /// The latest figure not yet passed to the callback.
    pending: Option<u64>,
}

/// How often the core looks at Python (callback, Ctrl-C) in long calls.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

impl Progress {
    fn new(callback: Option<Py<PyAny>>) -> Self {
        Progress {
            callback,
            error: None,
            last: Instant::now(),
            pending: None,
        }
    }

    fn report(&mut self, done: u64) -> bool {
        if self.last.elapsed() < PROGRESS_EVERY {
            self.pending = Some(done);
            return true;
        }
        self.last = Instant::now();
        self.pending = None;
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

    /// The core's result, or the error the callback raised; passes the last figure on.
    fn finish<T>(self, py: Python<'_>, result: PyResult<T>) -> PyResult<T> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let (Some(done), Some(cb), Ok(_)) = (self.pending, &self.callback, &result) {
            cb.call1(py, (done,))?;
        }
        result
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
    fn absorb(&self, py: Python<'_>, found: WordCounts) -> PyResult<()> {
        py.detach(|| self.lock().merge(found)).map_err(table_err)
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
    fn py_new(items: Option<Vec<(Vec<u8>, u64)>>) -> PyResult<Self> {
        let mut counts = WordCounts::default();
        for (word, n) in items.unwrap_or_default() {
            counts.add(&word, n).map_err(table_err)?;
        }
        Ok(Self::wrap(counts))
    }

    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// Total number of words counted.
    fn total(&self) -> u128 {
        let mut total = 0;
        self.lock().for_each(|_, n| total += n as u128);
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
        self.absorb(py, theirs)
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

    /// The table as one compact binary blob (see `count::WordCounts::to_bytes`): the same
    /// table gives the same bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let blob = py.detach(|| self.lock().to_bytes()).map_err(table_err)?;
        Ok(PyBytes::new(py, &blob))
    }

    /// The table written by `to_bytes`; ValueError names what is wrong with a bad blob.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let counts = py.detach(|| WordCounts::from_bytes(data));
        Ok(Self::wrap(counts.map_err(|e| {
            PyValueError::new_err(format!("not a valid WordCounts blob: {e}"))
        })?))
    }

    /// The table as `n_parts` blobs of `to_bytes`'s format, blob i holding the words whose
    /// partition (`counts_file::partition_of`, a fixed hash of the word) is i.
    fn to_partitions<'py>(
        &self,
        py: Python<'py>,
        n_parts: u32,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let n = n_parts.max(1);
        let blobs = py
            .detach(|| {
                self.lock()
                    .to_blobs(n as usize, |w| counts_file::partition_of(w, n) as usize)
            })
            .map_err(table_err)?;
        Ok(blobs.iter().map(|b| PyBytes::new(py, b)).collect())
    }

    /// Adds the counts of a blob of `to_bytes` into this table, in place; returns its number
    /// of words. ValueError names what is wrong with a bad blob.
    fn add_bytes(&self, py: Python<'_>, data: &[u8]) -> PyResult<u64> {
        py.detach(|| self.lock().add_blob(data))
            .map_err(|e| PyValueError::new_err(format!("not a valid WordCounts blob: {e}")))
    }

    /// Pickles as the blob of `to_bytes`, not as millions of Python tuples.
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let rebuild = py.get_type::<PyWordCounts>().getattr("from_bytes")?;
        Ok((rebuild, (self.to_bytes(py)?,)))
    }
}

/// Counts the words of bytes `start..end` of the file at `path` into `counts` (in place, so the
/// peak is one table). Returns (bytes read, invalid sequences replaced, chunks, largest chunk).
#[pyfunction]
#[pyo3(signature = (counts, path, *, start, end, special_tokens, pattern, strict, chunk_size, num_threads, progress=None))]
#[allow(clippy::too_many_arguments)]
fn count_file(
    py: Python<'_>,
    counts: &PyWordCounts,
    path: PathBuf,
    start: u64,
    end: u64,
    special_tokens: Vec<String>,
    pattern: &str,
    strict: bool,
    chunk_size: usize,
    num_threads: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<(u64, u64, u64, u64)> {
    let pretok = Pretokenizer::new(pattern).map_err(pretokenize_err)?;
    let config = CountConfig {
        specials: Specials::new(&special_tokens).map_err(pretokenize_err)?,
        cuts: Some(CutFinder::new(&special_tokens, pretok.clone()).map_err(pretokenize_err)?),
        pretok,
        strict,
        chunk_size,
        num_threads,
    };
    let mut reporter = Progress::new(progress);
    let result =
        py.detach(|| count::count_file(&path, start, end, &config, &mut |n| reporter.report(n)));
    let result = result.map_err(count_err).and_then(|(found, stats)| {
        counts.absorb(py, found)?;
        Ok((
            stats.n_bytes,
            stats.n_replaced,
            stats.n_chunks,
            stats.max_chunk,
        ))
    });
    reporter.finish(py, result)
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
        cuts: None,
    };
    let found = py
        .detach(|| count::count_texts(&texts, &config))
        .map_err(count_err)?;
    counts.absorb(py, found)
}

fn counts_file_err(e: CountsFileError) -> PyErr {
    match e {
        CountsFileError::Io { path, source } => {
            let errno = source.raw_os_error().unwrap_or(0);
            PyOSError::new_err((errno, source.to_string(), path.display().to_string()))
        }
        CountsFileError::Table(t, _) => table_err(t),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// The bytes of a `.bpc` file holding `counts` in `n_parts` sections, with `meta` (see
/// `counts_file::file_bytes`); the caller writes them (atomically).
#[pyfunction]
fn counts_file_bytes<'py>(
    py: Python<'py>,
    counts: &PyWordCounts,
    meta: &[u8],
    n_parts: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| counts_file::file_bytes(meta, &counts.lock(), n_parts))
        .map_err(table_err)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The sum of blobs of `WordCounts.to_bytes` (each sorted) as one such blob, by a merge of
/// the sorted lists (see `counts_file::sum_blobs`); ValueError names a bad blob.
#[pyfunction]
fn sum_blobs<'py>(py: Python<'py>, blobs: Vec<PyBackedBytes>) -> PyResult<Bound<'py, PyBytes>> {
    let slices: Vec<&[u8]> = blobs.iter().map(|b| b.as_ref()).collect();
    let sum = py
        .detach(|| counts_file::sum_blobs(&slices))
        .map_err(|e| PyValueError::new_err(format!("not a valid WordCounts blob: {e}")))?;
    Ok(PyBytes::new(py, &sum))
}

/// The table of blobs whose words are disjoint (a reduce's partitions), joined on up to
/// `num_threads` threads (see `counts_file::table_of_blobs`).
#[pyfunction]
#[pyo3(signature = (blobs, *, num_threads))]
fn table_of_blobs(
    py: Python<'_>,
    blobs: Vec<PyBackedBytes>,
    num_threads: usize,
) -> PyResult<PyWordCounts> {
    let slices: Vec<&[u8]> = blobs.iter().map(|b| b.as_ref()).collect();
    let table = py
        .detach(|| counts_file::table_of_blobs(&slices, num_threads))
        .map_err(|e| PyValueError::new_err(format!("not valid WordCounts blobs: {e}")))?;
    Ok(PyWordCounts::wrap(table))
}

/// (metadata, number of sections) of a `.bpc` file, its header checked.
#[pyfunction]
fn read_counts_header<'py>(py: Python<'py>, path: PathBuf) -> PyResult<(Bound<'py, PyBytes>, u32)> {
    let (_, header) = py
        .detach(|| counts_file::read_header(&path))
        .map_err(counts_file_err)?;
    Ok((PyBytes::new(py, &header.meta), header.n_parts()))
}

/// Adds the counts of a `.bpc` file (its sections `parts`, or all) into `counts`, checking each
/// section's checksum; returns (metadata, number of sections).
#[pyfunction]
#[pyo3(signature = (counts, path, *, parts=None))]
fn read_counts_file<'py>(
    py: Python<'py>,
    counts: &PyWordCounts,
    path: PathBuf,
    parts: Option<Vec<u32>>,
) -> PyResult<(Bound<'py, PyBytes>, u32)> {
    let header = py
        .detach(|| counts_file::read_counts(&path, &mut counts.lock(), parts.as_deref()))
        .map_err(counts_file_err)?;
    Ok((PyBytes::new(py, &header.meta), header.n_parts()))
}

/// For each target byte offset of the file at `path` (ascending), the last safe cut at or
/// before it, after the previous cut, at most `max_back` bytes back; None where there is none
/// (see `shards::CutFinder`).
#[pyfunction]
#[pyo3(signature = (path, targets, *, special_tokens, pattern, max_back=crate::shards::MAX_BACK))]
fn find_cuts(
    py: Python<'_>,
    path: PathBuf,
    targets: Vec<u64>,
    special_tokens: Vec<String>,
    pattern: &str,
    max_back: u64,
) -> PyResult<Vec<Option<u64>>> {
    let pretok = Pretokenizer::new(pattern).map_err(pretokenize_err)?;
    let finder = CutFinder::new(&special_tokens, pretok).map_err(pretokenize_err)?;
    py.detach(|| finder.find_cuts(&path, &targets, max_back))
        .map_err(|e| count_err(CountError::Io { path, source: e }))
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

/// Which pretokenizer runs `pattern`: "gpt2" (the hand-written scanner) or "regex".
#[pyfunction]
fn pretokenizer_kind(pattern: &str) -> PyResult<&'static str> {
    Ok(match Pretokenizer::new(pattern).map_err(pretokenize_err)? {
        Pretokenizer::Gpt2 => "gpt2",
        Pretokenizer::Cl100k => "cl100k",
        Pretokenizer::O200k => "o200k",
        Pretokenizer::Regex(_) => "regex",
    })
}

/// Merges as id pairs, and the bytes of every id.
type TrainOutput<'py> = (Vec<(TokenId, TokenId)>, Vec<Bound<'py, PyBytes>>);

/// Runs `num_merges` merges on `counts`; returns (merges as id pairs, bytes of every id).
/// With `consume`, the table is emptied (its memory is reused) instead of copied. `start`:
/// merges of an earlier run to continue from (counted in `num_merges`).
#[pyfunction]
#[pyo3(signature = (counts, num_merges, *, num_threads=1, consume=false, progress=None, start=Vec::new()))]
fn train_bpe<'py>(
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
    let result = result.map_err(|e| match e {
        TrainError::Threads(_) => PyRuntimeError::new_err(e.to_string()),
        TrainError::BadStartMerge { .. } => PyValueError::new_err(e.to_string()),
        TrainError::CountsTooLarge(..) => PyOverflowError::new_err(e.to_string()),
        TrainError::OutOfMemory => PyMemoryError::new_err(e.to_string()),
        TrainError::TooManyWords => PyValueError::new_err(e.to_string()),
    });
    let result = result.map(|r| {
        let vocab = r.vocab.iter().map(|b| PyBytes::new(py, b)).collect();
        (r.merges, vocab)
    });
    reporter.finish(py, result)
}

/// A byte-level BPE encoder with all its tables built once (see `encode.rs`).
#[pyclass(name = "Encoder", module = "bytepair._core", frozen)]
pub struct PyEncoder {
    inner: Encoder,
    /// A Python int for every id, made on first use: a list of ids then costs a reference
    /// count per id instead of an allocation (building ints was ~35% of `encode`'s time).
    ints: OnceLock<Vec<Py<PyAny>>>,
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
            ints: OnceLock::new(),
        })
    }

    /// Ids of `text`; `allowed_special` None means all special tokens are matched.
    #[pyo3(signature = (text, allowed_special=None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let set = self.set(allowed_special)?;
        let ids = self.encode_vec(py, text, &set)?;
        self.to_list(py, &ids)
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
        if !small {
            let ids = self.encode_vec(py, text, &set)?;
            return Ok(array(py, ids).into_any());
        }
        if text.len() <= crate::encode::CHECK_EVERY {
            // a document: its u32 ids narrowed straight into the array (~5% of a 13 KB
            // document's time went to a uint16 vector and its copy into numpy)
            let ids = self.encode_vec(py, text, &set)?;
            if let Some(id) = first_wide(&ids) {
                return Err(too_wide(id));
            }
            // SAFETY: every element of the new (uninitialized) array is written before it is
            // returned, and nothing else holds it meanwhile
            unsafe {
                let narrow = PyArray1::<u16>::new(py, [ids.len()], false);
                let dst = narrow.as_slice_mut()?;
                for (d, &id) in dst.iter_mut().zip(&ids) {
                    *d = id as u16;
                }
                return Ok(narrow.into_any());
            }
        }
        // uint16 straight from each piece's ids, while they are in the CPU's cache: a u32 copy
        // of all ids, then a pass to narrow it, cost ~15% of a long text's time
        let mut narrow: Vec<u16> = Vec::new();
        narrow
            .try_reserve(text.len() / 3 + 16)
            .map_err(|_| encode_err(EncodeError::OutOfMemory(text.len())))?;
        let mut too_large = None;
        interruptible(py, |check| {
            self.inner.encode_each(text, &set, check, &mut |ids| {
                too_large = too_large.or(first_wide(ids));
                narrow
                    .try_reserve(ids.len())
                    .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
                narrow.extend(ids.iter().map(|&id| id as u16));
                Ok(())
            })
        })?;
        if let Some(id) = too_large {
            return Err(too_wide(id));
        }
        Ok(array(py, narrow).into_any())
    }

    /// Ids of each text, on `num_threads` threads. The texts are borrowed, not copied (but see
    /// `PyTexts`). Each run's lists are made by the worker that encoded it, with the GIL, while
    /// the others encode on; those of texts cut into pieces, after the batch.
    #[pyo3(signature = (texts, allowed_special=None, num_threads=1))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Py<PyString>>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let finish = |ids: &[TokenId], pieces: &[RunPiece]| {
            Python::attach(|py| {
                let mut at = 0;
                pieces
                    .iter()
                    .map(|&(_, n, whole)| {
                        let part = &ids[at..at + n];
                        at += n;
                        match whole {
                            true => self.to_list(py, part).map(|l| Some(l.unbind())),
                            false => Ok(None),
                        }
                    })
                    .collect::<PyResult<Vec<_>>>()
            })
        };
        let mut all = self.batch(py, texts, allowed_special, num_threads, &finish)?;
        let mut made: Vec<Option<Py<PyList>>> = (0..all.n_texts).map(|_| None).collect();
        let mut pieces = all.pieces.iter();
        for lists in std::mem::take(&mut all.finished) {
            // a run's lists first: `zip` takes from its left side first, so the pieces of the
            // next run stay
            for (list, &(i, _)) in lists?.into_iter().zip(pieces.by_ref()) {
                // None for each piece of a text that was cut: its list is made below
                if list.is_some() {
                    made[i] = list;
                }
            }
        }
        let lists = made
            .into_iter()
            .zip(all.texts())
            .map(|(list, ids)| match list {
                Some(list) => Ok(list.into_bound(py)),
                None => self.to_list(py, &ids),
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, lists)
    }

    /// The ids of every text in one flat array (uint16 when `small`, else uint32) and the
    /// offsets where each text's ids start (uint64, one more than the texts: the end).
    #[pyo3(signature = (texts, allowed_special=None, num_threads=1, small=false))]
    fn encode_batch_to_numpy<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Py<PyString>>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
        small: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u64>>)> {
        let all = self.batch(py, texts, allowed_special, num_threads, &|_, _| ())?;
        flatten(py, &self.inner, all, small, num_threads)
    }

    /// Encodes the longest prefix of `text` whose ids cannot change with more text (all of it if
    /// `last`); returns the ids and the prefix length in characters (0 when more text is needed).
    #[pyo3(signature = (text, allowed_special=None, last=false))]
    fn encode_prefix<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: Option<Vec<String>>,
        last: bool,
    ) -> PyResult<(Bound<'py, PyList>, usize)> {
        let set = self.set(allowed_special)?;
        let (ids, n_chars) = py
            .detach(|| {
                let (ids, n_bytes) = self.inner.encode_prefix(text, &set, last)?;
                Ok((ids, text[..n_bytes].chars().count()))
            })
            .map_err(encode_err)?;
        // the cached ints: a new int per id was a sixth of a stream's time
        Ok((self.to_list(py, &ids)?, n_chars))
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

/// Runs `work` with the GIL released, giving it a check that turns false once Ctrl-C was
/// pressed (looked at most every `PROGRESS_EVERY`); the KeyboardInterrupt is then raised.
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&mut dyn FnMut() -> bool) -> Result<T, EncodeError> + Send,
) -> PyResult<T> {
    let mut watch = Progress::new(None);
    let result = py
        .detach(|| work(&mut || watch.report(0)))
        .map_err(encode_err);
    watch.finish(py, result)
}

/// `v` as a numpy array: a copy into numpy's own memory when short, else `v`'s memory
/// itself. Why: an array over a Rust vector keeps a holder object that Python's cyclic garbage
/// collector tracks, and a per-document loop keeping its arrays then ran a collection every
/// ~700 calls (6% of its time, perf); copying a long one would cost more than that.
fn array<T: numpy::Element>(py: Python<'_>, v: Vec<T>) -> Bound<'_, PyArray1<T>> {
    match v.len() {
        0..=65536 => PyArray1::from_slice(py, &v),
        _ => PyArray1::from_vec(py, v),
    }
}

/// The first id above uint16's range, if any: an OR of all ids first, which compiles to SIMD,
/// rather than a search that stops at each id.
fn first_wide(ids: &[TokenId]) -> Option<TokenId> {
    if ids.iter().fold(0, |all, &id| all | id) <= 0xffff {
        return None;
    }
    ids.iter().copied().find(|&id| id > 0xffff)
}

fn too_wide(id: TokenId) -> PyErr {
    PyValueError::new_err(format!("id {id} does not fit in uint16"))
}

impl PyEncoder {
    /// Encodes a batch with the GIL released, stopping on Ctrl-C between groups of texts;
    /// `finish` as in `Encoder::encode_batch_with`.
    fn batch<T: Send>(
        &self,
        py: Python<'_>,
        texts: Vec<Py<PyString>>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
        finish: &(dyn Fn(&[TokenId], &[RunPiece]) -> T + Sync),
    ) -> PyResult<BatchIds<T>> {
        let set = self.set(allowed_special)?;
        let texts = PyTexts::new(py, texts)?;
        let result = interruptible(py, |check| {
            self.inner
                .encode_batch_with(&texts, &set, num_threads, check, finish)
        });
        match texts.error.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => result,
        }
    }

    /// `ids` as a Python list of ints, from the cached ints.
    fn to_list<'py>(&self, py: Python<'py>, ids: &[TokenId]) -> PyResult<Bound<'py, PyList>> {
        let ints = self.ints.get_or_init(|| {
            (0..self.inner.n_ids() as u64)
                .map(|i| {
                    i.into_pyobject(py)
                        .map_or_else(|e| match e {}, |o| o.unbind().into_any())
                })
                .collect()
        });
        let n = isize::try_from(ids.len()).map_err(|_| PyMemoryError::new_err("too many ids"))?;
        // SAFETY: PyList_New gives a new list of `n` empty slots (or NULL with an exception
        // set); each slot is filled exactly once with a new reference, which SetItem steals.
        unsafe {
            let list = ffi::PyList_New(n);
            let list = Bound::from_owned_ptr_or_err(py, list)?.cast_into_unchecked::<PyList>();
            for (i, &id) in ids.iter().enumerate() {
                let item = match ints.get(id as usize) {
                    Some(int) => int.clone_ref(py).into_ptr(),
                    None => id.into_pyobject(py)?.into_ptr(),
                };
                ffi::PyList_SetItem(list.as_ptr(), i as isize, item);
            }
            Ok(list)
        }
    }

    /// Encodes with the GIL released, stopping on Ctrl-C (checked every `CHECK_EVERY` bytes).
    fn encode_vec(
        &self,
        py: Python<'_>,
        text: &str,
        set: &Option<SpecialSet>,
    ) -> PyResult<Vec<TokenId>> {
        interruptible(py, |check| self.inner.encode_checked(text, set, check))
    }

    fn set(&self, allowed: Option<Vec<String>>) -> PyResult<Option<SpecialSet>> {
        self.inner
            .special_set(allowed.as_deref())
            .map_err(encode_err)
    }
}

/// The strings of a batch, each one's UTF-8 got by the worker thread that encodes it, under
/// the GIL (`BatchTexts`): CPython makes (and keeps in the string) a UTF-8 copy of a non-ASCII
/// string, and made up front for the whole batch on the calling thread, those copies left the
/// other cores idle. Holds a reference to each string: what `get` returns lives as long.
struct PyTexts {
    strings: Vec<Py<PyString>>,
    /// Each string's length in characters.
    sizes: Vec<usize>,
    /// Why a string had no UTF-8 (a lone surrogate: UnicodeEncodeError), for the caller.
    error: Mutex<Option<PyErr>>,
}

impl PyTexts {
    fn new(py: Python<'_>, strings: Vec<Py<PyString>>) -> PyResult<Self> {
        let sizes = strings
            .iter()
            .map(|s| s.bind(py).len())
            .collect::<PyResult<_>>()?;
        Ok(PyTexts {
            strings,
            sizes,
            error: Mutex::new(None),
        })
    }
}

impl BatchTexts for PyTexts {
    fn count(&self) -> usize {
        self.strings.len()
    }

    fn size(&self, i: usize) -> usize {
        self.sizes[i]
    }

    fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError> {
        Python::attach(|py| {
            self.strings[range]
                .iter()
                .map(|s| {
                    let mut n: ffi::Py_ssize_t = 0;
                    // SAFETY: `s` is a str (its type checked when extracted) and alive while
                    // `self` holds it; the GIL is held.
                    let p = unsafe { ffi::PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut n) };
                    if p.is_null() {
                        let e = PyErr::fetch(py);
                        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        return Err(EncodeError::Unreadable);
                    }
                    // SAFETY: CPython's UTF-8 of a str: `n` valid UTF-8 bytes at `p`, kept in
                    // the string unchanged until it is freed, so alive as long as `self`.
                    Ok(unsafe {
                        std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                            p.cast(),
                            n as usize,
                        ))
                    })
                })
                .collect()
        })
    }
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GPT2_PATTERN", GPT2_PATTERN)?;
    m.add("CL100K_PATTERN", crate::pretokenize::gpt4::CL100K_PATTERN)?;
    m.add("O200K_PATTERN", crate::pretokenize::o200k::O200K_PATTERN)?;
    m.add("UNICODE_VERSION", crate::UNICODE_VERSION)?;
    // The package's one version: Cargo.toml's, which maturin also writes into the metadata.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyWordCounts>()?;
    m.add_class::<PyEncoder>()?;
    m.add_function(wrap_pyfunction!(count_file, m)?)?;
    m.add_function(wrap_pyfunction!(count_texts, m)?)?;
    m.add_function(wrap_pyfunction!(train_bpe, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenizer_kind, m)?)?;
    m.add_function(wrap_pyfunction!(encode_block, m)?)?;
    m.add_function(wrap_pyfunction!(counts_file_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(sum_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(table_of_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(read_counts_header, m)?)?;
    m.add_function(wrap_pyfunction!(read_counts_file, m)?)?;
    m.add_function(wrap_pyfunction!(find_cuts, m)?)?;
    Ok(())
}

/// Corpus encoding of one block of bytes that continues a stream from a safe cut: cuts it into
/// pieces of about `piece_bytes` where `Encoder::pieces` allows (so the ids never depend on
/// where pieces fall, nor on the block size), encodes them on `num_threads` threads, and returns
/// (the ids of every piece in one array, uint16 when `small`; the offsets where each piece's
/// ids start, and the end; the bytes consumed). Unless `last`, the bytes after the last safe cut
/// (an unfinished character included) are not consumed: they go in front of the next block.
/// Invalid UTF-8 raises UnicodeDecodeError (the caller decides: fail, or replace and retry).
#[pyfunction]
#[pyo3(signature = (encoder, data, *, last, piece_bytes, num_threads, small))]
#[allow(clippy::too_many_arguments)]
fn encode_block<'py>(
    py: Python<'py>,
    encoder: &PyEncoder,
    data: &[u8],
    last: bool,
    piece_bytes: usize,
    num_threads: usize,
    small: bool,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u64>>, usize)> {
    let text = match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() && !last => {
            std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(e) => return Err(PyUnicodeDecodeError::new_err_from_utf8(py, data, e)),
    };
    let set = encoder.set(None)?;
    let pieces = py.detach(|| encoder.inner.pieces(text, &set, piece_bytes, last));
    let consumed = pieces.iter().map(|p| p.len()).sum();
    let all = interruptible(py, |check| {
        encoder
            .inner
            .encode_batch(pieces.as_slice(), &set, num_threads, check)
    })?;
    let (ids, offsets) = flatten(py, &encoder.inner, all, small, num_threads)?;
    Ok((ids, offsets, consumed))
}

/// The ids of every text in one numpy array (uint16 when `small`: an error if one does not
/// fit) and the offsets where each text's ids start, and the end. Copied (and narrowed) on
/// `num_threads` threads, each run into its own part of the array: on one thread, this copy
/// and the narrowing after it were a sixth of a 2-thread batch's time, the cores half idle.
#[allow(clippy::type_complexity)]
fn flatten<'py>(
    py: Python<'py>,
    encoder: &Encoder,
    all: BatchIds,
    small: bool,
    num_threads: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u64>>)> {
    let mut offsets = Vec::with_capacity(all.n_texts + 1);
    offsets.push(0u64);
    let mut total = 0usize;
    for n in all.text_lens() {
        total += n;
        offsets.push(total as u64);
    }
    let offsets = array(py, offsets);
    let runs = &all.runs;
    if !small {
        let flat = py
            .detach(|| fill(encoder, runs, total, num_threads, |id| id))
            .map_err(encode_err)?;
        return Ok((array(py, flat.0).into_any(), offsets));
    }
    let (flat, all_bits) = py
        .detach(|| fill(encoder, runs, total, num_threads, |id| id as u16))
        .map_err(encode_err)?;
    if all_bits > 0xffff {
        let wide = runs
            .iter()
            .find_map(|ids| first_wide(ids))
            .unwrap_or(all_bits);
        return Err(too_wide(wide));
    }
    Ok((array(py, flat).into_any(), offsets))
}

/// `runs` concatenated as `narrow` makes each id, on `num_threads` threads (the encoder's
/// pool); and the OR of every id (so that the caller sees whether one did not fit).
fn fill<T: Send>(
    encoder: &Encoder,
    runs: &[Vec<TokenId>],
    total: usize,
    num_threads: usize,
    narrow: impl Fn(TokenId) -> T + Sync,
) -> Result<(Vec<T>, TokenId), EncodeError> {
    let mut flat: Vec<T> = Vec::new();
    flat.try_reserve_exact(total)
        .map_err(|_| EncodeError::OutOfMemory(total))?;
    let mut parts = Vec::with_capacity(runs.len());
    let mut rest = &mut flat.spare_capacity_mut()[..total];
    for ids in runs {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(ids.len());
        parts.push(part);
        rest = tail;
    }
    let copy = |(part, ids): (&mut [std::mem::MaybeUninit<T>], &Vec<TokenId>)| {
        let mut bits = 0;
        for (slot, &id) in part.iter_mut().zip(ids) {
            slot.write(narrow(id));
            bits |= id;
        }
        bits
    };
    let bits = match runs.len() {
        0 | 1 => parts.into_iter().zip(runs).map(copy).fold(0, |a, b| a | b),
        _ => encoder.pool(num_threads)?.install(|| {
            parts
                .into_par_iter()
                .zip(runs.par_iter())
                .map(copy)
                .reduce(|| 0, |a, b| a | b)
        }),
    };
    // SAFETY: the parts cover the first `total` slots exactly (their lengths are the runs' id
    // counts, which sum to `total`), and each was written in full above.
    unsafe { flat.set_len(total) };
    Ok((flat, bits))
}
