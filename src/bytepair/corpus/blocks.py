"""How corpus readers encode (`BlockEncoder`): a block of plain text up to its last safe cut,
or records whole, on the core's threads into numpy ids; and how inputs are read (`ReadOptions`).
The readers (`inputs.py`), the job (`encode.py`) and the inspection's figures drive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core import encode_block
from ..encoding import Tokenizer, core_encoder
from .streams import complete, decode, invalid_utf8

if TYPE_CHECKING:
    import numpy.typing as npt

    #: Ids as the encoder gives them: uint16 or uint32.
    Ids = npt.NDArray[np.unsignedinteger[Any]]
    #: Positions in an array of ids.
    Positions = npt.NDArray[np.integer[Any]]

#: Input bytes read at a time; pieces are about a 64th of it (many pieces per block keep every
#: thread busy to the end of the block even when another process takes a core for a while).
#: Why 2 MB: each block is a call into the core, with its own start and end on one thread;
#: `bytepair encode` of the large corpus on 2 threads ran at 180-181 MB/s with 1 MB blocks and
#: 191-195 with 2 MB (4 MB was no faster than 2), for ~10 MB more peak RSS.
DEFAULT_BLOCK_SIZE = 2 << 20


@dataclass
class ReadOptions:
    """How inputs are read: fields, errors, block size."""

    jsonl_field: str = "text"
    column: str = "text"
    errors: str = "replace"
    block_size: int = DEFAULT_BLOCK_SIZE
    piece_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        if self.errors not in ("replace", "strict"):
            raise ValueError(f"errors must be 'replace' or 'strict', got {self.errors!r}")
        if (
            isinstance(self.block_size, bool)
            or not isinstance(self.block_size, int)
            or (self.block_size < 256)
        ):
            raise ValueError(f"block_size must be an integer >= 256, got {self.block_size!r}")
        self.piece_bytes = max(self.block_size // 64, 256)


class BlockEncoder:
    """How the readers (`inputs.py`) encode: a block of plain text up to its last safe cut
    (special tokens matched), or records (each a document, special-token text as plain text)."""

    def __init__(self, tok: Tokenizer, opts: ReadOptions, num_threads: int, small: bool):
        self.tok, self.opts, self.num_threads, self.small = tok, opts, num_threads, small
        self.dtype = np.uint16 if small else np.uint32
        self.empty_ids, self.empty_ends = np.zeros(0, self.dtype), np.zeros(0, np.int64)

    def block(
        self, data: bytes, last: bool, where: str, offset: int
    ) -> tuple[Ids, Positions, int, int, bytes]:
        """(ids, offsets, bytes used, invalid sequences replaced, the data as encoded)."""
        try:
            return (*self._block(data, last), 0, data)
        except UnicodeDecodeError as e:
            if self.opts.errors == "strict":
                raise invalid_utf8(where, offset + e.start) from None
        k = len(data) if last else complete(data)
        text, n_replaced = decode(data[:k], "replace", where, offset)
        data = text.encode("utf-8") + data[k:]
        return (*self._block(data, last), n_replaced, data)

    def _block(self, data: bytes, last: bool) -> tuple[Ids, Positions, int]:
        return encode_block(
            core_encoder(self.tok),
            data,
            last=last,
            piece_bytes=self.opts.piece_bytes,
            num_threads=self.num_threads,
            small=self.small,
        )

    def texts(self, texts: list[str], *, plain: bool = False) -> tuple[Ids, Positions]:
        """(ids, offsets) of records, or (`plain`) of whole small text files."""
        if not texts:
            return self.empty_ids, np.zeros(1, np.uint64)
        return self.tok.encode_batch_to_numpy(
            texts,
            num_threads=self.num_threads,
            dtype=self.dtype,
            allowed_special="all" if plain else set(),
        )
