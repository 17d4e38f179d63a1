//! Special tokens in text (`Specials`: the leftmost occurrence, the longest where several start
//! there), and where a stream of text may be cut without changing its pieces or pretokens
//! (`Specials::safe_cut`). Which cuts a pattern allows is `Pretokenizer::can_cut_before`'s.

use aho_corasick::{AhoCorasick, MatchKind};

use super::{PretokenizeError, Pretokenizer};

/// Finds special tokens in text: the leftmost occurrence, the longest where several start there.
pub struct Specials {
    matcher: Option<AhoCorasick>,
    max_len: usize,
    /// The first bytes the tokens start with, if there are at most three (usually one: `<`).
    firsts: Vec<u8>,
}

/// A piece of text between special tokens, or a special token (by its index in the list).
pub enum Piece<'t> {
    /// Ordinary text, to be pretokenized.
    Text(&'t str),
    /// An occurrence of the special token with this index.
    Special(usize),
}

impl Specials {
    /// A matcher for these tokens (none may be empty).
    pub fn new<S: AsRef<str>>(tokens: &[S]) -> Result<Self, PretokenizeError> {
        if tokens.iter().any(|t| t.as_ref().is_empty()) {
            return Err(PretokenizeError::EmptySpecial);
        }
        let max_len = tokens.iter().map(|t| t.as_ref().len()).max().unwrap_or(0);
        let matcher = if tokens.is_empty() {
            None
        } else {
            let built = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(tokens.iter().map(|t| t.as_ref()));
            Some(built.map_err(|e| PretokenizeError::BadPattern {
                pattern: "special tokens".into(),
                message: e.to_string(),
            })?)
        };
        let mut firsts: Vec<u8> = tokens.iter().map(|t| t.as_ref().as_bytes()[0]).collect();
        firsts.sort_unstable();
        firsts.dedup();
        if firsts.len() > 3 {
            firsts.clear();
        }
        Ok(Self {
            matcher,
            max_len,
            firsts,
        })
    }

    /// False if no token occurs in `text`: none of their first bytes is there. Why: running the
    /// automaton over a short text cost ~25 ns, a twentieth of a 100-byte `encode`, and most
    /// texts hold no special token; memchr looks at 16+ bytes per step.
    #[inline]
    fn may_occur(&self, text: &str) -> bool {
        let b = text.as_bytes();
        match self.firsts[..] {
            [x] => memchr::memchr(x, b).is_some(),
            [x, y] => memchr::memchr2(x, y, b).is_some(),
            [x, y, z] => memchr::memchr3(x, y, z, b).is_some(),
            _ => true,
        }
    }

    /// Calls `f` on the pieces of `text` in order; empty text pieces are skipped.
    #[inline]
    pub fn for_each_piece<'t>(&self, text: &'t str, mut f: impl FnMut(Piece<'t>)) {
        let Some(ac) = self.matcher.as_ref().filter(|_| self.may_occur(text)) else {
            if !text.is_empty() {
                f(Piece::Text(text));
            }
            return;
        };
        let mut last = 0;
        for m in ac.find_iter(text) {
            if m.start() > last {
                f(Piece::Text(&text[last..m.start()]));
            }
            f(Piece::Special(m.pattern().as_usize()));
            last = m.end();
        }
        if last < text.len() {
            f(Piece::Text(&text[last..]));
        }
    }

    /// The last byte offset `p` (0 < p < text.len()) where `text`, a prefix of a longer stream
    /// that starts at a safe cut, can be cut: the end of a special token whose match cannot change
    /// with more text, or a cut the pretokenizer allows that no special token straddles.
    pub fn safe_cut(&self, text: &str, pretok: &Pretokenizer) -> Option<usize> {
        let b = text.as_bytes();
        // Matches starting at or before `settled` are final whatever follows (no token is longer).
        let settled = b.len().checked_sub(self.max_len.max(1))?;
        let mut special_end = 0;
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if let Some(ac) = &self.matcher {
            for m in ac.find_iter(text) {
                if m.start() > settled {
                    break;
                }
                if m.end() < b.len() {
                    special_end = m.end();
                }
                spans.push((m.start(), m.end()));
            }
        }
        let mut p = settled;
        while p > special_end {
            // only character boundaries: continuation bytes are 0b10xxxxxx
            if b[p] & 0xc0 != 0x80 && pretok.can_cut_before(b, p) {
                let inside = spans.iter().rev().any(|&(s, e)| s < p && p < e);
                if !inside {
                    return Some(p);
                }
            }
            p -= 1;
        }
        (special_end > 0).then_some(special_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::gpt2::tests::gpt2;

    #[test]
    fn specials_prefer_the_longest() {
        let sp = Specials::new(&["<a>", "<a><b>"]).unwrap();
        let mut pieces = Vec::new();
        sp.for_each_piece("x<a><b>y<a>", |p| {
            pieces.push(match p {
                Piece::Text(t) => t.to_owned(),
                Piece::Special(i) => format!("#{i}"),
            })
        });
        assert_eq!(pieces, ["x", "#1", "y", "#0"]);
    }

    #[test]
    fn specials_of_many_first_bytes_are_all_found() {
        // one to five first bytes: memchr's pre-check up to three, the automaton alone past
        let all = ["<a>", "[b]", "{c}", "é!", "\n\n"];
        for n in 1..=all.len() {
            let sp = Specials::new(&all[..n]).unwrap();
            for (i, token) in all.iter().enumerate() {
                let text = format!("x {token} y");
                let mut found = Vec::new();
                sp.for_each_piece(&text, |p| {
                    if let Piece::Special(k) = p {
                        found.push(k);
                    }
                });
                let want: &[usize] = if i < n { &[i] } else { &[] };
                assert_eq!(found, want, "{n} tokens, text {text:?}");
            }
        }
    }

    #[test]
    fn safe_cut_avoids_special_tokens_and_space_runs() {
        let none = Specials::new::<&str>(&[]).unwrap();
        let g = Pretokenizer::Gpt2;
        assert_eq!(none.safe_cut("ab cd  ef", &g), Some(5));
        assert_eq!(none.safe_cut("abcdef", &g), None);
        let sp = Specials::new(&["x y"]).unwrap();
        assert_eq!(sp.safe_cut("ab x y cd efgh", &g), Some(9));
        assert_eq!(sp.safe_cut("abx y", &g), None);
    }

    #[test]
    fn safe_cut_in_text_without_ascii_spaces() {
        let none = Specials::new::<&str>(&[]).unwrap();
        let g = Pretokenizer::Gpt2;
        // letter → punctuation, in Chinese
        assert_eq!(none.safe_cut("我们。你好", &g), Some("我们。".len()));
        // a contraction is never split; other class changes are cuts
        assert_eq!(none.safe_cut("ab'sx", &g), Some(2));
        assert_eq!(none.safe_cut("{\"a\":1}", &g), Some(6));
        // whitespace after a non-space, but not inside a whitespace run
        assert_eq!(none.safe_cut("\u{3000}\u{3000}\u{3000}x", &g), None);
        assert_eq!(none.safe_cut("中\u{3000}\u{3000}x", &g), Some("中".len()));
    }

    /// Every cut `safe_cut` may choose gives, on both sides, the pretokens of the whole.
    #[test]
    fn every_safe_cut_keeps_the_pretokens() {
        let none = Specials::new::<&str>(&[]).unwrap();
        let texts = [
            "it's 12 cats' 'lltoys\r\n\n  x?!  ",
            "我们。你好，世界！\n\n第2章 test",
            "{\"a\":[1,2.5e3,\"x y\"],\"b's\":null}",
            "สวัสดีครับ ภาษาไทย١٢٣ مرحبا\u{3000}\u{3000}ok",
            "'s'S'll've're'd'm't 'x\t\u{a0}\u{2028}a",
        ];
        for text in texts {
            let whole = gpt2(text);
            for end in 1..=text.len() {
                if !text.is_char_boundary(end) {
                    continue;
                }
                let Some(p) = none.safe_cut(&text[..end], &Pretokenizer::Gpt2) else {
                    continue;
                };
                let mut parts = gpt2(&text[..p]);
                parts.extend(gpt2(&text[p..]));
                assert_eq!(parts, whole, "cut at {p} of {text:?}");
            }
        }
    }
}
