//! One cache of short pretokens for all the threads of a batch call (`SharedCache`). With a
//! cache per thread, each thread met every word of its own share of the text as new: on 30 MB
//! of the large corpus, two threads' caches held 1.2× the distinct words of one, each merged by
//! BPE twice, and two tables competed for the CPU's last-level cache. Here a word merged by one
//! thread is found by the others. Only pretokens of up to 15 bytes with at most 4 ids live here
//! (95% of distinct words); the rest, and what does not fit, stay in each thread's `Cache`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::cache::{inline_len, AHEAD, INLINE, NONE};
use crate::types::TokenId;

/// A slot: the packed word (`cache::key_at`) in two halves and up to 4 ids (`NONE` past the
/// last), 32 bytes as in `Cache`. A thread claims an empty slot by swapping `hi` from 0 to
/// `BUSY`, writes the rest, then publishes the key's `hi` (release); a reader that sees that
/// `hi` (acquire) sees the rest. Slots never change once published. `hi` of a word of 1 to 15
/// bytes holds its length in its top byte, so it is neither 0 nor `BUSY`.
#[repr(C, align(32))]
#[derive(Default)]
struct Slot {
    hi: AtomicU64,
    lo: AtomicU64,
    ids: [AtomicU64; 2],
}

const BUSY: u64 = u64::MAX;
/// Ids a slot holds, as in `Cache`.
const SHARED_IDS: usize = INLINE;

/// An open-addressed table that threads read and fill at once, at most 3/4 full; past that it
/// takes no more (the threads' own caches do). It grows only between calls (`reserve`).
pub struct SharedCache {
    slots: Box<[Slot]>,
    bits: u32,
    used: AtomicUsize,
}

impl SharedCache {
    /// A table with room for `entries` (at least 2^12 slots), or None if memory is short.
    pub fn new(entries: usize) -> Option<Self> {
        let bits = slots_for(entries).max(12);
        let mut slots = Vec::new();
        slots.try_reserve_exact(1 << bits).ok()?;
        crate::mem::advise_huge_pages(slots.spare_capacity_mut());
        slots.resize_with(1 << bits, Slot::default);
        Some(SharedCache {
            slots: slots.into_boxed_slice(),
            bits,
            used: AtomicUsize::new(0),
        })
    }

    /// The entries it holds.
    pub fn len(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// This table, or a larger one with its entries, with room for `more` entries besides
    /// (`limit` in all at most); itself if memory is short.
    pub fn reserve(self, more: usize, limit: usize) -> Self {
        let want = (self.len() + more).min(limit);
        if slots_for(want) <= self.bits {
            return self;
        }
        let Some(larger) = SharedCache::new(want) else {
            return self;
        };
        for slot in self.slots.iter() {
            let hi = slot.hi.load(Ordering::Relaxed);
            if hi != 0 && hi != BUSY {
                let key = (hi as u128) << 64 | slot.lo.load(Ordering::Relaxed) as u128;
                let words = slot.ids.each_ref().map(|w| w.load(Ordering::Relaxed));
                larger.put(key, crate::types::mix(key), words);
            }
        }
        larger
    }

    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        (hash >> (64 - self.bits)) as usize
    }

    /// Asks the CPU for the first slot of the key with this `types::mix` hash.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        crate::mem::prefetch(self.slots.as_ptr().wrapping_add(self.home(hash)));
    }

    /// `Cache::get_run` on this table: appends the ids of the pretokens with `keys[from..]`
    /// while each is in its first slot; returns the index of the first that is not.
    #[inline(always)]
    pub fn get_run(&self, keys: &[(u128, u64)], from: usize, out: &mut Vec<TokenId>) -> usize {
        out.reserve(SHARED_IDS * (keys.len() - from));
        let (dst, mut len) = (out.as_mut_ptr(), out.len());
        let mut i = from;
        while let Some(&(key, hash)) = keys.get(i) {
            if let Some(&(_, ahead)) = keys.get(i + AHEAD) {
                self.prefetch(ahead);
            }
            let Some(ids) = self.slots[self.home(hash)].ids_of(key) else {
                break;
            };
            // SAFETY: room for `SHARED_IDS` ids per pretoken from `from` on was reserved, and
            // each adds at most that many to `len`; the length covers only the ids written
            unsafe {
                dst.add(len)
                    .cast::<[TokenId; SHARED_IDS]>()
                    .write_unaligned(ids);
                len += inline_len(&ids);
            }
            i += 1;
        }
        // SAFETY: the ids up to `len` were written above (or were there)
        unsafe { out.set_len(len) };
        i
    }

    /// Appends the ids of `key` (whose `types::mix` is `hash`) to `out`; false if it is not
    /// here (or is being written).
    pub fn get(&self, key: u128, hash: u64, out: &mut Vec<TokenId>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &self.slots[i];
            if slot.hi.load(Ordering::Acquire) == 0 {
                return false;
            }
            if let Some(ids) = slot.ids_of(key) {
                out.extend_from_slice(&ids[..inline_len(&ids)]);
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers the 1 to 4 `ids` of `key` (a pretoken of up to 15 bytes); false if the table
    /// is full.
    pub fn insert(&self, key: u128, hash: u64, ids: &[TokenId]) -> bool {
        debug_assert!((1..=SHARED_IDS).contains(&ids.len()) && key >> 124 == 0);
        if 4 * (self.len() + 1) > 3 * self.slots.len() {
            return false;
        }
        let mut padded = [NONE; SHARED_IDS];
        padded[..ids.len()].copy_from_slice(ids);
        self.put(key, hash, slot_words(&padded));
        true
    }

    /// Puts the ids of `key` in the first free slot of its probe sequence, unless there.
    fn put(&self, key: u128, hash: u64, ids: [u64; 2]) {
        let (hi, lo) = ((key >> 64) as u64, key as u64);
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &self.slots[i];
            match slot
                .hi
                .compare_exchange(0, BUSY, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    slot.lo.store(lo, Ordering::Relaxed);
                    slot.ids[0].store(ids[0], Ordering::Relaxed);
                    slot.ids[1].store(ids[1], Ordering::Relaxed);
                    slot.hi.store(hi, Ordering::Release);
                    self.used.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(seen) if seen == hi && slot.lo.load(Ordering::Relaxed) == lo => return,
                Err(_) => i = (i + 1) & mask,
            }
        }
    }
}

impl Slot {
    /// The ids of `key` if this slot holds it (published).
    #[inline(always)]
    fn ids_of(&self, key: u128) -> Option<[TokenId; SHARED_IDS]> {
        let hi = self.hi.load(Ordering::Acquire);
        if hi != (key >> 64) as u64 || self.lo.load(Ordering::Relaxed) != key as u64 {
            return None;
        }
        let words = self.ids.each_ref().map(|w| w.load(Ordering::Relaxed));
        Some(ids_of_words(words))
    }
}

/// log2 of the slots that hold `entries` at most 3/4 full.
fn slots_for(entries: usize) -> u32 {
    let mut bits = 0;
    while 3 << bits < 4 * entries {
        bits += 1;
    }
    bits
}

/// 4 ids as the two words a slot stores.
fn slot_words(ids: &[TokenId; SHARED_IDS]) -> [u64; 2] {
    let w = |a: TokenId, b: TokenId| a as u64 | (b as u64) << 32;
    [w(ids[0], ids[1]), w(ids[2], ids[3])]
}

/// The inverse of `slot_words`.
#[inline(always)]
fn ids_of_words(words: [u64; 2]) -> [TokenId; SHARED_IDS] {
    let [a, b] = words;
    [
        a as TokenId,
        (a >> 32) as TokenId,
        b as TokenId,
        (b >> 32) as TokenId,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{mix, pack_word};

    fn ids_of(k: u32) -> Vec<TokenId> {
        (0..k % 4 + 1).map(|j| k * 5 + j).collect()
    }

    #[test]
    fn threads_filling_it_at_once_find_every_entry() {
        // four threads insert overlapping halves of the same keys while looking them up
        let shared = SharedCache::new(20_000).unwrap();
        let keys: Vec<u128> = (0..20_000u32)
            .map(|k| pack_word(&k.to_le_bytes()))
            .collect();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let (shared, keys) = (&shared, &keys);
                s.spawn(move || {
                    for k in (t * 2_500..t * 2_500 + 10_000).chain(0..100) {
                        let key = keys[k as usize];
                        let mut out = Vec::new();
                        if shared.get(key, mix(key), &mut out) {
                            assert_eq!(out, ids_of(k));
                        } else {
                            assert!(shared.insert(key, mix(key), &ids_of(k)));
                        }
                    }
                });
            }
        });
        // each key once, found by `get` and by `get_run` after the table grew
        assert_eq!(shared.len(), 17_500);
        let grown = shared.reserve(60_000, 1 << 20);
        assert!(grown.bits > slots_for(20_000));
        let listed: Vec<(u128, u64)> = keys[..17_500].iter().map(|&k| (k, mix(k))).collect();
        let mut out = Vec::new();
        let mut at = 0;
        while at < listed.len() {
            at = grown.get_run(&listed, at, &mut out);
            if let Some(&(key, hash)) = listed.get(at) {
                assert!(grown.get(key, hash, &mut out), "{at}");
                at += 1;
            }
        }
        let want: Vec<TokenId> = (0..17_500).flat_map(ids_of).collect();
        assert_eq!(out, want);
        let absent = pack_word(b"absent");
        assert!(!grown.get(absent, mix(absent), &mut Vec::new()));
    }

    #[test]
    fn a_full_table_takes_no_more() {
        let shared = SharedCache::new(1).unwrap();
        let capacity = 3 * shared.slots.len() / 4;
        for k in 0..capacity as u32 + 10 {
            let key = pack_word(&k.to_le_bytes());
            assert_eq!(shared.insert(key, mix(key), &[k]), (k as usize) < capacity);
        }
        assert_eq!(shared.len(), capacity);
        // `reserve` within its limit keeps the table as it is
        let kept = shared.reserve(1000, capacity);
        assert_eq!(kept.len(), capacity);
        assert_eq!(kept.slots.len() * 3 / 4, capacity);
    }
}
