"""Tokenizers by name, for `inspect --compare` and `show`: a path that `bytepair.load` reads,
or a preset name: `gpt2`, `cl100k` or `o200k`, OpenAI's tokenizers, whose files tiktoken
downloads once and caches (offline: `TIKTOKEN_CACHE_DIR`). bytepair ships no vocabulary of its
own; a folder or file of that name wins over the preset.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..encoding import Tokenizer
from ..formats.tiktoken import from_ranks
from ..loading import load

#: Preset name (as for `pattern=`) → tiktoken's encoding name.
ENCODINGS = {"gpt2": "gpt2", "cl100k": "cl100k_base", "o200k": "o200k_base"}


def load_named(spec: str | os.PathLike[str]) -> Tokenizer:
    """A tokenizer from a path `load` reads, else from a preset name.

    >>> load_named("gpt2").n_vocab  # doctest: +SKIP
    50257
    """
    name = str(spec)
    if Path(spec).exists() or name not in ENCODINGS:
        return load(spec)
    try:
        import tiktoken
    except ImportError:
        raise ImportError(
            f"the {name} preset is read through tiktoken: pip install tiktoken "
            f"(or give a folder or file of the tokenizer)"
        ) from None
    try:
        enc = tiktoken.get_encoding(ENCODINGS[name])
    except Exception as e:  # tiktoken raises what its download raises
        raise OSError(
            f"cannot load the {name} preset through tiktoken ({type(e).__name__}: {e}); it "
            f"downloads OpenAI's files once, or reads them from TIKTOKEN_CACHE_DIR"
        ) from None
    # tiktoken has no public accessor for the ranks; HF's converter reads the same attribute.
    data = from_ranks(enc._mergeable_ranks, enc._special_tokens, name, f"tiktoken {enc.name}")
    return Tokenizer(data.vocab, data.merges, list(data.special_tokens), pattern=name)
