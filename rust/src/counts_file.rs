//! Word counts as bytes: the `WordCounts` blob (a whole table, sorted: what pickling and Ray
//! ship) and the `.bpc` file (one shard's counts on disk with the caller's metadata, in sections
//! cut by a fixed hash of the word, so that a reduce can read one partition of every file; each
//! section and the header checksummed). No counting here (`count.rs`), no policy (`shards.py`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::count::{TableError, WordCounts};

/// The first bytes of a `WordCounts` blob, then a format version.
const BLOB_MAGIC: &[u8; 4] = b"BPWC";
const BLOB_VERSION: u8 = 1;

impl WordCounts {
    /// The table as a compact blob: magic, version, the number of words (u64 LE), then each word
    /// as LEB128 length, bytes, LEB128 count, in byte order (so the same table gives the same
    /// bytes, and a reader can refuse repeats), then the magic again as an end mark.
    pub fn to_bytes(&self) -> Result<Vec<u8>, TableError> {
        Ok(self.to_blobs(1, |_| 0)?.pop().unwrap_or_default())
    }

    /// The table cut into `n_parts` blobs of `to_bytes`'s format: blob `i` holds the words for
    /// which `part(word) == i` (< n_parts). What a reduce partitioned by word needs.
    pub fn to_blobs(
        &self,
        n_parts: usize,
        part: impl Fn(&[u8]) -> usize,
    ) -> Result<Vec<Vec<u8>>, TableError> {
        let n_parts = n_parts.max(1);
        let mut arena: Vec<u8> = Vec::new();
        // (first 16 bytes big-endian, zero-padded; arena offset; length; count): the prefix
        // orders nearly all pairs without a look into the arena (sorting took 2x as long).
        let mut entries: Vec<Vec<(u128, usize, usize, u64)>> = vec![Vec::new(); n_parts];
        self.for_each(|w, n| {
            let i = part(w).min(n_parts - 1);
            let mut head = [0u8; 16];
            let k = w.len().min(16);
            head[..k].copy_from_slice(&w[..k]);
            if entries[i].try_reserve(1).is_ok() {
                entries[i].push((u128::from_be_bytes(head), arena.len(), w.len(), n));
            }
            arena.extend_from_slice(w);
        });
        if entries.iter().map(Vec::len).sum::<usize>() != self.len() {
            return Err(TableError::Full);
        }
        let word = |&(_, at, len, _): &(u128, usize, usize, u64)| &arena[at..at + len];
        entries
            .iter_mut()
            .map(|part| {
                part.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| word(a).cmp(word(b))));
                let n_bytes: usize = part.iter().map(|e| e.2 + 8).sum();
                let mut out = Vec::new();
                out.try_reserve(n_bytes + 32)
                    .map_err(|_| TableError::Full)?;
                out.extend_from_slice(BLOB_MAGIC);
                out.push(BLOB_VERSION);
                out.extend_from_slice(&(part.len() as u64).to_le_bytes());
                for e in part.iter() {
                    put_varint(&mut out, e.2 as u64);
                    out.extend_from_slice(word(e));
                    put_varint(&mut out, e.3);
                }
                out.extend_from_slice(BLOB_MAGIC);
                Ok(out)
            })
            .collect()
    }

    /// Reads a blob of `to_bytes`; the error says what is wrong and at which byte.
    pub fn from_bytes(data: &[u8]) -> Result<WordCounts, String> {
        let mut counts = WordCounts::default();
        counts.add_blob(data)?;
        Ok(counts)
    }

    /// Adds the counts of a blob of `to_bytes` into this table, in place (a reduce adds many
    /// blobs into one table without building a table for each); returns its number of words.
    /// On an error, the words read before it stay added.
    pub fn add_blob(&mut self, data: &[u8]) -> Result<u64, String> {
        let mut words = BlobWords::new(data)?;
        while let Some((word, count)) = words.next()? {
            self.add(word, count)
                .map_err(|e| format!("{e:?} at word {}", words.index))?;
        }
        Ok(words.n_words)
    }
}

/// The sum of blobs of `to_bytes`, as one such blob: a merge of the sorted word lists, so the
/// words stream through in order and no hash table is built (a reduce adding 13 M entries into
/// a table missed the CPU caches on nearly every one, and then had to sort it again).
pub fn sum_blobs(blobs: &[&[u8]]) -> Result<Vec<u8>, String> {
    let mut streams = blobs
        .iter()
        .map(|b| BlobWords::new(b))
        .collect::<Result<Vec<_>, _>>()?;
    let mut heap = BinaryHeap::with_capacity(streams.len());
    for (i, s) in streams.iter_mut().enumerate() {
        if let Some((word, count)) = s.next()? {
            heap.push(Reverse((word, i, count)));
        }
    }
    let mut out = Vec::new();
    out.try_reserve(blobs.iter().map(|b| b.len()).sum())
        .map_err(|_| "out of memory for the sum of the blobs".to_string())?;
    out.extend_from_slice(BLOB_MAGIC);
    out.push(BLOB_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes()); // the number of words, set at the end
    let mut n_words: u64 = 0;
    while let Some(Reverse((word, i, mut count))) = heap.pop() {
        if let Some((w, n)) = streams[i].next()? {
            heap.push(Reverse((w, i, n)));
        }
        while let Some(Reverse((w, j, n))) = heap.peek().copied() {
            if w != word {
                break;
            }
            heap.pop();
            count = count
                .checked_add(n)
                .ok_or_else(|| "a word count would pass 2^64 - 1".to_string())?;
            if let Some((w, n)) = streams[j].next()? {
                heap.push(Reverse((w, j, n)));
            }
        }
        put_varint(&mut out, word.len() as u64);
        out.extend_from_slice(word);
        put_varint(&mut out, count);
        n_words += 1;
    }
    out[5..13].copy_from_slice(&n_words.to_le_bytes());
    out.extend_from_slice(BLOB_MAGIC);
    Ok(out)
}

/// The table of blobs whose words are disjoint (the partitions of a reduce), built on up to
/// `num_threads` threads: each adds some blobs into a table of its own, then the tables are
/// summed partition by partition (`WordCounts::sum`). Joining 2.75 M words on one thread took
/// 1.4 s, which at a terabyte's few hundred million words would rival the merge loop.
pub fn table_of_blobs(blobs: &[&[u8]], num_threads: usize) -> Result<WordCounts, String> {
    let n = crate::worker_count(num_threads).min(blobs.len()).max(1);
    let per = blobs.len().div_ceil(n).max(1);
    let add_all = |part: &[&[u8]]| {
        let mut table = WordCounts::default();
        for blob in part {
            table.add_blob(blob)?;
        }
        Ok::<_, String>(table)
    };
    let tables = std::thread::scope(|scope| {
        let workers: Vec<_> = blobs
            .chunks(per)
            .map(|part| std::thread::Builder::new().spawn_scoped(scope, move || add_all(part)))
            .collect();
        let mut tables = Vec::new();
        for (part, worker) in blobs.chunks(per).zip(workers) {
            tables.push(match worker {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|_| Err("a joining thread panicked".into()))?,
                Err(_) => add_all(part)?, // no thread could start: this one does it
            });
        }
        Ok::<_, String>(tables)
    })?;
    WordCounts::sum(tables).map_err(|e| format!("{e:?} while joining the partitions"))
}

/// The words of a blob in order, checked as they are read: the header, words in strictly
/// increasing order (so none is repeated), the end mark right after the last.
struct BlobWords<'a> {
    r: BlobReader<'a>,
    n_words: u64,
    index: u64,
    previous: Option<&'a [u8]>,
}

impl<'a> BlobWords<'a> {
    fn new(data: &'a [u8]) -> Result<Self, String> {
        let mut r = BlobReader { data, at: 0 };
        if r.take(4)? != BLOB_MAGIC {
            return Err("it does not start with b'BPWC'".into());
        }
        let version = r.take(1)?[0];
        if version != BLOB_VERSION {
            return Err(format!(
                "format version {version}; this bytepair reads version 1"
            ));
        }
        let n_words = u64::from_le_bytes(r.take(8)?.try_into().unwrap_or_default());
        Ok(BlobWords {
            r,
            n_words,
            index: 0,
            previous: None,
        })
    }

    /// The next (word, count), or None after the last (once the end mark is checked).
    fn next(&mut self) -> Result<Option<(&'a [u8], u64)>, String> {
        let r = &mut self.r;
        if self.index == self.n_words {
            if r.take(4)? != BLOB_MAGIC || r.at != r.data.len() {
                let (n, at) = (self.n_words, r.at);
                return Err(format!("no end mark right after the {n} words (byte {at})"));
            }
            return Ok(None);
        }
        let len = r.varint()?;
        let word = r.take(usize::try_from(len).unwrap_or(usize::MAX))?;
        if self.previous.is_some_and(|p| p >= word) {
            let (i, at) = (self.index, r.at);
            return Err(format!("word {i} is out of order or repeated (byte {at})"));
        }
        self.previous = Some(word);
        self.index += 1;
        Ok(Some((word, r.varint()?)))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over a blob whose every read is bounds-checked.
struct BlobReader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> BlobReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.data.len()))?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            let bits = (b & 0x7f) as u64;
            if shift == 63 && bits > 1 {
                break;
            }
            v |= bits << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(format!("a number past 2^64 - 1 at byte {}", self.at))
    }
}

/// The partition of `word` among `n_parts`: FNV-1a (64-bit) of its bytes, murmur3's finaliser
/// (FNV's low bits are weak), then scaled to `0..n_parts`. Fixed for good: `.bpc` files on disk
/// and tasks on other machines rely on it.
pub fn partition_of(word: &[u8], n_parts: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in word {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    ((h as u128 * n_parts.max(1) as u128) >> 64) as u32
}

/// First bytes of a `.bpc` file; its format version follows.
const FILE_MAGIC: &[u8; 8] = b"BPCOUNTS";
const FILE_VERSION: u32 = 1;

/// Errors of reading a `.bpc` file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CountsFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a counts file.
    #[error("{path}: not a bytepair counts file (it does not start with b'BPCOUNTS')")]
    NotCounts { path: PathBuf },
    /// A format version this code does not read.
    #[error("{path}: counts file format version {version}; this bytepair reads version 1")]
    Version { path: PathBuf, version: u32 },
    /// A checksum, a length or a section is wrong.
    #[error("{path}: corrupt or truncated counts file ({what}); count its shard again")]
    Corrupt { path: PathBuf, what: String },
    /// A partition past the file's.
    #[error("{path}: no partition {part}: the file has {n_parts}")]
    NoPart {
        path: PathBuf,
        part: u32,
        n_parts: u32,
    },
    /// The table could not grow, or a count would pass 2^64 - 1.
    #[error("{0:?} while adding the counts of {1}")]
    Table(TableError, PathBuf),
}

/// The bytes of a `.bpc` file (integers little-endian): magic, u32 version, u32 length of
/// `meta` (the caller's UTF-8 JSON: pattern, special tokens, which shard), `meta`, u32 number of
/// sections P, P × (u64 length, u32 CRC-32 of the section), u32 CRC-32 of the header before it;
/// then the sections, section i the blob of the words whose `partition_of(word, P)` is i.
pub fn file_bytes(meta: &[u8], counts: &WordCounts, n_parts: u32) -> Result<Vec<u8>, TableError> {
    let n_parts = n_parts.max(1);
    let sections = counts.to_blobs(n_parts as usize, |w| partition_of(w, n_parts) as usize)?;
    let body: usize = sections.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    out.try_reserve(body + meta.len() + 12 * sections.len() + 32)
        .map_err(|_| TableError::Full)?;
    out.extend_from_slice(FILE_MAGIC);
    out.extend_from_slice(&FILE_VERSION.to_le_bytes());
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(meta);
    out.extend_from_slice(&n_parts.to_le_bytes());
    for s in &sections {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32(s).to_le_bytes());
    }
    out.extend_from_slice(&crc32(&out).to_le_bytes());
    for s in &sections {
        out.extend_from_slice(s);
    }
    Ok(out)
}

/// What a `.bpc` file's header says.
#[derive(Debug, Clone)]
pub struct FileHeader {
    /// The caller's metadata, as written.
    pub meta: Vec<u8>,
    /// (offset, length, CRC-32) of each section.
    sections: Vec<(u64, u64, u32)>,
}

impl FileHeader {
    /// Number of sections (partitions).
    pub fn n_parts(&self) -> u32 {
        self.sections.len() as u32
    }
}

/// Reads and checks a `.bpc` file's header (and that the file is as long as it says).
pub fn read_header(path: &Path) -> Result<(File, FileHeader), CountsFileError> {
    let io_err = |source| CountsFileError::Io {
        path: path.to_owned(),
        source,
    };
    let corrupt = |what: &str| CountsFileError::Corrupt {
        path: path.to_owned(),
        what: what.to_owned(),
    };
    let mut file = File::open(path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    let mut head = vec![0u8; 16];
    if read_exact_or_short(&mut file, &mut head).map_err(io_err)? < 8 || &head[..8] != FILE_MAGIC {
        return Err(CountsFileError::NotCounts {
            path: path.to_owned(),
        });
    }
    let version = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
    if version != FILE_VERSION {
        return Err(CountsFileError::Version {
            path: path.to_owned(),
            version,
        });
    }
    let meta_len = u32::from_le_bytes(head[12..16].try_into().unwrap_or_default()) as u64;
    if 16 + meta_len + 8 > file_len {
        return Err(corrupt("the header is cut off"));
    }
    head.resize(16 + meta_len as usize + 4, 0);
    file.read_exact(&mut head[16..]).map_err(io_err)?;
    let at = head.len() - 4;
    let n_parts = u32::from_le_bytes(head[at..].try_into().unwrap_or_default()) as u64;
    if head.len() as u64 + 12 * n_parts + 4 > file_len {
        return Err(corrupt("the header is cut off"));
    }
    let table_at = head.len();
    head.resize(table_at + 12 * n_parts as usize + 4, 0);
    file.read_exact(&mut head[table_at..]).map_err(io_err)?;
    let crc_at = head.len() - 4;
    if crc32(&head[..crc_at]) != u32::from_le_bytes(head[crc_at..].try_into().unwrap_or_default()) {
        return Err(corrupt("the header's checksum does not match"));
    }
    let mut offset = head.len() as u64;
    let mut sections = Vec::with_capacity(n_parts as usize);
    for entry in head[table_at..crc_at].chunks_exact(12) {
        let len = u64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
        let crc = u32::from_le_bytes(entry[8..].try_into().unwrap_or_default());
        sections.push((offset, len, crc));
        offset = offset.saturating_add(len);
    }
    if offset != file_len {
        let what = format!("the sections end at byte {offset}, the file at {file_len}");
        return Err(corrupt(&what));
    }
    let meta = head[16..16 + meta_len as usize].to_vec();
    Ok((file, FileHeader { meta, sections }))
}

/// Adds the counts of a `.bpc` file (of the sections `parts`, or all) into `into`, checking
/// every section read; returns the header.
pub fn read_counts(
    path: &Path,
    into: &mut WordCounts,
    parts: Option<&[u32]>,
) -> Result<FileHeader, CountsFileError> {
    let (mut file, header) = read_header(path)?;
    let all: Vec<u32> = (0..header.n_parts()).collect();
    for &part in parts.unwrap_or(&all) {
        let Some(&(offset, len, crc)) = header.sections.get(part as usize) else {
            return Err(CountsFileError::NoPart {
                path: path.to_owned(),
                part,
                n_parts: header.n_parts(),
            });
        };
        let io_err = |source| CountsFileError::Io {
            path: path.to_owned(),
            source,
        };
        let corrupt = |what: String| CountsFileError::Corrupt {
            path: path.to_owned(),
            what,
        };
        let mut data = Vec::new();
        data.try_reserve_exact(len as usize)
            .map_err(|_| CountsFileError::Table(TableError::Full, path.to_owned()))?;
        data.resize(len as usize, 0);
        file.seek(SeekFrom::Start(offset)).map_err(io_err)?;
        file.read_exact(&mut data).map_err(io_err)?;
        if crc32(&data) != crc {
            return Err(corrupt(format!("section {part}'s checksum does not match")));
        }
        into.add_blob(&data)
            .map_err(|e| corrupt(format!("section {part}: {e}")))?;
    }
    Ok(header)
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_exact_or_short(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The CRC-32 (IEEE 802.3, as zlib's `crc32`) table, built at compile time.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// CRC-32 of `data` (zlib's): a byte a time, ~0.5 GB/s, far above disk and network rates here.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_round_trips_and_refuses_damage() {
        let mut wc = WordCounts::default();
        for (w, n) in [
            (&b"the"[..], 7),
            (b"", 1),
            (&[b'x'; 40][..], u64::MAX),
            (b"\xff", 3),
        ] {
            wc.add(w, n).unwrap();
        }
        let blob = wc.to_bytes().unwrap();
        assert_eq!(WordCounts::from_bytes(&blob).unwrap(), wc);
        for cut in 0..blob.len() {
            assert!(
                WordCounts::from_bytes(&blob[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = blob.clone();
        longer.push(0);
        assert!(WordCounts::from_bytes(&longer).is_err());
        assert_eq!(wc.add(b"the", u64::MAX - 6), Err(TableError::Overflow));
    }

    fn sample() -> WordCounts {
        let mut wc = WordCounts::default();
        for i in 0..500u64 {
            wc.add(format!("w{i}").as_bytes(), i + 1).unwrap();
        }
        wc.add(&[b'y'; 30], 2).unwrap();
        wc
    }

    #[test]
    fn sum_of_blobs_is_the_blob_of_the_sum() {
        let mut tables = vec![sample(), WordCounts::default(), sample()];
        tables[1].add(b"w7", 5).unwrap();
        tables[1].add(b"", 1).unwrap();
        let blobs: Vec<Vec<u8>> = tables.iter().map(|t| t.to_bytes().unwrap()).collect();
        let refs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
        let mut total = WordCounts::default();
        for t in tables {
            total.merge(t).unwrap();
        }
        assert_eq!(sum_blobs(&refs).unwrap(), total.to_bytes().unwrap());
        assert_eq!(
            sum_blobs(&[]).unwrap(),
            WordCounts::default().to_bytes().unwrap()
        );
        assert!(sum_blobs(&[&refs[0][..refs[0].len() - 1]]).is_err());
    }

    #[test]
    fn table_of_partitions_is_the_table() {
        let wc = sample();
        let blobs = wc.to_blobs(5, |w| partition_of(w, 5) as usize).unwrap();
        let refs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
        for threads in [1, 2, 8] {
            assert_eq!(table_of_blobs(&refs, threads).unwrap(), wc);
        }
        assert!(table_of_blobs(&[b"nope"], 2).is_err());
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn partitions_are_stable_and_spread() {
        assert_eq!(partition_of(b"the", 1), 0);
        let mut seen = [0u32; 8];
        for i in 0..8000 {
            seen[partition_of(format!("{i}").as_bytes(), 8) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn file_round_trips_by_part_and_refuses_damage() {
        let dir = std::env::temp_dir().join(format!("bytepair-bpc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.bpc");
        let wc = sample();
        let bytes = file_bytes(b"{\"a\":1}", &wc, 4).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let mut all = WordCounts::default();
        let header = read_counts(&path, &mut all, None).unwrap();
        assert_eq!((&all, header.n_parts()), (&wc, 4));
        assert_eq!(header.meta, b"{\"a\":1}");
        let mut by_part = WordCounts::default();
        for part in 0..4 {
            let mut one = WordCounts::default();
            read_counts(&path, &mut one, Some(&[part])).unwrap();
            one.for_each(|w, _| assert_eq!(partition_of(w, 4), part));
            by_part.merge(one).unwrap();
        }
        assert_eq!(by_part, wc);
        for cut in [0, 7, 20, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            assert!(
                read_counts(&path, &mut WordCounts::default(), None).is_err(),
                "cut {cut}"
            );
        }
        for flip in [12, 20, bytes.len() - 3] {
            let mut bad = bytes.clone();
            bad[flip] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            let err = read_counts(&path, &mut WordCounts::default(), None).unwrap_err();
            assert!(err.to_string().contains("c.bpc"), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
