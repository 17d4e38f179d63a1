//! Training's merge stage (docs/spec.md §1.5): from word counts to merges, with CS336's
//! tie-break. This file holds the entry points and errors. Words are token-id sequences in one
//! arena (`arena.rs`, `words.rs`; first pair index `pairs.rs`); pair counts are updated only
//! from the words the chosen pair occurs in (`deltas.rs`, `runs.rs`), each pair keeping its list
//! of words; the next pair comes from a lazy max-heap (`heap.rs`); the loop is `merge_loop.rs`.
//!
//! Performance notes (large corpus, vocab 10K: 31 M word visits, 30% of them to words that
//! have lost the pair since):
//! - Merging (a, b) into `new` moves counts only between pairs that share a neighbour: (x, a)
//!   to (x, new) for each left neighbour x, (b, y) to (new, y) for each right neighbour y, and
//!   (b, a) to (new, new) in runs. A visit adds its word's count into arrays indexed by the
//!   neighbour's id; the pair table is touched once per distinct neighbour, not per occurrence.
//! - A pair's word list is complete, sorted and free of repeats from the merge that makes its
//!   newer token on (only that merge can create it), so lists are never sorted or appended to.
//! - Merges of 60 words or more are split over the threads in runs of words, each with its own
//!   arrays; the new pairs' word lists are then gathered on two threads. The threads are kept
//!   awake through the merge stage, so that a split merge does not wait for one to wake.
//! - The heap keeps stale entries and re-checks them when they surface, so a decrease costs
//!   nothing; words shrink in place, so the arena never grows.
//! - Pairs that cannot win are not tracked (see `Floor`): most pairs a merge makes are rare
//!   (1.1 M made on the way to 10K, 17 K of them with the last merge's count or more), and each
//!   tracked one costs a table entry, a heap entry and a word list.

mod arena;
mod deltas;
mod floor;
mod heap;
mod merge_loop;
mod pairs;
mod pool;
mod replay;
mod runs;
mod token_pairs;
mod words;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::count::WordCounts;
use crate::types::{Pair, TokenId};
use floor::guess_floor;
use merge_loop::merge_loop;
use pool::with_pool_awake;

/// Errors of the merge stage.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// The worker threads could not be started.
    #[error("could not start threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
    /// A merge to continue from joins a token that does not exist before it.
    #[error(
        "merge {index} to continue from joins token ids {pair:?}, but only ids below {limit} \
         exist before it (each merge joins bytes or earlier merges)"
    )]
    BadStartMerge {
        /// The merge's position.
        index: usize,
        /// Its two token ids.
        pair: Pair,
        /// One more than the largest id that exists before it.
        limit: TokenId,
    },
    /// A pair count would pass 2^64 - 1.
    #[error(
        "the word counts are too large: the pair ({0:?}, {1:?}) occurs more than 2^64 - 1 \
         times; scale the counts down"
    )]
    CountsTooLarge(char, char),
    /// Memory for the words could not be allocated.
    #[error("out of memory while laying out the words for the merge loop")]
    OutOfMemory,
    /// The words take more than the arena can address.
    #[error(
        "too many distinct words for one merge loop (their tokens take more than 64 GB); \
         train on a part of the corpus"
    )]
    TooManyWords,
}

/// Which merges the loop may make (docs/spec.md §1.8); the default allows every merge.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A pair counted fewer times is never merged: the loop ends when the best pair is below it.
    pub min_frequency: u64,
    /// A pair whose token would be longer (in bytes) is never merged: the next best is taken.
    pub max_token_length: Option<usize>,
    /// The rules of superword training's second stage (docs/spec.md §1.9), or none.
    pub superword: Option<Superword>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            min_frequency: 1,
            max_token_length: None,
            superword: None,
        }
    }
}

/// Which tokens superword training's second stage may make; a pair whose token breaks a rule is
/// never merged and the next best is taken, as with `max_token_length`.
#[derive(Clone, Copy, Debug)]
pub struct Superword {
    /// A token of more words is never made: words are the runs of bytes other than the space
    /// (0x20), so `" of the"` has 2 and `"  "` none.
    pub max_words: Option<usize>,
    /// Whether a token may hold a colon followed by a space (`": "`).
    pub colon_space: bool,
}

impl Superword {
    /// Whether the token `a + b` breaks a rule (a token of the same bytes already exists is
    /// the caller's to check).
    pub fn refuses(&self, a: &[u8], b: &[u8]) -> bool {
        let colon = a.ends_with(b":") && b.starts_with(b" ");
        if !self.colon_space && (colon || contains(a, b": ") || contains(b, b": ")) {
            return true;
        }
        self.max_words.is_some_and(|max| {
            let glued =
                a.last().is_some_and(|&x| x != b' ') && b.first().is_some_and(|&y| y != b' ');
            words_in(a) + words_in(b) - usize::from(glued) > max
        })
    }
}

/// The number of runs of bytes other than the space in `t`.
fn words_in(t: &[u8]) -> usize {
    t.split(|&c| c == b' ').filter(|w| !w.is_empty()).count()
}

fn contains(t: &[u8], what: &[u8]) -> bool {
    t.windows(what.len()).any(|w| w == what)
}

/// Why the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It made the merges asked for.
    Full,
    /// No pair of tokens is left in any word.
    NoPair,
    /// The best pair that may be merged is counted fewer than `min_frequency` times.
    MinFrequency,
    /// Pairs are left, but each would make a token longer than `max_token_length`.
    MaxTokenLength,
    /// Pairs are left, but each would make a token the superword rules refuse, or one that
    /// exists already (and none is too long).
    Superword,
    /// `progress` returned false.
    Interrupted,
}

impl Stop {
    /// A short name, for the bindings.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Full => "full",
            Stop::NoPair => "no pair",
            Stop::MinFrequency => "min frequency",
            Stop::MaxTokenLength => "max token length",
            Stop::Superword => "superword rules",
            Stop::Interrupted => "interrupted",
        }
    }
}

/// What training produced.
pub struct TrainResult {
    /// Merges in creation order, as pairs of ids (the new token of merge i has id 256 + i).
    pub merges: Vec<Pair>,
    /// The bytes of every token id, 256 bytes then one per merge.
    pub vocab: Vec<Vec<u8>>,
    /// Why the loop ended.
    pub stop: Stop,
}

/// Runs `num_merges` merges (fewer if no pair is left) on the counted words, on `num_threads`.
/// `progress(done)` is called on the calling thread every 10 ms while the loop runs on the
/// pool's, and once at the end; returning false stops the loop at its next step.
pub fn train(
    counts: WordCounts,
    num_merges: usize,
    num_threads: usize,
    progress: &mut (dyn FnMut(usize) -> bool + Send),
) -> Result<TrainResult, TrainError> {
    train_from(
        counts,
        &[],
        num_merges,
        Limits::default(),
        num_threads,
        progress,
    )
}

/// `train`, continued from `start`: merges of an earlier run (merge i makes id 256 + i),
/// applied to the words first; the loop then goes on to `num_merges` in all. On the same words,
/// continuing from the first N merges of a run gives that run's merges exactly: the words and
/// pair counts after applying them are the run's state after N merges. `limits` apply to the
/// new merges only.
pub fn train_from(
    counts: WordCounts,
    start: &[Pair],
    num_merges: usize,
    limits: Limits,
    num_threads: usize,
    progress: &mut (dyn FnMut(usize) -> bool + Send),
) -> Result<TrainResult, TrainError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(crate::mem::worker_count(num_threads))
        .build()?;
    let done = AtomicUsize::new(start.len());
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel();
    // The whole loop runs on one of the pool's threads, which then takes part in every split
    // merge: handing each merge to the pool from outside left the small merges, run on this
    // thread, 2.4x slower (their data had moved to the pool's cores). This thread reports the
    // loop's progress meanwhile: a callback that looks at Python must run here (CPython runs
    // Ctrl-C's handler only on its main thread; called on the pool's, it never stopped a loop).
    pool.in_place_scope(|scope| {
        scope.spawn(|_| {
            let mut report = |n: usize| {
                done.store(n, Ordering::Relaxed);
                !stop.load(Ordering::Relaxed)
            };
            let result = with_pool_awake(&pool, || {
                let (n, guess) = (num_merges, guess_floor);
                if 256 + num_merges.max(start.len()) <= 1 << 16 {
                    merge_loop::<u16>(counts, start, n, limits, &pool, guess, &mut report)
                } else {
                    merge_loop::<u32>(counts, start, n, limits, &pool, guess, &mut report)
                }
            });
            // The receiver waits below until it gets this.
            let _ = sender.send(result);
        });
        loop {
            match receiver.recv_timeout(REPORT_EVERY) {
                Ok(result) => {
                    progress(done.load(Ordering::Relaxed));
                    return result;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !progress(done.load(Ordering::Relaxed)) {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                // The loop panicked (a bug): the scope raises that panic again when this
                // closure returns, so what it returns is never seen.
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(TrainError::OutOfMemory),
            }
        }
    })
}

/// How often `train_from` passes the loop's progress on.
const REPORT_EVERY: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;

    const NO_LIMITS: Limits = Limits {
        min_frequency: 1,
        max_token_length: None,
        superword: None,
    };

    fn counts(words: &[(&str, u64)]) -> WordCounts {
        let mut wc = WordCounts::default();
        for &(w, n) in words {
            wc.add(w.as_bytes(), n).unwrap();
        }
        wc
    }

    fn merged_bytes(r: &TrainResult) -> Vec<String> {
        let s = |id: TokenId| String::from_utf8_lossy(&r.vocab[id as usize]).into_owned();
        r.merges
            .iter()
            .map(|&(a, b)| format!("{} {}", s(a), s(b)))
            .collect()
    }

    #[test]
    fn worked_example_of_the_spec() {
        let wc = counts(&[("low", 5), ("lower", 2), ("widest", 3), ("newest", 6)]);
        let r = train(wc, 12, 1, &mut |_| true).unwrap();
        let expected = [
            "s t", "e st", "o w", "l ow", "w est", "n e", "ne west", "w i", "wi d", "wid est",
            "low e", "lowe r",
        ];
        assert_eq!(merged_bytes(&r), expected);
    }

    #[test]
    fn overlapping_runs_count_every_position() {
        let r = train(counts(&[("aaaa", 1), ("ab", 2)]), 3, 2, &mut |_| true).unwrap();
        // (a,a) occurs 3 times in "aaaa": it beats (a,b) with 2; "aa aa" then holds (aa,aa) once.
        assert_eq!(merged_bytes(&r), ["a a", "a b", "aa aa"]);
    }

    #[test]
    fn counts_near_2_pow_64_stay_exact() {
        // (a,b) occurs u64::MAX - 1 times, (b,c) u64::MAX - 2: both above i64::MAX.
        let big = u64::MAX - 2;
        let r = train(counts(&[("ab", 1), ("abc", big)]), 2, 1, &mut |_| true).unwrap();
        assert_eq!(merged_bytes(&r), ["a b", "ab c"]);
        // (b,c) occurs exactly u64::MAX times and wins over (a,b).
        let r = train(counts(&[("bc", 2), ("abc", big)]), 1, 1, &mut |_| true).unwrap();
        assert_eq!(merged_bytes(&r), ["b c"]);
        let too_big = train(counts(&[("ab", u64::MAX), ("xab", 1)]), 1, 1, &mut |_| true);
        assert!(matches!(too_big, Err(TrainError::CountsTooLarge(..))));
    }

    #[test]
    fn continuing_equals_one_run() {
        let words = [
            ("low", 5),
            ("lower", 2),
            ("widest", 3),
            ("newest", 6),
            ("aaaa", 2),
        ];
        let full = train(counts(&words), 14, 1, &mut |_| true).unwrap();
        for n in [0, 1, 5, 13, 14] {
            let more = train_from(
                counts(&words),
                &full.merges[..n],
                14,
                NO_LIMITS,
                2,
                &mut |_| true,
            );
            let more = more.unwrap();
            assert_eq!(more.merges, full.merges);
            assert_eq!(more.vocab, full.vocab);
        }
        let bad = train_from(counts(&words), &[(97, 256)], 3, NO_LIMITS, 1, &mut |_| true);
        assert!(matches!(
            bad,
            Err(TrainError::BadStartMerge { index: 0, .. })
        ));
    }

    #[test]
    fn words_counted_zero_times_weigh_nothing() {
        // As in the reference trainer (tests/reference.py): a word counted 0 times holds no
        // pair, so (a,b) is never merged.
        let r = train(counts(&[("ab", 0), ("cd", 1)]), 5, 1, &mut |_| true).unwrap();
        assert_eq!(merged_bytes(&r), ["c d"]);
    }

    #[test]
    fn big_merges_split_over_threads_give_the_same_merges() {
        // Enough words that many merges run in several runs (RUN_MIN_WORDS).
        let words: Vec<(String, u64)> = (0..12_000u64)
            .map(|i| (format!("ab{i}x{}", i % 13), 1 + i % 7))
            .collect();
        let table = || {
            let mut wc = WordCounts::default();
            for (w, n) in &words {
                wc.add(w.as_bytes(), *n).unwrap();
            }
            wc
        };
        let one = train(table(), 300, 1, &mut |_| true).unwrap();
        let three = train(table(), 300, 3, &mut |_| true).unwrap();
        assert_eq!(one.merges, three.merges);
        assert!(one.merges.len() > 100);
    }

    #[test]
    fn progress_is_told_on_the_calling_thread_and_stops_the_loop() {
        let mut next = crate::testing::numbers(99);
        let mut wc = WordCounts::default();
        for _ in 0..200_000 {
            let word: Vec<u8> = (0..10).map(|_| b'a' + next(26) as u8).collect();
            wc.add(&word, 1 + next(9)).unwrap();
        }
        let caller = std::thread::current().id();
        let mut calls = 0;
        let r = train(wc, 100_000, 2, &mut |_| {
            assert_eq!(std::thread::current().id(), caller);
            calls += 1;
            false
        })
        .unwrap();
        assert!(calls >= 1);
        assert!(r.merges.len() < 100_000, "the loop did not stop");
        assert_eq!(r.vocab.len(), 256 + r.merges.len());
    }

    #[test]
    fn stops_early_when_no_pair_is_left() {
        let r = train(counts(&[("ab", 1), ("c", 9)]), 10, 1, &mut |_| true).unwrap();
        assert_eq!(merged_bytes(&r), ["a b"]);
        assert_eq!(
            train(WordCounts::default(), 5, 1, &mut |_| true)
                .unwrap()
                .merges
                .len(),
            0
        );
    }
}
