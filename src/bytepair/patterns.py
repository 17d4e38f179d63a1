"""Pretokenization patterns by name. The GPT-2 pattern runs on the core's hand-written scanner;
any other regex runs on fancy-regex (Rust). The pattern string is defined once, in the core
(`pretokenize.rs`): the scanner is chosen by equality with it, so a copy could drift silently.
"""

from . import _core
from ._checks import is_utf8

GPT2_PATTERN: str = _core.GPT2_PATTERN

PRESETS = {"gpt2": GPT2_PATTERN}


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
