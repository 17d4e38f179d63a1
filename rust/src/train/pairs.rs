//! The merge loop's first pair index: the count of every pair of the words and the words it
//! occurs in, built in two passes over runs of words on the pool's threads (`byte_pairs`, for
//! words of bytes); the index's types, which `token_pairs.rs` builds for words that go on from
//! earlier merges. The words' layout is `words.rs`'s; keeping the counts up to date is the loop's.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::arena::{header_at, runs, Token};
use super::words::Words;
use super::TrainError;
use crate::types::{FastMap, Pair, TokenId};

/// A pair's count and the words it occurs in: sorted, distinct, and possibly holding words that
/// have lost the pair since (they are skipped when visited).
pub(super) struct PairInfo {
    pub count: u64,
    pub words: WordList,
}

/// A pair's words; most pairs occur in a few words, whose list then needs no allocation.
pub(super) type WordList = smallvec::SmallVec<[u32; 4]>;

/// Every pair of the words, by its ids.
pub(super) type Pairs = FastMap<Pair, PairInfo>;

/// The count of every pair and the words it occurs in, on the pool's threads over runs of
/// words, in two passes: the first counts each pair and the words of the run holding it,
/// the second writes every list at its exact size, each run into its own part of it (so
/// that every list comes out sorted). Lists that grew by doubling, then were joined and
/// shrunk, left the loop more peak RSS (16 MB on the large corpus) and slower. No count can
/// grow past these later: each
/// occurrence of a pair of tokens (x, y) sits on an occurrence of the byte pair (last of
/// x, first of y), so when these fit in a u64 every later count does too.
///
/// Only pairs counted `floor(counts)` times or more are listed (`counts`: every pair's);
/// the largest count of the others is returned beside them.
pub(super) fn byte_pairs<T: Token>(
    words: &Words<T>,
    pool: &rayon::ThreadPool,
    floor: impl FnOnce(&[u64]) -> u64,
) -> Result<(Pairs, u64), TrainError> {
    let word_runs: Vec<&[u32]> = runs(&words.refs, pool.current_num_threads()).collect();
    let (slots, counts, sizes) = count_pairs(&words.arena, &word_runs, pool)?;
    let floor = floor(&counts);
    let kept = Kept::new(&slots, &counts, floor);
    let left_out = counts
        .iter()
        .filter(|&&c| c < floor)
        .max()
        .copied()
        .unwrap_or(0);
    let lists = list_words(&words.arena, &word_runs, &kept, sizes, pool)?;
    let mut all = Pairs::default();
    all.reserve(kept.slots.len());
    for (&g, list) in kept.slots.iter().zip(lists) {
        if !list.is_empty() {
            let words = WordList::from_vec(list);
            all.insert(
                slots.pair(g),
                PairInfo {
                    count: counts[g],
                    words,
                },
            );
        }
    }
    Ok((all, left_out))
}

/// The slots listed by the second pass, numbered from 0: byte pairs by a table, the others by a
/// map of their own (small, unlike all slots' map, so that looking up each occurrence is fast).
struct Kept {
    /// The slot of each kept number.
    slots: Vec<usize>,
    byte_index: Vec<u32>,
    other: FastMap<Pair, u32>,
}

impl Kept {
    fn new(slots: &Slots, counts: &[u64], floor: u64) -> Self {
        let mut kept = Kept {
            slots: Vec::new(),
            byte_index: vec![u32::MAX; BYTE_PAIRS],
            other: FastMap::default(),
        };
        for (g, &count) in counts.iter().enumerate() {
            if count > 0 && count >= floor {
                let k = kept.slots.len() as u32;
                kept.slots.push(g);
                match g.checked_sub(BYTE_PAIRS) {
                    None => kept.byte_index[g] = k,
                    Some(_) => {
                        kept.other.insert(slots.pair(g), k);
                    }
                }
            }
        }
        kept
    }

    /// The number of a pair, if kept.
    #[inline(always)]
    fn of(&self, p: Pair) -> Option<usize> {
        if p.0 < 256 && p.1 < 256 {
            let k = self.byte_index[byte_slot(p)];
            (k != u32::MAX).then_some(k as usize)
        } else if self.other.is_empty() {
            None
        } else {
            self.other.get(&p).map(|&k| k as usize)
        }
    }
}

/// The first pass of `Words::pairs`: the slot of every pair (byte pairs first), its count, and
/// each run's list sizes by slot.
#[allow(clippy::type_complexity)]
fn count_pairs<T: Token>(
    arena: &[T],
    word_runs: &[&[u32]],
    pool: &rayon::ThreadPool,
) -> Result<(Slots, Vec<u64>, Vec<Vec<u32>>), TrainError> {
    // 1. Counts and list sizes, by slot, in each run.
    let tallies = pool.install(|| {
        word_runs
            .par_iter()
            .map(|ws| {
                let mut tally = Tally::default();
                for_each_pair(arena, ws, |p, n, w| tally.add(p, n, w));
                match tally.too_large {
                    Some(p) => Err(too_large(p)),
                    None => Ok(tally),
                }
            })
            .collect::<Result<Vec<_>, TrainError>>()
    })?;
    // Slots past the byte pairs for the other pairs of every run (training that goes on
    // from earlier merges), and each run's sizes by these slots.
    let mut slots = Slots::default();
    for tally in &tallies {
        for &p in &tally.slots.pairs {
            slots.of(p);
        }
    }
    let n_slots = BYTE_PAIRS + slots.pairs.len();
    let mut counts = vec![0u64; n_slots];
    let mut sizes: Vec<Vec<u32>> = Vec::with_capacity(tallies.len());
    for tally in tallies {
        let mut run_sizes = vec![0u32; n_slots];
        let local = (0..BYTE_PAIRS).chain(tally.slots.pairs.iter().map(|&p| slots.find(p)));
        for ((g, count), size) in local.zip(tally.counts).zip(tally.sizes) {
            counts[g] = counts[g]
                .checked_add(count)
                .ok_or_else(|| too_large(slots.pair(g)))?;
            run_sizes[g] = size;
        }
        sizes.push(run_sizes);
    }
    Ok((slots, counts, sizes))
}

/// The second pass of `Words::pairs`: the words of every kept pair, in word order, each list
/// written by the runs at the sizes of the first pass (`sizes`, by run and slot).
fn list_words<T: Token>(
    arena: &[T],
    word_runs: &[&[u32]],
    kept: &Kept,
    sizes: Vec<Vec<u32>>,
    pool: &rayon::ThreadPool,
) -> Result<Vec<Vec<u32>>, TrainError> {
    let n_kept = kept.slots.len();
    let sizes: Vec<Vec<u32>> = sizes
        .into_iter()
        .map(|s| kept.slots.iter().map(|&g| s[g]).collect())
        .collect();
    // 2. Every list at its size, cut into one part per run, filled by the runs. The lists
    // are left unwritten until then: zeroing them first took 0.05 s on one thread (large
    // corpus, 10K), first touches of their 130 MB, which the runs now make in parallel.
    let lens: Vec<usize> = (0..n_kept)
        .map(|k| sizes.iter().map(|s| s[k] as usize).sum())
        .collect();
    let mut lists: Vec<Vec<u32>> = Vec::with_capacity(n_kept);
    for &len in &lens {
        let mut list = Vec::new();
        list.try_reserve_exact(len)
            .map_err(|_| TrainError::OutOfMemory)?;
        lists.push(list);
    }
    let mut parts = run_parts(&mut lists, &lens, &sizes);
    drop(sizes);
    pool.install(|| {
        word_runs
            .par_iter()
            .zip(parts.par_iter_mut())
            .for_each(|(ws, parts)| {
                let mut last = vec![u32::MAX; n_kept];
                for_each_pair(arena, ws, |p, _, w| {
                    let Some(k) = kept.of(p) else { return };
                    if last[k] != w {
                        last[k] = w;
                        let part = std::mem::take(&mut parts[k]);
                        let (first, rest) = part
                            .split_first_mut()
                            .expect("bug: a list has more words than its first pass counted");
                        first.write(w);
                        parts[k] = rest;
                    }
                });
            })
    });
    assert!(
        parts.iter().flatten().all(|part| part.is_empty()),
        "bug: a list has fewer words than its first pass counted"
    );
    drop(parts);
    for (list, len) in lists.iter_mut().zip(lens) {
        // SAFETY: the capacity is at least `len` (reserved above), and the runs wrote all
        // `len` entries: the parts, which cover them, were used up (asserted above).
        unsafe { list.set_len(len) };
    }
    Ok(lists)
}

/// The unwritten room of every list (`lens[g]` words for slot g) cut into one part per run, of
/// the run's size (`sizes`, by run), by run then slot.
fn run_parts<'a>(
    lists: &'a mut [Vec<u32>],
    lens: &[usize],
    sizes: &[Vec<u32>],
) -> Vec<Vec<&'a mut [MaybeUninit<u32>]>> {
    let mut parts: Vec<Vec<&mut [MaybeUninit<u32>]>> = sizes
        .iter()
        .map(|_| Vec::with_capacity(lists.len()))
        .collect();
    for (g, list) in lists.iter_mut().enumerate() {
        let mut rest = &mut list.spare_capacity_mut()[..lens[g]];
        for (run_parts, run_sizes) in parts.iter_mut().zip(sizes) {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(run_sizes[g] as usize);
            run_parts.push(part);
            rest = tail;
        }
    }
    parts
}

/// Calls `f(pair, count, word)` for every pair occurrence of the words `ws`.
#[inline(always)]
pub(super) fn for_each_pair<T: Token>(arena: &[T], ws: &[u32], mut f: impl FnMut(Pair, u64, u32)) {
    for &w in ws {
        let o = w as usize * T::UNIT;
        let (len, _, n) = header_at(arena, o);
        let tokens = &arena[o + T::UNIT..][..len];
        if let Some((&first, rest)) = tokens.split_first() {
            let mut x = first.id();
            for &y in rest {
                f((x, y.id()), n, w);
                x = y.id();
            }
        }
    }
}

/// One run's pair counts and list sizes by slot. Byte pairs (all of them, unless training goes
/// on from earlier merges) sit in a table indexed by their two bytes, other pairs get slots
/// after it through a map: a hash lookup per pair occurrence was 3/4 of this step.
struct Tally {
    counts: Vec<u64>,
    /// How many words of the run hold the slot's pair, and the last of them.
    sizes: Vec<u32>,
    last: Vec<u32>,
    slots: Slots,
    /// The first pair whose count passed 2^64 - 1: the run goes on and reports it at its end.
    too_large: Option<Pair>,
}

const BYTE_PAIRS: usize = 1 << 16;

impl Default for Tally {
    fn default() -> Self {
        Tally {
            counts: vec![0; BYTE_PAIRS],
            sizes: vec![0; BYTE_PAIRS],
            last: vec![u32::MAX; BYTE_PAIRS],
            slots: Slots::default(),
            too_large: None,
        }
    }
}

impl Tally {
    /// Adds an occurrence of `p` in the word `w`, counted `n` times.
    #[inline(always)]
    fn add(&mut self, p: Pair, n: u64, w: u32) {
        let slot = self.slots.of(p);
        if slot == self.counts.len() {
            self.counts.push(0);
            self.sizes.push(0);
            self.last.push(u32::MAX);
        }
        let (count, over) = self.counts[slot].overflowing_add(n);
        self.counts[slot] = count;
        if over {
            self.too_large.get_or_insert(p);
        }
        if self.last[slot] != w {
            self.last[slot] = w;
            self.sizes[slot] += 1;
        }
    }
}

/// The slot of a pair of bytes.
#[inline(always)]
fn byte_slot(p: Pair) -> usize {
    (p.0 as usize) << 8 | p.1 as usize
}

/// Slots of all runs: byte pairs first, then the other pairs in the order first seen.
#[derive(Default)]
struct Slots {
    pairs: Vec<Pair>,
    slot_of: FastMap<Pair, usize>,
}

impl Slots {
    /// The slot of `p`, made if new.
    #[inline(always)]
    fn of(&mut self, p: Pair) -> usize {
        if p.0 < 256 && p.1 < 256 {
            return byte_slot(p);
        }
        self.of_other(p)
    }

    /// `of` for a pair that is not two bytes (training that goes on from earlier merges).
    #[inline(never)]
    fn of_other(&mut self, p: Pair) -> usize {
        *self.slot_of.entry(p).or_insert_with(|| {
            self.pairs.push(p);
            BYTE_PAIRS + self.pairs.len() - 1
        })
    }

    /// The slot of `p`, which has one.
    #[inline(always)]
    fn find(&self, p: Pair) -> usize {
        if p.0 < 256 && p.1 < 256 {
            byte_slot(p)
        } else {
            self.slot_of[&p]
        }
    }

    /// The pair of a slot.
    fn pair(&self, g: usize) -> Pair {
        match g.checked_sub(BYTE_PAIRS) {
            Some(i) => self.pairs[i],
            None => ((g >> 8) as TokenId, (g & 255) as TokenId),
        }
    }
}

/// The error of a pair count past 2^64 - 1 (only byte pairs can reach it first).
fn too_large((a, b): Pair) -> TrainError {
    TrainError::CountsTooLarge(char::from(a as u8), char::from(b as u8))
}
