//! The encoder's threads: a call's jobs shared by the calling thread and a pool kept between
//! calls (`Encoder::share`). What the jobs are is the callers' (`batch.rs`, `flat.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::{EncodeError, Encoder};

impl Encoder {
    /// The pool of calls on `num_threads` threads, the calling thread one of them (its threads
    /// are `num_threads - 1`, none for one): the last one made, kept for the next call (a batch
    /// call made two new pools, and their new threads new allocator arenas). Not in a process
    /// forked since (a data loader's workers): its threads are not there, and a call would wait
    /// for them forever; that pool is left alone (dropping it would signal them).
    fn pool(&self, num_threads: usize) -> Result<Option<Arc<rayon::ThreadPool>>, EncodeError> {
        let n = crate::mem::worker_count(num_threads) - 1;
        if n == 0 {
            return Ok(None);
        }
        let pid = std::process::id();
        let mut kept = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        match kept.take() {
            Some((made_by, pool)) if made_by == pid && pool.current_num_threads() == n => {
                return Ok(Some(kept.insert((pid, pool)).1.clone()));
            }
            Some((made_by, pool)) if made_by != pid => std::mem::forget(pool),
            _ => {}
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| EncodeError::Threads(e.to_string()))?;
        Ok(Some(kept.insert((pid, Arc::new(pool))).1.clone()))
    }

    /// `job(i, who)` for each `i` of `0..n_jobs`, on `num_threads` threads, each taking the
    /// next job when it is free (`who`: 0 for the calling thread, which works too, 1 on for the
    /// pool's); the results in job order, or the first error met (no job starts after it).
    /// Why the calling thread works: it is awake, while a pool thread whose CPU went idle
    /// between calls took ~2.5 ms to wake in a VM, a sixth of a 2-thread batch of 8 MB; and
    /// jobs taken in order from one queue leave less of a tail on one thread than halves
    /// split up front.
    pub fn share<T: Send>(
        &self,
        num_threads: usize,
        n_jobs: usize,
        job: impl Fn(usize, usize) -> Result<T, EncodeError> + Sync,
    ) -> Result<Vec<T>, EncodeError> {
        let next = AtomicUsize::new(0);
        let work = |who: usize| {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n_jobs {
                    return done;
                }
                let result = job(i, who);
                if result.is_err() {
                    next.store(n_jobs, Ordering::Relaxed);
                }
                done.push((i, result));
            }
        };
        let pool = self.pool(num_threads)?;
        let helpers = pool.as_ref().map_or(0, |p| p.current_num_threads());
        let mut parts: Vec<Vec<_>> = (0..=helpers.min(n_jobs.saturating_sub(1)))
            .map(|_| Vec::new())
            .collect();
        match (&pool, parts.split_first_mut()) {
            (Some(pool), Some((mine, theirs))) if !theirs.is_empty() => {
                pool.in_place_scope(|scope| {
                    for (k, part) in theirs.iter_mut().enumerate() {
                        let work = &work;
                        scope.spawn(move |_| *part = work(k + 1));
                    }
                    *mine = work(0);
                });
            }
            (_, Some((mine, _))) => *mine = work(0),
            _ => {}
        }
        let mut all: Vec<_> = parts.into_iter().flatten().collect();
        all.sort_unstable_by_key(|&(i, _)| i);
        all.into_iter().map(|(_, result)| result).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encoder::tests::toy;
    use std::sync::Mutex;

    #[test]
    fn shared_jobs_come_back_in_order_and_stop_at_an_error() {
        let enc = toy();
        for threads in [1, 2, 3, 5] {
            for n_jobs in [0, 1, 2, 7, 100] {
                let whos = Mutex::new(Vec::new());
                let got = enc
                    .share(threads, n_jobs, |i, who| {
                        whos.lock().unwrap().push(who);
                        Ok(i * 10)
                    })
                    .unwrap();
                assert_eq!(got, (0..n_jobs).map(|i| i * 10).collect::<Vec<_>>());
                let whos = whos.into_inner().unwrap();
                assert!(
                    whos.iter().all(|&w| w < threads),
                    "{threads} threads: {whos:?}"
                );
            }
            let ran = AtomicUsize::new(0);
            let result = enc.share(threads, 1000, |i, _| {
                ran.fetch_add(1, Ordering::Relaxed);
                match i {
                    3 => Err(EncodeError::Interrupted),
                    _ => Ok(i),
                }
            });
            assert!(matches!(result, Err(EncodeError::Interrupted)));
            // none starts after the error is seen (on one thread: exactly the first four ran)
            assert!(threads > 1 || ran.into_inner() == 4);
        }
    }
}
