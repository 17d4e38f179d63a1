//! Counting, the pure per-shard step of training: (file, byte range) or texts → word counts.
//! A file is read in chunks cut only where the cut cannot change the result (`Specials::safe_cut`),
//! decoded (invalid UTF-8 replaced or refused), pretokenized and counted on `num_threads` threads
//! into one table they share (`table.rs`, `counter.rs`); each thread reads regions of a regular
//! file itself (`regions.rs`), else one reader feeds them (`stream.rs`). Memory is bounded by the
//! table plus a few chunks in flight. Here: the entry points, their options and errors.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cuts::CutFinder;
use crate::pretokenize::{PretokenizeError, Pretokenizer, Specials};
use records::decoded;
use regions::{count_regions, plan_regions};
use stream::{count_stream, ReadError};
use table::SharedParts;
use workers::count_units;

mod counter;
mod long;
mod records;
mod regions;
mod stream;
mod table;
mod workers;

pub use counter::Counter;
pub(crate) use long::LongWords;
pub use records::{count_rows, Column, Compression};
pub(crate) use table::drop_on;
pub use table::{Packed, ShortMap, TableError, WordCounts};

/// Errors of the counting stage.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// Reading the input failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line of JSON records that is not a record with the text field.
    #[error("{}:{line}: {message}", path.display())]
    Record {
        path: PathBuf,
        line: u64,
        message: String,
    },
    /// A row of an Arrow column that cannot be counted (its number, from 0, and why).
    #[error("row {row}: {problem}")]
    Row { row: u64, problem: &'static str },
    /// Compressed data that does not decompress.
    #[error("{}: not valid {format} data ({source}); is the file complete?", path.display())]
    Corrupt {
        path: PathBuf,
        format: &'static str,
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
    /// Some: the input is JSON lines, each record's field of this name a document.
    pub json_field: Option<String>,
}

/// What counting a file saw.
#[derive(Default, Debug, Clone, Copy)]
pub struct CountStats {
    /// Bytes of text read (of JSON lines: the records' texts, not the JSON around them).
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
    fn add_chunk(&mut self, len: usize) {
        self.n_chunks += 1;
        self.max_chunk = self.max_chunk.max(len as u64);
    }

    fn add(&mut self, other: CountStats) {
        self.n_bytes += other.n_bytes;
        self.n_replaced += other.n_replaced;
        self.n_chunks += other.n_chunks;
        self.max_chunk = self.max_chunk.max(other.max_chunk);
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
/// Pipes, one worker, no cut finder, JSON lines or compressed files: one reader thread hands
/// chunks to the workers (the reader decompresses; the workers parse the JSON).
///
/// The words are added to `into` in place (a table counted apart and merged after cost a pass
/// over all its words a file: many on a folder of shards); after an error it holds what was
/// counted.
pub fn count_file(
    path: &Path,
    (start, end): (u64, u64),
    compression: Compression,
    config: &CountConfig,
    into: &mut WordCounts,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<CountStats, CountError> {
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
    let n_workers = crate::mem::worker_count(config.num_threads).min(n_chunks.saturating_add(1));
    let plain = compression == Compression::None && config.json_field.is_none();
    let regions = match &config.cuts {
        Some(finder) if plain && meta.is_file() && n_workers > 1 => plan_regions(
            finder,
            path,
            (start, start + n_bytes),
            n_workers,
            chunk_size,
        )
        .map_err(io_err)?,
        _ => Vec::new(),
    };
    let (reader, file_read) = decoded(file.take(n_bytes), compression).map_err(io_err)?;
    let shared = std::mem::take(into).into_shared();
    let record_bytes = AtomicU64::new(0);
    let mut job = Job {
        path,
        config,
        chunk_size,
        shared: &shared,
        file_read: None,
        record_bytes: &record_bytes,
    };
    let stats = if regions.len() > 1 {
        count_regions(&job, &regions, n_workers, progress)
    } else if compression == Compression::None {
        count_stream(&job, reader, start, n_workers, progress)
    } else {
        let format = if compression == Compression::Gzip {
            "gzip"
        } else {
            "zstd"
        };
        job.file_read = Some(&file_read);
        let counted = count_stream(&job, reader, start, n_workers, progress);
        counted.map_err(|e| match e {
            CountError::Io { path, source } if source.kind() != std::io::ErrorKind::Interrupted => {
                CountError::Corrupt {
                    path,
                    format,
                    source,
                }
            }
            e => e,
        })
    };
    // the workers, and their hold on the table, are gone
    *into = WordCounts::from_shared(shared);
    let mut stats = stats?;
    if config.json_field.is_some() {
        // the documents are the records' texts: their bytes, not the JSON's
        stats.n_bytes = record_bytes.load(Ordering::Relaxed);
    }
    Ok(stats)
}

/// What every thread of one `count_file` call shares.
struct Job<'a> {
    path: &'a Path,
    config: &'a CountConfig,
    chunk_size: usize,
    shared: &'a Arc<SharedParts>,
    /// Bytes of the (compressed) file read so far, when they differ from the text's.
    file_read: Option<&'a AtomicU64>,
    /// JSON lines: the UTF-8 bytes of the records' texts counted so far.
    record_bytes: &'a AtomicU64,
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

/// Counts the words of independent texts (no pretoken spans two texts) on `num_threads` threads
/// that take about a megabyte of texts at a time, into `into` (in place, as `count_file` does).
pub fn count_texts<T: AsRef<str> + Sync>(
    texts: &[T],
    config: &CountConfig,
    into: &mut WordCounts,
) -> Result<(), CountError> {
    let mut units = Vec::new(); // (first text, end text)
    let (mut lo, mut size) = (0, 0);
    for (i, t) in texts.iter().enumerate() {
        size += t.as_ref().len();
        if size >= 1 << 20 {
            units.push((lo, i + 1));
            (lo, size) = (i + 1, 0);
        }
    }
    if lo < texts.len() {
        units.push((lo, texts.len()));
    }
    count_units(
        units.len(),
        config.num_threads,
        into,
        |counter, unit, stop| {
            let (lo, hi) = units[unit];
            texts[lo..hi]
                .iter()
                .try_for_each(|t| counter.add_document(t.as_ref(), config, stop))
        },
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `count_file` of a plain file into a new table.
    pub(crate) fn counted(
        path: &Path,
        range: (u64, u64),
        config: &CountConfig,
    ) -> Result<(WordCounts, CountStats), CountError> {
        let mut table = WordCounts::default();
        let stats = count_file(
            path,
            range,
            Compression::None,
            config,
            &mut table,
            &mut |_| true,
        )?;
        Ok((table, stats))
    }

    /// Training's counting: the GPT-2 pattern, `specials`, strict UTF-8.
    pub(crate) fn config(specials: &[&str], chunk_size: usize, num_threads: usize) -> CountConfig {
        CountConfig {
            specials: Specials::new(specials).unwrap(),
            pretok: Pretokenizer::Gpt2,
            strict: true,
            chunk_size,
            num_threads,
            cuts: Some(CutFinder::new(specials, Pretokenizer::Gpt2).unwrap()),
            json_field: None,
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
        let whole = counted(&path, (0, u64::MAX), &config(1 << 20, 1))
            .unwrap()
            .0;
        for (size, threads) in [(1, 1), (3, 2), (17, 2), (64, 1), (5, 3)] {
            let got = counted(&path, (0, u64::MAX), &config(size, threads))
                .unwrap()
                .0;
            assert_eq!(got, whole, "chunk size {size}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
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
        let counted = |texts: &[String], config: &CountConfig| {
            let mut table = WordCounts::default();
            count_texts(texts, config, &mut table).map(|()| table)
        };
        let one = counted(&texts, &config(1)).unwrap();
        assert!(one.len() > 200, "{} words", one.len());
        for threads in [2, 3, 8] {
            assert_eq!(
                counted(&texts, &config(threads)).unwrap(),
                one,
                "{threads} threads"
            );
        }
        assert!(counted(&[], &config(3)).unwrap().is_empty());
    }
}
