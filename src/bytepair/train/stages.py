"""Training's stages after counting: the merge loop on the words (Rust's), the layout of its result
(`plan.layout`), and superword training's two merge stages with the second count between them;
`TrainReport` gathers what each did. The public functions (`api.py`) and training on a cluster
(`distributed/`) count, then call these.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._checks import check_num_threads
from .._core import train_bpe
from .._progress import Bar
from ..count import DEFAULT_CHUNK_SIZE, CountStats, WordCounts
from ..encoding import Tokenizer
from ..patterns import Pattern
from .plan import Plan, layout
from .shaping import Shaping, stop_reason


@dataclass
class TrainReport:
    """What a training run did, for the closing summary."""

    n_bytes: int = 0
    n_replaced: int = 0
    max_chunk: int = 0
    chunk_size: int = DEFAULT_CHUNK_SIZE
    n_words: int = 0
    n_merges: int = 0
    n_merges_requested: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: Why the merge loop ended (the core's name: "full", "no pair", "min frequency", ...).
    stop: str = "full"
    shaping: Shaping = field(default_factory=Shaping)
    #: The reserved special tokens that padding added, and the vocabulary's size then.
    n_reserved: int = 0
    n_vocab: int = 0
    #: Superword training: the merges made before the second stage, and its distinct words.
    superword_from: int | None = None
    n_superwords: int = 0

    def summary(self) -> str:
        """A few human-readable lines."""
        stages = ", ".join(f"{name} {s:.2f} s" for name, s in self.seconds.items())
        lines = [
            f"input: {self.n_bytes:,} bytes; unique words: {self.n_words:,}",
            f"merges: {self.n_merges:,} of {self.n_merges_requested:,}; time: {stages}",
        ]
        if self.superword_from is not None:
            lines.insert(
                1,
                f"superwords from merge {self.superword_from:,}; unique superwords: "
                f"{self.n_superwords:,}",
            )
        if self.stop in ("min frequency", "max token length"):
            option = "--" + self.stop.replace(" ", "-")
            reason = stop_reason(self.stop, self.shaping)
            lines.append(f"stopped at {self.n_merges:,} merges: {reason} ({option})")
        if self.n_reserved:
            lines.append(
                f"padded to {self.n_vocab:,} tokens with {self.n_reserved:,} reserved special "
                f"tokens (a multiple of {self.shaping.pad_vocab_to_multiple:,})"
            )
        if self.n_replaced:
            lines.append(f"replaced {self.n_replaced:,} invalid UTF-8 sequences with U+FFFD")
        if self.uncut_note():
            lines.append(self.uncut_note())
        return "\n".join(lines)

    def uncut_note(self) -> str:
        """A warning when a stretch of the input had no safe cut and was held in memory whole."""
        if self.max_chunk <= max(4 * self.chunk_size, 16 << 20):
            return ""
        return (
            f"note: {self.max_chunk / 2**20:,.1f} MiB of text had no safe cut point and was "
            f"read into memory whole (a pretoken that long, or a custom pattern and no special "
            f"token in that stretch)"
        )


def after_counting(report: TrainReport, stats: CountStats, files: list[Path]) -> None:
    """The report takes counting's figures; input files that held no text are refused."""
    report.n_bytes, report.n_replaced = stats.n_bytes, stats.n_replaced
    report.max_chunk = stats.max_chunk
    if stats.n_bytes == 0:
        names = ", ".join(str(p) for p in files)
        raise ValueError(f"the input is empty ({names}): there is no text to train on")


def merge_stage(
    counts: WordCounts,
    run: Plan,
    report: TrainReport,
    show: bool,
    consume: bool,
    num_threads: int | None,
) -> Tokenizer:
    """The merge loop on `counts` (emptied when `consume`), as planned by `run`; fills `report`
    and warns when it ends early (no pair left, or none the shaping options allow)."""
    num_threads = check_num_threads(num_threads)
    report.n_words = len(counts)
    report.n_merges_requested = run.num_merges
    bar = Bar(show, run.num_merges, "merges", "merge", scale=False)
    start = time.perf_counter()
    try:
        pairs, token_bytes, report.stop = train_bpe(
            counts,
            run.num_merges,
            num_threads=num_threads,
            consume=consume,
            progress=bar.to,
            start=run.start,
            min_frequency=run.shaping.min_frequency,
            max_token_length=run.shaping.max_token_length,
            superword=run.superword.core() if run.superword else None,
        )
    finally:
        bar.close()
    report.seconds["merges"] = time.perf_counter() - start
    report.n_merges = len(pairs)
    report.shaping = run.shaping
    if len(pairs) < run.num_merges:
        warnings.warn(
            f"stopped after {len(pairs)} of {run.num_merges} merges: "
            f"{stop_reason(report.stop, run.shaping)}; the vocabulary has "
            f"{len(token_bytes) + len(run.special_tokens)} tokens",
            stacklevel=3,
        )
    tok = layout(run, pairs, token_bytes)
    report.n_vocab = len(tok.vocab)
    report.n_reserved = len(tok.special_tokens) - len(run.special_tokens)
    return tok


def merge_two_stages(
    counts: WordCounts,
    count: Callable[[Pattern, Callable[[int], object], CountStats], WordCounts],
    run: Plan,
    report: TrainReport,
    show: bool,
    num_threads: int | None,
) -> Tokenizer:
    """The merge stage of a run with `run.superword`: the first `start` merges on `counts`
    (the first pattern's words, emptied), then `count(pattern, progress, stats)` again with the
    second pattern, and the merge loop from those merges on to `run.num_merges` with the second
    stage's rules. The first stage ends early only when no pair is left (or the shaping options
    end it); the second then starts from the merges made."""
    superword = run.superword
    assert superword is not None
    if superword.start >= run.num_merges:
        # No second stage: the merges and the pattern are the first stage's.
        return merge_stage(counts, replace(run, superword=None), report, show, True, num_threads)
    report.n_words = len(counts)
    bar = Bar(show, superword.start, "merges (words)", "merge", scale=False)
    began = time.perf_counter()
    try:
        start, _, _ = train_bpe(
            counts,
            superword.start,
            num_threads=check_num_threads(num_threads),
            consume=True,
            progress=bar.to,
            min_frequency=run.shaping.min_frequency,
            max_token_length=run.shaping.max_token_length,
        )
    finally:
        bar.close()
    report.seconds["merges (words)"] = time.perf_counter() - began
    report.superword_from = len(start)
    n_words = report.n_words
    bar = Bar(show, 0, "reading (superwords)", divisor=1024)
    began = time.perf_counter()
    try:
        again = count(superword.pattern, bar.to, CountStats())
    finally:
        bar.close()
    report.seconds["count (superwords)"] = time.perf_counter() - began
    second = replace(run, pattern=superword.pattern, start=start)
    tok = merge_stage(again, second, report, show, True, num_threads)
    report.seconds["merges (superwords)"] = report.seconds.pop("merges")
    report.n_superwords, report.n_words = report.n_words, n_words
    return tok
