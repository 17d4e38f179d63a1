"""Superword training (docs/spec.md §1.9) against the oracle (`tests/reference.py`) on generated
corpora: merges, vocabulary and pattern through `train_from_iterator` and `train`, on 1 and 2
threads; the rules of the second stage; encoding, and HF `tokenizers` loading the saved
`tokenizer.json`; bad options.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_train import DIFF_SETTINGS, MAX_EXAMPLES

import bytepair
import reference as ref
from bytepair import train, train_from_iterator
from bytepair.patterns import CL100K_PATTERN, GPT2_SUPERWORD_PATTERN, GPT4_SUPERWORD_PATTERN

SPECIAL = "<|endoftext|>"
# Words, spaces, newlines, numbers, colons (": " is refused by default), punctuation and a few
# scripts, so that stage two has lines of several words to merge across.
PIECES = [
    "the",
    " the",
    " of",
    " cat",
    "a",
    " a",
    "ab",
    " ",
    "  ",
    "\n",
    "\n\n",
    " \n",
    ":",
    ": ",
    "1",
    "12",
    " 345",
    "2024",
    ",",
    ".",
    "!",
    "'s",
    "é",
    " été",
    "中文",
    " Привет",
    "ไทย",
    "\t",
]
# Small alphabets: many ties, and lines of few distinct words.
ALPHABETS = ["ab ", "ab \n", "a: b\n", "ab 1 ", "aé中 "]
SPECIAL_SETS = [[], [SPECIAL], [SPECIAL, "<s>"]]


def _quietly(run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(*args, **kwargs)


@st.composite
def texts_of(draw: st.DrawFn, pieces: list[str], max_size: int = 40) -> str:
    return "".join(draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=max_size)))


@st.composite
def setups(draw: st.DrawFn) -> dict[str, Any]:
    """Documents, special tokens, a vocabulary size, a transition point and the options."""
    specials = draw(st.sampled_from(SPECIAL_SETS))
    pieces = draw(st.sampled_from([PIECES, *map(list, ALPHABETS)])) + specials
    docs = draw(st.lists(texts_of(pieces), min_size=1, max_size=3))
    num_merges = draw(st.integers(0, 48))
    start = draw(
        st.one_of(
            st.just(0),
            st.integers(1, 6),
            st.just(num_merges // 2),
            st.integers(num_merges, num_merges + 3),
        )
    )
    options = {
        "max_words": draw(st.sampled_from([4, 4, 1, 2, None])),
        "colon_space": draw(st.booleans()),
        "min_frequency": draw(st.sampled_from([1, 1, 1, 2])),
        "max_token_length": draw(st.sampled_from([None, None, None, 3, 8])),
    }
    gpt4 = draw(st.integers(0, 4)) == 0
    return {
        "docs": docs,
        "held_out": draw(st.lists(texts_of(pieces, 60), min_size=1, max_size=3)),
        "specials": specials,
        "vocab_size": 256 + len(specials) + num_merges,
        "start": start,
        "pattern": CL100K_PATTERN if gpt4 else ref.GPT2_PATTERN,
        "options": options,
    }


def _oracle(setup: dict[str, Any]) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], str]:
    gpt4 = setup["pattern"] == CL100K_PATTERN
    return ref.train_superword(
        setup["docs"],
        setup["vocab_size"],
        setup["specials"],
        setup["start"],
        setup["pattern"],
        superword_pattern=ref.GPT4_SUPERWORD_PATTERN if gpt4 else None,
        **setup["options"],
    )


def _kwargs(setup: dict[str, Any]) -> dict[str, Any]:
    """bytepair's names for the setup's options."""
    options = setup["options"]
    return {
        "pattern": setup["pattern"],
        "superword_from": setup["start"],
        "superword_max_words": options["max_words"],
        "superword_colon_space": options["colon_space"],
        "min_frequency": options["min_frequency"],
        "max_token_length": options["max_token_length"],
    }


def _runs(setup: dict[str, Any], folder: Path) -> Iterator[tuple[str, bytepair.Tokenizer]]:
    docs, size, specials = setup["docs"], setup["vocab_size"], setup["specials"]
    paths = []
    for i, doc in enumerate(docs):
        paths.append(folder / f"doc{i}.txt")
        paths[-1].write_bytes(doc.encode("utf-8"))
    for n in (1, 2):
        yield (
            f"iterator threads={n}",
            _quietly(train_from_iterator, docs, size, specials, num_threads=n, **_kwargs(setup)),
        )
        yield (
            f"train threads={n}",
            _quietly(train, paths, size, specials, num_threads=n, progress=False, **_kwargs(setup)),
        )


SETUP_EXAMPLES = [
    {
        "docs": ["the cat: the cat of the cat\n the cat of the 12\n" * 3],
        "held_out": ["the cat of the cat: 2024\n", "a the cat of the cat of the cat"],
        "specials": [],
        "vocab_size": 300,
        "start": 5,
        "pattern": ref.GPT2_PATTERN,
        "options": {
            "max_words": 4,
            "colon_space": False,
            "min_frequency": 1,
            "max_token_length": None,
        },
    },
    {
        "docs": ["ab ab ab<|endoftext|>ab ab: ab\n", "ab ab 1 ab"],
        "held_out": ["ab ab ab: ab ab<|endoftext|> 1 ab ab"],
        "specials": [SPECIAL],
        "vocab_size": 300,
        "start": 0,
        "pattern": ref.GPT2_PATTERN,
        "options": {
            "max_words": None,
            "colon_space": True,
            "min_frequency": 1,
            "max_token_length": None,
        },
    },
    {
        "docs": ["a a a a a a a a\n"],
        "held_out": ["a a a a a a a a a a\n\n a"],
        "specials": [],
        "vocab_size": 290,
        "start": 1,
        "pattern": ref.GPT2_PATTERN,
        "options": {
            "max_words": 1,
            "colon_space": False,
            "min_frequency": 1,
            "max_token_length": None,
        },
    },
]


def _with_examples(test: Callable[..., None]) -> Callable[..., None]:
    for setup in SETUP_EXAMPLES:
        test = example(setup=setup)(test)
    return test


# --- against the oracle -------------------------------------------------------------------------


def test_oracle_patterns_are_bytepairs() -> None:
    assert ref.GPT2_SUPERWORD_PATTERN == GPT2_SUPERWORD_PATTERN
    assert ref.GPT4_SUPERWORD_PATTERN == GPT4_SUPERWORD_PATTERN
    assert ref.GPT2_PATTERN == bytepair.GPT2_PATTERN


def _check_against_oracle(setup: dict[str, Any], folder: Path) -> None:
    vocab, merges, pattern = _oracle(setup)
    for name, tok in _runs(setup, folder):
        assert tok.merges == merges, name
        assert tok.vocab == vocab, name
        assert tok.pattern == pattern, name


@settings(max_examples=max(10, MAX_EXAMPLES // 2), **DIFF_SETTINGS)
@given(setup=setups())
@_with_examples
def test_superword_training_matches_oracle(tmp_path: Path, setup: dict[str, Any]) -> None:
    _check_against_oracle(setup, tmp_path)


@pytest.mark.slow
@settings(max_examples=2 * MAX_EXAMPLES, **DIFF_SETTINGS)
@given(setup=setups())
def test_superword_training_matches_oracle_many(tmp_path: Path, setup: dict[str, Any]) -> None:
    _check_against_oracle(setup, tmp_path)


@settings(max_examples=max(10, MAX_EXAMPLES // 4), **DIFF_SETTINGS)
@given(setup=setups())
@_with_examples
def test_stage_two_keeps_the_rules_and_encodes_as_oracle(setup: dict[str, Any]) -> None:
    docs, size, specials = setup["docs"], setup["vocab_size"], setup["specials"]
    tok = _quietly(train_from_iterator, docs, size, specials, **_kwargs(setup))
    vocab, merges, pattern = _oracle(setup)
    # The first stage's merges are those of plain training up to the transition point.
    first_size = min(size, 256 + len(specials) + setup["start"])
    plain = _oracle({**setup, "vocab_size": first_size})[1]
    assert tok.merges[: len(plain)] == plain
    options = setup["options"]
    for i in range(len(plain), len(tok.merges)):
        left, right = tok.merges[i]
        assert ref.superword_allows(
            left + right, tok.merges[:i], options["max_words"], options["colon_space"]
        ), (i, left + right)
    ordinary = [t for i, t in tok.vocab.items() if i not in tok.special_tokens.values()]
    assert len(set(ordinary)) == len(ordinary)
    for text in setup["held_out"]:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert ids == ref.encode(text, vocab, merges, specials, pattern)


@settings(max_examples=max(10, MAX_EXAMPLES // 4), **DIFF_SETTINGS)
@given(setup=setups(), extra=st.integers(0, 3))
def test_transition_at_or_past_the_end_is_plain_training(setup: dict[str, Any], extra: int) -> None:
    docs, size, specials = setup["docs"], setup["vocab_size"], setup["specials"]
    num_merges = size - 256 - len(specials)
    kwargs = {**_kwargs(setup), "superword_from": num_merges + extra}
    tok = _quietly(train_from_iterator, docs, size, specials, **kwargs)
    shaping = {key: kwargs[key] for key in ("pattern", "min_frequency", "max_token_length")}
    plain = _quietly(train_from_iterator, docs, size, specials, **shaping)
    assert tok.merges == plain.merges
    assert tok.vocab == plain.vocab
    assert tok.pattern == plain.pattern == setup["pattern"]


@settings(max_examples=max(10, MAX_EXAMPLES // 8), **DIFF_SETTINGS)
@given(setup=setups())
@_with_examples
def test_saved_tokenizer_json_gives_the_same_ids_in_hf(
    tmp_path: Path, setup: dict[str, Any]
) -> None:
    import tokenizers

    docs, size, specials = setup["docs"], setup["vocab_size"], setup["specials"]
    tok = _quietly(train_from_iterator, docs, size, specials, **_kwargs(setup))
    tok.save(tmp_path, formats=["hf", "bytepair"])
    doc = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    split = doc["pre_tokenizer"]["pretokenizers"][0]
    assert split["type"] == "Split" and split["behavior"] == "Isolated"
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    loaded = bytepair.load(tmp_path / "bytepair.model")
    assert (loaded.merges, loaded.vocab, loaded.pattern) == (tok.merges, tok.vocab, tok.pattern)
    for text in setup["held_out"] + docs:
        ids = tok.encode(text)
        assert hf.encode(text, add_special_tokens=False).ids == ids, text
        assert loaded.encode(text) == ids


def test_superword_tokens_span_words() -> None:
    text = "the cat sat on the mat: the end\n" * 20
    tok = _quietly(train_from_iterator, [text], 300, superword_from=10)
    made = [a + b for a, b in tok.merges[10:]]
    assert b"the cat sat on" in made  # four words
    assert not any(len([w for w in t.split(b" ") if w]) > 4 for t in made)
    assert not any(b": " in t for t in made)
    assert tok.pattern == GPT2_SUPERWORD_PATTERN
    assert tok.encode(text) == ref.encode(text, tok.vocab, tok.merges, [], GPT2_SUPERWORD_PATTERN)
    gpt4 = _quietly(train_from_iterator, [text], 300, pattern="cl100k", superword_from=10)
    assert gpt4.pattern == GPT4_SUPERWORD_PATTERN


# --- bad options --------------------------------------------------------------------------------


TEXTS = ["the cat sat on the mat\n", "a cat: 12\n"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"superword_from": -1}, ValueError, "superword_from"),
        ({"superword_from": True}, ValueError, "superword_from"),
        ({"superword_from": 1.5}, ValueError, "superword_from"),
        ({"superword_from": 2, "superword_max_words": 0}, ValueError, "superword_max_words"),
        ({"superword_from": 2, "superword_max_words": -3}, ValueError, "superword_max_words"),
        ({"superword_from": 2, "superword_colon_space": 1}, ValueError, "superword_colon_space"),
        ({"superword_from": 2, "pattern": r"\S+|\s"}, ValueError, "superword_pattern"),
        ({"superword_pattern": r"[^\n]+"}, ValueError, "superword_from"),
    ],
)
def test_bad_options_are_refused(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        train_from_iterator(TEXTS, 300, **kwargs)
    path = tmp_path / "corpus.txt"
    path.write_text("".join(TEXTS), encoding="utf-8")
    with pytest.raises(error, match=match):
        train(path, 300, progress=False, **kwargs)


def test_custom_first_pattern_with_second_pattern_matches_oracle() -> None:
    first, second = r"\S+|\s", r"[^\n]+\n?|\n"
    text = "the cat sat\non the mat\nthe cat sat on\n" * 3
    tok = _quietly(
        train_from_iterator, [text], 290, pattern=first, superword_from=8, superword_pattern=second
    )
    vocab, merges, pattern = ref.train_superword(text, 290, [], 8, first, superword_pattern=second)
    assert (tok.merges, tok.vocab, tok.pattern) == (merges, vocab, pattern)


def test_superword_cannot_continue_from_a_tokenizer() -> None:
    base = train_from_iterator(TEXTS, 270)
    with pytest.raises(ValueError, match="continue"):
        train_from_iterator(TEXTS, 300, continue_from=base, superword_from=5)


def test_superword_needs_texts_it_can_read_twice() -> None:
    with pytest.raises(TypeError, match="twice"):
        train_from_iterator((t for t in TEXTS), 300, superword_from=5)
    with pytest.raises(TypeError, match="twice"):
        train_from_iterator(iter(TEXTS), 300, superword_from=5)
    # Without superword training an iterator is fine; a tuple is read twice.
    assert train_from_iterator((t for t in TEXTS), 270).merges
    assert train_from_iterator(tuple(TEXTS), 270, superword_from=5).merges


# --- the command line ------------------------------------------------------------------------


def test_cli_trains_superwords_and_writes_every_format_but_tiktoken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bytepair.cli import main as cli_main

    corpus = tmp_path / "corpus.txt"
    words = ["the", "cat", "sat", "on", "a", "mat", "hat", "of", "and", "dog"]
    lines = [" ".join(words[(i * k) % 10] for k in range(1, 6)) + ".\n" for i in range(40)]
    corpus.write_text("".join(lines) * 3, encoding="utf-8")
    out = tmp_path / "tok"
    args = ["train", str(corpus), "--vocab-size", "290", "--superword-from", "20"]
    assert cli_main([*args, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "superwords from merge 20" in captured.out + captured.err
    assert not (out / "tokenizer.tiktoken").exists() and (out / "tokenizer.json").exists()
    tok = bytepair.load(out)
    assert tok.pattern == GPT2_SUPERWORD_PATTERN
    assert any(b" " in a + b and (a + b).strip(b" ").count(b" ") for a, b in tok.merges)
    expected = train(corpus, 290, progress=False, superword_from=20)
    assert (tok.merges, tok.vocab) == (expected.merges, expected.vocab)
    # A format that cannot hold it, and options the second stage cannot run with: one line.
    refused = [
        ["--formats", "tiktoken"],
        ["--save-at", "280"],
        ["--ray", "auto"],
    ]
    for extra in refused:
        assert cli_main([*args, "--quiet", *extra, "-o", str(tmp_path / "no")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("bytepair: error:") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "no").exists()
