//! The word table: distinct pretokens and their u64 counts (`WordCounts`), in partitions by hash,
//! with packed keys for words of up to 15 bytes and `long.rs` for longer ones; adding, merging
//! and summing tables. Filling it fast is `counter.rs`'s; its bytes on disk are `counts_file`'s.

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::long::{self, LongWords};
use crate::types::{pack_word, FastMap, PACKED_MAX};

/// Why a word table could not take more counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableError {
    /// Allocation failed.
    Full,
    /// A count would pass `u64::MAX`.
    Overflow,
}

/// Distinct pretokens (as UTF-8 bytes) and how often each occurs; counts are u64 so that no
/// corpus overflows them. Words of up to 15 bytes (nearly all) are packed into a u128 key (no
/// allocation, no byte comparison) and spread over `PARTS` partitions by hash, so that each
/// partition's map stays small enough for the CPU caches when updated in batches (`Counter`).
/// Longer words are spread over as many partitions, so that tables sum on all threads (in one
/// map, they were three quarters of the time of summing two tables of the large corpus).
#[derive(Debug, Clone, PartialEq)]
pub struct WordCounts {
    short: Vec<ShortMap>,
    long: Vec<LongWords>,
}

/// A `pack_word` key stored as two u64s: an entry of it and a u64 count takes 24 bytes, where an
/// aligned u128 made it 32 (the large corpus's table is 2 M of them, mostly looked up in memory).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Packed([u64; 2]);

impl Packed {
    #[inline(always)]
    pub(super) fn new(key: u128) -> Self {
        Packed([key as u64, (key >> 64) as u64])
    }

    /// The key.
    #[inline(always)]
    pub fn get(self) -> u128 {
        u128::from(self.0[1]) << 64 | u128::from(self.0[0])
    }
}

impl std::hash::Hash for Packed {
    /// As the u128 key hashes.
    #[inline(always)]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.get());
    }
}

/// One partition of the packed words and their counts.
pub type ShortMap = FastMap<Packed, u64>;

/// Partitions of the packed words.
pub(super) const PARTS: usize = 256;

#[inline(always)]
pub(super) fn part_of(key: u128) -> usize {
    // Low bits of the mix: the hot cache uses the high ones, so both spread independently.
    let mixed =
        ((key as u64) ^ ((key >> 64) as u64).rotate_left(41)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (mixed >> 24) as usize % PARTS
}

/// The partition of a word longer than `PACKED_MAX` bytes, from its `long::hash_of` (middle
/// bits: the table within uses the low and the high ones).
#[inline(always)]
pub(super) fn long_part(hash: u64) -> usize {
    (hash >> 32) as usize % PARTS
}

impl Default for WordCounts {
    fn default() -> Self {
        WordCounts {
            short: vec![FastMap::default(); PARTS],
            long: vec![LongWords::default(); PARTS],
        }
    }
}

impl WordCounts {
    /// Adds `n` occurrences of `word`.
    #[inline]
    pub fn add(&mut self, word: &[u8], n: u64) -> Result<(), TableError> {
        if word.len() <= PACKED_MAX {
            let key = pack_word(word);
            add_one(&mut self.short[part_of(key)], Packed::new(key), n)
        } else {
            let hash = long::hash_of(word);
            self.long[long_part(hash)].add_hashed(hash, word, n)
        }
    }

    /// Number of distinct words.
    pub fn len(&self) -> usize {
        let long = self.long.iter().map(|m| m.len()).sum::<usize>();
        self.short.iter().map(|m| m.len()).sum::<usize>() + long
    }

    /// Whether no word was counted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(word, count)` for every word, in no particular order.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for (&key, &n) in self.short.iter().flatten() {
            let buf = key.get().to_le_bytes();
            f(&buf[..buf[15] as usize], n);
        }
        for (word, n) in self.long.iter().flat_map(LongWords::iter) {
            f(word, n);
        }
    }

    /// The table's maps: words of up to `PACKED_MAX` bytes as `pack_word` keys, in partitions
    /// and the longer words, each in partitions (so that readers can go over them on several
    /// threads, and free them apart: see `drop_on`).
    #[allow(clippy::type_complexity)]
    pub(crate) fn into_maps(self) -> (Vec<ShortMap>, Vec<LongWords>) {
        (self.short, self.long)
    }

    /// The table that counters shared, once they have all finished (and so let go of it; an
    /// empty table if something still holds it, which would be a bug).
    pub fn from_shared(shared: Arc<SharedParts>) -> WordCounts {
        let Some(parts) = Arc::into_inner(shared) else {
            debug_assert!(false, "bug: the shared table is still held");
            return WordCounts::default();
        };
        let (short, long) = parts
            .into_iter()
            .map(|part| part.into_inner().unwrap_or_else(|p| p.into_inner()))
            .unzip();
        WordCounts { short, long }
    }

    /// The table as counters share it, so that counting adds to it in place: a table counted
    /// apart and merged after costs a pass over all its words (`from_shared` undoes this).
    pub fn into_shared(self) -> Arc<SharedParts> {
        let parts = self.short.into_iter().zip(self.long).map(Mutex::new);
        Arc::new(parts.collect())
    }

    /// Adds every count of `other` into `self`, in place (the larger map absorbs the smaller).
    pub fn merge(&mut self, other: WordCounts) -> Result<(), TableError> {
        for (mine, theirs) in self.short.iter_mut().zip(other.short) {
            add_all(mine, theirs)?;
        }
        for (mine, theirs) in self.long.iter_mut().zip(other.long) {
            mine.absorb(theirs)?;
        }
        Ok(())
    }
}

impl WordCounts {
    /// The sum of the tables of several workers, partition by partition on as many threads.
    pub fn sum(tables: Vec<WordCounts>) -> Result<WordCounts, TableError> {
        type Part = (Vec<ShortMap>, Vec<LongWords>);
        let mut parts: Vec<Part> = (0..PARTS).map(|_| Default::default()).collect();
        let n_threads = tables.len().max(1);
        for table in tables {
            for (part, (short, long)) in parts
                .iter_mut()
                .zip(table.short.into_iter().zip(table.long))
            {
                part.0.push(short);
                part.1.push(long);
            }
        }
        fn fold<M: Default>(
            maps: &mut Vec<M>,
            add: impl Fn(&mut M, M) -> Result<(), TableError>,
        ) -> Result<M, TableError> {
            let mut acc = maps.pop().unwrap_or_default();
            for m in maps.drain(..) {
                add(&mut acc, m)?;
            }
            Ok(acc)
        }
        let fold_part =
            |(short, long): &mut Part| Ok((fold(short, add_all)?, fold(long, LongWords::absorb)?));
        // A pool that cannot start (no memory for the threads' stacks) leaves the work to this
        // thread rather than aborting.
        let summed: Vec<_> = match rayon::ThreadPoolBuilder::new()
            .num_threads(n_threads)
            .build()
        {
            Ok(pool) => pool.install(|| parts.par_iter_mut().map(fold_part).collect()),
            Err(_) => parts
                .iter_mut()
                .map(fold_part)
                .collect::<Result<Vec<_>, _>>(),
        }?;
        let (short, long) = summed.into_iter().unzip();
        Ok(WordCounts { short, long })
    }
}

/// Frees a table's maps on the pool's threads (a partition each: a large table's frees take a
/// tenth of a second on one thread).
pub(crate) fn drop_on<M: Send>(maps: Vec<M>, pool: &rayon::ThreadPool) {
    pool.install(|| maps.into_par_iter().for_each(drop));
}

/// Adds the counts of `from` into `into` (iterating the smaller of the two).
fn add_all<K: std::hash::Hash + Eq>(
    into: &mut FastMap<K, u64>,
    mut from: FastMap<K, u64>,
) -> Result<(), TableError> {
    if into.len() < from.len() {
        std::mem::swap(into, &mut from);
    }
    for (key, n) in from {
        add_one(into, key, n)?;
    }
    Ok(())
}

/// Adds `n` to the count of `key`, refusing to wrap around. The map grows with `try_reserve`
/// (a no-op while it has room), so running out of memory is an error (MemoryError in Python)
/// rather than an abort of the process.
#[inline(always)]
pub(super) fn add_one<K: std::hash::Hash + Eq>(
    map: &mut FastMap<K, u64>,
    key: K,
    n: u64,
) -> Result<(), TableError> {
    map.try_reserve(1).map_err(|_| TableError::Full)?;
    let count = map.entry(key).or_insert(0);
    *count = count.checked_add(n).ok_or(TableError::Overflow)?;
    Ok(())
}

/// The partitions of one count (packed words and longer ones), shared by its counters.
pub(super) type SharedParts = Vec<Mutex<(ShortMap, LongWords)>>;
