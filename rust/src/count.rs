//! Counting, the pure per-shard step of training: (file, byte range) or texts → word counts.
//! A file is read in chunks cut only where the cut cannot change the result (`Specials::safe_cut`),
//! decoded (invalid UTF-8 replaced or refused), pretokenized and counted on `num_threads` threads
//! into one table they share; each thread reads regions of a regular file itself (`count_file`).
//! Memory is bounded by the table plus a few chunks in flight.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError};

use rayon::prelude::*;

use crate::pretokenize::{Piece, PretokenizeError, Pretokenizer, Specials};
use crate::shards::CutFinder;
use crate::{hot_slot, pack_at, pack_word, FastMap, PACKED_MAX};

mod long;
use long::LongQueue;
pub(crate) use long::LongWords;

/// Errors of the counting stage.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// Reading the input failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Invalid UTF-8 in strict mode.
    #[error("{path}: invalid UTF-8 at byte offset {offset}")]
    InvalidUtf8 { path: PathBuf, offset: u64 },
    /// The pattern or the special tokens are bad, or the pattern failed.
    #[error(transparent)]
    Pretokenize(#[from] PretokenizeError),
    /// The progress callback asked to stop (e.g. Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// A buffer could not be allocated.
    #[error("out of memory: could not allocate {n_bytes} bytes for reading {path}")]
    OutOfMemory { path: PathBuf, n_bytes: usize },
    /// The word table could not grow.
    #[error("out of memory: the table of distinct words could not grow")]
    TableFull,
    /// A count would pass 2^64 - 1.
    #[error("a word count would pass 2^64 - 1 (18446744073709551615)")]
    Overflow,
    /// No counting thread could start.
    #[error("could not start a counting thread (out of memory or thread limit)")]
    Threads,
    /// A worker thread panicked: a bug, reported rather than hidden.
    #[error("internal error in a counting thread: {0}")]
    Internal(String),
}

impl From<TableError> for CountError {
    fn from(e: TableError) -> Self {
        match e {
            TableError::Full => CountError::TableFull,
            TableError::Overflow => CountError::Overflow,
        }
    }
}

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
    fn new(key: u128) -> Self {
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
const PARTS: usize = 256;

#[inline(always)]
fn part_of(key: u128) -> usize {
    // Low bits of the mix: the hot cache uses the high ones, so both spread independently.
    let mixed =
        ((key as u64) ^ ((key >> 64) as u64).rotate_left(41)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (mixed >> 24) as usize % PARTS
}

/// The partition of a word longer than `PACKED_MAX` bytes, from its `long::hash_of` (middle
/// bits: the table within uses the low and the high ones).
#[inline(always)]
fn long_part(hash: u64) -> usize {
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
fn add_one<K: std::hash::Hash + Eq>(
    map: &mut FastMap<K, u64>,
    key: K,
    n: u64,
) -> Result<(), TableError> {
    map.try_reserve(1).map_err(|_| TableError::Full)?;
    let count = map.entry(key).or_insert(0);
    *count = count.checked_add(n).ok_or(TableError::Overflow)?;
    Ok(())
}

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

/// The partitions of one count (packed words and longer ones), shared by its counters.
type SharedParts = Vec<Mutex<(ShortMap, LongWords)>>;

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
                crate::prefetch(self.hot.as_ptr().wrapping_add(slot));
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

/// How to read and count.
pub struct CountConfig {
    /// Special tokens: hard boundaries, never counted.
    pub specials: Specials,
    /// The pretokenizer.
    pub pretok: Pretokenizer,
    /// Fail on invalid UTF-8 instead of replacing it with U+FFFD.
    pub strict: bool,
    /// Target chunk size in bytes (a chunk grows past it only until a safe cut is found).
    pub chunk_size: usize,
    /// Worker threads.
    pub num_threads: usize,
    /// Where a file may be cut for workers to read its regions themselves (`count_file`);
    /// None: one reader thread.
    pub cuts: Option<CutFinder>,
}

/// What counting a file saw.
#[derive(Default, Debug, Clone, Copy)]
pub struct CountStats {
    /// Bytes read.
    pub n_bytes: u64,
    /// Invalid UTF-8 sequences replaced by U+FFFD.
    pub n_replaced: u64,
    /// Chunks handed to the workers.
    pub n_chunks: u64,
    /// Bytes of the largest chunk: far above the chunk size when a long stretch of text had no
    /// safe cut (one pretoken of megabytes, or a custom pattern and no special token).
    pub max_chunk: u64,
}

impl CountStats {
    fn add_chunk(&mut self, chunk: &str) {
        self.n_chunks += 1;
        self.max_chunk = self.max_chunk.max(chunk.len() as u64);
    }

    fn add(&mut self, other: CountStats) {
        self.n_bytes += other.n_bytes;
        self.n_replaced += other.n_replaced;
        self.n_chunks += other.n_chunks;
        self.max_chunk = self.max_chunk.max(other.max_chunk);
    }
}

/// Decodes `raw` into `out`, replacing each maximal invalid subsequence by U+FFFD (as Python's
/// `errors="replace"` does). Returns the number replaced, or the offset of the first invalid byte
/// when `strict`.
fn decode_into(raw: &[u8], out: &mut String, strict: bool) -> Result<u64, usize> {
    // valid text (nearly always) is checked at SIMD speed; std finds where it is not
    if let Ok(s) = simdutf8::basic::from_utf8(raw) {
        out.push_str(s);
        return Ok(0);
    }
    let mut rest = raw;
    let mut n_replaced = 0;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return Ok(n_replaced);
            }
            Err(e) => {
                let valid = e.valid_up_to();
                if strict {
                    return Err(raw.len() - rest.len() + valid);
                }
                // SAFETY-free: from_utf8 said the prefix is valid.
                out.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                out.push('\u{FFFD}');
                n_replaced += 1;
                let skip = e.error_len().unwrap_or(rest.len() - valid);
                rest = &rest[valid + skip..];
            }
        }
    }
}

/// Where raw bytes may be cut for decoding so that both sides decode as the whole would: before
/// the last byte that is not a continuation byte (0b10xxxxxx). Such a byte is never inside a
/// maximal subpart that began earlier, and begins its own. When it lies 5 or more bytes before
/// the end, the sequence it begins is over (at most 4 bytes) and the whole is cut; so are bytes
/// that are all continuations (each then is an invalid sequence of its own).
/// (Cutting only before ASCII, as before, never cut text with no ASCII, e.g. Chinese.)
fn decode_cut(raw: &[u8]) -> usize {
    match raw.iter().rposition(|&b| b & 0xc0 != 0x80) {
        Some(q) if raw.len() - q <= 4 => q,
        _ => raw.len(),
    }
}

/// Counts the words of bytes `start..end` of `path` (the whole file for `0..u64::MAX`).
/// `start` and `end` must be safe cuts (0, the end, or cuts `safe_cut` would choose).
/// `progress(n)` is called on the calling thread with the bytes read so far; false stops.
/// Any error (of a reader or of a worker, a panic included) ends the whole call with it.
///
/// A regular file is cut in regions at safe cuts (`config.cuts`), and each worker reads the regions
/// it takes itself. Why: one reader thread for all (read, UTF-8 check, copy) costs about a ninth of
/// what counting the same bytes costs, so it keeps up with about 9 counting threads, not 16 or 64.
/// Pipes, one worker, or no cut finder: one reader thread hands chunks to the workers.
pub fn count_file(
    path: &Path,
    start: u64,
    end: u64,
    config: &CountConfig,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<(WordCounts, CountStats), CountError> {
    let io_err = |source| CountError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    if start > 0 {
        file.seek(SeekFrom::Start(start)).map_err(io_err)?;
    }
    let meta = file.metadata().map_err(io_err)?;
    let mut n_bytes = end.saturating_sub(start);
    if meta.is_file() {
        n_bytes = n_bytes.min(meta.len().saturating_sub(start)); // pipes report no length
    }
    // A chunk never needs to be larger than the input (plus one byte to see its end).
    let chunk_size = config.chunk_size.clamp(
        1,
        usize::try_from(n_bytes)
            .unwrap_or(usize::MAX)
            .saturating_add(1),
    );
    let n_chunks = usize::try_from(n_bytes / chunk_size as u64).unwrap_or(usize::MAX);
    let n_workers = crate::worker_count(config.num_threads).min(n_chunks.saturating_add(1));
    let shared = Counter::shared();
    let regions = match &config.cuts {
        Some(finder) if meta.is_file() && n_workers > 1 => plan_regions(
            finder,
            path,
            (start, start + n_bytes),
            n_workers,
            chunk_size,
        )
        .map_err(io_err)?,
        _ => Vec::new(),
    };
    let job = Job {
        path,
        config,
        chunk_size,
        shared: &shared,
    };
    let stats = if regions.len() > 1 {
        count_regions(&job, &regions, n_workers, progress)?
    } else {
        count_stream(&job, file.take(n_bytes), start, n_workers, progress)?
    };
    // the workers, and their hold on the table, are gone
    Ok((WordCounts::from_shared(shared), stats))
}

/// What every thread of one `count_file` call shares.
struct Job<'a> {
    path: &'a Path,
    config: &'a CountConfig,
    chunk_size: usize,
    shared: &'a Arc<SharedParts>,
}

impl Job<'_> {
    fn error(&self, e: ReadError) -> CountError {
        let path = self.path.to_owned();
        match e {
            ReadError::Io(source) => CountError::Io { path, source },
            ReadError::InvalidUtf8(offset) => CountError::InvalidUtf8 { path, offset },
            ReadError::Interrupted => CountError::Interrupted,
            ReadError::OutOfMemory(n_bytes) => CountError::OutOfMemory { path, n_bytes },
            ReadError::Count(e) => e,
        }
    }
}

/// How far before a region's target its cut is looked for. Where text has no cut for this long
/// (one pretoken of 256 KiB, or a custom pattern's text between rare special tokens), the
/// region grows into the next instead: planning reads at most ~340 KB a region. (Looked for up
/// to 64 MiB back, planning 100 MB of one letter took several times as long as counting it.)
const REGION_BACK: u64 = 256 << 10;

/// Bytes `start..end` cut in regions for `n_workers` to take in turn: each a share of what is
/// left (`1 / (2 n_workers)`, at least a chunk), so that regions shrink towards the end and the
/// workers finish together; each cut at the last safe cut before its target, at most
/// `REGION_BACK` before it and after the cut before (none found: the region grows into the
/// next). No regions (empty) where the finder can find no cut.
fn plan_regions(
    finder: &CutFinder,
    path: &Path,
    (start, end): (u64, u64),
    n_workers: usize,
    chunk_size: usize,
) -> std::io::Result<Vec<(u64, u64)>> {
    if !finder.can_cut() {
        return Ok(Vec::new());
    }
    let min = (chunk_size as u64).max(1);
    let mut targets = Vec::new();
    let mut at = start;
    while end - at > 2 * min {
        at += ((end - at) / (2 * n_workers as u64)).max(min);
        targets.push(at);
    }
    // ascending, each after the one before (`find_cuts`)
    let cuts = finder.find_cuts(path, &targets, REGION_BACK)?;
    let inner = cuts.into_iter().flatten().filter(|&c| start < c && c < end);
    let bounds: Vec<u64> = std::iter::once(start)
        .chain(inner)
        .chain(std::iter::once(end))
        .collect();
    Ok(bounds.windows(2).map(|w| (w[0], w[1])).collect())
}

/// Counts the regions of a file on `n_workers` threads, each reading the regions it takes;
/// this thread reports progress. In strict mode the error is the file's first invalid byte:
/// after one is found, only regions that start before it are still counted.
fn count_regions(
    job: &Job<'_>,
    regions: &[(u64, u64)],
    n_workers: usize,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<CountStats, CountError> {
    let flags = RegionFlags {
        next: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        first_bad: AtomicU64::new(u64::MAX),
        n_read: AtomicU64::new(0),
    };
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    std::thread::scope(|scope| {
        let workers = spawn_workers(scope, n_workers, || {
            let done = done_tx.clone();
            let (flags, done) = (&flags, done);
            move || {
                let result = count_some_regions(job, regions, flags);
                drop(done); // this thread is done: the loop below stops when all are
                result
            }
        });
        drop(done_tx);
        let workers = workers?;
        let mut interrupted = false;
        while let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(SEND_WAIT) {
            if !interrupted && !progress(flags.n_read.load(Ordering::Relaxed)) {
                interrupted = true;
                flags.failed.store(true, Ordering::Relaxed);
            }
        }
        let mut stats = CountStats::default();
        for s in join_workers(workers, interrupted.then_some(CountError::Interrupted))? {
            stats.add(s);
        }
        let bad = flags.first_bad.load(Ordering::Relaxed);
        if bad != u64::MAX {
            return Err(job.error(ReadError::InvalidUtf8(bad)));
        }
        progress(stats.n_bytes);
        Ok(stats)
    })
}

/// The state the workers of `count_regions` share.
struct RegionFlags {
    /// The next region to take.
    next: AtomicUsize,
    /// An error (or Ctrl-C) ends the count.
    failed: AtomicBool,
    /// The first invalid byte found (strict mode), `u64::MAX` if none.
    first_bad: AtomicU64,
    /// Bytes read by all workers.
    n_read: AtomicU64,
}

impl RegionFlags {
    /// Whether the region from `start` is still to be counted: not after a failure, nor past
    /// the first invalid byte (its result would not be reported).
    fn counts(&self, start: u64) -> bool {
        !self.failed.load(Ordering::Relaxed) && start <= self.first_bad.load(Ordering::Relaxed)
    }
}

/// A worker of `count_regions`: takes regions in turn until none is left or the count failed.
/// Stops quietly where another thread reports (a failure, Ctrl-C, an invalid byte before).
fn count_some_regions(
    job: &Job<'_>,
    regions: &[(u64, u64)],
    flags: &RegionFlags,
) -> Result<CountStats, CountError> {
    guarded(&flags.failed, || {
        let mut counter = Counter::sharing(job.shared);
        let mut stats = CountStats::default();
        let mut file = File::open(job.path).map_err(|e| job.error(ReadError::Io(e)))?;
        loop {
            let i = flags.next.fetch_add(1, Ordering::Relaxed);
            let Some(&(start, end)) = regions.get(i) else {
                break;
            };
            // regions are taken in order: once one is past the first invalid byte, all are
            if !flags.counts(start) {
                break;
            }
            file.seek(SeekFrom::Start(start))
                .map_err(|e| job.error(ReadError::Io(e)))?;
            let mut seen = stats.n_bytes;
            let mut progress = |n: u64| {
                flags.n_read.fetch_add(n - seen, Ordering::Relaxed);
                seen = n;
                flags.counts(start)
            };
            let mut count = |chunk: String, _: u64, _: &mut dyn FnMut(u64) -> bool| {
                counter
                    .add_document(&chunk, job.config, &flags.failed)
                    .map_err(ReadError::Count)?;
                Ok(true)
            };
            let read = read_chunks(
                &mut (&mut file).take(end - start),
                (job, start),
                &mut stats,
                &mut progress,
                (&mut count, &flags.failed),
            );
            match read {
                Ok(()) | Err(ReadError::Interrupted) => {}
                Err(ReadError::Count(CountError::Pretokenize(PretokenizeError::Stopped))) => {}
                Err(ReadError::InvalidUtf8(offset)) => {
                    flags.first_bad.fetch_min(offset, Ordering::Relaxed);
                }
                Err(e) => return Err(job.error(e)),
            }
        }
        Ok(counter.finish().map(|()| stats)?)
    })
}

/// Counts a stream (a pipe, or a file not cut in regions): one reader thread, this one, hands
/// chunks to `n_workers` workers. A failed worker raises a flag and drains the channel, so the
/// reader never blocks on it.
fn count_stream(
    job: &Job<'_>,
    mut reader: impl Read,
    start: u64,
    n_workers: usize,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<CountStats, CountError> {
    let mut stats = CountStats::default();
    let failed = AtomicBool::new(false);
    let (tx, rx) = crossbeam_channel::bounded::<String>(n_workers);
    std::thread::scope(|scope| {
        let workers = spawn_workers(scope, n_workers, || {
            || count_chunks(&rx, job.config, &failed, job.shared)
        })?;
        // Sends a chunk, waiting while the channel is full but looking at `progress` every
        // `SEND_WAIT` (for Ctrl-C: a slow custom pattern can keep the workers busy for long).
        // Ok(false): a worker failed; its error is the one to report.
        let mut send = |mut chunk: String,
                        n_read: u64,
                        progress: &mut dyn FnMut(u64) -> bool|
         -> Result<bool, ReadError> {
            loop {
                match tx.send_timeout(chunk, SEND_WAIT) {
                    Ok(()) => return Ok(!failed.load(Ordering::Relaxed)),
                    Err(SendTimeoutError::Disconnected(_)) => return Ok(false),
                    Err(SendTimeoutError::Timeout(back)) => chunk = back,
                }
                if failed.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                if !progress(n_read) {
                    return Err(ReadError::Interrupted);
                }
            }
        };
        let read = read_chunks(
            &mut reader,
            (job, start),
            &mut stats,
            progress,
            (&mut send, &failed),
        );
        if read.is_err() {
            failed.store(true, Ordering::Relaxed); // the workers skip what is queued
        }
        drop(tx);
        join_workers(workers, read.err().map(|e| job.error(e)))?;
        Ok(stats)
    })
}

/// Starts up to `n` workers, each running what `make` returns. Workers that cannot start (no
/// memory for a stack) are done without; none is an error.
fn spawn_workers<'scope, T: Send + 'scope, F: FnOnce() -> T + Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    n: usize,
    mut make: impl FnMut() -> F,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, T>>, CountError> {
    let workers: Vec<_> = (0..n)
        .map_while(|_| std::thread::Builder::new().spawn_scoped(scope, make()).ok())
        .collect();
    if workers.is_empty() {
        return Err(CountError::Threads);
    }
    Ok(workers)
}

/// The workers' results, or the first error: `first` (this thread's), else a worker's, a panic
/// as an internal error. A worker stopped mid-chunk by another's error (`Stopped`) has none.
fn join_workers<T>(
    workers: Vec<std::thread::ScopedJoinHandle<'_, Result<T, CountError>>>,
    mut first: Option<CountError>,
) -> Result<Vec<T>, CountError> {
    let mut results = Vec::with_capacity(workers.len());
    for w in workers {
        match w.join() {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(CountError::Pretokenize(PretokenizeError::Stopped))) => {}
            Ok(Err(e)) => first = first.or(Some(e)),
            Err(panic) => first = first.or(Some(internal(panic))),
        }
    }
    first.map_or(Ok(results), Err)
}

/// Runs a worker's `work`, a panic as an internal error; an error raises `failed`, so that the
/// other threads stop.
fn guarded<T>(
    failed: &AtomicBool,
    work: impl FnOnce() -> Result<T, CountError>,
) -> Result<T, CountError> {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|panic| Err(internal(panic)));
    if result.is_err() {
        failed.store(true, Ordering::Relaxed);
    }
    result
}

/// A panic of a worker thread as an error.
fn internal(panic: Box<dyn std::any::Any + Send>) -> CountError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    CountError::Internal(message)
}

enum ReadError {
    Io(std::io::Error),
    InvalidUtf8(u64),
    Interrupted,
    OutOfMemory(usize),
    /// Counting a chunk failed.
    Count(CountError),
}

/// How long the reader waits at most on a full channel before it looks at `progress` again,
/// and how often `count_regions` reports progress.
/// (Polling every 0.2 ms made counting on 2 cores switch threads about 9 times as often; at
/// 20 ms counting is as fast as at 2 ms, within the noise of the measurement.)
const SEND_WAIT: Duration = Duration::from_millis(20);

/// What `read_chunks` does with a chunk: (chunk, bytes read so far, progress) -> go on (false:
/// stop quietly, another thread reports why), or an error.
type Deliver<'a> =
    dyn FnMut(String, u64, &mut dyn FnMut(u64) -> bool) -> Result<bool, ReadError> + 'a;

/// Reads, decodes and cuts the input (which starts at byte `start` of the file) into chunks,
/// delivering each; stops early (without error) once `failed` is raised or `deliver` says so.
fn read_chunks(
    reader: &mut impl Read,
    (job, start): (&Job<'_>, u64),
    stats: &mut CountStats,
    progress: &mut dyn FnMut(u64) -> bool,
    (deliver, failed): (&mut Deliver<'_>, &AtomicBool),
) -> Result<(), ReadError> {
    let (config, chunk_size) = (job.config, job.chunk_size);
    let mut raw: Vec<u8> = Vec::new();
    let mut text = String::new();
    let mut target = chunk_size;
    let mut decoded_upto = start;
    loop {
        if failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        raw.try_reserve(chunk_size)
            .map_err(|_| ReadError::OutOfMemory(chunk_size))?;
        // into the spare capacity, not zeroed first (zeroing was 3% of counting's instructions)
        let n = read_full(reader, &mut raw, chunk_size).map_err(ReadError::Io)?;
        stats.n_bytes += n as u64;
        let eof = n == 0;
        let cut = if eof { raw.len() } else { decode_cut(&raw) };
        text.try_reserve(cut)
            .map_err(|_| ReadError::OutOfMemory(cut))?;
        stats.n_replaced += decode_into(&raw[..cut], &mut text, config.strict)
            .map_err(|off| ReadError::InvalidUtf8(decoded_upto + off as u64))?;
        decoded_upto += cut as u64;
        raw.drain(..cut);
        if eof {
            if !text.is_empty() {
                stats.add_chunk(&text);
                deliver(text, stats.n_bytes, progress)?;
            }
            progress(stats.n_bytes);
            return Ok(());
        }
        // (with the bytes held back for decoding: counting only `text`, which always lacks the
        // last byte read, a region's first chunk took two reads, twice the chunk size)
        if text.len() + raw.len() >= target {
            match config.specials.safe_cut(&text, &config.pretok) {
                Some(p) => {
                    let rest = text[p..].to_owned();
                    text.truncate(p);
                    stats.add_chunk(&text);
                    if !deliver(std::mem::replace(&mut text, rest), stats.n_bytes, progress)? {
                        return Ok(()); // another thread failed; its error is reported
                    }
                    target = chunk_size;
                }
                // No cut yet (one long word): wait for twice the text, so rescans stay linear.
                None => target = 2 * text.len(),
            }
        }
        if !progress(stats.n_bytes) {
            return Err(ReadError::Interrupted);
        }
    }
}

/// Appends up to `n` bytes of `reader` to `buf`, fewer only at the end of the input; returns
/// how many. `read_to_end` retries reads that were interrupted and reads into the vector's
/// spare capacity (which the caller reserved) without zeroing it.
fn read_full(reader: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> std::io::Result<usize> {
    reader.take(n as u64).read_to_end(buf)
}

/// A worker: counts chunks from the channel until it closes. After a failure (its own or
/// another's) it only drains the channel, so that the reader never waits on a full one.
fn count_chunks(
    rx: &Receiver<String>,
    config: &CountConfig,
    failed: &AtomicBool,
    shared: &Arc<SharedParts>,
) -> Result<(), CountError> {
    let result = guarded(failed, || {
        let mut counter = Counter::sharing(shared);
        for chunk in rx {
            if !failed.load(Ordering::Relaxed) {
                counter.add_document(&chunk, config, failed)?;
            }
        }
        Ok(counter.finish()?)
    });
    if result.is_err() {
        rx.iter().for_each(drop); // so that the reader never blocks on a full channel
    }
    result
}

/// Counts the words of independent texts (no pretoken spans two texts) on `num_threads` threads.
pub fn count_texts(texts: &[String], config: &CountConfig) -> Result<WordCounts, CountError> {
    let n = crate::worker_count(config.num_threads).min(texts.len().max(1));
    let per = texts.len().div_ceil(n).max(1);
    let shared = Counter::shared();
    let count_part = |part: &[String]| {
        let mut counter = Counter::sharing(&shared);
        for t in part {
            counter.add_document(t, config, &AtomicBool::new(false))?;
        }
        Ok::<_, CountError>(counter.finish()?)
    };
    std::thread::scope(|scope| {
        // A part whose thread cannot start is counted on this one instead.
        let mut workers = Vec::new();
        for part in texts.chunks(per) {
            match std::thread::Builder::new().spawn_scoped(scope, move || count_part(part)) {
                Ok(handle) => workers.push(handle),
                Err(_) => count_part(part)?,
            }
        }
        for w in workers {
            w.join().unwrap_or_else(|panic| Err(internal(panic)))?;
        }
        Ok::<_, CountError>(())
    })?;
    Ok(WordCounts::from_shared(shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Training's counting: the GPT-2 pattern, `specials`, strict UTF-8.
    fn config(specials: &[&str], chunk_size: usize, num_threads: usize) -> CountConfig {
        CountConfig {
            specials: Specials::new(specials).unwrap(),
            pretok: Pretokenizer::Gpt2,
            strict: true,
            chunk_size,
            num_threads,
            cuts: Some(CutFinder::new(specials, Pretokenizer::Gpt2).unwrap()),
        }
    }

    #[test]
    fn decode_replaces_maximal_subparts() {
        let mut out = String::new();
        let n = decode_into(b"a\xffb\xe2\x82c\xf0\x9f\x99", &mut out, false).unwrap();
        assert_eq!(out, "a\u{FFFD}b\u{FFFD}c\u{FFFD}");
        assert_eq!(n, 3);
        assert_eq!(decode_into(b"ab\xff", &mut String::new(), true), Err(2));
    }

    #[test]
    fn decoding_in_pieces_equals_decoding_whole() {
        let samples: [&[u8]; 4] = [
            "我们。你好 ab".as_bytes(),
            b"\xe4\xb8\xe4\xbd\xa0\x80\x80\x80\x80\x80\xf0\x9f\x99\x83\xed\xa0\x80",
            b"\x80\x80\xf0\x9f\x99\xc0\xc1\xf5\xff",
            "\u{10ffff}é\u{7ff}\u{800}".as_bytes(),
        ];
        for data in samples {
            let mut whole = String::new();
            decode_into(data, &mut whole, false).unwrap();
            for step in 1..=5 {
                // feed `step` bytes at a time, as the reader does, cutting where decode_cut says
                let (mut raw, mut text) = (Vec::new(), String::new());
                for piece in data.chunks(step) {
                    raw.extend_from_slice(piece);
                    let cut = decode_cut(&raw);
                    decode_into(&raw[..cut], &mut text, false).unwrap();
                    raw.drain(..cut);
                }
                decode_into(&raw, &mut text, false).unwrap();
                assert_eq!(text, whole, "{data:?} in steps of {step}");
            }
        }
    }

    #[test]
    fn chunk_size_does_not_change_counts() {
        let dir = std::env::temp_dir().join(format!("bytepair-count-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.txt");
        let text = "the cat<|e|>  sat\n\non the mat's  mat<|e|>é 12 ab".repeat(50);
        std::fs::write(&path, &text).unwrap();
        let config = |chunk_size, num_threads| config(&["<|e|>"], chunk_size, num_threads);
        let whole = count_file(&path, 0, u64::MAX, &config(1 << 20, 1), &mut |_| true)
            .unwrap()
            .0;
        for (size, threads) in [(1, 1), (3, 2), (17, 2), (64, 1), (5, 3)] {
            let got = count_file(&path, 0, u64::MAX, &config(size, threads), &mut |_| true)
                .unwrap()
                .0;
            assert_eq!(got, whole, "chunk size {size}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn regions_count_as_one_reader_does() {
        // workers reading regions of the file themselves (`cuts`) against one reader thread, on
        // every kind of text, invalid bytes replaced or refused, whole files and shards
        let dir = std::env::temp_dir().join(format!("bytepair-regions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mixed.txt");
        let mut data = Vec::new();
        for i in 0..400 {
            data.extend_from_slice(
                format!(
                    "doc {i}: the cat's mat\r\n\r\n  我们的猫。ภาษาไทย {{\"k\":[1,2]}}<|e|>\tx  \n"
                )
                .as_bytes(),
            );
            if i % 97 == 5 {
                data.extend_from_slice(b"bad \xff\xe2\x82 bytes ");
            }
        }
        std::fs::write(&path, &data).unwrap();
        let configure = |chunk_size, num_threads, strict, regions: bool| CountConfig {
            strict,
            cuts: regions.then(|| CutFinder::new(&["<|e|>"], Pretokenizer::Gpt2).unwrap()),
            ..config(&["<|e|>"], chunk_size, num_threads)
        };
        let count = |range: (u64, u64), config: &CountConfig| {
            count_file(&path, range.0, range.1, config, &mut |_| true)
                .map(|(counts, stats)| (counts, stats.n_bytes, stats.n_replaced))
                .map_err(|e| e.to_string())
        };
        let len = data.len() as u64;
        let finder = CutFinder::new(&["<|e|>"], Pretokenizer::Gpt2).unwrap();
        let cuts = finder
            .find_cuts(&path, &[len / 3, len / 2], crate::shards::MAX_BACK)
            .unwrap();
        let (a, b) = (cuts[0].unwrap(), cuts[1].unwrap());
        for range in [(0, u64::MAX), (0, a), (a, b), (b, u64::MAX)] {
            for strict in [false, true] {
                let want = count(range, &configure(1 << 20, 1, strict, false));
                if !strict {
                    assert!(want.as_ref().unwrap().2 > 0, "no byte replaced");
                }
                for (size, threads) in [(64, 2), (301, 3), (1000, 5), (4096, 2)] {
                    let got = count(range, &configure(size, threads, strict, true));
                    assert_eq!(
                        got, want,
                        "{range:?}, strict {strict}, {size} B, {threads} threads"
                    );
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn counts_past_the_hot_cache_are_exact() {
        // far more distinct words than the cache holds, skewed as real text is, so that words
        // are evicted, queued, flushed and met again; long words fill their queues too
        let mut next = crate::numbers(11);
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

    #[test]
    fn texts_count_alike_on_any_number_of_threads() {
        // the threads share one table of packed words and keep their own long words
        let texts: Vec<String> = (0..200)
            .map(|i| {
                format!(
                    "doc {i}: the cat sat, a_very_long_identifier_{} 😀{}",
                    i % 7,
                    i % 3
                )
            })
            .collect();
        let config = |num_threads| config(&[], 1 << 20, num_threads);
        let one = count_texts(&texts, &config(1)).unwrap();
        assert!(one.len() > 200, "{} words", one.len());
        for threads in [2, 3, 8] {
            assert_eq!(
                count_texts(&texts, &config(threads)).unwrap(),
                one,
                "{threads} threads"
            );
        }
        assert!(count_texts(&[], &config(3)).unwrap().is_empty());
    }
}
