"""Model files: GPT-2 `vocab.json` + `merges.txt` (SPEC §3) and bytepair's own versioned
`bytepair.model`, which keeps the pattern verbatim, the Unicode version of its training and any
vocabulary exactly. Every write is atomic (temp file + rename); every parse error names the file
and line.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from . import _core
from ._checks import MAX_TOKEN_ID
from .patterns import GPT2_PATTERN

if TYPE_CHECKING:
    from .encoding import Tokenizer

MODEL_FILE = "bytepair.model"
MODEL_HEADER = "#bytepair-model v2"
#: Files without a `unicode` line, written before the Unicode version was pinned.
MODEL_HEADER_V1 = "#bytepair-model v1"
MODEL_END = "#end"
#: Unicode versions already warned about in this process (the warning is given once per version).
_warned_unicode: set[str] = set()


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character table: 188 printable bytes map to themselves, the
    other 68 to chr(256 + n) in byte order."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return table


@functools.cache
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of `bytes_to_unicode`."""
    return {c: b for b, c in bytes_to_unicode().items()}


@functools.cache
def _to_gpt2() -> dict[int, str]:
    """A `str.translate` table: latin-1 character of a byte → its GPT-2 character."""
    return dict(bytes_to_unicode())


@functools.cache
def _from_gpt2() -> dict[int, int]:
    """A `str.translate` table: GPT-2 character → latin-1 character of its byte."""
    return {ord(c): b for b, c in bytes_to_unicode().items()}


@functools.cache
def _gpt2_chars() -> frozenset[str]:
    return frozenset(bytes_to_unicode().values())


def encode_token(token: bytes) -> str:
    """A token's bytes as GPT-2 characters (C-speed: tokens can be megabytes long)."""
    return token.decode("latin-1").translate(_to_gpt2())


def decode_token(text: str, where: str) -> bytes:
    """GPT-2 characters back to bytes; `where` names the place for the error."""
    table = _from_gpt2()
    bad = set(text).difference(_gpt2_chars())
    if bad:
        raise ValueError(f"{where}: {min(bad)!r} is not a GPT-2 byte character in {text!r}")
    return text.translate(table).encode("latin-1")


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file's content (a leading byte-order mark, as some editors write, is
    dropped); invalid UTF-8 is an error naming the file, line and byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{path}: line {line}: invalid UTF-8 at byte offset {e.start} (model files are UTF-8)"
        ) from None


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object hook that refuses a repeated key (json would keep the last silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def _read_json(path: str | os.PathLike) -> object:
    """A JSON file's value; malformed JSON is an error naming the file and line."""
    try:
        return json.loads(read_text(path), object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    except _DuplicateKey as e:
        raise ValueError(f"{path}: key {e.args[0]!r} is given twice; keep one") from None
    except (ValueError, RecursionError) as e:  # a number past int's digit limit; deep nesting
        raise ValueError(f"{path}: not valid JSON here ({e})") from None


def read_gpt2(
    vocab_path: str | os.PathLike, merges_path: str | os.PathLike, special_tokens: list[str]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Reads GPT-2-format files; special tokens in `vocab.json` are stored as their raw text."""
    raw = _read_json(vocab_path)
    if not isinstance(raw, dict):
        raise ValueError(f"{vocab_path}: expected a JSON object of token -> id")
    specials = set(special_tokens)
    vocab: dict[int, bytes] = {}
    for text, token_id in raw.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise ValueError(f"{vocab_path}: token {text!r} has id {token_id!r}, not an integer")
        if not 0 <= token_id <= MAX_TOKEN_ID:
            raise ValueError(f"{vocab_path}: token {text!r} has id {token_id}, not in 0..2**31-1")
        if token_id in vocab:
            raise ValueError(f"{vocab_path}: id {token_id} is given to two tokens")
        if text in specials:
            vocab[token_id] = text.encode("utf-8")
        else:
            vocab[token_id] = decode_token(text, f"{vocab_path}: token {text!r}")
    merges: list[tuple[bytes, bytes]] = []
    merge_lines: list[int] = []
    for lineno, line in enumerate(read_text(merges_path).split("\n"), 1):
        line = line.rstrip("\r")
        if (lineno == 1 and line.startswith("#version")) or not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{merges_path}: line {lineno}: expected 'left right' (two GPT-2 tokens "
                f"separated by one space), got {line!r}"
            )
        where = f"{merges_path}: line {lineno}"
        merges.append((decode_token(parts[0], where), decode_token(parts[1], where)))
        merge_lines.append(lineno)
    _check_gpt2_tokens(vocab, merges, merge_lines, vocab_path, merges_path)
    return vocab, merges


def _check_gpt2_tokens(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    merge_lines: list[int],
    vocab_path: str | os.PathLike,
    merges_path: str | os.PathLike,
) -> None:
    """Every byte has a token and every merge joins known tokens into a known one: checked here
    so that the error names the file and line (the core would only say which token)."""
    known = set(vocab.values())
    for b in range(256):
        if bytes([b]) not in known:
            raise ValueError(
                f"{vocab_path}: no token for byte {b:#04x} (written {bytes_to_unicode()[b]!r}); "
                f"a byte-level vocab.json must hold all 256 single bytes"
            )
    for (left, right), lineno in zip(merges, merge_lines, strict=True):
        for token in (left, right, left + right):
            if token not in known:
                raise ValueError(
                    f"{merges_path}: line {lineno}: merge {encode_token(left)} "
                    f"{encode_token(right)}: {encode_token(token)!r} is not in the vocabulary "
                    f"({vocab_path})"
                )


def _write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Writes `data` to `path` through a temp file in the same folder and a rename, so a reader
    never sees a partial file; the file gets the usual permissions (0666 less the umask)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(tok: Tokenizer, directory: str | os.PathLike) -> None:
    """Writes `vocab.json`, `merges.txt` (GPT-2 format) and `bytepair.model` into `directory`."""
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output path exists and is not a directory: {out}")
    out.mkdir(parents=True, exist_ok=True)
    special_ids = set(tok.special_tokens.values())
    vocab_json: dict[str, int] = {}
    for i, b in sorted(tok.vocab.items()):
        key = b.decode("utf-8") if i in special_ids else encode_token(b)
        if key in vocab_json:
            raise ValueError(
                f"cannot save to GPT-2 vocab.json: token {i} ({b!r}) and token {vocab_json[key]} "
                f"are both written {key!r} there (a special token's text equals another token's "
                f"GPT-2 form); rename the special token. Nothing was written."
            )
        vocab_json[key] = i
    _write_atomic(out / "vocab.json", json.dumps(vocab_json, ensure_ascii=False, indent=1) + "\n")
    merges_txt = "".join(f"{encode_token(a)} {encode_token(b)}\n" for a, b in tok.merges)
    _write_atomic(out / "merges.txt", "#version: 0.2\n" + merges_txt)
    _write_atomic(out / MODEL_FILE, _model_text(tok))


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _model_text(tok: Tokenizer) -> str:
    lines = [
        MODEL_HEADER,
        f"unicode {tok.unicode_version}",
        f"pattern {json.dumps(tok.pattern)}",
        f"specials {len(tok.special_tokens)}",
    ]
    lines += [f"{i} {json.dumps(t)}" for t, i in tok.special_tokens.items()]
    vocab = tok.vocab
    lines.append(f"vocab {len(vocab)}")
    lines += [f"{i} {_b64(b)}" for i, b in sorted(vocab.items())]
    lines.append(f"merges {len(tok.merges)}")
    lines += [f"{_b64(a)} {_b64(b)}" for a, b in tok.merges]
    lines.append(MODEL_END)
    return "\n".join(lines) + "\n"


class _Lines:
    """Numbered lines of a model file, with errors that name the line."""

    def __init__(self, path: Path):
        self.path = path
        self.lines = read_text(path).splitlines()
        self.n = 0

    def error(self, what: str) -> ValueError:
        return ValueError(f"{self.path}: line {self.n}: {what}")

    def next(self) -> str:
        if self.n >= len(self.lines):
            self.n += 1
            raise self.error("unexpected end of file (the file is truncated)")
        self.n += 1
        return self.lines[self.n - 1]

    def section(self, name: str) -> tuple[str, str]:
        key, _, value = self.next().partition(" ")
        if key != name:
            raise self.error(f"expected a '{name} ...' line")
        return key, value

    def count(self, name: str) -> int:
        value = self.section(name)[1]
        if not _is_number(value):
            raise self.error(f"expected '{name} <count>'")
        return int(value)

    def pair(self) -> tuple[str, str]:
        parts = self.next().split(" ", 1)
        if len(parts) != 2:
            raise self.error("expected two fields separated by a space")
        return parts[0], parts[1]

    def b64(self, text: str) -> bytes:
        try:
            return base64.b64decode(text, validate=True)
        except ValueError:
            raise self.error(f"{text!r} is not base64") from None

    def integer(self, text: str) -> int:
        if not _is_number(text) or int(text) > MAX_TOKEN_ID:
            raise self.error(f"{text!r} is not a token id (an integer in 0..2**31-1)")
        return int(text)

    def json_str(self, text: str, what: str) -> str:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, digit limit, deep nesting
            raise self.error(f"bad JSON string ({getattr(e, 'msg', e)})") from None
        if not isinstance(value, str):
            raise self.error(f"the {what} must be a JSON string, got {text[:100]!r}")
        return value


def _is_number(text: str) -> bool:
    """ASCII digits only (`str.isdigit` also takes '²', which `int` refuses), at most 18."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def load(path: str | os.PathLike) -> Tokenizer:
    """Reads what `save` wrote: a folder (its `bytepair.model`) or the model file itself.

    >>> tok = load("tok/")  # doctest: +SKIP
    """
    from .encoding import Tokenizer

    path = Path(path)
    if path.is_dir():
        if not (path / MODEL_FILE).exists() and (path / "vocab.json").exists():
            raise FileNotFoundError(
                f"{path} has no {MODEL_FILE}; for GPT-2 files use Tokenizer.from_files("
                f"'{path}/vocab.json', '{path}/merges.txt', special_tokens=[...])"
            )
        path = path / MODEL_FILE
    lines = _Lines(path)
    header = lines.next()
    if header not in (MODEL_HEADER, MODEL_HEADER_V1):
        raise lines.error(f"not a bytepair model file (expected {MODEL_HEADER!r})")
    unicode = None
    if header == MODEL_HEADER:
        unicode = lines.section("unicode")[1]
        if not re.fullmatch(r"\d+\.\d+\.\d+", unicode):
            raise lines.error(f"expected 'unicode <version>' like 16.0.0, got {unicode!r}")
    pattern = lines.json_str(lines.section("pattern")[1], "pattern")
    specials: dict[str, int] = {}
    for _ in range(lines.count("specials")):
        i, text = lines.pair()
        token = lines.json_str(text, "special token")
        if token in specials:
            raise lines.error(f"special token {token!r} is listed twice")
        specials[token] = lines.integer(i)
    vocab: dict[int, bytes] = {}
    for _ in range(lines.count("vocab")):
        i, b = lines.pair()
        token_id = lines.integer(i)
        if token_id in vocab:
            raise lines.error(f"token id {token_id} is listed twice")
        vocab[token_id] = lines.b64(b)
    merges = []
    for _ in range(lines.count("merges")):
        a, b = lines.pair()
        merges.append((lines.b64(a), lines.b64(b)))
    if lines.next() != MODEL_END:
        raise lines.error(f"expected {MODEL_END!r} (the file is damaged or has extra lines)")
    try:
        tok = Tokenizer(vocab, merges, list(specials), pattern=pattern)
    except (TypeError, ValueError) as e:  # the parts parse but do not make a tokenizer
        raise ValueError(f"{path}: {e}") from None
    if tok.special_tokens != specials:
        raise ValueError(f"{path}: the special tokens' ids do not match the vocabulary")
    tok.unicode_version = unicode or _v1_unicode(pattern)
    _check_unicode(tok.unicode_version, path)
    return tok


def _v1_unicode(pattern: str) -> str:
    """The classes a v1 file was trained with: the GPT-2 scanner then had the Python `regex`
    package's (Unicode 17.0.0), other patterns ran on fancy-regex with regex-syntax 0.8.12's."""
    return "17.0.0" if pattern == GPT2_PATTERN else "16.0.0"


def _check_unicode(version: str, path: Path) -> None:
    """Warns (once per version and process) when a model was trained with other Unicode classes
    than this build's: text with characters classed differently now pretokenizes differently."""
    if version == _core.UNICODE_VERSION or version in _warned_unicode:
        return
    _warned_unicode.add(version)
    warnings.warn(
        f"{path} was trained with the character classes of Unicode {version}; this bytepair uses "
        f"Unicode {_core.UNICODE_VERSION} (tiktoken's). Text with characters whose class differs "
        f"between the two (see the README, 'Unicode version') is pretokenized differently than "
        f"in training; retrain to match. (Shown once per version.)",
        UserWarning,
        stacklevel=3,
    )


def write_npy_atomic(path: str | os.PathLike, array: object) -> None:
    """Saves a numpy array as `.npy`, atomically."""
    import io as _io

    import numpy as np

    buffer = _io.BytesIO()
    np.save(buffer, array)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, buffer.getvalue())
