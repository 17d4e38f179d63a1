"""Training against the oracle (`tests/reference.py`) and the CS336 reference data, determinism
across threads, chunk sizes and file splits, the merge stage on its own (`train_from_counts`), and
bad input through the API and the CLI (clear message, exit status 2, no traceback).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import bytepair
import reference as ref
from bytepair import (
    Tokenizer,
    WordCounts,
    count_files,
    count_texts,
    train,
    train_bpe,
    train_from_counts,
    train_from_iterator,
)
from bytepair.cli import main as cli_main
from bytepair.formats._common import decode_token
from unicode_diff import same_text

SPECIAL = "<|endoftext|>"
MAX_EXAMPLES = settings.default.max_examples
DIFF_SETTINGS = dict(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
STOPPED_EARLY = "stopped after"


def _bytes_vocab() -> dict[int, bytes]:
    return {i: bytes([i]) for i in range(256)}


def _read_reference_merges(path: Path) -> list[tuple[bytes, bytes]]:
    merges = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#version"):
            continue
        left, right = line.split(" ")
        where = f"{path}:{lineno}"
        merges.append((decode_token(left, where), decode_token(right, where)))
    return merges


def _read_reference_vocab(path: Path) -> set[bytes]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {decode_token(token, str(path)) for token in raw}


def _quietly(fn, *args, **kwargs):
    """Calls fn with warnings recorded; returns (result, list of warning messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return result, [str(w.message) for w in caught]


def run_cli(*args: object, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bytepair.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )


# --- CS336 reference data -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_result(cs336_data: Path) -> tuple[list[tuple[bytes, bytes]], set[bytes]]:
    merges = _read_reference_merges(cs336_data / "train-bpe-reference-merges.txt")
    vocab = _read_reference_vocab(cs336_data / "train-bpe-reference-vocab.json")
    assert len(merges) == 500 - 256 - 1 and len(vocab) == 500
    return merges, vocab


def test_corpus_en_train_bpe(cs336_data: Path, reference_result) -> None:
    vocab, merges = train_bpe(cs336_data / "corpus.en", 500, [SPECIAL])
    assert merges == reference_result[0]
    assert set(vocab.values()) == reference_result[1]
    assert sorted(vocab) == list(range(500))
    assert vocab[499] == SPECIAL.encode()


@pytest.mark.parametrize(("num_threads", "chunk_size"), [(1, 1), (2, 97), (2, 1 << 22)])
def test_corpus_en_train(
    cs336_data: Path, reference_result, num_threads: int, chunk_size: int
) -> None:
    tok = train(
        cs336_data / "corpus.en",
        500,
        [SPECIAL],
        num_threads=num_threads,
        chunk_size=chunk_size,
        progress=False,
    )
    assert tok.merges == reference_result[0]
    assert set(tok.vocab.values()) == reference_result[1]
    assert tok.special_tokens == {SPECIAL: 499}


def test_corpus_en_cli_files(
    cs336_data: Path, reference_result, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    status = cli_main(
        [
            "train",
            str(cs336_data / "corpus.en"),
            "--vocab-size",
            "500",
            "--special-token",
            SPECIAL,
            "-o",
            str(out),
            "--quiet",
        ]
    )
    assert status == 0
    assert capsys.readouterr().err == ""
    # The files themselves, read with the test's own decoder...
    assert _read_reference_merges(out / "merges.txt") == reference_result[0]
    assert _read_reference_vocab(out / "vocab.json") == reference_result[1]
    # ...and through the library's two readers.
    from_files = Tokenizer.from_files(out / "vocab.json", out / "merges.txt", [SPECIAL])
    loaded = bytepair.load(out)
    for tok in (from_files, loaded):
        assert tok.merges == reference_result[0]
        assert set(tok.vocab.values()) == reference_result[1]
        assert tok.special_tokens == {SPECIAL: 499}


def test_corpus_en_matches_oracle_ids(cs336_data: Path) -> None:
    text = (cs336_data / "corpus.en").read_text(encoding="utf-8")
    expected_vocab, expected_merges = ref.train(text, 400, [SPECIAL])
    tok = train_from_iterator([text], 400, [SPECIAL])
    assert tok.merges == expected_merges
    assert tok.vocab == expected_vocab


# --- the worked example of docs/spec.md §1 --------------------------------------------------------

WORKED = (
    "low low low low low lower lower widest widest widest newest newest newest newest newest newest"
)
WORKED_MERGES = [
    "s t",
    "e st",
    "o w",
    "l ow",
    "w est",
    "n e",
    "ne west",
    "w i",
    "wi d",
    "wid est",
    "low e",
    "lowe r",
]


def test_spec_worked_example(tmp_path: Path) -> None:
    expected = [tuple(m.encode().split(b" ")) for m in WORKED_MERGES]
    tok = train_from_iterator([WORKED], 256 + len(expected), [], pattern=r"\S+")
    assert tok.merges == expected
    assert tok.vocab[256 + len(expected) - 1] == b"lower"
    path = tmp_path / "worked.txt"
    path.write_text(WORKED)
    assert train(path, 256 + len(expected), [], pattern=r"\S+", progress=False).merges == expected
    assert ref.train(WORKED, 256 + len(expected), [], pattern=r"\S+")[1] == expected


def test_train_from_iterator_docstring_example() -> None:
    assert len(train_from_iterator(["low lower", "newest widest"], 260).merges) == 4


# --- differential: hypothesis corpora against the oracle ------------------------------------------

ALPHABETS = ["ab ", "aab \n", "abc", "ab \t\n\n", "aé中🙃 \n", "xy'sld 1\n", "ab\u00a0\u3000 "]
RUNS = ["aaaa", "abab", "aaab", "  ", "\n\n\n", "🙃🙃", "éé"]
SPECIAL_SETS = [[], [SPECIAL], [SPECIAL, "<|e|>"], ["<my tok>"], ["ab ba", "<s>"]]
FRAGMENTS = ["<|", "|>", "endoftext", "<|e", "e|>"]


@st.composite
def corpora(draw: st.DrawFn) -> tuple[str, list[str], int]:
    alphabet = draw(st.sampled_from(ALPHABETS))
    specials = draw(st.sampled_from(SPECIAL_SETS))
    pieces = list(alphabet) + RUNS + FRAGMENTS + specials
    text = "".join(draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=60)))
    vocab_size = 256 + len(specials) + draw(st.integers(0, 48))
    return text, specials, vocab_size


def _check_against_oracle(text: str, specials: list[str], vocab_size: int, folder: Path) -> None:
    expected_vocab, expected_merges = ref.train(text, vocab_size, specials)
    stops_early = len(expected_merges) < vocab_size - 256 - len(specials)
    path = folder / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    runs = {"iterator": lambda: train_from_iterator([text], vocab_size, specials, num_threads=2)}
    for num_threads in (1, 2):
        for chunk_size in (1, 5, None):
            kwargs = {} if chunk_size is None else {"chunk_size": chunk_size}
            runs[f"train threads={num_threads} chunk={chunk_size}"] = (
                lambda n=num_threads, kw=kwargs: train(
                    path, vocab_size, specials, num_threads=n, progress=False, **kw
                )
            )
    for name, run in runs.items():
        tok, messages = _quietly(run)
        assert tok.merges == expected_merges, name
        assert tok.vocab == expected_vocab, name
        assert any(STOPPED_EARLY in m for m in messages) == stops_early, (name, messages)


@settings(max_examples=MAX_EXAMPLES, **DIFF_SETTINGS)
@given(corpus=corpora())
@example(corpus=("aaabdaaabac", [], 259))
@example(corpus=("ab ab ba ba", [], 270))
@example(corpus=("<|endoftext|><|endoftext|>", [SPECIAL], 300))
@example(corpus=("aaaa<my tok>aaaa <my tok>", ["<my tok>"], 270))
def test_train_matches_oracle(tmp_path: Path, corpus: tuple[str, list[str], int]) -> None:
    _check_against_oracle(*corpus, tmp_path)


@pytest.mark.slow
@settings(max_examples=8 * MAX_EXAMPLES, **DIFF_SETTINGS)
@given(corpus=corpora())
def test_train_matches_oracle_many(tmp_path: Path, corpus: tuple[str, list[str], int]) -> None:
    _check_against_oracle(*corpus, tmp_path)


@settings(max_examples=max(10, MAX_EXAMPLES // 2), **DIFF_SETTINGS)
@given(text=same_text(max_size=80), extra=st.integers(0, 30))
def test_train_matches_oracle_any_text(text: str, extra: int) -> None:
    if not text:
        with pytest.raises(ValueError, match="empty"):
            train_from_iterator([text], 257 + extra, [SPECIAL])
        return
    expected_vocab, expected_merges = ref.train(text, 257 + extra, [SPECIAL])
    tok, _ = _quietly(train_from_iterator, [text], 257 + extra, [SPECIAL])
    assert tok.merges == expected_merges
    assert tok.vocab == expected_vocab


@settings(max_examples=max(10, MAX_EXAMPLES // 2), **DIFF_SETTINGS)
@given(corpus=corpora())
def test_train_matches_oracle_whitespace_pattern(corpus: tuple[str, list[str], int]) -> None:
    text, specials, vocab_size = corpus
    expected_vocab, expected_merges = ref.train(text, vocab_size, specials, pattern=r"\S+")
    tok, _ = _quietly(train_from_iterator, [text], vocab_size, specials, pattern=r"\S+")
    assert tok.merges == expected_merges
    assert tok.vocab == expected_vocab


@pytest.mark.parametrize("special", ["a", "<", " ", "\n"])
def test_one_byte_special_token_gets_its_own_id(special: str) -> None:
    # Regression: a one-byte special token used to reuse the byte's id (docs/spec.md §1.6: specials
    # follow the last merge, whatever their bytes).
    text = "ab ab a<b\n"
    expected_vocab, expected_merges = ref.train(text, 262, [special])
    tok, _ = _quietly(train_from_iterator, [text], 262, [special])
    assert tok.merges == expected_merges
    assert tok.vocab == expected_vocab


def test_progress_bars_do_not_change_the_result(
    stories: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quiet = train(stories, 300, [SPECIAL], progress=False)
    assert capsys.readouterr().err == ""
    shown = train(stories, 300, [SPECIAL], progress=True)
    assert "merges" in capsys.readouterr().err
    assert _result(shown) == _result(quiet)


# --- determinism ----------------------------------------------------------------------------------


def _result(tok: Tokenizer) -> tuple[list[tuple[bytes, bytes]], dict[int, bytes]]:
    return tok.merges, tok.vocab


@pytest.fixture(scope="module")
def stories(cs336_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny stories and parts of corpus.en, interleaved, joined by the special token."""
    tiny = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8")
    lines = (cs336_data / "corpus.en").read_text(encoding="utf-8").splitlines(keepends=True)
    quarter = len(lines) // 4
    docs = []
    for i in range(4):
        docs += [tiny, "".join(lines[i * quarter : (i + 1) * quarter])]
    path = tmp_path_factory.mktemp("stories") / "stories.txt"
    path.write_text(SPECIAL.join(docs), encoding="utf-8")
    return path


def test_same_result_for_threads_and_chunk_sizes(stories: Path) -> None:
    results = [
        _result(train(stories, 600, [SPECIAL], num_threads=n, chunk_size=c, progress=False))
        for n in (1, 2)
        for c in (3, 4096, 1 << 24)
    ]
    assert all(r == results[0] for r in results)
    text = stories.read_text(encoding="utf-8")
    assert results[0] == _result(train_from_iterator([text], 600, [SPECIAL], num_threads=2))


def test_same_result_for_files_in_either_order(stories: Path, tmp_path: Path) -> None:
    text = stories.read_text(encoding="utf-8")
    cut = text.index(SPECIAL, len(text) // 4) + len(SPECIAL)
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text(text[:cut], encoding="utf-8")
    second.write_text(text[cut:], encoding="utf-8")
    whole = _result(train(stories, 600, [SPECIAL], progress=False))
    for paths in ([first, second], [second, first]):
        for num_threads in (1, 2):
            got = train(
                paths, 600, [SPECIAL], num_threads=num_threads, chunk_size=64, progress=False
            )
            assert _result(got) == whole


@settings(max_examples=max(10, MAX_EXAMPLES // 4), **DIFF_SETTINGS)
@given(
    docs=st.lists(st.text(alphabet="ab é\n", max_size=15), min_size=2, max_size=8), data=st.data()
)
def test_split_files_fuzz(tmp_path: Path, docs: list[str], data: st.DataObject) -> None:
    text = SPECIAL.join(docs)
    cut = data.draw(st.integers(1, len(docs) - 1))
    head, tail = SPECIAL.join(docs[:cut]) + SPECIAL, SPECIAL.join(docs[cut:])
    assert head + tail == text
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text(head, encoding="utf-8")
    second.write_text(tail, encoding="utf-8")
    expected_vocab, expected_merges = ref.train(text, 290, [SPECIAL])
    for paths in ([first, second], [second, first]):
        if not any(p.stat().st_size for p in paths):
            continue
        tok, _ = _quietly(train, paths, 290, [SPECIAL], num_threads=2, chunk_size=3, progress=False)
        assert _result(tok) == (expected_merges, expected_vocab)


# --- the merge stage alone; WordCounts ------------------------------------------------------------


def test_train_from_counts_equals_train(stories: Path, tmp_path: Path) -> None:
    text = stories.read_text(encoding="utf-8")
    cut = text.index(SPECIAL, len(text) // 3) + len(SPECIAL)
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text(text[:cut], encoding="utf-8")
    second.write_text(text[cut:], encoding="utf-8")
    counts = count_files(first, special_tokens=[SPECIAL])
    other = pickle.loads(pickle.dumps(count_files(second, special_tokens=[SPECIAL])))
    counts.merge(other)
    whole = count_files(stories, special_tokens=[SPECIAL], num_threads=2)
    assert counts.items() == whole.items()
    assert counts.total() == whole.total()
    expected = _result(train(stories, 600, [SPECIAL], progress=False))
    assert _result(train_from_counts(counts, 600, [SPECIAL])) == expected
    # train_from_counts keeps its input: a second run gives the same result.
    assert len(counts) == len(whole)
    assert _result(train_from_counts(counts, 600, [SPECIAL])) == expected


def test_word_counts_basics() -> None:
    counts = count_texts(["a cat a", "a dog"], num_threads=1)
    assert counts.items() == [(b" a", 1), (b" cat", 1), (b" dog", 1), (b"a", 2)]
    assert len(counts) == 4
    assert counts.total() == 5
    clone = pickle.loads(pickle.dumps(counts))
    assert clone.items() == counts.items()
    clone.merge(count_texts(["a"]))
    assert clone.total() == 6
    assert counts.total() == 5  # merging into the copy left the original alone
    with pytest.raises(ValueError, match="itself"):
        counts.merge(counts)
    assert WordCounts().items() == []
    assert len(WordCounts()) == 0


@settings(max_examples=max(10, MAX_EXAMPLES // 2), **DIFF_SETTINGS)
@given(
    table=st.dictionaries(st.binary(min_size=1, max_size=20), st.integers(0, 2**50), max_size=12),
    extra=st.integers(0, 40),
)
def test_train_from_counts_matches_oracle(table: dict[bytes, int], extra: int) -> None:
    # Counts above 2**32 must not overflow; words longer than 15 bytes take the other table path;
    # words counted 0 times weigh nothing (the oracle drops them).
    counts = WordCounts(list(table.items()))
    assert counts.items() == sorted(table.items())
    assert counts.total() == sum(table.values())
    expected_vocab, expected_merges = ref.train_from_counts(table, 256 + extra, [])
    tok, _ = _quietly(train_from_counts, counts, 256 + extra)
    assert tok.merges == expected_merges
    assert tok.vocab == expected_vocab


def test_counts_are_64_bit() -> None:
    big = 2**62
    counts = WordCounts([(b"ab", big), (b"ba", big - 1)])
    counts.merge(WordCounts([(b"ab", 3)]))
    assert counts.items() == [(b"ab", big + 3), (b"ba", big - 1)]
    tok = train_from_counts(counts, 257)
    assert tok.merges == [(b"a", b"b")]


# --- early stop, ids, special tokens --------------------------------------------------------------


def test_early_stop_warns_and_lays_out_ids(tmp_path: Path) -> None:
    path = tmp_path / "tiny.txt"
    path.write_text("ab<|endoftext|>ab")
    with pytest.warns(UserWarning, match=r"stopped after 1 of 43 merges") as record:
        tok = train(path, 300, [SPECIAL], progress=False)
    assert "258 tokens" in str(record[0].message)
    assert tok.merges == [(b"a", b"b")]
    assert tok.vocab == {**_bytes_vocab(), 256: b"ab", 257: SPECIAL.encode()}
    assert tok.special_tokens == {SPECIAL: 257}


def test_ids_bytes_then_merges_then_specials() -> None:
    specials = ["<|endoftext|>", "<pad>", "<s>"]
    tok = train_from_iterator(["the cat sat on the mat"], 256 + 5 + 3, specials)
    assert [tok.vocab[i] for i in range(256)] == [bytes([i]) for i in range(256)]
    for i, (left, right) in enumerate(tok.merges):
        assert tok.vocab[256 + i] == left + right
    assert [tok.vocab[256 + 5 + i] for i in range(3)] == [s.encode() for s in specials]
    assert len(tok.vocab) == 256 + 5 + 3


def test_special_token_text_never_feeds_merges() -> None:
    docs = ["the cat sat", "a dog ran", "birds sing", "the end"] * 30
    text = SPECIAL.join(docs)
    assert text.replace(SPECIAL, "").count("<|") == 0
    # Without the special token, its text would be merged early (it is the most frequent run)...
    unprotected, _ = _quietly(train_from_iterator, [text], 330, [])
    assert any(b"<|" in token for token in unprotected.vocab.values())
    # ...with it, no trained token contains "<|".
    tok, _ = _quietly(train_from_iterator, [text], 330, [SPECIAL])
    trained = [tok.vocab[i] for i in range(256, 256 + len(tok.merges))]
    assert not any(b"<|" in token or b"|>" in token for token in trained)
    assert tok.vocab[256 + len(tok.merges)] == SPECIAL.encode()


def test_special_token_text_never_feeds_merges_tinystories(cs336_data: Path) -> None:
    path = cs336_data / "tinystories_sample.txt"
    assert path.read_text(encoding="utf-8").replace(SPECIAL, "").count("<|") == 0
    (vocab, _), _ = _quietly(train_bpe, path, 1000, [SPECIAL])
    for token_id, token in vocab.items():
        if token != SPECIAL.encode():
            assert b"<|" not in token, (token_id, token)


# --- bad input: the API ---------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.txt"
    path.write_text("the cat sat on the mat<|endoftext|>the dog", encoding="utf-8")
    return path


def test_api_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match=r"nope\.txt"):
        train(missing, 300, [SPECIAL])


def test_api_directory(tmp_path: Path) -> None:
    """A folder is read whole (its files in sorted order); an empty one is refused."""
    with pytest.raises(ValueError, match="holds no files"):
        train(tmp_path, 300, [SPECIAL])
    (tmp_path / "b.txt").write_text("the cat sat on the hat, " * 20, encoding="utf-8")
    (tmp_path / "a.txt").write_text("on the mat the rat sat flat. " * 20, encoding="utf-8")
    files = [tmp_path / "a.txt", tmp_path / "b.txt"]
    assert train(tmp_path, 270, [SPECIAL]).merges == train(files, 270, [SPECIAL]).merges


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read a chmod 000 file"
)
def test_api_unreadable_file(small: Path) -> None:
    small.chmod(0)
    try:
        with pytest.raises(PermissionError, match=r"small\.txt"):
            train(small, 300, [SPECIAL])
    finally:
        small.chmod(0o644)


def test_api_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty") as info:
        train(empty, 300, [SPECIAL])
    assert "empty.txt" in str(info.value)


def test_api_no_files() -> None:
    with pytest.raises(ValueError, match="no input files"):
        train([], 300, [SPECIAL])


@pytest.mark.parametrize("texts", [[], [""], ["", ""]])
def test_api_empty_iterator(texts: list[str]) -> None:
    # Regression: an empty iterable used to give a 0-merge tokenizer with only a generic warning.
    with pytest.raises(ValueError, match="empty"):
        train_from_iterator(texts, 300, [SPECIAL])


@pytest.mark.parametrize(
    ("specials", "minimum"), [([], 256), ([SPECIAL], 257), (["<a>", "<b>"], 258)]
)
def test_api_vocab_size_too_small(small: Path, specials: list[str], minimum: int) -> None:
    with pytest.raises(ValueError, match=rf"minimum is {minimum}\b"):
        train(small, minimum - 1, specials)
    with pytest.raises(ValueError, match=rf"minimum is {minimum}\b"):
        train_from_iterator(["x"], minimum - 1, specials)
    with pytest.raises(ValueError, match=rf"minimum is {minimum}\b"):
        train_from_counts(WordCounts(), minimum - 1, specials)
    tok, _ = _quietly(train, small, minimum, specials, progress=False)
    assert tok.merges == [] and len(tok.vocab) == minimum


@pytest.mark.parametrize("vocab_size", [300.0, "300", None, True])
def test_api_vocab_size_type(small: Path, vocab_size: object) -> None:
    with pytest.raises(TypeError, match="vocab_size"):
        train(small, vocab_size, [SPECIAL])  # type: ignore[arg-type]


def test_api_empty_special_token(small: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        train(small, 300, [SPECIAL, ""])
    with pytest.raises(ValueError, match="empty"):
        train_from_iterator(["x"], 300, [""])


def test_api_duplicate_special_token(small: Path) -> None:
    with pytest.raises(ValueError, match=r"'<\|endoftext\|>' is given twice"):
        train(small, 300, [SPECIAL, SPECIAL])


def test_api_special_tokens_as_one_string(small: Path) -> None:
    with pytest.raises(TypeError, match="list"):
        train(small, 300, SPECIAL)  # type: ignore[arg-type]


def test_api_invalid_utf8_replace_warns_with_count(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello \xff world \xfe\xfe x \xe2\x82")
    with pytest.warns(UserWarning, match=r"replaced 4 invalid UTF-8"):
        tok = train(path, 260, [], progress=False)
    expected_vocab, expected_merges = ref.train(
        path.read_bytes().decode("utf-8", "replace"), 260, []
    )
    assert _result(tok) == (expected_merges, expected_vocab)


def test_api_invalid_utf8_strict(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world\n" * 1000 + b"caf\xc3")
    with pytest.raises(ValueError, match=r"invalid UTF-8 at byte offset 12003\b") as info:
        train(path, 260, [], errors="strict", chunk_size=100)
    assert str(path) in str(info.value)


def test_api_only_special_tokens(tmp_path: Path) -> None:
    path = tmp_path / "specials.txt"
    path.write_text(SPECIAL * 50)
    with pytest.warns(UserWarning, match="stopped after 0 of"):
        tok = train(path, 300, [SPECIAL], progress=False)
    assert tok.merges == []
    assert tok.vocab == {**_bytes_vocab(), 256: SPECIAL.encode()}


def test_api_long_run_without_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "aaaa.txt"
    path.write_bytes(b"a" * 10_000_000)
    tok = train(path, 256 + 20, [], progress=False)
    assert tok.merges == [(b"a" * 2**i, b"a" * 2**i) for i in range(20)]


# --- bad input: the CLI (exit status 2, one clear line, no traceback) -----------------------------


def _assert_cli_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert "error" in result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def test_cli_missing_file(tmp_path: Path) -> None:
    result = run_cli(
        "train", tmp_path / "nope.txt", "--vocab-size", 300, "-o", tmp_path / "out", cwd=tmp_path
    )
    _assert_cli_error(result, "nope.txt", "not found")
    assert not (tmp_path / "out").exists()


def test_cli_directory(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    result = run_cli(
        "train", tmp_path / "folder", "--vocab-size", 300, "-o", tmp_path / "out", cwd=tmp_path
    )
    _assert_cli_error(result, "folder", "directory")


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read a chmod 000 file"
)
def test_cli_unreadable_file(small: Path, tmp_path: Path) -> None:
    small.chmod(0)
    try:
        result = run_cli("train", small, "--vocab-size", 300, "-o", tmp_path / "out", cwd=tmp_path)
    finally:
        small.chmod(0o644)
    _assert_cli_error(result, "small.txt", "readable")


def test_cli_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    result = run_cli(
        "train", tmp_path / "empty.txt", "--vocab-size", 300, "-o", tmp_path / "out", cwd=tmp_path
    )
    _assert_cli_error(result, "empty.txt", "empty")
    assert not (tmp_path / "out").exists()


def test_cli_vocab_size_too_small(small: Path, tmp_path: Path) -> None:
    result = run_cli(
        "train",
        small,
        "--vocab-size",
        256,
        "--special-token",
        SPECIAL,
        "--special-token",
        "<pad>",
        "-o",
        tmp_path / "out",
        cwd=tmp_path,
    )
    _assert_cli_error(result, "258", "256")


@pytest.mark.parametrize(("specials", "needle"), [([""], "empty"), ([SPECIAL, SPECIAL], "twice")])
def test_cli_bad_special_tokens(
    small: Path, tmp_path: Path, specials: list[str], needle: str
) -> None:
    args = [x for s in specials for x in ("--special-token", s)]
    result = run_cli(
        "train", small, "--vocab-size", 300, *args, "-o", tmp_path / "out", cwd=tmp_path
    )
    _assert_cli_error(result, needle)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--vocab-size", "lots"),
        ("--vocab-size", "3e2"),
        ("--threads", "two"),
        ("--threads", "0"),
        ("--threads", "-1"),
        ("--errors", "ignore"),
    ],
)
def test_cli_bad_numbers_and_choices(small: Path, tmp_path: Path, option: str, value: str) -> None:
    args = {"--vocab-size": "300", "--threads": "1", "--errors": "replace"}
    args[option] = value
    flat = [x for kv in args.items() for x in kv]
    result = run_cli("train", small, *flat, "-o", tmp_path / "out", cwd=tmp_path)
    _assert_cli_error(result, option.lstrip("-").split("-")[0])


def test_cli_invalid_utf8_replace_reports_count(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello \xff world \xfe\xfe x")
    result = run_cli("train", path, "--vocab-size", 260, "-o", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "replaced 3 invalid UTF-8" in result.stderr
    assert (tmp_path / "out" / "vocab.json").exists()


def test_cli_invalid_utf8_count_survives_quiet(tmp_path: Path) -> None:
    # Regression: --quiet used to drop the count (it was only part of the summary).
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello \xff world \xfe\xfe x")
    result = run_cli(
        "train", path, "--vocab-size", 260, "-o", tmp_path / "out", "--quiet", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "warning" in result.stderr and "replaced 3 invalid UTF-8" in result.stderr


def test_cli_invalid_utf8_strict(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello \xff world")
    result = run_cli(
        "train",
        path,
        "--vocab-size",
        260,
        "--errors",
        "strict",
        "-o",
        tmp_path / "out",
        cwd=tmp_path,
    )
    _assert_cli_error(result, str(path), "byte offset 6")
    assert not (tmp_path / "out").exists()


def test_cli_bad_pattern(small: Path, tmp_path: Path) -> None:
    result = run_cli(
        "train",
        small,
        "--vocab-size",
        300,
        "--pattern",
        "(unclosed",
        "-o",
        tmp_path / "out",
        cwd=tmp_path,
    )
    _assert_cli_error(result, "(unclosed")


def test_cli_output_is_a_file(small: Path, tmp_path: Path) -> None:
    (tmp_path / "out").write_text("not a folder")
    result = run_cli("train", small, "--vocab-size", 300, "-o", tmp_path / "out", cwd=tmp_path)
    _assert_cli_error(result, "out")


def test_cli_ten_megabytes_of_one_character(tmp_path: Path) -> None:
    path = tmp_path / "aaaa.txt"
    path.write_bytes(b"a" * 10_000_000)
    result = run_cli(
        "train",
        path,
        "--vocab-size",
        256 + 14,
        "-o",
        tmp_path / "out",
        "--quiet",
        "--threads",
        2,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    merges = _read_reference_merges(tmp_path / "out" / "merges.txt")
    assert merges == [(b"a" * 2**i, b"a" * 2**i) for i in range(14)]


def test_cli_only_special_tokens(tmp_path: Path) -> None:
    path = tmp_path / "specials.txt"
    path.write_text(SPECIAL * 50)
    result = run_cli(
        "train",
        path,
        "--vocab-size",
        300,
        "--special-token",
        SPECIAL,
        "-o",
        tmp_path / "out",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "warning" in result.stderr and "stopped after 0 of 43 merges" in result.stderr
    tok = bytepair.load(tmp_path / "out")
    assert tok.merges == [] and tok.special_tokens == {SPECIAL: 256}


def test_vocabularies_past_65536_ids_give_the_same_merges(cs336_data: Path) -> None:
    # Past 65,536 ids the merge loop stores tokens as u32 instead of u16: both must agree.
    # corpus.en runs out of pairs long before, so both runs make every merge there is.
    with pytest.warns(UserWarning, match="stopped after"):
        wide = train(cs336_data / "corpus.en", 70_000, [SPECIAL], progress=False)
    n = len(wide.merges)
    assert 5_000 < n < 65_000
    narrow = train(cs336_data / "corpus.en", 256 + n + 1, [SPECIAL], progress=False)
    assert narrow.merges == wide.merges
    assert narrow.vocab == wide.vocab
