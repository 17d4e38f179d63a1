"""Pretokenization patterns by name. The presets (GPT-2, GPT-4's cl100k, GPT-4o's o200k, and the
superword patterns of SuperBPE's second stage) run on the core's hand-written scanners; any other
regex runs on fancy-regex (Rust), the engine tiktoken uses, so every preset splits text exactly as
tiktoken does. The scanned patterns are defined once, in the core: a scanner is chosen by
equality with its string, so a copy could drift.

- `GPT2_PATTERN`: GPT-2's (`pretokenize/gpt2.rs`);
- `CL100K_PATTERN`: GPT-4's (tiktoken `cl100k_base`), verbatim from tiktoken 0.14.0
  (`pretokenize/gpt4.rs`);
- `O200K_PATTERN`: GPT-4o's (tiktoken `o200k_base`), verbatim from tiktoken 0.14.0's
  `openai_public.py` (`pretokenize/o200k.rs`);
- `GPT2_SUPERWORD_PATTERN`: the second stage of superword training (`train/superword.py`) after
  GPT-2's pattern: numbers with the space before them as GPT-2 splits them, else everything up to
  and with a newline; `GPT4_SUPERWORD_PATTERN`: the same after GPT-4's patterns (cl100k, o200k),
  numbers in groups of 1-3 digits.
"""

from ._checks import is_utf8
from ._core import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN
from ._core import SUPERWORD_GPT2_PATTERN as GPT2_SUPERWORD_PATTERN
from ._core import SUPERWORD_GPT4_PATTERN as GPT4_SUPERWORD_PATTERN

__all__ = [
    "CL100K_PATTERN",
    "GPT2_PATTERN",
    "GPT2_SUPERWORD_PATTERN",
    "GPT4_SUPERWORD_PATTERN",
    "O200K_PATTERN",
    "PRESETS",
    "resolve_pattern",
]

PRESETS = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "gpt2-superword": GPT2_SUPERWORD_PATTERN,
    "gpt4-superword": GPT4_SUPERWORD_PATTERN,
}


def resolve_pattern(pattern: str) -> str:
    """The regex for a preset name, or `pattern` itself.

    >>> resolve_pattern("gpt2") == GPT2_PATTERN
    True
    """
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(
            f"pattern must be a preset name ({', '.join(PRESETS)}) or a non-empty regex, "
            f"got {pattern!r}"
        )
    if not is_utf8(pattern):
        raise ValueError(f"pattern {pattern!r} holds a lone surrogate, which UTF-8 cannot encode")
    return PRESETS.get(pattern, pattern)
