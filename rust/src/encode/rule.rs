//! The rule a tokenizer's BPE follows beyond "merge the listed pair of lowest rank": tiktoken's
//! rule for rank files (`Ranks::ById`: the pairs are every split of every token into two tokens,
//! ranked by the token they make) and taking a pretoken whole when it is a token (`whole`: HF's
//! `ignore_merges`, tiktoken's first step). Both are built here, once, for `Encoder::new`.

use super::merge::merge_bytes;
use super::pair_table::PairTable;
use crate::normalize::Normalization;
use crate::pretokenize::Added;
use crate::types::{FastMap, Pair, TokenId};

pub use super::pair_table::Ranks;

/// A merge as the bytes of its two tokens.
pub type BytePair = (Vec<u8>, Vec<u8>);

/// How a tokenizer's pretokens become ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// What a merge's rank is (with `ById`, the merges given are ignored: every split is one).
    pub ranks: Ranks,
    /// A pretoken that is a token is that token, whatever its merges would make of it.
    pub whole: bool,
    /// The text between special tokens is normalized first (`normalize.rs`).
    pub normalization: Option<Normalization>,
    /// Special tokens are matched in text unless a call names others (false: only those named,
    /// as Mistral's control tokens, which its encoder never matches).
    pub match_specials: bool,
    /// Merges one pair at a time, the lowest rank and then the leftmost (tiktoken's and HF's
    /// order), instead of GPT-2's rounds of every place of the lowest pair. The two differ only
    /// where a merge makes a pair of lower rank than its own, which trained merges never do.
    pub one_at_a_time: bool,
    /// HF's options of each special token, in their order (empty: none has any).
    pub added: Vec<Added>,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            ranks: Ranks::Listed,
            whole: false,
            normalization: None,
            match_specials: true,
            one_at_a_time: false,
            added: Vec::new(),
        }
    }
}

/// Every way to make a token of two tokens, as byte pairs, ordered by the token's id (the rank
/// under tiktoken's rule); `id_of` holds the ordinary tokens, `specials` the ids to leave out.
pub(super) fn splits_by_id(
    id_of: &FastMap<Vec<u8>, TokenId>,
    specials: &[TokenId],
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(TokenId, usize, &[u8])> = Vec::new();
    for (token, &id) in id_of {
        if token.len() < 2 || specials.contains(&id) {
            continue;
        }
        for k in 1..token.len() {
            let (a, b) = token.split_at(k);
            let ordinary = |t: &[u8]| id_of.get(t).is_some_and(|i| !specials.contains(i));
            if ordinary(a) && ordinary(b) {
                out.push((id, k, token));
            }
        }
    }
    out.sort_unstable_by_key(|&(id, k, _)| (id, k));
    out.into_iter()
        .map(|(_, k, t)| (t[..k].to_vec(), t[k..].to_vec()))
        .collect()
}

/// The merges of a rank file as HF's converter derives them (tiktoken's BPE of each token's bytes
/// with lower ranks only ends in two tokens: they are its merge), in rank order, and the ranks
/// of the tokens it cannot make so (none in OpenAI's files; Llama 3's has 678, Qwen 3.5's 232).
/// Where there are none, those merges encode as tiktoken's rule does, and an encoder built on
/// them is the fast one; else `Ranks::ById` is exact. `ranks`: (bytes, rank), ranks distinct.
pub fn canonical_merges(ranks: &[(Vec<u8>, TokenId)]) -> (Vec<BytePair>, Vec<TokenId>) {
    let rank_of: FastMap<&[u8], TokenId> = ranks.iter().map(|(t, r)| (t.as_slice(), *r)).collect();
    let mut order: Vec<&(Vec<u8>, TokenId)> = ranks.iter().filter(|(t, _)| t.len() > 1).collect();
    order.sort_unstable_by_key(|(_, r)| *r);
    let (mut merges, mut unmade) = (Vec::with_capacity(order.len()), Vec::new());
    let mut parts: Vec<(usize, usize)> = Vec::new(); // byte ranges of the token
    for (token, rank) in order {
        parts.clear();
        parts.extend((0..token.len()).map(|i| (i, i + 1)));
        while parts.len() > 2 {
            let joined = |i: usize| rank_of.get(&token[parts[i].0..parts[i + 1].1]).copied();
            let best = (0..parts.len() - 1)
                .filter_map(|i| joined(i).filter(|r| r < rank).map(|r| (r, i)))
                .min();
            let Some((_, i)) = best else { break };
            parts[i].1 = parts[i + 1].1;
            parts.remove(i + 1);
        }
        let lower = |(s, e): (usize, usize)| rank_of.get(&token[s..e]).is_some_and(|r| r < rank);
        match parts[..] {
            [a, b] if lower(a) && lower(b) => {
                merges.push((token[a.0..a.1].to_vec(), token[b.0..b.1].to_vec()))
            }
            _ => unmade.push(*rank),
        }
    }
    (merges, unmade)
}

/// The tokens a pretoken must be taken whole as: those whose own bytes BPE makes into other ids
/// (tiktoken emits them for a pretoken equal to one; Llama 3's ranks hold 588). Taking every
/// other token whole changes nothing, so only these are looked up, on a cache miss.
pub(super) fn whole_tokens(
    id_of: &FastMap<Vec<u8>, TokenId>,
    specials: &[TokenId],
    pairs: &PairTable,
    byte_ids: &[TokenId; 256],
) -> FastMap<Box<[u8]>, TokenId> {
    let mut out = FastMap::default();
    let mut ids = Vec::new();
    for (token, &id) in id_of {
        if token.len() < 2 || specials.contains(&id) {
            continue;
        }
        ids.clear();
        merge_bytes(pairs, byte_ids, token, &mut ids);
        if ids != [id] {
            out.insert(token.clone().into_boxed_slice(), id);
        }
    }
    out
}

/// Whether every merge makes its token after the merges that make its parts (the pairs a merge
/// makes then rank above it): true of trained tokenizers. The two-phase encoding of superword
/// tokenizers (`Phases`) needs it.
pub(super) fn merges_grow(pairs: &[(Pair, TokenId)]) -> bool {
    // the last merge that makes each token
    let made: FastMap<TokenId, usize> = pairs
        .iter()
        .enumerate()
        .map(|(rank, &(_, id))| (id, rank))
        .collect();
    pairs.iter().enumerate().all(|(rank, &((a, b), _))| {
        let before = |x: TokenId| made.get(&x).is_none_or(|&r| r < rank);
        before(a) && before(b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::Encoder;
    use crate::pretokenize::Pretokenizer;
    use crate::testing::numbers;
    use std::collections::HashMap;

    /// tiktoken's `_byte_pair_merge` by its definition: a pretoken that is a token is that
    /// token; else the adjacent pair whose joined bytes rank lowest, leftmost of equals, merged
    /// one at a time.
    fn tiktoken(ranks: &HashMap<Vec<u8>, TokenId>, piece: &[u8]) -> Vec<TokenId> {
        if let Some(&r) = ranks.get(piece) {
            return vec![r];
        }
        let mut parts: Vec<Vec<u8>> = piece.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| {
                    Some((
                        *ranks.get(&[parts[i].clone(), parts[i + 1].clone()].concat())?,
                        i,
                    ))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = parts.remove(i + 1);
            parts[i].extend(right);
        }
        parts.iter().map(|p| ranks[p]).collect()
    }

    /// A vocabulary over "abcd" with ranks in random order, so that many tokens are made of a
    /// token ranked after them (as in Llama 3's ranks, whose merges tiktoken reaches otherwise).
    fn random_ranks(seed: u64, n: usize) -> HashMap<Vec<u8>, TokenId> {
        let mut next = numbers(seed);
        let mut tokens: Vec<Vec<u8>> = Vec::new();
        while tokens.len() < n {
            let len = 2 + next(5) as usize;
            let t: Vec<u8> = (0..len).map(|_| b"abcd"[next(4) as usize]).collect();
            if !tokens.contains(&t) {
                tokens.push(t);
            }
        }
        let mut ranks: HashMap<Vec<u8>, TokenId> =
            (0..=255u8).map(|b| (vec![b], b as TokenId)).collect();
        for (i, t) in tokens.into_iter().enumerate() {
            ranks.insert(t, 256 + i as TokenId);
        }
        ranks
    }

    fn words(seed: u64) -> Vec<Vec<u8>> {
        let mut next = numbers(seed);
        (0..400)
            .map(|k| {
                let len = 1 + next(if k % 10 == 0 { 150 } else { 24 }) as usize;
                (0..len).map(|_| b"abcd"[next(4) as usize]).collect()
            })
            .collect()
    }

    #[test]
    fn ranks_by_id_are_tiktokens_rule() {
        for seed in 1..6 {
            let ranks = random_ranks(seed, 60 + 40 * seed as usize);
            let vocab: Vec<(TokenId, Vec<u8>)> =
                ranks.iter().map(|(t, &r)| (r, t.clone())).collect();
            let rule = Rule {
                ranks: Ranks::ById,
                whole: true,
                one_at_a_time: true,
                ..Rule::default()
            };
            let enc = Encoder::with_rule(vocab, vec![], vec![], Pretokenizer::Gpt2, rule).unwrap();
            for word in words(seed) {
                let mut ids = vec![];
                enc.merge_word(&word, &mut ids);
                assert_eq!(
                    ids,
                    tiktoken(&ranks, &word),
                    "seed {seed}, {:?}",
                    String::from_utf8_lossy(&word)
                );
            }
        }
    }

    /// HF's BPE by its definition (`models/bpe/word.rs`): a heap of (rank, position), the lowest
    /// merged one at a time; a pretoken that is a token first, with `ignore_merges`.
    fn hf(
        merges: &[(Vec<u8>, Vec<u8>)],
        vocab: &HashMap<Vec<u8>, TokenId>,
        piece: &[u8],
        whole: bool,
    ) -> Vec<TokenId> {
        if whole && vocab.contains_key(piece) {
            return vec![vocab[piece]];
        }
        let rank: HashMap<(&[u8], &[u8]), usize> = merges
            .iter()
            .enumerate()
            .rev()
            .map(|(r, (a, b))| ((a.as_slice(), b.as_slice()), r))
            .collect();
        let mut parts: Vec<Vec<u8>> = piece.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| {
                    Some((
                        *rank.get(&(parts[i].as_slice(), parts[i + 1].as_slice()))?,
                        i,
                    ))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = parts.remove(i + 1);
            parts[i].extend(right);
        }
        parts.iter().map(|p| vocab[p]).collect()
    }

    #[test]
    fn listed_merges_with_every_split_are_hfs_rule() {
        // Meta's Llama 3 tokenizer.json lists every split of every token: pairs then rank below
        // the tokens they are made of, and merging a round first is not HF's order
        for seed in 1..6 {
            let ranks = random_ranks(seed, 80);
            let mut by_rank: Vec<(&Vec<u8>, &TokenId)> =
                ranks.iter().filter(|(t, _)| t.len() > 1).collect();
            by_rank.sort_by_key(|&(_, r)| *r);
            let mut merges = vec![];
            for (t, _) in by_rank {
                for k in 1..t.len() {
                    if ranks.contains_key(&t[..k]) && ranks.contains_key(&t[k..]) {
                        merges.push((t[..k].to_vec(), t[k..].to_vec()));
                    }
                }
            }
            let vocab: Vec<(TokenId, Vec<u8>)> =
                ranks.iter().map(|(t, &r)| (r, t.clone())).collect();
            for whole in [false, true] {
                let rule = Rule {
                    ranks: Ranks::Listed,
                    whole,
                    one_at_a_time: true,
                    ..Rule::default()
                };
                let enc = Encoder::with_rule(
                    vocab.clone(),
                    merges.clone(),
                    vec![],
                    Pretokenizer::Gpt2,
                    rule,
                )
                .unwrap();
                for word in words(seed + 10) {
                    let mut ids = vec![];
                    enc.merge_word(&word, &mut ids);
                    assert_eq!(
                        ids,
                        hf(&merges, &ranks, &word, whole),
                        "seed {seed}, whole {whole}"
                    );
                }
            }
        }
    }
}
