//! One text to ids, the encoder's hot path: special tokens matched, the pretokens scanned in
//! batches, each looked up in the cache (`cache.rs`) and, on a miss, merged by BPE (`merge.rs`)
//! and cached. Where a text is cut, and on which thread it runs, are the callers' (`encoder.rs`,
//! `batch.rs`).

use super::cache::{self, Batch, Cache, AHEAD, BATCH, LONG_WORD, TAIL_MAX};
use super::merge::{self, SHORT};
use super::parts::RecentParts;

/// Words longer than this are encoded in two phases when the tokenizer has them (`Phases`):
/// the plain loop's rounds over a line of 40 bytes cost twice the two phases.
const PHASED: usize = 16;
use super::{EncodeError, Encoder, SpecialSet};
use crate::pretokenize::Piece;
use crate::types::TokenId;

impl Encoder {
    /// Encodes `text` into `out` with a caller-owned cache.
    pub(super) fn encode_into(
        &self,
        text: &str,
        set: &SpecialSet,
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) -> Result<(), EncodeError> {
        let mut result = Ok(());
        // the cache's batch, kept with it: a new one per call was 12 KB to zero per document
        let mut batch = cache.batch.take().unwrap_or_default();
        set.matcher.for_each_piece(text, |piece| match piece {
            Piece::Special(i) => out.push(set.ids[i]),
            Piece::Text(t) if result.is_ok() => {
                let normalized = self.normalization.map(|form| form.apply(t));
                let t = normalized.as_deref().unwrap_or(t);
                let Some(later) = &set.later else {
                    result = self.encode_text(t, &mut batch, cache, out);
                    return;
                };
                later.matcher.for_each_piece(t, |piece| match piece {
                    Piece::Special(i) => out.push(later.ids[i]),
                    Piece::Text(t) if result.is_ok() => {
                        result = self.encode_text(t, &mut batch, cache, out);
                    }
                    Piece::Text(_) => {}
                });
            }
            Piece::Text(_) => {}
        });
        cache.batch = Some(batch);
        Ok(result?)
    }

    /// Encodes `t`, text without special tokens (normalized where the tokenizer normalizes):
    /// its pretokens scanned in batches, then looked up.
    #[inline]
    fn encode_text(
        &self,
        t: &str,
        batch: &mut Batch,
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) -> Result<(), crate::pretokenize::PretokenizeError> {
        let Batch { spans, keys } = batch;
        let b = t.as_bytes();
        let stop = std::sync::atomic::AtomicBool::new(false);
        // the count in a local, not in `Batch`: kept in a register, where a field was loaded
        // and stored back for every pretoken
        let mut n = 0;
        let result = self.pretok.for_each_span(t, &stop, |start, end| {
            spans[n] = (start, end);
            n += 1;
            if n == BATCH {
                self.encode_batch_of(b, &spans[..n], keys, cache, out);
                n = 0;
            }
        });
        self.encode_batch_of(b, &spans[..n], keys, cache, out);
        result
    }

    /// Encodes the pretokens `spans` (byte ranges of `b`), with `keys` for room. Three loops, each
    /// tight: the scanner only records ranges; then each pretoken's cache key and hash; then
    /// the lookups, each slot asked for `AHEAD` pretokens before it is read. The table
    /// outgrows the CPU caches on large inputs, and a lookup that waits for memory costs
    /// ~100 ns; asked for early, the slot is there.
    #[inline(never)]
    fn encode_batch_of(
        &self,
        b: &[u8],
        spans: &[(usize, usize)],
        keys: &mut [(u128, u64); BATCH],
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) {
        let n = spans.len();
        let keys = &mut keys[..n];
        for (&(s, e), key) in spans.iter().zip(keys.iter_mut()) {
            let k = cache::key_at(b, s, e - s);
            *key = (k, crate::types::mix(k));
        }
        for &(_, hash) in keys.iter().take(AHEAD) {
            cache.prefetch(hash);
        }
        let mut i = 0;
        while i < n {
            i = cache.get_run(keys, i, out);
            if let Some(&(s, e)) = spans.get(i) {
                let (key, hash) = keys[i];
                self.encode_uncommon(&b[s..e], key, hash, cache, out);
                i += 1;
            }
        }
    }

    /// A pretoken whose ids are not inline in its first slot: further along the table, spilled,
    /// of 16+ bytes, or not cached.
    #[inline(never)]
    fn encode_uncommon(
        &self,
        word: &[u8],
        key: u128,
        hash: u64,
        cache: &mut Cache,
        out: &mut Vec<TokenId>,
    ) {
        match word.len() {
            1..=crate::types::PACKED_MAX if cache.get(key, hash, out) => {}
            16..=TAIL_MAX if cache.get_tail(key, hash, word, out) => {}
            _ => self.encode_word(word, key, cache, out),
        }
    }

    /// BPE of one pretoken not found in the cache, appended to `out`, and cached: pretokens of up
    /// to 15 bytes by their `key` (`cache::key_at`), of 16 to `TAIL_MAX` bytes (non-ASCII words,
    /// whitespace runs, long identifiers: ~9% of the bytes) by `key` and their tail, longer ones
    /// up to `LONG_WORD` bytes by their bytes.
    #[inline(never)]
    fn encode_word(&self, word: &[u8], key: u128, cache: &mut Cache, out: &mut Vec<TokenId>) {
        let long = word.len() > TAIL_MAX;
        if long && word.len() <= LONG_WORD && cache.get_long(word, out) {
            return;
        }
        let start = out.len();
        self.merge_word_with(word, Some(&mut cache.parts), out);
        match word.len() {
            0..=crate::types::PACKED_MAX => cache.insert(key, &out[start..]),
            16..=TAIL_MAX => cache.insert_tail(key, word, &out[start..]),
            _ if word.len() <= LONG_WORD => cache.insert_long(word, &out[start..]),
            _ => {}
        }
    }

    /// BPE of `word` (1+ bytes), appended to `out`, without the cache (public for
    /// `encode_profile`'s `misses` mode, which times it alone).
    #[inline(never)]
    pub fn merge_word(&self, word: &[u8], out: &mut Vec<TokenId>) {
        self.merge_word_with(word, None, out);
    }

    /// `merge_word`. A superword tokenizer encodes words past `PHASED` bytes in two phases
    /// (`Phases`), the first's parts looked up in `parts`; other long words are cut where
    /// they may be (`Joins`).
    fn merge_word_with(
        &self,
        word: &[u8],
        mut parts: Option<&mut RecentParts>,
        out: &mut Vec<TokenId>,
    ) {
        if !self.whole.is_empty() {
            if let Some(&id) = self.whole.get(word) {
                return out.push(id);
            }
        }
        match (word, &self.phases) {
            (&[byte], _) => out.push(self.byte_ids[byte as usize]),
            (_, Some(phases)) if word.len() > PHASED => {
                let mut first = Vec::with_capacity(word.len());
                phases.joins.for_each_part(word, |part| {
                    let bpe = |part: &[u8], ids: &mut Vec<TokenId>| {
                        merge::merge_bytes(&phases.first, &self.byte_ids, part, ids)
                    };
                    match parts.as_deref_mut() {
                        Some(recent) if part.len() > 1 => recent.ids(part, &mut first, bpe),
                        _ => bpe(part, &mut first),
                    }
                });
                match first.len() {
                    1 => out.push(first[0]),
                    2..=SHORT => merge::merge_short_ids(&self.pairs, &first, out),
                    _ => merge::merge_long(&self.pairs, &first, out),
                }
            }
            _ if word.len() <= SHORT => merge::merge_short(&self.pairs, &self.byte_ids, word, out),
            _ => self.joins.for_each_part(word, |part| {
                merge::merge_bytes(&self.pairs, &self.byte_ids, part, out)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encoder::tests::toy;
    use crate::pretokenize::{Pretokenizer, GPT2_PATTERN};

    /// BPE of `word` by the short loop or the heap; the short loop's two forms (with AVX2 if
    /// the CPU has it, and without) and the heap's three (from bytes, from ids, positions in
    /// 64 bits) checked equal.
    fn merged(enc: &Encoder, word: &[u8], short: bool) -> Vec<TokenId> {
        let mut out = vec![];
        if short && word.len() <= SHORT {
            merge::merge_short(&enc.pairs, &enc.byte_ids, word, &mut out);
            let mut sse2 = vec![];
            merge::merge_short_sse2(&enc.pairs, &enc.byte_ids, word, &mut sse2);
            assert_eq!(out, sse2, "{word:?}");
            return out;
        }
        let tokens: Vec<TokenId> = word.iter().map(|&b| enc.byte_ids[b as usize]).collect();
        merge::merge_long(&enc.pairs, &tokens, &mut out);
        let (mut bytes, mut wide) = (vec![], vec![]);
        merge::merge_long_bytes(&enc.pairs, &enc.byte_ids, word, &mut bytes);
        merge::merge_long_wide(&enc.pairs, &tokens, &mut wide);
        assert_eq!((&out, &out), (&bytes, &wide), "{word:?}");
        out
    }

    #[test]
    fn long_and_short_words_agree() {
        let enc = toy();
        for n in [2, 3, 5, 63, 64, 65, 200, 1001] {
            let word = vec![b'a'; n];
            assert_eq!(
                merged(&enc, &word, true),
                merged(&enc, &word, false),
                "n = {n}"
            );
        }
    }

    #[test]
    fn short_loop_equals_heap_on_random_words() {
        // merges over a 3-letter alphabet, overlapping on purpose
        let merges: Vec<(&[u8], &[u8])> = vec![
            (b"a", b"b"),
            (b"b", b"a"),
            (b"a", b"a"),
            (b"ab", b"ab"),
            (b"c", b"ab"),
            (b"b", b"b"),
            (b"aa", b"a"),
            (b"ba", b"c"),
            (b"abab", b"c"),
            (b"cab", b"ba"),
        ];
        // merged ids from 256 (16-bit ranks and the narrow pair table), from 70,000 up (the
        // mid table, ids for ranks) or from 70,000 down (wide)
        for (first_id, step) in [(256, 1), (70_000, 1), (70_100, -1)] {
            let mut vocab: Vec<(TokenId, Vec<u8>)> =
                (0..=255u8).map(|b| (b as TokenId, vec![b])).collect();
            let mut pairs = Vec::new();
            for (a, b) in &merges {
                let joined = [*a, *b].concat();
                if !vocab.iter().any(|(_, v)| *v == joined) {
                    let k = vocab.len() as i64 - 256;
                    vocab.push(((first_id as i64 + step * k) as TokenId, joined));
                }
                pairs.push((a.to_vec(), b.to_vec()));
            }
            let enc = Encoder::new(vocab, pairs, vec![], GPT2_PATTERN).unwrap();
            random_words_agree(&enc);
        }
    }

    /// The short loop and the heap give the same ids on 3,000 random words of "abc".
    fn random_words_agree(enc: &Encoder) {
        let mut seed = 12345u64;
        for _ in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = 2 + (seed >> 58) as usize; // 2..=65
            let word: Vec<u8> = (0..n.min(SHORT))
                .map(|k| b"abc"[((seed >> (k % 29 * 2)) % 3) as usize])
                .collect();
            assert_eq!(
                merged(enc, &word, true),
                merged(enc, &word, false),
                "{word:?}"
            );
        }
    }

    #[test]
    fn cached_ids_equal_merged_ids_cold_and_warm() {
        // one-byte pretokens, words of 1-4 ids (inline in the cache), of 5+ ids (spilled), of
        // 16+ bytes (tails) and of 256+ bytes, repeated so that the second pass hits the cache
        let enc = toy();
        let words: Vec<String> = [1, 2, 3, 4, 5, 8, 9, 13, 15, 16, 17, 40, 255, 256, 300]
            .iter()
            .flat_map(|&n| ["a".repeat(n), format!(" {}", "a".repeat(n)), "!".repeat(n)])
            .collect();
        let text = words.join(" ").repeat(3);
        let mut want = vec![];
        let pretok = Pretokenizer::new(GPT2_PATTERN).unwrap();
        pretok
            .for_each(&text, |w| want.extend(merged(&enc, w.as_bytes(), false)))
            .unwrap();
        for pass in 0..3 {
            assert_eq!(enc.encode(&text, &None).unwrap(), want, "pass {pass}");
        }
    }
}
