//! Bindings of counting: the `WordCounts` table (with its blobs, for pickling and shipping) and
//! the counts of a file's bytes or of texts added into one. Counting itself is `count.rs`'s;
//! the blobs' format `counts_file`'s.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::errors::{count_err, pretokenize_err, table_err};
use super::ffi::utf8_of;
use super::pretokenize::pretokenizer_of;
use super::progress::Progress;
use crate::count::{self, Compression, CountConfig, CountError, WordCounts};
use crate::counts_file;
use crate::cuts::CutFinder;
use crate::pretokenize::Specials;
use numpy::PyReadonlyArray1;

/// Word counts: distinct pretokens (bytes) and their u64 counts. The result of counting one
/// shard; tables of several shards add up with `merge`, and pickle for shipping elsewhere.
#[pyclass(name = "WordCounts", module = "bytepair._core")]
pub struct PyWordCounts {
    inner: Mutex<WordCounts>,
}

impl PyWordCounts {
    /// A Python table holding `counts`.
    pub(super) fn wrap(counts: WordCounts) -> Self {
        PyWordCounts {
            inner: Mutex::new(counts),
        }
    }

    /// Adds `found` into this table, holding its lock with the GIL released (the lock is
    /// only ever held for a moment or without the GIL, so no thread waits on both).
    pub(super) fn absorb(&self, py: Python<'_>, found: WordCounts) -> PyResult<()> {
        py.detach(|| self.lock().merge(found)).map_err(table_err)
    }

    /// The table, locked (a lock poisoned by a panic is taken over).
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, WordCounts> {
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
/// peak is one table). `compression`: None, "gz" or "zst" (then the range is the whole file);
/// `json_field`: the file is JSON lines, each record's field a document. Returns (text bytes
/// read, invalid sequences replaced, chunks, largest chunk).
#[pyfunction]
#[pyo3(signature = (counts, path, *, start, end, special_tokens, pattern, strict, chunk_size, num_threads, compression=None, json_field=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn count_file(
    py: Python<'_>,
    counts: &PyWordCounts,
    path: PathBuf,
    start: u64,
    end: u64,
    special_tokens: Vec<String>,
    pattern: &Bound<'_, PyAny>,
    strict: bool,
    chunk_size: usize,
    num_threads: usize,
    compression: Option<&str>,
    json_field: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(u64, u64, u64, u64)> {
    let compression = Compression::parse(compression)
        .ok_or_else(|| PyValueError::new_err("compression must be None, 'gz' or 'zst'"))?;
    let pretok = pretokenizer_of(pattern)?;
    let config = CountConfig {
        specials: Specials::new(&special_tokens).map_err(pretokenize_err)?,
        cuts: Some(CutFinder::new(&special_tokens, pretok.clone()).map_err(pretokenize_err)?),
        pretok,
        strict,
        chunk_size,
        num_threads,
        json_field,
    };
    let mut reporter = Progress::new(progress);
    // counted into the table itself, taken out of its lock while the GIL is released (the
    // progress callback takes the GIL: holding the lock meanwhile could wait on a thread that
    // holds the GIL and waits on the lock)
    let mut table = py.detach(|| std::mem::take(&mut *counts.lock()));
    let result = py.detach(|| {
        let range = (start, end);
        let report = &mut |n| reporter.report(n);
        count::count_file(&path, range, compression, &config, &mut table, report)
    });
    let result = counts.absorb(py, table).and(result.map_err(count_err));
    let result = result.map(|stats| {
        (
            stats.n_bytes,
            stats.n_replaced,
            stats.n_chunks,
            stats.max_chunk,
        )
    });
    reporter.finish(py, result)
}

/// Counts the words of independent texts (no pretoken spans two texts) into `counts`, read
/// where CPython keeps each string's UTF-8 (not copied into Rust strings first). The texts must
/// be UTF-8-encodable (the caller replaced lone surrogates).
#[pyfunction]
#[pyo3(signature = (counts, texts, *, special_tokens, pattern, num_threads))]
pub(super) fn count_texts(
    py: Python<'_>,
    counts: &PyWordCounts,
    texts: Vec<Py<PyString>>,
    special_tokens: Vec<String>,
    pattern: &Bound<'_, PyAny>,
    num_threads: usize,
) -> PyResult<()> {
    let config = in_memory(&special_tokens, pattern, num_threads)?;
    let views = texts
        .iter()
        .map(|t| utf8_of(py, t))
        .collect::<PyResult<Vec<&str>>>()?;
    let (table, counted) = py.detach(|| {
        let mut table = std::mem::take(&mut *counts.lock());
        let counted = count::count_texts(&views, &config, &mut table);
        (table, counted)
    });
    counts.absorb(py, table)?;
    counted.map_err(count_err)
}

/// Counts the rows of Arrow string columns into `counts`, each row one document: row `i` of a
/// column is `data[offsets[i]..offsets[i + 1]]` (the columns' own buffers, not a string per
/// row). Errors name the row, counted from `first_row` on through the columns.
#[pyfunction]
#[pyo3(signature = (counts, columns, *, first_row, special_tokens, pattern, num_threads))]
pub(super) fn count_rows(
    py: Python<'_>,
    counts: &PyWordCounts,
    columns: Vec<(PyReadonlyArray1<'_, i64>, PyReadonlyArray1<'_, u8>)>,
    first_row: u64,
    special_tokens: Vec<String>,
    pattern: &Bound<'_, PyAny>,
    num_threads: usize,
) -> PyResult<()> {
    let config = in_memory(&special_tokens, pattern, num_threads)?;
    let mut slices = Vec::with_capacity(columns.len());
    for (offsets, data) in &columns {
        slices.push((offsets.as_slice()?, data.as_slice()?));
    }
    let (table, counted) = py.detach(|| {
        let mut table = std::mem::take(&mut *counts.lock());
        let counted = count::count_rows(&slices, &config, &mut table);
        (table, counted)
    });
    counts.absorb(py, table)?;
    counted.map_err(|e| match e {
        CountError::Row { row, problem } => count_err(CountError::Row {
            row: first_row + row,
            problem,
        }),
        e => count_err(e),
    })
}

/// How texts already in memory (strings, Arrow rows) are counted: valid UTF-8, no reading.
fn in_memory(
    special_tokens: &[String],
    pattern: &Bound<'_, PyAny>,
    num_threads: usize,
) -> PyResult<CountConfig> {
    Ok(CountConfig {
        specials: Specials::new(special_tokens).map_err(pretokenize_err)?,
        pretok: pretokenizer_of(pattern)?,
        strict: true,
        chunk_size: 0,
        num_threads,
        cuts: None,
        json_field: None,
    })
}
