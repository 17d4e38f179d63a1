"""Counting, the first stage of training: files (or texts) → word counts, in the Rust core; and
`pretokenize`, the pieces both counting and encoding see. A pure step: the same call on a byte
range of a file gives that shard's table, and tables add up with `WordCounts.merge`, which is
what a cluster run needs (`distributed/`). No merging of pairs happens here (`train.py`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import _core
from ._checks import (
    check_callback,
    check_input_files,
    check_num_threads,
    check_special_tokens,
    check_text,
)
from .patterns import resolve_pattern

WordCounts = _core.WordCounts

#: Bytes per chunk handed to a worker; a chunk grows past it only until a safe cut is found.
DEFAULT_CHUNK_SIZE = 4 << 20
#: Each worker holds about two chunks, so chunks past this size would only cost memory.
MAX_CHUNK_SIZE = 1 << 30


@dataclass
class CountStats:
    """What counting saw: bytes read, invalid UTF-8 sequences replaced by U+FFFD, chunks and the
    largest chunk (files); characters read (texts). A largest chunk far above the chunk size
    means a long stretch had no safe cut and was held in memory whole."""

    n_bytes: int = 0
    n_replaced: int = 0
    n_chunks: int = 0
    max_chunk: int = 0
    n_chars: int = 0


def pretokenize(
    text: str, *, special_tokens: Iterable[str] | None = None, pattern: str = "gpt2"
) -> list[str]:
    """The pieces training and encoding see: special tokens whole, the rest as pretokens.

    >>> pretokenize("it's 12 cats<|endoftext|>!", special_tokens=["<|endoftext|>"])
    ['it', "'s", ' 12', ' cats', '<|endoftext|>', '!']
    """
    return _core.pretokenize(
        check_text(text),
        special_tokens=check_special_tokens(special_tokens),
        pattern=resolve_pattern(pattern),
    )


def _check_errors(errors: str) -> bool:
    if errors not in ("replace", "strict"):
        raise ValueError(f"errors must be 'replace' or 'strict', got {errors!r}")
    return errors == "strict"


def count_files(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: str = "gpt2",
    num_threads: int | None = None,
    errors: str = "replace",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """Counts the pretokens of text files; special tokens split the text and are not counted.

    `progress(n)` gets the bytes read so far, over all files; `stats` collects totals.

    >>> counts = count_files("corpus.txt", special_tokens=["<|endoftext|>"])  # doctest: +SKIP
    """
    files = check_input_files(paths)
    return count_ranges(
        [(path, 0, None) for path in files],
        special_tokens=special_tokens,
        pattern=pattern,
        num_threads=num_threads,
        errors=errors,
        chunk_size=chunk_size,
        progress=progress,
        stats=stats,
    )


def count_ranges(
    ranges: Iterable[tuple[str | os.PathLike[str], int, int | None]],
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: str = "gpt2",
    num_threads: int | None = None,
    errors: str = "replace",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """`count_files` of byte ranges `(path, start, end)` (`end` None: to the file's end), each
    cut only at a safe point (see `bytepair.distributed.shards.plan_shards`): the counting step
    of a shard."""
    specials = check_special_tokens(special_tokens)
    regex = resolve_pattern(pattern)
    strict = _check_errors(errors)
    threads = check_num_threads(num_threads)
    check_callback(progress)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise ValueError(f"chunk_size must be an integer number of bytes, got {chunk_size!r}")
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(
            f"chunk_size must be between 1 and {MAX_CHUNK_SIZE:,} bytes, got {chunk_size:,} "
            f"(the default, {DEFAULT_CHUNK_SIZE:,}, suits most inputs)"
        )
    total = WordCounts()
    stats = stats if stats is not None else CountStats()
    for path, start, end in ranges:
        done = stats.n_bytes
        # progress over all ranges (a typed name: mypy infers no type for this lambda as an
        # argument inside the loop)
        reported: Callable[[int], object] | None = (
            None if progress is None else (lambda n, done=done: progress(done + n))
        )
        n_bytes, n_replaced, n_chunks, max_chunk = _core.count_file(
            total,
            os.fspath(path),
            start=start,
            end=2**64 - 1 if end is None else end,
            special_tokens=specials,
            pattern=regex,
            strict=strict,
            chunk_size=chunk_size,
            num_threads=threads,
            progress=reported,
        )
        stats.n_bytes += n_bytes
        stats.n_replaced += n_replaced
        stats.n_chunks += n_chunks
        stats.max_chunk = max(stats.max_chunk, max_chunk)
    return total


def count_texts(
    texts: Iterable[str],
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: str = "gpt2",
    num_threads: int | None = None,
    batch_bytes: int = 16 << 20,
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """Counts the pretokens of each text of an iterable; no pretoken spans two texts.

    Texts are gathered into batches of about `batch_bytes`, so memory stays bounded.
    `progress(n)` gets the characters read so far; `stats` collects their total.

    >>> len(count_texts(["a cat", "a dog"]))
    3
    """
    specials = check_special_tokens(special_tokens)
    regex = resolve_pattern(pattern)
    threads = check_num_threads(num_threads)
    check_callback(progress)
    total = WordCounts()
    batch: list[str] = []
    size = done = 0

    def flush() -> None:
        _core.count_texts(total, batch, special_tokens=specials, pattern=regex, num_threads=threads)
        batch.clear()

    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"item {i} of the texts is {type(text).__name__}, not str")
        batch.append(check_text(text))
        size += len(text)
        if size >= batch_bytes:
            flush()
            done += size
            size = 0
            if progress is not None:
                progress(done)
    flush()
    if stats is not None:
        stats.n_chars += done + size
    return total
