//! The encoder (SPEC §2): special tokens, then the shared pretokenizer, then BPE of each pretoken
//! by merge rank; and decoding ids back to bytes. Every table is built once, in `Encoder::new`.
//!
//! BPE of a pretoken repeatedly merges all occurrences (left to right) of the adjacent pair of
//! lowest merge rank, as GPT-2's `bpe()` does. Short pretokens use the plain O(n²) loop; long ones
//! a heap over a linked list, O(n log n), so a 1 MB pretoken of one letter takes milliseconds.
//! Performance notes: a bounded cache maps a pretoken's bytes to its ids (80-90% of pretokens hit
//! it on real text). Calls take warm caches from a small pool and give them back, one per
//! thread they run on; `encode_batch` gives each worker its own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::pretokenize::{Piece, PretokenizeError, Pretokenizer, Specials};
use crate::train::{Pair, TokenId};
use crate::FastMap;

/// Errors of the encoder.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The vocabulary lacks a single byte.
    #[error(
        "the vocabulary has no token for byte {0:#04x}; a byte-level vocabulary needs all 256"
    )]
    MissingByte(u8),
    /// A merge names a token that is not in the vocabulary.
    #[error(
        "merge {rank} ({:?}, {:?}): {:?} is not in the vocabulary",
        String::from_utf8_lossy(left),
        String::from_utf8_lossy(right),
        String::from_utf8_lossy(missing)
    )]
    BadMerge {
        rank: usize,
        left: Vec<u8>,
        right: Vec<u8>,
        missing: Vec<u8>,
    },
    /// Two ids share one byte string.
    #[error("token ids {0} and {1} have the same bytes")]
    DuplicateToken(TokenId, TokenId),
    /// An id is not in the vocabulary.
    #[error("{0}")]
    UnknownId(TokenId),
    /// Pretokenization failed.
    #[error(transparent)]
    Pretokenize(#[from] PretokenizeError),
    /// The output buffer could not be allocated.
    #[error("out of memory: cannot hold the ids of {0} bytes of text")]
    OutOfMemory(usize),
    /// Building the thread pool failed.
    #[error("could not start worker threads: {0}")]
    Threads(String),
    /// The ids leave most of their range unused (one huge id would cost a huge table).
    #[error(
        "token ids are too sparse: {n_ids} ids, the largest {max_id}; ids must stay below \
         4 × their number + 2^20"
    )]
    SparseIds { n_ids: usize, max_id: u64 },
    /// The caller's check asked to stop (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
}

/// Long calls check for interruption (Ctrl-C) after about this many bytes of text.
pub const CHECK_EVERY: usize = 1 << 20;

/// Pretokens longer than this (in bytes) use the heap algorithm.
const SHORT: usize = 64;
/// Caches kept between calls, at most (each up to ~15 MB).
const MAX_SPARE_CACHES: usize = 8;
/// Pretokens longer than 15 bytes are cached by bytes up to this length.
const LONG_WORD: usize = 256;
/// The cache of long pretokens takes no more entries past this many.
const LONG_ENTRIES: usize = 1 << 15;
/// The pretoken cache takes no more entries past this many (~15 MB).
const CACHE_ENTRIES: usize = 1 << 18;

/// An immutable byte-level BPE encoder.
pub struct Encoder {
    pretok: Pretokenizer,
    /// All special tokens, as (text, id).
    special_list: Vec<(String, TokenId)>,
    /// A matcher for all of them.
    all_specials: SpecialSet,
    byte_ids: [TokenId; 256],
    /// (left, right) → (rank, merged id).
    ranks: FastMap<Pair, (u32, TokenId)>,
    /// Bytes of each id (None where an id is unused).
    decoder: Vec<Option<Box<[u8]>>>,
    /// Warm caches kept between calls (`encode_iterable` and batched callers make many): a call
    /// takes one per thread it runs on and gives them back; a call that finds none makes one.
    spare_caches: Mutex<Vec<Cache>>,
}

/// Special tokens that are matched in a call, with their ids.
pub struct SpecialSet {
    matcher: Specials,
    ids: Vec<TokenId>,
}

/// A cache of pretoken bytes → ids, for pretokens of up to 15 bytes (nearly all), keyed by the
/// packed word (`crate::pack_word`): no pointer chase and no byte comparison per lookup.
/// One open-addressed table of 32-byte slots (two per cache line) with up to 3 ids inline (more
/// go to `ids`), at most half full: a lookup is one multiply and, nearly always, one cache line.
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
    /// Scratch tokens and pair ranks of the merge loop, reused.
    scratch: Vec<TokenId>,
    ranks: Vec<(u32, TokenId)>,
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

impl Default for Cache {
    fn default() -> Self {
        Cache {
            slots: vec![Slot::default(); 1 << FIRST_BITS],
            bits: FIRST_BITS,
            used: 0,
            ids: Vec::new(),
            long: FastMap::default(),
            scratch: Vec::new(),
            ranks: Vec::new(),
        }
    }
}

impl Cache {
    /// Appends the cached ids of `key` to `out`; false if it is not cached.
    #[inline(always)]
    fn get(&self, key: u128, out: &mut Vec<TokenId>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = crate::hot_slot(key, self.bits);
        loop {
            let slot = &self.slots[i];
            if slot.len == 0 {
                return false;
            }
            if slot.key == key {
                let n = slot.len as usize;
                if n <= INLINE {
                    out.extend_from_slice(&slot.ids[..n]);
                } else {
                    let at = slot.ids[0] as usize;
                    out.extend_from_slice(&self.ids[at..at + n]);
                }
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers the ids of `key`, while the table has room (at most `CACHE_ENTRIES`).
    fn insert(&mut self, key: u128, ids: &[TokenId]) {
        if self.used >= CACHE_ENTRIES || ids.is_empty() {
            return;
        }
        if 2 * (self.used + 1) > self.slots.len() {
            self.grow();
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

    /// Doubles the table.
    fn grow(&mut self) {
        self.bits += 1;
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); 1 << self.bits]);
        for slot in old.into_iter().filter(|s| s.len != 0) {
            self.place(slot);
        }
    }

    /// Appends the cached ids of a long pretoken to `out`; false if it is not cached.
    fn get_long(&self, word: &[u8], out: &mut Vec<TokenId>) -> bool {
        let Some(&(s, l)) = self.long.get(word) else {
            return false;
        };
        out.extend_from_slice(&self.ids[s as usize..(s + l) as usize]);
        true
    }

    /// Remembers the ids of a long pretoken while that map is not full.
    fn insert_long(&mut self, word: &[u8], ids: &[TokenId]) {
        if self.long.len() < LONG_ENTRIES {
            self.long
                .insert(word.into(), (self.ids.len() as u32, ids.len() as u32));
            self.ids.extend_from_slice(ids);
        }
    }
}

impl Encoder {
    /// Builds the encoder from (id, bytes) pairs, merges as byte pairs in rank order, and special
    /// tokens as (text, id).
    pub fn new(
        vocab: Vec<(TokenId, Vec<u8>)>,
        merges: Vec<(Vec<u8>, Vec<u8>)>,
        specials: Vec<(String, TokenId)>,
        pattern: &str,
    ) -> Result<Self, EncodeError> {
        let ids = vocab
            .iter()
            .map(|(id, _)| *id)
            .chain(specials.iter().map(|(_, id)| *id));
        let max_id = ids.map(|id| id as usize + 1).max().unwrap_or(0);
        let n_ids = vocab.len() + specials.len();
        if max_id > 4 * n_ids + (1 << 20) {
            return Err(EncodeError::SparseIds {
                n_ids,
                max_id: max_id as u64 - 1,
            });
        }
        let mut decoder: Vec<Option<Box<[u8]>>> = Vec::new();
        decoder
            .try_reserve_exact(max_id)
            .map_err(|_| EncodeError::OutOfMemory(max_id))?;
        decoder.resize(max_id, None);
        let mut id_of: FastMap<Vec<u8>, TokenId> = FastMap::default();
        // A special token's bytes may equal an ordinary token's (e.g. a one-byte special): the
        // ordinary id then stands for those bytes in the merge tables, and the special id is
        // matched as a special token only.
        let special_ids: Vec<TokenId> = specials.iter().map(|(_, id)| *id).collect();
        for (id, bytes) in vocab {
            decoder[id as usize] = Some(bytes.clone().into_boxed_slice());
            match id_of.get(&bytes) {
                Some(&other) if other != id => {
                    match (special_ids.contains(&other), special_ids.contains(&id)) {
                        (false, false) => return Err(EncodeError::DuplicateToken(other, id)),
                        (true, false) => {
                            id_of.insert(bytes, id);
                        }
                        _ => {}
                    }
                }
                _ => {
                    id_of.insert(bytes, id);
                }
            }
        }
        for (text, id) in &specials {
            decoder[*id as usize].get_or_insert_with(|| text.as_bytes().into());
        }
        let mut byte_ids = [0; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = *id_of.get(&vec![b]).ok_or(EncodeError::MissingByte(b))?;
        }
        let mut ranks = FastMap::default();
        for (rank, (left, right)) in merges.into_iter().enumerate() {
            let joined = [left.as_slice(), right.as_slice()].concat();
            let find = |bytes: &Vec<u8>| {
                id_of
                    .get(bytes)
                    .copied()
                    .ok_or_else(|| EncodeError::BadMerge {
                        rank,
                        left: left.clone(),
                        right: right.clone(),
                        missing: bytes.clone(),
                    })
            };
            let pair = (find(&left)?, find(&right)?);
            let new = find(&joined)?;
            ranks.entry(pair).or_insert((rank as u32, new));
        }
        let texts: Vec<&str> = specials.iter().map(|(t, _)| t.as_str()).collect();
        let all_specials = SpecialSet {
            matcher: Specials::new(&texts)?,
            ids: specials.iter().map(|(_, id)| *id).collect(),
        };
        Ok(Encoder {
            pretok: Pretokenizer::new(pattern)?,
            special_list: specials,
            all_specials,
            byte_ids,
            ranks,
            decoder,
            spare_caches: Mutex::new(Vec::new()),
        })
    }

    /// The special tokens matched in a call: `None` means all, else those named (unknown names
    /// are an error of the caller, checked in Python).
    pub fn special_set(
        &self,
        allowed: Option<&[String]>,
    ) -> Result<Option<SpecialSet>, EncodeError> {
        let Some(names) = allowed else {
            return Ok(None);
        };
        let chosen: Vec<&(String, TokenId)> = self
            .special_list
            .iter()
            .filter(|(t, _)| names.contains(t))
            .collect();
        let texts: Vec<&str> = chosen.iter().map(|(t, _)| t.as_str()).collect();
        Ok(Some(SpecialSet {
            matcher: Specials::new(&texts)?,
            ids: chosen.iter().map(|(_, id)| *id).collect(),
        }))
    }

    fn resolve<'s>(&'s self, set: &'s Option<SpecialSet>) -> &'s SpecialSet {
        set.as_ref().unwrap_or(&self.all_specials)
    }

    /// Encodes `text`, matching the special tokens of `set` (None: all of them).
    pub fn encode(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
    ) -> Result<Vec<TokenId>, EncodeError> {
        self.encode_checked(text, set, &mut || true)
    }

    /// `encode`, calling `check` after about every `CHECK_EVERY` bytes (at safe cuts, so the
    /// ids are the same); `check` returning false stops with `Interrupted`.
    pub fn encode_checked(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<Vec<TokenId>, EncodeError> {
        let mut out = Vec::new();
        // Fail cleanly (MemoryError) rather than abort when memory is short: the output is
        // the largest allocation, and is asked for first.
        out.try_reserve(text.len() / 3 + 16)
            .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
        let set = self.resolve(set);
        let mut caches = self.take_caches(1);
        let mut pos = 0;
        let result = loop {
            let end = self.next_stop(text, pos, set);
            if let Err(e) = self.encode_into(&text[pos..end], set, &mut caches[0], &mut out) {
                break Err(e);
            }
            pos = end;
            if pos == text.len() {
                break Ok(out);
            }
            if !check() {
                break Err(EncodeError::Interrupted);
            }
        };
        self.give_back(caches);
        result
    }

    /// Where a piece of `text` that starts at the safe cut `pos` may end: the last safe cut
    /// within `CHECK_EVERY` bytes, or within a window twice as large if there is none, etc.
    fn next_stop(&self, text: &str, pos: usize, set: &SpecialSet) -> usize {
        let mut window = CHECK_EVERY;
        loop {
            let mut limit = pos.saturating_add(window);
            if limit >= text.len() {
                return text.len();
            }
            while !text.is_char_boundary(limit) {
                limit -= 1;
            }
            if let Some(p) = set.matcher.safe_cut(&text[pos..limit], &self.pretok) {
                return pos + p;
            }
            window *= 2;
        }
    }

    /// `n` caches, warm ones first.
    fn take_caches(&self, n: usize) -> Vec<Cache> {
        let mut spare = self.spare_caches.lock().unwrap_or_else(|p| p.into_inner());
        let keep = spare.len().saturating_sub(n);
        let mut caches = spare.split_off(keep);
        drop(spare);
        caches.resize_with(n, Cache::default);
        caches
    }

    /// Keeps caches for later calls (at most `MAX_SPARE_CACHES`).
    fn give_back(&self, caches: Vec<Cache>) {
        let mut spare = self.spare_caches.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_SPARE_CACHES.saturating_sub(spare.len());
        spare.extend(caches.into_iter().take(room));
    }

    /// Encodes `text` into `out` with a caller-owned cache.
    fn encode_into(
        &self,
        text: &str,
        set: &SpecialSet,
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) -> Result<(), EncodeError> {
        let mut result = Ok(());
        set.matcher.for_each_piece(text, |piece| match piece {
            Piece::Special(i) => out.push(set.ids[i]),
            Piece::Text(t) if result.is_ok() => {
                result = self
                    .pretok
                    .for_each(t, |word| self.encode_word(word.as_bytes(), cache, out));
            }
            Piece::Text(_) => {}
        });
        Ok(result?)
    }

    /// Encodes the longest prefix of `text` that can be encoded without seeing what follows it;
    /// returns its ids and its length in bytes (0 if there is no such prefix yet).
    pub fn encode_prefix(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
    ) -> Result<(Vec<TokenId>, usize), EncodeError> {
        match self.resolve(set).matcher.safe_cut(text, &self.pretok) {
            Some(p) => Ok((self.encode(&text[..p], set)?, p)),
            None => Ok((Vec::new(), 0)),
        }
    }

    /// Encodes each text, on `num_threads` threads; `check` is called between groups of texts
    /// of about `8 × CHECK_EVERY` bytes (false stops with `Interrupted`).
    pub fn encode_batch<T: AsRef<str> + Sync>(
        &self,
        texts: &[T],
        set: &Option<SpecialSet>,
        num_threads: usize,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<Vec<Vec<TokenId>>, EncodeError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(crate::worker_count(num_threads))
            .build()
            .map_err(|e| EncodeError::Threads(e.to_string()))?;
        let set = self.resolve(set);
        let caches: Vec<Mutex<Cache>> = self
            .take_caches(pool.current_num_threads())
            .into_iter()
            .map(Mutex::new)
            .collect();
        let encode_one = |text: &T| {
            let text = text.as_ref();
            // One cache per worker thread: the lock is never contended.
            let slot = rayon::current_thread_index().unwrap_or(0) % caches.len();
            let mut cache = caches[slot].lock().unwrap_or_else(|p| p.into_inner());
            let mut out = Vec::new();
            out.try_reserve(text.len() / 3)
                .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
            self.encode_into(text, set, &mut cache, &mut out)?;
            Ok(out)
        };
        let mut all = Vec::with_capacity(texts.len());
        let mut rest = texts;
        let result = loop {
            if rest.is_empty() {
                break Ok(all);
            }
            let (mut n, mut size) = (0, 0);
            while n < rest.len() && size < 8 * CHECK_EVERY {
                size += rest[n].as_ref().len();
                n += 1;
            }
            let (group, tail) = rest.split_at(n);
            rest = tail;
            let done: Result<Vec<_>, _> =
                pool.install(|| group.par_iter().map(encode_one).collect());
            match done {
                Ok(ids) => all.extend(ids),
                Err(e) => break Err(e),
            }
            if !rest.is_empty() && !check() {
                break Err(EncodeError::Interrupted);
            }
        };
        self.give_back(
            caches
                .into_iter()
                .map(|c| c.into_inner().unwrap_or_else(|p| p.into_inner()))
                .collect(),
        );
        result
    }

    /// BPE of one pretoken, appended to `out`. Pretokens of up to 15 bytes are cached by their
    /// packed key, longer ones (non-ASCII words, whitespace runs: ~9% of the bytes) by their
    /// bytes, up to `LONG_WORD` bytes.
    #[inline]
    fn encode_word(&self, word: &[u8], cache: &mut Cache, out: &mut Vec<TokenId>) {
        if word.len() == 1 {
            out.push(self.byte_ids[word[0] as usize]);
            return;
        }
        let key = (word.len() <= crate::PACKED_MAX).then(|| crate::pack_word(word));
        match key {
            Some(key) if cache.get(key, out) => return,
            None if word.len() <= LONG_WORD && cache.get_long(word, out) => return,
            _ => {}
        }
        let start = out.len();
        let mut tokens = std::mem::take(&mut cache.scratch);
        tokens.clear();
        tokens.extend(word.iter().map(|&b| self.byte_ids[b as usize]));
        if word.len() <= SHORT {
            self.merge_short(&mut tokens, &mut cache.ranks);
            out.extend_from_slice(&tokens);
        } else {
            out.extend(self.merge_long(&tokens));
        }
        cache.scratch = tokens;
        match key {
            Some(key) => cache.insert(key, &out[start..]),
            None if word.len() <= LONG_WORD => cache.insert_long(word, &out[start..]),
            None => {}
        }
    }

    /// The plain loop: find the lowest-rank pair, merge all its occurrences (left to right),
    /// repeat. `rank[i]` holds the (rank, merged id) of the pair at `i` and is looked up again
    /// only next to a merge; a merge removes one token in place (the loop used to look up every
    /// pair twice per round and rebuild the word: it was most of the time of a cache miss).
    fn merge_short(&self, tokens: &mut Vec<TokenId>, rank: &mut Vec<(u32, TokenId)>) {
        const NONE: (u32, TokenId) = (u32::MAX, 0);
        let pair_at = |t: &[TokenId], i: usize| match t.get(i + 1) {
            Some(&next) => self.pair_rank(t[i], next),
            None => NONE,
        };
        rank.clear();
        rank.extend((0..tokens.len()).map(|i| pair_at(tokens, i)));
        loop {
            // the lowest rank, and its first position
            let Some((mut p, best)) = rank
                .iter()
                .enumerate()
                .min_by_key(|&(i, r)| (r.0, i))
                .map(|(i, r)| (i, r.0))
                .filter(|&(_, r)| r != u32::MAX)
            else {
                return;
            };
            loop {
                // a rank names one pair: every entry equal to `best` is an occurrence of it
                tokens[p] = rank[p].1;
                tokens.remove(p + 1);
                rank.remove(p + 1);
                if p > 0 {
                    rank[p - 1] = pair_at(tokens, p - 1);
                }
                rank[p] = pair_at(tokens, p);
                match (p + 1..rank.len()).find(|&i| rank[i].0 == best) {
                    Some(next) => p = next,
                    None => break,
                }
            }
        }
    }

    /// (merge rank, merged id) of a pair, or (u32::MAX, 0) if it never merges.
    #[inline(always)]
    fn pair_rank(&self, a: TokenId, b: TokenId) -> (u32, TokenId) {
        self.ranks.get(&(a, b)).copied().unwrap_or((u32::MAX, 0))
    }

    /// The same result in O(n log n): a heap of (rank, position) over a linked list. All entries
    /// of one rank are merged before pairs they create are queued, as in the plain loop.
    fn merge_long(&self, tokens: &[TokenId]) -> Vec<TokenId> {
        let n = tokens.len();
        let mut tok = tokens.to_vec();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let rank_at = |tok: &[TokenId], next: &[usize], i: usize| -> Option<u32> {
            let j = next[i];
            (j < n)
                .then(|| self.ranks.get(&(tok[i], tok[j])).map(|r| r.0))
                .flatten()
        };
        for i in 0..n {
            if let Some(r) = rank_at(&tok, &next, i) {
                heap.push(Reverse((r, i, tok[i], tok[next[i]])));
            }
        }
        let mut pending = Vec::new();
        while let Some(Reverse((rank, _, _, _))) = heap.peek().copied() {
            while let Some(&Reverse((r, i, a, b))) = heap.peek() {
                if r != rank {
                    break;
                }
                heap.pop();
                let j = next[i];
                if !alive[i] || j >= n || tok[i] != a || tok[j] != b {
                    continue; // stale
                }
                tok[i] = self.ranks[&(a, b)].1;
                alive[j] = false;
                next[i] = next[j];
                if next[i] < n {
                    prev[next[i]] = i;
                }
                pending.push(i);
                if prev[i] < n {
                    pending.push(prev[i]);
                }
            }
            for i in pending.drain(..) {
                if alive[i] {
                    if let Some(r) = rank_at(&tok, &next, i) {
                        heap.push(Reverse((r, i, tok[i], tok[next[i]])));
                    }
                }
            }
        }
        (0..n).filter(|&i| alive[i]).map(|i| tok[i]).collect()
    }

    /// One more than the largest id.
    pub fn n_ids(&self) -> usize {
        self.decoder.len()
    }

    /// The bytes of `ids`, concatenated.
    pub fn decode_bytes(&self, ids: &[TokenId]) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        out.try_reserve(ids.len() * 4)
            .map_err(|_| EncodeError::OutOfMemory(ids.len() * 4))?;
        for &id in ids {
            match self.decoder.get(id as usize) {
                Some(Some(bytes)) => out.extend_from_slice(bytes),
                _ => return Err(EncodeError::UnknownId(id)),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::GPT2_PATTERN;

    fn toy() -> Encoder {
        let mut vocab: Vec<(TokenId, Vec<u8>)> =
            (0..=255u8).map(|b| (b as TokenId, vec![b])).collect();
        let merges = vec![
            (b"a".to_vec(), b"a".to_vec()),
            (b"aa".to_vec(), b"aa".to_vec()),
        ];
        vocab.push((256, b"aa".to_vec()));
        vocab.push((257, b"aaaa".to_vec()));
        Encoder::new(vocab, merges, vec![("<s>".into(), 258)], GPT2_PATTERN).unwrap()
    }

    #[test]
    fn long_and_short_words_agree() {
        let enc = toy();
        for n in [2, 3, 5, 63, 64, 65, 200, 1001] {
            let word: Vec<TokenId> = vec![b'a' as TokenId; n];
            let mut short = word.clone();
            enc.merge_short(&mut short, &mut Vec::new());
            assert_eq!(enc.merge_long(&word), short, "n = {n}");
        }
    }

    #[test]
    fn short_loop_equals_heap_on_random_words() {
        // merges over a 3-letter alphabet, overlapping on purpose
        let merges: Vec<(&[u8], &[u8])> = vec![
            (b"a", b"b"),
            (b"b", b"a"),
            (b"a", b"a"),
            (b"ab", b"ab"),
            (b"c", b"ab"),
            (b"b", b"b"),
            (b"aa", b"a"),
            (b"ba", b"c"),
            (b"abab", b"c"),
            (b"cab", b"ba"),
        ];
        let mut vocab: Vec<(TokenId, Vec<u8>)> =
            (0..=255u8).map(|b| (b as TokenId, vec![b])).collect();
        let mut pairs = Vec::new();
        for (a, b) in &merges {
            let joined = [*a, *b].concat();
            if !vocab.iter().any(|(_, v)| *v == joined) {
                vocab.push((vocab.len() as TokenId, joined));
            }
            pairs.push((a.to_vec(), b.to_vec()));
        }
        let enc = Encoder::new(vocab, pairs, vec![], GPT2_PATTERN).unwrap();
        let mut seed = 12345u64;
        for _ in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = 2 + (seed >> 58) as usize; // 2..=65
            let word: Vec<TokenId> = (0..n.min(SHORT))
                .map(|k| b"abc"[((seed >> (k % 29 * 2)) % 3) as usize] as TokenId)
                .collect();
            let mut short = word.clone();
            enc.merge_short(&mut short, &mut Vec::new());
            assert_eq!(short, enc.merge_long(&word), "{word:?}");
        }
    }

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
            assert!(
                cache.get(crate::pack_word(&k.to_le_bytes()), &mut out),
                "{k}"
            );
            assert_eq!(out[1..], ids_of(k), "{k}");
        }
        assert!(!cache.get(crate::pack_word(b"absent"), &mut Vec::new()));
        assert!(2 * cache.used <= cache.slots.len());
    }

    #[test]
    fn specials_and_decode() {
        let enc = toy();
        let ids = enc.encode("aaaaa<s>a", &None).unwrap();
        assert_eq!(ids, [257, 97, 258, 97]);
        let none = enc.special_set(Some(&[])).unwrap();
        assert_eq!(enc.encode("a<s>", &none).unwrap(), [97, 60, 115, 62]);
        assert_eq!(enc.decode_bytes(&ids).unwrap(), b"aaaaa<s>a");
        assert!(matches!(
            enc.decode_bytes(&[999]),
            Err(EncodeError::UnknownId(999))
        ));
    }
}
