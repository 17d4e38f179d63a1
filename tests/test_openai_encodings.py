"""OpenAI's `cl100k_base` and `o200k_base` as bytepair tokenizers: the ids themselves equal
tiktoken's, on hypothesis texts of every script and on whole corpora (docs/spec.md §2).

Both sides read the same files (tiktoken's, offline from the test extra: see `testdata.py`);
bytepair turns the ranks into merges and encodes with its own scanners and merge loop.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_unicode import assert_batch_equals_tiktoken, pools, random_strings

import bytepair
from bytepair import load
from bytepair.sample import write_sample_corpus

#: tiktoken's name → bytepair's preset name.
PRESET = {"cl100k_base": "cl100k", "o200k_base": "o200k"}

#: Pieces where the GPT-4 patterns differ from GPT-2's: contractions in any case, digit runs cut
#: in threes, punctuation taking `/` and newlines, case changes inside words (o200k).
GPT4_PIECES = [
    "'s", "'S", "'Re", "'LL", "'d", "1", "12", "1234567", " 12", "a1", "..\n", "/", "//\n",
    "\r\n", "\n\n\t", "  ", " \n ", "HTTPServer", "camelCase", "ÀÉ", "éÀ", "ǅa", "<|endoftext|>",
    "<|fim_prefix|>", "<|endofprompt|>", "<|endoftext", "x", " the", "中文", "ภาษาไทย", "😀",
]  # fmt: skip
texts = st.lists(
    st.one_of([st.sampled_from(GPT4_PIECES), *[st.sampled_from(p) for p in pools().values()]]),
    max_size=24,
).map("".join)


@functools.cache
def _bytepair(name: str) -> bytepair.Tokenizer:
    return load(PRESET[name])


@pytest.fixture(scope="module")
def pair(tiktoken_gpt4) -> tuple[bytepair.Tokenizer, object]:
    """bytepair's tokenizer of the encoding beside tiktoken's own."""
    return _bytepair(tiktoken_gpt4.name), tiktoken_gpt4


def test_vocabulary_and_specials_equal_tiktoken(pair) -> None:
    tok, enc = pair
    assert tok.n_vocab == enc.n_vocab
    assert tok.special_tokens_set == enc.special_tokens_set
    for token in sorted(enc.special_tokens_set):
        assert tok.encode_single_token(token) == enc.encode_single_token(token)
    for i in range(0, 100_000, 997):
        assert tok.decode_single_token_bytes(i) == enc.decode_single_token_bytes(i)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_hypothesis_ids_equal_tiktoken(pair, text: str) -> None:
    tok, enc = pair
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


def test_random_strings_ids_equal_tiktoken(pair) -> None:
    tok, enc = pair
    assert_batch_equals_tiktoken(tok, enc, random_strings(seed=31, n=20_000))


def _corpora(cs336_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Whole corpora: the CS336 texts, the standard library's docstrings (English and code),
    and every script at once (random strings, joined)."""
    sample = tmp_path_factory.getbasetemp() / "sample.txt"
    if not sample.exists():
        write_sample_corpus(sample)
    read = {n: (cs336_data / n).read_text(encoding="utf-8") for n in ["corpus.en", "german.txt"]}
    return {
        **read,
        "tinystories": (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8"),
        "stdlib docstrings": sample.read_text(encoding="utf-8"),
        "every script": "".join(random_strings(seed=37, n=30_000)),
    }


def test_whole_corpora_ids_equal_tiktoken(pair, cs336_data, tmp_path_factory) -> None:
    tok, enc = pair
    for name, text in _corpora(cs336_data, tmp_path_factory).items():
        expected = enc.encode(text, allowed_special="all")
        got = tok.encode(text, allowed_special="all")
        if got != expected:
            at = next(i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b)
            pytest.fail(f"{name}: ids differ from tiktoken's at token {at} of {len(expected)}")
        docs = text.split("<|endoftext|>")
        flat = tok.encode_batch_to_numpy(docs, num_threads=2)[0]
        assert np.array_equal(
            flat,
            np.concatenate(
                [np.asarray(ids, dtype=flat.dtype) for ids in enc.encode_ordinary_batch(docs)]
            ),
        ), name
