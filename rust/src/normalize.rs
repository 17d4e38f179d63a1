//! Unicode normalization of text before it is pretokenized (NFC, as Qwen's tokenizers and HF's
//! `NFC` normalizer apply it; NFKC), and where text may be cut without changing it. The tables
//! are those of the version the rest of the core pins (unicode-normalization =0.1.24: Unicode
//! 16.0.0, as regex-syntax's classes); HF tokenizers' normalizers have Unicode 9.0's and
//! Python's `unicodedata` its own release's, so text with characters assigned after those can
//! normalize differently (docs/unicode.md). Special tokens are matched before, on the text as
//! given, as HF matches added tokens that are not `normalized`.

use std::borrow::Cow;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfc_quick, is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// A normalization form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalization {
    Nfc,
    Nfkc,
}

impl Normalization {
    /// The form of a name ("NFC", "NFKC"), or None.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "NFC" => Some(Self::Nfc),
            "NFKC" => Some(Self::Nfkc),
            _ => None,
        }
    }

    /// `text` in this form; borrowed when it is already (ASCII is checked at SIMD speed, other
    /// text by the quick check, one table lookup a character: most text needs no copy).
    pub fn apply<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if text.is_ascii() || self.quick(text.chars()) == IsNormalized::Yes {
            return Cow::Borrowed(text);
        }
        Cow::Owned(match self {
            Self::Nfc => text.nfc().collect(),
            Self::Nfkc => text.nfkc().collect(),
        })
    }

    fn quick(&self, chars: impl Iterator<Item = char>) -> IsNormalized {
        match self {
            Self::Nfc => is_nfc_quick(chars),
            Self::Nfkc => is_nfkc_quick(chars),
        }
    }

    /// Whether text may be cut before byte `p` (a character boundary) without changing its
    /// normalization: the character there starts a new combining sequence that nothing before
    /// it composes with (combining class 0, quick check Yes: neither reordered with what
    /// precedes, nor composed into it, nor decomposed).
    pub fn can_cut_before(&self, b: &[u8], p: usize) -> bool {
        if b[p] < 0x80 {
            return true;
        }
        let len = match b[p] {
            0xf0.. => 4,
            0xe0.. => 3,
            _ => 2,
        };
        let c = b.get(p..p + len).and_then(|c| std::str::from_utf8(c).ok());
        c.and_then(|s| s.chars().next()).is_some_and(|c| {
            canonical_combining_class(c) == 0 && self.quick(std::iter::once(c)) == IsNormalized::Yes
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfc_composes_and_keeps_normalized_text() {
        let nfc = Normalization::Nfc;
        assert!(matches!(nfc.apply("plain ascii"), Cow::Borrowed(_)));
        assert!(matches!(nfc.apply("déjà vu, 你好"), Cow::Borrowed(_)));
        assert_eq!(nfc.apply("e\u{301}"), "é");
        assert_eq!(nfc.apply("\u{212b}"), "Å"); // the Angstrom sign decomposes to A + ring
        assert_eq!(Normalization::Nfkc.apply("ﬁ①"), "fi1");
    }

    /// Every cut `can_cut_before` allows keeps the normalization: both sides give that of the
    /// whole, on texts of characters that compose, reorder and decompose.
    #[test]
    fn allowed_cuts_keep_the_normalization() {
        let pieces = [
            "a", "e", "\u{301}", "\u{323}", "\u{302}", "\u{1100}", "\u{1161}", "\u{11a8}", " ",
            "\u{212b}", "ﬁ", "한", "\u{0928}", "\u{093c}", "\u{0bc6}", "\u{0bbe}", "é", "\u{308}",
        ];
        let mut next = crate::testing::numbers(5);
        for form in [Normalization::Nfc, Normalization::Nfkc] {
            for _ in 0..3000 {
                let n = 1 + next(12) as usize;
                let text: String = (0..n)
                    .map(|_| pieces[next(pieces.len() as u64) as usize])
                    .collect();
                let whole = form.apply(&text);
                let b = text.as_bytes();
                for p in 1..b.len() {
                    if text.is_char_boundary(p) && form.can_cut_before(b, p) {
                        let cut = [form.apply(&text[..p]), form.apply(&text[p..])].concat();
                        assert_eq!(cut, whole, "{form:?} {text:?} cut at {p}");
                    }
                }
            }
        }
    }
}
