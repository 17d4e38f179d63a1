"""`benchmarks/train.py --baseline`: wrong uses are refused before anything trains, and a
baseline child that imported today's package instead of the baseline's fails, never times it.
`formats.py` and `--input-format`: every converted input holds the corpus's documents exactly,
so a format whose merges differ from the txt ones points at the library, not the benchmark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TRAIN_BENCH = Path(__file__).parents[1] / "benchmarks" / "train.py"


def _bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TRAIN_BENCH), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_baseline_without_a_package_is_an_argument_error(tmp_path: Path) -> None:
    done = _bench("--tools", "bytepair", "--baseline", str(tmp_path))
    assert done.returncode == 2
    assert "no bytepair package there" in done.stderr and str(tmp_path) in done.stderr


def test_baseline_needs_bytepair_among_the_tools(tmp_path: Path) -> None:
    (tmp_path / "bytepair").mkdir()
    (tmp_path / "bytepair" / "__init__.py").write_text("", encoding="utf-8")
    done = _bench("--tools", "gigatoken", "--baseline", str(tmp_path))
    assert done.returncode == 2
    assert "--baseline needs bytepair in --tools" in done.stderr


def test_baseline_child_refuses_todays_package(tmp_path: Path) -> None:
    """PYTHONPATH left as it is: the child imports today's bytepair, which is not in DIR."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower newest widest\n", encoding="utf-8")
    env = {**os.environ, "BYTEPAIR_BASELINE": str(tmp_path)}
    worker = ["--worker", "bytepair-baseline", "--corpus", str(corpus), "--threads", "1"]
    done = _bench(*worker, "--vocab-size", "260", "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 1
    assert "--baseline: imported" in done.stderr and "not a package in" in done.stderr
    assert not (tmp_path / "out").exists()


def _tiny_corpus(path: Path) -> None:
    """Documents with CRLF, non-ASCII text and empty ones, ending in a separator and a newline."""
    words = ["low", "lower", "newest", "widest", "été", "naïve", "42", "  ", "\n", "a\r\nb"]
    docs = [" ".join(words[(i * 7 + j) % len(words)] for j in range(i % 40)) for i in range(200)]
    path.write_bytes(("<|endoftext|>".join(docs) + "<|endoftext|>\n").encode())


def test_formats_hold_the_corpus_documents(tmp_path: Path) -> None:
    """Shards and .gz give the corpus bytes back; records joined by the separator do too."""
    import gzip
    import json

    import pyarrow.parquet as pq
    import zstandard

    corpus = tmp_path / "c.txt"
    _tiny_corpus(corpus)
    convert = [sys.executable, str(TRAIN_BENCH.with_name("formats.py")), str(corpus)]
    convert += ["--shards", "3", "--rows-per-group", "64"]
    done = subprocess.run(convert, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    folder, original = tmp_path / "formats" / "c", corpus.read_bytes()
    shards = sorted((folder / "shards").iterdir())
    assert len(shards) == 3 and b"".join(p.read_bytes() for p in shards) == original
    assert all(p.read_bytes().endswith(b"<|endoftext|>") for p in shards[:-1])
    assert gzip.decompress((folder / "docs.txt.gz").read_bytes()) == original
    with zstandard.ZstdDecompressor().stream_reader(open(folder / "docs.jsonl.zst", "rb")) as f:
        records = [json.loads(line)["text"] for line in f.read().decode().splitlines()]
    assert "<|endoftext|>".join(records).encode() == original
    table = pq.ParquetFile(folder / "docs.parquet")
    assert table.num_row_groups == 4  # 201 documents, 64 a group
    assert table.read().column("text").to_pylist() == records
    again = subprocess.run(convert, capture_output=True, text=True, timeout=60)
    assert "up to date" in again.stdout  # cached: not rebuilt


def test_every_input_format_trains_the_txt_merges(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    _tiny_corpus(corpus)
    done = _bench(
        "--corpus", str(corpus), "--tools", "bytepair", "--input-format", "all",
        "--threads", "1", "--vocab-size", "300",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for fmt in ("jsonl.zst", "parquet", "txt.gz", "shards", "iterator", "dataset"):
        assert f"bytepair merges from {fmt} == from txt: yes" in done.stdout
    assert "FAIL" not in done.stdout
