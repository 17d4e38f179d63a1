//! Sequences of splits against a reference on fancy-regex alone, step by step, whose behaviours
//! are HF tokenizers' own code (`SplitDelimiterBehavior`'s folds) written again.

use super::{Behavior, Split};
use crate::pretokenize::compiled::tests::{
    cuts_keep_the_pieces, every_code_point, pieces, random_texts, same, BYTELEVEL, LLAMA3,
};
use crate::pretokenize::{Pretokenizer, GPT2_PATTERN};

/// DeepSeek V3's pre-tokenizer (its tokenizer.json): digits, CJK, then its main pattern, all
/// `Isolated`.
const DEEPSEEK: [&str; 3] = [
    r"\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
];

fn splits(patterns: &[&str], behavior: Behavior, invert: bool) -> Vec<Split> {
    let split = |p: &&str| Split {
        pattern: p.to_string(),
        behavior,
        invert,
    };
    patterns.iter().map(split).collect()
}

/// HF's `Split` on one piece: `find_matches` (every match and gap, flagged), then the
/// behaviour's fold, as in tokenizers' `normalizer.rs`.
fn hf_split(re: &fancy_regex::Regex, s: &Split, text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut prev = 0;
    for m in re.find_iter(text) {
        let m = m.unwrap();
        if prev != m.start() {
            ranges.push(((prev, m.start()), false));
        }
        ranges.push(((m.start(), m.end()), true));
        prev = m.end();
    }
    if prev != text.len() {
        ranges.push(((prev, text.len()), false));
    }
    let ranges = ranges.into_iter().map(|(o, m)| (o, m != s.invert));
    let mut acc: Vec<(usize, usize)> = Vec::new();
    match s.behavior {
        Behavior::Isolated => acc = ranges.map(|(o, _)| o).collect(),
        Behavior::Removed => acc = ranges.filter(|(_, m)| !m).map(|(o, _)| o).collect(),
        Behavior::MergedWithPrevious => {
            let mut previous = false;
            for (o, m) in ranges {
                match acc.last_mut() {
                    Some(last) if m && !previous => last.1 = o.1,
                    _ => acc.push(o),
                }
                previous = m;
            }
        }
        Behavior::MergedWithNext => {
            let mut previous = false;
            for (o, m) in ranges.rev() {
                match acc.last_mut() {
                    Some(last) if m && !previous => last.0 = o.0,
                    _ => acc.push(o),
                }
                previous = m;
            }
            acc.reverse();
        }
        Behavior::Contiguous => {
            let mut previous = None;
            for (o, m) in ranges {
                match acc.last_mut() {
                    Some(last) if previous == Some(m) => last.1 = o.1,
                    _ => acc.push(o),
                }
                previous = Some(m);
            }
        }
    }
    acc
}

/// The reference of a sequence: its steps on fancy-regex.
struct Reference(Vec<(fancy_regex::Regex, Split)>);

impl Reference {
    fn new(splits: &[Split]) -> Self {
        let step = |s: &Split| (fancy_regex::Regex::new(&s.pattern).unwrap(), s.clone());
        Reference(splits.iter().map(step).collect())
    }

    /// The pieces: each step on each piece of the one before.
    fn pieces(&self, text: &str) -> Vec<(usize, usize)> {
        let mut current = vec![(0, text.len())];
        for (re, s) in &self.0 {
            let mut next = Vec::new();
            for (a, b) in current {
                let found = hf_split(re, s, &text[a..b]);
                next.extend(found.into_iter().map(|(s, e)| (a + s, a + e)));
            }
            current = next.into_iter().filter(|(s, e)| s < e).collect();
        }
        current
    }
}

fn reference(splits: &[Split], text: &str) -> Vec<(usize, usize)> {
    Reference::new(splits).pieces(text)
}

#[test]
fn behaviours_split_as_hf_tokenizers_examples() {
    let show = |behavior, invert, pattern: &str, text: &str| -> Vec<String> {
        let seq = Pretokenizer::sequence(&splits(&[pattern], behavior, invert)).unwrap();
        let got: Vec<String> = pieces(&seq, text)
            .iter()
            .map(|&(s, e)| text[s..e].into())
            .collect();
        let want = Reference::new(&splits(&[pattern], behavior, invert)).pieces(text);
        let want: Vec<String> = want.iter().map(|&(s, e)| text[s..e].into()).collect();
        assert_eq!(got, want, "{behavior:?} {invert}");
        got
    };
    use Behavior::*;
    let cases: [(Behavior, bool, &[&str]); 10] = [
        (Removed, false, &["a", "b", "c"]),
        (Removed, true, &["1", "2", "2"]),
        (Isolated, false, &["a", "1", "b", "2", "2", "c"]),
        (Isolated, true, &["a", "1", "b", "2", "2", "c"]),
        (MergedWithPrevious, false, &["a1", "b2", "2", "c"]),
        (MergedWithPrevious, true, &["a", "1b", "2", "2c"]),
        (MergedWithNext, false, &["a", "1b", "2", "2c"]),
        (MergedWithNext, true, &["a1", "b2", "2", "c"]),
        (Contiguous, false, &["a", "1", "b", "22", "c"]),
        (Contiguous, true, &["a", "1", "b", "22", "c"]),
    ];
    for (behavior, invert, want) in cases {
        assert_eq!(
            show(behavior, invert, r"\d", "a1b22c"),
            want,
            "{behavior:?} {invert}"
        );
    }
    let text = "The-final--countdown";
    assert_eq!(
        show(MergedWithNext, false, "-", text),
        ["The", "-final", "-", "-countdown"]
    );
    assert_eq!(
        show(Contiguous, false, "-", text),
        ["The", "-", "final", "--", "countdown"]
    );
}

#[test]
fn deepseek_equals_the_engine_step_by_step() {
    let ds = splits(&DEEPSEEK, Behavior::Isolated, false);
    let ours = Pretokenizer::sequence(&ds).unwrap();
    assert_eq!(ours.kind(), "sequence");
    every_code_point("deepseek", |t| pieces(&ours, t), |t| reference(&ds, t));
    for text in random_texts(13, 5_000, 20) {
        same(
            "deepseek",
            &text,
            &pieces(&ours, &text),
            &reference(&ds, &text),
        );
    }
}

#[test]
fn starcoder2_equals_the_engine_step_by_step() {
    // HF `Digits(individual_digits)` is an isolated split on each `\p{N}`
    let sc = splits(&[r"\p{N}", BYTELEVEL], Behavior::Isolated, false);
    let ours = Pretokenizer::sequence(&sc).unwrap();
    assert_eq!(ours.kind(), "sequence");
    // every code point runs through DeepSeek's sequence; here, random texts
    for text in random_texts(17, 5_000, 20) {
        same(
            "starcoder2",
            &text,
            &pieces(&ours, &text),
            &reference(&sc, &text),
        );
    }
}

/// A single split that keeps everything is the pattern's own pretokenizer when the pattern
/// leaves no gaps, and so is one that keeps its matches alone, whatever the pattern.
#[test]
fn one_split_is_the_pattern_where_it_can_be() {
    let one = |p: &str, behavior, invert| {
        Pretokenizer::sequence(&splits(&[p], behavior, invert)).unwrap()
    };
    assert_eq!(one(GPT2_PATTERN, Behavior::Isolated, false).kind(), "gpt2");
    assert_eq!(one(LLAMA3, Behavior::Isolated, true).kind(), "compiled");
    assert_eq!(one(r"\p{L}+", Behavior::Removed, true).kind(), "compiled");
    assert_eq!(one(r"(?<=a)b", Behavior::Removed, true).kind(), "regex");
    // gaps: `\p{L}+` leaves them, so an isolated split keeps them as pieces
    let gaps = one(r"\p{L}+", Behavior::Isolated, false);
    assert_eq!(gaps.kind(), "sequence");
    assert_eq!(pieces(&gaps, "ab 12c"), [(0, 2), (2, 5), (5, 6)]);
}

/// Every behaviour, flipped or not, in sequences of two or three steps, compiled steps and
/// fancy-regex ones (with empty matches), on random texts.
#[test]
fn sequences_of_every_behaviour_equal_the_reference() {
    use Behavior::*;
    let behaviors = [
        Isolated,
        Removed,
        MergedWithPrevious,
        MergedWithNext,
        Contiguous,
    ];
    let patterns = [r"\d", r"\s+", r"\p{L}+", r"[aeiou]*", r"(?<=a)b", LLAMA3];
    let texts = random_texts(19, 300, 3);
    let mut next = crate::testing::numbers(23);
    for _ in 0..60 {
        let steps = 2 + next(2) as usize;
        let seq: Vec<Split> = (0..steps)
            .map(|_| Split {
                pattern: patterns[next(patterns.len() as u64) as usize].to_string(),
                behavior: behaviors[next(5) as usize],
                invert: next(2) == 1,
            })
            .collect();
        let ours = Pretokenizer::sequence(&seq).unwrap();
        for text in &texts {
            same(
                &format!("{seq:?}"),
                text,
                &pieces(&ours, text),
                &reference(&seq, text),
            );
        }
    }
}

#[test]
fn every_allowed_cut_of_a_sequence_keeps_the_pieces() {
    let texts = random_texts(29, 1_500, 0);
    for (name, patterns) in [
        ("deepseek", &DEEPSEEK[..]),
        ("starcoder2", &[r"\p{N}", BYTELEVEL]),
    ] {
        let p = Pretokenizer::sequence(&splits(patterns, Behavior::Isolated, false)).unwrap();
        cuts_keep_the_pieces(name, &p, &texts);
    }
}
