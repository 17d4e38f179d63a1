"""Training and counting read every corpus format alike: plain text, JSON lines and Parquet,
plain, gzip or zstd, files, folders and shards. A record is a document: training on records
equals training on their texts joined by <|endoftext|> (docs/spec.md §1.2)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytepair
import reference
from bytepair import count_files, train, train_from_dataset
from bytepair.distributed.shards import count_shard, plan_shards

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
zstandard = pytest.importorskip("zstandard")

EOT = "<|endoftext|>"
DOCS = [
    "the cat sat on the mat.\n\nThe cat's hat!",
    "我们的猫很可爱。你好，世界",
    'def f(x):\r\n    return {"k": [1, 2]}\r\n',
    "ภาษาไทย  เป็นภาษา   12345 ",
    "",
    "Привет, мир! émoji 😀😀 and <|endoftext|> inside a record",
    '{"minified":true,"a":[1,2,3],"b":"\\u00e9"}',
]
settings.register_profile("sources", deadline=None, max_examples=25)
scripts = st.sampled_from(["a", " ", "\n", "é", "我", "ไ", "😀", "1", "'s", "\r\n", "\t", "<"])
docs_strategy = st.lists(st.lists(scripts, max_size=30).map("".join), min_size=1, max_size=12)


def write_all(folder: Path, docs: list[str], row_groups: int = 3) -> dict[str, Path]:
    """The same documents in every format training reads."""
    folder.mkdir(parents=True, exist_ok=True)
    joined = EOT.join(docs).encode("utf-8")
    lines = "".join(json.dumps({"id": i, "text": d}) + "\n" for i, d in enumerate(docs))
    paths = {
        "txt": folder / "joined.txt",
        "txt.gz": folder / "joined.txt.gz",
        "txt.zst": folder / "joined.txt.zst",
        "jsonl": folder / "docs.jsonl",
        "jsonl.gz": folder / "docs.jsonl.gz",
        "jsonl.zst": folder / "docs.ndjson.zst",
        "parquet": folder / "docs.parquet",
    }
    paths["txt"].write_bytes(joined)
    paths["txt.gz"].write_bytes(gzip.compress(joined))
    # two zstd frames one after the other, read as one stream
    half = len(joined) // 2
    cctx = zstandard.ZstdCompressor()
    paths["txt.zst"].write_bytes(cctx.compress(joined[:half]) + cctx.compress(joined[half:]))
    paths["jsonl"].write_text(lines, encoding="utf-8")
    paths["jsonl.gz"].write_bytes(gzip.compress(lines.encode("utf-8")))
    paths["jsonl.zst"].write_bytes(cctx.compress(lines.encode("utf-8")))
    table = pa.table({"n": list(range(len(docs))), "text": docs})
    pq.write_table(table, paths["parquet"], row_group_size=max(1, -(-len(docs) // row_groups)))
    return paths


def items(counts: bytepair.WordCounts) -> list[tuple[bytes, int]]:
    return counts.items()


@settings(
    settings.get_profile("sources"), suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(docs=docs_strategy, chunk_size=st.sampled_from([1, 7, 64, 1 << 20]))
def test_every_format_counts_as_joined_text(
    tmp_path_factory: pytest.TempPathFactory, docs: list[str], chunk_size: int
) -> None:
    paths = write_all(tmp_path_factory.mktemp("f"), docs)
    options = {"special_tokens": [EOT], "chunk_size": chunk_size, "num_threads": 2}
    want = items(count_files(paths["txt"], **options))
    for kind, path in paths.items():
        assert items(count_files(path, **options)) == want, kind


def test_training_on_records_equals_the_reference_on_joined_text(tmp_path: Path) -> None:
    paths = write_all(tmp_path, DOCS * 3)
    vocab, merges = reference.train(paths["txt"].read_bytes().decode("utf-8"), 400, [EOT])
    for kind, path in paths.items():
        tok = train(path, 400, [EOT], progress=False)
        assert tok.merges == merges, kind
        assert tok.vocab == vocab, kind


def test_folders_globs_and_mixed_formats(tmp_path: Path) -> None:
    paths = write_all(tmp_path / "all", DOCS)
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, doc in enumerate(DOCS):
        (shards / f"{i:02}.jsonl").write_text(json.dumps({"text": doc}) + "\n", encoding="utf-8")
    want = items(count_files(paths["jsonl"], special_tokens=[EOT]))
    assert items(count_files(shards, special_tokens=[EOT])) == want
    assert items(count_files(str(shards / "*.jsonl"), special_tokens=[EOT])) == want
    mixed = count_files([paths["parquet"], paths["txt.zst"]], special_tokens=[EOT])
    twice = count_files([paths["txt"], paths["txt"]], special_tokens=[EOT])
    assert items(mixed) == items(twice)


@pytest.mark.parametrize("n_shards", [1, 2, 3, 5, 9])
def test_shards_of_every_format_add_up(tmp_path: Path, n_shards: int) -> None:
    paths = write_all(tmp_path, DOCS * 4, row_groups=5)
    inputs = list(paths.values())
    whole = count_files(inputs, special_tokens=[EOT])
    plan = plan_shards(inputs, n_shards, special_tokens=[EOT])
    total = bytepair.WordCounts()
    for shard in plan:
        total.merge(count_shard(shard, special_tokens=[EOT]))
    assert items(total) == items(whole)
    # a compressed file lies whole in one shard
    for path in (paths["txt.gz"], paths["jsonl.zst"]):
        holding = [s for s in plan if any(r.path == str(path) for r in s.ranges)]
        assert len(holding) == 1


def test_dataset_and_arrow_tables(tmp_path: Path) -> None:
    want = train(write_all(tmp_path, DOCS)["txt"], 350, [EOT], progress=False).merges
    table = pa.table({"text": DOCS, "other": list(range(len(DOCS)))})
    assert train_from_dataset(table, 350, [EOT], progress=False).merges == want
    sliced = pa.table({"text": ["skip me", *DOCS]}).slice(1)  # offsets that do not start at 0
    large = pa.table({"text": pa.array(DOCS, pa.large_string())})
    batches = pa.RecordBatchReader.from_batches(large.schema, large.to_batches(max_chunksize=2))
    for data in (sliced, large, batches):
        assert train_from_dataset(data, 350, [EOT], progress=False).merges == want
    with pytest.raises(ValueError, match=r"no column 'body'.*'text'"):
        train_from_dataset(table, 350, column="body")
    with pytest.raises(ValueError, match="row 1 is null"):
        train_from_dataset(pa.table({"text": ["a", None]}), 300)
    with pytest.raises(TypeError, match="train_from_iterator"):
        train_from_dataset(["a list"], 300)


def test_hugging_face_datasets(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    want = train(write_all(tmp_path, DOCS)["txt"], 350, [EOT], progress=False).merges
    ds = datasets.Dataset.from_dict({"text": DOCS})
    assert train_from_dataset(ds, 350, [EOT], progress=False).merges == want
    streamed = ds.to_iterable_dataset(num_shards=2)
    assert train_from_dataset(streamed, 350, [EOT], progress=False).merges == want


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"text": "a"', r"bad\.jsonl:2: not valid JSON"),
        ('{"body": "a", "id": 3}', r"bad\.jsonl:2: the record has no field \"text\" .*\"body\""),
        ('{"text": 12}', r"bad\.jsonl:2: field \"text\" is a number, not a string"),
        ("[1, 2]", r"bad\.jsonl:2: the line is not a JSON object"),
    ],
)
def test_bad_records_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(f'{{"text": "fine"}}\n{line}\n{{"text": "x"}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        train(path, 300, progress=False)


def test_line_numbers_hold_across_chunks(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl.gz"
    lines = [json.dumps({"text": f"doc {i} " * 5}) for i in range(500)]
    lines[377] = '{"text": nope}'
    path.write_bytes(gzip.compress("\n".join(lines).encode("utf-8")))
    with pytest.raises(ValueError, match=r"many\.jsonl\.gz:378: not valid JSON"):
        count_files(path, chunk_size=100, num_threads=2)


def test_corrupt_and_mislabelled_inputs(tmp_path: Path) -> None:
    text = ("the cat sat on the mat " * 2000).encode("utf-8")
    cut = tmp_path / "cut.txt.zst"
    cut.write_bytes(zstandard.ZstdCompressor().compress(text)[:-20])
    with pytest.raises(ValueError, match=r"cut\.txt\.zst: not valid zstd data"):
        count_files(cut)
    bad_gz = tmp_path / "bad.txt.gz"
    bad_gz.write_bytes(gzip.compress(text)[:30] + b"\x00" * 50)
    with pytest.raises(ValueError, match=r"bad\.txt\.gz: not valid gzip data"):
        count_files(bad_gz)
    named_as_text = tmp_path / "docs.jsonl"  # zstd data without its .zst
    named_as_text.write_bytes(zstandard.ZstdCompressor().compress(text))
    with pytest.raises(ValueError, match=r"docs\.jsonl: the file is zstd-compressed.*\*\.zst"):
        train(named_as_text, 300)
    binary = tmp_path / "weights.txt"
    binary.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ValueError, match="looks binary"):
        count_files(binary)
    utf16 = tmp_path / "notes.txt"
    utf16.write_bytes("hello".encode("utf-16"))
    with pytest.raises(ValueError, match=r"UTF-16 text.*iconv"):
        count_files(utf16)
    # damaged text is still text: replaced (and counted) or refused by `errors`
    damaged = tmp_path / "damaged.txt"
    damaged.write_bytes(b"caf\xe9 ol\xe9 " * 100)
    stats = bytepair.count.CountStats()
    count_files(damaged, stats=stats)
    assert stats.n_replaced == 200


def test_parquet_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"body": ["a"], "n": [1]}), path)
    with pytest.raises(ValueError, match=r"no column 'text' \(its columns: 'body', 'n'"):
        count_files(path)
    assert len(count_files(path, column="body")) == 1
    pq.write_table(pa.table({"text": [1, 2]}), path)
    with pytest.raises(ValueError, match="holds int64, not strings"):
        count_files(path)
    not_parquet = tmp_path / "x.parquet"
    not_parquet.write_bytes(b"PAR1 but nothing else")
    with pytest.raises(ValueError, match="not a readable Parquet file"):
        count_files(not_parquet)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "bytepair.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_cli_trains_on_records_and_refuses_compressed_text(tmp_path: Path) -> None:
    paths = write_all(tmp_path / "in", DOCS * 3)
    out = tmp_path / "tok"
    field = tmp_path / "field.jsonl.zst"
    lines = "".join(json.dumps({"body": d}) + "\n" for d in DOCS * 3)
    field.write_bytes(zstandard.ZstdCompressor().compress(lines.encode("utf-8")))
    args = ["--vocab-size", "400", "--special-token", EOT, "--quiet"]
    run = cli("train", field, "--jsonl-field", "body", *args, "-o", out)
    assert run.returncode == 0, run.stderr
    want = train(paths["txt"], 400, [EOT], progress=False)
    assert bytepair.load(out).merges == want.merges
    disguised = tmp_path / "docs.txt"
    disguised.write_bytes(paths["jsonl.zst"].read_bytes())
    run = cli("train", disguised, *args, "-o", tmp_path / "no")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "zstd-compressed" in run.stderr, run.stderr
    assert not (tmp_path / "no").exists()
    counts = tmp_path / "c"
    for k in range(3):
        shard = f"{k}/3"
        run = cli(
            "count",
            paths["parquet"],
            paths["jsonl.zst"],
            "--shard",
            shard,
            "--special-token",
            EOT,
            "--quiet",
            "-o",
            counts / f"{k}.bpc",
        )
        assert run.returncode == 0, run.stderr
    run = cli("train", "--from-counts", counts, "--vocab-size", "400", "--quiet", "-o", out)
    assert run.returncode == 0, run.stderr
    doubled = train([paths["txt"], paths["txt"]], 400, [EOT], progress=False)
    assert bytepair.load(out).merges == doubled.merges


def test_lone_surrogates_in_records_become_replacement_characters(tmp_path: Path) -> None:
    """json.loads keeps a lone surrogate and the encoder makes it U+FFFD; training alike."""
    texts = ["a\ud800b \udfff c", "pair \ud83d\ude00 ok", "\\ud800 is not one"]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    fixed = [t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in texts]
    assert items(count_files(path)) == items(bytepair.count_texts(fixed))


def test_core_rows_that_cannot_be_counted_are_named() -> None:
    """Arrow buffers built by hand (pyarrow checks its own): a row that is not UTF-8, or offsets
    past the data, name the row counted from `first_row` over all columns."""
    np = pytest.importorskip("numpy")
    options = {"special_tokens": [], "pattern": bytepair.GPT2_PATTERN, "num_threads": 2}
    good = (np.array([0, 2], np.int64), np.frombuffer(b"ab", np.uint8))
    bad = (np.array([0, 2, 4], np.int64), np.frombuffer(b"ab\xff\xfe", np.uint8))
    with pytest.raises(ValueError, match="row 12: not valid UTF-8"):
        bytepair._core.count_rows(bytepair.WordCounts(), [good, bad], first_row=10, **options)
    past = (np.array([0, 9], np.int64), np.frombuffer(b"ab", np.uint8))
    with pytest.raises(ValueError, match="row 3: offsets outside the data"):
        bytepair._core.count_rows(bytepair.WordCounts(), [past], first_row=3, **options)
