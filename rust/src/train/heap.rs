//! The merge loop's queue of pairs: a binary max-heap by count, then by the pairs' bytes (the
//! greater pair of byte strings wins, docs/spec.md §1). It keeps stale entries: the loop checks
//! an entry's count when it surfaces (`merge_loop.rs`), so no entry is ever updated in place.

use crate::types::Pair;

/// A binary max-heap of (count, pair) ordered by count, then by the pair's bytes (greater wins),
/// then by ids so that even equal byte strings order deterministically. `std`'s heap cannot take
/// a comparator that looks up the vocabulary, hence this one.
pub(super) struct PairHeap {
    pub(super) data: Vec<(u64, Pair)>,
}

impl PairHeap {
    #[inline(always)]
    fn before(a: &(u64, Pair), b: &(u64, Pair), vocab: &[Vec<u8>]) -> bool {
        // Counts nearly always differ: look at the bytes only when they do not.
        if a.0 != b.0 {
            return a.0 > b.0;
        }
        let key = |e: &(u64, Pair)| (&vocab[e.1 .0 as usize], &vocab[e.1 .1 as usize], e.1);
        key(a) > key(b)
    }

    pub(super) fn push(&mut self, entry: (u64, Pair), vocab: &[Vec<u8>]) {
        self.data.push(entry);
        let mut i = self.data.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::before(&self.data[i], &self.data[parent], vocab) {
                break;
            }
            self.data.swap(i, parent);
            i = parent;
        }
    }

    pub(super) fn pop(&mut self, vocab: &[Vec<u8>]) -> Option<(u64, Pair)> {
        let last = self.data.pop()?;
        if self.data.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.data[0], last);
        self.sift_down(0, vocab);
        Some(top)
    }

    fn sift_down(&mut self, mut i: usize, vocab: &[Vec<u8>]) {
        let n = self.data.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && Self::before(&self.data[l], &self.data[best], vocab) {
                best = l;
            }
            if r < n && Self::before(&self.data[r], &self.data[best], vocab) {
                best = r;
            }
            if best == i {
                return;
            }
            self.data.swap(i, best);
            i = best;
        }
    }

    pub(super) fn from_vec(data: Vec<(u64, Pair)>, vocab: &[Vec<u8>]) -> Self {
        let mut heap = PairHeap { data };
        for i in (0..heap.data.len() / 2).rev() {
            heap.sift_down(i, vocab);
        }
        heap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_count_then_by_the_greater_bytes_then_by_ids() {
        // ids 2 and 3 have the same bytes: their pairs order by ids
        let vocab: Vec<Vec<u8>> = [&b"a"[..], b"b", b"ab", b"ab"].map(<[u8]>::to_vec).to_vec();
        let entries = vec![
            (5, (0, 1)),
            (9, (0, 0)),
            (5, (1, 0)),
            (5, (0, 2)),
            (1, (1, 1)),
        ];
        let mut heap = PairHeap::from_vec(entries, &vocab);
        heap.push((5, (0, 3)), &vocab);
        heap.push((5, (2, 0)), &vocab);
        let order: Vec<(u64, Pair)> = std::iter::from_fn(|| heap.pop(&vocab)).collect();
        assert_eq!(
            order,
            [
                (9, (0, 0)), // the highest count
                (5, (1, 0)), // ("b", "a")
                (5, (2, 0)), // ("ab", "a")
                (5, (0, 1)), // ("a", "b")
                (5, (0, 3)), // ("a", "ab"), the greater ids
                (5, (0, 2)),
                (1, (1, 1)),
            ]
        );
        assert!(heap.pop(&vocab).is_none());
    }
}
