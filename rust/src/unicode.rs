//! The Unicode version of every pretokenization path. The GPT-2 scanner's classes (`tables.rs`)
//! are generated from regex-syntax, which also gives fancy-regex (custom patterns) its classes:
//! one pinned version (Cargo.toml), tiktoken's, so both paths give tiktoken's pretokens. The
//! tests below hold the scanners to regex-syntax on every code point.

/// The Unicode version of the character classes of every pattern, e.g. `"16.0.0"`.
pub const UNICODE_VERSION: &str = crate::tables::UNICODE_VERSION;

#[cfg(test)]
mod tests {
    use regex_syntax::hir::{Class, HirKind};

    use crate::pretokenize::o200k::{flags_of, LETTER, LOWER, NUMBER, O200K_PATTERN, SPACE, UPPER};
    use crate::pretokenize::{class_of, Pretokenizer, GPT2_PATTERN};

    /// The presets that run on a hand-written scanner: (name, pattern).
    const PRESETS: [(&str, &str); 5] = [
        ("gpt2", GPT2_PATTERN),
        ("cl100k", crate::pretokenize::gpt4::CL100K_PATTERN),
        ("o200k", O200K_PATTERN),
        ("gpt2-superword", crate::pretokenize::SUPERWORD_GPT2_PATTERN),
        ("gpt4-superword", crate::pretokenize::SUPERWORD_GPT4_PATTERN),
    ];

    /// Each code point's neighbours tell its class apart: letter or not (`a?b`), number or not
    /// (` ?1`), whitespace or not (`?\n`, the lookahead), alone, after a space, and a contraction;
    /// for o200k's case-aware words, upper-case or not (`a?B`), lower-case only or not (`AA?Ab`),
    /// a mark or a letter (`!!?`), and the `[\r\n/]*` after punctuation.
    const CONTEXTS: [(&str, &str); 14] = [
        ("a", "b"),
        (" ", "1"),
        ("", "\n"),
        ("", ""),
        (" ", ""),
        ("x", "'s"),
        ("'", ""),
        ("'l", "e"),
        ("", "  \r\n x"),
        ("12", "34"),
        ("a", "B"),
        ("AA", "Ab'S"),
        ("!!", ""),
        ("!", "\n/a"),
    ];

    fn all_chars() -> impl Iterator<Item = char> {
        (0..0x110000u32).filter_map(char::from_u32)
    }

    fn in_class(pattern: &str) -> Vec<bool> {
        let mut member = vec![false; 0x110000];
        let hir = regex_syntax::parse(pattern).unwrap();
        let HirKind::Class(Class::Unicode(class)) = hir.kind() else {
            panic!("{pattern} is not a Unicode class");
        };
        for r in class.ranges() {
            member[r.start() as usize..=r.end() as usize].fill(true);
        }
        member
    }

    #[test]
    fn scanner_classes_are_regex_syntax_classes_on_every_code_point() {
        let (letter, number, space) = (in_class(r"\p{L}"), in_class(r"\p{N}"), in_class(r"\s"));
        for c in all_chars() {
            let cp = c as usize;
            let expected = match (letter[cp], number[cp], space[cp]) {
                (true, false, false) => 1,
                (false, true, false) => 2,
                (false, false, true) => 3,
                (false, false, false) => 0,
                _ => panic!("U+{cp:04X} is in two classes"),
            };
            assert_eq!(class_of(cp as u32), expected, "U+{cp:04X}");
        }
    }

    /// The o200k table's flags: each bit is its class of the pattern, as regex-syntax parses it.
    #[test]
    fn o200k_flags_are_regex_syntax_classes_on_every_code_point() {
        let upper = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]";
        let lower = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]";
        assert!(O200K_PATTERN.contains(upper) && O200K_PATTERN.contains(lower));
        let classes: Vec<(u8, Vec<bool>)> = [
            (UPPER, upper),
            (LOWER, lower),
            (LETTER, r"\p{L}"),
            (NUMBER, r"\p{N}"),
            (SPACE, r"\s"),
        ]
        .iter()
        .map(|&(bit, pattern)| (bit, in_class(pattern)))
        .collect();
        for c in all_chars() {
            let cp = c as usize;
            let expected: u8 = classes
                .iter()
                .filter(|(_, m)| m[cp])
                .map(|(bit, _)| bit)
                .sum();
            assert_eq!(flags_of(cp as u32), expected, "U+{cp:04X}");
        }
    }

    fn pieces<'t>(p: &Pretokenizer, text: &'t str) -> Vec<&'t str> {
        let mut out = Vec::new();
        p.for_each(text, |t| out.push(t)).unwrap();
        out
    }

    #[test]
    fn scanner_equals_regex_engine_on_every_code_point_in_context() {
        for (name, pattern) in PRESETS {
            let scanner = Pretokenizer::new(pattern).unwrap();
            assert!(
                !matches!(scanner, Pretokenizer::Regex(_)),
                "{name} has no scanner"
            );
            let engine = Pretokenizer::new(&format!("(?:{pattern})")).unwrap();
            assert!(matches!(engine, Pretokenizer::Regex(_)));
            let mut text = String::new();
            for (before, after) in CONTEXTS {
                for c in all_chars() {
                    text.clear();
                    text.push_str(before);
                    text.push(c);
                    text.push_str(after);
                    let (got, expected) = (pieces(&scanner, &text), pieces(&engine, &text));
                    assert_eq!(got, expected, "{name}: {text:?} (U+{:04X})", c as u32);
                }
            }
        }
    }

    #[test]
    fn the_version_is_the_newest_age_regex_syntax_knows() {
        let known = |v: &str| regex_syntax::parse(&format!(r"\p{{Age={v}}}")).is_ok();
        let parts: Vec<u32> = super::UNICODE_VERSION
            .split('.')
            .map(|p| p.parse().unwrap())
            .collect();
        let [major, minor, 0] = parts[..] else {
            panic!("{}", super::UNICODE_VERSION)
        };
        assert!(known(&format!("{major}.{minor}")));
        assert!(!known(&format!("{major}.{}", minor + 1)));
        assert!(!known(&format!("{}.0", major + 1)));
    }
}
