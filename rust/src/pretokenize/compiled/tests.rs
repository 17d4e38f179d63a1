//! The compiled path against fancy-regex (`find_iter`, empty matches skipped) and against the
//! preset scanners: every code point in several contexts, random texts of tricky characters,
//! long texts across the two-stream segments, and texts that make the scan escape. (Texts are
//! batched: fancy-regex is far faster on one long text than on a million short ones.)

use std::sync::atomic::AtomicBool;

use crate::pretokenize::gpt4::CL100K_PATTERN;
use crate::pretokenize::o200k::O200K_PATTERN;
use crate::pretokenize::{Pretokenizer, GPT2_PATTERN};

/// Llama 3 (also GLM-4, OLMo 2), verbatim from llama-models.
pub(crate) const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 2 / 2.5 / 3: Llama 3's with single digits.
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 3.5: marks join letters.
const QWEN35: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Mistral's Tekken: o200k's words without contractions, single digits.
const TEKKEN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Kimi K2: a script property and class intersection.
const KIMI: &str = concat!(
    r"[\p{Han}]+",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);
/// tiktoken's r50k form of GPT-2's pattern: possessives and `$`.
const R50K: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";
/// HF ByteLevel's own regex: GPT-2's with case-sensitive contractions.
pub(crate) const BYTELEVEL: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Each code point's neighbours tell its classes apart: a letter or not, a number, whitespace
/// (and the lookahead), a contraction, case, marks after letters, `\r \n /` after others.
pub(crate) const CONTEXTS: [(&str, &str); 6] = [
    ("a", "b "),
    (" ", "1"),
    ("'", "\n "),
    ("AA", "Ab'S "),
    ("!", "\n/"),
    ("中", "  x"),
];

pub(crate) fn pieces(p: &Pretokenizer, text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    p.for_each_span(text, &AtomicBool::new(false), |s, e| out.push((s, e)))
        .unwrap();
    out
}

/// Panics with the first difference, shown as text around it.
pub(crate) fn same(what: &str, text: &str, got: &[(usize, usize)], want: &[(usize, usize)]) {
    if got == want {
        return;
    }
    let at = got.iter().zip(want).position(|(g, w)| g != w);
    let at = at.unwrap_or(got.len().min(want.len()));
    let show = |v: &[(usize, usize)]| -> Vec<&str> {
        let from = at.saturating_sub(3);
        v[from..(at + 3).min(v.len())]
            .iter()
            .map(|&(s, e)| &text[s..e])
            .collect()
    };
    panic!("{what}: {:?} vs {:?}", show(got), show(want));
}

/// Every scalar value in each context, a few thousand to a text, through both.
pub(crate) fn every_code_point(
    what: &str,
    ours: impl Fn(&str) -> Vec<(usize, usize)>,
    reference: impl Fn(&str) -> Vec<(usize, usize)>,
) {
    let chars: Vec<char> = (0..=0x10ffff).filter_map(char::from_u32).collect();
    let mut text = String::new();
    for group in chars.chunks(4096) {
        text.clear();
        for &c in group {
            for (before, after) in CONTEXTS {
                text.push_str(before);
                text.push(c);
                text.push_str(after);
            }
        }
        same(what, &text, &ours(&text), &reference(&text));
    }
}

/// Spaces of every kind, contractions, long s, Kelvin, digits of several scripts, marks, CJK,
/// kana, Thai, Arabic, emoji with joiners, controls, punctuation.
pub(crate) fn tricky() -> Vec<char> {
    concat!(
        " \t\n\r\u{b}\u{c}\u{85}\u{a0}\u{1680}\u{2000}\u{2028}\u{2029}\u{202f}\u{3000}",
        "'\u{2019}\"`aAbBsSdDmMtTlLvVeErRxXſ\u{212a}İıǅ",
        "0123456789٠١٢۴५๗〇½²Ⅻ①",
        "\u{300}\u{301}\u{93f}\u{e31}\u{e48}\u{20dd}",
        "中文字日本語ひらがなカタカナ한국어ー々一龥぀ゟ゠ヿ",
        "ไทยاللغةעבריתрусскийΕλληνικά",
        "😀👍🏽\u{fe0f}\u{200d}\u{200b}\u{feff}\u{0}\u{1}\u{7f}",
        ".,;:!?()[]{}<>/\\|@#$%^&*-_=+~…—«»。，、！「」",
    )
    .chars()
    .collect()
}

/// Texts of 1-24 tricky characters, then texts of 3-15 KB mixing them with words and runs of
/// whitespace (past the two-stream segments, ending anywhere in them).
pub(crate) fn random_texts(seed: u64, short: usize, long: usize) -> Vec<String> {
    let alphabet = tricky();
    let words = [
        "the",
        "It's",
        "don'T",
        "WORD",
        "camelCase",
        "x",
        "1234567",
        "  ",
        "\n\n",
        " \r\n ",
        "    ",
        "\t",
        "...",
        "/*",
        "ſ",
        "ǅa",
        "中文",
        "ไทย",
        "\u{a0}",
        "'ll",
        "'LL",
        "\n    ",
        "\n        self",
        " 12",
        "١٢٣",
    ];
    let mut next = crate::testing::numbers(seed);
    let mut texts = Vec::new();
    for _ in 0..short {
        let len = 1 + next(24);
        texts.push(
            (0..len)
                .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                .collect(),
        );
    }
    for _ in 0..long {
        let len = 3000 + next(12000) as usize;
        let mut text = String::new();
        while text.len() < len {
            match next(4) {
                0 => text.push(alphabet[next(alphabet.len() as u64) as usize]),
                1 => text.push(' '),
                _ => text.push_str(words[next(words.len() as u64) as usize]),
            }
        }
        texts.push(text);
    }
    texts
}

/// The compiled path equals fancy-regex on every code point in context and on random texts.
fn equals_the_engine(name: &str, pattern: &str) {
    let ours = Pretokenizer::new(&format!("(?:{pattern})")).unwrap();
    assert_eq!(ours.kind(), "compiled", "{name}");
    let engine = Pretokenizer::regex(pattern).unwrap();
    every_code_point(name, |t| pieces(&ours, t), |t| pieces(&engine, t));
    for text in random_texts(name.len() as u64, 20_000, 40) {
        same(name, &text, &pieces(&ours, &text), &pieces(&engine, &text));
    }
}

#[test]
fn llama3_equals_the_engine() {
    equals_the_engine("llama3", LLAMA3);
}

#[test]
fn qwen2_equals_the_engine() {
    equals_the_engine("qwen2", QWEN2);
}

#[test]
fn qwen35_equals_the_engine() {
    equals_the_engine("qwen3.5", QWEN35);
}

#[test]
fn tekken_equals_the_engine() {
    equals_the_engine("tekken", TEKKEN);
}

#[test]
fn kimi_equals_the_engine() {
    equals_the_engine("kimi", KIMI);
}

/// Possessive quantifiers and `$` (tiktoken's r50k form), and HF ByteLevel's own regex: random
/// texts (their classes are GPT-2's, which `unicode.rs` sweeps).
#[test]
fn possessives_and_the_end_of_text_equal_the_engine() {
    for (name, pattern) in [("r50k", R50K), ("bytelevel", BYTELEVEL)] {
        let ours = Pretokenizer::new(pattern).unwrap();
        assert_eq!(ours.kind(), "compiled", "{name}");
        let engine = Pretokenizer::regex(pattern).unwrap();
        for text in random_texts(7, 20_000, 40) {
            same(name, &text, &pieces(&ours, &text), &pieces(&engine, &text));
        }
    }
}

/// The presets' own patterns, compiled, split as their hand-written scanners do.
#[test]
fn presets_compiled_equal_their_scanners() {
    for (name, pattern) in [
        ("gpt2", GPT2_PATTERN),
        ("cl100k", CL100K_PATTERN),
        ("o200k", O200K_PATTERN),
    ] {
        let scanner = Pretokenizer::new(pattern).unwrap();
        let ours = Pretokenizer::new(&format!("(?:{pattern})")).unwrap();
        assert_eq!((scanner.kind(), ours.kind()), (name, "compiled"));
        every_code_point(name, |t| pieces(&ours, t), |t| pieces(&scanner, t));
        for text in random_texts(11, 20_000, 60) {
            same(name, &text, &pieces(&ours, &text), &pieces(&scanner, &text));
        }
    }
}

/// Patterns whose scan escapes often (a run that dies two characters in without a match, a
/// match that only the end of the text makes, text no alternative matches, which is dropped):
/// the exact search, and the second stream stopping, on texts across segments.
#[test]
fn escapes_are_settled_exactly() {
    let patterns = [
        r"abc|x|\s+",
        r"ab$|a|b|c",
        r"\p{L}+|\d",
        r"a+b|a|c|\s+(?!\S)|\s+",
    ];
    let mut next = crate::testing::numbers(3);
    for pattern in patterns {
        let ours = Pretokenizer::new(pattern).unwrap();
        assert_eq!(ours.kind(), "compiled", "{pattern}");
        let engine = Pretokenizer::regex(pattern).unwrap();
        for round in 0..3_000 {
            let len = if round % 50 == 0 {
                9000
            } else {
                1 + round % 40
            };
            let text: String = (0..len)
                .map(|_| ['a', 'b', 'c', 'x', ' ', '1', 'é', '\n'][next(8) as usize])
                .collect();
            same(
                pattern,
                &text,
                &pieces(&ours, &text),
                &pieces(&engine, &text),
            );
        }
    }
}

/// Which path each kind of pattern takes.
#[test]
fn patterns_take_the_path_they_can() {
    let kinds = [
        (GPT2_PATTERN, "gpt2"),
        (LLAMA3, "compiled"),
        (KIMI, "compiled"),
        (r"\p{N}{1,3}|[^\n\p{N}]+\n?|\n", "gpt4-superword"),
        (r"(?:\p{N}{1,3}|[^\n\p{N}]+\n?|\n)", "compiled"),
        (r" ?\p{N}+|(?:(?! ?\p{N})[^\n])+\n?|\n", "gpt2-superword"),
        (r"(?: ?\p{N}+|(?:(?! ?\p{N})[^\n])+\n?|\n)", "regex"),
        (r"(?<=a)b|\w+", "regex"),
        (r"\b\w+\b|\s", "regex"),
        (r"(\w)\1|\w", "regex"),
        (r"x*", "regex"),
    ];
    for (pattern, kind) in kinds {
        assert_eq!(
            Pretokenizer::new(pattern).unwrap().kind(),
            kind,
            "{pattern}"
        );
    }
    assert!(Pretokenizer::new(r"(").is_err());
}

/// Every cut `can_cut_before` allows keeps the pieces: both sides give those of the whole.
pub(crate) fn cuts_keep_the_pieces(name: &str, p: &Pretokenizer, texts: &[String]) {
    assert!(p.cuts_anywhere(), "{name}");
    let mut cuts = 0;
    for text in texts {
        let whole = pieces(p, text);
        for at in (1..text.len()).filter(|&at| text.is_char_boundary(at)) {
            if p.can_cut_before(text.as_bytes(), at) {
                let mut parts = pieces(p, &text[..at]);
                let offset = pieces(p, &text[at..]).into_iter();
                parts.extend(offset.map(|(s, e)| (s + at, e + at)));
                same(&format!("{name}, cut at {at}"), text, &parts, &whole);
                cuts += 1;
            }
        }
    }
    assert!(cuts > texts.len(), "{name}: {cuts} cuts");
}

#[test]
fn every_allowed_cut_keeps_the_pieces() {
    let texts = random_texts(5, 1_500, 0);
    for (name, pattern) in [
        ("llama3", LLAMA3),
        ("qwen2", QWEN2),
        ("tekken", TEKKEN),
        ("kimi", KIMI),
        ("r50k", R50K),
        ("cl100k", &format!("(?:{CL100K_PATTERN})")),
    ] {
        let p = Pretokenizer::new(pattern).unwrap();
        cuts_keep_the_pieces(name, &p, &texts);
    }
}
