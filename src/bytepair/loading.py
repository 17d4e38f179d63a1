"""Tokenizers from files and by name: `load` builds a `Tokenizer` from the model data that
`formats/` reads (a folder, or any one file of a format) or, for a name, from OpenAI's files as
tiktoken caches them; `save` hands a tokenizer's model data to the formats to write.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path

from ._core import UNICODE_VERSION
from .encoding import Tokenizer
from .formats import ModelData, from_ranks, read
from .patterns import Pattern

__all__ = ["NAMES", "load", "save"]

#: Tokenizers by name → (tiktoken's encoding, the pattern preset it splits text with). bytepair
#: ships no vocabulary of its own: tiktoken downloads OpenAI's files once and caches them
#: (offline: TIKTOKEN_CACHE_DIR).
NAMES = {
    "gpt2": ("gpt2", "gpt2"),
    "r50k_base": ("r50k_base", "gpt2"),
    "p50k_base": ("p50k_base", "gpt2"),
    "cl100k": ("cl100k_base", "cl100k"),
    "cl100k_base": ("cl100k_base", "cl100k"),
    "o200k": ("o200k_base", "o200k"),
    "o200k_base": ("o200k_base", "o200k"),
    "o200k_harmony": ("o200k_harmony", "o200k"),
}

#: Unicode versions already warned about in this process (the warning is given once per version).
_warned_unicode: set[str] = set()


def load(
    path: str | os.PathLike[str],
    *,
    pattern: Pattern | None = None,
    special_tokens: Iterable[str] | dict[str, int] | None = None,
) -> Tokenizer:
    """Reads a tokenizer from a folder or from any one file of a format, detected by name (a
    `vocab.json` finds its `merges.txt`, a `.tiktoken` its sidecar), or a tokenizer of `NAMES`
    ("gpt2", "cl100k_base", ...; a folder or file of that name wins). `pattern` and
    `special_tokens` are only for formats without them (GPT-2 files, a bare `.tiktoken`).

    >>> tok = load("tok/tokenizer.json")  # doctest: +SKIP
    >>> load("o200k_base").n_vocab  # doctest: +SKIP
    200019
    """
    if isinstance(path, str) and path in NAMES and not Path(path).exists():
        data, file = _named(path), Path(path)
    else:
        data, file = read(path, pattern=pattern, special_tokens=special_tokens)
    try:
        tok = Tokenizer(
            data.vocab,
            data.merges,
            list(data.special_tokens),
            pattern=data.pattern,
            special_token_roles=data.roles,
            model_max_length=data.model_max_length,
            bpe=data.bpe,
            ignore_merges=data.ignore_merges,
            normalization=data.normalization,
            match_specials=data.match_specials,
            added_tokens=data.added_tokens,
            template=data.template,
        )
    except (TypeError, ValueError) as e:  # the parts parse but do not make a tokenizer
        raise ValueError(f"{file}: {e}") from None
    if tok.special_tokens != data.special_tokens:
        raise ValueError(f"{file}: the special tokens' ids do not match the vocabulary")
    if data.unicode_version is not None:  # only bytepair.model records it
        tok.unicode_version = data.unicode_version
        _check_unicode(tok.unicode_version, file)
    return tok


def _named(name: str) -> ModelData:
    """The model data of a tokenizer of `NAMES`, through tiktoken's cached files."""
    encoding, preset = NAMES[name]
    try:
        import tiktoken
    except ImportError:
        raise ImportError(
            f"the {name} tokenizer is read through tiktoken: pip install tiktoken (it comes with "
            f"'bytepair[inspect]'), or give a folder or file of the tokenizer"
        ) from None
    try:
        enc = tiktoken.get_encoding(encoding)
    except Exception as e:  # tiktoken raises what its download raises
        raise OSError(
            f"cannot load the {name} tokenizer through tiktoken ({type(e).__name__}: {e}); it "
            f"downloads OpenAI's files once, or reads them from TIKTOKEN_CACHE_DIR"
        ) from None
    # tiktoken has no public accessor for the ranks; HF's converter reads the same attribute.
    return from_ranks(enc._mergeable_ranks, enc._special_tokens, preset, f"tiktoken {enc.name}")


def save(
    tok: Tokenizer, directory: str | os.PathLike[str], *, formats: Iterable[str] | None = None
) -> list[Path]:
    """Writes the tokenizer into `directory` in every format (or those named: "bytepair",
    "hf", "gpt2", "tiktoken"); every file is rendered before any is written, so a format that
    cannot hold the tokenizer leaves the folder as it was. Returns the paths written.

    >>> save(tok, "tok/", formats=["hf"])  # doctest: +SKIP
    """
    if not isinstance(tok, Tokenizer):
        raise TypeError(
            f"save() takes a Tokenizer to write, got {type(tok).__name__} ({tok!r:.60}); "
            f"call save(tokenizer, folder)"
        )
    return tok.save(directory, formats=formats)


def _check_unicode(version: str, path: Path) -> None:
    """Warns (once per version and process) when a model was trained with other Unicode classes
    than this build's: text with characters classed differently now pretokenizes differently."""
    if version == UNICODE_VERSION or version in _warned_unicode:
        return
    _warned_unicode.add(version)
    warnings.warn(
        f"{path} was trained with the character classes of Unicode {version}; this bytepair uses "
        f"Unicode {UNICODE_VERSION} (tiktoken's). Text with characters whose class differs "
        f"between the two (bytepair's docs/unicode.md) is pretokenized differently than in "
        f"training; retrain to match. (Shown once per version.)",
        UserWarning,
        stacklevel=3,
    )
