"""Vocabulary shaping (docs/spec.md §1.8): `min_frequency` and `max_token_length` against the
oracle (`tests/reference.py`) on generated corpora, with the reason the loop ended; padding with
reserved special tokens; continued runs; bad values through the API and the CLI; save and load.
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_train import DIFF_SETTINGS, MAX_EXAMPLES

import bytepair
import reference as ref
from bytepair import WordCounts, count_texts, train, train_from_counts, train_from_iterator
from bytepair.cli import main as cli_main
from bytepair.train import train_from_counts_with_report
from bytepair.train.shaping import reserved_tokens
from bytepair.train.sizes import shrink

SPECIAL = "<|endoftext|>"
WORKED = {b"low": 5, b"lower": 2, b"widest": 3, b"newest": 6}
# Multi-byte UTF-8 (2, 3 and 4 bytes a character) and repeats, so that ties and long tokens come up.
ALPHABETS = ["ab ", "aab \n", "aé中🙃 \n", "xy'sld 1\n", "éé中 "]
RUNS = ["aaaa", "abab", "中中", "🙃🙃", "éé", "  "]


def _quietly(run: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(*args, **kwargs)
    return out, [str(w.message) for w in caught]


@st.composite
def corpora(draw: st.DrawFn) -> tuple[str, list[str], int]:
    alphabet = draw(st.sampled_from(ALPHABETS))
    specials = draw(st.sampled_from([[], [SPECIAL], ["<|reserved_0|>", SPECIAL]]))
    pieces = list(alphabet) + RUNS + specials
    text = "".join(draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=60)))
    return text, specials, 256 + len(specials) + draw(st.integers(0, 40))


shaping_options = st.fixed_dictionaries(
    {
        "min_frequency": st.integers(1, 6),
        "max_token_length": st.none() | st.integers(1, 9),
        "pad_vocab_to_multiple": st.none() | st.sampled_from([1, 2, 7, 64, 256]),
    }
)


def _expected_stop(
    words: dict[bytes, int], merges: list[tuple[bytes, bytes]], num_merges: int, options: Any
) -> str:
    """Why the oracle's run ended: the pairs left after its merges, as docs/spec.md §1.8 says."""
    if len(merges) == num_merges:
        return "full"
    counts: Counter[tuple[bytes, bytes]] = Counter()
    for word, n in words.items():
        tokens = tuple(bytes([b]) for b in word)
        for pair in merges:
            tokens = ref._merge_pair(tokens, pair)
        for pair in itertools.pairwise(tokens):
            counts[pair] += n
    limit = options["max_token_length"] or 2**63
    allowed = [n for (a, b), n in counts.items() if len(a) + len(b) <= limit and n > 0]
    if allowed:
        assert max(allowed) < options["min_frequency"]
        return "min frequency"
    return "max token length" if any(counts.values()) else "no pair"


@settings(max_examples=max(10, MAX_EXAMPLES // 2), **DIFF_SETTINGS)
@given(corpus=corpora(), options=shaping_options)
@example(
    corpus=("aaab aaab ab", [], 262),
    options={"min_frequency": 2, "max_token_length": None, "pad_vocab_to_multiple": None},
)
@example(
    corpus=("ab ba ab ba 中中", [], 270),
    options={"min_frequency": 1, "max_token_length": 2, "pad_vocab_to_multiple": 4},
)
def test_options_match_oracle(corpus: tuple[str, list[str], int], options: Any) -> None:
    text, specials, vocab_size = corpus
    if options["pad_vocab_to_multiple"] and options["pad_vocab_to_multiple"] > vocab_size:
        options["pad_vocab_to_multiple"] = None
    vocab, merges = ref.train(text, vocab_size, specials, **options)
    tok, _ = _quietly(train_from_iterator, [text], vocab_size, specials, num_threads=2, **options)
    assert tok.merges == merges
    assert tok.vocab == vocab
    counts = count_texts([text], special_tokens=specials)
    tok, report = _quietly(
        train_from_counts_with_report, counts, vocab_size, specials, num_threads=1, **options
    )[0]
    assert tok.vocab == vocab
    num_merges = vocab_size - 256 - len(specials)
    assert report.stop == _expected_stop(dict(counts.items()), merges, num_merges, options)


@settings(max_examples=max(10, MAX_EXAMPLES // 2), **DIFF_SETTINGS)
@given(
    table=st.dictionaries(st.binary(min_size=1, max_size=12), st.integers(0, 9), max_size=12),
    extra=st.integers(0, 40),
    options=shaping_options,
)
def test_options_on_counts_match_oracle(table: dict[bytes, int], extra: int, options: Any) -> None:
    # Small counts over arbitrary bytes: many ties, and tokens that are not UTF-8.
    options["pad_vocab_to_multiple"] = None if extra < 10 else options["pad_vocab_to_multiple"]
    vocab, merges = ref.train_from_counts(table, 256 + extra, [], **options)
    tok, _ = _quietly(train_from_counts, WordCounts(list(table.items())), 256 + extra, **options)
    assert tok.merges == merges
    assert tok.vocab == vocab


# --- min_frequency and max_token_length --------------------------------------------------------


@pytest.mark.parametrize(("least", "n_merges"), [(1, 12), (7, 4), (9, 2), (10, 0)])
def test_min_frequency_stops_at_the_first_rarer_pair(least: int, n_merges: int) -> None:
    # The worked example's merges are seen 9, 9, 7, 7, 6, ... times.
    full = train_from_counts(WordCounts(list(WORKED.items())), 268)
    tok, report = _quietly(
        train_from_counts_with_report, WordCounts(list(WORKED.items())), 268, min_frequency=least
    )[0]
    assert tok.merges == full.merges[:n_merges]
    assert report.stop == ("full" if least == 1 else "min frequency")
    if least > 1:
        line = f"stopped at {n_merges} merges: no pair is seen at least {least} times"
        assert f"{line} (--min-frequency)" in report.summary()


def test_max_token_length_skips_long_merges_and_takes_the_next() -> None:
    tok, messages = _quietly(
        train_from_counts, WordCounts(list(WORKED.items())), 268, max_token_length=3
    )
    merged = [a + b for a, b in tok.merges]
    # "west" (4 bytes, 9 times) is skipped for good; "ne" + "w" takes its place.
    assert merged == [b"st", b"est", b"ow", b"low", b"ne", b"new", b"wi", b"wid", b"er"]
    assert any("longer than 3 bytes" in m for m in messages)


def test_max_token_length_1_makes_no_merge() -> None:
    with pytest.warns(
        UserWarning,
        match="stopped after 0 of 44 merges: every pair left would "
        "make a token longer than 1 byte;",
    ):
        tok = train_from_iterator(["hello hello"], 300, max_token_length=1)
    assert tok.merges == [] and len(tok.vocab) == 256


# --- padding -------------------------------------------------------------------------------------


def test_padding_300_to_a_multiple_of_64(cs336_data: Path) -> None:
    path = cs336_data / "corpus.en"
    plain = train(path, 300, [SPECIAL], progress=False)
    tok = train(path, 300, [SPECIAL], progress=False, pad_vocab_to_multiple=64)
    assert len(tok.vocab) == 320
    assert tok.merges == plain.merges
    reserved = {f"<|reserved_{i}|>": 300 + i for i in range(20)}
    assert tok.special_tokens == {SPECIAL: 299, **reserved}
    assert tok.vocab == plain.vocab | {i: t.encode() for t, i in reserved.items()}


def test_padding_skips_names_that_are_special_tokens() -> None:
    specials = [SPECIAL, "<|reserved_1|>"]
    tok = train_from_iterator(["ab ab ab"], 258, specials, pad_vocab_to_multiple=4)
    # 256 bytes and 2 special tokens (no room for a merge): 2 reserved tokens, not <|reserved_1|>.
    assert list(tok.special_tokens) == [*specials, "<|reserved_0|>", "<|reserved_2|>"]
    assert len(tok.vocab) == 260
    tok = train_from_iterator(["ab ab ab"], 258, ["<|reserved_0|>"], pad_vocab_to_multiple=8)
    assert list(tok.special_tokens)[1:] == [f"<|reserved_{i}|>" for i in range(1, 7)]
    assert len(tok.vocab) == 264


def test_padding_nanogpt_sizes() -> None:
    assert len(reserved_tokens(50_257, [SPECIAL], 64)) == 47  # GPT-2's 50,257 to 50,304
    assert reserved_tokens(50_304, [SPECIAL], 64) == []
    assert reserved_tokens(300, [], None) == [] and reserved_tokens(301, [], 1) == []


def test_padding_counts_the_vocabulary_made_when_training_ends_early() -> None:
    tok, messages = _quietly(
        train_from_iterator, ["ab ab"], 300, [SPECIAL], pad_vocab_to_multiple=8
    )
    assert len(tok.merges) == 2 and len(tok.vocab) == 264  # 259 made, padded to 264, not 304
    assert any("stopped after 2 of 43" in m for m in messages)


def test_reserved_tokens_round_trip_as_special_tokens(tmp_path: Path) -> None:
    tok, _ = _quietly(
        train_from_iterator, ["low lower newest"], 270, [SPECIAL], pad_vocab_to_multiple=16
    )
    tok.save(tmp_path / "tok")
    back = bytepair.load(tmp_path / "tok")
    assert back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
    text = f"low<|reserved_3|>{SPECIAL}"
    assert back.encode(text) == tok.encode(text)
    assert tok.special_tokens["<|reserved_3|>"] in tok.encode(text)


# --- continued runs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [{"min_frequency": 3}, {"max_token_length": 4}, {"min_frequency": 2, "max_token_length": 6}],
)
def test_continuing_a_cut_run_gives_the_run(cs336_data: Path, options: dict[str, int]) -> None:
    path = cs336_data / "corpus.en"
    full, _ = _quietly(train, path, 700, progress=False, **options)
    for size in (300, 500):
        more, _ = _quietly(
            train, path, 700, progress=False, continue_from=shrink(full, size), **options
        )
        assert more.merges == full.merges and more.vocab == full.vocab


def test_options_apply_to_new_merges_only(tmp_path: Path) -> None:
    base = train_from_iterator(["newest newest widest"], 262, [SPECIAL], pad_vocab_to_multiple=8)
    assert max(len(t) for t in base.vocab.values() if t != SPECIAL.encode()) > 2
    more, messages = _quietly(
        train_from_iterator,
        ["newest newest widest lower"],
        280,
        continue_from=base,
        max_token_length=2,
        pad_vocab_to_multiple=8,
    )
    assert any("longer than 2 bytes" in m for m in messages)
    assert {i: more.vocab[i] for i in base.vocab} == base.vocab  # the base's ids never move
    assert more.merges[: len(base.merges)] == base.merges
    assert all(len(a + b) <= 2 for a, b in more.merges[len(base.merges) :])
    assert len(more.vocab) % 8 == 0
    new_reserved = [t for t in more.special_tokens if t not in base.special_tokens]
    assert new_reserved and new_reserved[0] == f"<|reserved_{len(base.special_tokens) - 1}|>"


# --- bad values ----------------------------------------------------------------------------------

BAD = [
    ("min_frequency", 0),
    ("min_frequency", -2),
    ("min_frequency", True),
    ("min_frequency", 2.0),
    ("min_frequency", None),
    ("min_frequency", 2**64),
    ("max_token_length", 0),
    ("max_token_length", -1),
    ("max_token_length", "8"),
    ("pad_vocab_to_multiple", 0),
    ("pad_vocab_to_multiple", -64),
    ("pad_vocab_to_multiple", False),
    ("pad_vocab_to_multiple", 301),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_bad_values_are_refused_before_training(tmp_path: Path, name: str, value: object) -> None:
    path = tmp_path / "t.txt"
    path.write_text("ab ab")
    runs: list[Callable[[], object]] = [
        lambda: train(path, 300, **{name: value}),
        lambda: train_from_iterator(iter(["ab"]), 300, **{name: value}),
        lambda: train_from_counts(WordCounts([(b"ab", 1)]), 300, **{name: value}),
    ]
    for run in runs:
        with pytest.raises(ValueError, match=name):
            run()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--min-frequency", "0"], "min_frequency must be a positive integer"),
        (["--max-token-length", "-1"], "max_token_length must be a positive integer"),
        (["--pad-vocab-to-multiple", "0"], "pad_vocab_to_multiple must be a positive integer"),
        (["--pad-vocab-to-multiple", "512"], "choose a multiple smaller than the vocabulary"),
    ],
)
def test_cli_bad_values_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "t.txt").write_text("ab ab")
    argv = ["train", str(tmp_path / "t.txt"), "--vocab-size", "300", "-o", str(tmp_path / "o")]
    assert cli_main([*argv, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bytepair: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit) as exit_:  # not an integer: argparse's own message
        cli_main([*argv, "--min-frequency", "x"])
    assert exit_.value.code == 2


# --- the command line ----------------------------------------------------------------------------


def test_cli_options_text_counts_and_save_at(
    cs336_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cs336_data / "corpus.en"
    options = ["--min-frequency", "40", "--max-token-length", "6", "--pad-vocab-to-multiple", "64"]
    kwargs = {"min_frequency": 40, "max_token_length": 6, "pad_vocab_to_multiple": 64}
    common = ["--vocab-size", "1000", "--special-token", SPECIAL, *options]
    out = tmp_path / "text"
    assert cli_main(["train", str(path), *common, "--save-at", "300", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    expected, _ = _quietly(train, path, 1000, [SPECIAL], progress=False, **kwargs)
    assert "no pair is seen at least 40 times (--min-frequency)" in err
    assert "reserved special tokens (a multiple of 64)" in err
    tok = bytepair.load(out)
    assert tok.vocab == expected.vocab and len(tok.vocab) % 64 == 0
    small = bytepair.load(out / "300")  # as a separate run at 300 would give: 300 padded to 320
    assert small.vocab == train(path, 300, [SPECIAL], progress=False, **kwargs).vocab
    bpc = tmp_path / "c.bpc"
    assert cli_main(["count", str(path), "--special-token", SPECIAL, "-o", str(bpc)]) == 0
    argv = ["train", "--from-counts", str(bpc), *common, "-o", str(tmp_path / "counts")]
    assert cli_main(argv) == 0
    assert bytepair.load(tmp_path / "counts").vocab == expected.vocab
