"""The GPT-4 pattern presets (issue 9 part 3): `cl100k` and `o200k` are tiktoken's strings
verbatim, split text as the Python `regex` package does on every code point (outside the
Unicode 17 additions, where the oracle is newer: see test_unicode.py), and give tiktoken's ids
on fuzzed text. They run on fancy-regex, tiktoken's engine; no hand-written scanner yet.
"""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st
from test_unicode import _bytepair_many, pools, random_strings

import bytepair
from bytepair.patterns import PRESETS
from unicode_diff import ALL_CHARS, newer_chars


def test_presets_are_tiktokens_strings() -> None:
    from tiktoken_ext import openai_public

    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *a, **k: {}):
        assert PRESETS["cl100k"] == openai_public.cl100k_base()["pat_str"]
        assert PRESETS["o200k"] == openai_public.o200k_base()["pat_str"]
    assert bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="o200k").pattern \
        == bytepair.O200K_PATTERN


@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
@pytest.mark.parametrize(
    "context",
    ["{c}'s", *(pytest.param(c, marks=pytest.mark.slow)
                for c in ["a{c}b", " {c}1", "{c}  \r\n"])],
)
def test_preset_equals_regex_package_on_every_code_point(preset: str, context: str) -> None:
    newer = newer_chars()
    chars = [c for c in ALL_CHARS if c not in newer]
    texts = [context.format(c=c) for c in chars]
    oracle = regex.compile(PRESETS[preset])
    got = _bytepair_many(preset)(texts)
    bad = [c for c, t, pieces in zip(chars, texts, got, strict=True)
           if oracle.findall(t) != pieces]
    assert not bad, f"{len(bad)} code points differ, e.g. {[f'U+{ord(c):04X}' for c in bad[:10]]}"


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
    texts = random_strings(seed=21, n=20_000)
    expected = enc.encode_ordinary_batch(texts, num_threads=2)
    got = tok.encode_ordinary_batch(texts, num_threads=2)
    bad = [t for t, a, b in zip(texts, got, expected, strict=True) if a != b]
    assert not bad, f"{len(bad)} of {len(texts)} differ from tiktoken: {bad[:5]!r}"


@given(st.lists(st.one_of([st.sampled_from(pool) for pool in pools().values()]), max_size=16))
def test_fuzz_preset_hypothesis(with_tiktoken, pieces: list[str]) -> None:
    tok, enc = with_tiktoken
    text = "".join(pieces)
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
