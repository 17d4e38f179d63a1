//! The merge loop (docs/spec.md §1.5): the best pair from the heap, its new token, the merge in
//! every word that holds it, and the pair counts moved (`State`). Laying out the words, merging
//! one word, splitting a merge over threads and keeping them awake are other modules' (`words.rs`,
//! `deltas.rs`, `runs.rs`, `pool.rs`); the entry points are `train.rs`'s.

use super::arena::Token;
use super::deltas::{Delta, Half};
use super::floor::{first_floor, Floor, Guess};
use super::heap::PairHeap;
use super::pairs::{byte_pairs, PairInfo, Pairs, WordList};
use super::replay::Replay;
use super::runs::merge_all;
use super::token_pairs::token_pairs;
use super::words::Words;
#[cfg(test)]
use super::Superword;
use super::{Limits, Stop, TrainError, TrainResult};
use crate::count::WordCounts;
use crate::types::{FastMap, Pair, TokenId};

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
        let (pairs, left_out) = first_pairs(words, pool, |_| floor.value())?;
        floor.start_at(floor.value(), left_out);
        let mut state = State::new(pairs, floor, vocab);
        state.lists = lists;
        Ok(state)
    }

    /// Makes room in the buffers indexed by token id (the threads' `deltas`, the lists being
    /// gathered) for ids below `n_tokens`.
    fn make_room(&mut self, deltas: &mut [Delta], n_tokens: usize) {
        for d in deltas {
            d.left.grow(n_tokens);
            d.right.grow(n_tokens);
        }
        for lists in &mut self.lists {
            if lists.len() < n_tokens {
                lists.resize_with(n_tokens.next_power_of_two(), WordList::new);
            }
        }
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
            self.apply_run((a, b), new, run, deltas, vocab);
        }
    }

    /// Moves `run`, the count between two merged occurrences of `(a, b)`, from (b, a) to
    /// (new, new), with the words the threads' deltas listed for it.
    fn apply_run(
        &mut self,
        (a, b): Pair,
        new: TokenId,
        run: u64,
        deltas: &mut [Delta],
        vocab: &[Vec<u8>],
    ) {
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

/// The first pair index of the words: by `pairs.rs`'s two passes for words of bytes, by
/// `token_pairs.rs`'s partitions for words that go on from earlier merges (lines of superword
/// training hold millions of distinct pairs, nearly all rare).
fn first_pairs<T: Token>(
    words: &Words<T>,
    pool: &rayon::ThreadPool,
    floor: impl FnOnce(&[u64]) -> u64,
) -> Result<(Pairs, u64), TrainError> {
    if words.replayed {
        token_pairs(words, pool, floor)
    } else {
        byte_pairs(words, pool, floor)
    }
}

/// The bytes of the 256 byte tokens and of the tokens of `start` (merges of an earlier run),
/// each of which may join only tokens made before it.
fn start_vocab(start: &[Pair]) -> Result<Vec<Vec<u8>>, TrainError> {
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
    Ok(vocab)
}

/// `train_from` on the pool's thread, with tokens stored as `T` (which holds every id made).
pub(super) fn merge_loop<T: Token>(
    counts: WordCounts,
    start: &[Pair],
    num_merges: usize,
    limits: Limits,
    pool: &rayon::ThreadPool,
    guess: Guess,
    progress: &mut (dyn FnMut(usize) -> bool + Send),
) -> Result<TrainResult, TrainError> {
    let mut vocab = start_vocab(start)?;
    // Stopped before the loop (each step takes up to ~0.5 s on the large corpus): no new merge.
    let stopped = |vocab| TrainResult {
        merges: start.to_vec(),
        vocab,
        stop: Stop::Interrupted,
    };
    // Before the loop: the words laid out (the merges of `start` applied), then their pairs.
    let replay = (!start.is_empty()).then(|| Replay::new(start, &vocab));
    let mut words = Words::<T>::new(counts, pool, replay.as_ref())?;
    crate::mem::give_back_freed_memory(); // the count table's, before the first index is allocated
    if !progress(start.len()) {
        return Ok(stopped(vocab));
    }
    let to_make = num_merges.saturating_sub(start.len());
    let mut floor = Floor::new(to_make, guess);
    let mut first = 0;
    let (pairs, left_out) = first_pairs(&words, pool, |counts| {
        if !start.is_empty() {
            first = first_floor(counts, 4 * to_make + 4096);
        }
        first
    })?;
    floor.start_at(first, left_out);
    crate::mem::give_back_freed_memory();
    if !progress(start.len()) {
        return Ok(stopped(vocab));
    }
    let mut state = State::new(pairs, floor, &vocab);
    // Only a capacity hint, bounded by the pairs there are now: `num_merges` is not trusted (a
    // huge one would be a huge allocation); the vector grows past the hint if it must.
    let mut merges = Vec::with_capacity(num_merges.min(state.heap.data.len() + start.len() + 1024));
    merges.extend_from_slice(start);
    // One set of buffers per thread, reused by every merge (allocation was 10% of merge time).
    let mut deltas: Vec<Delta> = (0..pool.current_num_threads())
        .map(|_| Delta::default())
        .collect();

    // Why pairs were left out (they stay out: a token's bytes are fixed, and once made, made).
    let (mut too_long, mut refused) = (false, false);
    // The superword rules also refuse a token that exists (the vocabulary holds each once).
    let mut made: FastMap<Vec<u8>, ()> = match limits.superword {
        Some(_) => vocab.iter().map(|t| (t.clone(), ())).collect(),
        None => FastMap::default(),
    };
    let stop = loop {
        if merges.len() >= num_merges {
            break Stop::Full;
        }
        // 1. The best pair: pop until an entry's count is current.
        let Some((stored, pair)) = state.heap.pop(&vocab) else {
            if state.floor.untracked > 0 {
                state = state.recount(&words, 0, pool, &vocab)?;
                continue;
            }
            // A word that held a left-out pair never becomes one token: pairs are left, all
            // refused.
            break match (too_long, refused) {
                (true, _) => Stop::MaxTokenLength,
                (false, true) => Stop::Superword,
                (false, false) => Stop::NoPair,
            };
        };
        let current = state.pairs.get(&pair).map_or(0, |info| info.count);
        if current != stored {
            if current > 0 {
                state.heap.push((current, pair), &vocab);
            }
            continue;
        }
        let (a, b) = (&vocab[pair.0 as usize], &vocab[pair.1 as usize]);
        let long = limits
            .max_token_length
            .is_some_and(|max| a.len() + b.len() > max);
        let refuse = limits.superword.is_some_and(|rules| {
            rules.refuses(a, b) || made.contains_key(&[a.as_slice(), b].concat())
        });
        if long || refuse {
            // Out of the heap for good; its count still moves in the table, but its words
            // are never visited. A recount puts it back, to be left out again.
            let info = state
                .pairs
                .get_mut(&pair)
                .expect("bug: a popped pair is not tracked");
            info.words = WordList::new();
            too_long |= long;
            refused |= refuse;
            continue;
        }
        if stored < limits.min_frequency && state.floor.untracked < limits.min_frequency {
            // Every pair that may be merged, tracked or not, is below `min_frequency`. (The
            // floor does not drop pairs below it: an empty heap then tells exactly why the
            // loop ends.)
            break Stop::MinFrequency;
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
        if limits.superword.is_some() {
            made.insert(bytes.clone(), ());
        }
        vocab.push(bytes);
        merges.push(pair);
        // 3. Merge it in every word it occurs in, then move the counts.
        let info = state
            .pairs
            .remove(&pair)
            .expect("bug: the best pair is not in the table");
        state.make_room(&mut deltas, vocab.len());
        let n_jobs = merge_all(
            &mut words.arena,
            &info.words,
            (pair, new),
            pool,
            &mut deltas,
        );
        state.apply(pair, new, &mut deltas[..n_jobs], &vocab, pool);
        if !progress(merges.len()) {
            break Stop::Interrupted;
        }
    };
    progress(merges.len());
    Ok(TrainResult {
        merges,
        vocab,
        stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::floor::guess_floor;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Words of a small alphabet with skewed counts, so that merges make many new pairs; spaces
    /// and colons for the superword rules.
    fn skewed_words() -> Vec<(Vec<u8>, u64)> {
        let mut next = crate::testing::numbers(12345);
        (0..4000)
            .map(|_| {
                let len = 2 + next(12) as usize;
                let word = (0..len)
                    .map(|_| b"abc: deeefgh"[next(12) as usize])
                    .collect();
                (word, 1 + next(50) * next(50))
            })
            .collect()
    }

    fn run(limits: Limits, wide: bool, guess: Guess, threads: usize) -> TrainResult {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut wc = WordCounts::default();
        for (w, n) in &skewed_words() {
            wc.add(w, *n).unwrap();
        }
        let report = &mut |_| true;
        pool.install(|| match wide {
            false => merge_loop::<u16>(wc, &[], 2000, limits, &pool, guess, report),
            true => merge_loop::<u32>(wc, &[], 2000, limits, &pool, guess, report),
        })
        .unwrap()
    }

    /// Every new pair below the last merge's count goes untracked: recounts all the way.
    fn few(history: &[u64], _: usize, recounts: u32) -> Option<u64> {
        RECOUNTS.fetch_max(recounts, Ordering::Relaxed);
        history.last().copied()
    }
    static RECOUNTS: AtomicU32 = AtomicU32::new(0);

    #[test]
    fn untracked_pairs_and_recounts_give_the_same_merges() {
        let no = Limits::default();
        let all = run(no, false, |_, _, _| None, 1);
        assert!(all.merges.len() > 1000);
        assert_eq!(all.stop, Stop::Full);
        // Tokens stored as u32 (vocabularies past 65,536) give the same merges.
        for threads in [1, 3] {
            let wide = run(no, true, guess_floor, threads);
            assert_eq!(wide.merges, all.merges);
            assert_eq!(wide.vocab, all.vocab);
        }
        for threads in [1, 3] {
            RECOUNTS.store(0, Ordering::Relaxed);
            let few = run(no, false, few, threads);
            assert_eq!(few.merges, all.merges);
            assert_eq!(few.vocab, all.vocab);
            assert!(RECOUNTS.load(Ordering::Relaxed) > 10);
        }
        // The guess of the real loop, at a target it reaches.
        let guessed = run(no, false, guess_floor, 1);
        assert_eq!(guessed.merges, all.merges);
    }

    #[test]
    fn limits_give_the_same_merges_whatever_is_tracked() {
        let all = run(Limits::default(), false, |_, _, _| None, 1);
        let rules = |max_words, colon_space| {
            Some(Superword {
                max_words,
                colon_space,
            })
        };
        let cases = [
            (3000, None, None),
            (1, Some(3), None),
            (3000, Some(4), None),
            (1, None, rules(Some(1), false)),
            (1, None, rules(None, true)),
            (10, Some(6), rules(Some(2), false)),
        ];
        for (min_frequency, max_token_length, superword) in cases {
            let limits = Limits {
                min_frequency,
                max_token_length,
                superword,
            };
            let exact = run(limits, false, |_, _, _| None, 1);
            assert!(exact.merges.len() > 10);
            assert!(exact.merges.len() < 2000 || superword.is_some());
            for (wide, guess, threads) in [(false, few as Guess, 3), (true, guess_floor, 2)] {
                let other = run(limits, wide, guess, threads);
                assert_eq!(other.merges, exact.merges, "{limits:?}");
                assert_eq!(other.stop, exact.stop);
            }
            if let Some(rules) = superword {
                let mut distinct = exact.vocab.clone();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), exact.vocab.len(), "a token was made twice");
                assert!(
                    exact.vocab.iter().all(|t| !rules.refuses(t, b"")),
                    "{limits:?}"
                );
                continue;
            }
            match max_token_length {
                // min_frequency alone ends the run early, and changes no merge before that.
                None => {
                    assert_eq!(exact.merges, all.merges[..exact.merges.len()]);
                    assert_eq!(exact.stop, Stop::MinFrequency);
                }
                Some(max) => assert!(exact.vocab.iter().all(|t| t.len() <= max)),
            }
        }
    }
}
