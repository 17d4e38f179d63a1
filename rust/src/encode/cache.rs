//! The encoder's cache of pretoken → ids: on real text 90% of pretokens of 2+ bytes were seen
//! before, so a lookup, not BPE, is the common path.

use crate::train::TokenId;
use crate::FastMap;

/// Pretokens longer than 15 bytes are cached by their bytes up to this length, while their
/// bytes fit in `LONG_BYTES_PER_ENTRY` × the table's entry limit (8 MB of 2^20). The cap was
/// 2^15 entries of up to 256 bytes: 30 MB of the large corpus have 58 K distinct pretokens of
/// 16-64 bytes, and those past the cap missed every time, a fifth of a warm pass; a few runs
/// of over 256 bytes (box drawing, CJK sentences) went through the heap every time, 9% of it.
pub const LONG_WORD: usize = 16 << 10;
const LONG_BYTES_PER_ENTRY: usize = 8;
/// The table takes no more entries past this many (a 64 MB table at most): the 100 MB of text
/// the encoding benchmark reads has 775 K distinct pretokens. The cap was 2^18 (16 MB); words first
/// seen past it missed every time (1.1 M misses in those 100 MB): 2^20 made per-document
/// encoding 15-20% faster. A call on several threads shares this budget between their caches,
/// so its memory does not grow with the thread count.
pub const ENTRIES: usize = 1 << 20;
/// The least entries per thread.
const MIN_ENTRIES: usize = 1 << 16;
/// The cap for `encode_iterable`, whose promise is memory that does not grow with the input.
pub const STREAM_ENTRIES: usize = 1 << 18;

/// Pretokens split before their cache lookups (see `Encoder::encode_batch_of`).
pub const BATCH: usize = 256;

/// Pretokens waiting for their lookups: byte ranges and cache keys.
pub struct Batch {
    pub spans: [(usize, usize); BATCH],
    /// Packed word and its `crate::mix` hash (0 for pretokens that are not packed).
    pub keys: [(u128, u64); BATCH],
    pub len: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            spans: [(0, 0); BATCH],
            keys: [(0, 0); BATCH],
            len: 0,
        }
    }
}

/// Pretokens of 16 to this many bytes are cached in the table with their tails (`get_tail`);
/// longer ones in a map keyed by their bytes (`get_long`).
pub const TAIL_MAX: usize = 255;

/// The key of a pretoken of 16 to `TAIL_MAX` bytes that starts at `b[s..]`: its first 15 bytes
/// and its length (never a short pretoken's key, whose length is at most 15).
#[inline(always)]
pub fn tail_key(b: &[u8], s: usize, len: usize) -> u128 {
    crate::pack_at(b, s, crate::PACKED_MAX) & !(0xff << 120) | (len as u128) << 120
}

/// The last 16 bytes of `word` (16 bytes or more), as a u128 whose memory is those bytes.
#[inline(always)]
fn last_16(word: &[u8]) -> u128 {
    let at = word.len() - 16;
    u128::from_ne_bytes(word[at..].try_into().unwrap_or_default())
}

/// The bytes of `word` (16 bytes or more) between its first 15 and its last 16 (if any).
#[inline(always)]
fn middle(word: &[u8]) -> &[u8] {
    let end = word.len() - 16;
    &word[end.min(crate::PACKED_MAX)..end]
}

/// Up to 4 bytes, zero-padded, as a u32 whose memory is those bytes.
#[inline(always)]
fn tail_word(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w[..b.len()].copy_from_slice(b);
    u32::from_ne_bytes(w)
}

/// A cache of pretoken bytes → ids, for pretokens of up to 15 bytes (nearly all), keyed by the
/// packed word (`crate::pack_word`): no pointer chase and no byte comparison per lookup.
/// One open-addressed table of 32-byte slots (two per cache line) with up to 3 ids inline (more
/// go to `ids`), at most 3/4 full: a lookup is one multiply and, nearly always, one or two
/// adjacent cache lines. (At most half full, the 775 K distinct pretokens of the benchmark's
/// 100 MB took a 64 MB table and 128 MB of fresh pages over its doublings; the kernel zeroing
/// them was 11% of a cold per-document run from Python. At 3/4 they take 32 MB: per-document
/// runs of `encode_profile` (100 MB, a new process each) were 2-6% faster (median and mean
/// of five), warm runs no slower.
/// Tried and dropped: words of up to 7 bytes (68% of lookups) in a table of their own with
/// 16-byte slots made warm runs 5-10% slower, with a branch on the length before each lookup.)
/// (It replaced a direct-mapped array in front of a hash map, whose misses cost 2-3 lines.)
/// Once full the table takes no new entries rather than evicting: frequent pretokens show up
/// early, so the first ones seen are worth keeping and the hit rate stays steady (clearing it
/// when full made encoding 2.4x slower on the small corpus).
pub struct Cache {
    slots: Vec<Slot>,
    /// log2 of `slots.len()`.
    bits: u32,
    used: usize,
    /// Ids of entries with more than `INLINE` ids, and of long pretokens.
    ids: Vec<TokenId>,
    /// Pretokens of 16 to `LONG_WORD` bytes → (start, len) in `ids`.
    long: FastMap<Box<[u8]>, (u32, u32)>,
    /// The bytes of the keys of `long`.
    long_bytes: usize,
    /// Entries past which the table takes no new ones (`ENTRIES` or `STREAM_ENTRIES`).
    pub limit: usize,
    /// The encoding loop's working memory, kept with the cache (one per thread) so that it
    /// is not made again for every call.
    pub batch: Option<Box<Batch>>,
}

/// A slot: a packed word and its ids (`len` 0: empty; `len` > `INLINE`: `ids[0]` is the start
/// of the ids in `Cache::ids`).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    key: u128,
    len: u32,
    ids: [TokenId; INLINE],
}

const INLINE: usize = 3;
/// Slots of a new cache (128 KB).
const FIRST_BITS: u32 = 12;

/// The entries each cache of a call on `threads` threads may take.
pub fn entries_per_thread(threads: usize) -> usize {
    (ENTRIES / threads.max(1)).max(MIN_ENTRIES)
}

/// A table of `n` empty slots, or None if memory is short. Large tables ask Linux for huge
/// pages (2 MB): lookups land all over a table of up to 64 MB, and with 4 KB pages nearly each
/// one missed the TLB too (perf: half the lookup loop's samples sat on the prefetch). With huge
/// pages the loop's samples fell by 17-34%; THP in its common `madvise` mode gives none unless
/// asked.
fn empty_slots(n: usize) -> Option<Vec<Slot>> {
    let mut slots = Vec::new();
    slots.try_reserve_exact(n).ok()?;
    crate::advise_huge_pages(slots.spare_capacity_mut());
    slots.resize(n, Slot::default());
    Some(slots)
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            slots: vec![Slot::default(); 1 << FIRST_BITS],
            bits: FIRST_BITS,
            used: 0,
            ids: Vec::new(),
            long: FastMap::default(),
            long_bytes: 0,
            limit: ENTRIES,
            batch: None,
        }
    }
}

impl Cache {
    /// Appends the cached ids of `key` (whose `crate::mix` is `hash`) to `out`; false if it is
    /// not cached.
    #[inline(always)]
    pub fn get(&self, key: u128, hash: u64, out: &mut Vec<TokenId>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> (64 - self.bits)) as usize;
        loop {
            let slot = &self.slots[i];
            if slot.len == 0 {
                return false;
            }
            if slot.key == key {
                let n = slot.len as usize;
                if n <= INLINE {
                    // all `INLINE` ids, then the length: a fixed-size copy, where a copy of `n`
                    // ids was a `memcpy` call per pretoken (6% of the encoder's instructions),
                    // and `extend_from_slice` + `truncate` 10% of a warm lookup's instructions
                    out.reserve(INLINE);
                    let len = out.len();
                    // SAFETY: `reserve` made room for `INLINE` ids after `len`; all `INLINE`
                    // are written, and the length covers only the first `n` of them.
                    unsafe {
                        out.as_mut_ptr()
                            .add(len)
                            .cast::<[TokenId; INLINE]>()
                            .write_unaligned(slot.ids);
                        out.set_len(len + n);
                    }
                } else {
                    let at = slot.ids[0] as usize;
                    out.extend_from_slice(&self.ids[at..at + n]);
                }
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// The memory the cache holds, roughly.
    pub fn bytes(&self) -> usize {
        let long_entry = std::mem::size_of::<(Box<[u8]>, (u32, u32))>() + 1;
        self.slots.len() * std::mem::size_of::<Slot>()
            + self.ids.capacity() * std::mem::size_of::<TokenId>()
            + self.long.capacity() * long_entry
            + self.long_bytes
    }

    /// Asks the CPU to bring the first slot of the key with this `crate::mix` hash into its
    /// cache, ahead of `get`.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        // no bounds check: a prefetch of any address is harmless (the index is in bounds)
        let slot = self
            .slots
            .as_ptr()
            .wrapping_add((hash >> (64 - self.bits)) as usize);
        crate::prefetch(slot);
    }

    /// Appends the cached ids of the pretoken `word` of 16 to `TAIL_MAX` bytes to `out`:
    /// `key` is its first 15 bytes and its length (`tail_key`), `hash` their `crate::mix`;
    /// false if it is not cached. Such an entry keeps the pretoken's last 16 bytes, then any
    /// bytes between those and the first 15 (in u32s), then its ids, in `ids`. Why: in a hash
    /// map keyed by the bytes (as longer pretokens still are), a lookup waited for three lines
    /// one after the other (control bytes, bucket, key bytes), a sixth of a warm pass on
    /// 100 MB; here the slot is asked for ahead, as for short pretokens.
    #[inline(never)]
    pub fn get_tail(&self, key: u128, hash: u64, word: &[u8], out: &mut Vec<TokenId>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> (64 - self.bits)) as usize;
        let last = last_16(word);
        let middle = middle(word);
        let words = 4 + middle.len().div_ceil(4);
        loop {
            let slot = &self.slots[i];
            if slot.len == 0 {
                return false;
            }
            if slot.key == key {
                let at = slot.ids[0] as usize;
                let n = slot.len as usize;
                let stored = &self.ids[at..at + words + n];
                // SAFETY: `stored` holds `words` u32s (the last 16 bytes, then the middle ones),
                // read as bytes (any bytes are a valid u128 and u8): `insert_tail` wrote them
                // as u32s whose memory is the bytes in order
                let (stored_last, stored_middle) = unsafe {
                    let p = stored.as_ptr();
                    (
                        p.cast::<u128>().read_unaligned(),
                        std::slice::from_raw_parts(p.add(4).cast::<u8>(), middle.len()),
                    )
                };
                if stored_last == last && stored_middle == middle {
                    out.extend_from_slice(&stored[words..]);
                    return true;
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers the ids of a pretoken of 16 to `TAIL_MAX` bytes (see `get_tail`), while the
    /// table has room and the bytes of long pretokens fit their budget.
    pub fn insert_tail(&mut self, key: u128, word: &[u8], ids: &[TokenId]) {
        if self.long_bytes + word.len() > self.limit * LONG_BYTES_PER_ENTRY || !self.room(ids) {
            return;
        }
        self.long_bytes += word.len();
        let start = self.ids.len() as u32;
        self.ids
            .extend(word[word.len() - 16..].chunks(4).map(tail_word));
        self.ids.extend(middle(word).chunks(4).map(tail_word));
        self.ids.extend_from_slice(ids);
        self.place(Slot {
            key,
            len: ids.len() as u32,
            ids: [start, 0, 0],
        });
        self.used += 1;
    }

    /// Whether an entry of `ids` may be added (growing the table first if it is 3/4 full).
    fn room(&mut self, ids: &[TokenId]) -> bool {
        if 4 * (self.used + 1) > 3 * self.slots.len() && self.used < self.limit {
            self.grow();
        }
        self.used < self.limit && !ids.is_empty()
    }

    /// Remembers the ids of `key`, while the table has room (at most `limit` entries).
    pub fn insert(&mut self, key: u128, ids: &[TokenId]) {
        if !self.room(ids) {
            return;
        }
        let mut slot = Slot {
            key,
            len: ids.len() as u32,
            ids: [0; INLINE],
        };
        match slot.ids.get_mut(..ids.len()) {
            Some(inline) => inline.copy_from_slice(ids),
            None => {
                slot.ids[0] = self.ids.len() as u32;
                self.ids.extend_from_slice(ids);
            }
        }
        self.place(slot);
        self.used += 1;
    }

    /// Puts `slot` in the first free place of its probe sequence.
    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = crate::hot_slot(slot.key, self.bits);
        while self.slots[i].len != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// Doubles the table; if memory is short, takes no more entries instead.
    fn grow(&mut self) {
        let Some(slots) = empty_slots(1 << (self.bits + 1)) else {
            self.limit = self.used;
            return;
        };
        self.bits += 1;
        let old = std::mem::replace(&mut self.slots, slots);
        for slot in old.into_iter().filter(|s| s.len != 0) {
            self.place(slot);
        }
    }

    /// Appends the cached ids of a long pretoken to `out`; false if it is not cached.
    pub fn get_long(&self, word: &[u8], out: &mut Vec<TokenId>) -> bool {
        let Some(&(s, l)) = self.long.get(word) else {
            return false;
        };
        out.extend_from_slice(&self.ids[s as usize..(s + l) as usize]);
        true
    }

    /// Remembers the ids of a long pretoken while that map is not full.
    pub fn insert_long(&mut self, word: &[u8], ids: &[TokenId]) {
        if self.long_bytes + word.len() <= self.limit * LONG_BYTES_PER_ENTRY {
            self.long_bytes += word.len();
            self.long
                .insert(word.into(), (self.ids.len() as u32, ids.len() as u32));
            self.ids.extend_from_slice(ids);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keeps_what_it_was_given_through_growth() {
        let mut cache = Cache::default();
        let ids_of = |k: u32| (0..k % 6 + 1).map(|j| k * 7 + j).collect::<Vec<_>>();
        let n: u32 = 3 << FIRST_BITS; // several doublings
        for k in 0..n {
            cache.insert(crate::pack_word(&k.to_le_bytes()), &ids_of(k));
        }
        for k in 0..n {
            let mut out = vec![9];
            let key = crate::pack_word(&k.to_le_bytes());
            assert!(cache.get(key, crate::mix(key), &mut out), "{k}");
            assert_eq!(out[1..], ids_of(k), "{k}");
        }
        let absent = crate::pack_word(b"absent");
        assert!(!cache.get(absent, crate::mix(absent), &mut Vec::new()));
        assert!(4 * cache.used <= 3 * cache.slots.len());
    }

    #[test]
    fn long_pretokens_are_found_by_their_tails() {
        let mut cache = Cache::default();
        // words of 16 to 255 bytes, many with the same first 15 bytes and length
        let words: Vec<Vec<u8>> = (0..3u32 << FIRST_BITS)
            .map(|k| {
                let len = 16 + (k % 240) as usize;
                let mut w = vec![b'x'; len];
                w[len - 4..].copy_from_slice(&(k / 7).to_le_bytes());
                w
            })
            .collect();
        let key = |w: &[u8]| tail_key(w, 0, w.len());
        let ids_of = |k: usize| {
            (0..k % 5 + 1)
                .map(|j| (k * 3 + j) as TokenId)
                .collect::<Vec<_>>()
        };
        for (k, w) in words.iter().enumerate().filter(|(k, _)| k % 3 != 0) {
            cache.insert_tail(key(w), w, &ids_of(k));
        }
        for (k, w) in words.iter().enumerate() {
            let mut out = vec![9];
            let found = cache.get_tail(key(w), crate::mix(key(w)), w, &mut out);
            assert_eq!(found, k % 3 != 0, "{k}");
            assert_eq!(out[1..], if found { ids_of(k) } else { vec![] }, "{k}");
        }
    }

    #[test]
    fn a_full_cache_takes_no_more() {
        let mut cache = Cache {
            limit: 10,
            ..Cache::default()
        };
        for k in 0..20u32 {
            cache.insert(crate::pack_word(&k.to_le_bytes()), &[k]);
        }
        assert_eq!(cache.used, 10);
        let key = crate::pack_word(&15u32.to_le_bytes());
        assert!(!cache.get(key, crate::mix(key), &mut Vec::new()));
    }
}
