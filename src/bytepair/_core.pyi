"""Stubs for the Rust core (see rust/src/py.rs); use the public API in `bytepair` instead."""

from collections.abc import Callable, Sequence

import numpy as np

GPT2_PATTERN: str
CL100K_PATTERN: str
O200K_PATTERN: str
UNICODE_VERSION: str
__version__: str

class WordCounts:
    def __init__(self, items: Sequence[tuple[bytes, int]] | None = None) -> None: ...
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
    def __init__(
        self,
        vocab: list[tuple[int, bytes]],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[tuple[str, int]],
        pattern: str,
    ) -> None: ...
    def encode(self, text: str, allowed_special: list[str] | None = None) -> list[int]: ...
    def encode_to_numpy(
        self, text: str, allowed_special: list[str] | None = None, small: bool = False
    ) -> np.ndarray: ...
    def encode_batch(
        self, texts: list[str], allowed_special: list[str] | None = None, num_threads: int = 1
    ) -> list[list[int]]: ...
    def encode_batch_to_numpy(
        self,
        texts: list[str],
        allowed_special: list[str] | None = None,
        num_threads: int = 1,
        small: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def encode_prefix(
        self, text: str, allowed_special: list[str] | None = None, last: bool = False
    ) -> tuple[list[int], int]: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...

def count_file(
    counts: WordCounts,
    path: str,
    *,
    start: int,
    end: int,
    special_tokens: list[str],
    pattern: str,
    strict: bool,
    chunk_size: int,
    num_threads: int,
    progress: Callable[[int], object] | None = None,
) -> tuple[int, int, int, int]: ...
def count_texts(
    counts: WordCounts,
    texts: list[str],
    *,
    special_tokens: list[str],
    pattern: str,
    num_threads: int,
) -> None: ...
def sum_blobs(blobs: list[bytes]) -> bytes: ...
def table_of_blobs(blobs: list[bytes], *, num_threads: int) -> WordCounts: ...
def counts_file_bytes(counts: WordCounts, meta: bytes, n_parts: int) -> bytes: ...
def read_counts_header(path: str) -> tuple[bytes, int]: ...
def read_counts_file(
    counts: WordCounts, path: str, *, parts: list[int] | None = None
) -> tuple[bytes, int]: ...
def find_cuts(
    path: str,
    targets: list[int],
    *,
    special_tokens: list[str],
    pattern: str,
    max_back: int = ...,
) -> list[int | None]: ...
def pretokenize(text: str, *, special_tokens: list[str], pattern: str) -> list[str]: ...
def pretokenizer_kind(pattern: str) -> str: ...
def encode_block(
    encoder: Encoder,
    data: bytes,
    *,
    last: bool,
    piece_bytes: int,
    num_threads: int,
    small: bool,
) -> tuple[np.ndarray, np.ndarray, int]: ...
def train_bpe(
    counts: WordCounts,
    num_merges: int,
    *,
    consume: bool = False,
    progress: Callable[[int], object] | None = None,
    start: list[tuple[int, int]] = ...,
) -> tuple[list[tuple[int, int]], list[bytes]]: ...
