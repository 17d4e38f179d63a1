//! The pool's threads kept awake while the merge loop runs (`with_pool_awake`), so that a merge
//! split over them does not wait for one to wake. What they run is the loop's; the pool itself is
//! made by `train_from`.

use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `f` on this thread of `pool` with the pool's other threads (up to one per core) kept
/// awake: each looks for jobs without ever going to sleep until `f` returns. A merge split over
/// the threads waits for its slowest part; a rayon thread that found no work for a moment goes
/// to sleep, and waking it took about as long as the merges of 1,000-9,999 words saved by
/// being split (on the large corpus, split over two sleeping threads they were no faster than
/// on one; kept awake, the two merge them in two thirds of one thread's time). The cost is
/// that the other cores stay busy during the serial parts of the loop too.
pub(super) fn with_pool_awake<R>(pool: &rayon::ThreadPool, f: impl FnOnce() -> R) -> R {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let awake = AtomicBool::new(true);
    let home = rayon::current_thread_index();
    /// Lets the others sleep again when `f` returns or panics (the scope waits for them).
    struct Done<'a>(&'a AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Relaxed);
        }
    }
    pool.in_place_scope(|scope| {
        for _ in 1..pool.current_num_threads().min(cores) {
            scope.spawn(|_| keep_awake(&awake, home));
        }
        let _done = Done(&awake);
        f()
    })
}

thread_local! {
    /// Whether this thread runs `keep_awake` (further down its stack).
    static AWAKE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the pool's jobs as they come, while `awake`: spinning a little, then yielding the core
/// to other processes between looks. Returns at once on the loop's own thread (`home`, which
/// may pick this job up while it waits for a split merge) and on a thread that already runs it.
fn keep_awake(awake: &AtomicBool, home: Option<usize>) {
    if rayon::current_thread_index() == home || AWAKE.with(|a| a.replace(true)) {
        return;
    }
    /// Clears `AWAKE` on the way out, a panic of a job run here included.
    struct Asleep;
    impl Drop for Asleep {
        fn drop(&mut self) {
            AWAKE.with(|a| a.set(false));
        }
    }
    let _asleep = Asleep;
    let mut idle = 0u32;
    while awake.load(Ordering::Relaxed) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle = 0;
        } else if idle < 64 {
            idle += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn threads_kept_awake_run_jobs_and_a_panic_lets_them_go() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let sum: u64 =
            pool.install(|| with_pool_awake(&pool, || (0..10_000u64).into_par_iter().sum()));
        assert_eq!(sum, 49_995_000);
        // A panic in the loop ends the call (the threads kept awake stop), it does not hang.
        let result = pool.install(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                with_pool_awake(&pool, || -> () { panic!("a bug in the loop") })
            }))
        });
        assert!(result.is_err());
        // ... and the pool still works afterwards.
        assert_eq!(pool.install(|| with_pool_awake(&pool, || 7)), 7);
    }
}
