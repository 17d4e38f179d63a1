//! The one worker pattern of counting's threads: start them (`spawn_workers`), run each guarded
//! (a panic becomes an error, an error stops the others: `guarded`), and join them, keeping the
//! first error (`join_workers`). What the workers do is the readers' (`stream.rs`, `regions.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{CountError, Counter, WordCounts};
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

/// Runs `work(counter, unit, stop)` for each of `n_units` units on up to `threads` workers that
/// take the units in turn, counting into `into` in place (after an error, it holds what was
/// counted): the work of texts already in memory (strings, Arrow rows). The workers and their
/// errors are those of the readers' (`spawn_workers`, `guarded`, `join_workers`).
pub(super) fn count_units(
    n_units: usize,
    threads: usize,
    into: &mut WordCounts,
    work: impl Fn(&mut Counter, usize, &AtomicBool) -> Result<(), CountError> + Sync,
) -> Result<(), CountError> {
    let n = crate::mem::worker_count(threads).min(n_units.max(1));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let shared = std::mem::take(into).into_shared();
    let run = || {
        guarded(&failed, || {
            let mut counter = Counter::sharing(&shared);
            loop {
                let unit = next.fetch_add(1, Ordering::Relaxed);
                if unit >= n_units || failed.load(Ordering::Relaxed) {
                    break;
                }
                work(&mut counter, unit, &failed)?;
            }
            Ok(counter.finish()?)
        })
    };
    let counted = std::thread::scope(|scope| {
        let workers = spawn_workers(scope, n, || run)?;
        join_workers(workers, None).map(drop)
    });
    *into = WordCounts::from_shared(shared);
    counted
}
