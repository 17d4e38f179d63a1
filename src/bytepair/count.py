"""Counting, the first stage of training: inputs → word counts, in the Rust core; and
`pretokenize`, the pieces both counting and encoding see. Inputs are files (`sources.py` says
which kinds: the core reads text and JSON lines, plain or compressed, itself; Parquet comes in
Arrow batches read by pyarrow), Arrow tables and datasets, or strings. A pure step: the same
call on a byte range of a file gives that shard's table, and tables add up with
`WordCounts.merge`, which is what a cluster run needs (`distributed/`). No merging of pairs
happens here (`train/`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ._background import in_background
from ._checks import check_callback, check_num_threads, check_special_tokens, check_text
from ._core import WordCounts as WordCounts
from ._core import count_file, count_rows
from ._core import count_texts as core_count_texts
from ._core import pretokenize as core_pretokenize
from .patterns import Pattern, resolve_pattern
from .sources import (
    InputError,
    Inputs,
    Source,
    arrow_batches,
    expand_inputs,
    gathered,
    open_parquet,
    parquet_batches,
    parquet_errors,
    row_group_starts,
    text_column,
)

#: Bytes per chunk handed to a worker; a chunk grows past it only until a safe cut is found.
DEFAULT_CHUNK_SIZE = 4 << 20
#: Each worker holds about two chunks, so chunks past this size would only cost memory.
MAX_CHUNK_SIZE = 1 << 30
#: Rows of a dataset read at a time, and bytes of text handed to the core at a time (8 MB:
#: as fast as 16 or 32 on the large corpus as Parquet, with 375 MB peak RSS against 389-484).
_BATCH_ROWS = 8192
_BATCH = 8 << 20


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
    text: str, *, special_tokens: Iterable[str] | None = None, pattern: Pattern = "gpt2"
) -> list[str]:
    """The pieces training and encoding see: special tokens whole, the rest as pretokens.

    >>> pretokenize("it's 12 cats<|endoftext|>!", special_tokens=["<|endoftext|>"])
    ['it', "'s", ' 12', ' cats', '<|endoftext|>', '!']
    """
    return core_pretokenize(
        check_text(text),
        special_tokens=check_special_tokens(special_tokens),
        pattern=resolve_pattern(pattern),
    )


def _check_errors(errors: str) -> bool:
    if errors not in ("replace", "strict"):
        raise ValueError(f"errors must be 'replace' or 'strict', got {errors!r}")
    return errors == "strict"


def count_files(
    paths: Inputs,
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
    num_threads: int | None = None,
    errors: str = "replace",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    jsonl_field: str = "text",
    column: str = "text",
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """Counts the pretokens of files, globs and folders (`bytepair.sources`: text, `.jsonl`
    records' `jsonl_field`, `.parquet` rows' `column`; plain, `.gz` or `.zst`); special tokens
    split the text and are not counted, and each record is a document of its own.

    `progress(n)` gets the bytes of the files read so far; `stats` collects totals.

    >>> counts = count_files("corpus.txt", special_tokens=["<|endoftext|>"])  # doctest: +SKIP
    """
    return count_ranges(
        [(src, 0, None) for src in expand_inputs(paths)],
        special_tokens=special_tokens,
        pattern=pattern,
        num_threads=num_threads,
        errors=errors,
        chunk_size=chunk_size,
        jsonl_field=jsonl_field,
        column=column,
        progress=progress,
        stats=stats,
    )


def count_ranges(
    ranges: Iterable[tuple[Source | str | os.PathLike[str], int, int | None]],
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
    num_threads: int | None = None,
    errors: str = "replace",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    jsonl_field: str = "text",
    column: str = "text",
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """`count_files` of byte ranges `(file, start, end)` (`end` None: to the file's end), each
    cut only at a safe point (see `bytepair.distributed.shards.plan_shards`; a compressed file
    is read whole, a Parquet range holds the row groups that start in it): the counting step
    of a shard."""
    how = _How(
        check_special_tokens(special_tokens),
        resolve_pattern(pattern),
        check_num_threads(num_threads),
        _check_errors(errors),
        _check_chunk_size(chunk_size),
        _check_name(jsonl_field, "jsonl_field"),
        _check_name(column, "column"),
    )
    check_callback(progress)
    total = WordCounts()
    stats = stats if stats is not None else CountStats()
    done = 0  # file bytes of the ranges before this one
    for item, start, end in ranges:
        src = item if isinstance(item, Source) else expand_inputs(item)[0]
        stop = src.size if end is None else min(end, src.size)

        def reported(n: int, before: int = done) -> object:
            return None if progress is None else progress(before + n)

        if src.kind == "parquet":
            _count_parquet(total, src, (start, stop), how, reported, stats)
        else:
            _count_file(total, src, (start, end), how, reported, stats)
        done += stop - start
    return total


@dataclass(frozen=True)
class _How:
    """The checked options of a count."""

    specials: list[str]
    regex: Pattern
    threads: int
    strict: bool
    chunk_size: int
    jsonl_field: str
    column: str


def _count_file(
    total: WordCounts,
    src: Source,
    span: tuple[int, int | None],
    how: _How,
    progress: Callable[[int], object],
    stats: CountStats,
) -> None:
    """Text or JSON lines, plain or compressed: read, decompressed and parsed by the core."""
    if src.compression and span != (0, None) and span != (0, src.size):
        raise ValueError(f"{src.path}: a compressed file is counted whole, not bytes {span}")
    n_bytes, n_replaced, n_chunks, max_chunk = count_file(
        total,
        os.fspath(src.path),
        start=span[0],
        end=2**64 - 1 if span[1] is None or src.compression else span[1],
        special_tokens=how.specials,
        pattern=how.regex,
        strict=how.strict,
        chunk_size=how.chunk_size,
        num_threads=how.threads,
        compression=src.compression,
        json_field=how.jsonl_field if src.kind == "jsonl" else None,
        progress=progress,
    )
    stats.n_bytes += n_bytes
    stats.n_replaced += n_replaced
    stats.n_chunks += n_chunks
    stats.max_chunk = max(stats.max_chunk, max_chunk)


def _count_parquet(
    total: WordCounts,
    src: Source,
    span: tuple[int, int],
    how: _How,
    progress: Callable[[int], object],
    stats: CountStats,
) -> None:
    """The rows of the row groups that start in `span`, read by pyarrow in batches (on another
    thread, while the core counts the batch before) and counted from Arrow's buffers."""
    pf = open_parquet(src.path, how.column)
    starts = row_group_starts(pf)
    groups = [i for i, at in enumerate(starts) if span[0] <= at < span[1]]
    if not groups:
        return
    first = sum(pf.metadata.row_group(i).num_rows for i in range(groups[0]))
    rows = sum(pf.metadata.row_group(i).num_rows for i in groups)
    where = str(src.path)
    arrays = gathered(_checked(parquet_batches(pf, how.column, groups), src), _BATCH, where)
    for row, group in in_background(arrays, 1):
        _count_arrow(total, group, where, first + row, how, stats)
        done = row + sum(map(len, group))
        progress((span[1] - span[0]) * done // max(rows, 1))


def _checked(batches: Iterator[Any], src: Source) -> Iterator[Any]:
    """pyarrow's batches, its errors naming the file."""
    with parquet_errors(src.path):
        yield from batches


def _count_arrow(
    total: WordCounts, arrays: list[Any], where: str, first_row: int, how: _How, stats: CountStats
) -> None:
    """Counts the rows of Arrow arrays of large strings, numbered from `first_row` on."""
    columns, row = [], first_row
    for array in arrays:
        columns.append(text_column(array, where, row))
        row += len(array)
    try:
        count_rows(
            total,
            columns,
            first_row=first_row,
            special_tokens=how.specials,
            pattern=how.regex,
            num_threads=how.threads,
        )
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None
    stats.n_bytes += sum(int(offsets[-1] - offsets[0]) for offsets, _ in columns if len(offsets))
    stats.n_chunks += 1


def count_dataset(
    dataset: Any,
    *,
    column: str = "text",
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
    num_threads: int | None = None,
    batch_rows: int = _BATCH_ROWS,
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """Counts the pretokens of a text column of a Hugging Face `Dataset`/`IterableDataset` or
    an Arrow table, each row a document, from Arrow's buffers (no Python string per row).

    `progress(n)` gets the text bytes counted so far.
    """
    how = _How(
        check_special_tokens(special_tokens),
        resolve_pattern(pattern),
        check_num_threads(num_threads),
        True,
        DEFAULT_CHUNK_SIZE,
        "text",
        _check_name(column, "column"),
    )
    check_callback(progress)
    stats = stats if stats is not None else CountStats()
    total = WordCounts()
    where = f"column {column!r}"
    arrays = gathered(arrow_batches(dataset, column, batch_rows), _BATCH, where)
    for row, group in in_background(arrays, 1):
        _count_arrow(total, group, where, row, how, stats)
        if progress is not None:
            progress(stats.n_bytes)
    return total


def _check_chunk_size(chunk_size: int) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise ValueError(f"chunk_size must be an integer number of bytes, got {chunk_size!r}")
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(
            f"chunk_size must be between 1 and {MAX_CHUNK_SIZE:,} bytes, got {chunk_size:,} "
            f"(the default, {DEFAULT_CHUNK_SIZE:,}, suits most inputs)"
        )
    return chunk_size


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} must be a non-empty string, got {name!r}")
    return name


def count_texts(
    texts: Iterable[str],
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
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
        try:  # the core reads each string's UTF-8 where CPython keeps it
            count(batch)
        except UnicodeEncodeError:  # a lone surrogate: nothing was counted
            count([check_text(t) for t in batch])
        batch.clear()

    def count(texts: list[str]) -> None:
        core_count_texts(total, texts, special_tokens=specials, pattern=regex, num_threads=threads)

    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"item {i} of the texts is {type(text).__name__}, not str")
        batch.append(text)
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
