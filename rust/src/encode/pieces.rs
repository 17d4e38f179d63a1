//! Texts cut into pieces at safe cuts, so that the ids never depend on where pieces fall: the
//! next cut after a position (`next_stop`), a text in pieces of about a size (`pieces`), and a
//! block of corpus bytes as text and pieces (`block_text`, `block_pieces`). Encoding the pieces
//! is the callers' (`encoder.rs`, `batch.rs`); where a cut is safe is `pretokenize`'s.

use std::borrow::Cow;
use std::str::Utf8Error;

use super::{Encoder, SpecialSet};

/// Bytes of text either side of a cut normalized to check it (`cut_keeps`): more than the
/// pretokenizers' cut rules look at.
const AROUND: usize = 256;

/// The text of a block of corpus bytes that continues a stream from a safe cut: all of it; or,
/// unless `last`, all but an unfinished character at its end (its bytes go in front of the next
/// block). Invalid UTF-8 anywhere else is an error (the caller decides: fail, or replace and
/// retry).
pub fn block_text(data: &[u8], last: bool) -> Result<&str, Utf8Error> {
    // valid text (nearly always) is checked at SIMD speed: std's check, on the calling thread
    // while the others waited, was 7% of `bytepair encode`'s time (perf); std says where not
    if let Ok(text) = simdutf8::basic::from_utf8(data) {
        return Ok(text);
    }
    match std::str::from_utf8(data) {
        Ok(text) => Ok(text),
        Err(e) if e.error_len().is_none() && !last => {
            Ok(std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default())
        }
        Err(e) => Err(e),
    }
}

impl Encoder {
    /// The last place `text` (a prefix of a longer text, from a safe cut) may be cut without
    /// changing its ids: where special tokens, the pretokenizer and the normalization allow.
    pub(super) fn safe_cut(&self, set: &SpecialSet, text: &str) -> Option<usize> {
        if self.normalization.is_none() && set.later.is_none() {
            return set.matcher.safe_cut(text, &self.pretok);
        }
        set.matcher
            .safe_cut_where(text, |_, p| self.cut_keeps(set, text, p))
    }

    /// Whether cutting `text` (a prefix of a stream, from a safe cut) at `p` keeps the ids of a
    /// tokenizer that normalizes, or matches special tokens in a second pass: the pretokenizer
    /// and the second pass are asked on the text they see, normalized, around `p`. Normalizing
    /// is local between the places `can_cut_before` finds, so the text between two of them,
    /// normalized apart, is that of the whole.
    fn cut_keeps(&self, set: &SpecialSet, text: &str, p: usize) -> bool {
        let b = text.as_bytes();
        let later = set.later.as_deref().map(|l| &l.matcher);
        let clear = |t: &str, q: usize| later.is_none_or(|l| !l.touches(t, q));
        let Some(form) = self.normalization else {
            let room = later.map_or(0, |l| l.max_len());
            return p + room < b.len() && self.pretok.can_cut_before(b, p) && clear(text, p);
        };
        if !form.can_cut_before(b, p) {
            return false;
        }
        // NFC can shrink text to a third (Hangul jamo): room for the longest token after it
        let reach = AROUND + 4 * later.map_or(0, |l| l.max_len());
        let is_cut = |q: usize| text.is_char_boundary(q) && form.can_cut_before(b, q);
        let start = (1..=p.saturating_sub(reach))
            .rev()
            .find(|&q| is_cut(q))
            .unwrap_or(0);
        let Some(end) = (p + reach..b.len()).find(|&q| is_cut(q)) else {
            return false; // what follows may change the text near `p`
        };
        let (left, right) = (form.apply(&text[start..p]), form.apply(&text[p..end]));
        if matches!((&left, &right), (Cow::Borrowed(_), Cow::Borrowed(_))) {
            return self.pretok.can_cut_before(b, p) && clear(text, p);
        }
        let at = left.len();
        let joined = left.into_owned() + &right;
        self.pretok.can_cut_before(joined.as_bytes(), at) && clear(&joined, at)
    }

    /// Where a piece of `text` that starts at the safe cut `pos` may end: the last safe cut
    /// within `window` bytes, or within a window twice as large if there is none, etc. The end
    /// of the text counts as a cut when `to_end`; else None when no cut follows `pos`.
    pub(super) fn next_stop(
        &self,
        text: &str,
        pos: usize,
        set: &SpecialSet,
        mut window: usize,
        to_end: bool,
    ) -> Option<usize> {
        loop {
            let mut limit = pos.saturating_add(window.max(1));
            if limit >= text.len() {
                if to_end {
                    return Some(text.len());
                }
                limit = text.len();
            }
            while !text.is_char_boundary(limit) {
                limit -= 1;
            }
            if let Some(p) = self.safe_cut(set, &text[pos..limit]) {
                return Some(pos + p);
            }
            if limit == text.len() {
                return None;
            }
            // From 1 at least: a window of 0 would never grow (and the loop never end).
            window = window.max(1).saturating_mul(2);
        }
    }

    /// `text` (which starts at a safe cut) in pieces of about `size` bytes, cut where
    /// `next_stop` allows, so that the ids never depend on where pieces fall. Unless `last`,
    /// the text after the last safe cut is left out: what follows it may change its ids.
    pub fn pieces<'t>(
        &self,
        text: &'t str,
        set: &Option<SpecialSet>,
        size: usize,
        last: bool,
    ) -> Vec<&'t str> {
        let mut pieces = Vec::new();
        self.pieces_of(text, self.resolve(set), size, last, |p| pieces.push(p));
        pieces
    }

    /// `pieces`, each handed to `f`, with the special tokens resolved.
    pub(super) fn pieces_of<'t>(
        &self,
        text: &'t str,
        set: &SpecialSet,
        size: usize,
        last: bool,
        mut f: impl FnMut(&'t str),
    ) {
        let mut pos = 0;
        while pos < text.len() {
            let Some(end) = self.next_stop(text, pos, set, size, last) else {
                break;
            };
            f(&text[pos..end]);
            pos = end;
        }
    }

    /// A block of corpus bytes that continues a stream from a safe cut (`block_text`), in pieces
    /// of about `piece_bytes` (`pieces`: unless `last`, the text after the last safe cut is left
    /// for the next block), and the bytes the pieces take.
    pub fn block_pieces<'t>(
        &self,
        data: &'t [u8],
        set: &Option<SpecialSet>,
        piece_bytes: usize,
        last: bool,
    ) -> Result<(Vec<&'t str>, usize), Utf8Error> {
        let text = block_text(data, last)?;
        let pieces = self.pieces(text, set, piece_bytes, last);
        let consumed = pieces.iter().map(|p| p.len()).sum();
        Ok((pieces, consumed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encoder::tests::toy;
    use crate::types::TokenId;

    #[test]
    fn block_text_leaves_an_unfinished_character_to_the_next_block() {
        let data = "ab é".as_bytes();
        assert_eq!(block_text(data, false), Ok("ab é"));
        assert_eq!(block_text(data, true), Ok("ab é"));
        // the first byte of `é` alone: kept for the next block, unless this block is the last
        let cut = &data[..data.len() - 1];
        assert_eq!(block_text(cut, false), Ok("ab "));
        assert_eq!(block_text(cut, true).unwrap_err().valid_up_to(), 3);
        assert_eq!(block_text(b"\xe4\xb8", false), Ok(""));
        assert_eq!(block_text(b"", true), Ok(""));
        // an invalid byte is an error wherever it is, even before an unfinished character
        for last in [false, true] {
            assert_eq!(block_text(b"a\xffb", last).unwrap_err().valid_up_to(), 1);
            assert_eq!(
                block_text(b"a\xffb\xe4", last).unwrap_err().valid_up_to(),
                1
            );
        }
    }

    #[test]
    fn block_pieces_are_cut_where_the_ids_cannot_change() {
        let enc = toy();
        let text = "aaa aa<s>aaaa  a\n<s><s> aaaaa\t\u{e9}".repeat(40);
        let whole = enc.encode(&text, &None).unwrap();
        for piece_bytes in [1, 7, 64, 1000, 1 << 20] {
            for last in [false, true] {
                let (pieces, consumed) = enc
                    .block_pieces(text.as_bytes(), &None, piece_bytes, last)
                    .unwrap();
                let at = format!("{piece_bytes} bytes, last {last}");
                assert_eq!(pieces.concat(), text[..consumed], "{at}");
                assert!(pieces.iter().all(|p| !p.is_empty()), "{at}");
                match last {
                    true => assert_eq!(consumed, text.len(), "{at}"),
                    // the text after the last safe cut (the tab and `é`) waits for more
                    false => assert!(0 < consumed && consumed < text.len(), "{at}"),
                }
                // each piece alone gives the ids it has in the whole text: no special token
                // and no pretoken straddles a cut
                let ids: Vec<TokenId> = pieces
                    .iter()
                    .flat_map(|p| enc.encode(p, &None).unwrap())
                    .collect();
                assert_eq!(ids[..], whole[..ids.len()], "{at}");
                assert_eq!(ids.len() == whole.len(), last, "{at}");
                let specials = |t: &str| t.matches("<s>").count();
                let split: usize = pieces.iter().map(|p| specials(p)).sum();
                assert_eq!(split, specials(&text[..consumed]), "{at}");
            }
        }
    }

    #[test]
    fn block_pieces_of_edge_blocks() {
        let enc = toy();
        // an unfinished character at the end is not consumed; at the end of the stream it is
        // invalid UTF-8
        let mut data = b"aa aa ".repeat(20);
        data.push(0xc3);
        let (pieces, consumed) = enc.block_pieces(&data, &None, 16, false).unwrap();
        assert!(consumed < data.len() - 1 && pieces.len() > 1, "{consumed}");
        let err = enc.block_pieces(&data, &None, 16, true).unwrap_err();
        assert_eq!(err.valid_up_to(), data.len() - 1);
        assert!(enc.block_pieces(b"aa \xff aa", &None, 16, false).is_err());
        // no safe cut at all (one long word): nothing yet, or all of it when last
        let word = "a".repeat(500);
        let none = enc.block_pieces(word.as_bytes(), &None, 64, false).unwrap();
        assert_eq!(none, (vec![], 0));
        let all = enc.block_pieces(word.as_bytes(), &None, 64, true).unwrap();
        assert_eq!(all, (vec![word.as_str()], 500));
        // an empty block
        assert_eq!(enc.block_pieces(b"", &None, 64, true).unwrap(), (vec![], 0));
        // special tokens not matched: `<s>` is text, cut like any other
        let set = enc.special_set(Some(&[])).unwrap();
        let text = "a<s>a ".repeat(30);
        let (pieces, consumed) = enc.block_pieces(text.as_bytes(), &set, 8, true).unwrap();
        assert_eq!(
            (pieces.concat().as_str(), consumed),
            (text.as_str(), text.len())
        );
        assert!(pieces.iter().any(|p| !p.contains("<s>")), "{pieces:?}");
    }
}
