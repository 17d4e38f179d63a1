"""Vocabulary shaping (docs/spec.md §1.8): which merges training may make (`min_frequency`,
`max_token_length`: the Rust merge loop applies them) and reserved special tokens that pad the
vocabulary to a multiple (`pad_vocab_to_multiple`, as nanoGPT's 50,304 from GPT-2's 50,257: a
multiple of 64 suits GPU kernels). The options are checked here before any stage runs, so a bad
value costs no counting; `plan.layout` adds the reserved tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The core takes these as u64 and usize.
_MAX = {"min_frequency": 2**64 - 1, "max_token_length": 2**63 - 1, "pad_vocab_to_multiple": 2**31}


@dataclass(frozen=True)
class Shaping:
    """The shaping options of a run; the defaults change nothing."""

    #: A pair seen fewer times is never merged: training ends early at the first such best pair.
    min_frequency: int = 1
    #: A merge whose token would be longer (in bytes) is skipped; the next best pair is taken.
    max_token_length: int | None = None
    #: Reserved special tokens are added until the vocabulary's size is a multiple of this.
    pad_vocab_to_multiple: int | None = None

    @classmethod
    def of(
        cls,
        min_frequency: int = 1,
        max_token_length: int | None = None,
        pad_vocab_to_multiple: int | None = None,
    ) -> Shaping:
        """The options, checked: each a positive integer (or None, off, for the last two)."""
        _check("min_frequency", min_frequency)
        if max_token_length is not None:
            _check("max_token_length", max_token_length)
        if pad_vocab_to_multiple is not None:
            _check("pad_vocab_to_multiple", pad_vocab_to_multiple)
        return cls(min_frequency, max_token_length, pad_vocab_to_multiple)

    def check_size(self, vocab_size: int, max_vocab_size: int) -> None:
        """Refuses a multiple that the vocabulary cannot use, or one that pads past the ids."""
        m = self.pad_vocab_to_multiple
        if m is None:
            return
        if m > vocab_size:
            raise ValueError(
                f"pad_vocab_to_multiple {m} is larger than vocab_size {vocab_size}: choose a "
                f"multiple smaller than the vocabulary (at most vocab_size; e.g. 64)"
            )
        if -(-vocab_size // m) * m > max_vocab_size:
            raise ValueError(
                f"vocab_size {vocab_size} padded to a multiple of {m} passes the largest "
                f"vocabulary, {max_vocab_size:,} tokens: choose a smaller size or multiple"
            )


def _check(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer (1 or more), got {value}")
    if value > _MAX[name]:
        raise ValueError(f"{name} must be at most {_MAX[name]:,}, got {value:,}")


def reserved_tokens(n_vocab: int, special_tokens: list[str], multiple: int | None) -> list[str]:
    """The reserved special tokens that pad a vocabulary of `n_vocab` tokens to `multiple`:
    `<|reserved_0|>`, `<|reserved_1|>`, ..., skipping names already in `special_tokens`.

    >>> reserved_tokens(6, ["<|reserved_0|>"], 4)
    ['<|reserved_1|>', '<|reserved_2|>']
    """
    if multiple is None:
        return []
    taken = set(special_tokens)
    out: list[str] = []
    i = 0
    while (n_vocab + len(out)) % multiple:
        name = f"<|reserved_{i}|>"
        if name not in taken:
            out.append(name)
        i += 1
    return out


def stop_reason(stop: str, shaping: Shaping) -> str:
    """Why the merge loop made fewer merges than asked (`stop` as the core names it)."""
    if stop == "min frequency":
        return f"no pair is seen at least {shaping.min_frequency:,} times"
    if stop == "max token length":
        n = shaping.max_token_length
        return f"every pair left would make a token longer than {n} byte{'s' * (n != 1)}"
    if stop == "superword rules":
        return (
            "every pair left would make a token of too many words, one holding ': ', or one "
            "that exists already (the superword rules)"
        )
    return "no pair of tokens is left to merge (the corpus has too little distinct text)"
