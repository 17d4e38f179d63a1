"""Stubs for the Rust core (see rust/src/py.rs and rust/src/py/); use the public API in
`bytepair` instead."""

import os
from collections.abc import Callable, Collection, Sequence
from typing import Literal, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

GPT2_PATTERN: str
CL100K_PATTERN: str
O200K_PATTERN: str
SUPERWORD_GPT2_PATTERN: str
SUPERWORD_GPT4_PATTERN: str
UNICODE_VERSION: str
__version__: str

#: One regex, or steps in turn: regexes and (regex, behavior, invert) splits.
_Pattern = str | tuple[str | tuple[str, str, bool], ...]

@final
class WordCounts:
    def __new__(cls, items: Sequence[tuple[bytes, int]] | None = None) -> WordCounts: ...
    def __len__(self) -> int: ...
    def total(self) -> int: ...
    def merge(self, other: WordCounts) -> None: ...
    def items(self) -> list[tuple[bytes, int]]: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> WordCounts: ...
    def to_partitions(self, n_parts: int) -> list[bytes]: ...
    def add_bytes(self, data: bytes) -> int: ...

class Encoder:
    def __new__(cls, *args: object, **kwargs: object) -> Self: ...
    def _build(
        self,
        vocab: list[tuple[int, bytes]],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[tuple[str, int]],
        pattern: _Pattern,
        *,
        bpe: str = "gpt2",
        whole: bool = False,
        normalization: str | None = None,
        match_specials: bool = True,
        added: list[tuple[bool, bool, bool, bool]] = ...,
    ) -> None: ...
    def _n_whole(self) -> int: ...
    def _merges_grow(self) -> bool: ...
    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | Collection[str] = "all",
        disallowed_special: Literal["all"] | Collection[str] = (),
        add_special_tokens: bool = False,
    ) -> list[int]: ...
    def encode_ordinary(self, text: str) -> list[int]: ...
    def _encode(self, text: str, allowed_special: list[str] | None = None) -> list[int]: ...
    def _encode_to_numpy(
        self, text: str, allowed_special: list[str] | None = None, small: bool = False
    ) -> npt.NDArray[np.uint16] | npt.NDArray[np.uint32]: ...
    def _encode_batch(
        self, texts: list[str], allowed_special: list[str] | None = None, num_threads: int = 1
    ) -> list[list[int]]: ...
    def _encode_batch_to_numpy(
        self,
        texts: list[str],
        allowed_special: list[str] | None = None,
        num_threads: int = 1,
        small: bool = False,
    ) -> tuple[npt.NDArray[np.uint16] | npt.NDArray[np.uint32], npt.NDArray[np.uint64]]: ...
    def _encode_prefix(
        self, text: str, allowed_special: list[str] | None = None, last: bool = False
    ) -> tuple[list[int], int]: ...
    def _decode_bytes(self, ids: list[int]) -> bytes: ...

def count_file(
    counts: WordCounts,
    path: str | os.PathLike[str],
    *,
    start: int,
    end: int,
    special_tokens: list[str],
    pattern: _Pattern,
    strict: bool,
    chunk_size: int,
    num_threads: int,
    compression: str | None = None,
    json_field: str | None = None,
    progress: Callable[[int], object] | None = None,
) -> tuple[int, int, int, int]: ...
def count_texts(
    counts: WordCounts,
    texts: list[str],
    *,
    special_tokens: list[str],
    pattern: _Pattern,
    num_threads: int,
) -> None: ...
def count_rows(
    counts: WordCounts,
    columns: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]],
    *,
    first_row: int,
    special_tokens: list[str],
    pattern: _Pattern,
    num_threads: int,
) -> None: ...
def sum_blobs(blobs: list[bytes]) -> bytes: ...
def table_of_blobs(blobs: list[bytes], *, num_threads: int) -> WordCounts: ...
def counts_file_bytes(counts: WordCounts, meta: bytes, n_parts: int) -> bytes: ...
def read_counts_header(path: str | os.PathLike[str]) -> tuple[bytes, int]: ...
def read_counts_file(
    counts: WordCounts, path: str | os.PathLike[str], *, parts: list[int] | None = None
) -> tuple[bytes, int]: ...
def find_cuts(
    path: str | os.PathLike[str],
    targets: list[int],
    *,
    special_tokens: list[str],
    pattern: _Pattern,
    max_back: int = ...,
) -> list[int | None]: ...
def pretokenize(text: str, *, special_tokens: list[str], pattern: _Pattern) -> list[str]: ...
def pretokenizer_kind(pattern: _Pattern) -> str: ...
def canonical_merges(
    ranks: list[tuple[bytes, int]],
) -> tuple[list[list[bytes]], list[int]]: ...
def encode_block(
    encoder: Encoder,
    data: bytes,
    *,
    last: bool,
    piece_bytes: int,
    num_threads: int,
    small: bool,
) -> tuple[npt.NDArray[np.uint16] | npt.NDArray[np.uint32], npt.NDArray[np.uint64], int]: ...
def train_bpe(
    counts: WordCounts,
    num_merges: int,
    *,
    num_threads: int = 1,
    consume: bool = False,
    progress: Callable[[int], object] | None = None,
    start: list[tuple[int, int]] = ...,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    superword: tuple[int | None, bool] | None = None,
) -> tuple[list[tuple[int, int]], list[bytes], str]: ...
