"""Pretokenization patterns by name. The GPT-2 pattern runs on the core's hand-written scanner;
any other regex, the GPT-4 presets included, runs on fancy-regex (Rust), the engine tiktoken
uses, so a preset splits text exactly as tiktoken does. The GPT-2 string is defined once, in the
core (`pretokenize.rs`): the scanner is chosen by equality with it, so a copy could drift.
"""

from . import _core
from ._checks import is_utf8

GPT2_PATTERN: str = _core.GPT2_PATTERN

#: GPT-4's (tiktoken `cl100k_base`), verbatim from tiktoken 0.14.0's `openai_public.py`.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

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
