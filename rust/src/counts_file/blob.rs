//! The `WordCounts` blob: a whole table as bytes, its words sorted (what pickling and Ray ship);
//! reading one back, adding it into a table, summing sorted blobs without a hash table, and
//! joining partitions on threads. The `.bpc` file around such blobs is `counts_file.rs`'s.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
    let n = crate::mem::worker_count(num_threads)
        .min(blobs.len())
        .max(1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts_file::partition_of;
    use crate::counts_file::tests::sample;

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
}
