"""Pretokenization patterns by name. The GPT-2 and GPT-4 (cl100k) patterns run on the core's
hand-written scanners; any other regex, o200k included, runs on fancy-regex (Rust), the engine
tiktoken uses, so every preset splits text exactly as tiktoken does. The scanned patterns are
defined once, in the core: a scanner is chosen by equality with its string, so a copy could drift.
"""

from . import _core
from ._checks import is_utf8

GPT2_PATTERN: str = _core.GPT2_PATTERN

#: GPT-4's (tiktoken `cl100k_base`), verbatim from tiktoken 0.14.0; it has a hand-written scanner
#: in the core (`pretokenize/gpt4.rs`), chosen by equality with this string.
CL100K_PATTERN: str = _core.CL100K_PATTERN

#: GPT-4o's (tiktoken `o200k_base`), verbatim from tiktoken 0.14.0's `openai_public.py`.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

PRESETS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN}


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
