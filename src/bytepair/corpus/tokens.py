"""Token files (docs/spec.md §3.6), the flat id arrays LM training memory-maps: `NAME.bin` (raw
little-endian ids), `NAME.npy` or Megatron-LM's `NAME.bin` + `NAME.idx`, each with a JSON
sidecar; `load_tokens` reads them. The writer appends to a `.partial` file and renames it at the
end, so no reader sees half a file and a run can continue (`encode.py` keeps the journal). It
does not encode anything.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from .._atomic import write_atomic

FORMATS = ("bin", "npy", "megatron")

#: Megatron-LM's `.idx` (megatron/core/datasets/indexed_dataset.py): header, version 1, the
#: dtype code, then sequence count, document count (one more than the documents: it starts
#: with 0), int32 sequence lengths, int64 byte pointers, int64 document indices.
_IDX_HEADER = b"MMIDIDX\x00\x00"
_IDX_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint16": 8}

#: The `.npy` header is written at this fixed size first, and rewritten with the final shape.
_NPY_HEADER_BYTES = 128


def output_paths(output: str | os.PathLike[str], fmt: str) -> tuple[Path, Path | None]:
    """(data file, Megatron index file or None) for an output name: Megatron takes a prefix
    (`owt` or `owt.bin` → `owt.bin` + `owt.idx`)."""
    out = Path(output)
    if fmt != "megatron":
        return out, None
    prefix = out.with_suffix("") if out.suffix in (".bin", ".idx") else out
    return prefix.with_name(prefix.name + ".bin"), prefix.with_name(prefix.name + ".idx")


def choose_dtype(n_vocab: int, fmt: str, dtype: npt.DTypeLike | None = None) -> np.dtype[Any]:
    """uint16 when every id fits, else uint32 (int32 for Megatron, whose format has no uint32);
    a forced `dtype` that cannot hold the ids is an error."""
    wide = np.dtype(np.int32 if fmt == "megatron" else np.uint32)
    allowed: set[np.dtype[Any]] = {np.dtype(np.uint16), wide}
    if dtype is None:
        return np.dtype(np.uint16) if n_vocab <= 1 << 16 else wide
    wanted: np.dtype[Any] | None
    try:
        wanted = np.dtype(dtype)
    except TypeError:
        wanted = None
    if wanted is None or wanted not in allowed:
        names = " or ".join(sorted(d.name for d in allowed))
        raise ValueError(f"dtype for the {fmt} format must be {names}, got {dtype!r}")
    if wanted == np.uint16 and n_vocab > 1 << 16:
        raise ValueError(
            f"dtype uint16 cannot hold this tokenizer's ids (up to {n_vocab - 1}); "
            f"use {wide.name} or leave the dtype out"
        )
    return wanted


class TokenWriter:
    """Appends ids (and document lengths) to `DATA.partial` (and `DATA.partial.docs`, int64
    lengths, kept for Megatron's index); `finish` writes the index and sidecar and renames."""

    def __init__(self, output: str | os.PathLike[str], fmt: str, dtype: np.dtype[Any]):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        self.fmt, self.dtype = fmt, np.dtype(dtype)
        self.path, self.idx_path = output_paths(output, fmt)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.docs_path = self.path.with_name(self.path.name + ".partial.docs")
        self.header = _NPY_HEADER_BYTES if fmt == "npy" else 0
        self._data: BinaryIO | None = None
        self._docs: BinaryIO | None = None

    def open(self, n_tokens: int = 0, n_docs: int | None = None) -> None:
        """Starts afresh, or (with `n_docs`) continues after `n_tokens` ids and `n_docs`
        document lengths, cutting off whatever a killed run wrote after them."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if n_docs is None:
            self._data = open(self.partial, "wb")
            self._data.write(_npy_header(self.dtype, 0) if self.header else b"")
            self._docs = open(self.docs_path, "wb")
            return
        size = self.header + n_tokens * self.dtype.itemsize
        for path, length in ((self.partial, size), (self.docs_path, 8 * n_docs)):
            if not path.is_file():
                raise ValueError(f"cannot resume: {path} is missing; rerun without --resume")
            if path.stat().st_size < length:
                raise ValueError(f"cannot resume: {path} is shorter than its journal says")
        self._data, self._docs = open(self.partial, "r+b"), open(self.docs_path, "r+b")
        for f, length in ((self._data, size), (self._docs, 8 * n_docs)):
            f.truncate(length)
            f.seek(length)

    def append(self, ids: npt.NDArray[np.integer[Any]], doc_lengths: npt.NDArray[np.int64]) -> None:
        """Appends ids (already of this dtype's width) and the lengths of the documents that
        end among them; `flush` makes them visible to a resumed run."""
        assert self._data is not None and self._docs is not None, "open() first"
        self._data.write(np.ascontiguousarray(ids).data.cast("B"))
        self._docs.write(np.asarray(doc_lengths, dtype="<i8").tobytes())

    def flush(self) -> None:
        assert self._data is not None and self._docs is not None, "open() first"
        self._data.flush()
        self._docs.flush()

    def close(self) -> None:
        for f in (self._data, self._docs):
            if f is not None:
                f.close()
        self._data = self._docs = None

    def finish(self, n_tokens: int, sidecar: dict[str, object]) -> list[Path]:
        """Writes the index and the sidecar, renames the partial file; returns what it wrote."""
        assert self._data is not None, "open() first"
        if self.header:
            self._data.seek(0)
            self._data.write(_npy_header(self.dtype, n_tokens))
        self.flush()
        os.fsync(self._data.fileno())
        self.close()
        written = []
        if self.idx_path is not None:
            _write_idx(self.idx_path, self.docs_path, self.dtype)
            written.append(self.idx_path)
        sidecar_path = self.path.with_name(self.path.name + ".json")
        write_atomic(sidecar_path, json.dumps(sidecar, indent=1, ensure_ascii=False) + "\n")
        os.replace(self.partial, self.path)
        self.docs_path.unlink(missing_ok=True)
        return [self.path, *written, sidecar_path]


def _npy_header(dtype: np.dtype[Any], n: int) -> bytes:
    """A `.npy` v1.0 header of exactly `_NPY_HEADER_BYTES` bytes for a 1-D array of `n`."""
    text = (
        f"{{'descr': '{dtype.newbyteorder('<').str}', 'fortran_order': False, 'shape': ({n},), }}"
    )
    body_len = _NPY_HEADER_BYTES - 10
    return (
        b"\x93NUMPY\x01\x00"
        + struct.pack("<H", body_len)
        + text.ljust(body_len - 1).encode()
        + b"\n"
    )


def _write_idx(idx_path: Path, docs_path: Path, dtype: np.dtype[Any]) -> None:
    """Megatron's index: one sequence per document."""
    lengths = np.fromfile(docs_path, dtype="<i8")
    if len(lengths) and lengths.max() > np.iinfo(np.int32).max:
        raise ValueError(
            "a document has more than 2**31 - 1 tokens: Megatron's index cannot hold it"
        )
    pointers = np.zeros(len(lengths), dtype="<i8")
    np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
    n_docs = len(lengths)
    head = _IDX_HEADER + struct.pack("<QBQQ", 1, _IDX_DTYPE_CODES[dtype.name], n_docs, n_docs + 1)
    body = [lengths.astype("<i4"), pointers, np.arange(n_docs + 1, dtype="<i8")]
    write_atomic(idx_path, head + b"".join(a.tobytes() for a in body))


def read_doc_lengths(idx_path: Path) -> npt.NDArray[np.int64]:
    """The document lengths (int64) of a Megatron index written by `_write_idx`."""
    with open(idx_path, "rb") as f:
        head = f.read(len(_IDX_HEADER) + 25)
        if len(head) < len(_IDX_HEADER) + 25 or not head.startswith(_IDX_HEADER):
            raise ValueError(f"{idx_path}: not a Megatron index (no MMIDIDX header)")
        (n_seqs,) = struct.unpack("<Q", head[-16:-8])
        lengths = np.fromfile(f, dtype="<i4", count=n_seqs)
    if len(lengths) != n_seqs:
        raise ValueError(f"{idx_path}: cut off ({len(lengths)} of {n_seqs} lengths)")
    return lengths.astype(np.int64)


def load_tokens(
    path: str | os.PathLike[str], *, dtype: npt.DTypeLike | None = None
) -> npt.NDArray[Any]:
    """The ids of a token file, memory-mapped: `.npy` by its header, a `.bin` by its sidecar
    (`NAME.bin.json`) or Megatron index, else by `dtype`.

    >>> ids = load_tokens("train.bin")  # doctest: +SKIP
    """
    path, _ = output_paths(path, "megatron") if Path(path).suffix == "" else (Path(path), None)
    if not path.is_file():
        raise FileNotFoundError(f"token file not found: {path}")
    if path.suffix == ".npy":
        ids: npt.NDArray[Any] = np.load(path, mmap_mode="r")  # whatever the file holds
        return ids
    if dtype is None:
        dtype = _stored_dtype(path)
    stored = np.dtype(dtype).newbyteorder("<")
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=stored)
    if path.stat().st_size % stored.itemsize:
        raise ValueError(
            f"{path} holds {path.stat().st_size} bytes, not a whole number of {stored}"
        )
    return np.memmap(path, dtype=stored, mode="r")


def _stored_dtype(path: Path) -> str:
    sidecar = path.with_name(path.name + ".json")
    if sidecar.is_file():
        try:
            name: str = json.loads(sidecar.read_text(encoding="utf-8"))["dtype"]
            return name
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{sidecar}: not a token-file sidecar with a dtype ({e})") from None
    idx = path.with_suffix(".idx")
    if idx.is_file():
        with open(idx, "rb") as f:
            head = f.read(18)
        codes = {v: k for k, v in _IDX_DTYPE_CODES.items()}
        if head[:9] == _IDX_HEADER and head[17] in codes:
            return codes[head[17]]
    raise ValueError(
        f"{path}: no sidecar {sidecar.name} or Megatron index says its dtype; pass "
        f"dtype='uint16' or 'uint32' (CLI: --dtype)"
    )
