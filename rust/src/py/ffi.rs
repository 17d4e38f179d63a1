//! The bindings' only unsafe code, each call behind a small safe helper that says why it is
//! sound: a list filled in place, a string's UTF-8 borrowed from CPython, a numpy array written
//! before it is seen. Everything else in `py/` goes through PyO3's safe API.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::types::TokenId;

/// A new list of `item(x)` for each `x` of `items`, made at its length and filled slot by slot
/// (MemoryError "too many ids" past `isize::MAX` items).
pub(super) fn list_of<'py, T>(
    py: Python<'py>,
    items: &[T],
    mut item: impl FnMut(&T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let n = isize::try_from(items.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("too many ids"))?;
    // SAFETY: PyList_New gives a new list of `n` empty slots (or NULL with an exception set);
    // each slot is filled exactly once with a new reference, which SetItem steals. A slot left
    // empty by an error is never seen: the list is then dropped (a list frees its empty slots).
    unsafe {
        let list = ffi::PyList_New(n);
        let list = Bound::from_owned_ptr_or_err(py, list)?.cast_into_unchecked::<PyList>();
        for (i, x) in items.iter().enumerate() {
            ffi::PyList_SetItem(list.as_ptr(), i as isize, item(x)?.into_ptr());
        }
        Ok(list)
    }
}

/// The UTF-8 of `s`, borrowed from the string itself: CPython makes it once (for a non-ASCII
/// string) and keeps it in the string, unchanged until the string is freed, so it lives as long
/// as the borrow of `s`, which holds a reference to the string. An error (a lone surrogate:
/// UnicodeEncodeError) is fetched.
pub(super) fn utf8_of<'s>(py: Python<'_>, s: &'s Py<PyString>) -> PyResult<&'s str> {
    let mut n: ffi::Py_ssize_t = 0;
    // SAFETY: `s` is a str (its type checked when extracted) and alive while borrowed; the GIL
    // is held (`py`).
    let p = unsafe { ffi::PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut n) };
    if p.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: CPython's UTF-8 of a str: `n` valid UTF-8 bytes at `p`, kept in the string
    // unchanged until it is freed, so alive as long as the borrow of `s`.
    Ok(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(p.cast(), n as usize)) })
}

/// `ids` narrowed to u16 straight into a new numpy array (the caller checked that they fit).
pub(super) fn u16_array<'py>(py: Python<'py>, ids: &[TokenId]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: every element of the new (uninitialized) array is written before it is
    // returned, and nothing else holds it meanwhile
    unsafe {
        let narrow = PyArray1::<u16>::new(py, [ids.len()], false);
        let dst = narrow.as_slice_mut()?;
        for (d, &id) in dst.iter_mut().zip(ids) {
            *d = id as u16;
        }
        Ok(narrow.into_any())
    }
}
