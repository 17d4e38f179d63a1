//! The merges of an earlier run applied to the words as they are laid out (`Words::new`): a
//! run continued from a tokenizer, and the second stage of superword training, whose words are
//! whole lines encoded with the first stage's merges.
//!
//! Merging the adjacent pair of lowest rank until none is left equals applying the merges one
//! by one in order (no merge joins a token made after it), which is the encoder's BPE; it runs
//! here with the encoder's loops (`encode/merge.rs`). A line is cut first where no token can
//! span (`Joins`, `encode/parts.rs`): a line rarely repeats, but its parts, words mostly, do,
//! and are looked up in a small table of recent parts.

use super::arena::Token;
use crate::encode::{merge_bytes, Joins, PairTable, RecentParts};
use crate::types::{Pair, TokenId};

/// The merges as the encoder's table, and where words may be cut.
pub(super) struct Replay {
    pairs: PairTable,
    byte_ids: [TokenId; 256],
    joins: Joins,
}

impl Replay {
    /// `merges`: merge i makes token 256 + i; `vocab`: the bytes of every token.
    pub fn new(merges: &[Pair], vocab: &[Vec<u8>]) -> Self {
        let byte_ids: [TokenId; 256] = std::array::from_fn(|b| b as TokenId);
        let table = merges
            .iter()
            .enumerate()
            .map(|(i, &pair)| (pair, 256 + i as TokenId));
        Replay {
            pairs: PairTable::new(table, &byte_ids),
            byte_ids,
            joins: Joins::new(
                merges
                    .iter()
                    .map(|&(a, b)| (vocab[a as usize].as_slice(), vocab[b as usize].as_slice())),
            ),
        }
    }

    /// Appends the BPE of the word `w` to `out`.
    pub fn word<T: Token>(&self, w: &[u8], scratch: &mut Scratch, out: &mut Vec<T>) {
        let Scratch { parts, ids } = scratch;
        let bpe = |part: &[u8], ids: &mut Vec<TokenId>| {
            merge_bytes(&self.pairs, &self.byte_ids, part, ids)
        };
        self.joins.for_each_part(w, |part| {
            ids.clear();
            match part.len() {
                1 => bpe(part, ids),
                _ => parts.ids(part, ids, bpe),
            }
            out.extend(ids.iter().map(|&id| T::of(id)));
        });
    }
}

/// A thread's recent parts and buffer.
#[derive(Default)]
pub(super) struct Scratch {
    parts: RecentParts,
    ids: Vec<TokenId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::WordCounts;
    use crate::train::arena::word_at;
    use crate::train::words::Words;

    #[test]
    fn replay_equals_merging_by_rank_on_whole_words() {
        let mut next = crate::testing::numbers(3);
        let alphabet = b"ab  c.\n";
        let words: Vec<Vec<u8>> = (0..3000)
            .map(|_| {
                let longest = if next(10) == 0 { 200 } else { 12 };
                let len = 1 + next(longest) as usize;
                (0..len).map(|_| alphabet[next(7) as usize]).collect()
            })
            .collect();
        let mut counts = WordCounts::default();
        for w in &words {
            counts.add(w, 1).unwrap();
        }
        // merges from training on the words themselves, so that tokens span spaces
        let trained = crate::train::train(counts.clone(), 40, 1, &mut |_| true).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let replay = Replay::new(&trained.merges, &trained.vocab);
        let mut laid = Words::<u16>::new(counts, &pool, Some(&replay)).unwrap();
        let mut got: Vec<(Vec<u8>, Vec<TokenId>)> = laid
            .refs
            .iter()
            .map(|&w| {
                let (len, _, t) = word_at(&mut laid.arena, w as usize * u16::UNIT);
                let ids: Vec<TokenId> = t[..len].iter().map(|x| x.id()).collect();
                let bytes = ids
                    .iter()
                    .flat_map(|&i| trained.vocab[i as usize].clone())
                    .collect();
                (bytes, ids)
            })
            .collect();
        got.sort();
        let mut expected: Vec<(Vec<u8>, Vec<TokenId>)> = words
            .iter()
            .filter(|w| w.len() >= 2)
            .map(|w| {
                (
                    w.clone(),
                    crate::testing::bpe_by_definition(w, &trained.merges),
                )
            })
            .collect();
        expected.sort();
        expected.dedup();
        assert_eq!(got, expected);
    }
}
