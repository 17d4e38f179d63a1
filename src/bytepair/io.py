"""Compatibility names: the format code lives in `bytepair.formats` (one module per format).
What other modules and users imported from here before is re-exported, plus the `.npy` writer.
"""

from __future__ import annotations

import os
from pathlib import Path

from .formats import load, save
from .formats._common import (
    bytes_to_unicode,
    decode_token,
    encode_token,
    read_text,
    unicode_to_bytes,
)
from .formats._common import read_json as _read_json
from .formats._common import write_atomic as _write_atomic
from .formats.gpt2 import read_pair
from .formats.model import MODEL_END, MODEL_FILE, MODEL_HEADER, MODEL_HEADER_V1

__all__ = [
    "MODEL_END",
    "MODEL_FILE",
    "MODEL_HEADER",
    "MODEL_HEADER_V1",
    "_read_json",
    "_write_atomic",
    "bytes_to_unicode",
    "decode_token",
    "encode_token",
    "load",
    "read_gpt2",
    "read_text",
    "save",
    "unicode_to_bytes",
    "write_npy_atomic",
]


def read_gpt2(
    vocab_path: str | os.PathLike, merges_path: str | os.PathLike, special_tokens: list[str]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Reads GPT-2-format files; special tokens in `vocab.json` are stored as their raw text."""
    vocab, merges, _ = read_pair(Path(vocab_path), Path(merges_path), list(special_tokens))
    return vocab, merges


def write_npy_atomic(path: str | os.PathLike, array: object) -> None:
    """Saves a numpy array as `.npy`, atomically."""
    import io as _io

    import numpy as np

    buffer = _io.BytesIO()
    np.save(buffer, array)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, buffer.getvalue())
