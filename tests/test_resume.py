"""Several sizes from one run (`shrink`, `--save-at`) and continued training (`continue_from`,
`--continue-from`), docs/spec.md §1: each result equals a separate fresh run, and continuing keeps
every id and merge of the tokenizer it starts from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import bytepair
from bytepair.cli import main as cli_main
from bytepair.train.sizes import shrink

EOT = "<|endoftext|>"


def _same(a: bytepair.Tokenizer, b: bytepair.Tokenizer) -> None:
    assert a.merges == b.merges
    assert a.vocab == b.vocab
    assert list(a.special_tokens.items()) == list(b.special_tokens.items())
    assert a.pattern == b.pattern


@pytest.fixture(scope="module")
def counts(cs336_data: Path) -> dict[str, bytepair.WordCounts]:
    path = cs336_data / "corpus.en"
    return {
        p: bytepair.count_files([path], special_tokens=[EOT], pattern=p)
        for p in ("gpt2", "cl100k", "o200k")
    }


def _run(counts, pattern: str, vocab_size: int, specials=(EOT,), **kw) -> bytepair.Tokenizer:
    return bytepair.train_from_counts(
        counts[pattern], vocab_size, list(specials), pattern=pattern, progress=False, **kw
    )


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_continuing_300_merges_to_600_equals_a_fresh_600_run(counts, pattern: str) -> None:
    first = _run(counts, pattern, 256 + 300, specials=())
    fresh = _run(counts, pattern, 256 + 600, specials=())
    _same(_run(counts, pattern, 256 + 600, specials=(), continue_from=first), fresh)


def test_continuing_keeps_special_token_ids(counts) -> None:
    """With a special token the merges are the fresh run's too; the special keeps its id (557th
    token), so the new merges come after it instead of before."""
    first = _run(counts, "gpt2", 257 + 300)
    fresh = _run(counts, "gpt2", 257 + 600)
    more = _run(counts, "gpt2", 257 + 600, continue_from=first)
    assert more.merges == fresh.merges
    assert more.special_tokens == first.special_tokens == {EOT: 556}
    assert all(more.vocab[i] == b for i, b in first.vocab.items())
    assert [more.vocab[i] for i in range(557, 857)] == [fresh.vocab[i] for i in range(556, 856)]


def test_continue_from_a_saved_folder_with_a_new_special(counts, cs336_data, tmp_path) -> None:
    first = _run(counts, "cl100k", 257 + 100)
    first.save(tmp_path / "tok", formats=["hf"])
    more = bytepair.train(
        cs336_data / "corpus.en",
        258 + 200,
        [EOT, "<|pad|>"],
        continue_from=tmp_path / "tok" / "tokenizer.json",
        progress=False,
    )
    assert more.pattern == bytepair.CL100K_PATTERN  # the tokenizer's pattern goes on
    assert more.special_tokens == {EOT: 356, "<|pad|>": 457}
    assert more.merges[:100] == first.merges and len(more.merges) == 200


def test_continue_from_gpt2_keeps_every_id(cs336_data: Path) -> None:
    gpt2 = bytepair.load(cs336_data / "gpt2_vocab.json")
    more = bytepair.train(
        cs336_data / "corpus.en", 50257 + 20, [EOT], continue_from=gpt2, progress=False
    )
    assert more.merges[:50000] == gpt2.merges and len(more.merges) == 50020
    assert all(more.vocab[i] == b for i, b in gpt2.vocab.items())
    assert sorted(set(more.vocab) - set(gpt2.vocab)) == list(range(50257, 50277))
    assert more.special_tokens == {EOT: 50256}


def test_continue_refuses_another_pattern_or_a_smaller_size(counts) -> None:
    first = _run(counts, "gpt2", 257 + 50)
    with pytest.raises(ValueError, match="another pattern"):
        _run(counts, "cl100k", 257 + 60, continue_from=first)
    with pytest.raises(ValueError, match="minimum is 307"):
        _run(counts, "gpt2", 300, continue_from=first)


@pytest.mark.parametrize("pattern", ["gpt2", "o200k"])
def test_shrink_equals_separate_runs(counts, pattern: str) -> None:
    big = _run(counts, pattern, 1000)
    for size in (257, 300, 555, 999, 1000):
        _same(shrink(big, size), _run(counts, pattern, size))
    with pytest.raises(ValueError, match=r"choose a size in 257\.\.1000"):
        shrink(big, 256)


def test_shrink_a_continued_tokenizer(counts) -> None:
    first = _run(counts, "gpt2", 257 + 100)
    more = _run(counts, "gpt2", 257 + 400, continue_from=first)
    _same(shrink(more, 257 + 250), _run(counts, "gpt2", 257 + 250, continue_from=first))
    _same(shrink(more, 257 + 100), first)


def test_cli_save_at_and_continue_from(cs336_data: Path, tmp_path: Path) -> None:
    corpus = cs336_data / "corpus.en"

    def train(out: Path, size: int, *extra: str) -> bytepair.Tokenizer:
        args = [
            "train",
            str(corpus),
            "--vocab-size",
            str(size),
            "--special-token",
            EOT,
            "-o",
            str(out),
            "--quiet",
            *extra,
        ]
        assert cli_main(args) == 0
        return bytepair.load(out)

    big = train(tmp_path / "big", 900, "--pattern", "cl100k", "--save-at", "400,700")
    for size in (400, 700):
        alone = train(tmp_path / f"alone{size}", size, "--pattern", "cl100k")
        _same(bytepair.load(tmp_path / "big" / str(size)), alone)
        assert (tmp_path / "big" / str(size) / "tokenizer.json").exists()
    more = train(tmp_path / "more", 900, "--continue-from", str(tmp_path / "big" / "400"))
    assert more.merges == big.merges
    assert (
        cli_main(
            [
                "train",
                str(corpus),
                "--vocab-size",
                "500",
                "--save-at",
                "600",
                "-o",
                str(tmp_path / "bad"),
                "--quiet",
            ]
        )
        == 2
    )
    assert not (tmp_path / "bad").exists()
