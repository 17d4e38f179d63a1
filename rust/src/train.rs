//! The BPE merge loop (SPEC §1.5): from word counts to merges, with CS336's tie-break.
//! Words are token-id sequences in one arena; pair counts are updated only from the words the
//! chosen pair occurs in (an index pair → words); the next pair comes from a lazy max-heap.
//!
//! Performance notes: a merge touches only the neighbours of each occurrence (4 count updates per
//! occurrence, not a recount of the word); the heap keeps stale entries and re-checks them when
//! they surface, so a decrease costs nothing; words shrink in place, so the arena never grows.

use crate::count::WordCounts;
use crate::FastMap;

/// A token id: bytes are 0-255, merge i is 256 + i.
pub type TokenId = u32;
/// An adjacent pair of tokens.
pub type Pair = (TokenId, TokenId);

/// What training produced.
pub struct TrainResult {
    /// Merges in creation order, as pairs of ids (the new token of merge i has id 256 + i).
    pub merges: Vec<Pair>,
    /// The bytes of every token id, 256 bytes then one per merge.
    pub vocab: Vec<Vec<u8>>,
}

/// Words as spans of one token arena, with their counts.
struct Words {
    tokens: Vec<TokenId>,
    /// (start, len) of each word in `tokens`.
    spans: Vec<(usize, usize)>,
    counts: Vec<u64>,
}

impl Words {
    fn new(counts: WordCounts) -> Self {
        // Sorted by bytes, although the result does not depend on word order (counts are sums,
        // ties go by bytes): words that share pairs then sit together in the arena, and the
        // merge loop runs 2.5x faster on the large corpus than with words in hash order.
        let mut entries: Vec<(Vec<u8>, u64)> = Vec::with_capacity(counts.len());
        counts.for_each(|w, n| {
            if w.len() >= 2 {
                entries.push((w.to_vec(), n)); // shorter words hold no pair, now or later
            }
        });
        drop(counts);
        entries.sort_unstable();
        let total: usize = entries.iter().map(|(w, _)| w.len()).sum();
        let mut words = Words {
            tokens: Vec::with_capacity(total),
            spans: Vec::with_capacity(entries.len()),
            counts: Vec::with_capacity(entries.len()),
        };
        for (word, n) in entries {
            words.spans.push((words.tokens.len(), word.len()));
            words.tokens.extend(word.iter().map(|&b| b as TokenId));
            words.counts.push(n);
        }
        words
    }

    fn word(&self, w: usize) -> &[TokenId] {
        let (s, l) = self.spans[w];
        &self.tokens[s..s + l]
    }
}

/// A binary max-heap of (count, pair) ordered by count, then by the pair's bytes (greater wins),
/// then by ids so that even equal byte strings order deterministically. `std`'s heap cannot take
/// a comparator that looks up the vocabulary, hence this one.
struct PairHeap {
    data: Vec<(u64, Pair)>,
}

impl PairHeap {
    fn before(a: &(u64, Pair), b: &(u64, Pair), vocab: &[Vec<u8>]) -> bool {
        let key = |e: &(u64, Pair)| (e.0, &vocab[e.1 .0 as usize], &vocab[e.1 .1 as usize], e.1);
        key(a) > key(b)
    }

    fn push(&mut self, entry: (u64, Pair), vocab: &[Vec<u8>]) {
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

    fn pop(&mut self, vocab: &[Vec<u8>]) -> Option<(u64, Pair)> {
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

    fn from_vec(data: Vec<(u64, Pair)>, vocab: &[Vec<u8>]) -> Self {
        let mut heap = PairHeap { data };
        for i in (0..heap.data.len() / 2).rev() {
            heap.sift_down(i, vocab);
        }
        heap
    }
}

/// Pair counts and, per pair, the words it may occur in (may hold stale or repeated entries).
struct PairIndex {
    counts: FastMap<Pair, u64>,
    words_of: FastMap<Pair, Vec<u32>>,
}

impl PairIndex {
    fn new(words: &Words) -> Self {
        let mut index = PairIndex {
            counts: FastMap::default(),
            words_of: FastMap::default(),
        };
        for w in 0..words.spans.len() {
            let word = words.word(w);
            for pair in word.windows(2).map(|p| (p[0], p[1])) {
                *index.counts.entry(pair).or_insert(0) += words.counts[w];
                let list = index.words_of.entry(pair).or_default();
                if list.last() != Some(&(w as u32)) {
                    list.push(w as u32);
                }
            }
        }
        index
    }
}

/// Merges `(a, b)` into `new` in word `w`, left to right and non-overlapping, and reports the
/// change of every pair count to `emit` (only neighbours of an occurrence change).
fn merge_word(
    words: &mut Words,
    w: usize,
    (a, b): Pair,
    new: TokenId,
    mut emit: impl FnMut(Pair, i64),
) {
    let (start, len) = words.spans[w];
    let c = words.counts[w] as i64;
    let t = &mut words.tokens[start..start + len];
    let (mut i, mut j) = (0, 0);
    let mut prev_merged = false;
    while i < len {
        if i + 1 < len && t[i] == a && t[i + 1] == b {
            emit((a, b), -c);
            if j > 0 {
                if prev_merged {
                    emit((b, a), -c);
                    emit((new, new), c);
                } else {
                    emit((t[j - 1], a), -c);
                    emit((t[j - 1], new), c);
                }
            }
            if i + 2 < len {
                let y = t[i + 2];
                let next_merges = y == a && i + 3 < len && t[i + 3] == b;
                if !next_merges {
                    emit((b, y), -c);
                    emit((new, y), c);
                }
            }
            t[j] = new;
            prev_merged = true;
            i += 2;
        } else {
            t[j] = t[i];
            prev_merged = false;
            i += 1;
        }
        j += 1;
    }
    words.spans[w].1 = j;
}

/// Runs `num_merges` merges (fewer if no pair is left) on the counted words.
/// `progress(done)` is called now and then; returning false stops the loop early.
pub fn train(
    counts: WordCounts,
    num_merges: usize,
    progress: &mut dyn FnMut(usize) -> bool,
) -> TrainResult {
    let mut words = Words::new(counts);
    let mut index = PairIndex::new(&words);
    let mut vocab: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let entries = index.counts.iter().map(|(&p, &n)| (n, p)).collect();
    let mut heap = PairHeap::from_vec(entries, &vocab);
    let mut merges = Vec::with_capacity(num_merges);
    let mut added: Vec<Pair> = Vec::new();
    let mut net: FastMap<Pair, i64> = FastMap::default();
    let report_every = (num_merges / 100).max(1);

    while merges.len() < num_merges {
        // 1. The best pair: pop until an entry's count is current.
        let Some((stored, pair)) = heap.pop(&vocab) else {
            break;
        };
        let current = index.counts.get(&pair).copied().unwrap_or(0);
        if current != stored {
            if current > 0 {
                heap.push((current, pair), &vocab);
            }
            continue;
        }
        // 2. The new token.
        let new = vocab.len() as TokenId;
        let bytes = [
            vocab[pair.0 as usize].as_slice(),
            vocab[pair.1 as usize].as_slice(),
        ]
        .concat();
        vocab.push(bytes);
        merges.push(pair);
        // 3. Merge it in every word it occurs in, collecting count changes.
        let mut occurs_in = index.words_of.remove(&pair).unwrap_or_default();
        occurs_in.sort_unstable();
        occurs_in.dedup();
        net.clear();
        for &w in &occurs_in {
            added.clear();
            merge_word(&mut words, w as usize, pair, new, |p, d| {
                *net.entry(p).or_insert(0) += d;
                if d > 0 {
                    added.push(p);
                }
            });
            added.sort_unstable();
            added.dedup();
            for &p in &added {
                index.words_of.entry(p).or_default().push(w);
            }
        }
        // 4. Apply the changes; only increases need a fresh heap entry.
        let mut changed: Vec<(Pair, i64)> = net.iter().map(|(&p, &d)| (p, d)).collect();
        changed.sort_unstable();
        for (p, d) in changed {
            if d == 0 {
                continue;
            }
            let n = index.counts.entry(p).or_insert(0);
            *n = n.checked_add_signed(d).unwrap_or(0);
            let now = *n;
            if now == 0 {
                index.counts.remove(&p);
                index.words_of.remove(&p);
            } else if d > 0 {
                heap.push((now, p), &vocab);
            }
        }
        if merges.len() % report_every == 0 && !progress(merges.len()) {
            break;
        }
    }
    progress(merges.len());
    TrainResult { merges, vocab }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(words: &[(&str, u64)]) -> WordCounts {
        let mut wc = WordCounts::default();
        for &(w, n) in words {
            wc.add(w.as_bytes(), n);
        }
        wc
    }

    fn merged_bytes(r: &TrainResult) -> Vec<String> {
        let s = |id: TokenId| String::from_utf8_lossy(&r.vocab[id as usize]).into_owned();
        r.merges
            .iter()
            .map(|&(a, b)| format!("{} {}", s(a), s(b)))
            .collect()
    }

    #[test]
    fn worked_example_of_the_spec() {
        let wc = counts(&[("low", 5), ("lower", 2), ("widest", 3), ("newest", 6)]);
        let r = train(wc, 12, &mut |_| true);
        let expected = [
            "s t", "e st", "o w", "l ow", "w est", "n e", "ne west", "w i", "wi d", "wid est",
            "low e", "lowe r",
        ];
        assert_eq!(merged_bytes(&r), expected);
    }

    #[test]
    fn overlapping_runs_count_every_position() {
        let r = train(counts(&[("aaaa", 1), ("ab", 2)]), 3, &mut |_| true);
        // (a,a) occurs 3 times in "aaaa": it beats (a,b) with 2; "aa aa" then holds (aa,aa) once.
        assert_eq!(merged_bytes(&r), ["a a", "a b", "aa aa"]);
    }

    #[test]
    fn stops_early_when_no_pair_is_left() {
        let r = train(counts(&[("ab", 1), ("c", 9)]), 10, &mut |_| true);
        assert_eq!(merged_bytes(&r), ["a b"]);
        assert_eq!(
            train(WordCounts::default(), 5, &mut |_| true).merges.len(),
            0
        );
    }
}
