"""The GPT-4 pattern presets (docs/spec.md §2.8): `cl100k` and `o200k` are tiktoken's strings
verbatim and run on hand-written scanners (`rust/src/pretokenize/`: an SSE2 path for ASCII text,
scalar scanners for the rest). They split text as the Python `regex` package does on every code
point in context (outside the Unicode 17 additions, where the oracle is newer: see test_unicode.py)
and on fuzzed text long enough for the ASCII path, and give tiktoken's ids on fuzzed text.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from unittest import mock

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st
from test_unicode import _bytepair_many, assert_batch_equals_tiktoken, pools, random_strings

import bytepair
from bytepair.count import pretokenize
from bytepair.patterns import PRESETS
from unicode_diff import ALL_CHARS, matches, newer_chars


def test_presets_are_tiktokens_strings() -> None:
    from tiktoken_ext import openai_public

    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *a, **k: {}):
        assert PRESETS["cl100k"] == openai_public.cl100k_base()["pat_str"]
        assert PRESETS["o200k"] == openai_public.o200k_base()["pat_str"]
    assert (
        bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="o200k").pattern
        == bytepair.O200K_PATTERN
    )


#: o200k's words are case-aware: upper-case or not (a?B), lower-case only or not (AA?Ab), a mark
#: or a letter (!!?); and punctuation takes the `[\r\n/]*` after it.
CASE_CONTEXTS = ["a{c}B", "AA{c}Ab's", "!!{c}", "!{c}\n/a"]


@pytest.mark.parametrize(
    ("preset", "context"),
    [
        *[(p, "{c}'s") for p in ("cl100k", "o200k")],
        *[
            pytest.param(p, c, marks=pytest.mark.slow)
            for p in ("cl100k", "o200k")
            for c in ["a{c}b", " {c}1", "{c}  \r\n"]
        ],
        *[pytest.param("o200k", c, marks=pytest.mark.slow) for c in CASE_CONTEXTS],
    ],
)
def test_preset_equals_regex_package_on_every_code_point(preset: str, context: str) -> None:
    newer = newer_chars() | (_case_diff() if preset == "o200k" else frozenset())
    chars = [c for c in ALL_CHARS if c not in newer]
    texts = [context.format(c=c) for c in chars]
    oracle = regex.compile(PRESETS[preset])
    got = _bytepair_many(preset)(texts)
    bad = [c for c, t, pieces in zip(chars, texts, got, strict=True) if oracle.findall(t) != pieces]
    assert not bad, f"{len(bad)} code points differ, e.g. {[f'U+{ord(c):04X}' for c in bad[:10]]}"


#: Long texts' ASCII pieces: every rule of the ASCII path (words in each case, contractions,
#: digit runs, punctuation with `/` and newlines, whitespace runs).
ASCII_PIECES = [
    "the", "The", "THE", "HTTPServer", "camelCase", "aB", "x", "it", "'s", "'S", "'t", "'re",
    "'VE", "'ll", "'d", "'M", "'", "0", "42", "12345", " ", " ", " ", "  ", "\n", "\r\n", "\n\n",
    "\t", "\x0b", ".", "!", "...", "/", "//", "(", '"', "-", "_", "\x00", "\x7f",
]  # fmt: skip
#: A few non-ASCII pieces for hypothesis: letters of each case (ǅ is Lt), marks, spaces, ſ and the
#: Kelvin sign (case-fold to s and k), CJK, a letter number, an emoji.
OTHER_PIECES = [
    "É",
    "é",
    "ǅ",
    "\u0301",
    "\u00a0",
    "\u3000",
    "\u0085",
    "ſ",
    "\u212a",
    "中",
    "ー",
    "Ⅻ",
    "²",
    "😀",
    "Привет",
]


@functools.cache
def _case_diff() -> frozenset[str]:
    """Characters (not newer ones) in one of o200k's case classes for one Unicode and not the
    other: the oracle's 17 and bytepair's 16 (tiktoken's)."""
    newer = newer_chars()
    diff: set[str] = set()
    for cls in [r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"]:
        ours = set("".join(matches(f"(?:{cls})+")))
        diff |= ours.symmetric_difference(regex.findall(cls, ALL_CHARS))
    return frozenset(diff - newer)


def test_case_classes_differ_from_the_oracle_s_in_one_character() -> None:
    # Unicode 17 made U+0295 (ʕ) a Lo, no longer a Ll: o200k splits "AAʕAb" in two in bytepair
    # and tiktoken (Unicode 16), not in the oracle.
    assert _case_diff() == {"\u0295"}
    assert pretokenize("AA\u0295Ab", pattern="o200k") == ["AA\u0295", "Ab"]


@functools.cache
def _other_chars() -> list[str]:
    """Non-ASCII characters of every kind in `pools()`, none where the oracle's Unicode and
    bytepair's differ for these patterns."""
    newer = newer_chars() | _case_diff()
    return [c for name, pool in pools().items() if name != "ascii" for c in pool if c not in newer]


def long_texts(seed: int, n: int) -> list[str]:
    """`n` texts of up to 400 pieces, nine in ten from `ASCII_PIECES` (seeded)."""
    rng = random.Random(seed)
    other = _other_chars()
    return [
        "".join(
            rng.choice(ASCII_PIECES) if rng.random() < 0.9 else rng.choice(other)
            for _ in range(rng.randint(1, 400))
        )
        for _ in range(n)
    ]


def _check_against_regex(preset: str, texts: list[str]) -> None:
    oracle = regex.compile(PRESETS[preset])
    got = _bytepair_many(preset)(texts)
    bad = [t for t, pieces in zip(texts, got, strict=True) if oracle.findall(t) != pieces]
    assert not bad, f"{preset}: {len(bad)} of {len(texts)} differ from regex: {bad[:3]!r}"


@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
def test_fuzz_long_texts_equal_regex_package(preset: str) -> None:
    _check_against_regex(preset, long_texts(seed=3, n=3000))


@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
@given(pieces=st.lists(st.sampled_from(ASCII_PIECES + OTHER_PIECES), max_size=200))
def test_fuzz_hypothesis_equals_regex_package(preset: str, pieces: list[str]) -> None:
    _check_against_regex(preset, ["".join(pieces)])


@pytest.fixture(scope="module", params=["cl100k", "o200k"])
def with_tiktoken(request, cs336_data: Path, tmp_path_factory):
    """A tokenizer trained with the preset and the `tiktoken.Encoding` of its exported files."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    texts = [(cs336_data / n).read_text(encoding="utf-8") for n in ("corpus.en", "german.txt")]
    texts += random_strings(seed=9, n=3000)
    tok = bytepair.train_from_iterator(texts, 2000, pattern=request.param, progress=False)
    folder = tmp_path_factory.mktemp(request.param)
    tok.save(folder, formats=["tiktoken"])
    sidecar = json.loads((folder / "tokenizer.tiktoken.json").read_text(encoding="utf-8"))
    ranks = load_tiktoken_bpe(str(folder / "tokenizer.tiktoken"))
    return tok, tiktoken.Encoding(mergeable_ranks=ranks, **sidecar)


def test_fuzz_preset_ids_equal_tiktoken(with_tiktoken) -> None:
    tok, enc = with_tiktoken
    assert_batch_equals_tiktoken(tok, enc, random_strings(seed=21, n=20_000))


@given(st.lists(st.one_of([st.sampled_from(pool) for pool in pools().values()]), max_size=16))
def test_fuzz_preset_hypothesis(with_tiktoken, pieces: list[str]) -> None:
    tok, enc = with_tiktoken
    text = "".join(pieces)
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
