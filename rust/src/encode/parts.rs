//! Parts of long pretokens, for superword tokenizers, whose pretokens are lines: where a
//! pretoken may be cut without changing its BPE (`Joins`), its BPE in two phases (`Phases`), and
//! a small cache of the parts seen last (`RecentParts`). Training's second stage uses them too,
//! to lay out its lines as the first stage's tokens (`train/replay.rs`).

use super::pair_table::PairTable;
use crate::types::{hot_slot, TokenId};

/// The merges of a tokenizer whose later merges join words (superword training's second stage)
/// up to the first such merge: a long pretoken's BPE is theirs first, on its parts between
/// places where these cut it (words, mostly), then the later merges' on the tokens made, which
/// are a quarter as many as the bytes. Exact for any split of the merges: a pair of rank below
/// the split never forms after a merge at or past it (that merge's token is in every pair it
/// makes, and such pairs rank above it).
pub struct Phases {
    pub first: PairTable,
    pub joins: Joins,
}

impl Phases {
    /// The split of `merges` (as bytes, in rank order; `ids` the same as ids): the first merge
    /// whose token spans words. None if no merge's does.
    pub fn new(
        merges: &[(Vec<u8>, Vec<u8>)],
        ids: &[((TokenId, TokenId), TokenId)],
        byte_ids: &[TokenId; 256],
    ) -> Option<Self> {
        let split = merges.iter().position(|(a, b)| {
            // a space past the token's first byte, before the test on its characters
            let spaced = a.iter().skip(1).chain(b).any(|&c| c == b' ');
            spaced && spans_words(&[a.as_slice(), b].concat())
        })?;
        let first = &merges[..split];
        Some(Phases {
            first: PairTable::new(ids[..split].iter().copied(), byte_ids),
            joins: Joins::new(first.iter().map(|(a, b)| (a.as_slice(), b.as_slice()))),
        })
    }
}

/// Whether a token holds a space after a character other than whitespace (a partial character
/// counts as other), as superword tokens do and those of pretokens split at whitespace never do
/// (they keep a space only at their start or among whitespace, as GPT-2's `" \u{a0} \u{a0}"`).
/// The same test as `superword.py`'s `spans_words`.
fn spans_words(token: &[u8]) -> bool {
    let text = String::from_utf8_lossy(token);
    let mut before = None;
    text.chars().any(|c| {
        let joins = c == ' ' && before.is_some_and(|b: char| !b.is_whitespace());
        before = Some(c);
        joins
    })
}

/// Where a pretoken may be cut without changing its BPE: between bytes x and y that sit side by
/// side inside no token a merge makes. No token spans such a place at any step (it would hold x
/// and y side by side), so the BPE of the pretoken is that of its parts. Why: long pretokens
/// otherwise take the heap's BPE (`merge_long`); the lines of a 32K superword tokenizer, cut
/// at its tokens' places, gave parts of 64 bytes or less in 95% of cases, for the plain loop.
pub struct Joins(Box<[[u64; 4]; 256]>);

impl Joins {
    /// The places of the tokens that `merges` (as byte strings) make. Each merge (a, b) adds
    /// one: the last byte of a before the first of b. The other places inside its token are
    /// inside a or b, added by the merges that made them (a part no merge makes never appears
    /// in BPE, nor does the token of a merge that joins it).
    pub fn new<'a>(merges: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Self {
        let mut joined = Box::new([[0u64; 4]; 256]);
        for (a, b) in merges {
            if let (Some(&x), Some(&y)) = (a.last(), b.first()) {
                joined[x as usize][y as usize >> 6] |= 1 << (y & 63);
            }
        }
        Joins(joined)
    }

    /// Whether x followed by y sits inside a token.
    #[inline(always)]
    fn joined(&self, x: u8, y: u8) -> bool {
        self.0[x as usize][y as usize >> 6] >> (y & 63) & 1 != 0
    }

    /// Calls `f` on each part of `word` between places where it may be cut, in order.
    #[inline]
    pub fn for_each_part(&self, word: &[u8], mut f: impl FnMut(&[u8])) {
        let mut start = 0;
        for p in 1..word.len() {
            if !self.joined(word[p - 1], word[p]) {
                f(&word[start..p]);
                start = p;
            }
        }
        if start < word.len() {
            f(&word[start..]);
        }
    }
}

/// Parts of up to this many bytes are cached; 97% of the parts of the large corpus's lines are
/// this short.
const CACHED_MAX: usize = 15;
/// Ids a slot holds (a part of more is not cached).
const CACHED_IDS: usize = 6;
/// Slots of the table (24 MB, made at first use), as bits. Against 2^17 slots, training's
/// layout of the large corpus's lines took 4.4 s instead of 4.7 and encoding ran at 32 MB/s
/// instead of 28; 2^20 was no faster.
const RECENT_BITS: u32 = 19;

/// A direct-mapped table of parts and their ids: the parts of lines are words, which repeat,
/// while the lines rarely do. Direct-mapped: a lookup is one slot, and a part that lost its slot
/// costs one BPE of a few bytes.
#[derive(Default)]
pub struct RecentParts {
    slots: Vec<Recent>,
}

/// A part's ids: its bytes and length packed in `key` (0: empty, as no part is).
#[derive(Clone, Copy, Default)]
struct Recent {
    key: u128,
    n: u32,
    ids: [TokenId; CACHED_IDS],
}

impl RecentParts {
    /// Appends the ids of `part` to `out`: from the table, or made by `bpe` (and kept).
    #[inline]
    pub fn ids(
        &mut self,
        part: &[u8],
        out: &mut Vec<TokenId>,
        bpe: impl FnOnce(&[u8], &mut Vec<TokenId>),
    ) {
        if part.len() > CACHED_MAX {
            return bpe(part, out);
        }
        if self.slots.is_empty() {
            self.slots = vec![Recent::default(); 1 << RECENT_BITS];
        }
        let key = part
            .iter()
            .rev()
            .fold(part.len() as u128, |key, &b| key << 8 | b as u128);
        let slot = &mut self.slots[hot_slot(key, RECENT_BITS)];
        if slot.key == key {
            out.extend_from_slice(&slot.ids[..slot.n as usize]);
            return;
        }
        let start = out.len();
        bpe(part, out);
        let made = &out[start..];
        if made.len() <= CACHED_IDS {
            slot.key = key;
            slot.n = made.len() as u32;
            slot.ids[..made.len()].copy_from_slice(made);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::count::WordCounts;
    use crate::encode::Encoder;
    use crate::pretokenize::SUPERWORD_GPT2_PATTERN;
    use crate::testing::{bpe_by_definition, numbers};
    use crate::train::{train, train_from, Limits, Superword};

    /// A superword tokenizer trained on random lines (merges by words, then by lines), and the
    /// lines: the encoder's two phases and cuts give the BPE of the definition on each.
    #[test]
    fn long_words_in_two_phases_give_the_bpe_of_the_definition() {
        let mut next = numbers(11);
        let vocab = ["a", "b", "ab", "ba", "c", ".", "\u{a0}", "é"];
        let lines: Vec<String> = (0..4000)
            .map(|_| {
                let most = if next(8) == 0 { 40 } else { 8 };
                let n = 1 + next(most);
                let words: Vec<&str> = (0..n).map(|_| vocab[next(8) as usize]).collect();
                words.join(" ")
            })
            .collect();
        let (mut by_words, mut by_lines) = (WordCounts::default(), WordCounts::default());
        for line in &lines {
            for (i, word) in line.split(' ').enumerate() {
                let word = if i == 0 {
                    word.to_owned()
                } else {
                    format!(" {word}")
                };
                by_words.add(word.as_bytes(), 1).unwrap();
            }
            by_lines.add(line.as_bytes(), 1).unwrap();
        }
        let first = train(by_words, 12, 1, &mut |_| true).unwrap();
        let rules = Superword {
            max_words: Some(3),
            colon_space: false,
        };
        let limits = Limits {
            superword: Some(rules),
            ..Limits::default()
        };
        let all = train_from(by_lines, &first.merges, 60, limits, 2, &mut |_| true).unwrap();
        let tokens: Vec<(u32, Vec<u8>)> = (0..).zip(all.vocab.iter().cloned()).collect();
        let bytes_of = |id: u32| all.vocab[id as usize].clone();
        let merges = all
            .merges
            .iter()
            .map(|&(a, b)| (bytes_of(a), bytes_of(b)))
            .collect();
        let enc = Encoder::new(tokens, merges, vec![], SUPERWORD_GPT2_PATTERN).unwrap();
        assert!(enc.phases.is_some(), "no merge spans words");
        for line in &lines {
            let mut got = Vec::new();
            enc.merge_word(line.as_bytes(), &mut got);
            assert_eq!(
                got,
                bpe_by_definition(line.as_bytes(), &all.merges),
                "{line:?}"
            );
        }
    }
}
