//! Words longer than `PACKED_MAX` bytes, the few that do not fit a packed key: one partition's
//! bytes one after another in a buffer, and a table of (hash, place, count) entries.
//! Why not a map of boxed words: on the large corpus these are 1.6% of the words counted but a
//! quarter of the distinct ones, and boxed they cost an allocation each, a byte hash again at
//! every table growth and as many frees when training lays the words out.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::TableError;

/// One partition of long words.
#[derive(Clone, Default)]
pub struct LongWords {
    bytes: Vec<u8>,
    table: HashTable<Entry>,
}

#[derive(Clone, Copy)]
struct Entry {
    hash: u64,
    start: usize,
    len: usize,
    count: u64,
}

impl Entry {
    /// The entry's word, in its partition's `bytes`.
    fn word<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.start..self.start + self.len]
    }

    /// Whether the entry holds `word`, whose hash is `hash`.
    fn holds(&self, hash: u64, word: &[u8], bytes: &[u8]) -> bool {
        self.hash == hash && self.word(bytes) == word
    }
}

pub(crate) fn hash_of(word: &[u8]) -> u64 {
    foldhash::fast::FixedState::default().hash_one(word)
}

impl LongWords {
    /// Adds `n` occurrences of `word`; a full table or buffer is an error, not an abort.
    #[inline]
    pub fn add(&mut self, word: &[u8], n: u64) -> Result<(), TableError> {
        self.add_hashed(hash_of(word), word, n)
    }

    /// `add`, for a word whose `hash_of` is known.
    pub(crate) fn add_hashed(&mut self, hash: u64, word: &[u8], n: u64) -> Result<(), TableError> {
        let bytes = &self.bytes;
        if let Some(e) = self.table.find_mut(hash, |e| e.holds(hash, word, bytes)) {
            e.count = e.count.checked_add(n).ok_or(TableError::Overflow)?;
            return Ok(());
        }
        self.table
            .try_reserve(1, |e| e.hash)
            .map_err(|_| TableError::Full)?;
        self.bytes
            .try_reserve(word.len())
            .map_err(|_| TableError::Full)?;
        let start = self.bytes.len();
        self.bytes.extend_from_slice(word);
        let entry = Entry {
            hash,
            start,
            len: word.len(),
            count: n,
        };
        self.table.insert_unique(hash, entry, |e| e.hash);
        Ok(())
    }

    /// Number of distinct words.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Every word and its count, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        self.table.iter().map(|e| (e.word(&self.bytes), e.count))
    }

    /// Adds every count of `other` (the larger of the two takes the smaller's words; hashes
    /// are kept, so no word is hashed again).
    pub fn absorb(&mut self, mut other: LongWords) -> Result<(), TableError> {
        if self.len() < other.len() {
            std::mem::swap(self, &mut other);
        }
        for e in other.table.iter() {
            self.add_hashed(e.hash, e.word(&other.bytes), e.count)?;
        }
        Ok(())
    }
}

/// Occurrences of long words waiting to be counted into one partition's table (see `Counter`):
/// each one's length (8 bytes) then its bytes, in a buffer of a fixed size, so that queues of
/// many partitions and threads stay small (their hashes are taken again when counted: cheaper
/// than 8 bytes more a word).
#[derive(Default)]
pub(crate) struct LongQueue {
    bytes: Vec<u8>,
}

impl LongQueue {
    /// Whether `word` fits in a queue of `size` bytes without it growing.
    #[inline]
    pub fn fits(&self, word: &[u8], size: usize) -> bool {
        self.bytes.is_empty() || self.bytes.len() + 8 + word.len() <= size
    }

    /// Queues one occurrence of `word` in a queue of `size` bytes (more only for a word that
    /// does not fit in an empty one). Memory that cannot be had is an error, not an abort (a
    /// word can be megabytes long).
    #[inline]
    pub fn push(&mut self, word: &[u8], size: usize) -> Result<(), TableError> {
        let need = 8 + word.len();
        if self.bytes.capacity() - self.bytes.len() < need {
            let more = need.max(size.saturating_sub(self.bytes.len()));
            self.bytes
                .try_reserve_exact(more)
                .map_err(|_| TableError::Full)?;
        }
        self.bytes
            .extend_from_slice(&(word.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(word);
        Ok(())
    }

    /// Counts the queued words into `table`, leaving the queue empty (even on an error) and no
    /// larger than `size` bytes.
    pub fn drain_into(&mut self, table: &mut LongWords, size: usize) -> Result<(), TableError> {
        let mut rest = self.bytes.as_slice();
        let mut result = Ok(());
        while let (Some((len, tail)), Ok(())) = (rest.split_first_chunk::<8>(), &result) {
            let (word, tail) = tail.split_at(u64::from_le_bytes(*len) as usize);
            result = table.add_hashed(hash_of(word), word, 1);
            rest = tail;
        }
        self.bytes.clear();
        self.bytes.shrink_to(size);
        result
    }
}

impl PartialEq for LongWords {
    /// The same words with the same counts, whatever their order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.table.iter().all(|e| {
                let word = e.word(&self.bytes);
                other
                    .table
                    .find(e.hash, |o| o.holds(e.hash, word, &other.bytes))
                    .is_some_and(|o| o.count == e.count)
            })
    }
}

impl std::fmt::Debug for LongWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(w, n)| (String::from_utf8_lossy(w), n)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn counts_and_sums_like_a_map() {
        // 20 K words of 16-40 bytes from a small alphabet (many repeats), over two tables that
        // grow many times, summed both ways
        let mut next = crate::testing::numbers(12);
        let mut tables = [LongWords::default(), LongWords::default()];
        let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
        for i in 0..20_000 {
            let len = 16 + next(25) as usize;
            let word: Vec<u8> = (0..len).map(|_| b'a' + next(3) as u8).collect();
            let n = 1 + next(4);
            tables[i % 2].add(&word, n).unwrap();
            *expected.entry(word).or_default() += n;
        }
        let [a, b] = tables;
        let mut ab = a.clone();
        ab.absorb(b.clone()).unwrap();
        let mut ba = b;
        ba.absorb(a).unwrap();
        assert_eq!(ab, ba);
        let got: HashMap<Vec<u8>, u64> = ab.iter().map(|(w, n)| (w.to_vec(), n)).collect();
        assert_eq!(got, expected);
        assert_eq!(ab.len(), expected.len());
        let mut other = ab.clone();
        other.add(&[b'z'; 16], 1).unwrap();
        assert_ne!(ab, other);
    }

    #[test]
    fn a_queue_counts_what_it_was_given() {
        // words that fit, then one larger than the queue
        let (mut queue, mut table) = (LongQueue::default(), LongWords::default());
        let big = vec![b'y'; 100];
        let words: [&[u8]; 4] = [&[b'a'; 16], &[b'b'; 20], &[b'a'; 16], &big];
        let mut drained = vec![];
        for (i, w) in words.into_iter().enumerate() {
            if !queue.fits(w, 64) {
                drained.push(i);
                queue.drain_into(&mut table, 64).unwrap();
            }
            queue.push(w, 64).unwrap();
        }
        // 8 + 16 and 8 + 20 bytes fit in 64, the third word does not, the big one never does
        assert_eq!(drained, [2, 3]);
        queue.drain_into(&mut table, 64).unwrap();
        assert!(queue.bytes.is_empty() && queue.bytes.capacity() <= 64);
        let mut got: Vec<(Vec<u8>, u64)> = table.iter().map(|(w, n)| (w.to_vec(), n)).collect();
        got.sort();
        assert_eq!(got, [(vec![b'a'; 16], 2), (vec![b'b'; 20], 1), (big, 1)]);
    }

    #[test]
    fn refuses_to_wrap_a_count() {
        let mut t = LongWords::default();
        t.add(&[b'x'; 20], u64::MAX).unwrap();
        assert_eq!(t.add(&[b'x'; 20], 1), Err(TableError::Overflow));
        assert_eq!(t.iter().next(), Some((&[b'x'; 20][..], u64::MAX)));
    }
}
