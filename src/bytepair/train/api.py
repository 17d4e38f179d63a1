"""The training functions (files, iterables, datasets, counts): each checks its options into a
`Plan` (`plan.py`), counts (`count.py`, Rust) and runs the merge stages (`stages.py`, Rust), with
progress, and returns a `Tokenizer`. The semantics are those of docs/spec.md §1 (CS336's): ties go
to the lexicographically greater pair; ids are bytes, then merges, then special tokens.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .._progress import Bar, show_progress
from ..count import (
    DEFAULT_CHUNK_SIZE,
    CountStats,
    WordCounts,
    count_dataset,
    count_ranges,
    count_texts,
)
from ..encoding import Tokenizer
from ..patterns import Pattern
from ..sources import Inputs, expand_inputs
from .plan import Plan, plan, with_superword
from .shaping import Shaping
from .stages import TrainReport, after_counting, merge_stage, merge_two_stages
from .superword import MAX_WORDS

__all__ = [
    "ContinueFrom",
    "train",
    "train_bpe",
    "train_from_counts",
    "train_from_counts_with_report",
    "train_from_dataset",
    "train_from_iterator",
    "train_with_report",
]

#: What `continue_from` takes: a tokenizer, or a path `bytepair.load` reads.
ContinueFrom = Tokenizer | str | os.PathLike[str] | None


def train_with_report(
    inputs: Inputs,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: Pattern | None = None,
    num_threads: int | None = None,
    errors: str = "replace",
    progress: bool | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    continue_from: ContinueFrom = None,
    jsonl_field: str = "text",
    column: str = "text",
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
    superword_from: int | None = None,
    superword_pattern: Pattern | None = None,
    superword_max_words: int | None = MAX_WORDS,
    superword_colon_space: bool = False,
) -> tuple[Tokenizer, TrainReport]:
    """`train`, also returning the `TrainReport` (sizes, merges done, time per stage)."""
    shaping = Shaping.of(min_frequency, max_token_length, pad_vocab_to_multiple)
    run = plan(vocab_size, special_tokens, pattern, continue_from, shaping)
    run = with_superword(
        run, superword_from, superword_pattern, superword_max_words, superword_colon_space
    )
    sources = expand_inputs(inputs)
    files = [src.path for src in sources]
    show = show_progress(progress)
    report = TrainReport()
    stats = CountStats()
    bar = Bar(show, sum(src.size for src in sources), "reading", divisor=1024)
    start = time.perf_counter()

    def count(pattern: Pattern, progress: Callable[[int], object], stats: CountStats) -> WordCounts:
        return count_ranges(
            [(src, 0, None) for src in sources],
            special_tokens=run.special_tokens,
            pattern=pattern,
            num_threads=num_threads,
            errors=errors,
            chunk_size=chunk_size,
            jsonl_field=jsonl_field,
            column=column,
            stats=stats,
            progress=progress,
        )

    try:
        counts = count(run.pattern, bar.to, stats)
    finally:
        bar.close()
    report.seconds["pretokenize+count"] = time.perf_counter() - start
    report.chunk_size = chunk_size
    after_counting(report, stats, files)
    if run.superword is not None:
        tok = merge_two_stages(counts, count, run, report, show, num_threads)
    else:
        tok = merge_stage(counts, run, report, show, consume=True, num_threads=num_threads)
    return tok, report


def train(
    inputs: Inputs,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: Pattern | None = None,
    num_threads: int | None = None,
    errors: str = "replace",
    progress: bool | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    continue_from: ContinueFrom = None,
    jsonl_field: str = "text",
    column: str = "text",
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
    superword_from: int | None = None,
    superword_pattern: Pattern | None = None,
    superword_max_words: int | None = MAX_WORDS,
    superword_colon_space: bool = False,
) -> Tokenizer:
    """Trains a byte-level BPE tokenizer on files: paths, globs or folders of text, JSON lines
    (each record's `jsonl_field` a document) or Parquet (each row's `column` a document), plain
    or compressed (`.gz`, `.zst`). A record is a document as text between two special tokens
    is: training on records equals training on their texts joined by `<|endoftext|>`.

    `vocab_size` counts the 256 bytes, the merges and the special tokens. `pattern` is a preset
    ("gpt2", the default, "cl100k", "o200k") or a regex. Invalid UTF-8 is replaced by U+FFFD
    (`errors="replace"`, the count is reported) or refused (`"strict"`). `progress=None` shows
    progress bars only when stderr is a terminal. `continue_from` (a tokenizer or a path) keeps
    its ids and merges, applies them to the words of `inputs` and merges on to `vocab_size`;
    its pattern and special tokens are used (new special tokens are added after).
    Shaping (docs/spec.md §1.8): `min_frequency` ends training before a pair seen fewer times
    is merged; `max_token_length` skips merges that make a token longer (bytes);
    `pad_vocab_to_multiple` adds reserved special tokens `<|reserved_0|>`, ... until the
    vocabulary's size is a multiple of it (on top of `vocab_size`).
    Superword training (SuperBPE, docs/spec.md §1.9): with `superword_from=T`, merges after the
    first T are learned on lines instead of words (`superword_pattern`; by default the preset
    after `pattern`), so tokens may span words, up to `superword_max_words` words (None: no
    limit), holding ": " only with `superword_colon_space`.

    >>> tok = train(["data.txt"], 10_000, ["<|endoftext|>"])  # doctest: +SKIP
    """
    tok, report = train_with_report(
        inputs,
        vocab_size,
        special_tokens,
        pattern=pattern,
        num_threads=num_threads,
        errors=errors,
        progress=progress,
        chunk_size=chunk_size,
        continue_from=continue_from,
        jsonl_field=jsonl_field,
        column=column,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        pad_vocab_to_multiple=pad_vocab_to_multiple,
        superword_from=superword_from,
        superword_pattern=superword_pattern,
        superword_max_words=superword_max_words,
        superword_colon_space=superword_colon_space,
    )
    if report.n_replaced:
        warnings.warn(
            f"replaced {report.n_replaced:,} invalid UTF-8 sequences with U+FFFD "
            f"(pass errors='strict' to refuse invalid input)",
            stacklevel=2,
        )
    if report.uncut_note():
        warnings.warn(report.uncut_note(), stacklevel=2)
    return tok


def train_from_iterator(
    texts: Iterable[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: Pattern | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    continue_from: ContinueFrom = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
    superword_from: int | None = None,
    superword_pattern: Pattern | None = None,
    superword_max_words: int | None = MAX_WORDS,
    superword_colon_space: bool = False,
) -> Tokenizer:
    """Trains on an iterable of strings; each string is a separate text (no pretoken spans two).
    Superword training (`superword_from`, as in `train`) reads the texts twice: pass a list or
    another iterable that starts over, not an iterator.

    >>> tok = train_from_iterator(["low lower", "newest widest"], 260)
    >>> len(tok.merges)
    4
    """
    shaping = Shaping.of(min_frequency, max_token_length, pad_vocab_to_multiple)
    run = plan(vocab_size, special_tokens, pattern, continue_from, shaping)
    run = with_superword(
        run, superword_from, superword_pattern, superword_max_words, superword_colon_space
    )
    if run.superword is not None and iter(texts) is texts:
        raise TypeError(
            "superword training reads the texts twice, but an iterator can be read once: pass "
            "a list, or an iterable whose iter() starts over"
        )

    def count(pattern: Pattern, progress: Callable[[int], object], stats: CountStats) -> WordCounts:
        return count_texts(
            texts,
            special_tokens=run.special_tokens,
            pattern=pattern,
            num_threads=num_threads,
            progress=progress,
            stats=stats,
        )

    return _count_and_merge(
        count, run, (progress, "char"), num_threads, "the iterable gave no text"
    )


def train_from_dataset(
    dataset: Any,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    column: str = "text",
    pattern: Pattern | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    continue_from: ContinueFrom = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
    superword_from: int | None = None,
    superword_pattern: Pattern | None = None,
    superword_max_words: int | None = MAX_WORDS,
    superword_colon_space: bool = False,
) -> Tokenizer:
    """Trains on the text column of a Hugging Face `datasets.Dataset` or `IterableDataset` (or
    a pyarrow `Table`/`RecordBatchReader`), each row a document, read in Arrow batches.
    Superword training (`superword_from`, as in `train`) reads the dataset twice.

    >>> tok = train_from_dataset(load_dataset("roneneldan/TinyStories"), 10_000)  # doctest: +SKIP
    """
    shaping = Shaping.of(min_frequency, max_token_length, pad_vocab_to_multiple)
    run = plan(vocab_size, special_tokens, pattern, continue_from, shaping)
    run = with_superword(
        run, superword_from, superword_pattern, superword_max_words, superword_colon_space
    )

    def count(pattern: Pattern, progress: Callable[[int], object], stats: CountStats) -> WordCounts:
        return count_dataset(
            dataset,
            column=column,
            special_tokens=run.special_tokens,
            pattern=pattern,
            num_threads=num_threads,
            progress=progress,
            stats=stats,
        )

    empty = f"the dataset's column {column!r} holds no text"
    return _count_and_merge(count, run, (progress, "B"), num_threads, empty)


def _count_and_merge(
    count: Callable[[Pattern, Callable[[int], object], CountStats], WordCounts],
    run: Plan,
    progress: tuple[bool | None, str],
    num_threads: int | None,
    empty: str,
) -> Tokenizer:
    """The stages on texts held in memory: `count(pattern, progress, stats)`, then the merge
    loop (or both stages of superword training); `progress`: whether to show it, and in what
    unit."""
    show = show_progress(progress[0])
    report = TrainReport()
    bar = Bar(show, 0, "reading", progress[1], divisor=1024)
    start = time.perf_counter()
    stats = CountStats()
    try:
        counts = count(run.pattern, bar.to, stats)
    finally:
        bar.close()
    report.seconds["pretokenize+count"] = time.perf_counter() - start
    if stats.n_chars == 0 and stats.n_bytes == 0:
        raise ValueError(f"the input is empty ({empty}): there is no text to train on")
    if run.superword is not None:
        return merge_two_stages(counts, count, run, report, show, num_threads)
    return merge_stage(counts, run, report, show, consume=True, num_threads=num_threads)


def train_from_counts(
    counts: WordCounts,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: Pattern | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    continue_from: ContinueFrom = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
) -> Tokenizer:
    """Runs the merge stage alone on word counts (e.g. merged from shards); `counts` is kept.

    >>> from bytepair import count_texts
    >>> train_from_counts(count_texts(["aaa ab"]), 257).merges
    [(b'a', b'a')]
    """
    tok, _ = train_from_counts_with_report(
        counts,
        vocab_size,
        special_tokens,
        pattern=pattern,
        num_threads=num_threads,
        progress=progress,
        continue_from=continue_from,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        pad_vocab_to_multiple=pad_vocab_to_multiple,
    )
    return tok


def train_from_counts_with_report(
    counts: WordCounts,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: Pattern | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    continue_from: ContinueFrom = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
    consume: bool = False,
    report: TrainReport | None = None,
) -> tuple[Tokenizer, TrainReport]:
    """`train_from_counts`, also returning the `TrainReport` (`report`: one to go on filling,
    e.g. with the counting stage done elsewhere). `consume` empties `counts` instead of
    copying it (the merge loop reuses its memory)."""
    shaping = Shaping.of(min_frequency, max_token_length, pad_vocab_to_multiple)
    run = plan(vocab_size, special_tokens, pattern, continue_from, shaping)
    report = report if report is not None else TrainReport()
    show = show_progress(progress)
    tok = merge_stage(counts, run, report, show, consume=consume, num_threads=num_threads)
    return tok, report


def train_bpe(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: list[str],
    **kwargs: Any,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """The CS336 adapter: `(vocab, merges)` for `input_path` (other options as in `train`).

    >>> vocab, merges = train_bpe("corpus.en", 500, ["<|endoftext|>"])  # doctest: +SKIP
    """
    kwargs.setdefault("progress", False)
    tok = train(input_path, vocab_size, special_tokens, **kwargs)
    return tok.vocab, tok.merges
