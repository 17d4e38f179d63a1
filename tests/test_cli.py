"""The `bytepair` command line: what `train`, `encode` and `sample-corpus` write (GPT-2 files, the
model file, .npy ids), what they print, and that outputs are written atomically.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bytepair
import reference as ref
from bytepair import Tokenizer
from bytepair.cli import main as cli_main
from bytepair.formats._common import encode_token
from bytepair.formats.model import MODEL_FILE, MODEL_HEADER

SPECIAL = "<|endoftext|>"
MODEL_FILES = {
    "vocab.json",
    "merges.txt",
    MODEL_FILE,
    "tokenizer.json",
    "tokenizer.tiktoken",
    "tokenizer.tiktoken.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
}
TEXT = (
    "The quick brown fox jumps over the lazy dog. It's 12 o'clock!\n"
    "Héllo wörld, 你好 🙃 — the end.<|endoftext|>\n\n"
    "A second document: the dog sleeps, the fox runs.  Tabs\tand  spaces.\n"
) * 20


def run_cli(*args: object, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bytepair.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture
def trained(corpus: Path, tmp_path: Path) -> Path:
    out = tmp_path / "model"
    result = run_cli(
        "train",
        corpus,
        "--vocab-size",
        320,
        "--special-token",
        SPECIAL,
        "-o",
        out,
        "--quiet",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    return out


def _no_temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or "tmp" in p.name)


# --- train ----------------------------------------------------------------------------------------


def test_train_writes_every_format(trained: Path) -> None:
    assert {p.name for p in trained.iterdir()} == MODEL_FILES
    assert (trained / MODEL_FILE).read_text(encoding="utf-8").splitlines()[0] == MODEL_HEADER


def test_vocab_json_is_gpt2_format(trained: Path, corpus: Path) -> None:
    raw = json.loads((trained / "vocab.json").read_text(encoding="utf-8"))
    assert isinstance(raw, dict)
    assert all(isinstance(k, str) and type(v) is int for k, v in raw.items())
    assert sorted(raw.values()) == list(range(320))
    # bytes as GPT-2 characters: printable bytes as themselves, the others shifted past 255
    table = ref.bytes_to_unicode()
    for byte in range(256):
        assert raw[table[byte]] == byte
    assert raw["Ġ"] == ord(" ") and raw["!"] == ord("!") and raw["Ā"] == 0
    # the special token is written raw and comes last
    assert raw[SPECIAL] == 319
    # the same tokens the API trains
    tok = bytepair.train(corpus, 320, [SPECIAL], progress=False)
    expected = {encode_token(b): i for i, b in tok.vocab.items() if i != 319} | {SPECIAL: 319}
    assert raw == expected


def test_merges_txt_is_gpt2_format(trained: Path, corpus: Path) -> None:
    lines = (trained / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#version: 0.2"
    tok = bytepair.train(corpus, 320, [SPECIAL], progress=False)
    assert lines[1:] == [f"{encode_token(a)} {encode_token(b)}" for a, b in tok.merges]
    assert len(lines) - 1 == 320 - 256 - 1
    assert all(len(line.split(" ")) == 2 for line in lines[1:])


def test_written_files_read_back(trained: Path, corpus: Path) -> None:
    tok = bytepair.train(corpus, 320, [SPECIAL], progress=False)
    from_files = Tokenizer.from_files(trained / "vocab.json", trained / "merges.txt", [SPECIAL])
    loaded = bytepair.load(trained)
    for other in (from_files, loaded):
        assert other.merges == tok.merges
        assert other.vocab == tok.vocab
        assert other.special_tokens == {SPECIAL: 319}
        assert other.encode(TEXT) == tok.encode(TEXT)
    expected_vocab, expected_merges = ref.train(TEXT, 320, [SPECIAL])
    assert loaded.merges == expected_merges and loaded.vocab == expected_vocab


def test_quiet_prints_nothing(corpus: Path, tmp_path: Path) -> None:
    result = run_cli(
        "train",
        corpus,
        "--vocab-size",
        300,
        "--special-token",
        SPECIAL,
        "-o",
        tmp_path / "m",
        "--quiet",
        cwd=tmp_path,
    )
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout == ""


def test_summary_mentions_merges(corpus: Path, tmp_path: Path) -> None:
    result = run_cli(
        "train",
        corpus,
        "--vocab-size",
        300,
        "--special-token",
        SPECIAL,
        "-o",
        tmp_path / "m",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "merges" in result.stderr
    assert "43 of 43" in result.stderr
    assert "Traceback" not in result.stderr


def test_train_options(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    result = run_cli(
        "train",
        corpus,
        corpus,
        "--vocab-size",
        290,
        "--special-token",
        SPECIAL,
        "--special-token",
        "<pad>",
        "--pattern",
        r"\S+",
        "--threads",
        2,
        "--errors",
        "strict",
        "-o",
        out,
        "--quiet",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    expected_vocab, expected_merges = ref.train(
        TEXT + TEXT, 290, [SPECIAL, "<pad>"], pattern=r"\S+"
    )
    loaded = bytepair.load(out)
    assert loaded.merges == expected_merges
    assert loaded.vocab == expected_vocab
    assert loaded.pattern == r"\S+"
    assert loaded.special_tokens == {SPECIAL: 288, "<pad>": 289}


def test_train_in_process_returns_status(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        cli_main(
            ["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "m"), "--quiet"]
        )
        == 0
    )
    assert (
        cli_main(
            [
                "train",
                str(tmp_path / "missing.txt"),
                "--vocab-size",
                "300",
                "-o",
                str(tmp_path / "m2"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "missing.txt" in err and "Traceback" not in err


def test_retraining_overwrites_the_folder(corpus: Path, trained: Path, tmp_path: Path) -> None:
    result = run_cli("train", corpus, "--vocab-size", 280, "-o", trained, "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {p.name for p in trained.iterdir()} == MODEL_FILES
    assert len(bytepair.load(trained).merges) == 24


# --- atomic output --------------------------------------------------------------------------------


def test_outputs_leave_no_temp_files(trained: Path, corpus: Path, tmp_path: Path) -> None:
    assert _no_temp_files(trained) == []
    ids = tmp_path / "ids"
    ids.mkdir()
    assert run_cli("encode", trained, corpus, "-o", ids / "ids.npy", cwd=tmp_path).returncode == 0
    # the ids and their sidecar, no temporary or partial file
    assert sorted(p.name for p in ids.iterdir()) == ["ids.npy", "ids.npy.json"]


def test_failed_write_keeps_the_old_files(
    trained: Path,
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = {p.name: p.read_bytes() for p in trained.iterdir()}

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device (simulated)")

    monkeypatch.setattr("bytepair._atomic.os.replace", broken_replace)
    status = cli_main(["train", str(corpus), "--vocab-size", "260", "-o", str(trained), "--quiet"])
    assert status == 2
    assert "No space left" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in trained.iterdir()} == before


# --- sample-corpus --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    folder = tmp_path_factory.mktemp("sample")
    out = folder / "nested" / "sample.txt"
    return out, run_cli("sample-corpus", out, cwd=folder)


def test_sample_corpus(sample: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, result = sample
    assert result.returncode == 0, result.stderr
    assert "documents" in result.stderr
    text = out.read_text(encoding="utf-8")
    assert SPECIAL in text
    assert text.count(SPECIAL) > 100
    assert len(text) > 100_000
    assert sorted(p.name for p in out.parent.iterdir()) == ["sample.txt"]


def test_sample_corpus_trains(sample: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, _ = sample
    tok = bytepair.train(out, 400, [SPECIAL], progress=False)
    assert len(tok.merges) == 400 - 257
    assert not any(b"<|" in tok.vocab[i] for i in range(256, 256 + len(tok.merges)))


# --- encode ---------------------------------------------------------------------------------------


def test_encode_writes_npy_of_ids(trained: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "ids.npy"
    result = run_cli("encode", trained, corpus, "-o", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ids = np.load(out)
    tok = bytepair.load(trained)
    expected = tok.encode(corpus.read_bytes().decode("utf-8"))
    assert ids.tolist() == expected
    assert ids.dtype == np.uint16  # 320 ids fit in 16 bits
    assert ids.ndim == 1
    assert tok.special_tokens[SPECIAL] in expected
    assert tok.decode(ids.tolist()) == TEXT


def test_encode_replaces_invalid_utf8(trained: Path, tmp_path: Path) -> None:
    data = b"the fox \xff jumps"
    (tmp_path / "bad.txt").write_bytes(data)
    out = tmp_path / "ids.npy"
    result = run_cli("encode", trained, tmp_path / "bad.txt", "-o", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tok = bytepair.load(trained)
    assert np.load(out).tolist() == tok.encode(data.decode("utf-8", "replace"))


@pytest.mark.parametrize("what", ["model", "input"])
def test_encode_missing_path(trained: Path, corpus: Path, tmp_path: Path, what: str) -> None:
    model = tmp_path / "nowhere" if what == "model" else trained
    text = tmp_path / "nothing.txt" if what == "input" else corpus
    result = run_cli("encode", model, text, "-o", tmp_path / "ids.npy", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert ("nowhere" if what == "model" else "nothing.txt") in result.stderr
    assert not (tmp_path / "ids.npy").exists()


def test_encode_with_any_format_folder(trained: Path, corpus: Path, tmp_path: Path) -> None:
    expected = bytepair.load(trained).encode(corpus.read_text(encoding="utf-8"))
    for name in (MODEL_FILE, "tokenizer.json", "tokenizer.tiktoken"):  # then GPT-2 files only
        (trained / name).unlink()
        result = run_cli("encode", trained, corpus, "-o", tmp_path / "ids.npy", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert np.load(tmp_path / "ids.npy").tolist() == expected


# --- the command itself ---------------------------------------------------------------------------


def test_help_and_usage(tmp_path: Path) -> None:
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("train", "encode", "sample-corpus"):
        assert command in result.stdout
    result = run_cli(cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    result = run_cli("train", "x.txt", cwd=tmp_path)  # --vocab-size and -o missing
    assert result.returncode == 2
    assert "--vocab-size" in result.stderr and "Traceback" not in result.stderr


def test_import_pulls_in_no_optional_dependency() -> None:
    """`import bytepair` stays light: numpy, tqdm and the test peers load only when used."""
    code = (
        "import sys, bytepair; "
        "print(sorted(m for m in ('numpy', 'tqdm', 'tiktoken', 'tokenizers', 'regex', 'hypothesis',"
        " 'rich', 'matplotlib', 'ray')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_version_is_the_package_s(tmp_path: Path) -> None:
    """One version: the core's (Cargo.toml's), the metadata's and `--version`'s."""
    from importlib.metadata import version

    done = run_cli("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert bytepair.__version__ == version("bytepair")
    assert done.stdout.split()[:2] == ["bytepair", bytepair.__version__]
    assert f"Unicode {bytepair.UNICODE_VERSION}" in done.stdout
