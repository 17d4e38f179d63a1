//! The encoder (docs/spec.md §2): special tokens, then the shared pretokenizer, then BPE of each
//! pretoken by merge rank (`merge`); and decoding ids back to bytes. Every table is built once,
//! in `Encoder::new`.
//!
//! Performance notes: a cache maps a pretoken's bytes to its ids (`cache`; ~90% of pretokens of
//! 2+ bytes hit it on real text). Calls take warm caches from a small pool and give them back,
//! one per thread they run on; `encode_batch` gives each worker its own.

mod cache;
mod merge;

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::pretokenize::{Piece, PretokenizeError, Pretokenizer, Specials};
use crate::train::TokenId;
use crate::FastMap;
use cache::{Batch, Cache, AHEAD, BATCH, LONG_WORD, TAIL_MAX};
use merge::{PairTable, SHORT};

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
         4 × their number + 2^20, and below 2^32 - 1"
    )]
    SparseIds { n_ids: usize, max_id: u64 },
    /// The caller's check asked to stop (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// A text of a batch could not be got (`BatchTexts::get`; the source keeps why).
    #[error("a text of the batch could not be read")]
    Unreadable,
}

/// `encode_batch` encodes texts longer than this in pieces of about this size.
const BATCH_PIECE: usize = 1 << 18;

/// Long calls check for interruption (Ctrl-C) after about this many bytes of text.
pub const CHECK_EVERY: usize = 1 << 20;
/// Text bytes per distinct pretoken a call's cache is first sized for (`Cache::expect`): the
/// large benchmark corpus has one per 55 bytes in its first 12.5 MB, one per 105-130 in 100 MB,
/// so a table sized at one per 128 bytes is rarely larger than the one its doublings would reach.
const BYTES_PER_ENTRY: usize = 128;

/// Caches kept between calls, at most, and their memory at most.
const MAX_SPARE_CACHES: usize = 8;
const SPARE_BYTES: usize = 160 << 20;

/// An immutable byte-level BPE encoder.
pub struct Encoder {
    pretok: Pretokenizer,
    /// All special tokens, as (text, id).
    special_list: Vec<(String, TokenId)>,
    /// A matcher for all of them.
    all_specials: SpecialSet,
    byte_ids: [TokenId; 256],
    /// (left, right) → (rank, merged id).
    pairs: PairTable,
    /// Bytes of each id (None where an id is unused).
    decoder: Vec<Option<Box<[u8]>>>,
    /// Warm caches kept between calls (`encode_iterable` and batched callers make many): a call
    /// takes one per thread it runs on and gives them back; a call that finds none makes one.
    spare_caches: Mutex<Vec<Cache>>,
    /// The thread pool of the last batch call, and the process that made it (see `pool`).
    pool: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>>,
}

/// Special tokens that are matched in a call, with their ids.
pub struct SpecialSet {
    matcher: Specials,
    ids: Vec<TokenId>,
}

/// The ids of a batch of texts (`Encoder::encode_batch`): one vector per run of consecutive
/// pieces of the texts, in order. Why not a vector per text: thousands of allocations a call
/// (freed on another thread), and a copy of each into the flat array numpy callers want; a run
/// is one allocation and one copy.
pub struct BatchIds<T = ()> {
    /// The ids of each run; all runs one after the other are the ids of all texts in order.
    pub runs: Vec<Vec<TokenId>>,
    /// What the caller's `finish` made of each run (`Encoder::encode_batch_with`), in order.
    pub finished: Vec<T>,
    /// Each piece in order: the index of its text, and its number of ids. A text is one piece
    /// unless it is longer than `BATCH_PIECE`.
    pub pieces: Vec<(usize, usize)>,
    pub n_texts: usize,
}

/// A piece of a run, as `Encoder::encode_batch_with`'s `finish` sees it: the index of its text,
/// its number of ids, and whether it is the whole text.
pub type RunPiece = (usize, usize, bool);

impl<T> BatchIds<T> {
    /// The number of ids of each text.
    pub fn text_lens(&self) -> Vec<usize> {
        let mut lens = vec![0; self.n_texts];
        for &(i, n) in &self.pieces {
            lens[i] += n;
        }
        lens
    }

    /// The ids of each text, in order (copied only for texts of several pieces).
    pub fn texts(&self) -> Vec<std::borrow::Cow<'_, [TokenId]>> {
        let mut texts: Vec<std::borrow::Cow<'_, [TokenId]>> = Vec::with_capacity(self.n_texts);
        let mut runs = self.runs.iter();
        let mut run: &[TokenId] = &[];
        for &(i, n) in &self.pieces {
            // a piece lies in one run: past the end of this one, its ids start the next
            while run.len() < n {
                match runs.next() {
                    Some(next) => run = next,
                    None => break,
                }
            }
            let (ids, rest) = run.split_at(n.min(run.len()));
            run = rest;
            match texts.get_mut(i) {
                Some(text) => text.to_mut().extend_from_slice(ids),
                None => texts.push(ids.into()),
            }
        }
        texts
    }
}

/// The texts of a batch, for `Encoder::encode_batch`, which asks for them run by run on the
/// worker that encodes the run. Why not all up front: for Python strings, getting a text's
/// UTF-8 takes the interpreter lock (and copies each non-ASCII one); done by the calling thread
/// for the whole batch, it was ~10% of a 2-thread batch of the large corpus, the other core idle.
pub trait BatchTexts: Sync {
    /// The number of texts.
    fn count(&self) -> usize;
    /// About the length of text `i` in bytes (its length in characters will do).
    fn size(&self, i: usize) -> usize;
    /// The texts `range`.
    fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError>;
}

impl<T: AsRef<str> + Sync> BatchTexts for [T] {
    fn count(&self) -> usize {
        self.len()
    }

    fn size(&self, i: usize) -> usize {
        self[i].as_ref().len()
    }

    fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError> {
        Ok(self[range].iter().map(AsRef::as_ref).collect())
    }
}

/// A piece of a batch to encode: the index of its text, and the piece when the text was cut
/// (None: the whole text, got by the worker).
type Task<'t> = (usize, Option<&'t str>);

/// `tasks` (about `size` bytes in all; `bytes_of` tells each one's) cut into runs of consecutive
/// tasks for `threads` workers: one run on one thread, else ~4 per thread (rayon balances them).
fn runs_of<'a, 't>(
    tasks: &'a [Task<'t>],
    size: usize,
    threads: usize,
    bytes_of: impl Fn(&Task<'t>) -> usize,
) -> Vec<&'a [Task<'t>]> {
    let target = match threads {
        1 => usize::MAX,
        _ => (size / (4 * threads)).max(1 << 16),
    };
    let mut runs = Vec::new();
    let (mut from, mut bytes) = (0, 0);
    for (k, task) in tasks.iter().enumerate() {
        bytes += bytes_of(task);
        if bytes >= target {
            runs.push(&tasks[from..=k]);
            (from, bytes) = (k + 1, 0);
        }
    }
    if from < tasks.len() {
        runs.push(&tasks[from..]);
    }
    runs
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
        // `cache::NONE` marks unused places in the encoder's cache: no token may have that id
        if max_id > 4 * n_ids + (1 << 20) || max_id > cache::NONE as usize {
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
        let mut pairs = Vec::with_capacity(merges.len());
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
            pairs.push(((find(&left)?, find(&right)?), find(&joined)?));
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
            pairs: PairTable::new(pairs.into_iter(), &byte_ids),
            decoder,
            spare_caches: Mutex::new(Vec::new()),
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
            true => text.len() / 2 + 4 * cache::BATCH,
            false => text.len() / 3 + 16,
        };
        out.try_reserve(room)
            .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
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
        let mut caches = self.take_caches(1, limit);
        caches[0].expect(text.len() / BYTES_PER_ENTRY);
        let mut pos = 0;
        let result = loop {
            if pos == text.len() {
                break Ok(());
            }
            let end = self
                .next_stop(text, pos, set, CHECK_EVERY, true)
                .unwrap_or(text.len());
            if let Err(e) = f(&text[pos..end], set, &mut caches[0]) {
                break Err(e);
            }
            pos = end;
            if pos < text.len() && !check() {
                break Err(EncodeError::Interrupted);
            }
        };
        self.give_back(caches);
        result
    }

    /// Where a piece of `text` that starts at the safe cut `pos` may end: the last safe cut
    /// within `window` bytes, or within a window twice as large if there is none, etc. The end
    /// of the text counts as a cut when `to_end`; else None when no cut follows `pos`.
    fn next_stop(
        &self,
        text: &str,
        pos: usize,
        set: &SpecialSet,
        mut window: usize,
        to_end: bool,
    ) -> Option<usize> {
        loop {
            let mut limit = pos.saturating_add(window.max(1));
            if limit >= text.len() {
                if to_end {
                    return Some(text.len());
                }
                limit = text.len();
            }
            while !text.is_char_boundary(limit) {
                limit -= 1;
            }
            if let Some(p) = set.matcher.safe_cut(&text[pos..limit], &self.pretok) {
                return Some(pos + p);
            }
            if limit == text.len() {
                return None;
            }
            window *= 2;
        }
    }

    /// `text` (which starts at a safe cut) in pieces of about `size` bytes, cut where
    /// `next_stop` allows, so that the ids never depend on where pieces fall. Unless `last`,
    /// the text after the last safe cut is left out: what follows it may change its ids.
    pub fn pieces<'t>(
        &self,
        text: &'t str,
        set: &Option<SpecialSet>,
        size: usize,
        last: bool,
    ) -> Vec<&'t str> {
        let mut pieces = Vec::new();
        self.pieces_of(text, self.resolve(set), size, last, |p| pieces.push(p));
        pieces
    }

    /// `pieces`, each handed to `f`, with the special tokens resolved.
    fn pieces_of<'t>(
        &self,
        text: &'t str,
        set: &SpecialSet,
        size: usize,
        last: bool,
        mut f: impl FnMut(&'t str),
    ) {
        let mut pos = 0;
        while pos < text.len() {
            let Some(end) = self.next_stop(text, pos, set, size, last) else {
                break;
            };
            f(&text[pos..end]);
            pos = end;
        }
    }

    /// `n` caches, warm ones first, that take at most `limit` entries.
    fn take_caches(&self, n: usize, limit: usize) -> Vec<Cache> {
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

    /// Forgets the caches kept between calls (their memory, and what they learned).
    pub fn drop_caches(&self) {
        self.spare_caches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Keeps caches for later calls: at most `MAX_SPARE_CACHES`, of `SPARE_BYTES` in all.
    /// The oldest are dropped first: those just used are the warmest, and the next call takes
    /// them (it takes from the end). Dropping the returned cache instead, once a per-document
    /// loop had grown it past the budget, made the loop start cold again and again.
    fn give_back(&self, caches: Vec<Cache>) {
        let mut spare = self.spare_caches.lock().unwrap_or_else(|p| p.into_inner());
        spare.extend(caches);
        let mut bytes: usize = spare.iter().map(Cache::bytes).sum();
        while spare.len() > MAX_SPARE_CACHES || (bytes > SPARE_BYTES && spare.len() > 1) {
            bytes -= spare.remove(0).bytes();
        }
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
        // the cache's batch, kept with it: a new one per call was 12 KB to zero per document
        let mut batch = cache.batch.take().unwrap_or_default();
        let Batch { spans, keys } = &mut *batch;
        set.matcher.for_each_piece(text, |piece| match piece {
            Piece::Special(i) => out.push(set.ids[i]),
            Piece::Text(t) if result.is_ok() => {
                let b = t.as_bytes();
                let stop = std::sync::atomic::AtomicBool::new(false);
                // the count in a local, not in `Batch`: kept in a register, where a field was
                // loaded and stored back for every pretoken
                let mut n = 0;
                result = self.pretok.for_each_span(t, &stop, |start, end| {
                    spans[n] = (start, end);
                    n += 1;
                    if n == BATCH {
                        self.encode_batch_of(b, &spans[..n], keys, cache, out);
                        n = 0;
                    }
                });
                self.encode_batch_of(b, &spans[..n], keys, cache, out);
            }
            Piece::Text(_) => {}
        });
        cache.batch = Some(batch);
        Ok(result?)
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
            false => self.resolve(set).matcher.safe_cut(text, &self.pretok),
        };
        match end {
            Some(p) => Ok((
                self.encode_limited(&text[..p], set, &mut || true, cache::STREAM_ENTRIES)?,
                p,
            )),
            None => Ok((Vec::new(), 0)),
        }
    }

    /// The thread pool of calls on `num_threads` threads: the last one made, kept for the next
    /// call (a batch call made two new pools, and their new threads new allocator arenas). Not
    /// in a process forked since (a data loader's workers): its threads are not there, and a
    /// call would wait for them forever; that pool is left alone (dropping it would signal them).
    pub fn pool(&self, num_threads: usize) -> Result<Arc<rayon::ThreadPool>, EncodeError> {
        let n = crate::worker_count(num_threads);
        let pid = std::process::id();
        let mut kept = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        match kept.take() {
            Some((made_by, pool)) if made_by == pid && pool.current_num_threads() == n => {
                return Ok(kept.insert((pid, pool)).1.clone());
            }
            Some((made_by, pool)) if made_by != pid => std::mem::forget(pool),
            _ => {}
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| EncodeError::Threads(e.to_string()))?;
        Ok(kept.insert((pid, Arc::new(pool))).1.clone())
    }

    /// Encodes each text, on `num_threads` threads; `check` is called between groups of texts
    /// of about `8 × CHECK_EVERY` bytes (false stops with `Interrupted`).
    pub fn encode_batch<S: BatchTexts + ?Sized>(
        &self,
        texts: &S,
        set: &Option<SpecialSet>,
        num_threads: usize,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<BatchIds, EncodeError> {
        self.encode_batch_with(texts, set, num_threads, check, &|_, _| ())
    }

    /// `encode_batch`, with `finish` called on each run's ids and pieces by the worker that
    /// encoded it, while the others encode on. For Python: the lists of the run's texts, which,
    /// made on the calling thread after the batch, were a third of a 2-thread batch's time.
    pub fn encode_batch_with<S: BatchTexts + ?Sized, T: Send>(
        &self,
        texts: &S,
        set: &Option<SpecialSet>,
        num_threads: usize,
        check: &mut dyn FnMut() -> bool,
        finish: &(dyn Fn(&[TokenId], &[RunPiece]) -> T + Sync),
    ) -> Result<BatchIds<T>, EncodeError> {
        let pool = self.pool(num_threads)?;
        let threads = pool.current_num_threads();
        let set = self.resolve(set);
        let caches: Vec<Mutex<Cache>> = self
            .take_caches(threads, cache::entries_per_thread(threads))
            .into_iter()
            .map(Mutex::new)
            .collect();
        let encode_run = |run: &[Task<'_>], mut out: Vec<TokenId>| {
            // the run's texts, got on this worker while the others encode
            let first = run[0].0;
            let got = texts.get(first..run[run.len() - 1].0 + 1)?;
            // One cache per worker thread: the lock is never contended.
            let slot = rayon::current_thread_index().unwrap_or(0) % caches.len();
            let mut cache = caches[slot].lock().unwrap_or_else(|p| p.into_inner());
            let mut pieces = Vec::with_capacity(run.len());
            for &(i, piece) in run {
                let start = out.len();
                let text = piece.unwrap_or(got[i - first]);
                self.encode_into(text, set, &mut cache, &mut out)?;
                pieces.push((i, out.len() - start, piece.is_none()));
            }
            drop(cache);
            let made = finish(&out, &pieces);
            Ok((out, pieces, made))
        };
        let n_texts = texts.count();
        let mut all = BatchIds {
            runs: Vec::new(),
            finished: Vec::new(),
            pieces: Vec::with_capacity(n_texts),
            n_texts,
        };
        let mut first = 0;
        let mut tasks = Vec::new();
        let result = loop {
            if first == n_texts {
                break Ok(all);
            }
            let (mut end, mut size) = (first, 0);
            while end < n_texts && size < 8 * CHECK_EVERY {
                size += texts.size(end);
                end += 1;
            }
            if let Err(e) = self.tasks_of(texts, first..end, set, &mut tasks) {
                break Err(e);
            }
            first = end;
            let bytes_of = |&(i, piece): &Task<'_>| piece.map_or_else(|| texts.size(i), str::len);
            let runs = runs_of(&tasks, size, threads, bytes_of);
            // each run's vector made here, not on the workers: freed by this thread later,
            // those made on the workers went back to their allocator arenas, which returned
            // the memory to the system, and the next call's vectors faulted it in again. Room
            // for half an id a byte, as a document gets (`encode_limited`): with a third, every
            // run's ids were copied once to a vector twice as large (perf: the first page
            // faults of 8 MB batches were mostly that copy's)
            let outs = runs.iter().map(|run| {
                let bytes: usize = run.iter().map(bytes_of).sum();
                let mut out = Vec::new();
                out.try_reserve(bytes / 2 + 4 * cache::BATCH)
                    .map_err(|_| EncodeError::OutOfMemory(bytes))?;
                Ok(out)
            });
            let done = outs
                .collect::<Result<Vec<_>, EncodeError>>()
                .and_then(|outs| {
                    pool.install(|| {
                        runs.par_iter()
                            .zip(outs)
                            .map(|(run, out)| encode_run(run, out))
                            .collect::<Result<Vec<_>, EncodeError>>()
                    })
                });
            match done {
                Ok(done) => {
                    for (ids, pieces, made) in done {
                        all.runs.push(ids);
                        all.finished.push(made);
                        all.pieces.extend(pieces.iter().map(|&(i, n, _)| (i, n)));
                    }
                }
                Err(e) => break Err(e),
            }
            if first < n_texts && !check() {
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

    /// The tasks of texts `range` into `tasks` (emptied first). Texts longer than `BATCH_PIECE`
    /// in pieces (at safe cuts: the same ids): one long text last in a group left the other
    /// threads idle until it was done.
    fn tasks_of<'t, S: BatchTexts + ?Sized>(
        &self,
        texts: &'t S,
        range: std::ops::Range<usize>,
        set: &SpecialSet,
        tasks: &mut Vec<Task<'t>>,
    ) -> Result<(), EncodeError> {
        tasks.clear();
        for i in range {
            match texts.size(i) > BATCH_PIECE {
                true => self.pieces_of(texts.get(i..i + 1)?[0], set, BATCH_PIECE, true, |p| {
                    tasks.push((i, Some(p)))
                }),
                false => tasks.push((i, None)),
            }
        }
        Ok(())
    }

    /// Encodes the pretokens `spans` (byte ranges of `b`), with `keys` for room. Three loops, each
    /// tight: the scanner only records ranges; then each pretoken's cache key and hash; then
    /// the lookups, each slot asked for `AHEAD` pretokens before it is read. The table
    /// outgrows the CPU caches on large inputs, and a lookup that waits for memory costs
    /// ~100 ns; asked for early, the slot is there.
    #[inline(never)]
    fn encode_batch_of(
        &self,
        b: &[u8],
        spans: &[(usize, usize)],
        keys: &mut [(u128, u64); BATCH],
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) {
        let n = spans.len();
        let keys = &mut keys[..n];
        for (&(s, e), key) in spans.iter().zip(keys.iter_mut()) {
            let k = cache::key_at(b, s, e - s);
            *key = (k, crate::mix(k));
        }
        for &(_, hash) in keys.iter().take(AHEAD) {
            cache.prefetch(hash);
        }
        let mut i = 0;
        while i < n {
            i = cache.get_run(keys, i, out);
            if let Some(&(s, e)) = spans.get(i) {
                let (key, hash) = keys[i];
                self.encode_uncommon(&b[s..e], key, hash, cache, out);
                i += 1;
            }
        }
    }

    /// A pretoken whose ids are not inline in its first slot: further along the table, spilled,
    /// of 16+ bytes, or not cached.
    #[inline(never)]
    fn encode_uncommon(
        &self,
        word: &[u8],
        key: u128,
        hash: u64,
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) {
        match word.len() {
            1..=crate::PACKED_MAX if cache.get(key, hash, out) => {}
            16..=TAIL_MAX if cache.get_tail(key, hash, word, out) => {}
            _ => self.encode_word(word, key, cache, out),
        }
    }

    /// BPE of one pretoken not found in the cache, appended to `out`, and cached: pretokens of up
    /// to 15 bytes by their `key` (`cache::key_at`), of 16 to `TAIL_MAX` bytes (non-ASCII words,
    /// whitespace runs, long identifiers: ~9% of the bytes) by `key` and their tail, longer ones
    /// up to `LONG_WORD` bytes by their bytes.
    #[inline(never)]
    fn encode_word(&self, word: &[u8], key: u128, cache: &mut Cache, out: &mut Vec<TokenId>) {
        let long = word.len() > TAIL_MAX;
        if long && word.len() <= LONG_WORD && cache.get_long(word, out) {
            return;
        }
        let start = out.len();
        self.merge_word(word, out);
        match word.len() {
            0..=crate::PACKED_MAX => cache.insert(key, &out[start..]),
            16..=TAIL_MAX => cache.insert_tail(key, word, &out[start..]),
            _ if word.len() <= LONG_WORD => cache.insert_long(word, &out[start..]),
            _ => {}
        }
    }

    /// BPE of `word` (1+ bytes), appended to `out`, without the cache (public for
    /// `encode_profile`'s `misses` mode, which times it alone).
    #[inline(never)]
    pub fn merge_word(&self, word: &[u8], out: &mut Vec<TokenId>) {
        match word {
            &[byte] => out.push(self.byte_ids[byte as usize]),
            _ if word.len() <= SHORT => merge::merge_short(&self.pairs, &self.byte_ids, word, out),
            _ => {
                let tokens: Vec<TokenId> =
                    word.iter().map(|&b| self.byte_ids[b as usize]).collect();
                merge::merge_long(&self.pairs, &tokens, out);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::GPT2_PATTERN;

    /// BPE of `word` by the short loop or the heap.
    fn merged(enc: &Encoder, word: &[u8], short: bool) -> Vec<TokenId> {
        let mut out = vec![];
        match short && word.len() <= SHORT {
            true => merge::merge_short(&enc.pairs, &enc.byte_ids, word, &mut out),
            false => {
                let tokens: Vec<TokenId> = word.iter().map(|&b| enc.byte_ids[b as usize]).collect();
                merge::merge_long(&enc.pairs, &tokens, &mut out)
            }
        }
        out
    }

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
            let word = vec![b'a'; n];
            assert_eq!(
                merged(&enc, &word, true),
                merged(&enc, &word, false),
                "n = {n}"
            );
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
        // merged ids from 256 (16-bit ranks and the narrow pair table) or from 70,000 (wide)
        for first_id in [256, 70_000] {
            let mut vocab: Vec<(TokenId, Vec<u8>)> =
                (0..=255u8).map(|b| (b as TokenId, vec![b])).collect();
            let mut pairs = Vec::new();
            for (a, b) in &merges {
                let joined = [*a, *b].concat();
                if !vocab.iter().any(|(_, v)| *v == joined) {
                    vocab.push((first_id + vocab.len() as TokenId - 256, joined));
                }
                pairs.push((a.to_vec(), b.to_vec()));
            }
            let enc = Encoder::new(vocab, pairs, vec![], GPT2_PATTERN).unwrap();
            random_words_agree(&enc);
        }
    }

    /// The short loop and the heap give the same ids on 3,000 random words of "abc".
    fn random_words_agree(enc: &Encoder) {
        let mut seed = 12345u64;
        for _ in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = 2 + (seed >> 58) as usize; // 2..=65
            let word: Vec<u8> = (0..n.min(SHORT))
                .map(|k| b"abc"[((seed >> (k % 29 * 2)) % 3) as usize])
                .collect();
            assert_eq!(
                merged(enc, &word, true),
                merged(enc, &word, false),
                "{word:?}"
            );
        }
    }

    #[test]
    fn batches_give_each_text_its_ids() {
        let enc = toy();
        let long = "aaa aaaaa <s>a ".repeat(BATCH_PIECE / 8);
        let texts = ["", "aaaaa", &long, "", "a<s>", &long, "", "aa aa"];
        for threads in [1, 2, 3] {
            let ids = enc
                .encode_batch(&texts[..], &None, threads, &mut || true)
                .unwrap();
            let got = ids.texts();
            assert_eq!(got.len(), texts.len());
            for ((text, got), n) in texts.iter().zip(&got).zip(ids.text_lens()) {
                let want = enc.encode(text, &None).unwrap();
                assert_eq!(got.as_ref(), want, "{threads} threads");
                assert_eq!(n, want.len());
            }
            let all: Vec<TokenId> = ids.runs.concat();
            assert_eq!(all, got.concat());
            assert!(threads == 1 || ids.runs.len() > 2, "{}", ids.runs.len());
        }
    }

    #[test]
    fn finish_sees_each_run_and_its_pieces() {
        let enc = toy();
        let long = "aaa aaaaa <s>a ".repeat(BATCH_PIECE / 8);
        let mut texts: Vec<String> = (0..500).map(|i| format!("aa{i} a")).collect();
        texts[100] = long.clone();
        texts[400] = long;
        for threads in [1, 2, 3] {
            let finish = |ids: &[TokenId], pieces: &[RunPiece]| (ids.to_vec(), pieces.to_vec());
            let all = enc
                .encode_batch_with(&texts[..], &None, threads, &mut || true, &finish)
                .unwrap();
            let mut seen = Vec::new();
            for ((ids, pieces), run) in all.finished.iter().zip(&all.runs) {
                assert_eq!(ids, run);
                assert_eq!(pieces.iter().map(|p| p.1).sum::<usize>(), run.len());
                seen.extend(pieces.iter().copied());
            }
            let pieces: Vec<(usize, usize)> = seen.iter().map(|&(i, n, _)| (i, n)).collect();
            assert_eq!(pieces, all.pieces, "{threads} threads");
            for &(i, _, whole) in &seen {
                assert_eq!(whole, texts[i].len() <= BATCH_PIECE, "text {i}");
            }
        }
    }

    /// Texts got run by run, as Python's are: sizes in characters, and maybe one unreadable.
    struct Lazy {
        texts: Vec<String>,
        bad: Option<usize>,
        gets: std::sync::atomic::AtomicUsize,
    }

    impl BatchTexts for Lazy {
        fn count(&self) -> usize {
            self.texts.len()
        }

        fn size(&self, i: usize) -> usize {
            self.texts[i].chars().count()
        }

        fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError> {
            self.gets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.bad {
                Some(i) if range.contains(&i) => Err(EncodeError::Unreadable),
                _ => Ok(self.texts[range].iter().map(String::as_str).collect()),
            }
        }
    }

    #[test]
    fn batch_texts_got_by_runs() {
        let enc = toy();
        // 3-byte characters: sizes in characters undercount
        let wide = "aa \u{4e00}\u{4e01} aaaa ".repeat(BATCH_PIECE / 8);
        let mut texts: Vec<String> = (0..300).map(|i| format!("aa{i} \u{e9}aaa")).collect();
        texts.insert(100, wide.clone());
        texts.insert(200, wide.repeat(3));
        let want = enc
            .encode_batch(&texts[..], &None, 1, &mut || true)
            .unwrap();
        let lazy = Lazy {
            texts,
            bad: None,
            gets: 0.into(),
        };
        for threads in [1, 2, 3] {
            let got = enc
                .encode_batch(&lazy, &None, threads, &mut || true)
                .unwrap();
            assert_eq!(got.texts(), want.texts(), "{threads} threads");
        }
        assert!(lazy.gets.load(std::sync::atomic::Ordering::Relaxed) > 3);
        let bad = Lazy {
            bad: Some(150),
            ..lazy
        };
        enc.drop_caches();
        let err = enc.encode_batch(&bad, &None, 2, &mut || true).err();
        assert!(matches!(err, Some(EncodeError::Unreadable)), "{err:?}");
        // the workers' caches were given back
        assert_eq!(enc.spare_caches.lock().unwrap().len(), 2);
    }

    #[test]
    fn cached_ids_equal_merged_ids_cold_and_warm() {
        // one-byte pretokens, words of 1-4 ids (inline in the cache), of 5+ ids (spilled), of
        // 16+ bytes (tails) and of 256+ bytes, repeated so that the second pass hits the cache
        let enc = toy();
        let words: Vec<String> = [1, 2, 3, 4, 5, 8, 9, 13, 15, 16, 17, 40, 255, 256, 300]
            .iter()
            .flat_map(|&n| ["a".repeat(n), format!(" {}", "a".repeat(n)), "!".repeat(n)])
            .collect();
        let text = words.join(" ").repeat(3);
        let mut want = vec![];
        let pretok = Pretokenizer::new(GPT2_PATTERN).unwrap();
        pretok
            .for_each(&text, |w| want.extend(merged(&enc, w.as_bytes(), false)))
            .unwrap();
        for pass in 0..3 {
            assert_eq!(enc.encode(&text, &None).unwrap(), want, "pass {pass}");
        }
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
