//! Word counts as bytes: the `WordCounts` blob (a whole table, sorted: what pickling and Ray
//! ship) and the `.bpc` file (one shard's counts on disk with the caller's metadata, in sections
//! cut by a fixed hash of the word, so that a reduce can read one partition of every file; each
//! section and the header checksummed). The blob is `blob.rs`'s, the file this one's. No
//! counting here (`count.rs`), no policy (`distributed/shards.py`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::count::{TableError, WordCounts};

mod blob;

pub use blob::{sum_blobs, table_of_blobs};

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
pub(super) mod tests {
    use super::*;

    pub(crate) fn sample() -> WordCounts {
        let mut wc = WordCounts::default();
        for i in 0..500u64 {
            wc.add(format!("w{i}").as_bytes(), i + 1).unwrap();
        }
        wc.add(&[b'y'; 30], 2).unwrap();
        wc
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
