//! Counting a regular file on several threads that each read the regions they take: the file
//! cut at safe cuts into shrinking regions (`plan_regions`), then counted (`count_regions`).
//! Reading a region is `stream.rs`'s `read_chunks`; where a cut may fall is `cuts.rs`'s.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_channel::RecvTimeoutError;

use super::stream::{count_chunk, read_chunks, Chunk, ReadError, SEND_WAIT};
use super::workers::{guarded, join_workers, spawn_workers};
use super::{CountError, CountStats, Counter, Job};
use crate::cuts::CutFinder;
use crate::pretokenize::PretokenizeError;

/// How far before a region's target its cut is looked for. Where text has no cut for this long
/// (one pretoken of 256 KiB, or a custom pattern's text between rare special tokens), the
/// region grows into the next instead: planning reads at most ~340 KB a region. (Looked for up
/// to 64 MiB back, planning 100 MB of one letter took several times as long as counting it.)
const REGION_BACK: u64 = 256 << 10;

/// Bytes `start..end` cut in regions for `n_workers` to take in turn: each a share of what is
/// left (`1 / (2 n_workers)`, at least a chunk), so that regions shrink towards the end and the
/// workers finish together; each cut at the last safe cut before its target, at most
/// `REGION_BACK` before it and after the cut before (none found: the region grows into the
/// next). No regions (empty) where the finder can find no cut.
pub(super) fn plan_regions(
    finder: &CutFinder,
    path: &Path,
    (start, end): (u64, u64),
    n_workers: usize,
    chunk_size: usize,
) -> std::io::Result<Vec<(u64, u64)>> {
    if !finder.can_cut() {
        return Ok(Vec::new());
    }
    let min = (chunk_size as u64).max(1);
    let mut targets = Vec::new();
    let mut at = start;
    while end - at > 2 * min {
        at += ((end - at) / (2 * n_workers as u64)).max(min);
        targets.push(at);
    }
    // ascending, each after the one before (`find_cuts`)
    let cuts = finder.find_cuts(path, &targets, REGION_BACK)?;
    let inner = cuts.into_iter().flatten().filter(|&c| start < c && c < end);
    let bounds: Vec<u64> = std::iter::once(start)
        .chain(inner)
        .chain(std::iter::once(end))
        .collect();
    Ok(bounds.windows(2).map(|w| (w[0], w[1])).collect())
}

/// Counts the regions of a file on `n_workers` threads, each reading the regions it takes;
/// this thread reports progress. In strict mode the error is the file's first invalid byte:
/// after one is found, only regions that start before it are still counted.
pub(super) fn count_regions(
    job: &Job<'_>,
    regions: &[(u64, u64)],
    n_workers: usize,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<CountStats, CountError> {
    let flags = RegionFlags {
        next: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        first_bad: AtomicU64::new(u64::MAX),
        n_read: AtomicU64::new(0),
    };
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    std::thread::scope(|scope| {
        let workers = spawn_workers(scope, n_workers, || {
            let done = done_tx.clone();
            let (flags, done) = (&flags, done);
            move || {
                let result = count_some_regions(job, regions, flags);
                drop(done); // this thread is done: the loop below stops when all are
                result
            }
        });
        drop(done_tx);
        let workers = workers?;
        let mut interrupted = false;
        while let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(SEND_WAIT) {
            if !interrupted && !progress(flags.n_read.load(Ordering::Relaxed)) {
                interrupted = true;
                flags.failed.store(true, Ordering::Relaxed);
            }
        }
        let mut stats = CountStats::default();
        for s in join_workers(workers, interrupted.then_some(CountError::Interrupted))? {
            stats.add(s);
        }
        let bad = flags.first_bad.load(Ordering::Relaxed);
        if bad != u64::MAX {
            return Err(job.error(ReadError::InvalidUtf8(bad)));
        }
        progress(stats.n_bytes);
        Ok(stats)
    })
}

/// The state the workers of `count_regions` share.
struct RegionFlags {
    /// The next region to take.
    next: AtomicUsize,
    /// An error (or Ctrl-C) ends the count.
    failed: AtomicBool,
    /// The first invalid byte found (strict mode), `u64::MAX` if none.
    first_bad: AtomicU64,
    /// Bytes read by all workers.
    n_read: AtomicU64,
}

impl RegionFlags {
    /// Whether the region from `start` is still to be counted: not after a failure, nor past
    /// the first invalid byte (its result would not be reported).
    fn counts(&self, start: u64) -> bool {
        !self.failed.load(Ordering::Relaxed) && start <= self.first_bad.load(Ordering::Relaxed)
    }
}

/// A worker of `count_regions`: takes regions in turn until none is left or the count failed.
/// Stops quietly where another thread reports (a failure, Ctrl-C, an invalid byte before).
fn count_some_regions(
    job: &Job<'_>,
    regions: &[(u64, u64)],
    flags: &RegionFlags,
) -> Result<CountStats, CountError> {
    guarded(&flags.failed, || {
        let mut counter = Counter::sharing(job.shared);
        let mut stats = CountStats::default();
        let mut file = File::open(job.path).map_err(|e| job.error(ReadError::Io(e)))?;
        loop {
            let i = flags.next.fetch_add(1, Ordering::Relaxed);
            let Some(&(start, end)) = regions.get(i) else {
                break;
            };
            // regions are taken in order: once one is past the first invalid byte, all are
            if !flags.counts(start) {
                break;
            }
            file.seek(SeekFrom::Start(start))
                .map_err(|e| job.error(ReadError::Io(e)))?;
            let mut seen = stats.n_bytes;
            let mut progress = |n: u64| {
                flags.n_read.fetch_add(n - seen, Ordering::Relaxed);
                seen = n;
                flags.counts(start)
            };
            let mut count = |chunk: Chunk, _: u64, _: &mut dyn FnMut(u64) -> bool| {
                count_chunk(&mut counter, &chunk, job, &flags.failed).map_err(ReadError::Count)?;
                Ok(true)
            };
            let read = read_chunks(
                &mut (&mut file).take(end - start),
                (job, start),
                &mut stats,
                &mut progress,
                (&mut count, &flags.failed),
            );
            match read {
                Ok(()) | Err(ReadError::Interrupted) => {}
                Err(ReadError::Count(CountError::Pretokenize(PretokenizeError::Stopped))) => {}
                Err(ReadError::InvalidUtf8(offset)) => {
                    flags.first_bad.fetch_min(offset, Ordering::Relaxed);
                }
                Err(e) => return Err(job.error(e)),
            }
        }
        Ok(counter.finish().map(|()| stats)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::tests::config;
    use crate::count::tests::counted;
    use crate::count::CountConfig;
    use crate::pretokenize::Pretokenizer;

    #[test]
    fn regions_count_as_one_reader_does() {
        // workers reading regions of the file themselves (`cuts`) against one reader thread, on
        // every kind of text, invalid bytes replaced or refused, whole files and shards
        let dir = std::env::temp_dir().join(format!("bytepair-regions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mixed.txt");
        let mut data = Vec::new();
        for i in 0..400 {
            data.extend_from_slice(
                format!(
                    "doc {i}: the cat's mat\r\n\r\n  我们的猫。ภาษาไทย {{\"k\":[1,2]}}<|e|>\tx  \n"
                )
                .as_bytes(),
            );
            if i % 97 == 5 {
                data.extend_from_slice(b"bad \xff\xe2\x82 bytes ");
            }
        }
        std::fs::write(&path, &data).unwrap();
        let configure = |chunk_size, num_threads, strict, regions: bool| CountConfig {
            strict,
            cuts: regions.then(|| CutFinder::new(&["<|e|>"], Pretokenizer::Gpt2).unwrap()),
            ..config(&["<|e|>"], chunk_size, num_threads)
        };
        let count = |range: (u64, u64), config: &CountConfig| {
            counted(&path, range, config)
                .map(|(counts, stats)| (counts, stats.n_bytes, stats.n_replaced))
                .map_err(|e| e.to_string())
        };
        let len = data.len() as u64;
        let finder = CutFinder::new(&["<|e|>"], Pretokenizer::Gpt2).unwrap();
        let cuts = finder
            .find_cuts(&path, &[len / 3, len / 2], crate::cuts::MAX_BACK)
            .unwrap();
        let (a, b) = (cuts[0].unwrap(), cuts[1].unwrap());
        for range in [(0, u64::MAX), (0, a), (a, b), (b, u64::MAX)] {
            for strict in [false, true] {
                let want = count(range, &configure(1 << 20, 1, strict, false));
                if !strict {
                    assert!(want.as_ref().unwrap().2 > 0, "no byte replaced");
                }
                for (size, threads) in [(64, 2), (301, 3), (1000, 5), (4096, 2)] {
                    let got = count(range, &configure(size, threads, strict, true));
                    assert_eq!(
                        got, want,
                        "{range:?}, strict {strict}, {size} B, {threads} threads"
                    );
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
