"""Corpus encoding (`encode_files`, `bytepair encode`/`decode`, `load_tokens`): the ids equal
`tok.encode` of the same documents in the same order for every input kind and output format;
the Megatron files read back with a reader written here from the format's description; kill -9
or Ctrl-C then `--resume` gives a byte-identical file; every bad input gets one clear line,
exit status 2, and keeps what was written.
"""

from __future__ import annotations

import errno
import gzip
import importlib.util
import json
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import bytepair
from bytepair import cli
from bytepair.corpus import streams, tokens
from bytepair.corpus.encode import tokenizer_hash

EOT = "<|endoftext|>"
WORDS = [
    "the",
    "cat",
    "Héllo",
    "naïve",
    "don't",
    "I'll",
    "日本語",
    "中文。",
    "Привет",
    "مرحبا",
    "สวัสดี",
    "🙃",
    "x=1;",
    '{"a":[1,2]}',
    "12345",
    "  ",
    "\t",
    "\r\n",
    "\n\n",
    "ü?",
    "'s",
]


def _text(seed: int, n_words: int, eot_every: int = 40) -> str:
    rng = random.Random(seed)
    out = []
    for k in range(n_words):
        out.append(rng.choice(WORDS))
        out.append(rng.choice([" ", "", " ", "\n"]))
        if eot_every and k % eot_every == eot_every - 1:
            out.append(EOT)
    return "".join(out)


@pytest.fixture(scope="module")
def tok() -> bytepair.Tokenizer:
    return bytepair.train_from_iterator([_text(1, 5000)], 600, [EOT, "<|pad|>"])


@pytest.fixture(scope="module")
def tok_dir(tok: bytepair.Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tok")
    tok.save(path)
    return path


def _sidecar(path: Path) -> dict:
    return json.loads(Path(str(path) + ".json").read_text(encoding="utf-8"))


def _run(*args: object) -> int:
    return cli.main([str(a) for a in args])


# --- the ids -------------------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [256, 4096, 1 << 22])
def test_plain_text_equals_encode_of_each_file(
    tok: bytepair.Tokenizer, tmp_path: Path, block_size: int
) -> None:
    """Files, a glob and a folder; special tokens stay special and end documents; blocks cut
    inside multi-byte characters, and `\\r\\n` stays."""
    texts = {f"d/{k}.txt": _text(k, 3000) for k in range(3)}
    for name, text in texts.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    (tmp_path / "d" / ".hidden").write_text("skipped")
    out = tmp_path / "train.bin"
    report = bytepair.encode_files(
        tok, [tmp_path / "d"], out, block_size=block_size, num_threads=2, progress=False
    )
    want = [i for name in sorted(texts) for i in tok.encode(texts[name])]
    assert bytepair.load_tokens(out).tolist() == want
    assert np.memmap(out, dtype=np.uint16).tolist() == want
    meta = _sidecar(out)
    n_docs = sum(t.count(EOT) + (not t.endswith(EOT)) for t in texts.values())
    assert (meta["dtype"], meta["n_tokens"], meta["n_documents"]) == ("uint16", len(want), n_docs)
    assert report.n_tokens == len(want) and report.n_documents == n_docs
    assert [Path(i["path"]).name for i in meta["inputs"]] == ["0.txt", "1.txt", "2.txt"]
    assert meta["inputs"][0]["size"] == len(texts["d/0.txt"].encode())
    assert meta["tokenizer"]["hash"] == tokenizer_hash(tok)
    again = tmp_path / "glob.bin"
    bytepair.encode_files(tok, str(tmp_path / "d" / "*.txt"), again, num_threads=1)
    assert again.read_bytes() == out.read_bytes()
    assert not list(tmp_path.glob("*.partial*"))


def test_text_without_cuts_and_empty_files(tok: bytepair.Tokenizer, tmp_path: Path) -> None:
    """A long run with no safe cut is held until it ends; an empty file is no document."""
    text = "a" * 300_000 + " b" + "é" * 70_000 + EOT + "c"
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(b"")
    out = tmp_path / "o.bin"
    bytepair.encode_files(tok, [tmp_path / "a.txt", tmp_path / "b.txt"], out, block_size=4096)
    assert bytepair.load_tokens(out).tolist() == tok.encode(text)
    assert _sidecar(out)["n_documents"] == 2


def _records(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    recs = [_text(rng.randrange(10**6), rng.randrange(0, 60), eot_every=0) for _ in range(n)]
    return [*recs, f"with {EOT} inside", ""]


def _write_jsonl(path: Path, records: list[str]) -> None:
    lines = "".join(
        json.dumps({"id": k, "text": r}) + "\n" + ("\n" if k == 3 else "")
        for k, r in enumerate(records)
    )
    data = lines.encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".zst":
        data = pytest.importorskip("zstandard").ZstdCompressor().compress(data)
    path.write_bytes(data)


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz", "r.jsonl.zst"])
def test_jsonl_records_with_eot(tok: bytepair.Tokenizer, tmp_path: Path, name: str) -> None:
    """Each record is a document (special-token text in it is plain text), EOT after each."""
    records = _records(2, 500)
    _write_jsonl(tmp_path / name, records)
    out = tmp_path / "o.bin"
    assert (
        _run(
            "encode",
            _save(tok, tmp_path),
            tmp_path / name,
            "-o",
            out,
            "--jsonl-field",
            "text",
            "--append-eot",
            "--block-size",
            2048,
            "--quiet",
        )
        == 0
    )
    eot = tok.special_tokens[EOT]
    want = [i for r in records for i in [*tok.encode_ordinary(r), eot]]
    assert bytepair.load_tokens(out).tolist() == want
    assert _sidecar(out)["n_documents"] == len(records)


def _save(tok: bytepair.Tokenizer, tmp_path: Path) -> Path:
    path = tmp_path / "tok"
    if not path.exists():
        tok.save(path)
    return path


def test_parquet_column(tok: bytepair.Tokenizer, tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    records = _records(3, 3000)
    table = pa.table({"n": list(range(len(records))), "body": records})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=700)
    out = tmp_path / "o.npy"
    bytepair.encode_files(tok, tmp_path / "t.parquet", out, column="body")
    assert np.load(out).tolist() == [i for r in records for i in tok.encode_ordinary(r)]
    assert _sidecar(out)["n_documents"] == sum(1 for r in records if r)


# --- output formats ------------------------------------------------------------------------------


def _read_megatron(prefix: Path) -> list[list[int]]:
    """Megatron-LM's indexed dataset, read from its published layout (indexed_dataset.py):
    `.idx` = b"MMIDIDX\\0\\0", u64 version 1, u8 dtype code, u64 sequence count, u64 document
    count, int32 lengths, int64 byte pointers, int64 document indices; `.bin` = the ids."""
    raw = prefix.with_suffix(".idx").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    version, code, n_seq, n_doc = struct.unpack_from("<QBQQ", raw, 9)
    assert version == 1
    dtype = {8: np.uint16, 4: np.int32}[code]
    pos = 9 + 8 + 1 + 8 + 8
    lengths = np.frombuffer(raw, np.int32, n_seq, pos)
    pointers = np.frombuffer(raw, np.int64, n_seq, pos + 4 * n_seq)
    doc_idx = np.frombuffer(raw, np.int64, n_doc, pos + 12 * n_seq)
    assert len(raw) == pos + 12 * n_seq + 8 * n_doc
    assert doc_idx.tolist() == list(range(n_seq + 1))
    data = prefix.with_suffix(".bin").read_bytes()
    return [
        np.frombuffer(data, dtype, n, p).tolist() for n, p in zip(lengths, pointers, strict=True)
    ]


def test_megatron_reads_back(tok: bytepair.Tokenizer, tmp_path: Path) -> None:
    docs = [_text(k, 200, eot_every=0) for k in range(30)]
    (tmp_path / "a.txt").write_text(EOT.join(docs[:20]) + EOT, encoding="utf-8")
    _write_jsonl(tmp_path / "b.jsonl", docs[20:])
    out = tmp_path / "owt"
    bytepair.encode_files(
        tok,
        [tmp_path / "a.txt", tmp_path / "b.jsonl"],
        out,
        format="megatron",
        append_eot=True,
        block_size=1024,
    )
    eot = tok.special_tokens[EOT]
    want = [tok.encode(d + EOT) for d in docs[:20]] + [[eot]]  # the file's own EOT, then ours
    want += [[*tok.encode_ordinary(d), eot] for d in docs[20:]]
    assert _read_megatron(out) == want
    flat = [i for d in want for i in d]
    assert bytepair.load_tokens(tmp_path / "owt.bin").tolist() == flat
    (tmp_path / "owt.bin.json").unlink()  # the dtype then comes from the index
    assert bytepair.load_tokens(tmp_path / "owt").tolist() == flat


def test_eot_option(tok_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`--eot` names the token appended; a name that is no special token is refused."""
    (tmp_path / "a.txt").write_text("one", encoding="utf-8")
    (tmp_path / "b.txt").write_text("two", encoding="utf-8")
    args = ["encode", tok_dir, tmp_path / "a.txt", tmp_path / "b.txt", "-o", tmp_path / "o.bin"]
    assert _run(*args, "--append-eot", "--eot", "<|pad|>", "--quiet") == 0
    tok = bytepair.load(tok_dir)
    pad = tok.special_tokens["<|pad|>"]
    assert bytepair.load_tokens(tmp_path / "o.bin").tolist() == [
        *tok.encode("one"),
        pad,
        *tok.encode("two"),
        pad,
    ]
    assert _sidecar(tmp_path / "o.bin")["n_documents"] == 2
    err = _fails(capsys, *args[1:], "--append-eot", "--eot", "</s>")
    assert "'</s>' is not a special token of this tokenizer" in err and "--eot" in err


def test_dtype_choice_and_refusal(tmp_path: Path) -> None:
    """uint16 when every id fits, else uint32 (int32 for Megatron); uint16 forced is refused."""
    vocab = {i: bytes([i]) for i in range(256)} | {70_000: b"zz"}
    big = bytepair.Tokenizer(vocab, [], [EOT])
    (tmp_path / "a.txt").write_text(f"ab{EOT}cd", encoding="utf-8")
    out = tmp_path / "o.bin"
    bytepair.encode_files(big, tmp_path / "a.txt", out)
    assert _sidecar(out)["dtype"] == "uint32"
    assert bytepair.load_tokens(out).tolist() == big.encode(f"ab{EOT}cd")
    bytepair.encode_files(big, tmp_path / "a.txt", tmp_path / "m", format="megatron")
    assert _read_megatron(tmp_path / "m") == [big.encode(f"ab{EOT}"), big.encode("cd")]
    with pytest.raises(ValueError, match="uint16 cannot hold"):
        bytepair.encode_files(big, tmp_path / "a.txt", out, dtype="uint16")
    with pytest.raises(ValueError, match="must be uint16 or uint32"):
        bytepair.encode_files(big, tmp_path / "a.txt", out, dtype="int8")


def test_progress_bar_and_summary(
    tok: bytepair.Tokenizer, tok_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A bar with MB/s and tokens/s when asked (a terminal); else one summary line."""
    (tmp_path / "a.txt").write_text(_text(6, 20_000), encoding="utf-8")
    bytepair.encode_files(tok, tmp_path / "a.txt", tmp_path / "o.bin", progress=True)
    err = capsys.readouterr().err
    assert "encoding: 100%" in err and "B/s" in err and "M tok/s" in err
    assert _run("encode", tok_dir, tmp_path / "a.txt", "-o", tmp_path / "o.bin") == 0
    summary, wrote = capsys.readouterr().err.splitlines()
    assert summary.startswith("encoded 1 input(s): ") and "documents" in summary
    assert "bytes/token" in summary and wrote.startswith("wrote ")


def test_decode_head(tok_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "a.txt").write_text("Héllo wörld, hello again", encoding="utf-8")
    assert _run("encode", tok_dir, tmp_path / "a.txt", "-o", tmp_path / "o.bin", "--quiet") == 0
    n = len(bytepair.load(tok_dir).encode("Héllo wörld"))
    assert _run("decode", tok_dir, tmp_path / "o.bin", "--head", n) == 0
    assert capsys.readouterr().out == "Héllo wörld\n"


# --- resume --------------------------------------------------------------------------------------


def _cli(*args: object) -> list[str]:
    return [sys.executable, "-m", "bytepair.cli", *map(str, args)]


def _inside(journal: Path, index: int) -> bool:
    """Whether the journal says the run stands inside input `index` (past its start)."""
    try:
        where = json.loads(journal.read_text(encoding="utf-8"))["state"]["where"]
    except FileNotFoundError:
        return False
    return where["input"] == index and (where.get("pos", 0) > 0 or where.get("row", 0) > 0)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_resume_after_kill_is_byte_identical(tok_dir: Path, tmp_path: Path, sig: int) -> None:
    """A real process killed in the middle of a `.gz` input (kill -9, or Ctrl-C: exit 130)
    then `--resume`d gives exactly the files of an uninterrupted run."""
    (tmp_path / "in0.txt").write_text(_text(0, 50_000), encoding="utf-8")
    (tmp_path / "in1.txt.gz").write_bytes(gzip.compress(_text(1, 1_500_000).encode()))
    (tmp_path / "in2.jsonl").write_text(
        "".join(json.dumps({"text": r}) + "\n" for r in _records(5, 3000)), encoding="utf-8"
    )
    inputs = [tmp_path / "in0.txt", tmp_path / "in1.txt.gz", tmp_path / "in2.jsonl"]
    args = [
        "encode",
        tok_dir,
        *inputs,
        "--block-size",
        8192,
        "--threads",
        2,
        "--append-eot",
        "--format",
        "megatron",
    ]
    assert subprocess.run(_cli(*args, "-o", tmp_path / "whole"), timeout=300).returncode == 0
    out = tmp_path / "cut"
    journal = tmp_path / "cut.bin.partial.json"
    proc = subprocess.Popen(_cli(*args, "-o", out), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _inside(journal, 1):
        assert proc.poll() is None and time.monotonic() < deadline, "finished before the kill"
        time.sleep(0.005)
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (-9 if sig == signal.SIGKILL else 130)
    if sig == signal.SIGINT:
        assert "--resume" in err and "Traceback" not in err
    assert not (tmp_path / "cut.bin").exists()
    done = subprocess.run(
        _cli(*args, "-o", out, "--resume"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "resumed after" in done.stderr
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"cut{suffix}").read_bytes() == (
            tmp_path / f"whole{suffix}"
        ).read_bytes()
    whole, cut = _sidecar(tmp_path / "whole.bin"), _sidecar(tmp_path / "cut.bin")
    assert whole == cut
    assert not list(tmp_path.glob("cut*.partial*"))


def test_resume_refuses_other_options(
    tok: bytepair.Tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text(_text(1, 20_000), encoding="utf-8")
    out = tmp_path / "o.bin"
    _fail_after(monkeypatch, 2)
    with pytest.raises(OSError):
        bytepair.encode_files(tok, tmp_path / "a.txt", out, block_size=4096)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="cannot resume"):
        bytepair.encode_files(
            tok, tmp_path / "a.txt", out, block_size=4096, append_eot=True, resume=True
        )


def _fail_after(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Makes the writer fail with a full disk after `n` appends."""
    calls = []
    real = tokens.TokenWriter.append

    def append(self, ids, lengths):
        calls.append(1)
        if len(calls) > n:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(self, ids, lengths)

    monkeypatch.setattr(tokens.TokenWriter, "append", append)


# --- bad input -----------------------------------------------------------------------------------


def _fails(capsys: pytest.CaptureFixture, *args: object) -> str:
    assert _run("encode", *args, "--quiet") == 2
    err = capsys.readouterr().err
    assert err.startswith("bytepair: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("name", ["a.txt", "r.jsonl.zst", "t.parquet"])
def test_full_disk_keeps_the_partial_for_resume(
    tok: bytepair.Tokenizer,
    tok_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    """The writer fails (ENOSPC) after a few blocks: one line, exit 2, the partial file and the
    journal stay, and `--resume` then completes the same ids (resuming inside the input)."""
    records = _records(8, 3000)
    if name == "a.txt":
        (tmp_path / name).write_text(EOT.join(records), encoding="utf-8")
        want = tok.encode(EOT.join(records))
    else:
        if name.endswith(".parquet"):
            pa = pytest.importorskip("pyarrow")
            pytest.importorskip("pyarrow.parquet").write_table(
                pa.table({"text": records}), tmp_path / name
            )
        else:
            _write_jsonl(tmp_path / name, records)
        want = [i for r in records for i in tok.encode_ordinary(r)]
    args = [tok_dir, tmp_path / name, "-o", tmp_path / "o.bin", "--block-size", 4096]
    _fail_after(monkeypatch, 2)
    threads_before = set(threading.enumerate())
    err = _fails(capsys, *args)
    _threads_end(threads_before)
    monkeypatch.undo()
    assert "No space left on device" in err and "o.bin.partial" in err and "--resume" in err
    assert (tmp_path / "o.bin.partial").stat().st_size > 0
    assert _inside(tmp_path / "o.bin.partial.json", 0)
    assert _run("encode", *args, "--resume", "--quiet") == 0
    assert "resumed after" not in capsys.readouterr().err  # --quiet
    assert bytepair.load_tokens(tmp_path / "o.bin").tolist() == want


def _threads_end(before: set[threading.Thread]) -> None:
    """The reader threads of failed runs end (a thread left behind held its file open). Threads
    are compared, not counted: one of an earlier test that ends meanwhile (CI saw 3 before, 2
    after) is not this run's."""
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(threading.enumerate()) - before


def test_bad_inputs_name_file_and_place(
    tok_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = ("-o", tmp_path / "o.bin")
    threads_before = set(threading.enumerate())
    good = gzip.compress(_text(3, 20_000).encode())
    (tmp_path / "bad.txt.gz").write_bytes(good[: len(good) // 2] + b"\x00garbage" * 50)
    err = _fails(capsys, tok_dir, tmp_path / "bad.txt.gz", *out)
    assert "bad.txt.gz: corrupt gzip data at or after decompressed byte" in err
    zstd = pytest.importorskip("zstandard").ZstdCompressor().compress(_text(3, 20_000).encode())
    (tmp_path / "cut.txt.zst").write_bytes(zstd[: len(zstd) // 2])
    err = _fails(capsys, tok_dir, tmp_path / "cut.txt.zst", *out)
    assert "cut.txt.zst: corrupt zstd data" in err and "ends inside a zstd frame" in err
    (tmp_path / "bad.txt.zst").write_bytes(zstd[: len(zstd) // 2] + b"\x00garbage" * 50)
    assert "bad.txt.zst: corrupt zstd data" in _fails(
        capsys, tok_dir, tmp_path / "bad.txt.zst", *out
    )
    (tmp_path / "short.txt.gz").write_bytes(good[: len(good) // 2])
    assert "short.txt.gz: corrupt gzip data" in _fails(
        capsys, tok_dir, tmp_path / "short.txt.gz", *out
    )
    (tmp_path / "a.jsonl").write_text('{"text": "ok"}\n{"text": "x"\n', encoding="utf-8")
    assert "a.jsonl:2: not valid JSON" in _fails(capsys, tok_dir, tmp_path / "a.jsonl", *out)
    (tmp_path / "b.jsonl").write_text('{"text": "ok"}\n\n{"body": "x"}\n', encoding="utf-8")
    err = _fails(capsys, tok_dir, tmp_path / "b.jsonl", *out)
    assert "b.jsonl:3: the record has no field 'text'" in err and "'body'" in err
    (tmp_path / "c.jsonl").write_text('{"text": 5}\n', encoding="utf-8")
    assert "c.jsonl:1: field 'text' is int" in _fails(capsys, tok_dir, tmp_path / "c.jsonl", *out)
    if importlib.util.find_spec("pyarrow"):
        (tmp_path / "x.parquet").write_bytes(b"PAR1 not really")
        err = _fails(capsys, tok_dir, tmp_path / "x.parquet", *out)
        assert "x.parquet: not a readable Parquet file" in err
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"body": ["a"]}), tmp_path / "y.parquet")
        err = _fails(capsys, tok_dir, tmp_path / "y.parquet", *out)
        assert "y.parquet: no column 'text' (its columns: 'body'" in err
    assert "input file not found" in _fails(capsys, tok_dir, tmp_path / "nope.txt", *out)
    assert "no file matches" in _fails(capsys, tok_dir, str(tmp_path / "*.nope"), *out)
    (tmp_path / "locked.txt").write_text("secret")
    real_open = open

    def deny(path, *a, **k):
        if str(path).endswith("locked.txt"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(streams, "open", deny, raising=False)
    err = _fails(capsys, tok_dir, tmp_path / "locked.txt", *out)
    assert f"cannot read {tmp_path / 'locked.txt'}: Permission denied" in err
    _threads_end(threads_before)


@pytest.mark.parametrize("block", [1024, 1 << 20])  # read in blocks; read whole (a small file)
def test_invalid_utf8_strict_and_replace(
    tok: bytepair.Tokenizer,
    tok_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    block: int,
) -> None:
    data = _text(4, 5000).encode() + b"ab\xff\xfecd \xe2\x82 \xf0\x9f\x99" + b"x" * 10
    (tmp_path / "u.txt").write_bytes(data)
    err = _fails(
        capsys,
        tok_dir,
        tmp_path / "u.txt",
        "-o",
        tmp_path / "o.bin",
        "--errors",
        "strict",
        "--block-size",
        block,
    )
    bad_at = data.index(b"\xff")
    assert f"u.txt: invalid UTF-8 at byte {bad_at:,}" in err
    assert not (tmp_path / "o.bin").exists() and (tmp_path / "o.bin.partial").exists()
    assert (
        _run("encode", tok_dir, tmp_path / "u.txt", "-o", tmp_path / "o.bin", "--block-size", block)
        == 0
    )
    assert "replaced 4 invalid UTF-8" in capsys.readouterr().err
    want = tok.encode(data.decode("utf-8", "replace"))
    assert bytepair.load_tokens(tmp_path / "o.bin").tolist() == want
    (tmp_path / "v.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "a\xffb"}\n')
    err = _fails(
        capsys, tok_dir, tmp_path / "v.jsonl", "-o", tmp_path / "o.bin", "--errors", "strict"
    )
    assert "v.jsonl:2: invalid UTF-8 at byte 26" in err


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'bytepair\[zst\]'"):
        streams.require("zst")
    with pytest.raises(ImportError, match=r"pip install 'bytepair\[parquet\]'"):
        streams.require("parquet")


def test_no_eot_token_is_explained(tmp_path: Path) -> None:
    plain = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ValueError, match="not a special token of this tokenizer"):
        bytepair.encode_files(plain, tmp_path / "a.txt", tmp_path / "o.bin", append_eot=True)


# --- memory --------------------------------------------------------------------------------------

_MEMORY_CHILD = """
import sys, bytepair
tok = bytepair.load(sys.argv[1])
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            now = int(line.split()[1]) // 1024
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) // 1024
    return now, peak
bytepair.encode_files(tok, [sys.argv[2]], sys.argv[4] + ".warm", num_threads=int(sys.argv[5]))
before = rss()[0]
open("/proc/self/clear_refs", "w").write("5")
bytepair.encode_files(tok, [sys.argv[3]], sys.argv[4], num_threads=int(sys.argv[5]))
print(before, rss()[1])
"""


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_memory_does_not_grow_with_the_corpus(tok_dir: Path, tmp_path: Path, threads: int) -> None:
    """200 MB of text: RSS grows by less than the 200 MB bound, far less in fact (measured in
    a child, after a warm-up run on 4 MB so that the encoder's caches are already there)."""
    block = _text(9, 200_000).encode()
    big, warm = tmp_path / "big.txt", tmp_path / "warm.txt"
    warm.write_bytes(block * (4_000_000 // len(block) + 1))
    with open(big, "wb") as f:
        for _ in range(200_000_000 // len(block) + 1):
            f.write(block)
    done = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, tok_dir, warm, big, tmp_path / "o.bin", str(threads)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    before, peak = map(int, done.stdout.split())
    assert peak - before < 200, (before, peak)
