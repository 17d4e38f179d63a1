"""Where a training run starts and how its result is laid out: fresh (ids are bytes, merges, special
tokens: docs/spec.md §1.6) or continued from an existing tokenizer, whose ids and merges all stay
(new merges and new special tokens take the next free ids). A run's `Plan` holds its options,
checked before any stage runs (shaping, superword training); the merge loop itself is Rust's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from .._checks import MAX_TOKEN_ID, check_special_tokens
from ..encoding import Tokenizer
from ..loading import load
from ..patterns import Pattern, resolve_pattern
from .shaping import Shaping, reserved_tokens
from .superword import Superword

#: Ids must be below 2**31 (`Tokenizer`'s limit); a larger size also made the core reserve
#: memory for that many merges up front (2**40 aborted the process).
MAX_VOCAB_SIZE = MAX_TOKEN_ID


@dataclass
class Plan:
    """What the stages need: special tokens, pattern, merges in all, merges to start from."""

    special_tokens: list[str]
    pattern: Pattern
    num_merges: int
    base: Tokenizer | None = None
    #: The base's merges as core ids (merge i makes 256 + i).
    start: list[tuple[int, int]] = field(default_factory=list)
    #: Options of the merge loop and of the layout (`shaping.py`).
    shaping: Shaping = field(default_factory=Shaping)
    #: Superword training's options (`superword.py`), or None.
    superword: Superword | None = None


def plan(
    vocab_size: int,
    special_tokens: Iterable[str] | None,
    pattern: Pattern | None,
    continue_from: Tokenizer | str | os.PathLike[str] | None = None,
    shaping: Shaping | None = None,
) -> Plan:
    """Checks the options of a run (and of the tokenizer it continues)."""
    specials = check_special_tokens(special_tokens)
    check_vocab_size(vocab_size)
    shaping = shaping or Shaping()
    shaping.check_size(vocab_size, MAX_VOCAB_SIZE)
    if continue_from is None:
        n = _num_merges(vocab_size, specials)
        return Plan(specials, resolve_pattern(pattern or "gpt2"), n, shaping=shaping)
    base = continue_from if isinstance(continue_from, Tokenizer) else load(continue_from)
    if pattern is not None and resolve_pattern(pattern) != base.pattern:
        raise ValueError(
            f"the tokenizer to continue from splits text with {base.pattern!r}; continuing with "
            f"another pattern ({pattern!r}) would change its merges' words. Leave the pattern out"
        )
    added = [t for t in specials if t not in base.special_tokens]
    minimum = len(base.vocab) + len(added)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size {vocab_size} is too small to continue: the tokenizer has "
            f"{len(base.vocab)} tokens and {len(added)} special token(s) are new, so the "
            f"minimum is {minimum}"
        )
    start = _core_merges(base)
    num_merges = len(start) + vocab_size - minimum
    return Plan([*base.special_tokens, *added], base.pattern, num_merges, base, start, shaping)


def check_vocab_size(vocab_size: int) -> None:
    """Refuses a size that is not an integer, or that passes the largest ids."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an integer, got {vocab_size!r}")
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size {vocab_size} is too large: token ids are below 2**31, so the maximum "
            f"is {MAX_VOCAB_SIZE:,}"
        )


def with_superword(
    run: Plan,
    start: int | None,
    pattern: Pattern | None,
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


def _num_merges(vocab_size: int, special_tokens: list[str]) -> int:
    minimum = 256 + len(special_tokens)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it counts the 256 byte tokens and the "
            f"{len(special_tokens)} special token(s), so the minimum is {minimum}"
        )
    return vocab_size - minimum


def _core_merges(base: Tokenizer) -> list[tuple[int, int]]:
    """The base's merges as the core numbers tokens (byte b is b, merge i makes 256 + i)."""
    id_of = {bytes([b]): b for b in range(256)}
    out = []
    for i, (a, b) in enumerate(base.merges):
        if a not in id_of or b not in id_of:
            raise ValueError(
                f"cannot continue: merge {i} ({a!r}, {b!r}) joins a token that no earlier "
                f"merge makes"
            )
        out.append((id_of[a], id_of[b]))
        id_of.setdefault(a + b, 256 + i)
    return out


def layout(run: Plan, pairs: list[tuple[int, int]], token_bytes: list[bytes]) -> Tokenizer:
    """The tokenizer of a run's result (core ids → the ids of docs/spec.md §1.6, or the
    base's), padded with reserved special tokens if the run asks (§1.8)."""
    merges = [(token_bytes[a], token_bytes[b]) for a, b in pairs]
    if run.base is None:
        vocab = dict(enumerate(token_bytes))
    else:
        vocab = run.base.vocab
        first_new = 256 + len(run.base.merges)
        vocab |= {run.base.n_vocab + k: t for k, t in enumerate(token_bytes[first_new:])}
    next_id = max(vocab) + 1
    for token in run.special_tokens:  # new ones after the last merge, in order
        if run.base is None or token not in run.base.special_tokens:
            vocab[next_id] = token.encode("utf-8")
            next_id += 1
    multiple = run.shaping.pad_vocab_to_multiple
    reserved = reserved_tokens(len(vocab), run.special_tokens, multiple)
    vocab |= {next_id + k: t.encode("utf-8") for k, t in enumerate(reserved)}
    specials = [*run.special_tokens, *reserved]
    return Tokenizer(vocab, merges, specials, pattern=run.pattern)
