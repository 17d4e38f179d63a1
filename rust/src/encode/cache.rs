//! The encoder's cache of pretoken → ids: on real text 90% of pretokens of 2+ bytes were seen
//! before, so a lookup, not BPE, is the common path. Keys (`key_at`), slots with the ids inline
//! or spilled, tails of longer pretokens, and long words by their bytes; what to do on a miss
//! (BPE, `merge.rs`) and which cache a call uses (`encoder.rs`) are the caller's.

use super::parts::RecentParts;
use crate::types::{FastMap, TokenId};

/// Pretokens longer than 15 bytes are cached by their bytes up to this length, while their
/// bytes fit in `LONG_BYTES_PER_ENTRY` × the table's entry limit (8 MB of 2^20). Why so many
/// and so long: with at most 2^15 entries of up to 256 bytes, the pretokens of 16-64 bytes past
/// that cap (a large corpus has tens of thousands) missed every time, a fifth of a warm pass,
/// and runs of over 256 bytes (box drawing, CJK sentences) went through the heap every time.
pub const LONG_WORD: usize = 16 << 10;
const LONG_BYTES_PER_ENTRY: usize = 8;

/// Text bytes per distinct pretoken a call's cache is first sized for (`Cache::expect_text`):
/// the large benchmark corpus has one per 55 bytes in its first 12.5 MB, one per 105-130 in
/// 100 MB, so a table sized at one per 128 bytes is rarely larger than the one its doublings
/// would reach.
const BYTES_PER_ENTRY: usize = 128;
/// The table takes no more entries past this many (a 64 MB table at most): the 100 MB of text
/// the encoding benchmark reads has 775 K distinct pretokens, and with a cap of 2^18 every word
/// first seen past it missed. A call on several threads shares this budget between their
/// caches, so its memory does not grow with the thread count. (Caps at 3/4 of a power of two,
/// which would fill the table that a cap of 2^20 leaves half full, were no faster on 2 threads
/// and faulted in more pages.)
pub const ENTRIES: usize = 1 << 20;
/// The least entries per thread.
const MIN_ENTRIES: usize = 1 << 16;
/// The cap for `encode_iterable`, whose promise is memory that does not grow with the input.
pub const STREAM_ENTRIES: usize = 1 << 18;

/// Pretokens split before their cache lookups (see `Encoder::encode_batch_of`).
pub const BATCH: usize = 256;

/// How far ahead of a lookup its slot is asked for (see `Cache::get_run`).
pub const AHEAD: usize = 40;

/// Room for the pretokens waiting for their lookups: byte ranges and cache keys (how many wait
/// is the scanner's local count: see `Encoder::encode_into`).
pub struct Batch {
    pub spans: [(usize, usize); BATCH],
    /// Packed word and its `types::mix` hash (0 for pretokens that are not packed).
    pub keys: [(u128, u64); BATCH],
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            spans: [(0, 0); BATCH],
            keys: [(0, 0); BATCH],
        }
    }
}

/// Pretokens of 16 to this many bytes are cached in the table with their tails (`get_tail`);
/// longer ones in a map keyed by their bytes (`get_long`).
pub const TAIL_MAX: usize = 255;

/// The cache key of the pretoken `b[s..s + len]`: its first bytes (up to 15) and its length,
/// capped at `TAIL_MAX`, in the top byte. Pretokens of up to 15 bytes are told apart by it
/// alone, longer ones by their tails too (`get_tail`); one formula for all lengths, so the
/// lookup loop has no branch on the length class (one per pretoken, often mispredicted on code,
/// where one-byte pretokens sit among longer ones).
#[inline(always)]
pub fn key_at(b: &[u8], s: usize, len: usize) -> u128 {
    crate::types::pack_at(b, s, len.min(crate::types::PACKED_MAX)) & !(0xff << 120)
        | (len.min(TAIL_MAX) as u128) << 120
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
    &word[end.min(crate::types::PACKED_MAX)..end]
}

/// Up to 4 bytes, zero-padded, as a u32 whose memory is those bytes.
#[inline(always)]
fn tail_word(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w[..b.len()].copy_from_slice(b);
    u32::from_ne_bytes(w)
}

/// A cache of pretoken bytes → ids, for pretokens of up to 15 bytes (nearly all), keyed by the
/// packed word (`key_at`): no pointer chase and no byte comparison per lookup. One-byte
/// pretokens are looked up too rather than mapped by a table beside it: a branch on the length
/// before each lookup was mispredicted often (code mixes one-byte pretokens with longer ones;
/// warm passes 11-15% faster without it).
/// One open-addressed table of 32-byte slots (two per cache line) with up to 4 ids inline (more
/// go to `ids`), at most 3/4 full: a lookup is one multiply and, nearly always, one or two
/// adjacent cache lines. (At most half full, the benchmark's pretokens took a 64 MB table and
/// twice that in fresh pages over its doublings, whose zeroing by the kernel was 11% of a cold
/// per-document run from Python; at 3/4 they take 32 MB, and cold runs are faster, warm ones no
/// slower. Tried and dropped: words of up to 7 bytes in a table of their own with 16-byte slots
/// made warm runs slower, with a branch on the length before each lookup.)
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
    /// Parts of long pretokens of superword tokenizers (made at first use).
    pub parts: RecentParts,
}

/// A slot: a key (`key_at`; 0: empty) and up to `INLINE` ids, the unused ones `NONE`; or, for
/// more ids and for pretokens of 16+ bytes, `[NONE, start, len, NONE]`: the ids (after the
/// tail's bytes, see `get_tail`) are at `start` in `Cache::ids`. Why no length field: four ids
/// then fit beside the key in 32 bytes, and a lookup writes all four and counts the real ones,
/// with no branch on the count.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Slot {
    key: u128,
    ids: [TokenId; INLINE],
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            key: 0,
            ids: [NONE; INLINE],
        }
    }
}

impl Slot {
    /// A slot whose ids are elsewhere: `len` of them at `start` in `Cache::ids`.
    fn spilled(key: u128, start: usize, len: usize) -> Slot {
        Slot {
            key,
            ids: [NONE, start as TokenId, len as TokenId, NONE],
        }
    }

    /// Whether the ids are in the slot itself.
    #[inline(always)]
    fn inline(&self) -> bool {
        self.ids[0] != NONE
    }

    /// Writes all `INLINE` ids at `dst` and returns how many are used (they come first): a
    /// fixed-size copy (a copy of `n` ids was a `memcpy` call per pretoken, 6% of the encoder's
    /// instructions).
    ///
    /// # Safety
    /// `dst` must be valid for writes of `INLINE` ids.
    #[inline(always)]
    unsafe fn write_inline(&self, dst: *mut TokenId) -> usize {
        // SAFETY: the caller's promise
        unsafe { dst.cast::<[TokenId; INLINE]>().write_unaligned(self.ids) };
        inline_len(&self.ids)
    }

    /// Appends the slot's inline ids to `out`.
    #[inline(always)]
    fn append_inline(&self, out: &mut Vec<TokenId>) {
        out.reserve(INLINE);
        let len = out.len();
        // SAFETY: `reserve` made room for `INLINE` ids after `len`; the length covers only
        // the used ones, which `write_inline` wrote.
        unsafe {
            let n = self.write_inline(out.as_mut_ptr().add(len));
            out.set_len(len + n);
        }
    }
}

/// How many of `ids` are not `NONE` (the used ones come first): one SIMD compare, where a sum
/// of four compares was 9 instructions of a ~20-instruction lookup.
#[inline(always)]
fn inline_len(ids: &[TokenId; INLINE]) -> usize {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `ids`.
    unsafe {
        use std::arch::x86_64::*;
        let v = _mm_loadu_si128(ids.as_ptr().cast());
        let unused = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, _mm_set1_epi32(-1))));
        // the unused ids are the last ones: the count is the lowest set bit (4 if none)
        (unused | 1 << INLINE).trailing_zeros() as usize
    }
    #[cfg(not(target_arch = "x86_64"))]
    ids.iter().take_while(|&&id| id != NONE).count()
}

const INLINE: usize = 4;
/// Not an id (`Encoder::new` refuses it): unused inline ids, and the mark of spilled slots.
pub const NONE: TokenId = TokenId::MAX;
/// Slots of a new cache (128 KB).
const FIRST_BITS: u32 = 12;

/// The entries each cache of a call on `threads` threads may take.
pub fn entries_per_thread(threads: usize) -> usize {
    (ENTRIES / threads.max(1)).max(MIN_ENTRIES)
}

/// A table of `n` empty slots, or None if memory is short. Large tables ask Linux for huge
/// pages (2 MB): lookups land all over a table of up to 64 MB, and with 4 KB pages nearly each
/// one missed the TLB too (perf: half the lookup loop's samples sat on the prefetch), which huge
/// pages mostly avoid; THP in its common `madvise` mode gives none unless asked.
fn empty_slots(n: usize) -> Option<Vec<Slot>> {
    let mut slots = Vec::new();
    slots.try_reserve_exact(n).ok()?;
    crate::mem::advise_huge_pages(slots.spare_capacity_mut());
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
            parts: RecentParts::default(),
        }
    }
}

impl Cache {
    /// Appends the ids of the pretokens with `keys[from..]` (key, `types::mix` hash) to `out`
    /// while each one's are inline in its first slot, the common case; returns the index of the
    /// first that is not (`keys.len()` if none), for `get` and the others to decide. Each slot
    /// is asked for `AHEAD` pretokens before it is read. One branch per pretoken, and the
    /// output's room made once, so the loop keeps its pointers in registers (with `Vec::push`
    /// -like writes and `&mut self` calls inside, it reloaded them for every pretoken).
    #[inline(always)]
    pub fn get_run(&self, keys: &[(u128, u64)], from: usize, out: &mut Vec<TokenId>) -> usize {
        let slots = &self.slots[..];
        out.reserve(INLINE * (keys.len() - from));
        let (dst, mut len) = (out.as_mut_ptr(), out.len());
        let mut i = from;
        while let Some(&(key, hash)) = keys.get(i) {
            if let Some(&(_, ahead)) = keys.get(i + AHEAD) {
                self.prefetch(ahead);
            }
            let slot = &slots[self.home(hash)];
            if slot.key != key || !slot.inline() {
                break;
            }
            // SAFETY: room for `INLINE` ids per pretoken from `from` on was reserved, and each
            // adds at most `INLINE` to `len`; the length covers only the ids written
            len += unsafe { slot.write_inline(dst.add(len)) };
            i += 1;
        }
        // SAFETY: the ids up to `len` were written above (or were there)
        unsafe { out.set_len(len) };
        i
    }

    /// Appends the cached ids of the pretoken of up to 15 bytes with `key` (whose `types::mix`
    /// is `hash`) to `out`; false if it is not cached.
    #[inline(never)]
    pub fn get(&self, key: u128, hash: u64, out: &mut Vec<TokenId>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        // the next line asked for now: a pretoken not found (a new word) is known only at an
        // empty slot, often a line or two on (the home line was asked for by the caller). Cold
        // per-document runs 2-3% faster (large and code, 100 MB), warm ones unchanged.
        crate::mem::prefetch(self.slots.as_ptr().wrapping_add((i + 2) & mask));
        loop {
            let slot = &self.slots[i];
            if slot.key == 0 {
                return false;
            }
            if slot.key == key {
                if slot.inline() {
                    slot.append_inline(out);
                } else {
                    let (at, n) = (slot.ids[1] as usize, slot.ids[2] as usize);
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

    /// The first slot of the key with this `types::mix` hash (`types::hot_slot`'s formula,
    /// from a hash computed once per pretoken).
    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        (hash >> (64 - self.bits)) as usize
    }

    /// Asks the CPU to bring the first slot of the key with this `types::mix` hash into its
    /// cache, ahead of `get_run`.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        // no bounds check: a prefetch of any address is harmless (the index is in bounds)
        let slot = self.slots.as_ptr().wrapping_add(self.home(hash));
        crate::mem::prefetch(slot);
    }

    /// Appends the cached ids of the pretoken `word` of 16 to `TAIL_MAX` bytes to `out`:
    /// `key` is its first 15 bytes and its length (`key_at`), `hash` its `types::mix`;
    /// false if it is not cached. Such an entry keeps the pretoken's last 16 bytes, then any
    /// bytes between those and the first 15 (in u32s), then its ids, in `ids`. Why: in a hash
    /// map keyed by the bytes (as longer pretokens still are), a lookup waited for three lines
    /// one after the other (control bytes, bucket, key bytes), a sixth of a warm pass on
    /// 100 MB; here the slot is asked for ahead, as for short pretokens.
    #[inline(never)]
    pub fn get_tail(&self, key: u128, hash: u64, word: &[u8], out: &mut Vec<TokenId>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        let last = last_16(word);
        let middle = middle(word);
        let words = 4 + middle.len().div_ceil(4);
        loop {
            let slot = &self.slots[i];
            if slot.key == 0 {
                return false;
            }
            if slot.key == key {
                let (at, n) = (slot.ids[1] as usize, slot.ids[2] as usize);
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
        let start = self.ids.len();
        self.ids
            .extend(word[word.len() - 16..].chunks(4).map(tail_word));
        self.ids.extend(middle(word).chunks(4).map(tail_word));
        self.ids.extend_from_slice(ids);
        self.place(Slot::spilled(key, start, ids.len()));
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
            ..Slot::default()
        };
        match slot.ids.get_mut(..ids.len()) {
            Some(inline) => inline.copy_from_slice(ids),
            None => {
                slot = Slot::spilled(key, self.ids.len(), ids.len());
                self.ids.extend_from_slice(ids);
            }
        }
        self.place(slot);
        self.used += 1;
    }

    /// Puts `slot` in the first free place of its probe sequence.
    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = crate::types::hot_slot(slot.key, self.bits);
        while self.slots[i].key != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// `expect` for `bytes` of text, at one entry per `BYTES_PER_ENTRY` bytes.
    pub fn expect_text(&mut self, bytes: usize) {
        self.expect(bytes / BYTES_PER_ENTRY);
    }

    /// Makes the table as large as `entries` entries (at most `limit`) need, at once: for a
    /// long text, whose cache would otherwise be built by doublings, each a new table of fresh
    /// pages for the kernel to zero (twice the final size in all).
    pub fn expect(&mut self, entries: usize) {
        let entries = entries.min(self.limit);
        let mut bits = self.bits;
        while 4 * entries > 3 << bits {
            bits += 1;
        }
        if bits > self.bits {
            self.grow_to(bits); // if memory is short, it grows as it fills instead
        }
    }

    /// Doubles the table; if memory is short, takes no more entries instead.
    fn grow(&mut self) {
        if !self.grow_to(self.bits + 1) {
            self.limit = self.used;
        }
    }

    /// Makes the table `1 << bits` slots; false if memory is short.
    fn grow_to(&mut self, bits: u32) -> bool {
        let Some(slots) = empty_slots(1 << bits) else {
            return false;
        };
        self.bits = bits;
        let old = std::mem::replace(&mut self.slots, slots);
        for slot in old.into_iter().filter(|s| s.key != 0) {
            self.place(slot);
        }
        true
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
        let ids_of = |k: u32| (0..k % 6 + 1).map(|j| k * 7 + j).collect::<Vec<_>>();
        // several doublings as it fills, or sized once by `expect` part way (entries re-placed)
        let n: u32 = 3 << FIRST_BITS;
        for expect_at in [None, Some(n / 5)] {
            let mut cache = Cache::default();
            for k in 0..n {
                if Some(k) == expect_at {
                    let bits = cache.bits;
                    cache.expect(n as usize);
                    assert_eq!(cache.bits, bits + 2);
                    cache.expect(0); // never shrinks
                    assert_eq!(cache.bits, bits + 2);
                }
                cache.insert(crate::types::pack_word(&k.to_le_bytes()), &ids_of(k));
            }
            for k in 0..n {
                let mut out = vec![9];
                let key = crate::types::pack_word(&k.to_le_bytes());
                assert!(cache.get(key, crate::types::mix(key), &mut out), "{k}");
                assert_eq!(out[1..], ids_of(k), "{k}");
            }
            let absent = crate::types::pack_word(b"absent");
            assert!(!cache.get(absent, crate::types::mix(absent), &mut Vec::new()));
            assert!(4 * cache.used <= 3 * cache.slots.len());
            assert_eq!(cache.slots.len(), 4 << FIRST_BITS);
        }
        // `expect` stays within the entry limit
        let mut cache = Cache {
            limit: 1000,
            ..Cache::default()
        };
        cache.expect(1 << 30);
        assert_eq!(cache.slots.len(), 1 << FIRST_BITS);
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
        let key = |w: &[u8]| key_at(w, 0, w.len());
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
            let found = cache.get_tail(key(w), crate::types::mix(key(w)), w, &mut out);
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
            cache.insert(crate::types::pack_word(&k.to_le_bytes()), &[k]);
        }
        assert_eq!(cache.used, 10);
        let key = crate::types::pack_word(&15u32.to_le_bytes());
        assert!(!cache.get(key, crate::types::mix(key), &mut Vec::new()));
    }
}
