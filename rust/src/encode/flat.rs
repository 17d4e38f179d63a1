//! The ids of many texts as one flat array, as numpy callers want them: the offsets where each
//! text's ids start (`text_offsets`), the runs' ids copied (and narrowed to u16) on threads
//! (`fill`), the first id that does not fit in u16 (`first_wide`), and one long text encoded
//! straight into u16 (`Encoder::encode_u16`). Making the numpy arrays is the bindings' (`py/`).

use std::sync::Mutex;

use super::{BatchIds, EncodeError, Encoder, SpecialSet};
use crate::types::TokenId;

/// The offsets where each text's ids start in the flat array of `all`, and the end (one more
/// than the texts); and that end, the number of ids.
pub fn text_offsets<T>(all: &BatchIds<T>) -> (Vec<u64>, usize) {
    let mut offsets = Vec::with_capacity(all.n_texts + 1);
    offsets.push(0u64);
    let mut total = 0usize;
    for n in all.text_lens() {
        total += n;
        offsets.push(total as u64);
    }
    (offsets, total)
}

/// `runs` concatenated as `narrow` makes each id, on `num_threads` threads (`Encoder::share`);
/// and the OR of every id (so that the caller sees whether one did not fit).
pub fn fill<T: Send>(
    encoder: &Encoder,
    runs: &[Vec<TokenId>],
    total: usize,
    num_threads: usize,
    narrow: impl Fn(TokenId) -> T + Sync,
) -> Result<(Vec<T>, TokenId), EncodeError> {
    let mut flat: Vec<T> = Vec::new();
    flat.try_reserve_exact(total)
        .map_err(|_| EncodeError::OutOfMemory(total))?;
    crate::mem::advise_huge_pages(flat.spare_capacity_mut());
    let mut parts = Vec::with_capacity(runs.len());
    let mut rest = &mut flat.spare_capacity_mut()[..total];
    for ids in runs {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(ids.len());
        parts.push(Mutex::new(part));
        rest = tail;
    }
    let copy = |i: usize, _| {
        let mut part = parts[i].lock().unwrap_or_else(|p| p.into_inner());
        let mut bits = 0;
        for (slot, &id) in part.iter_mut().zip(&runs[i]) {
            slot.write(narrow(id));
            bits |= id;
        }
        Ok(bits)
    };
    let bits = encoder
        .share(num_threads, runs.len(), copy)?
        .into_iter()
        .fold(0, |a, b| a | b);
    // SAFETY: the parts cover the first `total` slots exactly (their lengths are the runs' id
    // counts, which sum to `total`), and each was written in full above.
    unsafe { flat.set_len(total) };
    Ok((flat, bits))
}

/// The first id above uint16's range, if any: an OR of all ids first, which compiles to SIMD,
/// rather than a search that stops at each id.
pub fn first_wide(ids: &[TokenId]) -> Option<TokenId> {
    if ids.iter().fold(0, |all, &id| all | id) <= 0xffff {
        return None;
    }
    ids.iter().copied().find(|&id| id > 0xffff)
}

/// The first id of `runs` above uint16's range, given `bits`, the OR of all of them (as `fill`
/// returns it): None when every id fits.
pub fn first_wide_in(runs: &[Vec<TokenId>], bits: TokenId) -> Option<TokenId> {
    if bits <= 0xffff {
        return None;
    }
    Some(runs.iter().find_map(|ids| first_wide(ids)).unwrap_or(bits))
}

impl Encoder {
    /// `encode_checked`, narrowed to u16 as each piece's ids come (while they are in the CPU's
    /// cache: a u32 copy of all ids, then a pass to narrow it, cost ~15% of a long text's time);
    /// and the first id that did not fit, if any (the ids are then wrong: an error to report).
    pub fn encode_u16(
        &self,
        text: &str,
        set: &Option<SpecialSet>,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<(Vec<u16>, Option<TokenId>), EncodeError> {
        let mut narrow: Vec<u16> = Vec::new();
        narrow
            .try_reserve(text.len() / 3 + 16)
            .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
        crate::mem::advise_huge_pages(narrow.spare_capacity_mut());
        let mut too_large = None;
        self.encode_each(text, set, check, &mut |ids| {
            too_large = too_large.or(first_wide(ids));
            narrow
                .try_reserve(ids.len())
                .map_err(|_| EncodeError::OutOfMemory(text.len()))?;
            narrow.extend(ids.iter().map(|&id| id as u16));
            Ok(())
        })?;
        Ok((narrow, too_large))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encoder::tests::toy;
    use crate::encode::CHECK_EVERY;
    use crate::pretokenize::GPT2_PATTERN;

    fn batch(runs: Vec<Vec<TokenId>>, pieces: Vec<(usize, usize)>, n_texts: usize) -> BatchIds {
        BatchIds {
            runs,
            finished: vec![],
            pieces,
            n_texts,
        }
    }

    #[test]
    fn offsets_sum_each_texts_pieces_across_runs() {
        // text 1 in two pieces, one in each run; texts 0 and 3 have no ids
        let pieces = vec![(0, 0), (1, 2), (1, 2), (2, 3), (3, 0)];
        let all = batch(vec![vec![1, 2, 3], vec![4, 5, 6, 7]], pieces, 4);
        assert_eq!(text_offsets(&all), (vec![0, 0, 4, 7, 7], 7));
        assert_eq!(text_offsets(&batch(vec![], vec![], 0)), (vec![0], 0));
    }

    #[test]
    fn fill_concatenates_the_runs_and_ors_their_ids() {
        let enc = toy();
        let runs: Vec<Vec<TokenId>> = vec![vec![1, 2], vec![], vec![0x1_0000, 7], vec![3]];
        for threads in [1, 3] {
            let (wide, bits) = fill(&enc, &runs, 5, threads, |id| id).unwrap();
            assert_eq!(wide, [1, 2, 0x1_0000, 7, 3]);
            assert_eq!(bits, 0x1_0007);
            let (narrow, bits) = fill(&enc, &runs, 5, threads, |id| id as u16).unwrap();
            assert_eq!(narrow, [1, 2, 0, 7, 3]);
            assert_eq!(first_wide_in(&runs, bits), Some(0x1_0000));
        }
        // no run, and one run (copied on this thread)
        assert_eq!(fill(&enc, &[], 0, 2, |id| id).unwrap(), (vec![], 0));
        let one = fill(&enc, &[vec![9, 8]], 2, 2, |id| id as u16).unwrap();
        assert_eq!(one, (vec![9, 8], 9));
    }

    #[test]
    fn the_first_wide_id_is_found_wherever_it_is() {
        assert_eq!(first_wide(&[]), None);
        assert_eq!(first_wide(&[0xffff, 1, 0]), None);
        assert_eq!(first_wide(&[5, 0x1_0000, 0x2_0000]), Some(0x1_0000));
        let runs = vec![vec![1, 2], vec![3, 0x3_0000, 0x1_0000]];
        assert_eq!(first_wide_in(&runs, 0x3_0003), Some(0x3_0000));
        assert_eq!(first_wide_in(&runs[..1], 3), None);
        assert_eq!(first_wide_in(&[], 0), None);
    }

    #[test]
    fn encode_u16_narrows_each_pieces_ids_and_tells_a_wide_one() {
        let enc = toy();
        // longer than `CHECK_EVERY`: encoded and narrowed in two pieces
        let text = "aaaa a<s>aa ".repeat(CHECK_EVERY / 8);
        let want = enc.encode(&text, &None).unwrap();
        let (narrow, wide) = enc.encode_u16(&text, &None, &mut || true).unwrap();
        assert_eq!(wide, None);
        assert!(narrow.iter().map(|&id| id as TokenId).eq(want));
        let stopped = enc.encode_u16(&text, &None, &mut || false);
        assert!(matches!(stopped, Err(EncodeError::Interrupted)));
        // a special token's id past uint16's range
        let vocab = (0..=255u8).map(|b| (b as TokenId, vec![b])).collect();
        let specials = vec![("<w>".to_string(), 70_000)];
        let wide_enc = Encoder::new(vocab, vec![], specials, GPT2_PATTERN).unwrap();
        let (narrow, wide) = wide_enc
            .encode_u16("a<w>b<w>", &None, &mut || true)
            .unwrap();
        assert_eq!(wide, Some(70_000));
        assert_eq!(narrow, [97, 70_000u32 as u16, 98, 70_000u32 as u16]);
    }
}
