//! The GPT-4 family's fast path (cl100k and o200k), as `ascii.rs` is GPT-2's: the pretoken
//! starts of a 64-byte block are found with bit masks (one bit per byte, or per character when
//! the block holds characters beyond ASCII: `Masks::add_high`), and what the masks cannot decide
//! goes to the scalar scanners (`gpt4.rs`, `o200k.rs`), which stay the definition.
//!
//! Where pretokens start in ASCII text, from a start at byte 0. Classes: letter, digit, white
//! (`\t \n \v \f \r` and space), other (the rest, `'` and `/` included); horizontal white is
//! white but `\r \n`. Both patterns take a letter word with an optional first character that is
//! neither letter, digit, `\r` nor `\n`; digits in runs of 1-3; an optional space, a run of other
//! and the `\r`/`\n` after it (o200k: `\r \n /`); then whitespace, split as `\s*[\r\n]`,
//! `\s+(?!\S)`, `\s`. So pretokens start:
//! - at a run of letters, or at the character before it when that is horizontal white (the
//!   last of its run), or other that starts its run, follows no space and is not absorbed;
//!   o200k also splits words where a lower-case letter is followed by an upper-case one
//!   (`[A-Z]*[a-z]+|[A-Z]+[a-z]*`);
//! - at each run of digits, and every 3 digits into it;
//! - at a run of other, or at the space before it;
//! - at a run of white, except where it continues a run of other (absorbed, see above), after
//!   the last `\r`/`\n` of a white run when horizontal white follows up to a non-white character,
//!   and at the last character of a run of 2 or more horizontal white characters;
//! - after the absorbed characters;
//! - contractions, `'` and `s t m d ll ve re` in any case: cl100k makes one a pretoken where
//!   `'` starts one; o200k appends one to the letters before it.
//!
//! Whitespace at the end of the text, and the lookahead over horizontal white, need the end of a
//! run: a block decides no start inside a white run that reaches its end or its first non-ASCII
//! byte (the scalar scanner takes that pretoken). Otherwise a start at `k` depends on the bytes
//! before it in the block and up to `k + 3`, so the starts of a block of ASCII bytes are sure up
//! to byte 60.
//!
//! Performance notes: with this path, counting and encoding with cl100k or o200k take about a
//! tenth more instructions than with GPT-2's pattern (without it, cl100k counted at 0.8× GPT-2's
//! speed). Before blocks took characters beyond ASCII, about half of pretokenization's
//! instructions on text with some of them were in the scalar scanners. Measured figures:
//! docs/performance.md.

use super::block::{emit_starts, past_high, BLOCK, SURE};
#[cfg(target_arch = "x86_64")]
use super::gpt4_masks::{chars, Masks};
use crate::pretokenize::gpt4::cl100k_token_end;
use crate::pretokenize::o200k::o200k_token_end;

/// Calls `f(start, end)` on each pretoken of `b` under cl100k (`O200K` false) or o200k.
#[inline(always)]
pub fn for_each_span<const O200K: bool>(b: &[u8], mut f: impl FnMut(usize, usize)) {
    let (mut i, mut ascii_from) = (0, 0);
    while i < b.len() {
        if i >= ascii_from && scan_block::<O200K>(b, &mut i, &mut ascii_from, &mut f) {
            continue;
        }
        let end = if O200K {
            o200k_token_end(b, i)
        } else {
            cl100k_token_end(b, i)
        };
        f(i, end);
        i = end;
    }
}

#[cfg(target_arch = "x86_64")]
impl Masks {
    /// Pretoken starts in bytes 0..=`sure` (see the module doc), contractions not yet applied.
    #[inline(always)]
    fn starts<const O200K: bool>(&self) -> u64 {
        let prev = |x: u64| x << 1;
        let letter = self.lower | self.upper;
        let other = !(letter | self.digit | self.white);
        let horizontal = self.white & !self.newline;
        // After a run of other: `[\r\n]*`, o200k `[\r\n/]*`, from each newline that follows
        // other (a seed). `absorbing + seed` carries through each seeded run; a later seed in
        // the same run (o200k: after a `/`) keeps its own bit, hence `| seed`.
        let absorbing = if O200K {
            self.newline | self.slash
        } else {
            self.newline
        };
        let seed = self.newline & prev(other);
        let absorbed = (absorbing & !absorbing.wrapping_add(seed)) | seed;
        let word = letter & !prev(letter);
        // the first of a run of other (absorbed characters are not in one), after no space
        let punct = other & !absorbed;
        let punct_start = punct & !prev(punct) & !prev(self.space);
        let first = horizontal | punct_start;
        let prefix = (word >> 1) & first;
        let mut starts = 1 | prefix | (word & !prev(prefix));
        if O200K {
            starts |= self.upper & prev(self.lower);
        }
        let digits = self.digit & !prev(self.digit);
        let third = self.digit & prev(self.digit) & prev(prev(self.digit));
        let mut group = digits;
        while group != 0 {
            starts |= group;
            group = (group << 3) & third;
        }
        starts |= punct_start;
        starts |= self.white & !prev(self.white) & !absorbed;
        starts |= prev(absorbed) & !absorbed;
        starts |= horizontal & prev(horizontal) & (!self.white >> 1);
        // after the last newline of a white run, when horizontal white follows to a non-white
        let mut after_newline = horizontal & prev(self.newline);
        while after_newline != 0 {
            let k = after_newline.trailing_zeros();
            after_newline &= after_newline - 1;
            let end = k + (!horizontal >> k).trailing_zeros();
            if end < 64 && self.white >> end & 1 == 0 {
                starts |= 1 << k;
            }
        }
        starts
    }
}

/// Calls `f` on the pretokens of `b[*i..]` that the block at `*i` decides, advancing `*i` to
/// the end of the last; false (and `*i` unchanged) when it decides none: the caller then scans
/// one pretoken the slow way, or, when non-ASCII bytes were the reason, every pretoken that
/// starts before `*ascii_from`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn scan_block<const O200K: bool>(
    b: &[u8],
    i: &mut usize,
    ascii_from: &mut usize,
    f: impl FnMut(usize, usize),
) -> bool {
    let base = *i;
    let Some(block) = b.get(base..base + BLOCK) else {
        return false;
    };
    let block: &[u8; BLOCK] = block.try_into().unwrap_or(&[0; BLOCK]);
    let mut masks = Masks::of(block);
    // the first byte of each character, when the masks hold characters beyond ASCII
    let mut lead = None;
    if masks.high != 0 {
        lead = masks.add_high::<O200K>(block, b, base);
        let Some(lead) = lead else {
            // the caller scans one character at a time up to the block's last byte of 0x80 and
            // above, rather than try this block again after every pretoken
            *ascii_from = past_high(base, masks.high);
            return false;
        };
        // every character is classed: the "high" ones are past the block's last
        masks.high = u64::MAX.checked_shl(lead.count_ones()).unwrap_or(0);
    }
    // characters up to `limit` are classed; no start is decided inside the white run that
    // reaches it
    let limit = masks.high.trailing_zeros() as usize;
    let ascii = u64::MAX
        .checked_shr(limit as u32)
        .map_or(u64::MAX, |high| !(high << limit));
    let white_from = BLOCK - (!masks.white & ascii).leading_zeros() as usize;
    let sure = SURE.min(limit.saturating_sub(4)).min(white_from);
    if sure == 0 {
        if limit < 4 {
            // non-ASCII here: the caller scans one character at a time up to the block's last
            // byte of 0x80 and above, rather than try this block again after every pretoken
            *ascii_from = past_high(base, masks.high);
        }
        return false;
    }
    let mut starts = masks.starts::<O200K>();
    // contractions (rare: one at a time). cl100k: `'` at a start and the letters after it are
    // one pretoken; o200k: `'` after a letter joins that letter's word, unless it ends one.
    // Their letters are ASCII (U+017F is left to the scalar scanner), so k counts characters
    // and bytes alike from the `'`.
    let within = u64::MAX >> (63 - sure);
    let letter = masks.lower | masks.upper;
    let at = if O200K { letter << 1 } else { starts };
    let (mut quotes, mut joined) = (masks.apostrophe & at & within, usize::MAX);
    while quotes != 0 {
        let k = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        // the `'`'s byte, and the two after it (the block holds them: see `sure`)
        let q = lead.map_or(k, |lead| chars::byte_of(lead, k));
        let byte = |j: usize| block.get(q + j).map_or(0, |&x| x | 0x20);
        let len = match (byte(1), byte(2)) {
            _ if O200K && k == joined => continue,
            (b's' | b't' | b'm' | b'd', _) => 2,
            (b'l', b'l') | (b'v', b'e') | (b'r', b'e') => 3,
            _ => continue,
        };
        let from = if O200K { k } else { k + 1 };
        starts = starts & !((1 << (k + len)) - (1 << from)) | 1 << (k + len);
        joined = k + len;
    }
    let starts = starts & within;
    let starts = lead.map_or(starts, |lead| chars::spread(starts, lead));
    emit_starts(starts, i, f)
}

/// Other targets scan one character at a time.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn scan_block<const O200K: bool>(
    _: &[u8],
    _: &mut usize,
    _: &mut usize,
    _: impl FnMut(usize, usize),
) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::gpt4::CL100K_PATTERN;
    use crate::pretokenize::o200k::O200K_PATTERN;
    use crate::pretokenize::Pretokenizer;

    /// The pretokens of one of the scalar scanners alone.
    fn scalar(text: &str, o200k: bool) -> Vec<&str> {
        let (b, mut i, mut out) = (text.as_bytes(), 0, vec![]);
        while i < b.len() {
            let end = if o200k {
                o200k_token_end(b, i)
            } else {
                cl100k_token_end(b, i)
            };
            out.push(&text[i..end]);
            i = end;
        }
        out
    }

    fn pieces<'t>(pretok: &Pretokenizer, text: &'t str) -> Vec<&'t str> {
        let mut out = vec![];
        pretok.for_each(text, |w| out.push(w)).unwrap();
        out
    }

    /// A text of about `len` bytes (xorshift from `seed`): every rule's characters, and non-ASCII
    /// letters, marks, spaces and others at block edges, in mostly ASCII letters and spaces, as in
    /// prose, for long ASCII stretches.
    fn random_text(seed: &mut u64, len: usize) -> String {
        let parts = [
            "a", "Zq", "s", "t", "m", "d", "ll", "ve", "re", "S", "LL", "Ve", "rE", "'", "''", " ",
            "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "1", "42", "12345", ".", "-;", "/", "//",
            "é", "É", "中", "\u{301}", "\u{a0}", "\u{3000}", "\u{85}", "😀", "_", "@", "[", "`",
            "{", "~", "\x7f", "\0", "ſ", "AB", "aB", "Ab", "ก", "\u{e35}", "ǅ", "٣",
        ];
        let mut text = String::new();
        while text.len() < len {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let pick = (*seed % 100) as usize;
            text.push_str(match parts.get(pick) {
                Some(part) => part,
                None => ["x", " ", "y", " ", "Q", "\n"][pick % 6],
            });
        }
        text
    }

    #[test]
    fn blocks_split_as_the_scalar_scanners_and_the_regex_engine_do() {
        // each preset's scanner and the regex engine on its pattern
        let scanners = [(false, CL100K_PATTERN), (true, O200K_PATTERN)].map(|(o200k, pattern)| {
            let engine = Pretokenizer::new(&format!("(?:{pattern})")).unwrap();
            (o200k, Pretokenizer::new(pattern).unwrap(), engine)
        });
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for round in 0..20_000 {
            let text = random_text(&mut seed, 1 + round % 200);
            for (o200k, pretok, engine) in &scanners {
                let got = pieces(pretok, &text);
                assert_eq!(got, scalar(&text, *o200k), "o200k {o200k}: {text:?}");
                assert_eq!(got, pieces(engine, &text), "o200k {o200k}: {text:?}");
            }
        }
    }

    /// A text of about `len` bytes mostly beyond ASCII, from one of three pools: scripts with
    /// case (Latin, Cyrillic, Greek, titlecase), scripts without (CJK, Thai, Arabic: letters
    /// both upper- and lower-case under o200k, and marks), or both mixed; each with digits of
    /// other scripts, white beyond ASCII, marks after letters and after other, U+017F after
    /// `'`, and ASCII words, digits, spaces, newlines and contractions.
    fn script_text(seed: &mut u64, len: usize) -> String {
        let cased = [
            "Привет",
            "мир",
            "МИР",
            "ß",
            "Éa",
            "é",
            "ǅ",
            "ǆ",
            "ǅa",
            "Ω",
            "ω",
            "Ωω",
            "ωΩ",
            "𝐀",
            "𝐚",
            "Ab",
            "aB",
            "AB",
            "X",
            "'LL",
            "'S",
        ];
        let caseless = [
            "中文",
            "漢字",
            "です",
            "ー",
            "ภาษา",
            "ไทย",
            "\u{e34}",
            "\u{e48}",
            "ที่",
            "العربية",
            "\u{64e}",
            "ʰ",
            "a\u{301}",
            "!\u{301}",
            " \u{301}",
            "\u{301}",
        ];
        let shared = [
            "٣٤٥", "٣", "१२", "½", "²", "。", "，", "「", "」", "\u{a0}", "\u{3000}", "\u{2009}",
            "\u{85}", "'ſ", "ſ", "😀", "«", "»", "—", "…", "€", " ", " ", "  ", "\n", "\r\n", "\t",
            "'", "'s", "'ve", "x", "12", "1234", ".", "/", "!!", "a", "the", " ", "\r", "\n\n",
        ];
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as usize
        };
        let pool = next() % 3;
        let mut text = String::new();
        while text.len() < len {
            let r = next();
            let own: &[&str] = match (pool, r % 2) {
                (0, _) | (2, 0) => &cased,
                _ => &caseless,
            };
            text.push_str(match (r >> 8) % 3 {
                0 => shared[(r >> 16) % shared.len()],
                _ => own[(r >> 16) % own.len()],
            });
        }
        text
    }

    #[test]
    fn blocks_of_other_scripts_split_as_the_scalar_scanners_do() {
        let presets = [(false, CL100K_PATTERN), (true, O200K_PATTERN)]
            .map(|(o200k, pattern)| (o200k, Pretokenizer::new(pattern).unwrap()));
        let mut seed = 0x1234_5678_9abc_def1u64;
        for round in 0..20_000 {
            let text = script_text(&mut seed, 64 + round % 300);
            for (o200k, pretok) in &presets {
                assert_eq!(
                    pieces(pretok, &text),
                    scalar(&text, *o200k),
                    "o200k {o200k}: {text:?}"
                );
            }
        }
    }

    #[test]
    fn every_code_point_in_blocks_splits_as_the_scalar_scanners_do() {
        // each character after and before letters of each case, digits, white, other, itself,
        // `'` and newlines, with and without ASCII capitals near (o200k leaves blocks holding
        // them and letters of both cases to the scalar scanner)
        let contexts = [
            [
                "a{}b {}{}{} x{}1 !{}a  {}\n'{}s ",
                "1{}2{}{}{}3 .{}.\r\n{}a {}",
            ],
            ["A{}b B{}{} {}C x{}Y {}A'{}S ", "Ab{}1{}AB{}x {}! {}z"],
        ];
        let presets = [(false, CL100K_PATTERN), (true, O200K_PATTERN)]
            .map(|(o200k, pattern)| (o200k, Pretokenizer::new(pattern).unwrap()));
        let chars: Vec<char> = (0x80..=0x10ffff).filter_map(char::from_u32).collect();
        for group in chars.chunks(2048) {
            for pair in &contexts {
                let mut text = String::new();
                for c in group {
                    for context in pair {
                        text.push_str(&context.replace("{}", &c.to_string()));
                    }
                }
                for (o200k, pretok) in &presets {
                    let (got, want) = (pieces(pretok, &text), scalar(&text, *o200k));
                    if got != want {
                        let at = got.iter().zip(&want).position(|(g, w)| g != w).unwrap_or(0);
                        let from = at.saturating_sub(3);
                        let got = &got[from..(at + 3).min(got.len())];
                        let want = &want[from..(at + 3).min(want.len())];
                        panic!("o200k {o200k}: {got:?} vs {want:?}");
                    }
                }
            }
        }
    }

    /// Every cut `can_cut_before` allows keeps the pretokens: both sides give those of the whole.
    #[test]
    fn every_allowed_cut_keeps_the_pretokens() {
        let presets = [CL100K_PATTERN, O200K_PATTERN].map(|p| Pretokenizer::new(p).unwrap());
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut cuts = 0;
        for round in 0..3_000 {
            let text = random_text(&mut seed, 1 + round % 100);
            for pretok in &presets {
                let whole = pieces(pretok, &text);
                for p in (1..text.len()).filter(|&p| text.is_char_boundary(p)) {
                    if pretok.can_cut_before(text.as_bytes(), p) {
                        let mut parts = pieces(pretok, &text[..p]);
                        parts.extend(pieces(pretok, &text[p..]));
                        assert_eq!(parts, whole, "cut at {p} of {text:?}");
                        cuts += 1;
                    }
                }
            }
        }
        assert!(cuts > 50_000, "{cuts}");
    }
}
