"""Tokenizer file formats: they read and write model data (`ModelData`), never a `Tokenizer`
(`loading.py` builds one). One module per format, with `NAME`, `FILES` (what a save writes),
`OPTIONS` (what `read` takes from the caller because the files lack it), `matches(path)`,
`read(path, **options) -> ModelData` and `render(ModelData) -> {file name: text}`; here is the
table of them that dispatches (a new format: a module and its entry in `FORMATS`), no syntax.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from .._atomic import write_atomic
from . import gpt2, hf, model, tiktoken
from ._common import ModelData

__all__ = ["FORMATS", "Format", "ModelData", "check_formats", "detect", "read", "write"]


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
        files |= fmt.render(data)
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
    """(format module, file to read) for a file or a folder."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.is_dir():
        for fmt in FORMATS:
            if (path / fmt.FILES[0]).exists():
                return fmt, path / fmt.FILES[0]
        found = sorted(path.glob("*" + tiktoken.SUFFIX))
        if len(found) == 1:
            return tiktoken, found[0]
        names = ", ".join(f.FILES[0] for f in FORMATS)
        raise FileNotFoundError(f"{path} holds no tokenizer file (looked for {names})")
    for fmt in FORMATS:
        if fmt.matches(path):
            return fmt, path
    raise ValueError(
        f"{path}: cannot tell the format from the name; expected bytepair.model, "
        f"tokenizer.json, vocab.json/merges.txt or a .tiktoken file"
    )


def read(
    path: str | os.PathLike[str],
    *,
    pattern: str | None = None,
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
