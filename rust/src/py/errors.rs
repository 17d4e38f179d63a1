//! The core's errors as Python exceptions, each kind to the exception it calls for (bad
//! argument: ValueError, unknown id: KeyError, I/O: OSError, no memory: MemoryError, Ctrl-C:
//! KeyboardInterrupt). The messages are the core's; nothing here decides when an error occurs.

use pyo3::exceptions::{
    PyKeyError, PyKeyboardInterrupt, PyMemoryError, PyOSError, PyOverflowError, PyRuntimeError,
    PyValueError,
};
use pyo3::prelude::*;

use crate::count::{CountError, TableError};
use crate::counts_file::CountsFileError;
use crate::encode::EncodeError;
use crate::pretokenize::PretokenizeError;
use crate::train::TrainError;
use crate::types::TokenId;

/// A bad pattern or special token, or a pattern that failed: ValueError.
pub(super) fn pretokenize_err(e: PretokenizeError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A `CountError` as the exception its kind calls for (I/O: OSError with errno and path).
pub(super) fn count_err(e: CountError) -> PyErr {
    match e {
        CountError::Io { path, source } => {
            let errno = source.raw_os_error().unwrap_or(0);
            PyOSError::new_err((errno, source.to_string(), path.display().to_string()))
        }
        CountError::InvalidUtf8 { .. }
        | CountError::Record { .. }
        | CountError::Corrupt { .. }
        | CountError::Row { .. } => PyValueError::new_err(e.to_string()),
        CountError::Pretokenize(e) => pretokenize_err(e),
        CountError::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        CountError::OutOfMemory { .. } | CountError::TableFull => {
            PyMemoryError::new_err(e.to_string())
        }
        CountError::Overflow => PyOverflowError::new_err(e.to_string()),
        CountError::Internal(_) | CountError::Threads => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A table that cannot grow (MemoryError) or a count that would wrap (OverflowError).
pub(super) fn table_err(e: TableError) -> PyErr {
    count_err(e.into())
}

/// An `EncodeError` as the exception its kind calls for (an unknown id: KeyError).
pub(super) fn encode_err(e: EncodeError) -> PyErr {
    match e {
        EncodeError::UnknownId(id) => PyKeyError::new_err(id),
        EncodeError::OutOfMemory(_) => PyMemoryError::new_err(e.to_string()),
        EncodeError::Pretokenize(e) => pretokenize_err(e),
        EncodeError::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A `.bpc` file that cannot be read (OSError) or is damaged (ValueError).
pub(super) fn counts_file_err(e: CountsFileError) -> PyErr {
    match e {
        CountsFileError::Io { path, source } => {
            let errno = source.raw_os_error().unwrap_or(0);
            PyOSError::new_err((errno, source.to_string(), path.display().to_string()))
        }
        CountsFileError::Table(t, _) => table_err(t),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A `TrainError` as the exception its kind calls for.
pub(super) fn train_err(e: TrainError) -> PyErr {
    match e {
        TrainError::Threads(_) => PyRuntimeError::new_err(e.to_string()),
        TrainError::BadStartMerge { .. } => PyValueError::new_err(e.to_string()),
        TrainError::CountsTooLarge(..) => PyOverflowError::new_err(e.to_string()),
        TrainError::OutOfMemory => PyMemoryError::new_err(e.to_string()),
        TrainError::TooManyWords => PyValueError::new_err(e.to_string()),
    }
}

/// An id that does not fit the uint16 array asked for: ValueError.
pub(super) fn too_wide(id: TokenId) -> PyErr {
    PyValueError::new_err(format!("id {id} does not fit in uint16"))
}
