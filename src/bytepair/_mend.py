"""Calls into the core retried with mended text: a text with lone surrogates, which UTF-8
cannot encode, is refused by the core with UnicodeEncodeError, and encoded again with every
text fixed by `check_text` (lone surrogates become U+FFFD, as in tiktoken).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ._checks import check_text

_NO_ARG = object()
_R = TypeVar("_R")


def mended(
    call: Callable[..., _R],
    texts: str | list[str],
    allowed: list[str] | None,
    b: object = _NO_ARG,
    c: object = _NO_ARG,
) -> _R:
    """`call(texts, allowed[, b[, c]])`; if a text has lone surrogates, again with every text
    fixed by `check_text`. Checking every text first cost a UTF-8 copy of each non-ASCII one:
    ~10% of the time of per-document encoding (perf), as the core makes that copy again. Fixed
    arguments, not `*args`: a call then allocates no tuple, which the cyclic garbage collector
    would track (per-document loops ran a collection every ~700 calls)."""
    try:
        return _call(call, texts, allowed, b, c)
    except UnicodeEncodeError:
        fixed = check_text(texts) if isinstance(texts, str) else [check_text(t) for t in texts]
        return _call(call, fixed, allowed, b, c)


def _call(
    call: Callable[..., _R], texts: str | list[str], allowed: list[str] | None, b: object, c: object
) -> _R:
    if b is _NO_ARG:
        return call(texts, allowed)
    if c is _NO_ARG:
        return call(texts, allowed, b)
    return call(texts, allowed, b, c)
