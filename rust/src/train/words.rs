//! The merge loop's words and its first pair index.
//!
//! Every word lives in one arena: a 16-byte header (its length now, its length at the start,
//! its count) and then its tokens, padded to 16 bytes. A word is named by its offset in these
//! 16-byte units, a u32 (arenas up to 64 GB). Why: a merge visits up to millions of words
//! scattered over the arena; with the header beside the tokens a visit is one memory access
//! instead of three (spans, counts, tokens), and words shrink in place. Tokens are u16 when
//! every id of the run fits (see `Token`).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::{merge_word, Pair, TokenId, TrainError};
use crate::count::{drop_on, LongWords, ShortMap, WordCounts};
use crate::FastMap;

/// How the arena stores a token id: as a u16 when every id of the run is below 2^16 (up to
/// 65,280 merges), else as a u32. Why: the arena is most of the loop's memory, and laying it
/// out and reading it back are two of its steps; on the large corpus u16 tokens make it 35%
/// smaller, and training's peak RSS lower by about the bytes saved.
pub(super) trait Token: Copy + Eq + Send + Sync + 'static {
    /// Tokens per 16-byte unit; the header is one unit.
    const UNIT: usize = 16 / std::mem::size_of::<Self>();
    /// The id of a token.
    fn id(self) -> TokenId;
    /// The token of an id, which fits (the loop picks the type by its largest id).
    fn of(id: TokenId) -> Self;
    /// The four u32 fields of the header that `h` starts with: 0 the length now, 1 the length
    /// at the start, 2 and 3 the count's low and high halves. Read together, with one bounds
    /// check: field by field they were an eighth of a merge's instructions (callgrind).
    fn header(h: &[Self]) -> [u32; 4];
    /// Sets field `k` of the header `h`.
    fn set_field(h: &mut [Self], k: usize, v: u32);
    /// Bit k set where `block[k] == x`, for a block of `UNIT` tokens.
    fn eq_bits(block: &[Self], x: Self) -> u64;
}

impl Token for u32 {
    #[inline(always)]
    fn id(self) -> TokenId {
        self
    }
    #[inline(always)]
    fn of(id: TokenId) -> Self {
        id
    }
    #[inline(always)]
    fn header(h: &[Self]) -> [u32; 4] {
        *<&[u32; 4]>::try_from(&h[..4]).expect("bug: a header is one unit")
    }
    #[inline(always)]
    fn set_field(h: &mut [Self], k: usize, v: u32) {
        h[k] = v;
    }
    #[inline(always)]
    fn eq_bits(block: &[Self], x: Self) -> u64 {
        let block: &[Self; 4] = block.try_into().expect("bug: a block is one unit");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `block`.
        unsafe {
            use std::arch::x86_64::*;
            let eq = _mm_cmpeq_epi32(
                _mm_loadu_si128(block.as_ptr().cast()),
                _mm_set1_epi32(x as i32),
            );
            _mm_movemask_ps(_mm_castsi128_ps(eq)) as u64
        }
        #[cfg(not(target_arch = "x86_64"))]
        scalar_eq_bits(block, x)
    }
}

impl Token for u16 {
    #[inline(always)]
    fn id(self) -> TokenId {
        self as TokenId
    }
    #[inline(always)]
    fn of(id: TokenId) -> Self {
        debug_assert!(id <= u16::MAX as TokenId, "bug: token {id} stored as a u16");
        id as u16
    }
    #[inline(always)]
    fn header(h: &[Self]) -> [u32; 4] {
        let h: &[u16; 8] = h[..8].try_into().expect("bug: a header is one unit");
        std::array::from_fn(|k| h[2 * k] as u32 | (h[2 * k + 1] as u32) << 16)
    }
    #[inline(always)]
    fn set_field(h: &mut [Self], k: usize, v: u32) {
        h[2 * k] = v as u16;
        h[2 * k + 1] = (v >> 16) as u16;
    }
    #[inline(always)]
    fn eq_bits(block: &[Self], x: Self) -> u64 {
        let block: &[Self; 8] = block.try_into().expect("bug: a block is one unit");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `block`.
        unsafe {
            use std::arch::x86_64::*;
            let eq = _mm_cmpeq_epi16(
                _mm_loadu_si128(block.as_ptr().cast()),
                _mm_set1_epi16(x as i16),
            );
            (_mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) & 0xff) as u64
        }
        #[cfg(not(target_arch = "x86_64"))]
        scalar_eq_bits(block, x)
    }
}

/// `Token::eq_bits` without SIMD.
#[cfg(not(target_arch = "x86_64"))]
fn scalar_eq_bits<T: Token>(block: &[T], x: T) -> u64 {
    block
        .iter()
        .enumerate()
        .map(|(k, &t)| ((t == x) as u64) << k)
        .sum()
}

/// Where the pair (a, b) occurs in the `len` tokens of `t`, which holds the word's whole units
/// (its padding too): bit i is set where a is at i and b at i + 1 (overlapping occurrences
/// too). None for words of more than 64 tokens. Words are compared a unit at a time, into bit
/// masks: a merge visits tens of millions of words, 30% of which have lost the pair since they
/// were listed, and the token-by-token search was a fifth of the merging step.
#[inline(always)]
pub(super) fn pair_bits<T: Token>(t: &[T], len: usize, a: T, b: T) -> Option<u64> {
    if len > 64 {
        return None;
    }
    if len < 2 {
        return Some(0);
    }
    let (mut at_a, mut at_b) = (0u64, 0u64);
    for (k, block) in t[..len.div_ceil(T::UNIT) * T::UNIT]
        .chunks_exact(T::UNIT)
        .enumerate()
    {
        at_a |= T::eq_bits(block, a) << (k * T::UNIT);
        at_b |= T::eq_bits(block, b) << (k * T::UNIT);
    }
    // a at i and b at i + 1, for i + 1 < len
    Some(at_a & (at_b >> 1) & ((1u64 << (len - 1)) - 1))
}

/// Units a word of `cap` tokens takes, header included.
#[inline(always)]
pub(super) fn units<T: Token>(cap: usize) -> usize {
    1 + cap.div_ceil(T::UNIT)
}

/// Sets the length of the word whose header starts at `o`.
#[inline(always)]
pub(super) fn set_len<T: Token>(arena: &mut [T], o: usize, len: usize) {
    T::set_field(&mut arena[o..], 0, len as u32);
}

/// The length now, the length at the start and the count of the word whose header starts at `o`.
#[inline(always)]
fn header_at<T: Token>(arena: &[T], o: usize) -> (usize, usize, u64) {
    let [len, cap, low, high] = T::header(&arena[o..]);
    (len as usize, cap as usize, low as u64 | (high as u64) << 32)
}

/// The offset one past the word whose header starts at `o`.
#[inline(always)]
pub(super) fn end_at<T: Token>(arena: &[T], o: usize) -> usize {
    o + units::<T>(header_at(arena, o).1) * T::UNIT
}

/// The length now and the count of the word whose header starts at `o`, and its tokens with
/// the padding of its last unit.
#[inline(always)]
pub(super) fn word_at<T: Token>(arena: &mut [T], o: usize) -> (usize, u64, &mut [T]) {
    let (len, cap, count) = header_at(arena, o);
    let end = o + units::<T>(cap) * T::UNIT;
    (len, count, &mut arena[o + T::UNIT..end])
}

/// The words in one arena, and where each starts (in units).
pub(super) struct Words<T> {
    pub arena: Vec<T>,
    pub refs: Vec<u32>,
}

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

/// Cuts `arena` into the disjoint regions `lo..hi` (increasing), as mutable slices.
pub(super) fn regions<T>(
    arena: &mut [T],
    bounds: impl IntoIterator<Item = (usize, usize)>,
) -> Vec<&mut [T]> {
    let mut out = Vec::new();
    let mut rest = arena;
    let mut offset = 0;
    for (lo, hi) in bounds {
        let tail = std::mem::take(&mut rest).split_at_mut(lo - offset).1;
        let (region, tail) = tail.split_at_mut(hi - lo);
        out.push(region);
        rest = tail;
        offset = hi;
    }
    out
}

/// `refs` cut into `n` runs of about equal size (none empty).
pub(super) fn runs(refs: &[u32], n: usize) -> std::slice::Chunks<'_, u32> {
    refs.chunks(refs.len().div_ceil(n.max(1)).max(1))
}

impl<T: Token> Words<T> {
    /// Lays the words out in the arena grouped by their first two bytes, on the pool's threads,
    /// straight from counting's tables: a count of each group's size, then every word written at
    /// its group's cursor. The result does not depend on word order (counts are sums, ties go by
    /// bytes), but words that share pairs then sit together: the merge loop ran 2.5x faster on the
    /// large corpus than with words in hash order, and as fast as with the words fully sorted
    /// (which took a copy of the keys and a sort, about half the layout's time). Words of fewer
    /// than 2 bytes hold no pair, now or later, and words counted 0 times weigh nothing (as in the
    /// reference trainer, tests/reference.py): both are left out.
    pub fn new(counts: WordCounts, pool: &rayon::ThreadPool) -> Result<Self, TrainError> {
        let (short, long) = counts.into_maps();
        // Each task takes a run of partitions, short and long words alike.
        let per_task = short.len().div_ceil(pool.current_num_threads()).max(1);
        let tasks: Vec<_> = short.chunks(per_task).zip(long.chunks(per_task)).collect();
        let n_tasks = tasks.len();
        // 1. The units of each task's words, by group.
        let mut sizes: Vec<Vec<usize>> = pool.install(|| {
            tasks
                .par_iter()
                .map(|&(short, long)| {
                    let mut size = vec![0usize; GROUPS];
                    for_each_word(short, long, |w, _| size[group_of(w)] += units::<T>(w.len()));
                    size
                })
                .collect()
        });
        // Groups in order, each task's part of a group after the previous task's: `sizes` turn
        // into where each part starts, and `starts` keeps where each group does.
        let mut starts = Vec::with_capacity(GROUPS + 1);
        let mut at = 0usize;
        for g in 0..GROUPS {
            starts.push(at);
            for size in sizes.iter_mut() {
                at += std::mem::replace(&mut size[g], at);
            }
        }
        starts.push(at);
        // Word references are u32s of units.
        if at as u64 > 1 << 32 {
            return Err(TrainError::TooManyWords);
        }
        let mut arena = zeroed(at * T::UNIT)?;
        // 2. Every part as a slice of its own, written by its task.
        let mut parts: Vec<Vec<&mut [T]>> =
            tasks.iter().map(|_| Vec::with_capacity(GROUPS)).collect();
        {
            let mut bounds: Vec<(usize, usize)> = Vec::with_capacity(GROUPS * n_tasks);
            for g in 0..GROUPS {
                for k in 0..n_tasks {
                    let end = sizes.get(k + 1).map_or(starts[g + 1], |next| next[g]);
                    bounds.push((sizes[k][g] * T::UNIT, end * T::UNIT));
                }
            }
            for (k, region) in regions(&mut arena, bounds).into_iter().enumerate() {
                parts[k % n_tasks].push(region);
            }
        }
        drop(sizes);
        pool.install(|| {
            tasks
                .par_iter()
                .zip(parts.par_iter_mut())
                .for_each(|(&(short, long), parts)| {
                    for_each_word(short, long, |w, n| {
                        let g = group_of(w);
                        let part = std::mem::take(&mut parts[g]);
                        let (word, rest) = part.split_at_mut(units::<T>(w.len()) * T::UNIT);
                        write_word(word, w, n);
                        parts[g] = rest;
                    })
                })
        });
        drop((parts, tasks));
        drop_on(short, pool);
        drop_on(long, pool);
        // 3. The references, read back from the headers, 64 runs of 1,024 groups on the threads.
        let arena_ref = &arena;
        let refs: Vec<Vec<u32>> = pool.install(|| {
            starts
                .par_windows(GROUPS / 64 + 1)
                .step_by(GROUPS / 64)
                .map(|run| {
                    let (mut o, end) = (run[0], run[run.len() - 1]);
                    let mut refs = Vec::new();
                    while o < end {
                        refs.push(o as u32);
                        o = end_at(arena_ref, o * T::UNIT) / T::UNIT;
                    }
                    refs
                })
                .collect()
        });
        let mut all = Vec::new();
        all.try_reserve_exact(refs.iter().map(Vec::len).sum())
            .map_err(|_| TrainError::OutOfMemory)?;
        refs.into_iter().for_each(|r| all.extend(r));
        Ok(Words { arena, refs: all })
    }

    /// Applies `merges` (merge i makes token 256 + i) to every word, as training made them:
    /// merging the adjacent pair of lowest rank until none is left equals applying the merges
    /// one by one in order, since no merge joins a token made after it. One pass per word,
    /// so continuing from N merges costs about one encoding of the distinct words, not N passes.
    pub fn apply_merges(&mut self, merges: &[Pair]) {
        if merges.is_empty() {
            return;
        }
        let mut rank: FastMap<Pair, TokenId> = FastMap::default();
        for (i, &pair) in merges.iter().enumerate() {
            rank.entry(pair).or_insert(i as TokenId);
        }
        for &w in &self.refs {
            let o = w as usize * T::UNIT;
            let (mut len, _, t) = word_at(&mut self.arena, o);
            loop {
                let best = t[..len]
                    .windows(2)
                    .map(|p| (p[0].id(), p[1].id()))
                    .filter_map(|p| rank.get(&p).map(|&r| (r, p)))
                    .min();
                let Some((r, pair)) = best else { break };
                len = merge_word(t, len, pair, 256 + r, |_| {});
            }
            set_len(&mut self.arena, o, len);
        }
    }

    /// The count of every pair and the words it occurs in, on the pool's threads over runs of
    /// words, in two passes: the first counts each pair and the words of the run holding it,
    /// the second writes every list at its exact size, each run into its own part of it (so
    /// that every list comes out sorted). Lists that grew by doubling, then were joined and
    /// shrunk, left the loop more peak RSS (16 MB on the large corpus) and slower. No count can
    /// grow past these later: each
    /// occurrence of a pair of tokens (x, y) sits on an occurrence of the byte pair (last of
    /// x, first of y), so when these fit in a u64 every later count does too.
    pub fn pairs(&self, pool: &rayon::ThreadPool) -> Result<Pairs, TrainError> {
        let arena = &self.arena;
        let word_runs: Vec<&[u32]> = runs(&self.refs, pool.current_num_threads()).collect();
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
        // 2. Every list at its size, cut into one part per run, filled by the runs. The lists
        // are left unwritten until then: zeroing them first took 0.05 s on one thread (large
        // corpus, 10K), first touches of their 130 MB, which the runs now make in parallel.
        let lens: Vec<usize> = (0..n_slots)
            .map(|g| sizes.iter().map(|s| s[g] as usize).sum())
            .collect();
        let mut lists: Vec<Vec<u32>> = Vec::with_capacity(n_slots);
        for &len in &lens {
            let mut list = Vec::new();
            list.try_reserve_exact(len)
                .map_err(|_| TrainError::OutOfMemory)?;
            lists.push(list);
        }
        let mut parts: Vec<Vec<&mut [MaybeUninit<u32>]>> =
            sizes.iter().map(|_| Vec::with_capacity(n_slots)).collect();
        for (g, list) in lists.iter_mut().enumerate() {
            let mut rest = &mut list.spare_capacity_mut()[..lens[g]];
            for (run_parts, run_sizes) in parts.iter_mut().zip(&sizes) {
                let (part, tail) = std::mem::take(&mut rest).split_at_mut(run_sizes[g] as usize);
                run_parts.push(part);
                rest = tail;
            }
        }
        drop(sizes);
        let slots = &slots;
        pool.install(|| {
            word_runs
                .par_iter()
                .zip(parts.par_iter_mut())
                .for_each(|(ws, parts)| {
                    let mut last = vec![u32::MAX; n_slots];
                    for_each_pair(arena, ws, |p, _, w| {
                        let g = slots.find(p);
                        if last[g] != w {
                            last[g] = w;
                            let part = std::mem::take(&mut parts[g]);
                            let (first, rest) = part
                                .split_first_mut()
                                .expect("bug: a list has more words than its first pass counted");
                            first.write(w);
                            parts[g] = rest;
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
        let mut all = Pairs::default();
        all.reserve(counts.iter().filter(|&&c| c > 0).count());
        for (g, (count, list)) in counts.into_iter().zip(lists).enumerate() {
            if !list.is_empty() {
                let words = WordList::from_vec(list);
                all.insert(slots.pair(g), PairInfo { count, words });
            }
        }
        Ok(all)
    }
}

/// Calls `f(pair, count, word)` for every pair occurrence of the words `ws`.
#[inline(always)]
fn for_each_pair<T: Token>(arena: &[T], ws: &[u32], mut f: impl FnMut(Pair, u64, u32)) {
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

/// `n` zeroed tokens; the memory comes zeroed from the system (no pass over it) and is first
/// touched by the threads that fill it. Merges read it all over: it asks for huge pages (with
/// 4 KB pages, a third of the merging step's samples sat on the prefetch of the next word).
fn zeroed<T: Token>(n: usize) -> Result<Vec<T>, TrainError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| TrainError::OutOfMemory)?;
    // SAFETY: the layout has a nonzero size; a null pointer is turned into an error. The
    // allocation is zeroed, and zero is a valid u16 and u32 (the only tokens), so all `n`
    // elements are initialised; it was made by the global allocator with the layout of `n`
    // tokens, as `Vec` requires.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<T>();
        if ptr.is_null() {
            return Err(TrainError::OutOfMemory);
        }
        let mut arena = Vec::from_raw_parts(ptr, n, n);
        crate::advise_huge_pages(&mut arena);
        Ok(arena)
    }
}

/// Groups of words in the arena: one per first two bytes.
const GROUPS: usize = 1 << 16;

/// The group of a word of 2 bytes or more.
#[inline(always)]
fn group_of(w: &[u8]) -> usize {
    (w[0] as usize) << 8 | w[1] as usize
}

/// Calls `f(word, count)` for every word of the partitions `short` and `long` that can hold a
/// pair: 2 bytes or more, counted more than 0 times.
fn for_each_word(short: &[ShortMap], long: &[LongWords], mut f: impl FnMut(&[u8], u64)) {
    for (short, long) in short.iter().zip(long) {
        for (&key, &n) in short {
            let buf = key.get().to_le_bytes();
            let len = buf[15] as usize;
            if n > 0 && len >= 2 {
                f(&buf[..len], n);
            }
        }
        for (word, n) in long.iter() {
            if n > 0 {
                f(word, n);
            }
        }
    }
}

/// Writes the word `w`, counted `n` times, into `slot` (its units): header, then tokens.
fn write_word<T: Token>(slot: &mut [T], w: &[u8], n: u64) {
    let len = w.len() as u32;
    for (k, v) in [len, len, n as u32, (n >> 32) as u32]
        .into_iter()
        .enumerate()
    {
        T::set_field(slot, k, v);
    }
    for (t, &b) in slot[T::UNIT..].iter_mut().zip(w) {
        *t = T::of(b as TokenId);
    }
}

/// The error of a pair count past 2^64 - 1 (only byte pairs can reach it first).
fn too_large((a, b): Pair) -> TrainError {
    TrainError::CountsTooLarge(char::from(a as u8), char::from(b as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_too_large_to_lay_out_is_an_error_not_an_abort() {
        assert!(matches!(
            zeroed::<u32>(usize::MAX / 2),
            Err(TrainError::OutOfMemory)
        ));
        assert_eq!(zeroed::<u16>(0).unwrap().len(), 0);
        assert!(zeroed::<u16>(1000).unwrap().iter().all(|&x| x == 0));
    }
}
