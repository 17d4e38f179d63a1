"""Superword training, SuperBPE's curriculum (Liu et al. 2025; docs/spec.md §1.9): the first
`start` merges are learned as usual, then the corpus is counted again with a pattern that no
longer splits at whitespace (a pretoken is a line, or the stretch of a line between numbers), the
first merges are applied to those long words, and merging goes on there, so tokens may span
words (" of the", ", and"). Stage two refuses a token of more than `max_words` words, one
holding ": " (the recipe's rules) and one whose bytes are already a token. The tokenizer splits
text with the second pattern. This module holds the options and checks them; both stages are the
Rust merge loop's, run in turn by `stages.merge_two_stages`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..patterns import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    GPT2_SUPERWORD_PATTERN,
    GPT4_SUPERWORD_PATTERN,
    O200K_PATTERN,
    Pattern,
    resolve_pattern,
)

#: The second stage's pattern after each preset of the first: numbers split as the first splits
#: them, so the first stage's merges on numbers apply unchanged.
SECOND_PATTERN: dict[Pattern, Pattern] = {
    GPT2_PATTERN: GPT2_SUPERWORD_PATTERN,
    CL100K_PATTERN: GPT4_SUPERWORD_PATTERN,
    O200K_PATTERN: GPT4_SUPERWORD_PATTERN,
}

#: The recipe's limit on the words of a token (its authors' `mw4`).
MAX_WORDS = 4


@dataclass(frozen=True)
class Superword:
    """The options of superword training."""

    #: Merges made before the second stage (SuperBPE's transition point, in merges).
    start: int
    #: The second stage's pattern.
    pattern: Pattern
    #: A token of more words (runs of bytes other than the space) is never made; None: no limit.
    max_words: int | None = MAX_WORDS
    #: Whether a token may hold ": ".
    colon_space: bool = False

    @classmethod
    def of(
        cls,
        start: int | None,
        first_pattern: Pattern,
        pattern: Pattern | None = None,
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


def _count(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not least <= value < 2**31:
        raise ValueError(f"{name} must be from {least} to 2**31 - 1, got {value}")
