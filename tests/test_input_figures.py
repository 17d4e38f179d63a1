"""Figures count the text, whatever holds it: the same documents as a `.txt` (joined by
`<|endoftext|>`), as `.jsonl`, `.jsonl.zst` and `.parquet` records give the same bytes, bytes per
token and tokens per word in `encode`'s summary and `inspect`'s table (special tokens and their
text left out), and training reports the records' text, not their JSON. `inspect` works on
vocabularies whose ids have gaps (OpenAI's).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bytepair
from bytepair.corpus.inputs import text_bytes
from bytepair.inspection.figures import inspect
from bytepair.inspection.summary import tables
from bytepair.train import train_with_report

SPECIAL = "<|endoftext|>"
DOCS = [
    "The quick brown fox jumps over the lazy dog. It's 12 o'clock!\n",
    "Héllo wörld, 你好 🙃 — the end.\n\n",
    'A "quoted" line\\with a backslash, \t tabs and  spaces.',
    "ภาษาไทย และ русский язык.\r\n" * 3,
] * 15


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """The documents in every format."""
    out = {"txt": tmp_path / "d.txt", "jsonl": tmp_path / "d.jsonl"}
    out["txt"].write_text(SPECIAL.join(DOCS), encoding="utf-8", newline="")
    lines = "".join(json.dumps({"text": d}) + "\n" for d in DOCS)
    out["jsonl"].write_text(lines, encoding="utf-8")
    zstd = pytest.importorskip("zstandard")
    out["jsonl.zst"] = tmp_path / "d.jsonl.zst"
    out["jsonl.zst"].write_bytes(zstd.ZstdCompressor().compress(lines.encode()))
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    out["parquet"] = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": DOCS}), out["parquet"], row_group_size=7)
    return out


@pytest.fixture(scope="module")
def tok() -> bytepair.Tokenizer:
    return bytepair.train_from_iterator(DOCS, 390, [SPECIAL])


def test_encode_figures_are_the_texts_whatever_the_format(tok, tmp_path) -> None:
    reports = {
        kind: bytepair.encode_files(tok, [path], tmp_path / f"{kind}.bin", progress=False)
        for kind, path in _inputs(tmp_path).items()
    }
    n_text = text_bytes(DOCS)
    for kind, report in reports.items():
        plain_tokens = report.n_tokens - report.n_special
        assert report.n_bytes - report.n_special_bytes == n_text, kind
        assert plain_tokens == sum(len(tok.encode_ordinary(d)) for d in DOCS), kind
        assert f"{report.bytes_per_token:.2f} bytes/token" in report.summary()
    assert len({r.bytes_per_token for r in reports.values()}) == 1
    # appended end-of-text tokens are not text either
    eot = bytepair.encode_files(
        tok, [tmp_path / "d.jsonl"], tmp_path / "eot.bin", append_eot=True, progress=False
    )
    assert eot.n_special == len(DOCS)
    assert eot.bytes_per_token == reports["jsonl"].bytes_per_token


def test_inspect_figures_are_the_texts_whatever_the_format(tok, tmp_path) -> None:
    rows = {
        kind: inspect(tok, path, progress=False).compression["tokenizer"][0]
        for kind, path in _inputs(tmp_path).items()
    }
    figures = {(r.n_bytes, r.n_words, r.n_tokens) for r in rows.values()}
    assert len(figures) == 1, rows
    assert rows["txt"].n_bytes == text_bytes(DOCS)
    assert rows["txt"].n_words == sum(len(d.split()) for d in DOCS)


def test_training_reports_the_records_text(tmp_path) -> None:
    for kind, path in _inputs(tmp_path).items():
        if kind == "txt":
            continue
        _, report = train_with_report([path], 300, [SPECIAL], progress=False)
        assert report.n_bytes == text_bytes(DOCS), kind


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_inspect_works_on_vocabularies_with_gaps(name, tiktoken_ready, tmp_path) -> None:
    if name not in tiktoken_ready:
        pytest.skip(f"tiktoken's {name} file is not available")
    named = bytepair.load(name)
    path = tmp_path / "s.txt"
    path.write_text(SPECIAL.join(DOCS), encoding="utf-8")
    found = inspect(named, path, name=name, compare={"mine": _small()}, progress=False)
    vocabulary, *_ = tables(found)
    total = vocabulary.rows[-1]
    assert total[0] == "total" and total[1] == f"{len(named.vocab):,}"
    gaps = named.n_vocab - len(named.vocab)
    assert (f"{gaps:,} of them name no token" in vocabulary.note) == (gaps > 0)
    assert found.compression["mine"][0].n_bytes == found.compression[name][0].n_bytes


def _small() -> bytepair.Tokenizer:
    return bytepair.train_from_iterator(DOCS, 300, [SPECIAL])
