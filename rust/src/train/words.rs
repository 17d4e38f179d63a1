//! The merge loop's words and its first pair index.
//!
//! Every word lives in one arena of u32: a 16-byte header (its length now, its length at the
//! start, its count as two u32) and then its tokens, padded to 16 bytes. A word is named by its
//! offset in these 16-byte units, a u32 (arenas up to 64 GB). Why: a merge visits up to millions
//! of words scattered over the arena; with the header beside the tokens a visit is one memory
//! access instead of three (spans, counts, tokens), and words shrink in place.

use rayon::prelude::*;

use super::{merge_word, Pair, TokenId, TrainError};
use crate::count::WordCounts;
use crate::FastMap;

/// u32s per unit; the header is one unit.
pub(super) const UNIT: usize = 4;

/// Units a word of `cap` tokens takes, header included.
#[inline(always)]
pub(super) fn units(cap: usize) -> usize {
    1 + cap.div_ceil(UNIT)
}

/// The count of the word whose header starts at `o`.
#[inline(always)]
pub(super) fn count_at(arena: &[u32], o: usize) -> u64 {
    arena[o + 2] as u64 | (arena[o + 3] as u64) << 32
}

/// The offset one past the word whose header starts at `o`.
#[inline(always)]
pub(super) fn end_at(arena: &[u32], o: usize) -> usize {
    o + units(arena[o + 1] as usize) * UNIT
}

/// The words in one arena, and where each starts (in units).
pub(super) struct Words {
    pub arena: Vec<u32>,
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
pub(super) fn regions(
    arena: &mut [u32],
    bounds: impl IntoIterator<Item = (usize, usize)>,
) -> Vec<&mut [u32]> {
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

impl Words {
    /// Lays the words out in the arena ordered by their bytes, on the pool's threads. The result
    /// does not depend on word order (counts are sums, ties go by bytes), but words that share
    /// pairs then sit together: the merge loop ran 2.5x faster on the large corpus than with
    /// words in hash order. Words of fewer than 2 bytes hold no pair, now or later, and words
    /// counted 0 times weigh nothing (as in SPEC's reference): both are left out.
    pub fn new(counts: WordCounts, pool: &rayon::ThreadPool) -> Result<Self, TrainError> {
        let (short, long) = counts.maps();
        // Packed words with their bytes first (big-endian): sorting the keys sorts the words.
        let mut keys: Vec<(u128, u64)> = pool.install(|| {
            short
                .par_iter()
                .flat_map_iter(|map| {
                    map.iter()
                        .filter(|&(&k, &n)| n > 0 && k.to_le_bytes()[15] >= 2)
                        .map(|(&k, &n)| (u128::from_be_bytes(k.to_le_bytes()), n))
                })
                .collect()
        });
        pool.install(|| keys.par_sort_unstable_by_key(|e| e.0));
        let mut long: Vec<(&[u8], u64)> = long
            .iter()
            .filter(|&(_, &n)| n > 0)
            .map(|(w, &n)| (&w[..], n))
            .collect();
        // Ordered by their first 8 bytes only: enough to put alike words together, and cheap.
        let prefix = |w: &[u8]| u64::from_be_bytes(w[..8].try_into().unwrap_or_default());
        pool.install(|| long.par_sort_unstable_by_key(|e| prefix(e.0)));

        let lens = keys.iter().map(|e| e.0 as u8 as usize);
        let mut refs = Vec::new();
        refs.try_reserve_exact(keys.len() + long.len())
            .map_err(|_| TrainError::OutOfMemory)?;
        let mut at = 0usize;
        for len in lens.chain(long.iter().map(|(w, _)| w.len())) {
            refs.push(u32::try_from(at).map_err(|_| TrainError::TooManyWords)?);
            at += units(len);
        }
        let mut arena = zeroed(at * UNIT)?;

        let write = |region: &mut [u32], o: usize, word: &[u8], n: u64| {
            let len = word.len() as u32;
            region[o..o + UNIT].copy_from_slice(&[len, len, n as u32, (n >> 32) as u32]);
            for (slot, &b) in region[o + UNIT..].iter_mut().zip(word) {
                *slot = b as TokenId;
            }
        };
        // The words in chunks, each filled on its own thread into its own part of the arena.
        let n_short = keys.len();
        let n_all = refs.len();
        let bound = |i: usize| refs.get(i).map_or(at, |&r| r as usize) * UNIT;
        let chunk = n_all.div_ceil(256).max(1);
        let bounds = (0..n_all)
            .step_by(chunk)
            .map(|i| (bound(i), bound((i + chunk).min(n_all))));
        let parts = regions(&mut arena, bounds);
        pool.install(|| {
            parts.into_par_iter().enumerate().for_each(|(k, region)| {
                let first = k * chunk;
                let base = refs[first] as usize * UNIT;
                for (i, &r) in refs.iter().enumerate().skip(first).take(chunk) {
                    let o = r as usize * UNIT - base;
                    match keys.get(i) {
                        Some(&(key, n)) => {
                            let buf = key.to_be_bytes();
                            write(region, o, &buf[..buf[15] as usize], n);
                        }
                        None => write(region, o, long[i - n_short].0, long[i - n_short].1),
                    }
                }
            })
        });
        drop(long);
        drop(keys);
        counts.drop_on(pool);
        Ok(Words { arena, refs })
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
            let o = w as usize * UNIT;
            let mut len = self.arena[o] as usize;
            let t = &mut self.arena[o + UNIT..o + UNIT + len];
            loop {
                let best = t[..len]
                    .windows(2)
                    .filter_map(|p| rank.get(&(p[0], p[1])).map(|&r| (r, (p[0], p[1]))))
                    .min();
                let Some((r, pair)) = best else { break };
                len = merge_word(&mut t[..len], pair, 256 + r, |_| {});
            }
            self.arena[o] = len as u32;
        }
    }

    /// The count of every pair and the words it occurs in, counted on the pool's threads over
    /// runs of words and joined in word order (so that every list comes out sorted). No count
    /// can grow past these later: each occurrence of a pair of tokens (x, y) sits on an
    /// occurrence of the byte pair (last of x, first of y), so when these fit in a u64 every
    /// later count does too.
    pub fn pairs(&self, pool: &rayon::ThreadPool) -> Result<Pairs, TrainError> {
        let arena = &self.arena;
        let one_run = |ws: &[u32]| -> Result<Tally, TrainError> {
            let mut tally = Tally::default();
            for &w in ws {
                let o = w as usize * UNIT;
                let (len, n) = (arena[o] as usize, count_at(arena, o));
                for p in arena[o + UNIT..o + UNIT + len].windows(2) {
                    tally.add((p[0], p[1]), n, w)?;
                }
            }
            Ok(tally)
        };
        let n = pool.current_num_threads();
        let tallies = pool.install(|| {
            runs(&self.refs, n)
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(one_run)
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mut all = Pairs::default();
        for tally in tallies {
            for (p, count, words) in tally.into_pairs() {
                let info = all.entry(p).or_insert(PairInfo {
                    count: 0,
                    words: WordList::new(),
                });
                info.count = info.count.checked_add(count).ok_or_else(|| too_large(p))?;
                if info.words.is_empty() {
                    info.words = WordList::from_vec(words);
                } else {
                    info.words.extend_from_slice(&words);
                }
            }
        }
        // The lists grew by doubling and live through the whole loop: a third of their memory
        // was spare. Shrinking a large block gives its tail back in place (no copy).
        all.values_mut().for_each(|info| info.words.shrink_to_fit());
        Ok(all)
    }
}

/// Pair counts and word lists of one run of words. Byte pairs (all of them, unless training
/// goes on from earlier merges) sit in a table indexed by their two bytes, other pairs get
/// slots after it through a map: a hash lookup per pair occurrence was 3/4 of this step.
struct Tally {
    counts: Vec<u64>,
    words: Vec<Vec<u32>>,
    /// The pairs of the slots past the byte pairs, and their slots.
    others: Vec<Pair>,
    slot_of: FastMap<Pair, usize>,
}

const BYTE_PAIRS: usize = 1 << 16;

impl Default for Tally {
    fn default() -> Self {
        Tally {
            counts: vec![0; BYTE_PAIRS],
            words: vec![Vec::new(); BYTE_PAIRS],
            others: Vec::new(),
            slot_of: FastMap::default(),
        }
    }
}

impl Tally {
    /// Adds an occurrence of `p` in the word `w`, counted `n` times.
    #[inline(always)]
    fn add(&mut self, p: Pair, n: u64, w: u32) -> Result<(), TrainError> {
        let slot = if p.0 < 256 && p.1 < 256 {
            (p.0 as usize) << 8 | p.1 as usize
        } else {
            *self.slot_of.entry(p).or_insert_with(|| {
                self.others.push(p);
                self.counts.push(0);
                self.words.push(Vec::new());
                BYTE_PAIRS + self.others.len() - 1
            })
        };
        let count = &mut self.counts[slot];
        *count = count.checked_add(n).ok_or_else(|| too_large(p))?;
        let words = &mut self.words[slot];
        if words.last() != Some(&w) {
            words.push(w);
        }
        Ok(())
    }

    /// Every pair seen, with its count and words.
    fn into_pairs(self) -> impl Iterator<Item = (Pair, u64, Vec<u32>)> {
        let byte_pair = |slot: usize| ((slot >> 8) as TokenId, (slot & 255) as TokenId);
        let pairs = (0..BYTE_PAIRS).map(byte_pair).chain(self.others);
        pairs
            .zip(self.counts)
            .zip(self.words)
            .filter(|(_, words)| !words.is_empty())
            .map(|((p, count), words)| (p, count, words))
    }
}

/// `n` zeroed u32s; the memory comes zeroed from the system (no pass over it) and is first
/// touched by the threads that fill it. Merges read it all over: it asks for huge pages (with
/// 4 KB pages, a third of the merging step's samples sat on the prefetch of the next word).
fn zeroed(n: usize) -> Result<Vec<u32>, TrainError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u32>(n).map_err(|_| TrainError::OutOfMemory)?;
    // SAFETY: the layout has a nonzero size; a null pointer is turned into an error. The
    // allocation is zeroed, and zero is a valid u32, so all `n` elements are initialised; it
    // was made by the global allocator with the layout of `n` u32s, as `Vec` requires.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<u32>();
        if ptr.is_null() {
            return Err(TrainError::OutOfMemory);
        }
        let mut arena = Vec::from_raw_parts(ptr, n, n);
        crate::advise_huge_pages(&mut arena);
        Ok(arena)
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
            zeroed(usize::MAX / 2),
            Err(TrainError::OutOfMemory)
        ));
        assert_eq!(zeroed(0).unwrap().len(), 0);
        assert!(zeroed(1000).unwrap().iter().all(|&x| x == 0));
    }
}
