"""Superword training, SuperBPE's curriculum (Liu et al. 2025; docs/spec.md §1.9): the first
`start` merges are learned as usual, then the corpus is counted again with a pattern that no
longer splits at whitespace (a pretoken is a line, or the stretch of a line between numbers), the
first merges are applied to those long words, and merging goes on there, so tokens may span
words (" of the", ", and"). Stage two refuses a token of more than `max_words` words, one
holding ": " (the recipe's rules) and one whose bytes are already a token. The tokenizer splits
text with the second pattern. Both stages are the Rust merge loop's; this module checks the
options and runs them in turn.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from . import _core
from ._checks import check_num_threads
from ._progress import Bar
from .count import CountStats
from .patterns import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    GPT2_SUPERWORD_PATTERN,
    GPT4_SUPERWORD_PATTERN,
    O200K_PATTERN,
    resolve_pattern,
)

if TYPE_CHECKING:
    from .count import WordCounts
    from .encoding import Tokenizer
    from .resume import Plan
    from .train import TrainReport

#: The second stage's pattern after each preset of the first: numbers split as the first splits
#: them, so the first stage's merges on numbers apply unchanged.
SECOND_PATTERN = {
    GPT2_PATTERN: GPT2_SUPERWORD_PATTERN,
    CL100K_PATTERN: GPT4_SUPERWORD_PATTERN,
    O200K_PATTERN: GPT4_SUPERWORD_PATTERN,
}

#: The recipe's limit on the words of a token (its authors' `mw4`).
MAX_WORDS = 4

#: A character other than whitespace, then a space: inside a token, the mark of one that spans
#: words, which only the second stage makes (first-stage pretokens keep a space only at their
#: start or inside whitespace, as GPT-2's " \xa0 \xa0"). The core's encoder tells superword
#: tokenizers by the same test (`encode/parts.rs`).
_WORD_THEN_SPACE = re.compile(r"[^\s] ")


def spans_words(token: bytes) -> bool:
    r"""Whether `token` spans words (holds a space after a character other than whitespace; a
    partial character counts as other).

    >>> spans_words(b" of the"), spans_words(b" the"), spans_words(b" \xc2\xa0 \xc2\xa0")
    (True, False, False)
    """
    return _WORD_THEN_SPACE.search(token.decode("utf-8", errors="replace")) is not None


@dataclass(frozen=True)
class Superword:
    """The options of superword training."""

    #: Merges made before the second stage (SuperBPE's transition point, in merges).
    start: int
    #: The second stage's pattern (a regex).
    pattern: str
    #: A token of more words (runs of bytes other than the space) is never made; None: no limit.
    max_words: int | None = MAX_WORDS
    #: Whether a token may hold ": ".
    colon_space: bool = False

    @classmethod
    def of(
        cls,
        start: int | None,
        first_pattern: str,
        pattern: str | None = None,
        max_words: int | None = MAX_WORDS,
        colon_space: bool = False,
    ) -> Superword | None:
        """The options, checked (None when `start` is None: no second stage)."""
        if start is None:
            if pattern is not None:
                raise ValueError("superword_pattern needs superword_from (the merges before it)")
            return None
        _count("superword_from", start, 0)
        if max_words is not None:
            _count("superword_max_words", max_words, 1)
        if not isinstance(colon_space, bool):
            raise ValueError(f"superword_colon_space must be True or False, got {colon_space!r}")
        if pattern is None:
            if first_pattern not in SECOND_PATTERN:
                raise ValueError(
                    "superword training after a custom pattern needs the second stage's "
                    "pattern: pass superword_pattern (CLI: --superword-pattern)"
                )
            pattern = SECOND_PATTERN[first_pattern]
        return cls(start, resolve_pattern(pattern), max_words, colon_space)

    def core(self) -> tuple[int | None, bool]:
        """The rules as the core's merge loop takes them."""
        return (self.max_words, self.colon_space)


def with_superword(
    run: Plan,
    start: int | None,
    pattern: str | None,
    max_words: int | None,
    colon_space: bool,
) -> Plan:
    """`run` with superword training's options, checked (unchanged when `start` is None)."""
    superword = Superword.of(start, run.pattern, pattern, max_words, colon_space)
    if superword is not None and run.base is not None:
        raise ValueError(
            "superword training cannot continue from a tokenizer: its first stage is a run of "
            "its own; train afresh with superword_from (CLI: --superword-from)"
        )
    return replace(run, superword=superword)


def _count(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not least <= value < 2**31:
        raise ValueError(f"{name} must be from {least} to 2**31 - 1, got {value}")


def merge_two_stages(
    counts: WordCounts,
    count: Callable[[str, Callable[[int], object], CountStats], WordCounts],
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
    from .train import merge_stage

    superword = run.superword
    assert superword is not None
    if superword.start >= run.num_merges:
        # No second stage: the merges and the pattern are the first stage's.
        return merge_stage(counts, replace(run, superword=None), report, show, True, num_threads)
    report.n_words = len(counts)
    bar = Bar(show, superword.start, "merges (words)", "merge", scale=False)
    began = time.perf_counter()
    try:
        start, _, _ = _core.train_bpe(
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
