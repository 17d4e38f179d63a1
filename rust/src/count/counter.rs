//! The counter: words of a text into the shared table, through a cache of hot words and queues
//! per partition (`Counter`). Reading and cutting the input is `stream.rs`'s and `regions.rs`'s;
//! the table itself is `table.rs`'s.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::long::{self, LongQueue};
use super::table::{add_one, long_part, part_of, Packed, SharedParts, TableError, PARTS};
use super::{CountConfig, CountError};
use crate::pretokenize::Piece;
use crate::types::{hot_slot, pack_at, PACKED_MAX};

/// Counts words into a `WordCounts`, with two layers in front of its maps.
/// Why: the table of a large corpus (millions of words) does not fit in the CPU caches, and
/// lookups that missed memory were 77% of counting time (perf). 1. A cache of hot words, three
/// to a line (4 MB, L3): word frequencies are Zipfian, so it catches nearly all occurrences of
/// words of up to 15 bytes. Two to a line (u64 counts) caught fewer and counted slower; a
/// direct-mapped cache of 512 KB caught too few, and queueing and flushing its misses took a
/// third of counting; smaller sizes counted slower and 8 MB no faster. 2. What it evicts is
/// queued per partition and applied in batches, so one small partition map is updated at a time
/// while it sits in cache. Words longer than `PACKED_MAX` bytes skip the cache and are queued
/// likewise. The partitions are shared by the counters of one count (`Counter::sharing`), each
/// behind a lock taken once a flush: one table for all threads, not one each to sum at the end
/// (summing two cost about 5% of counting the large corpus, and each thread's table held most
/// of the words again).
pub struct Counter {
    hot: Vec<HotSet>,
    /// The keys and cache slots of the last `AHEAD` words, whose lines were asked for: word
    /// `i` at `i % AHEAD`, `n_seen` words so far.
    ahead: [(u128, usize); AHEAD],
    n_seen: usize,
    /// Evicted keys and their counts, per partition.
    queued: Vec<Vec<(Packed, u64)>>,
    /// Words of more than `PACKED_MAX` bytes, queued per partition as the evicted ones are.
    queued_long: Vec<LongQueue>,
    shared: Arc<SharedParts>,
    /// The first table error; kept aside so that the hot loop does not branch on results.
    error: Option<TableError>,
}

/// Three cache entries sharing one line (keys, then u32 counts): a word that misses replaces the
/// least counted of the three, so that a frequent word is not pushed out by a rare one sharing
/// its set. A count that wraps past `u32::MAX` queues 2^32 and goes on from 0. An entry starts
/// as the empty word's key (zero; no pretoken is empty) with a count of 0: an empty entry.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct HotSet {
    keys: [Packed; 3],
    counts: [u32; 3],
}

const HOT_BITS: u32 = 16;
/// Sets (of three entries) in the cache.
const HOT_SLOTS: usize = 1 << HOT_BITS;
/// Spans the scanner hands to `Counter::add_batch` at a time.
const BATCH: usize = 64;
/// How many words after its own a word is looked up in the cache (`Counter::add_batch`; 8 was
/// slower, 32 no faster).
const AHEAD: usize = 16;
/// Evicted counts queued per partition before they are applied (9 MB a thread). Longer queues
/// spread each flush (a lock, a partition map brought into cache) over more counts: shorter ones
/// counted the large corpus slower, longer ones were no faster.
const QUEUE: usize = 1536;
/// Bytes of the queue of long words of each partition (2 MB a thread once all are in use, e.g.
/// in Chinese text). Why queue them: counted one at a time, they were 1.6% of the large
/// corpus's words but 15% of counting's time (perf), and each thread's table of them was summed
/// at the end.
const LONG_QUEUE: usize = 8192;

impl Counter {
    /// A table for counters to share.
    pub fn shared() -> Arc<SharedParts> {
        Arc::new((0..PARTS).map(|_| Mutex::default()).collect())
    }

    /// A counter that counts packed words into `shared`.
    pub fn sharing(shared: &Arc<SharedParts>) -> Self {
        Counter {
            hot: vec![HotSet::default(); HOT_SLOTS],
            ahead: [(0, 0); AHEAD],
            n_seen: 0,
            queued: (0..PARTS).map(|_| Vec::with_capacity(QUEUE)).collect(),
            queued_long: (0..PARTS).map(|_| LongQueue::default()).collect(),
            shared: Arc::clone(shared),
            error: None,
        }
    }
}

impl Counter {
    /// Counts one occurrence of each word `b[start..end]` of `spans`: its key and cache slot
    /// now (asking for the slot's line), its cache lookup `AHEAD` words later. Why: looked up
    /// at once, a word waited for its line (perf: a quarter of this function's samples on the
    /// hit's increment); asked for a batch of 64 at once, the lines' requests queued up.
    fn add_batch(&mut self, b: &[u8], spans: &[(usize, usize)]) {
        // a local, kept in a register: as a field it was loaded and stored for every word
        // (counting a little slower)
        let mut n_seen = self.n_seen;
        for &(start, end) in spans {
            // one-byte words too: a branch of their own was mispredicted more than it saved
            if end - start <= PACKED_MAX {
                let key = pack_at(b, start, end - start);
                let slot = hot_slot(key, HOT_BITS);
                crate::mem::prefetch(self.hot.as_ptr().wrapping_add(slot));
                let at = n_seen % AHEAD;
                let (key, slot) = std::mem::replace(&mut self.ahead[at], (key, slot));
                if n_seen >= AHEAD {
                    self.look_up(key, slot);
                }
                n_seen += 1;
            } else {
                let word = &b[start..end];
                let part = long_part(long::hash_of(word));
                if !self.queued_long[part].fits(word, LONG_QUEUE) {
                    self.flush(part);
                }
                if let Err(e) = self.queued_long[part].push(word, LONG_QUEUE) {
                    self.error.get_or_insert(e);
                }
            }
        }
        self.n_seen = n_seen;
    }

    /// Looks up the words still ahead.
    fn look_up_pending(&mut self) {
        let n = std::mem::take(&mut self.n_seen);
        for i in n.saturating_sub(AHEAD)..n {
            let (key, slot) = self.ahead[i % AHEAD];
            self.look_up(key, slot);
        }
    }

    /// Counts `key` in the hot cache (at `slot`), queueing what it evicts.
    #[inline(always)]
    fn look_up(&mut self, key: u128, slot: usize) {
        let set = &mut self.hot[slot];
        let k = Packed::new(key);
        // which entry holds the key, as bits: one branch for a hit, wherever it sits
        let hit = usize::from(set.keys[0] == k)
            | usize::from(set.keys[1] == k) << 1
            | usize::from(set.keys[2] == k) << 2;
        if hit != 0 {
            let i = hit.trailing_zeros() as usize;
            let (n, wrapped) = set.counts[i].overflowing_add(1);
            set.counts[i] = n;
            if wrapped {
                self.queue(key, 1 << 32);
            }
        } else {
            let c = set.counts;
            let less = usize::from(c[1] < c[0]);
            let victim = if c[2] < c[less] { 2 } else { less };
            let old = std::mem::replace(&mut set.keys[victim], k);
            let evicted = std::mem::replace(&mut set.counts[victim], 1);
            if evicted > 0 {
                self.queue(old.get(), u64::from(evicted));
            }
        }
    }

    #[inline(always)]
    fn queue(&mut self, key: u128, n: u64) {
        let part = part_of(key);
        self.queued[part].push((Packed::new(key), n));
        if self.queued[part].len() >= QUEUE {
            self.flush(part);
        }
    }

    /// Applies the queue of one partition.
    fn flush(&mut self, part: usize) {
        // a poisoned lock means another counter panicked: its error ends the count
        let mut map = self.shared[part]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (map, long) = &mut *map;
        let queue = &mut self.queued[part];
        let result = queue
            .drain(..)
            .try_for_each(|(key, n)| add_one(map, key, n));
        queue.clear();
        let result = result.and(self.queued_long[part].drain_into(long, LONG_QUEUE));
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    /// Counts the words of `text`: split on special tokens (never counted), then pretokenized.
    pub fn add_document(
        &mut self,
        text: &str,
        config: &CountConfig,
        stop: &AtomicBool,
    ) -> Result<(), CountError> {
        let mut result = Ok(());
        config.specials.for_each_piece(text, |piece| {
            if let (Piece::Text(t), Ok(())) = (piece, &result) {
                // byte ranges, not `&str`s: a `str` slice checks both ends for a character
                // boundary (11% of counting's instructions)
                let b = t.as_bytes();
                let mut spans = [(0, 0); BATCH];
                let mut n = 0;
                result = config.pretok.for_each_span(t, stop, |start, end| {
                    spans[n] = (start, end);
                    n += 1;
                    if n == BATCH {
                        self.add_batch(b, &spans);
                        n = 0;
                    }
                });
                self.add_batch(b, &spans[..n]);
            }
        });
        result?;
        match self.error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Flushes the cache and the queues into the shared table (which `WordCounts::from_shared`
    /// takes once every counter has finished).
    pub fn finish(mut self) -> Result<(), TableError> {
        self.look_up_pending();
        for set in std::mem::take(&mut self.hot) {
            for (key, n) in set.keys.into_iter().zip(set.counts) {
                if n > 0 {
                    self.queue(key.get(), u64::from(n));
                }
            }
        }
        for part in 0..PARTS {
            self.flush(part);
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::tests::config;
    use crate::count::WordCounts;
    use crate::types::pack_word;

    #[test]
    fn counts_past_the_hot_cache_are_exact() {
        // far more distinct words than the cache holds, skewed as real text is, so that words
        // are evicted, queued, flushed and met again; long words fill their queues too
        let mut next = crate::testing::numbers(11);
        let pool: Vec<String> = (0..300_000)
            .map(|_| {
                let len = 1 + next(40) as usize;
                (0..len).map(|_| (b'a' + next(26) as u8) as char).collect()
            })
            .collect();
        let mut want: std::collections::HashMap<Vec<u8>, u64> = Default::default();
        let mut text = String::new();
        for _ in 0..800_000 {
            let skew = next(pool.len() as u64) + 1;
            let word = &pool[next(skew) as usize];
            text.push(' ');
            text.push_str(word);
            *want.entry(format!(" {word}").into_bytes()).or_default() += 1;
        }
        let shared = Counter::shared();
        let mut counter = Counter::sharing(&shared);
        counter
            .add_document(&text, &config(&[], 1 << 20, 1), &AtomicBool::new(false))
            .unwrap();
        counter.finish().unwrap();
        let counts = WordCounts::from_shared(shared);
        let mut got = std::collections::HashMap::new();
        counts.for_each(|w, n| {
            assert!(got.insert(w.to_vec(), n).is_none(), "{w:?} twice");
        });
        assert!(want.len() > 3 * HOT_SLOTS, "{} words", want.len());
        assert_eq!(got, want);
    }

    #[test]
    fn a_hot_count_that_wraps_past_u32_is_kept() {
        let shared = Counter::shared();
        let mut counter = Counter::sharing(&shared);
        let key = pack_word(b" the");
        let slot = hot_slot(key, HOT_BITS);
        counter.hot[slot].keys[1] = Packed::new(key);
        counter.hot[slot].counts[1] = u32::MAX - 1;
        for _ in 0..3 {
            counter.look_up(key, slot);
        }
        counter.finish().unwrap();
        let mut got = vec![];
        WordCounts::from_shared(shared).for_each(|w, n| got.push((w.to_vec(), n)));
        assert_eq!(got, [(b" the".to_vec(), (1 << 32) + 1)]);
    }
}
