//! The one worker pattern of counting's threads: start them (`spawn_workers`), run each guarded
//! (a panic becomes an error, an error stops the others: `guarded`), and join them, keeping the
//! first error (`join_workers`). What the workers do is the readers' (`stream.rs`, `regions.rs`).

use std::sync::atomic::{AtomicBool, Ordering};

use super::CountError;
use crate::pretokenize::PretokenizeError;

/// Starts up to `n` workers, each running what `make` returns. Workers that cannot start (no
/// memory for a stack) are done without; none is an error.
pub(super) fn spawn_workers<'scope, T: Send + 'scope, F: FnOnce() -> T + Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    n: usize,
    mut make: impl FnMut() -> F,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, T>>, CountError> {
    let workers: Vec<_> = (0..n)
        .map_while(|_| std::thread::Builder::new().spawn_scoped(scope, make()).ok())
        .collect();
    if workers.is_empty() {
        return Err(CountError::Threads);
    }
    Ok(workers)
}

/// The workers' results, or the first error: `first` (this thread's), else a worker's, a panic
/// as an internal error. A worker stopped mid-chunk by another's error (`Stopped`) has none.
pub(super) fn join_workers<T>(
    workers: Vec<std::thread::ScopedJoinHandle<'_, Result<T, CountError>>>,
    mut first: Option<CountError>,
) -> Result<Vec<T>, CountError> {
    let mut results = Vec::with_capacity(workers.len());
    for w in workers {
        match w.join() {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(CountError::Pretokenize(PretokenizeError::Stopped))) => {}
            Ok(Err(e)) => first = first.or(Some(e)),
            Err(panic) => first = first.or(Some(internal(panic))),
        }
    }
    first.map_or(Ok(results), Err)
}

/// Runs a worker's `work`, a panic as an internal error; an error raises `failed`, so that the
/// other threads stop.
pub(super) fn guarded<T>(
    failed: &AtomicBool,
    work: impl FnOnce() -> Result<T, CountError>,
) -> Result<T, CountError> {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|panic| Err(internal(panic)));
    if result.is_err() {
        failed.store(true, Ordering::Relaxed);
    }
    result
}

/// A panic of a worker thread as an error.
pub(super) fn internal(panic: Box<dyn std::any::Any + Send>) -> CountError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    CountError::Internal(message)
}
