//! The BPE merge loop (docs/spec.md §1.5): from word counts to merges, with CS336's tie-break.
//! Words are token-id sequences in one arena (`words.rs`); pair counts are updated only from
//! the words the chosen pair occurs in (each pair keeps its list of words); the next pair comes
//! from a lazy max-heap.
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

mod floor;
mod words;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rayon::prelude::*;

use crate::count::WordCounts;
use floor::{guess_floor, Floor, Guess};
use words::{
    end_at, pair_bits, regions, runs, set_len, word_at, PairInfo, Pairs, Token, WordList, Words,
};

/// A token id: bytes are 0-255, merge i is 256 + i.
pub type TokenId = u32;
/// An adjacent pair of tokens.
pub type Pair = (TokenId, TokenId);

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

/// What training produced.
pub struct TrainResult {
    /// Merges in creation order, as pairs of ids (the new token of merge i has id 256 + i).
    pub merges: Vec<Pair>,
    /// The bytes of every token id, 256 bytes then one per merge.
    pub vocab: Vec<Vec<u8>>,
}

/// A binary max-heap of (count, pair) ordered by count, then by the pair's bytes (greater wins),
/// then by ids so that even equal byte strings order deterministically. `std`'s heap cannot take
/// a comparator that looks up the vocabulary, hence this one.
struct PairHeap {
    data: Vec<(u64, Pair)>,
}

impl PairHeap {
    #[inline(always)]
    fn before(a: &(u64, Pair), b: &(u64, Pair), vocab: &[Vec<u8>]) -> bool {
        // Counts nearly always differ: look at the bytes only when they do not.
        if a.0 != b.0 {
            return a.0 > b.0;
        }
        let key = |e: &(u64, Pair)| (&vocab[e.1 .0 as usize], &vocab[e.1 .1 as usize], e.1);
        key(a) > key(b)
    }

    fn push(&mut self, entry: (u64, Pair), vocab: &[Vec<u8>]) {
        self.data.push(entry);
        let mut i = self.data.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::before(&self.data[i], &self.data[parent], vocab) {
                break;
            }
            self.data.swap(i, parent);
            i = parent;
        }
    }

    fn pop(&mut self, vocab: &[Vec<u8>]) -> Option<(u64, Pair)> {
        let last = self.data.pop()?;
        if self.data.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.data[0], last);
        self.sift_down(0, vocab);
        Some(top)
    }

    fn sift_down(&mut self, mut i: usize, vocab: &[Vec<u8>]) {
        let n = self.data.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && Self::before(&self.data[l], &self.data[best], vocab) {
                best = l;
            }
            if r < n && Self::before(&self.data[r], &self.data[best], vocab) {
                best = r;
            }
            if best == i {
                return;
            }
            self.data.swap(i, best);
            i = best;
        }
    }

    fn from_vec(data: Vec<(u64, Pair)>, vocab: &[Vec<u8>]) -> Self {
        let mut heap = PairHeap { data };
        for i in (0..heap.data.len() / 2).rev() {
            heap.sift_down(i, vocab);
        }
        heap
    }
}

/// Merges `(a, b)` into `new` in the `len` tokens of a word (`t` holds its whole units),
/// left to right and non-overlapping, tells `moved` where counts move (see `Moved`), and
/// returns the word's new length. Words of up to 64 tokens go from one occurrence to the next
/// by the bits of `pair_bits` and copy the tokens between: looking at every token after the
/// first occurrence was a third of a merge's instructions (callgrind).
fn merge_word<T: Token>(
    t: &mut [T],
    len: usize,
    (a, b): Pair,
    new: TokenId,
    mut moved: impl FnMut(Moved),
) -> usize {
    let (a, b, new) = (T::of(a), T::of(b), T::of(new));
    let Some(mut at) = pair_bits(t, len, a, b) else {
        return merge_long_word(t, len, (a, b), new, moved);
    };
    // Up to the first occurrence nothing changes (and a word that lost the pair is not written).
    if at == 0 {
        return len;
    }
    let first = at.trailing_zeros() as usize;
    // read from i, write at j; `merged`: the last token written is a new one
    let (mut i, mut j, mut merged) = (first, first, false);
    while at != 0 {
        let p = at.trailing_zeros() as usize;
        at &= at - 1;
        if p < i {
            continue; // overlaps the occurrence just merged (a = b)
        }
        if p > i {
            t.copy_within(i..p, j);
            j += p - i;
            merged = false;
        }
        if j > 0 {
            moved(if merged {
                Moved::Run
            } else {
                Moved::Left(t[j - 1].id())
            });
        }
        // An occurrence right after this one moves (b, a) as a run instead.
        if p + 2 < len && at >> (p + 2) & 1 == 0 {
            moved(Moved::Right(t[p + 2].id()));
        }
        t[j] = new;
        j += 1;
        i = p + 2;
        merged = true;
    }
    t.copy_within(i..len, j);
    j + len - i
}

/// `merge_word` token by token, for words of more than 64 tokens.
fn merge_long_word<T: Token>(
    t: &mut [T],
    len: usize,
    (a, b): (T, T),
    new: T,
    mut moved: impl FnMut(Moved),
) -> usize {
    let Some(first) = t[..len].windows(2).position(|p| p[0] == a && p[1] == b) else {
        return len;
    };
    let (mut i, mut j) = (first, first);
    let mut prev_merged = false;
    while i < len {
        if i + 1 < len && t[i] == a && t[i + 1] == b {
            if j > 0 {
                moved(if prev_merged {
                    Moved::Run
                } else {
                    Moved::Left(t[j - 1].id())
                });
            }
            if i + 2 < len {
                let y = t[i + 2];
                // A merge right after this one moves (b, a) as a run instead.
                if !(y == a && i + 3 < len && t[i + 3] == b) {
                    moved(Moved::Right(y.id()));
                }
            }
            t[j] = new;
            prev_merged = true;
            i += 2;
        } else {
            t[j] = t[i];
            prev_merged = false;
            i += 1;
        }
        j += 1;
    }
    j
}

/// Where one occurrence of the merged pair moves a word's count: from (x, a) to (x, new), from
/// (b, y) to (new, y), or from (b, a) to (new, new) between two merged occurrences. Every
/// occurrence of (a, b) goes (so do those overlapping it when a = b): its count drops to 0.
enum Moved {
    Left(TokenId),
    Right(TokenId),
    Run,
}

/// The counts one thread moved while merging a run of words, and the words behind them. Each
/// on lines of its own: the threads' deltas sit side by side, and where two of them shared a
/// line it went back and forth between the cores writing it (false sharing: a build whose
/// deltas happened to share one ran the large corpus's merge stage about 30% slower).
#[derive(Default)]
#[repr(align(128))]
struct Delta {
    /// By left neighbour x: what moved from (x, a) to (x, new).
    left: Half,
    /// By right neighbour y: what moved from (b, y) to (new, y).
    right: Half,
    /// The count moved from (b, a) to (new, new), and its words (each once, in order).
    run: u64,
    run_words: Vec<u32>,
}

impl Delta {
    fn half(&mut self, left: bool) -> &mut Half {
        if left {
            &mut self.left
        } else {
            &mut self.right
        }
    }
}

/// The moves of one side's neighbours, by the neighbour's id.
#[derive(Default)]
struct Half {
    /// What each neighbour moved, in one 16-byte slot (sum, last word, words listed): three
    /// arrays had made a first touch three cache misses (perf: the sum's load was a third of
    /// the visits' callback).
    slots: Vec<Slot>,
    /// The neighbours with a nonzero sum, in the order first seen.
    ids: Vec<TokenId>,
    /// (neighbour, word) for every word a new pair appeared in, each once, in word order.
    words: Vec<(TokenId, u32)>,
}

/// One neighbour's moves.
#[derive(Clone, Copy, Default)]
#[repr(align(16))]
struct Slot {
    /// The count moved; 0 where untouched.
    sum: u64,
    /// The last word that listed the neighbour (valid where `sum` is not 0).
    last: u32,
    /// How many words listed it.
    listed: u32,
}

impl Half {
    /// Makes room for neighbour ids below `n`.
    fn grow(&mut self, n: usize) {
        if self.slots.len() < n {
            self.slots.resize(n.next_power_of_two(), Slot::default());
        }
    }

    /// Adds `c` moved by neighbour `x` in the word `w`, and lists the word once.
    #[inline(always)]
    fn add(&mut self, x: TokenId, c: u64, w: u32) {
        let s = &mut self.slots[x as usize];
        if s.sum == 0 {
            self.ids.push(x);
        } else if s.last == w {
            s.sum += c;
            return;
        }
        s.sum += c;
        s.last = w;
        s.listed += 1;
        self.words.push((x, w));
    }

    /// Adds the sums of `other` into this half and leaves `other`'s sums empty.
    fn absorb(&mut self, other: &mut Half) {
        for x in other.ids.drain(..) {
            let theirs = std::mem::take(&mut other.slots[x as usize]);
            let mine = &mut self.slots[x as usize];
            if mine.sum == 0 {
                self.ids.push(x);
            }
            mine.sum += theirs.sum;
            mine.listed += theirs.listed;
        }
    }
}

/// Sorted words and their part of the arena, which starts at offset `base`.
struct Run<'a, T> {
    ws: &'a [u32],
    region: &'a mut [T],
    base: usize,
}

/// Merges `pair` into `new` in the words of `run`, collecting what moved in `d`.
fn merge_words<T: Token>(run: Run<'_, T>, (pair, new): (Pair, TokenId), d: &mut Delta) {
    let Run { ws, region, base } = run;
    for (i, &w) in ws.iter().enumerate() {
        // The words are scattered over the arena: ask for later ones ahead of time.
        if let Some(&ahead) = ws.get(i + 8) {
            let at = region
                .as_ptr()
                .wrapping_add(ahead as usize * T::UNIT - base);
            crate::prefetch(at);
            crate::prefetch(at.wrapping_add(4 * T::UNIT));
        }
        let o = w as usize * T::UNIT - base;
        let (len, c, t) = word_at(region, o);
        let new_len = merge_word(t, len, pair, new, |m| match m {
            Moved::Left(x) => d.left.add(x, c, w),
            Moved::Right(y) => d.right.add(y, c, w),
            Moved::Run => {
                d.run += c;
                if d.run_words.last() != Some(&w) {
                    d.run_words.push(w);
                }
            }
        });
        if new_len != len {
            set_len(region, o, new_len);
        }
    }
}

/// A merge is split into runs of at least this many words, one per thread at most. On the
/// large corpus with 2 threads (`train_profile`), splitting merges of a few hundred words, not
/// only of 10,000+, made the whole loop about a tenth faster, more so at 32K merges than at
/// 10K. (When the loop ran outside the pool, splitting merges below 10,000 words had cost more
/// than it saved.) With the other threads kept awake (`with_pool_awake`), 60 does as well as
/// 150 or better.
const RUN_MIN_WORDS: usize = 60;

/// Merges `pair` into `new` in the words `ws` (sorted, distinct), split in runs over the
/// pool's threads: runs of sorted words own disjoint parts of the arena. Returns how many
/// deltas (one per run, in word order) were used. Results do not depend on the split.
fn merge_all<T: Token>(
    arena: &mut [T],
    ws: &[u32],
    (pair, new): (Pair, TokenId),
    pool: &rayon::ThreadPool,
    deltas: &mut [Delta],
) -> usize {
    let n_runs = (ws.len() / RUN_MIN_WORDS).clamp(1, deltas.len());
    let ws_runs: Vec<&[u32]> = runs(ws, n_runs).collect();
    let bounds: Vec<(usize, usize)> = ws_runs
        .iter()
        .map(|r| {
            (
                r[0] as usize * T::UNIT,
                end_at(arena, r[r.len() - 1] as usize * T::UNIT),
            )
        })
        .collect();
    let jobs = ws_runs
        .into_iter()
        .zip(regions(arena, bounds.iter().copied()))
        .zip(&bounds)
        .map(|((ws, region), &(base, _))| Run { ws, region, base });
    let work = |(run, d): (Run<'_, T>, &mut Delta)| merge_words(run, (pair, new), d);
    let n_jobs = bounds.len();
    if n_jobs == 1 {
        jobs.zip(deltas.iter_mut()).for_each(work);
    } else {
        let jobs: Vec<Run<'_, T>> = jobs.collect();
        pool.install(|| {
            jobs.into_par_iter()
                .zip(deltas.par_iter_mut())
                .for_each(work)
        });
    }
    n_jobs
}

/// Fills `lists` with the words of every tracked new pair of one half (`half` and the other
/// threads' words of that half, in word order), each list allocated at its size (growing then
/// shrinking them was a tenth of applying).
fn gather_lists(
    half: &mut Half,
    others: Vec<&mut Vec<(TokenId, u32)>>,
    floor: &Floor,
    lists: &mut [WordList],
) {
    let Half { slots, ids, words } = half;
    for &x in ids.iter() {
        let s = &mut slots[x as usize];
        let size = std::mem::take(&mut s.listed) as usize;
        if floor.keeps(s.sum) {
            lists[x as usize].reserve_exact(size);
        }
    }
    for ws in std::iter::once(words).chain(others) {
        for (x, w) in ws.drain(..) {
            if floor.keeps(slots[x as usize].sum) {
                lists[x as usize].push(w);
            }
        }
    }
}

/// The loop's state besides the words.
struct State {
    pairs: Pairs,
    heap: PairHeap,
    floor: Floor,
    /// By neighbour id, the words of a new pair being gathered from the threads' deltas: left
    /// neighbours' new pairs, right neighbours'.
    lists: [Vec<WordList>; 2],
}

impl State {
    /// Tracks the pairs of `pairs` counted `floor` times or more (and bounds the others'
    /// counts), with a heap of them.
    fn new(mut pairs: Pairs, mut floor: Floor, vocab: &[Vec<u8>]) -> Self {
        pairs.retain(|_, info| floor.tracks(info.count));
        let entries = pairs.iter().map(|(&p, info)| (info.count, p)).collect();
        State {
            pairs,
            heap: PairHeap::from_vec(entries, vocab),
            floor,
            lists: Default::default(),
        }
    }

    /// Counts every pair again from the words, when the best tracked pair (`best` times) may
    /// not be the best: from now on pairs below a quarter of it are left untracked.
    fn recount<T: Token>(
        self,
        words: &Words<T>,
        best: u64,
        pool: &rayon::ThreadPool,
        vocab: &[Vec<u8>],
    ) -> Result<Self, TrainError> {
        let State {
            pairs,
            heap,
            mut floor,
            lists,
        } = self;
        drop((pairs, heap));
        floor.recount(best);
        let mut state = State::new(words.pairs(pool)?, floor, vocab);
        state.lists = lists;
        Ok(state)
    }

    /// Takes `moved` away from the pair `p`, if tracked; a pair left at 0 is dropped.
    fn take_from(&mut self, p: Pair, moved: u64) {
        let Some(info) = self.pairs.get_mut(&p) else {
            debug_assert!(moved <= self.floor.untracked, "bug: {p:?} was never made");
            return;
        };
        info.count = info
            .count
            .checked_sub(moved)
            .expect("bug: more count moved from a pair than it had");
        if info.count == 0 {
            self.pairs.remove(&p);
        }
    }

    /// Adds the new pair `p` with `count` and its words, and its heap entry, if it is tracked.
    fn add_new(&mut self, p: Pair, count: u64, words: WordList, vocab: &[Vec<u8>]) {
        if !self.floor.tracks(count) {
            return;
        }
        self.heap.push((count, p), vocab);
        self.pairs.insert(p, PairInfo { count, words });
    }

    /// Applies what the merge of `(a, b)` into `new` moved (the threads' deltas, in word order)
    /// and leaves the deltas empty. The two halves' word lists are gathered on two threads
    /// when the merge was split (they were 55% of this serial step: large corpus, 10K).
    fn apply(
        &mut self,
        (a, b): Pair,
        new: TokenId,
        deltas: &mut [Delta],
        vocab: &[Vec<u8>],
        pool: &rayon::ThreadPool,
    ) {
        let (all, rest) = deltas.split_first_mut().expect("bug: no delta");
        for d in rest.iter_mut() {
            all.left.absorb(&mut d.left);
            all.right.absorb(&mut d.right);
            all.run += std::mem::take(&mut d.run);
        }
        let split = !rest.is_empty();
        let (lefts, rights): (Vec<_>, Vec<_>) = rest
            .iter_mut()
            .map(|d| (&mut d.left.words, &mut d.right.words))
            .unzip();
        let [left_lists, right_lists] = &mut self.lists;
        let floor = &self.floor;
        let left = || gather_lists(&mut all.left, lefts, floor, left_lists);
        let right = || gather_lists(&mut all.right, rights, floor, right_lists);
        if split {
            pool.join(left, right);
        } else {
            left();
            right();
        }
        for (left, lists) in [(true, 0), (false, 1)] {
            let Half { slots, ids, .. } = all.half(left);
            for x in ids.drain(..) {
                let moved = std::mem::take(&mut slots[x as usize]).sum;
                let words = std::mem::take(&mut self.lists[lists][x as usize]);
                let (from, to) = if left {
                    ((x, a), (x, new))
                } else {
                    ((b, x), (new, x))
                };
                if from != (a, b) {
                    self.take_from(from, moved);
                }
                self.add_new(to, moved, words, vocab);
            }
        }
        let run = std::mem::take(&mut all.run);
        if run > 0 {
            if (b, a) != (a, b) {
                self.take_from((b, a), run);
            }
            let words = deltas.iter_mut().flat_map(|d| d.run_words.drain(..));
            let words = if self.floor.keeps(run) {
                words.collect()
            } else {
                words.for_each(drop);
                WordList::new()
            };
            self.add_new((new, new), run, words, vocab);
        }
    }
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
    train_from(counts, &[], num_merges, num_threads, progress)
}

/// `train`, continued from `start`: merges of an earlier run (merge i makes id 256 + i),
/// applied to the words first; the loop then goes on to `num_merges` in all. On the same words,
/// continuing from the first N merges of a run gives that run's merges exactly: the words and
/// pair counts after applying them are the run's state after N merges.
pub fn train_from(
    counts: WordCounts,
    start: &[Pair],
    num_merges: usize,
    num_threads: usize,
    progress: &mut (dyn FnMut(usize) -> bool + Send),
) -> Result<TrainResult, TrainError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(crate::worker_count(num_threads))
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
                if 256 + num_merges.max(start.len()) <= 1 << 16 {
                    merge_loop::<u16>(counts, start, num_merges, &pool, guess_floor, &mut report)
                } else {
                    merge_loop::<u32>(counts, start, num_merges, &pool, guess_floor, &mut report)
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

/// Runs `f` on this thread of `pool` with the pool's other threads (up to one per core) kept
/// awake: each looks for jobs without ever going to sleep until `f` returns. A merge split over
/// the threads waits for its slowest part; a rayon thread that found no work for a moment goes
/// to sleep, and waking it took about as long as the merges of 1,000-9,999 words saved by
/// being split (on the large corpus, split over two sleeping threads they were no faster than
/// on one; kept awake, the two merge them in two thirds of one thread's time). The cost is
/// that the other cores stay busy during the serial parts of the loop too.
fn with_pool_awake<R>(pool: &rayon::ThreadPool, f: impl FnOnce() -> R) -> R {
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

/// `train_from` on the pool's thread, with tokens stored as `T` (which holds every id made).
fn merge_loop<T: Token>(
    counts: WordCounts,
    start: &[Pair],
    num_merges: usize,
    pool: &rayon::ThreadPool,
    guess: Guess,
    progress: &mut (dyn FnMut(usize) -> bool + Send),
) -> Result<TrainResult, TrainError> {
    let mut vocab: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for (index, &pair) in start.iter().enumerate() {
        let limit = vocab.len() as TokenId;
        if pair.0 >= limit || pair.1 >= limit {
            return Err(TrainError::BadStartMerge { index, pair, limit });
        }
        vocab.push(
            [
                vocab[pair.0 as usize].as_slice(),
                vocab[pair.1 as usize].as_slice(),
            ]
            .concat(),
        );
    }
    // Stopped before the loop (each step takes up to ~0.5 s on the large corpus): no new merge.
    let stopped = |vocab| TrainResult {
        merges: start.to_vec(),
        vocab,
    };
    let mut words = Words::<T>::new(counts, pool)?;
    crate::give_back_freed_memory(); // the count table's, before the first index is allocated
    words.apply_merges(start);
    if !progress(start.len()) {
        return Ok(stopped(vocab));
    }
    let pairs = words.pairs(pool)?;
    crate::give_back_freed_memory();
    if !progress(start.len()) {
        return Ok(stopped(vocab));
    }
    let mut state = State::new(
        pairs,
        Floor::new(num_merges.saturating_sub(start.len()), guess),
        &vocab,
    );
    // Only a capacity hint, bounded by the pairs there are now: `num_merges` is not trusted (a
    // huge one would be a huge allocation); the vector grows past the hint if it must.
    let mut merges = Vec::with_capacity(num_merges.min(state.heap.data.len() + start.len() + 1024));
    merges.extend_from_slice(start);
    // One set of buffers per thread, reused by every merge (allocation was 10% of merge time).
    let mut deltas: Vec<Delta> = (0..pool.current_num_threads())
        .map(|_| Delta::default())
        .collect();

    while merges.len() < num_merges {
        // 1. The best pair: pop until an entry's count is current.
        let Some((stored, pair)) = state.heap.pop(&vocab) else {
            if state.floor.untracked > 0 {
                state = state.recount(&words, 0, pool, &vocab)?;
                continue;
            }
            break;
        };
        let current = state.pairs.get(&pair).map_or(0, |info| info.count);
        if current != stored {
            if current > 0 {
                state.heap.push((current, pair), &vocab);
            }
            continue;
        }
        if stored <= state.floor.untracked {
            // An untracked pair may count as much: count them all again.
            state = state.recount(&words, stored, pool, &vocab)?;
            continue;
        }
        state.floor.merged(stored);
        // 2. The new token.
        let new = vocab.len() as TokenId;
        let bytes = [
            vocab[pair.0 as usize].as_slice(),
            vocab[pair.1 as usize].as_slice(),
        ]
        .concat();
        vocab.push(bytes);
        merges.push(pair);
        // 3. Merge it in every word it occurs in, then move the counts.
        let info = state
            .pairs
            .remove(&pair)
            .expect("bug: the best pair is not in the table");
        for d in &mut deltas {
            d.left.grow(vocab.len());
            d.right.grow(vocab.len());
        }
        for lists in &mut state.lists {
            if lists.len() < vocab.len() {
                lists.resize_with(vocab.len().next_power_of_two(), WordList::new);
            }
        }
        let n_jobs = merge_all(
            &mut words.arena,
            &info.words,
            (pair, new),
            pool,
            &mut deltas,
        );
        state.apply(pair, new, &mut deltas[..n_jobs], &vocab, pool);
        if !progress(merges.len()) {
            break;
        }
    }
    progress(merges.len());
    Ok(TrainResult { merges, vocab })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn words_merge_as_the_plain_loop_does_with_u16_and_u32_tokens() {
        let mut next = crate::numbers(7);
        for _ in 0..3000 {
            // Lengths around the 64-token mask and the units; few ids, so pairs repeat.
            let len = next(80) as usize;
            let word: Vec<TokenId> = (0..len).map(|_| 97 + next(3) as TokenId).collect();
            let pair = (97 + next(3) as TokenId, 97 + next(3) as TokenId);
            let mut plain = Vec::new();
            let mut i = 0;
            while i < len {
                if i + 1 < len && (word[i], word[i + 1]) == pair {
                    plain.push(300);
                    i += 2;
                } else {
                    plain.push(word[i]);
                    i += 1;
                }
            }
            // What moved, as (kind, neighbour).
            fn record(moves: &mut Vec<(u8, TokenId)>) -> impl FnMut(Moved) + '_ {
                |m| {
                    moves.push(match m {
                        Moved::Left(x) => (0, x),
                        Moved::Right(y) => (1, y),
                        Moved::Run => (2, 0),
                    })
                }
            }
            let mut moves = Vec::new();
            let mut narrow: Vec<u16> = word.iter().map(|&t| t as u16).collect();
            narrow.resize(len.div_ceil(8) * 8, 97);
            let n = merge_word(&mut narrow, len, pair, 300, record(&mut moves));
            let narrow: Vec<TokenId> = narrow[..n].iter().map(|&t| t as TokenId).collect();
            let mut wide = word.clone();
            wide.resize(len.div_ceil(4) * 4, 97);
            let mut wide_moves = Vec::new();
            let n = merge_word(&mut wide, len, pair, 300, record(&mut wide_moves));
            assert_eq!(narrow, plain, "{word:?} {pair:?}");
            assert_eq!(wide[..n], plain[..], "{word:?} {pair:?}");
            assert_eq!(moves.is_empty(), plain.len() == len || len < 3);
            assert_eq!(moves, wide_moves);
            // Token by token (the path of words past 64 tokens), the same moves.
            let mut by_token = word.clone();
            let mut token_moves = Vec::new();
            let n = merge_long_word(&mut by_token, len, pair, 300, record(&mut token_moves));
            assert_eq!(by_token[..n], plain[..], "{word:?} {pair:?}");
            assert_eq!(moves, token_moves, "{word:?} {pair:?}");
            // Each occurrence moves its left and right neighbours, or a run between two.
            let merged = len - plain.len();
            let runs = token_moves.iter().filter(|m| m.0 == 2).count();
            let lefts = token_moves.iter().filter(|m| m.0 == 0).count();
            assert_eq!(
                lefts + runs,
                merged - usize::from(plain.first() == Some(&300))
            );
        }
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
            let more = train_from(counts(&words), &full.merges[..n], 14, 2, &mut |_| true);
            let more = more.unwrap();
            assert_eq!(more.merges, full.merges);
            assert_eq!(more.vocab, full.vocab);
        }
        let bad = train_from(counts(&words), &[(97, 256)], 3, 1, &mut |_| true);
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

    #[test]
    fn progress_is_told_on_the_calling_thread_and_stops_the_loop() {
        let mut next = crate::numbers(99);
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

    #[test]
    fn untracked_pairs_and_recounts_give_the_same_merges() {
        // Words of a small alphabet with skewed counts, so that merges make many new pairs.
        let mut next = crate::numbers(12345);
        let words: Vec<(Vec<u8>, u64)> = (0..4000)
            .map(|_| {
                let len = 2 + next(12) as usize;
                let word = (0..len).map(|_| b"abcdeeefgh"[next(10) as usize]).collect();
                (word, 1 + next(50) * next(50))
            })
            .collect();
        let run_as = |wide: bool, guess: Guess, threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut wc = WordCounts::default();
            for (w, n) in &words {
                wc.add(w, *n).unwrap();
            }
            pool.install(|| match wide {
                false => merge_loop::<u16>(wc, &[], 2000, &pool, guess, &mut |_| true),
                true => merge_loop::<u32>(wc, &[], 2000, &pool, guess, &mut |_| true),
            })
            .unwrap()
        };
        let run = |guess: Guess, threads: usize| run_as(false, guess, threads);
        let all = run(|_, _, _| None, 1);
        assert!(all.merges.len() > 1000);
        // Tokens stored as u32 (vocabularies past 65,536) give the same merges.
        for threads in [1, 3] {
            let wide = run_as(true, guess_floor, threads);
            assert_eq!(wide.merges, all.merges);
            assert_eq!(wide.vocab, all.vocab);
        }
        // Every new pair below the last merge's count goes untracked: recounts all the way.
        static RECOUNTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        for threads in [1, 3] {
            RECOUNTS.store(0, std::sync::atomic::Ordering::Relaxed);
            let few = run(
                |history, _, recounts| {
                    RECOUNTS.fetch_max(recounts, std::sync::atomic::Ordering::Relaxed);
                    history.last().copied()
                },
                threads,
            );
            assert_eq!(few.merges, all.merges);
            assert_eq!(few.vocab, all.vocab);
            assert!(RECOUNTS.load(std::sync::atomic::Ordering::Relaxed) > 10);
        }
        // The guess of the real loop, at a target it reaches.
        let guessed = run(guess_floor, 1);
        assert_eq!(guessed.merges, all.merges);
    }
}
