//! Merge ranks of token pairs for the encoder (`PairTable`): an open-addressed table, narrowed
//! to 8-byte slots when ids and ranks fit in 16 bits, or when ids fit in 21 bits and grow with
//! the rank (then the id stands for the rank), a direct table for pairs of single bytes,
//! and bit filters that settle most pairs that never merge without a lookup. BPE itself, which
//! asks it for ranks, is `merge.rs`'s.

use crate::types::TokenId;

/// A pair's merge as one u64: rank in the high half, merged id in the low half, so the lowest
/// value is the lowest rank; `NO_MERGE` for a pair that never merges.
pub(super) type Merge = u64;
pub(super) const NO_MERGE: Merge = u64::MAX;

/// Merge ranks of token pairs: an open-addressed table keyed by `(left << 32) | right`, at
/// most 4/5 full, 16-byte slots. Why so full: a new word's lookups wait on the table's loads
/// (perf: a third of BPE's time in the cold pass), and a smaller table stays in the CPU's
/// caches more; at most half full, cold passes of the large corpus were 3-7% slower (gpt2,
/// cl100k, o200k; the misses are mostly settled by `MayMerge` before a probe). It replaced a
/// `HashMap<(u32, u32), _>`: one multiply and usually one cache line per lookup instead of
/// hashing a tuple and a probe of control bytes (the miss path looks up ~3 pairs per byte of
/// the pretoken).
pub struct PairTable {
    slots: Vec<(u64, Merge)>,
    /// The same slots in 8 bytes (`a << 48 | b << 32 | rank << 16 | id`) when every id and rank
    /// is below 2^16 - 1, as with GPT-2's and most trained vocabularies; `slots` is then empty.
    /// Half the size: 512 KB for GPT-2, where waiting for the wide table's loads was half of
    /// the miss path's time (perf).
    pub(super) narrow: Vec<u64>,
    /// The same slots in 8 bytes (`a << 42 | b << 21 | id`) when the table is not narrow but
    /// every id is below 2^21 - 1 and merged ids grow with the rank, as with cl100k's and
    /// o200k's (tiktoken's ids are ranks): the id orders merges as the rank does, so it is kept
    /// alone. Half the wide table (1 MB for cl100k, 2 MB for o200k), and `merge_n` compares
    /// ids as i32s four to a SIMD compare. `slots` is then empty.
    pub(super) mid: Vec<u64>,
    bits: u32,
    /// The merges of pairs of single bytes, by `left << 8 | right`: a word's first round looks
    /// up only those, and a 64 K array with the letters' rows hot beats a hash probe. In 4
    /// bytes (`rank << 16 | id`, `u32::MAX` for none) with a narrow table: 256 KB instead of
    /// 512 KB, beside the pair table in the CPU's cache; with a `mid` table, the merged id
    /// alone (`u32::MAX` for none); else `bytes_wide`.
    bytes: Vec<u32>,
    bytes_wide: Vec<Merge>,
    may: MayMerge,
    /// Merge one pair at a time where a merge makes a pair of lower rank (`Rule::one_at_a_time`):
    /// the loops then give up on such a word, and `exact.rs` merges it.
    pub(super) one_at_a_time: bool,
}

/// Whether a pair may have a merge, without the table: a bit per token, set if it is the left
/// (`lefts`) or the right (`rights`) of some merge, and a bit per hash of each merge's pair
/// (`pairs`, 16+ bits per merge, at most 128 KB). Why: a new word's last rounds look up pairs
/// that never merge (63% of the miss path's lookups past the first round on the large corpus),
/// and each was a load from the 1 MB table that missed the CPU's L2 cache (perf: half of the
/// miss path's time). Most tokens are on neither side of any merge (GPT-2: 9,443 lefts and
/// 6,812 rights of 50,257 tokens), which settles 58% of those lookups in 12 KB; the pair bits
/// settle nearly all the rest, and cold per-document encoding is markedly faster.
struct MayMerge {
    lefts: Vec<u64>,
    rights: Vec<u64>,
    pairs: Vec<u64>,
    /// `64 - log2(bits of pairs)`.
    shift: u32,
}

impl MayMerge {
    fn new(n_merges: usize) -> Self {
        let n = n_merges
            .saturating_mul(16)
            .clamp(1 << 12, 1 << 20)
            .next_power_of_two();
        MayMerge {
            lefts: Vec::new(),
            rights: Vec::new(),
            pairs: vec![0; n / 64],
            shift: 64 - n.trailing_zeros(),
        }
    }

    #[inline(always)]
    fn pair_bit(&self, a: TokenId, b: TokenId) -> usize {
        let key = (a as u64) << 32 | b as u64;
        (key.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> self.shift) as usize
    }

    fn add(&mut self, a: TokenId, b: TokenId) {
        for (bits, x) in [
            (&mut self.lefts, a as usize),
            (&mut self.rights, b as usize),
        ] {
            if bits.len() <= x >> 6 {
                bits.resize((x >> 6) + 1, 0);
            }
            bits[x >> 6] |= 1 << (x & 63);
        }
        let bit = self.pair_bit(a, b);
        self.pairs[bit >> 6] |= 1 << (bit & 63);
    }

    /// False if (a, b) has no merge; true if it may have one.
    #[inline(always)]
    fn may(&self, a: TokenId, b: TokenId) -> bool {
        has(&self.lefts, a as usize) && has(&self.rights, b as usize) && {
            let bit = self.pair_bit(a, b);
            has(&self.pairs, bit)
        }
    }
}

/// Whether bit `i` of `bits` is set (false past the end).
#[inline(always)]
fn has(bits: &[u64], i: usize) -> bool {
    bits.get(i >> 6).is_some_and(|&w| w >> (i & 63) & 1 != 0)
}

/// The key of an empty slot: ids are below 2^31 (`MAX_TOKEN_ID`), so no pair has it.
const EMPTY: u64 = u64::MAX;

/// What a merge's rank is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranks {
    /// Its place in the list: GPT-2's merges, CS336's training, HF's BPE.
    Listed,
    /// The id of the token it makes: tiktoken's rule, where ids are ranks and any two adjacent
    /// tokens whose bytes make a token merge (the list then holds every such pair).
    ById,
}

impl PairTable {
    /// The table of `merges` as ((left, right), merged id) in rank order (`ranks`: by place or
    /// by merged id; with `ById`, ordered by id); a pair listed twice keeps its first (lowest)
    /// rank. `byte_ids`: the id of each single byte.
    pub fn new(
        merges: impl ExactSizeIterator<Item = ((TokenId, TokenId), TokenId)>,
        byte_ids: &[TokenId; 256],
    ) -> Self {
        Self::ranked(merges, byte_ids, Ranks::Listed)
    }

    /// `new`, with merges ranked as `ranks` says.
    pub fn ranked(
        merges: impl ExactSizeIterator<Item = ((TokenId, TokenId), TokenId)>,
        byte_ids: &[TokenId; 256],
        ranks_by: Ranks,
    ) -> Self {
        let may = MayMerge::new(merges.len());
        let bits = (merges.len() * 5 / 4 + 1)
            .next_power_of_two()
            .trailing_zeros()
            .max(4);
        let mut table = PairTable {
            slots: vec![(EMPTY, NO_MERGE); 1 << bits],
            narrow: Vec::new(),
            mid: Vec::new(),
            bits,
            bytes: Vec::new(),
            bytes_wide: Vec::new(),
            may,
            one_at_a_time: false,
        };
        let mut largest_id = byte_ids.iter().copied().max().unwrap_or(0) as usize;
        let (mut ranks, mut ids_grow, mut last_id) = (0, true, None);
        for (place, ((a, b), id)) in merges.enumerate() {
            let rank = match ranks_by {
                Ranks::Listed => place,
                Ranks::ById => id as usize,
            };
            largest_id = largest_id.max(a.max(b).max(id) as usize);
            // the id stands for the rank (a mid table) if ids grow with it; by id they do
            ids_grow &= last_id < Some(id) || ranks_by == Ranks::ById;
            (ranks, last_id) = (ranks.max(rank + 1), Some(id));
            table.may.add(a, b);
            let key = (a as u64) << 32 | b as u64;
            let mut i = table.home(key);
            while table.slots[i].0 != EMPTY && table.slots[i].0 != key {
                i = (i + 1) & (table.slots.len() - 1);
            }
            if table.slots[i].0 == EMPTY {
                table.slots[i] = (key, (rank as u64) << 32 | id as u64);
            }
        }
        table.bytes_wide = (0..1 << 16)
            .map(|ab: usize| table.get(byte_ids[ab >> 8], byte_ids[ab & 0xff]))
            .collect();
        if largest_id.max(ranks.saturating_sub(1)) < 0xffff {
            let narrow = |&merge: &Merge| match merge {
                NO_MERGE => u32::MAX,
                _ => (rank_of(merge) as u32) << 16 | id_of(merge),
            };
            table.bytes = table.bytes_wide.iter().map(narrow).collect();
            table.bytes_wide = Vec::new();
            let narrow = |&(key, merge): &(u64, Merge)| match key {
                EMPTY => EMPTY,
                _ => {
                    key >> 32 << 48
                        | (key & 0xffff) << 32
                        | rank_of(merge) << 16
                        | id_of(merge) as u64
                }
            };
            table.narrow = table.slots.iter().map(narrow).collect();
            table.slots = Vec::new();
        } else if largest_id < MID_ID as usize && ids_grow {
            let id = |&merge: &Merge| match merge {
                NO_MERGE => u32::MAX,
                _ => id_of(merge),
            };
            table.bytes = table.bytes_wide.iter().map(id).collect();
            table.bytes_wide = Vec::new();
            let mid = |&(key, merge): &(u64, Merge)| match key {
                EMPTY => EMPTY,
                _ => key >> 32 << 42 | (key & MID_ID) << 21 | id_of(merge) as u64,
            };
            table.mid = table.slots.iter().map(mid).collect();
            table.slots = Vec::new();
        }
        table
    }

    /// The merge of the single bytes a and b.
    #[inline(always)]
    pub(super) fn get_bytes(&self, a: u8, b: u8) -> Merge {
        match (self.bytes.is_empty(), self.mid.is_empty()) {
            (true, _) => self.bytes_wide[(a as usize) << 8 | b as usize],
            (false, true) => widen(self.get_bytes_narrow(a, b)),
            (false, false) => widen_mid(self.get_bytes_mid(a, b)),
        }
    }

    /// `get_bytes` of a narrow table as it stores it: `rank << 16 | id`, `u32::MAX` for none.
    #[inline(always)]
    pub(super) fn get_bytes_narrow(&self, a: u8, b: u8) -> u32 {
        self.bytes[(a as usize) << 8 | b as usize]
    }

    /// `get` of a narrow table as it stores it: `rank << 16 | id`, `u32::MAX` for none (the
    /// low half of the slot). `merge_n` takes its i16 rank and id from this straight: through
    /// a `Merge` and back, BPE of the large corpus's distinct words took about a tenth longer
    /// (`encode_profile ... misses`).
    #[inline(always)]
    pub(super) fn get_narrow(&self, a: TokenId, b: TokenId) -> u32 {
        // a slot: a << 48 | b << 32 | rank << 16 | id
        self.find::<32, 16>(&self.narrow, a, b)
            .map_or(u32::MAX, |slot| slot as u32)
    }

    /// `get` of a mid table as it stores it: the merged id, which stands for the rank
    /// (`u32::MAX` for none).
    #[inline(always)]
    pub(super) fn get_mid(&self, a: TokenId, b: TokenId) -> u32 {
        // a slot: a << 42 | b << 21 | id
        self.find::<21, 21>(&self.mid, a, b)
            .map_or(u32::MAX, |slot| (slot & MID_ID) as u32)
    }

    /// The slot of (a, b) in `slots`, a narrow or mid table, whose slots hold the pair as
    /// `a << B | b` from bit `LOW` up; None if the pair has no merge.
    #[inline(always)]
    fn find<const LOW: u32, const B: u32>(
        &self,
        slots: &[u64],
        a: TokenId,
        b: TokenId,
    ) -> Option<u64> {
        if !self.may.may(a, b) {
            return None;
        }
        let mut i = self.home((a as u64) << 32 | b as u64);
        let mask = slots.len() - 1;
        let pair = (a as u64) << B | b as u64;
        loop {
            let slot = slots[i];
            if slot >> LOW == pair {
                return Some(slot);
            }
            if slot == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// `get_bytes` of a mid table as it stores it (see `get_mid`).
    #[inline(always)]
    pub(super) fn get_bytes_mid(&self, a: u8, b: u8) -> u32 {
        self.bytes[(a as usize) << 8 | b as usize]
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    /// The merge of (a, b): rank << 32 | merged id, or `NO_MERGE`.
    #[inline(always)]
    pub fn get(&self, a: TokenId, b: TokenId) -> Merge {
        if !self.narrow.is_empty() {
            return widen(self.get_narrow(a, b));
        }
        if !self.mid.is_empty() {
            return widen_mid(self.get_mid(a, b));
        }
        if !self.may.may(a, b) {
            return NO_MERGE;
        }
        let key = (a as u64) << 32 | b as u64;
        let mut i = self.home(key);
        let mask = self.slots.len() - 1;
        loop {
            let (k, merge) = self.slots[i];
            if k == key {
                return merge;
            }
            if k == EMPTY {
                return NO_MERGE;
            }
            i = (i + 1) & mask;
        }
    }
}

/// A narrow table's `rank << 16 | id` (`u32::MAX` for none) as a `Merge`.
#[inline(always)]
fn widen(m: u32) -> Merge {
    match m {
        u32::MAX => NO_MERGE,
        m => ((m >> 16) as u64) << 32 | (m & 0xffff) as u64,
    }
}

/// A mid table's id (`u32::MAX` for none) as a `Merge` whose rank is the id.
#[inline(always)]
fn widen_mid(id: u32) -> Merge {
    match id {
        u32::MAX => NO_MERGE,
        id => (id as u64) << 32 | id as u64,
    }
}

/// Ids of a mid table are below this (21 bits, all ones excluded), which is also their mask.
const MID_ID: u64 = (1 << 21) - 1;

pub(super) fn rank_of(merge: Merge) -> u64 {
    merge >> 32
}

pub(super) fn id_of(merge: Merge) -> TokenId {
    merge as TokenId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_mid_and_wide_tables_give_every_merge() {
        // pairs of ids 256.. with merged ids after them: from 256, the narrow table; from
        // 70,000 growing with the rank, the mid one; from 70,000 shrinking, the wide one
        for (shift, grow) in [(0, true), (70_000, true), (70_000, false)] {
            let byte_ids: [TokenId; 256] = std::array::from_fn(|b| b as TokenId + shift);
            let merged = |r: u32| shift + 256 + if grow { r } else { 5000 - r };
            let merges: Vec<_> = (0..5000u32)
                .map(|r| ((shift + r % 300, shift + r / 7), merged(r)))
                .collect();
            let table = PairTable::new(merges.clone().into_iter(), &byte_ids);
            assert_eq!(table.narrow.is_empty(), shift > 0);
            assert_eq!(table.mid.is_empty(), shift == 0 || !grow);
            let mut first = std::collections::HashMap::new();
            for (rank, &(pair, id)) in merges.iter().enumerate() {
                first.entry(pair).or_insert((rank as u64, id));
            }
            // a mid table gives the id as the rank: the same order
            let want = |pair| match first.get(&pair) {
                None => NO_MERGE,
                Some(&(_, id)) if !table.mid.is_empty() => (id as u64) << 32 | id as u64,
                Some(&(rank, id)) => rank << 32 | id as u64,
            };
            for a in shift..shift + 300 {
                for b in shift..shift + 720 {
                    assert_eq!(table.get(a, b), want((a, b)), "({a}, {b})");
                }
            }
            assert_eq!(table.get_bytes(3, 0), want((shift + 3, shift)));
        }
    }

    #[test]
    fn the_filter_never_hides_a_merge() {
        // random pairs of 2,000 ids, most tokens on one side only or on none; every pair of
        // ids up to 2,100 (past the last id in any merge) looked up
        let byte_ids: [TokenId; 256] = std::array::from_fn(|b| b as TokenId);
        let mut numbers = crate::testing::numbers(7);
        let mut next = |n: u64| numbers(n) as TokenId;
        for n_merges in [10, 3000] {
            let merges: Vec<_> = (0..n_merges)
                .map(|r| ((next(1000), 1000 + next(1000)), 2000 + r))
                .collect();
            let table = PairTable::new(merges.clone().into_iter(), &byte_ids);
            let mut first = std::collections::HashMap::new();
            for (rank, &(pair, id)) in merges.iter().enumerate() {
                first.entry(pair).or_insert((rank as u64) << 32 | id as u64);
            }
            let mut rejected = 0;
            for a in 0..2100 {
                for b in 0..2100 {
                    let want = first.get(&(a, b)).copied().unwrap_or(NO_MERGE);
                    assert_eq!(table.get(a, b), want, "({a}, {b})");
                    rejected += !table.may.may(a, b) as usize;
                }
            }
            // the filter answers most pairs that never merge by itself
            assert!(rejected > 2100 * 2100 * 3 / 4, "{rejected}");
        }
    }
}
