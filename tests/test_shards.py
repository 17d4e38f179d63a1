"""Sharded counting without a cluster (`bytepair.distributed.shards`, `bytepair count`,
`--from-counts`): the shards of any plan add up to the counts of the whole input, on generated
text of many scripts, with special tokens that overlap, invalid UTF-8 and custom patterns, and on
real files; `.bpc` files round-trip, and damaged, missing, repeated or mismatched ones are
refused by name.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import _core
from bytepair.cli import main as cli_main
from bytepair.count import CountStats, count_files
from bytepair.distributed.shards import count_shard, load_counts, plan_shards, save_counts

EOT = "<|endoftext|>"
PIECES = [
    "the", " cat", "Héllo", " naïve", "don't", " I'll", "日本語", "中文。", "Привет", " مرحبا",
    "สวัสดี", "🙃", "x=1;", '{"a":[1,2]}', " 12345", "  ", "\t", "\r\n", "\n\n", " ü?", "'s",
    "<|e|>", "|e|", "e|>x", EOT, "<|endof", "a" * 50,
]  # fmt: skip
#: Special-token sets: none, one, and three whose occurrences overlap.
SPECIALS = [[], [EOT], ["<|e|>", "|e|", "e|>x"]]


def _corpus(seed: int, n: int, invalid: bool = True) -> bytes:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        out.append(rng.choice(PIECES).encode("utf-8"))
        if invalid and rng.random() < 0.01:
            out.append(rng.choice([b"\xff", b"\xe4\xb8", b"\x80\x80"]))
    return b"".join(out)


def _shard_sum(files: list[Path], n: int, specials: list[str], pattern: str = "gpt2"):
    shards = plan_shards(files, n, special_tokens=specials, pattern=pattern)
    assert [s.index for s in shards] == list(range(n))
    assert sum(s.n_bytes for s in shards) == sum(f.stat().st_size for f in files)
    total = bytepair.WordCounts()
    for shard in shards:
        total.merge(count_shard(shard, special_tokens=specials, pattern=pattern, num_threads=1))
    return total, shards


@pytest.mark.parametrize("specials", SPECIALS, ids=["none", "eot", "overlapping"])
@pytest.mark.parametrize("seed", range(4))
def test_shards_add_up_to_the_whole(tmp_path: Path, seed: int, specials: list[str]) -> None:
    files = []
    for k in range(1 + seed % 3):
        files.append(tmp_path / f"{k}.txt")
        files[-1].write_bytes(_corpus(100 * seed + k, 3000))
    whole = count_files(files, special_tokens=specials).items()
    rng = random.Random(seed)
    for n in sorted({1, 2, *rng.sample(range(3, 300), 3)}):
        total, _ = _shard_sum(files, n, specials)
        assert total.items() == whole, f"{n} shards"


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 300), seed=st.integers(0, 3))
def test_any_number_of_shards(tmp_path_factory: pytest.TempPathFactory, n: int, seed: int) -> None:
    path = tmp_path_factory.mktemp("h") / "c.txt"
    path.write_bytes(_corpus(seed, 2000))
    total, _ = _shard_sum([path], n, [EOT])
    assert total.items() == count_files(path, special_tokens=[EOT]).items()


def test_fancy_regex_pattern_cuts_only_at_special_tokens(tmp_path: Path) -> None:
    """A pattern on fancy-regex (a look-behind) has no known safe cut but special tokens."""
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(7, 3000))
    fancy = r"(?<=\s)\S+|\S+|\s+"
    for specials in ([], [EOT]):
        total, shards = _shard_sum([path], 50, specials, pattern=fancy)
        assert total.items() == count_files(path, special_tokens=specials, pattern=fancy).items()
        cut_at = [s.ranges[0].start for s in shards if s.ranges and s.ranges[0].start]
        data = path.read_bytes()
        assert all(data[:p].endswith(EOT.encode()) for p in cut_at)
        assert bool(cut_at) == bool(specials)


@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
def test_gpt4_presets_cut_between_pretokens(tmp_path: Path, preset: str) -> None:
    """cl100k and o200k cut where their own rules allow (`can_cut_before` in
    rust/src/pretokenize/gpt4.rs and o200k.rs), not only at special tokens."""
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(5, 3000))
    for specials in ([], SPECIALS[2]):
        whole = count_files(path, special_tokens=specials, pattern=preset).items()
        for n in (2, 37, 300):
            total, shards = _shard_sum([path], n, specials, pattern=preset)
            assert total.items() == whole, f"{n} shards"
        assert sum(1 for s in shards if s.n_bytes) > 250


def test_shards_are_balanced_in_every_script(tmp_path: Path) -> None:
    """Chinese without spaces cuts as often as English (docs/spec.md §3a)."""
    rng = random.Random(3)
    for name, words in [
        ("en", ["the", " cat", " sat", ". "]),
        ("zh", ["我们", "你好", "。", "中文"]),
    ]:
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(rng.choice(words) for _ in range(200_000)), encoding="utf-8")
        shards = plan_shards([path], 16)
        size = path.stat().st_size
        assert all(abs(s.n_bytes - size / 16) < 64 for s in shards), name


def test_merges_from_shards_equal_training(cs336_data: Path) -> None:
    path = cs336_data / "corpus.en"
    total, _ = _shard_sum([path], 13, [EOT])
    assert bytepair.train_from_counts(total, 500, [EOT]).merges == (
        bytepair.train(path, 500, [EOT], progress=False).merges
    )


def test_a_file_changed_since_planning_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(1, 1000))
    shard = plan_shards([path], 4)[2]
    path.write_bytes(_corpus(2, 1000))
    with pytest.raises(ValueError, match=r"shard 2/4 .*c.txt is .* bytes now"):
        count_shard(shard)


def _save_all(files: list[Path], n: int, out: Path, specials=(EOT,)) -> list[Path]:
    written = []
    for shard in plan_shards(files, n, special_tokens=specials):
        stats = CountStats()
        counts = count_shard(shard, special_tokens=specials, stats=stats)
        written.append(out / f"{shard.index}.bpc")
        save_counts(written[-1], counts, shard, special_tokens=specials, stats=stats, n_parts=4)
    return written


def test_counts_files_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(5, 5000))
    written = _save_all([path], 6, tmp_path / "counts")
    counts, info = load_counts(tmp_path / "counts")
    assert counts.items() == count_files(path, special_tokens=[EOT]).items()
    assert (info.n_shards, info.n_bytes, info.special_tokens) == (6, path.stat().st_size, [EOT])
    # the sections (partitions) of a file are disjoint and add up to it
    whole, _ = _core.read_counts_header(str(written[0]))
    assert json.loads(whole)["shard"] == 0
    parts = []
    for j in range(4):
        part = bytepair.WordCounts()
        assert _core.read_counts_file(part, str(written[0]), parts=[j])[1] == 4
        parts.append(dict(part.items()))
    assert sum(map(len, parts)) == len(set().union(*parts)) and min(map(len, parts)) > 0
    first = bytepair.WordCounts()
    _core.read_counts_file(first, str(written[0]))
    assert dict(first.items()) == {w: n for part in parts for w, n in part.items()}


def test_damaged_missing_and_mixed_counts_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(6, 3000))
    written = _save_all([path], 3, tmp_path / "a")
    good = written[1].read_bytes()
    for damage in (good[:-1], good[:30], good[:-5] + bytes([good[-5] ^ 1]) + good[-4:]):
        written[1].write_bytes(damage)
        with pytest.raises(ValueError, match=r"1\.bpc: corrupt or truncated"):
            load_counts(written)
    written[1].write_bytes(b"not counts at all")
    with pytest.raises(ValueError, match=r"1\.bpc: not a bytepair counts file"):
        load_counts(written)
    written[1].write_bytes(good)
    with pytest.raises(ValueError, match=r"1 of 3 shards are missing \(shards 2\)"):
        load_counts(written[:2])
    with pytest.raises(ValueError, match="shard 0/3 is given twice"):
        load_counts([*written, written[0]])
    other = _save_all([path], 3, tmp_path / "b", specials=())
    with pytest.raises(ValueError, match="counted with special_tokens"):
        load_counts([*written[:2], other[2]])


def _cli(*args: object) -> int:
    return cli_main([str(a) for a in args])


def test_count_cli_then_from_counts_equals_local_training(
    cs336_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus = cs336_data / "corpus.en"
    for k in range(5):
        out = tmp_path / "counts" / f"{k}.bpc"
        assert _cli("count", corpus, "--shard", f"{k}/5", "--special-token", EOT, "-o", out) == 0
    assert "counted shard 4/5" in capsys.readouterr().err
    assert (
        _cli("train", corpus, "--vocab-size", 600, "--special-token", EOT, "-o", tmp_path / "l")
        == 0
    )
    glob = str(tmp_path / "counts" / "*.bpc")
    assert _cli("train", "--from-counts", glob, "--vocab-size", 600, "-o", tmp_path / "s") == 0
    for name in ("bytepair.model", "merges.txt", "vocab.json"):
        assert (tmp_path / "s" / name).read_bytes() == (tmp_path / "l" / name).read_bytes()
    go_on = ("--vocab-size", 700, "--continue-from", tmp_path / "l", "-o")
    assert _cli("train", corpus, *go_on, tmp_path / "l2") == 0
    assert _cli("train", "--from-counts", glob, *go_on, tmp_path / "s2") == 0
    model = "bytepair.model"
    assert (tmp_path / "s2" / model).read_bytes() == (tmp_path / "l2" / model).read_bytes()
    # bad input: one clear line, exit status 2
    capsys.readouterr()
    wrong = ("--special-token", "<|other|>")
    assert (
        _cli("train", "--from-counts", glob, "--vocab-size", 600, *wrong, "-o", tmp_path / "x") == 2
    )
    assert "the counts were made with the special tokens" in capsys.readouterr().err
    (tmp_path / "counts" / "2.bpc").write_bytes(b"BPCOUNTS")
    assert _cli("train", "--from-counts", glob, "--vocab-size", 600, "-o", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert "2.bpc" in err and "Traceback" not in err
    assert (
        _cli("train", corpus, "--from-counts", glob, "--vocab-size", 600, "-o", tmp_path / "x") == 2
    )
    assert _cli("count", tmp_path / "missing.txt", "-o", tmp_path / "m.bpc") == 2
    assert not (tmp_path / "m.bpc").exists()
