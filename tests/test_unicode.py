"""One Unicode version for every pretokenization path (docs/spec.md §2.9): regex-syntax's, which
tiktoken uses. The scanner equals the regex-engine path on every code point; the oracle (Python
`regex`, a newer Unicode) differs exactly where `tests/data/unicode_diff.txt` says; GPT-2's files
give tiktoken's ids on strings drawn from every assigned code point. The 10^6-string fuzz run:
`FUZZ_STRINGS=1000000 .venv/bin/pytest -q --runslow tests/test_unicode.py -k fuzz`.
"""

from __future__ import annotations

import functools
import os
import random
import time
from pathlib import Path

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

import bytepair
import reference as ref
import unicode_diff
from bytepair import GPT2_PATTERN, Tokenizer, _core
from bytepair.count import pretokenize
from bytepair.patterns import PRESETS
from unicode_diff import ALL_CHARS

#: Neighbours that tell a code point's class apart: letter or not (a?b), number or not ( ?1),
#: whitespace or not (?\n, the lookahead), alone, after a space, before a contraction.
CONTEXTS = ["a{c}b", " {c}1", "{c}\n", "{c}", " {c}", "{c}'s"]
DELIMITER = "\x00"


def test_version_is_exposed() -> None:
    assert bytepair.UNICODE_VERSION == _core.UNICODE_VERSION == "16.0.0"


# --- the scanner and the regex-engine path -------------------------------------------------------

#: The presets with hand-written scanners (one test each, not one per name of a preset).
SCANNERS = ("cl100k", "gpt2", "gpt2-superword", "gpt4-superword", "o200k")


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("preset", SCANNERS)
def test_scanner_equals_regex_engine_on_every_code_point(preset: str, context: str) -> None:
    engine = f"(?:{PRESETS[preset]})"  # the same pattern, not recognised as a preset
    # A superword pretoken runs to the end of its line: one line of every code point took the
    # regex engine's backtracking past its stack, so those texts end each context's line.
    delimiter = DELIMITER + "\n" if preset.endswith("superword") else DELIMITER
    text = delimiter.join(context.format(c=c) for c in ALL_CHARS)
    if pretokenize(text, pattern=preset) != pretokenize(text, pattern=engine):
        bad = [
            c
            for c in ALL_CHARS
            if pretokenize(context.format(c=c), pattern=preset)
            != pretokenize(context.format(c=c), pattern=engine)
        ]
        pytest.fail(f"{len(bad)} code points differ, e.g. {[f'U+{ord(c):04X}' for c in bad[:10]]}")


def test_unassigned_then_cjk_is_the_same_on_both_paths() -> None:
    text = "\U0001e6c8跎 a\u0558b"
    expected = ["\U0001e6c8", "跎", " a", "\u0558", "b"]
    assert pretokenize(text) == pretokenize(text, pattern=f"(?:{GPT2_PATTERN})") == expected


# --- the oracle's Unicode (Python `regex`) ------------------------------------------------------


def test_diff_file_is_current() -> None:
    ranges = unicode_diff.diff_ranges(unicode_diff.bytepair_classes(), unicode_diff.regex_classes())
    expected = unicode_diff.render(ranges)
    assert unicode_diff.DIFF_FILE.read_text(encoding="utf-8") == expected, (
        "tests/data/unicode_diff.txt is stale: run .venv/bin/python tools/gen_unicode_diff.py"
    )


SEPARATOR = "<|sep|>"


def _classes_in_context(pretok, chars: list[str]) -> list[str]:
    """The class a pretokenizer gives each character, read off its pretokens in three contexts;
    `pretok` takes a list of texts and returns the pretokens of each."""
    classes = ["other"] * len(chars)
    for name, context in [("S", "{c}\n"), ("N", " {c}1"), ("L", "a{c}b")]:
        texts = [context.format(c=c) for c in chars]
        for i, (text, pieces) in enumerate(zip(texts, pretok(texts), strict=True)):
            if pieces == [text]:
                classes[i] = name
    return classes


def _bytepair_many(pattern: str):
    """Pretokens of many texts in one call: joined by a special token, then split at it."""

    def pretok(texts: list[str]) -> list[list[str]]:
        pieces = pretokenize(SEPARATOR.join(texts), special_tokens=[SEPARATOR], pattern=pattern)
        out: list[list[str]] = [[]]
        for piece in pieces:
            if piece == SEPARATOR:
                out.append([])
            else:
                out[-1].append(piece)
        return out

    return pretok


def test_oracle_and_bytepair_differ_exactly_as_documented() -> None:
    ranges = unicode_diff.load()
    assert sum(last - first + 1 for first, last, *_ in ranges) == 17_480
    assert unicode_diff.diff_chars() < unicode_diff.newer_chars()
    assert len(unicode_diff.newer_chars()) == 17_810  # 17,480 + 79 marks + 251 others
    chars = [chr(cp) for first, last, *_ in ranges for cp in range(first, last + 1)]
    documented = [(a, b) for first, last, a, b in ranges for _ in range(first, last + 1)]
    oracle = _classes_in_context(lambda texts: [ref.pretokenize(t) for t in texts], chars)
    assert [a for a, _ in documented] == oracle
    for pattern in ["gpt2", f"(?:{GPT2_PATTERN})"]:
        assert [b for _, b in documented] == _classes_in_context(_bytepair_many(pattern), chars)


def test_unassigned_then_cjk_against_the_oracle(cs336_data: Path, tiktoken_gpt2) -> None:
    # U+1E6C8 is a letter in Unicode 17 (the oracle), unassigned in 16 (bytepair and tiktoken).
    text = "\U0001e6c8跎"
    assert ref.pretokenize(text) == [text]
    assert pretokenize(text) == ["\U0001e6c8", "跎"]
    tok = _gpt2_tokenizers(cs336_data)[0]
    assert tok.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)
    assert len(tok.encode_ordinary(text)) == 7


# --- fuzzing against tiktoken -------------------------------------------------------------------


@functools.cache
def _gpt2_tokenizers(data: Path) -> tuple[Tokenizer, Tokenizer]:
    """GPT-2's files on the scanner (preset) and on the regex-engine path (the same pattern)."""
    files = data / "gpt2_vocab.json", data / "gpt2_merges.txt"
    return Tokenizer.from_files(*files), Tokenizer.from_files(*files, pattern=f"(?:{GPT2_PATTERN})")


def _runs(pattern: str) -> set[str]:
    return set("".join(pretokenize(ALL_CHARS, pattern=f"(?:{pattern})+")))


@functools.cache
def pools() -> dict[str, list[str]]:
    """What fuzzed strings are made of: every assigned code point (Unicode 17, every plane,
    private use included), the Unicode 16 and 17 additions, combining marks, emoji and their
    sequence parts, every whitespace kind (and the \\x1c-\\x1f that str.isspace() calls space),
    and ASCII with contractions."""
    assigned = regex.findall(r"\p{Assigned}", ALL_CHARS)
    new_16 = _runs(r"[\p{Age=16.0}&&\P{Age=15.1}]")
    new_17 = set(assigned) - _runs(r"\p{Age=16.0}")
    return {
        "assigned": assigned,
        "new": sorted(new_16 | new_17),
        "marks": regex.findall(r"\p{M}", ALL_CHARS),
        "emoji": regex.findall(r"\p{Extended_Pictographic}", ALL_CHARS),
        "emoji_parts": [
            "\u200d",
            "\ufe0f",
            "\u20e3",
            *map(chr, range(0x1F3FB, 0x1F400)),
            *map(chr, range(0x1F1E6, 0x1F200)),
            *map(chr, range(0xE0020, 0xE0080)),
        ],
        "space": [*regex.findall(r"\s", ALL_CHARS), "\x1c", "\x1d", "\x1e", "\x1f", "\r\n"],
        "ascii": [*"abcXYZ019 '!.-\n", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "  "],
    }


def random_strings(seed: int, n: int) -> list[str]:
    """`n` strings of 1-12 pieces, each piece from a random pool (seeded, so reproducible)."""
    rng = random.Random(seed)
    names = list(pools())
    lists = [pools()[name] for name in names]
    weights = [4, 2, 2, 1, 1, 2, 4]
    out = []
    for _ in range(n):
        k = rng.randint(1, 12)
        out.append("".join(rng.choice(pool) for pool in rng.choices(lists, weights, k=k)))
    return out


def assert_batch_equals_tiktoken(
    tok: bytepair.Tokenizer, enc: object, texts: list[str], name: str = "bytepair"
) -> None:
    """`encode_ordinary_batch` of `tok` gives tiktoken's ids on every text (2 threads each)."""
    expected = enc.encode_ordinary_batch(texts, num_threads=2)
    got = tok.encode_ordinary_batch(texts, num_threads=2)
    bad = [t for t, a, b in zip(texts, got, expected, strict=True) if a != b]
    assert not bad, f"{name}: {len(bad)} of {len(texts)} differ from tiktoken: {bad[:5]!r}"


def _check_against_tiktoken(data: Path, tiktoken_gpt2, texts: list[str]) -> None:
    scanner, engine = _gpt2_tokenizers(data)
    for tok, name in [(scanner, "scanner"), (engine, "regex engine")]:
        assert_batch_equals_tiktoken(tok, tiktoken_gpt2, texts, name)


def test_fuzz_matches_tiktoken_short(cs336_data: Path, tiktoken_gpt2) -> None:
    _check_against_tiktoken(cs336_data, tiktoken_gpt2, random_strings(seed=13, n=20_000))


@given(st.lists(st.one_of([st.sampled_from(pool) for pool in pools().values()]), max_size=16))
def test_fuzz_matches_tiktoken_hypothesis(cs336_data, tiktoken_gpt2, pieces: list[str]) -> None:
    _check_against_tiktoken(cs336_data, tiktoken_gpt2, ["".join(pieces)])


@pytest.mark.slow
def test_fuzz_matches_tiktoken_long(cs336_data: Path, tiktoken_gpt2) -> None:
    # 10^6 strings with FUZZ_STRINGS=1000000 (docs/unicode.md); the slow run of CI does fewer.
    n = int(os.environ.get("FUZZ_STRINGS", "200000"))
    start = time.perf_counter()
    for seed in range(0, n, 100_000):
        texts = random_strings(seed, min(100_000, n - seed))
        _check_against_tiktoken(cs336_data, tiktoken_gpt2, texts)
    print(f"{n} fuzzed strings equal tiktoken's ids in {time.perf_counter() - start:.0f} s")
