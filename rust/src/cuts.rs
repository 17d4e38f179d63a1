//! Where a file may be split into shards that are counted apart (on other machines, by other
//! jobs) with the result of counting it whole: byte offsets where training's own reader could
//! cut (`Specials::safe_cut`, used by `count.rs`), found from a window before a target offset,
//! so that planning reads kilobytes of a file, not all of it. Counting itself is `count.rs`'s.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};

use crate::pretokenize::{PretokenizeError, Pretokenizer, Specials};

/// How far before a target the search for a cut goes before it gives up (the boundary is then
/// dropped and the shard before it grows): a stretch this long with no cut is one pretoken of
/// 64 MiB, or a custom pattern and no special token in it.
pub const MAX_BACK: u64 = 64 << 20;

/// Finds cuts in files for one set of special tokens and one pattern.
pub struct CutFinder {
    /// Every occurrence of every special token, overlapping ones too.
    occurrences: Option<AhoCorasick>,
    max_len: usize,
    pretok: Pretokenizer,
    /// No special tokens: `safe_cut` on it gives the pretokenizer's own cuts.
    none: Specials,
}

impl CutFinder {
    /// A finder for these special tokens (none empty) and this pretokenizer.
    pub fn new<S: AsRef<str>>(
        special_tokens: &[S],
        pretok: Pretokenizer,
    ) -> Result<Self, PretokenizeError> {
        Specials::new(special_tokens)?; // the same checks as the reader's
        let max_len = special_tokens.iter().map(|t| t.as_ref().len()).max();
        let occurrences = match max_len {
            None => None,
            Some(_) => Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(special_tokens.iter().map(|t| t.as_ref()))
                    .map_err(|e| PretokenizeError::BadPattern {
                        pattern: "special tokens".into(),
                        message: e.to_string(),
                    })?,
            ),
        };
        let none = Specials::new::<&str>(&[])?;
        Ok(CutFinder {
            occurrences,
            max_len: max_len.unwrap_or(0),
            pretok,
            none,
        })
    }

    /// Whether any cut can exist: not for a custom pattern (the pretokenizer allows none) without
    /// special tokens.
    pub fn can_cut(&self) -> bool {
        self.occurrences.is_some() || !matches!(self.pretok, Pretokenizer::Regex(_))
    }

    /// For each target offset (ascending), the last cut at or before it and after the previous
    /// cut found (or the file's start), at most `max_back` bytes back; None where there is none.
    /// Depends only on the file's bytes and the targets, never on how it is read.
    pub fn find_cuts(
        &self,
        path: &Path,
        targets: &[u64],
        max_back: u64,
    ) -> std::io::Result<Vec<Option<u64>>> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut floor = 0;
        let mut out = Vec::with_capacity(targets.len());
        for &target in targets {
            let cut = if target <= floor || target >= len {
                None
            } else {
                self.find_cut(
                    &mut file,
                    len,
                    target,
                    floor.max(target.saturating_sub(max_back)),
                )?
            };
            floor = cut.unwrap_or(floor);
            out.push(cut);
        }
        Ok(out)
    }

    /// The last cut in `floor + 1 ..= target`, read in windows growing back from `target`.
    fn find_cut(
        &self,
        file: &mut File,
        len: u64,
        target: u64,
        floor: u64,
    ) -> std::io::Result<Option<u64>> {
        let (before, after) = self.context();
        let mut span: u64 = 64 << 10;
        loop {
            let lo = floor.max(target.saturating_sub(span));
            let start = lo.saturating_sub(before as u64 + 4);
            let end = len.min(target + after as u64 + 4);
            let mut window = vec![0u8; (end - start) as usize];
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(&mut window)?;
            let edges = (start == 0, end == len);
            let found = self.last_cut(
                &window,
                (lo - start) as usize,
                (target - start) as usize,
                edges,
            );
            if let Some(p) = found {
                return Ok(Some(start + p as u64));
            }
            if lo == floor {
                return Ok(None);
            }
            span *= 4;
        }
    }

    /// Bytes of valid UTF-8 a cut needs before and after it: an occurrence of a special token
    /// that straddles it, or one that straddles the start of a token ending at it, lies there.
    fn context(&self) -> (usize, usize) {
        (2 * self.max_len + 4, self.max_len + 4)
    }

    /// The last cut `p` with `lo < p <= hi` in `w` (a window of a file that holds the context of
    /// every such `p`; `edges`: it starts at the file's start, it ends at the file's end).
    ///
    /// A cut is taken only where training's reader may cut, so that both sides give the
    /// pretokens of the whole: (1) the bytes around it are valid UTF-8 (so decoding, with or
    /// without replacement, gives them as they are, and a cut before a byte that is not a
    /// continuation byte never splits a character or an invalid sequence); (2) no occurrence of
    /// a special token straddles it, so the special tokens matched (leftmost, longest) on each
    /// side are those of the whole (no match can straddle it, and every match of the whole lies
    /// wholly on one side, where the matcher finds it first as well); and (3) either the
    /// pretokenizer may cut there (`safe_cut`'s rule, on the characters either side), or it ends
    /// an occurrence `s..p` that no occurrence straddles at `s`, which is then a match of the
    /// whole (from `s` the matcher finds it, and no longer one: it would straddle `p`).
    fn last_cut(&self, w: &[u8], lo: usize, hi: usize, edges: (bool, bool)) -> Option<usize> {
        let mut inside = vec![false; w.len() + 1];
        let mut ends = Vec::new();
        if let Some(ac) = &self.occurrences {
            for m in ac.find_overlapping_iter(w) {
                inside[m.start() + 1..m.end()]
                    .iter_mut()
                    .for_each(|x| *x = true);
                ends.push((m.start(), m.end()));
            }
        }
        let (before, after) = self.context();
        let mut best = None;
        let mut run_start = 0;
        for chunk in w.utf8_chunks() {
            let run = chunk.valid();
            let (rs, re) = (run_start, run_start + run.len());
            run_start = re + chunk.invalid().len();
            let ok = |p: usize| {
                !inside[p]
                    && (p >= rs + before || (rs == 0 && edges.0))
                    && (p + after <= re || (re == w.len() && edges.1))
                    && (p == re || w[p] & 0xc0 != 0x80)
            };
            // the pretokenizer's cuts, backwards from `hi`
            let mut k = (hi + 1).saturating_sub(rs).min(run.len());
            while !run.is_char_boundary(k) {
                k += 1;
            }
            while let Some(p) = self.none.safe_cut(&run[..k], &self.pretok) {
                if rs + p <= lo {
                    break;
                }
                if ok(rs + p) {
                    best = best.max(Some(rs + p));
                    break;
                }
                k = p;
            }
            let token_ends = ends
                .iter()
                .filter(|&&(s, e)| rs <= s && e <= re && lo < e && e <= hi && !inside[s] && ok(e));
            best = best.max(token_ends.map(|&(_, e)| e).max());
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuts(specials: &[&str], text: &[u8]) -> Vec<usize> {
        let f = CutFinder::new(specials, Pretokenizer::Gpt2).unwrap();
        (1..text.len())
            .filter(|&p| f.last_cut(text, p - 1, p, (true, true)) == Some(p))
            .collect()
    }

    #[test]
    fn cuts_follow_the_pretokenizer_and_the_special_tokens() {
        assert_eq!(cuts(&[], b"ab cd"), [2]);
        assert_eq!(cuts(&[], b"ab  cd"), [2]);
        // inside `<|e|>` never; after it, as the reader does
        let text = b"x<|e|>y z";
        assert_eq!(cuts(&["<|e|>"], text), [1, 6, 7]);
        // `<a>` is not matched (`x<` is, at 0): no cut at its end, nor inside either occurrence
        assert_eq!(cuts(&["x<", "<a>"], b"x<a>.b"), [5]);
        // invalid UTF-8 near a cut: none
        assert_eq!(cuts(&[], b"ab\xff cd"), Vec::<usize>::new());
    }
}
