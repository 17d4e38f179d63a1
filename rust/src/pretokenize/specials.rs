//! Special tokens in text (`Specials`: the leftmost occurrence, the longest where several start
//! there, with HF's options of added tokens: `lstrip`, `rstrip`, `single_word`), and where a
//! stream of text may be cut without changing its pieces or pretokens (`Specials::safe_cut`).
//! Which cuts a pattern allows is `Pretokenizer::can_cut_before`'s.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};

use super::{PretokenizeError, Pretokenizer};

/// HF's options of an added token (`tokenizer.json`'s `added_tokens`); all off for bytepair's
/// own special tokens. `normalized` tokens are matched in the normalized text between the
/// others (HF's second pass, the encoder's); the rest change how a match is taken, as HF's
/// `AddedVocabulary::find_matches` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Added {
    /// The match takes the whitespace before it.
    pub lstrip: bool,
    /// The match takes the whitespace after it.
    pub rstrip: bool,
    /// A match next to a word character (`\w`) is no match.
    pub single_word: bool,
    /// Matched in normalized text (see above).
    pub normalized: bool,
}

/// Finds special tokens in text: the leftmost occurrence, the longest where several start there.
pub struct Specials {
    matcher: Option<AhoCorasick>,
    max_len: usize,
    /// The first bytes the tokens start with, if there are at most three (usually one: `<`).
    firsts: Vec<u8>,
    /// Each token's options, when one has any (else empty: the plain path).
    options: Vec<Added>,
    /// Every occurrence of every token (overlapping ones too), for cuts near tokens whose match
    /// depends on their neighbours (`touches`); built when a token has options or `checked`.
    every: Option<AhoCorasick>,
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
        Self::with_options(tokens, &[], false)
    }

    /// A matcher for these tokens with their options (`options` empty, or one per token);
    /// `checked` also builds the matcher of every occurrence that `touches` needs.
    pub fn with_options<S: AsRef<str>>(
        tokens: &[S],
        options: &[Added],
        checked: bool,
    ) -> Result<Self, PretokenizeError> {
        if tokens.iter().any(|t| t.as_ref().is_empty()) {
            return Err(PretokenizeError::EmptySpecial);
        }
        let max_len = tokens.iter().map(|t| t.as_ref().len()).max().unwrap_or(0);
        let build = |kind: MatchKind| -> Result<Option<AhoCorasick>, PretokenizeError> {
            if tokens.is_empty() {
                return Ok(None);
            }
            let built = AhoCorasick::builder()
                .match_kind(kind)
                .build(tokens.iter().map(|t| t.as_ref()));
            Ok(Some(built.map_err(|e| PretokenizeError::BadPattern {
                pattern: "special tokens".into(),
                message: e.to_string(),
            })?))
        };
        let matcher = build(MatchKind::LeftmostLongest)?;
        let strips = |o: &Added| o.lstrip || o.rstrip || o.single_word;
        let options = match options.iter().any(strips) {
            true => options.to_vec(),
            false => Vec::new(),
        };
        let every = match checked || !options.is_empty() {
            true => build(MatchKind::Standard)?,
            false => None,
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
            options,
            every,
        })
    }

    /// The length of the longest token, in bytes.
    pub fn max_len(&self) -> usize {
        self.max_len
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
        if self.options.is_empty() {
            for m in ac.find_iter(text) {
                if m.start() > last {
                    f(Piece::Text(&text[last..m.start()]));
                }
                f(Piece::Special(m.pattern().as_usize()));
                last = m.end();
            }
        } else {
            for m in ac.find_iter(text) {
                let i = m.pattern().as_usize();
                let Some((start, end)) = self.taken(text, i, m.start(), m.end(), last) else {
                    continue;
                };
                if start > last {
                    f(Piece::Text(&text[last..start]));
                }
                f(Piece::Special(i));
                last = end;
            }
        }
        if last < text.len() {
            f(Piece::Text(&text[last..]));
        }
    }

    /// The span a match of token `i` at `start..end` takes, by its options, as HF takes it:
    /// None if `single_word` rules it out; whitespace before it (`lstrip`, not before `last`,
    /// the end of the previous match) and after it (`rstrip`) taken with it.
    fn taken(
        &self,
        text: &str,
        i: usize,
        mut start: usize,
        mut end: usize,
        last: usize,
    ) -> Option<(usize, usize)> {
        let o = self.options[i];
        if o.single_word {
            let before = text[..start].chars().next_back().is_some_and(is_word);
            let after = text[end..].chars().next().is_some_and(is_word);
            if before || after {
                return None;
            }
        }
        if o.lstrip {
            let kept = text[..start].trim_end_matches(char::is_whitespace).len();
            start = kept.max(last);
        }
        if o.rstrip {
            end = text.len() - text[end..].trim_start_matches(char::is_whitespace).len();
        }
        Some((start, end))
    }

    /// Whether an occurrence of a token (overlapping ones too) covers or, where tokens have
    /// options, touches byte `p` of `text`; or, with options, whitespace is next to `p`. A cut
    /// there could change which tokens match. Needs `checked` (else says true).
    pub fn touches(&self, text: &str, p: usize) -> bool {
        let Some(every) = &self.every else {
            return self.matcher.is_some();
        };
        let near = !self.options.is_empty();
        if near {
            let ws = |c: Option<char>| c.is_some_and(char::is_whitespace);
            if ws(text[..p].chars().next_back()) || ws(text[p..].chars().next()) {
                return true;
            }
        }
        let from = floor_char(text, p.saturating_sub(self.max_len));
        let to = ceil_char(text, p.saturating_add(self.max_len));
        every.find_overlapping_iter(&text[from..to]).any(|m| {
            let (s, e) = (from + m.start(), from + m.end());
            (s < p && p < e) || (near && (s == p || e == p))
        })
    }

    /// The last byte offset `p` (0 < p < text.len()) where `text`, a prefix of a longer stream
    /// that starts at a safe cut, can be cut: the end of a special token whose match cannot change
    /// with more text, or a cut the pretokenizer allows that no special token straddles.
    pub fn safe_cut(&self, text: &str, pretok: &Pretokenizer) -> Option<usize> {
        self.safe_cut_where(text, |b, p| pretok.can_cut_before(b, p))
    }

    /// `safe_cut`, where `allows(bytes, p)` says which cuts the text between special tokens
    /// allows (the pretokenizer's, or those of a text normalized first).
    pub fn safe_cut_where(
        &self,
        text: &str,
        allows: impl Fn(&[u8], usize) -> bool,
    ) -> Option<usize> {
        let b = text.as_bytes();
        // Matches starting at or before `settled` are final whatever follows (no token is longer).
        let settled = b.len().checked_sub(self.max_len.max(1))?;
        let mut special_end = 0;
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if let Some(ac) = &self.matcher {
            let mut last = 0;
            for m in ac.find_iter(text) {
                if m.start() > settled {
                    break;
                }
                let (mut start, mut end) = (m.start(), m.end());
                if !self.options.is_empty() {
                    // a match's options look at its neighbours: no cut next to any match (a
                    // ruled-out one too), nor in whitespace (`touches`); ends are not cuts
                    let i = m.pattern().as_usize();
                    (start, end) = self
                        .taken(text, i, start, end, last)
                        .unwrap_or((start, end));
                    spans.push((start, end + 1));
                    spans.push((start.saturating_sub(1), end));
                    last = end;
                    continue;
                }
                if end < b.len() {
                    special_end = end;
                }
                spans.push((start, end));
            }
        }
        let mut p = settled;
        while p > special_end {
            // only character boundaries: continuation bytes are 0b10xxxxxx
            if b[p] & 0xc0 != 0x80 && allows(b, p) {
                let inside = spans.iter().rev().any(|&(s, e)| s < p && p < e);
                let touching = self.every.is_some() && self.touches(text, p);
                if !inside && !touching {
                    return Some(p);
                }
            }
            p -= 1;
        }
        (special_end > 0).then_some(special_end)
    }
}

/// `\w` as HF's `single_word` reads it (the regex crate's Unicode word characters, the same
/// classes through regex-syntax).
fn is_word(c: char) -> bool {
    static WORD: OnceLock<Vec<(char, char)>> = OnceLock::new();
    let ranges = WORD.get_or_init(|| {
        use regex_syntax::hir::{Class, HirKind};
        match regex_syntax::parse(r"\w").map(|h| h.into_kind()) {
            Ok(HirKind::Class(Class::Unicode(c))) => {
                c.ranges().iter().map(|r| (r.start(), r.end())).collect()
            }
            _ => Vec::new(), // cannot happen: `\w` is a Unicode class
        }
    });
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn floor_char(text: &str, mut p: usize) -> usize {
    while !text.is_char_boundary(p) {
        p -= 1;
    }
    p
}

fn ceil_char(text: &str, p: usize) -> usize {
    let mut p = p.min(text.len());
    while !text.is_char_boundary(p) {
        p += 1;
    }
    p
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

    fn pieces_of(sp: &Specials, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        sp.for_each_piece(text, |p| {
            out.push(match p {
                Piece::Text(t) => t.to_owned(),
                Piece::Special(i) => format!("#{i}"),
            })
        });
        out
    }

    /// HF's options: `lstrip`/`rstrip` take the whitespace around a match, `single_word` drops
    /// a match next to a word character.
    #[test]
    fn added_options_take_whitespace_and_words_as_hf() {
        let strip = Added {
            lstrip: true,
            rstrip: true,
            ..Added::default()
        };
        let word = Added {
            single_word: true,
            ..Added::default()
        };
        let plain = Added::default();
        let sp = Specials::with_options(
            &["my", "name", "ony", "[a]"],
            &[strip, plain, word, plain],
            false,
        )
        .unwrap();
        assert_eq!(
            pieces_of(&sp, "[a] my name is anthony [a]"),
            ["#3", "#0", "#1", " is anthony ", "#3"]
        );
        // a single word at either end, between spaces, or next to punctuation
        assert_eq!(
            pieces_of(&sp, "ony x ony, ony_ éony"),
            ["#2", " x ", "#2", ", ony_ éony"]
        );
        // lstrip stops at the previous match; rstrip takes every kind of whitespace
        assert_eq!(pieces_of(&sp, "[a]  my\t\u{3000}\nx"), ["#3", "#0", "x"]);
    }

    /// Cuts next to tokens with options, or in whitespace before one, are refused: each
    /// `safe_cut` keeps the pieces of the whole.
    #[test]
    fn safe_cuts_keep_the_pieces_of_tokens_with_options() {
        let strip = Added {
            lstrip: true,
            rstrip: true,
            single_word: true,
            normalized: false,
        };
        let sp = Specials::with_options(&["<m>", "ab"], &[strip, strip], false).unwrap();
        let g = Pretokenizer::Gpt2;
        let text = "x  <m>  y ab, abc <m>z  ab  q. <m> ab\n\n<m>";
        let whole = pieces_of(&sp, text);
        for end in 1..=text.len() {
            let Some(p) = sp.safe_cut(&text[..end], &g) else {
                continue;
            };
            let mut parts = pieces_of(&sp, &text[..p]);
            parts.extend(pieces_of(&sp, &text[p..]));
            let join = |v: &[String]| v.concat();
            assert_eq!(join(&parts), join(&whole), "cut at {p}");
            let specials = |v: &[String]| v.iter().filter(|s| s.starts_with('#')).count();
            assert_eq!(specials(&parts), specials(&whole), "cut at {p}");
        }
    }
}
