"""Tokenizer file formats: they read and write model data (`ModelData`), never a `Tokenizer`
(`loading.py` builds one). One module per format, with `NAME`, `FILES` (what a save writes),
`OPTIONS` (what `read` takes from the caller because the files lack it), `matches(path)`,
`read(path, **options) -> ModelData` and `render(ModelData) -> {file name: text}`; here is the
table of them that dispatches (a new format: a module and its entry in `FORMATS`), no syntax.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from .._atomic import write_atomic
from ..patterns import Pattern
from . import gpt2, hf, model, tekken, tiktoken
from ._common import CannotHold, ModelData, from_ranks

__all__ = [
    "FORMATS",
    "Format",
    "ModelData",
    "check_formats",
    "detect",
    "from_ranks",
    "read",
    "write",
]


class Format(Protocol):
    """What a format module provides (see the module docstring); the modules are its values."""

    @property
    def NAME(self) -> str: ...
    @property
    def FILES(self) -> tuple[str, ...]: ...
    @property
    def OPTIONS(self) -> tuple[str, ...]: ...
    def matches(self, path: Path) -> bool: ...
    def render(self, data: ModelData) -> dict[str, str]: ...
    # keyword options differ by format (`OPTIONS` names those it takes)
    @property
    def read(self) -> Callable[..., ModelData]: ...


#: In order of preference when a folder holds several: the own format keeps the most.
FORMATS: tuple[Format, ...] = (model, hf, gpt2, tiktoken)
_BY_NAME = {f.NAME: f for f in FORMATS}


def write(
    data: ModelData, directory: str | os.PathLike[str], *, formats: Iterable[str] | None = None
) -> list[Path]:
    """Writes `data` into `directory` in every format that can hold it (or those named:
    "bytepair", "hf", "gpt2", "tiktoken"); every file is rendered before any is written, so a
    format that cannot hold the model leaves the folder as it was. Returns the paths written.

    >>> write(data, "tok/", formats=["hf"])  # doctest: +SKIP
    """
    chosen = check_formats(formats)
    if formats is None and tiktoken.joins_words(data):
        chosen.remove(tiktoken)  # it refuses superword tokenizers; the others hold them
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output path exists and is not a directory: {out}")
    files: dict[str, str] = {}
    for fmt in chosen:
        try:
            files |= fmt.render(data)
        except CannotHold as e:
            if formats is not None:
                raise
            reason = str(e).partition(": ")[2].partition("; leave this format out")[0]
            warnings.warn(f"not written: {fmt.FILES[0]} ({reason})", stacklevel=3)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_atomic(out / name, text)
    return [out / name for name in files]


def check_formats(formats: Iterable[str] | None) -> list[Format]:
    """The format modules named (all for None); an unknown name is a ValueError."""
    if formats is None:
        return list(FORMATS)
    if isinstance(formats, str):
        formats = [formats]
    names = list(formats)
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown or not names:
        raise ValueError(f"unknown format(s) {unknown!r}; choose from {list(_BY_NAME)}")
    return [_BY_NAME[n] for n in names]


def detect(path: str | os.PathLike[str]) -> tuple[Format, Path]:
    """(format module, file to read) for a file or a folder. A file is told by its content (a
    Llama `tokenizer.model` is a tiktoken rank file, a `bytepair.model` starts with its header, a
    JSON file is HF's, Mistral's tekken, GPT-2's vocab or a `.tiktoken` sidecar by its keys), a
    folder by its files; one whose files were changed apart is refused (`_check_folder`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.is_dir():
        return _in_folder(path)
    return sniff(path), path


def _in_folder(path: Path) -> tuple[Format, Path]:
    found = [(fmt, path / fmt.FILES[0]) for fmt in FORMATS if (path / fmt.FILES[0]).exists()]
    if found:
        _check_folder(path, found)
        return found[0]
    candidates = (
        sorted(path.glob("*" + tiktoken.SUFFIX))
        or sorted(path.glob("tokenizer.model"))
        or sorted(path.glob("tekken*.json"))
    )
    if len(candidates) == 1:
        return sniff(candidates[0]), candidates[0]
    names = ", ".join([*(f.FILES[0] for f in FORMATS), "tokenizer.model", "tekken.json"])
    raise FileNotFoundError(f"{path} holds no tokenizer file (looked for {names})")


def _check_folder(path: Path, found: list[tuple[Format, Path]]) -> None:
    """bytepair writes every file of a folder at once; a `tokenizer.json` written later (by
    transformers' `save_pretrained`, say) may no longer say what `bytepair.model` says: then
    neither is read silently."""
    if found[0][0] is not model or len(found) < 2:
        return
    first = found[0][1].stat().st_mtime
    for fmt, file in found[1:]:
        if fmt is not hf or file.stat().st_mtime <= first + 2:
            continue
        ours, theirs = model.read(found[0][1]), hf.read(file)
        same = (ours.vocab, ours.merges, ours.special_tokens) == (
            theirs.vocab,
            theirs.merges,
            theirs.special_tokens,
        )
        if not same:
            raise ValueError(
                f"{path}: {file.name} was written after {found[0][1].name} and they disagree "
                f"(vocabulary, merges or special tokens); load the one you mean: "
                f"bytepair.load('{file}') or bytepair.load('{found[0][1]}')"
            )


#: The first keys of HF's tokenizer.json as `tokenizers` writes it, or with sorted keys.
_HF_KEYS = {"version", "truncation", "padding", "added_tokens", "normalizer", "model"}
#: A tiktoken rank line: base64 bytes, a space, a rank.
_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")


def sniff(path: Path) -> Format:
    """The format of a file, by its first bytes (names can mislead: Llama's tiktoken ranks are
    `tokenizer.model`), or an error that says what was looked for."""
    if path.name.endswith((".bpe", "merges.txt")):
        return gpt2
    with open(path, "rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if b"#bytepair-model".startswith(head[:15]):  # the header, or a file cut within it
        return model
    if head.startswith(b"#version"):
        return gpt2  # a merges.txt by another name
    if head.startswith(b"{"):
        return _json_kind(path, head)
    first = head.split(b"\n", 1)[0]
    if _RANK_LINE.fullmatch(first):
        return tiktoken
    what = "binary data (a SentencePiece model?)" if b"\x00" in head else "text of no known kind"
    raise ValueError(
        f"{path}: {what}; bytepair reads byte-level BPE tokenizers: bytepair.model, HF "
        f"tokenizer.json, tiktoken ranks (base64 and a rank a line; Llama's tokenizer.model), "
        f"Mistral's tekken JSON, GPT-2's vocab.json + merges.txt"
    )


def _json_kind(path: Path, head: bytes) -> Format:
    found = re.match(rb'\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.)', head)
    key, value = (found.group(1).decode("utf-8", "replace"), found.group(2)) if found else ("", b"")
    if path.name.endswith(tiktoken.SUFFIX + ".json"):
        return tiktoken
    if key in _HF_KEYS:
        return hf
    if key == "config":
        return tekken
    if path.name in ("vocab.json", "encoder.json") or value[:1].isdigit():
        return gpt2  # token -> id
    raise ValueError(
        f"{path}: a JSON file of no known kind (first key {key!r}); looked for HF's "
        f"tokenizer.json ('version', 'model', ...), Mistral's tekken ('config' and 'vocab'), "
        f"GPT-2's vocab.json (token -> id) and a .tiktoken sidecar (NAME.tiktoken.json). A "
        f"tokenizer_config.json holds no vocabulary: give its folder or its tokenizer.json"
    )


def read(
    path: str | os.PathLike[str],
    *,
    pattern: Pattern | None = None,
    special_tokens: Iterable[str] | dict[str, int] | None = None,
) -> tuple[ModelData, Path]:
    """The model data of a folder or of any one file of a format, detected by name (a
    `vocab.json` finds its `merges.txt`, a `.tiktoken` its sidecar), and the file read.
    `pattern` and `special_tokens` are only for formats without them (GPT-2 files, a bare
    `.tiktoken`).

    >>> data, file = read("tok/tokenizer.json")  # doctest: +SKIP
    """
    fmt, file = detect(path)
    options = {"pattern": pattern, "special_tokens": special_tokens}
    given = {k: v for k, v in options.items() if v is not None}
    refused = [k for k in given if k not in fmt.OPTIONS]
    if refused:
        raise ValueError(f"{file} stores its own {' and '.join(refused)}; do not pass them")
    if special_tokens is not None and not isinstance(special_tokens, dict):  # given, then
        given["special_tokens"] = list(special_tokens)
    return fmt.read(file, **given), file
