"""Tokenizer file formats: one module per format, one dispatch table here. A format module has
`NAME`, `FILES` (what `save` writes in a folder), `OPTIONS` (what `read` takes from the caller
because the files do not hold it), `matches(path)` (is this file one of mine),
`read(path, **options) -> ModelData` and `render(ModelData) -> {file name: text}`; adding a
format is a new module and one entry in `FORMATS`. Nothing here knows a format's syntax.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _core
from ..patterns import GPT2_PATTERN
from . import gpt2, hf, model, tiktoken
from ._common import ModelData, write_atomic

if TYPE_CHECKING:
    from ..encoding import Tokenizer

#: In order of preference when a folder holds several: the own format keeps the most.
FORMATS = (model, hf, gpt2, tiktoken)
_BY_NAME = {f.NAME: f for f in FORMATS}
#: Unicode versions already warned about in this process (the warning is given once per version).
_warned_unicode: set[str] = set()


def save(
    tok: Tokenizer, directory: str | os.PathLike, *, formats: Iterable[str] | None = None
) -> list[Path]:
    """Writes the tokenizer into `directory` in every format (or those named: "bytepair",
    "hf", "gpt2", "tiktoken"); every file is rendered before any is written, so a format that
    cannot hold the tokenizer leaves the folder as it was. Returns the paths written.

    >>> save(tok, "tok/", formats=["hf"])  # doctest: +SKIP
    """
    chosen = check_formats(formats)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output path exists and is not a directory: {out}")
    data = ModelData.of(tok)
    files: dict[str, str] = {}
    for fmt in chosen:
        files |= fmt.render(data)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_atomic(out / name, text)
    return [out / name for name in files]


def check_formats(formats: Iterable[str] | None) -> list[Any]:
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


def detect(path: str | os.PathLike) -> tuple[Any, Path]:
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


def load(
    path: str | os.PathLike,
    *,
    pattern: str | None = None,
    special_tokens: Iterable[str] | dict[str, int] | None = None,
) -> Tokenizer:
    """Reads a tokenizer from a folder or from any one file of a format, detected by name (a
    `vocab.json` finds its `merges.txt`, a `.tiktoken` its sidecar). `pattern` and
    `special_tokens` are only for formats without them (GPT-2 files, a bare `.tiktoken`).

    >>> tok = load("tok/tokenizer.json")  # doctest: +SKIP
    """
    from ..encoding import Tokenizer

    fmt, file = detect(path)
    options = {"pattern": pattern, "special_tokens": special_tokens}
    given = {k: v for k, v in options.items() if v is not None}
    refused = [k for k in given if k not in fmt.OPTIONS]
    if refused:
        raise ValueError(f"{file} stores its own {' and '.join(refused)}; do not pass them")
    if "special_tokens" in given and not isinstance(special_tokens, dict):
        given["special_tokens"] = list(special_tokens)  # type: ignore[arg-type]
    data = fmt.read(file, **given)
    try:
        tok = Tokenizer(data.vocab, data.merges, list(data.special_tokens), pattern=data.pattern)
    except (TypeError, ValueError) as e:  # the parts parse but do not make a tokenizer
        raise ValueError(f"{file}: {e}") from None
    if tok.special_tokens != data.special_tokens:
        raise ValueError(f"{file}: the special tokens' ids do not match the vocabulary")
    if fmt is model:
        tok.unicode_version = data.unicode_version or _v1_unicode(data.pattern)
        _check_unicode(tok.unicode_version, file)
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
        f"between the two (bytepair's docs/unicode.md) is pretokenized differently than in "
        f"training; retrain to match. (Shown once per version.)",
        UserWarning,
        stacklevel=3,
    )
