//! Long calls and Python: a progress callback run under the GIL at most every `PROGRESS_EVERY`
//! (`Progress`), Ctrl-C seen between pieces of work (`interruptible`), and the exception either
//! raised once the core has stopped. What the core reports, and when it stops, is its own.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use super::errors::encode_err;
use crate::encode::EncodeError;

/// Wraps an optional Python callable as a progress callback that runs under the GIL at most
/// every `PROGRESS_EVERY`; an exception it raises (or a pending Ctrl-C) stops the core and is
/// re-raised afterwards. Called often from the core, it costs a clock read between reports.
pub(super) struct Progress {
    callback: Option<Py<PyAny>>,
    error: Option<PyErr>,
    last: Instant,
    /// The latest figure not yet passed to the callback.
    pending: Option<u64>,
}

/// How often the core looks at Python (callback, Ctrl-C) in long calls.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

impl Progress {
    /// A reporter for `callback` (None: it only looks for Ctrl-C).
    pub(super) fn new(callback: Option<Py<PyAny>>) -> Self {
        Progress {
            callback,
            error: None,
            last: Instant::now(),
            pending: None,
        }
    }

    /// Passes `done` on (at most every `PROGRESS_EVERY`); false once the core should stop.
    pub(super) fn report(&mut self, done: u64) -> bool {
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
    pub(super) fn finish<T>(self, py: Python<'_>, result: PyResult<T>) -> PyResult<T> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let (Some(done), Some(cb), Ok(_)) = (self.pending, &self.callback, &result) {
            cb.call1(py, (done,))?;
        }
        result
    }
}

/// Runs `work` with the GIL released, giving it a check that turns false once Ctrl-C was
/// pressed (looked at most every `PROGRESS_EVERY`); the KeyboardInterrupt is then raised.
pub(super) fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&mut dyn FnMut() -> bool) -> Result<T, EncodeError> + Send,
) -> PyResult<T> {
    let mut watch = Progress::new(None);
    let result = py
        .detach(|| work(&mut || watch.report(0)))
        .map_err(encode_err);
    watch.finish(py, result)
}
