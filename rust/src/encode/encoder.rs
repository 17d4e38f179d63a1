//! The encoder's tables, built once (`Encoder::new`), and its calls on one text: `encode`, with
//! checks for Ctrl-C between pieces (`encode_checked`, `encode_each`), a stream's prefix
//! (`encode_prefix`), and `decode_bytes`; the warm caches kept between calls. The pretokens' ids
//! are `text.rs`'s, batches `batch.rs`'s, and where a text may be cut `pieces.rs`'s.

use std::sync::{Arc, Mutex};

use super::cache::{self, Cache};
use super::pair_table::PairTable;
use super::parts::{Joins, Phases};
use super::rule::{merges_grow, splits_by_id, whole_tokens, Ranks, Rule};
use super::{EncodeError, CHECK_EVERY};
use crate::normalize::Normalization;
use crate::pretokenize::{Added, Pretokenizer, Specials};
use crate::types::{FastMap, Pair, TokenId};

/// Caches kept between calls, at most, and their memory at most.
const MAX_SPARE_CACHES: usize = 8;
const SPARE_BYTES: usize = 160 << 20;
/// The memory of the id vectors of batch calls kept for the next call, at most.
pub(super) const SPARE_ID_BYTES: usize = 32 << 20;

/// An immutable byte-level BPE encoder.
pub struct Encoder {
    pub(super) pretok: Pretokenizer,
    /// All special tokens, as (text, id).
    pub(super) special_list: Vec<(String, TokenId)>,
    /// Their HF options, in the same order (empty: none has any).
    pub(super) added: Vec<Added>,
    /// A matcher for all of them.
    pub(super) all_specials: SpecialSet,
    pub(super) byte_ids: [TokenId; 256],
    /// (left, right) → (rank, merged id).
    pub(super) pairs: PairTable,
    /// Where a long pretoken's BPE may be cut.
    pub(super) joins: Joins,
    /// The merges before the first that joins words, for long pretokens (superword tokenizers).
    pub(super) phases: Option<Phases>,
    /// Tokens a pretoken equal to one is taken whole as, where BPE would make other ids
    /// (`Rule::whole`; empty otherwise).
    pub(crate) whole: FastMap<Box<[u8]>, TokenId>,
    /// The normalization of the text between special tokens, if any.
    pub(super) normalization: Option<Normalization>,
    /// Whether every listed merge makes its token after the merges of its parts: GPT-2's rounds
    /// and one pair at a time then merge alike.
    pub merges_grow: bool,
    /// Bytes of each id (None where an id is unused).
    pub(super) decoder: Vec<Option<Box<[u8]>>>,
    /// Warm caches kept between calls (`encode_iterable` and batched callers make many): a call
    /// takes one per thread it runs on and gives them back; a call that finds none makes one.
    pub(super) spare_caches: Mutex<Vec<Cache>>,
    /// Empty id vectors of earlier batch calls, for the next one (`give_back_ids`).
    pub(super) spare_ids: Mutex<Vec<Vec<TokenId>>>,
    /// The thread pool of the last batch call, and the process that made it (see `pool`).
    pub(super) pool: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>>,
}

/// The special tokens `keep` keeps, as (text, id, options).
fn chosen<'s>(
    specials: &'s [(String, TokenId)],
    added: &[Added],
    keep: impl Fn(&str) -> bool,
) -> Vec<(&'s str, TokenId, Added)> {
    specials
        .iter()
        .enumerate()
        .filter(|(_, (t, _))| keep(t))
        .map(|(i, (t, id))| (t.as_str(), *id, added.get(i).copied().unwrap_or_default()))
        .collect()
}

/// Special tokens that are matched in a call, with their ids.
pub struct SpecialSet {
    pub(super) matcher: Specials,
    pub(super) ids: Vec<TokenId>,
    /// HF's `normalized` added tokens, as the normalization writes them: matched in the
    /// normalized text between the others (HF's second pass).
    pub(super) later: Option<Box<SpecialSet>>,
}

impl SpecialSet {
    /// The set of `chosen` tokens (text, id, options); those `normalized` go in `later`, their
    /// text normalized by `form`.
    fn of(
        chosen: &[(&str, TokenId, Added)],
        form: Option<Normalization>,
    ) -> Result<Self, EncodeError> {
        let (first, later): (Vec<_>, Vec<_>) = chosen.iter().partition(|(_, _, a)| !a.normalized);
        let make = |list: &[(String, TokenId, Added)], checked: bool| {
            let texts: Vec<&str> = list.iter().map(|(t, _, _)| t.as_str()).collect();
            let options: Vec<Added> = list.iter().map(|(_, _, a)| *a).collect();
            Ok::<_, EncodeError>(SpecialSet {
                matcher: Specials::with_options(&texts, &options, checked)?,
                ids: list.iter().map(|(_, id, _)| *id).collect(),
                later: None,
            })
        };
        let owned = |t: &str, normal: bool| match (form, normal) {
            (Some(f), true) => f.apply(t).into_owned(),
            _ => t.to_owned(),
        };
        let first: Vec<_> = first
            .iter()
            .map(|(t, id, a)| (owned(t, false), *id, *a))
            .collect();
        let mut set = make(&first, false)?;
        if !later.is_empty() {
            let later: Vec<_> = later
                .iter()
                .map(|(t, id, a)| (owned(t, true), *id, *a))
                .collect();
            set.later = Some(Box::new(make(&later, true)?));
        }
        Ok(set)
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
        let pretok = Pretokenizer::new(pattern)?;
        Self::with_rule(vocab, merges, specials, pretok, Rule::default())
    }

    /// `new`, BPE following `rule` (with `Ranks::ById`, `merges` are left out: every split of
    /// every token is one, ranked by its id).
    pub fn with_rule(
        vocab: Vec<(TokenId, Vec<u8>)>,
        merges: Vec<(Vec<u8>, Vec<u8>)>,
        specials: Vec<(String, TokenId)>,
        pretok: Pretokenizer,
        rule: Rule,
    ) -> Result<Self, EncodeError> {
        let max_id = max_id_of(&vocab, &specials)?;
        let (decoder, id_of) = tables_of(vocab, &specials, max_id)?;
        let mut byte_ids = [0; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = *id_of.get(&vec![b]).ok_or(EncodeError::MissingByte(b))?;
        }
        let special_ids: Vec<TokenId> = specials.iter().map(|(_, id)| *id).collect();
        let merges = match rule.ranks {
            Ranks::Listed => merges,
            Ranks::ById => splits_by_id(&id_of, &special_ids),
        };
        let pairs = merge_ids(&merges, &id_of)?;
        let joins = Joins::new(merges.iter().map(|(a, b)| (a.as_slice(), b.as_slice())));
        // two phases need merges whose pairs rank above them, as trained ones do
        let grow = rule.ranks == Ranks::Listed && merges_grow(&pairs);
        let phases = match grow {
            true => Phases::new(&merges, &pairs, &byte_ids),
            false => None,
        };
        let added = match rule.added.is_empty() {
            true => Vec::new(),
            false if rule.added.len() == specials.len() => rule.added.clone(),
            false => return Err(EncodeError::AddedOptions(rule.added.len(), specials.len())),
        };
        let listed = chosen(&specials, &added, |_| true);
        SpecialSet::of(&listed, rule.normalization)?; // the checks of every token's text
        let matched = chosen(&specials, &added, |_| rule.match_specials);
        let all_specials = SpecialSet::of(&matched, rule.normalization)?;
        let mut pairs = PairTable::ranked(pairs.into_iter(), &byte_ids, rule.ranks);
        pairs.one_at_a_time = rule.one_at_a_time || rule.ranks == Ranks::ById;
        let whole = match rule.whole {
            true => whole_tokens(&id_of, &special_ids, &pairs, &byte_ids),
            false => FastMap::default(),
        };
        Ok(Encoder {
            pretok,
            special_list: specials,
            added,
            all_specials,
            byte_ids,
            pairs,
            joins,
            phases,
            whole,
            merges_grow: grow,
            normalization: rule.normalization,
            decoder,
            spare_caches: Mutex::new(Vec::new()),
            spare_ids: Mutex::new(Vec::new()),
            pool: Mutex::new(None),
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
        let chosen = chosen(&self.special_list, &self.added, |t| {
            names.iter().any(|n| n == t)
        });
        Ok(Some(SpecialSet::of(&chosen, self.normalization)?))
    }

    pub(super) fn resolve<'s>(&'s self, set: &'s Option<SpecialSet>) -> &'s SpecialSet {
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
        self.encode_limited(text, set, check, cache::ENTRIES)
    }

    /// `encode_checked` with a cache that takes at most `limit` entries.
    fn encode_limited(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
        check: &mut dyn FnMut() -> bool,
        limit: usize,
    ) -> Result<Vec<TokenId>, EncodeError> {
        let mut out = Vec::new();
        // Fail cleanly (MemoryError) rather than abort when memory is short: the output is
        // the largest allocation, and is asked for first. A document gets room for half an id
        // a byte and a batch's lookups (`Cache::get_run` asks for 4 ids a pretoken): with a
        // third, code (0.46 ids a byte) moved every document's ids once to a larger vector. A
        // long text gets a third: glibc grows large allocations by remapping, not copying.
        let room = match text.len() <= CHECK_EVERY {
            true => text.len() / 2 + 4 * cache::BATCH.min(text.len() + 1),
            false => text.len() / 3 + 16,
        };
        out.try_reserve(room)
            .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
        crate::mem::advise_huge_pages(out.spare_capacity_mut());
        self.for_each_piece(text, set, check, limit, |piece, set, cache| {
            self.encode_into(piece, set, cache, &mut out)
        })?;
        Ok(out)
    }

    /// `encode_checked`, handing the ids to `emit` one piece (about `CHECK_EVERY` bytes of
    /// text) at a time: a caller that converts them (to uint16 for numpy) reads them while they
    /// are in the CPU's cache, and never holds all of them as u32.
    pub fn encode_each(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
        check: &mut dyn FnMut() -> bool,
        emit: &mut dyn FnMut(&[TokenId]) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let mut ids = Vec::new();
        ids.try_reserve(text.len().min(2 * CHECK_EVERY) / 3 + 16)
            .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
        self.for_each_piece(text, set, check, cache::ENTRIES, |piece, set, cache| {
            ids.clear();
            self.encode_into(piece, set, cache, &mut ids)?;
            emit(&ids)
        })
    }

    /// Calls `f` on the pieces of `text`, cut at safe points every `CHECK_EVERY` bytes or so,
    /// with one cache (of at most `limit` entries) taken for the call and given back after;
    /// `check` runs between pieces.
    fn for_each_piece(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
        check: &mut dyn FnMut() -> bool,
        limit: usize,
        mut f: impl FnMut(&str, &SpecialSet, &mut Cache) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let set = self.resolve(set);
        let mut cache = self.take_cache(limit);
        cache.expect_text(text.len());
        let mut pos = 0;
        let result = loop {
            if pos == text.len() {
                break Ok(());
            }
            let end = self
                .next_stop(text, pos, set, CHECK_EVERY, true)
                .unwrap_or(text.len());
            if let Err(e) = f(&text[pos..end], set, &mut cache) {
                break Err(e);
            }
            pos = end;
            if pos < text.len() && !check() {
                break Err(EncodeError::Interrupted);
            }
        };
        self.give_back(std::iter::once(cache));
        result
    }

    /// One cache, the warmest kept, that takes at most `limit` entries: a call on one text
    /// takes it without the vector of `take_caches` (a short text's call costs ~0.5 µs, and each
    /// allocation counts).
    fn take_cache(&self, limit: usize) -> Cache {
        let spare = self
            .spare_caches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop();
        let mut cache = spare.unwrap_or_default();
        cache.limit = limit;
        cache
    }

    /// `n` caches, warm ones first, that take at most `limit` entries.
    pub(super) fn take_caches(&self, n: usize, limit: usize) -> Vec<Cache> {
        let mut spare = self.spare_caches.lock().unwrap_or_else(|p| p.into_inner());
        let keep = spare.len().saturating_sub(n);
        let mut caches = spare.split_off(keep);
        drop(spare);
        caches.resize_with(n, Cache::default);
        for cache in &mut caches {
            cache.limit = limit;
        }
        caches
    }

    /// Forgets the caches kept between calls (their memory, and what they learned) and the id
    /// vectors kept for batch calls.
    pub fn drop_caches(&self) {
        self.spare_caches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.take_spare_ids();
    }

    /// Keeps caches for later calls: at most `MAX_SPARE_CACHES`, of `SPARE_BYTES` in all.
    /// The oldest are dropped first: those just used are the warmest, and the next call takes
    /// them (it takes from the end). Dropping the returned cache instead, once a per-document
    /// loop had grown it past the budget, made the loop start cold again and again.
    pub(super) fn give_back(&self, caches: impl IntoIterator<Item = Cache>) {
        let mut spare = self.spare_caches.lock().unwrap_or_else(|p| p.into_inner());
        spare.extend(caches);
        let mut bytes: usize = spare.iter().map(Cache::bytes).sum();
        while spare.len() > MAX_SPARE_CACHES || (bytes > SPARE_BYTES && spare.len() > 1) {
            bytes -= spare.remove(0).bytes();
        }
    }

    /// Keeps the id vectors of a batch call whose ids have been copied out, for the next call
    /// (the largest, `SPARE_ID_BYTES` at most). Why: each call's new vectors were fresh memory
    /// to fault in, and on two threads, whose runs are too small for huge pages, that was ~5%
    /// of the CPU time of 8 MB batches of code (30 MB from Python: 5.5 K → 3.8 K page faults).
    pub fn give_back_ids(&self, runs: Vec<Vec<TokenId>>) {
        let mut spare = self.spare_ids.lock().unwrap_or_else(|p| p.into_inner());
        spare.extend(runs.into_iter().filter(|v| v.capacity() > 0));
        // the largest that fit in the budget, kept smallest first (`run_outs` picks the best fit)
        spare.sort_unstable_by_key(|v| std::cmp::Reverse(v.capacity()));
        let mut bytes = 0;
        spare.retain(|v| {
            let size = v.capacity() * std::mem::size_of::<TokenId>();
            let fits = bytes + size <= SPARE_ID_BYTES;
            bytes += if fits { size } else { 0 };
            fits
        });
        spare.reverse();
        for v in spare.iter_mut() {
            v.clear();
        }
    }

    /// The kept id vectors, smallest first.
    pub(super) fn take_spare_ids(&self) -> Vec<Vec<TokenId>> {
        std::mem::take(&mut *self.spare_ids.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Encodes the longest prefix of `text` that can be encoded without seeing what follows it
    /// (all of it if `last`); returns its ids and its length in bytes (0 if there is no such
    /// prefix yet). For streams, whose promise is memory that does not grow with the input: the
    /// cache takes at most `STREAM_ENTRIES`.
    pub fn encode_prefix(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
        last: bool,
    ) -> Result<(Vec<TokenId>, usize), EncodeError> {
        let end = match last {
            true => Some(text.len()),
            false => self.safe_cut(self.resolve(set), text),
        };
        match end {
            Some(p) => Ok((
                self.encode_limited(&text[..p], set, &mut || true, cache::STREAM_ENTRIES)?,
                p,
            )),
            None => Ok((Vec::new(), 0)),
        }
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

/// One more than the largest id of `vocab` and `specials`, if the ids are dense enough: one huge
/// id would cost a huge table.
fn max_id_of(
    vocab: &[(TokenId, Vec<u8>)],
    specials: &[(String, TokenId)],
) -> Result<usize, EncodeError> {
    let ids = vocab
        .iter()
        .map(|(id, _)| *id)
        .chain(specials.iter().map(|(_, id)| *id));
    let max_id = ids.map(|id| id as usize + 1).max().unwrap_or(0);
    let n_ids = vocab.len() + specials.len();
    // `cache::NONE` marks unused places in the encoder's cache: no token may have that id
    if max_id > 4 * n_ids + (1 << 20) || max_id > cache::NONE as usize {
        return Err(EncodeError::SparseIds {
            n_ids,
            max_id: max_id as u64 - 1,
        });
    }
    Ok(max_id)
}

/// The bytes of every id (`max_id` places), and the id of every token's bytes (ordinary ids
/// first).
#[allow(clippy::type_complexity)]
fn tables_of(
    vocab: Vec<(TokenId, Vec<u8>)>,
    specials: &[(String, TokenId)],
    max_id: usize,
) -> Result<(Vec<Option<Box<[u8]>>>, FastMap<Vec<u8>, TokenId>), EncodeError> {
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
    for (text, id) in specials {
        decoder[*id as usize].get_or_insert_with(|| text.as_bytes().into());
    }
    Ok((decoder, id_of))
}

/// The merges (as byte pairs, in rank order) as ((left id, right id), merged id).
fn merge_ids(
    merges: &[(Vec<u8>, Vec<u8>)],
    id_of: &FastMap<Vec<u8>, TokenId>,
) -> Result<Vec<(Pair, TokenId)>, EncodeError> {
    let mut pairs = Vec::with_capacity(merges.len());
    for (rank, (left, right)) in merges.iter().enumerate() {
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
        pairs.push(((find(left)?, find(right)?), find(&joined)?));
    }
    Ok(pairs)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::pretokenize::GPT2_PATTERN;

    pub(crate) fn toy() -> Encoder {
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
