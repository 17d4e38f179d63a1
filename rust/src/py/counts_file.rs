//! Bindings of the counts formats: `.bpc` files (their bytes, header and sections) and sums
//! and joins of `WordCounts` blobs. The formats are `counts_file`'s; writing files atomically is
//! the Python caller's.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use super::count::PyWordCounts;
use super::errors::{counts_file_err, table_err};
use crate::counts_file;

/// The bytes of a `.bpc` file holding `counts` in `n_parts` sections, with `meta` (see
/// `counts_file::file_bytes`); the caller writes them (atomically).
#[pyfunction]
pub(super) fn counts_file_bytes<'py>(
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
pub(super) fn sum_blobs<'py>(
    py: Python<'py>,
    blobs: Vec<PyBackedBytes>,
) -> PyResult<Bound<'py, PyBytes>> {
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
pub(super) fn table_of_blobs(
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
pub(super) fn read_counts_header<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<(Bound<'py, PyBytes>, u32)> {
    let (_, header) = py
        .detach(|| counts_file::read_header(&path))
        .map_err(counts_file_err)?;
    Ok((PyBytes::new(py, &header.meta), header.n_parts()))
}

/// Adds the counts of a `.bpc` file (its sections `parts`, or all) into `counts`, checking each
/// section's checksum; returns (metadata, number of sections).
#[pyfunction]
#[pyo3(signature = (counts, path, *, parts=None))]
pub(super) fn read_counts_file<'py>(
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
