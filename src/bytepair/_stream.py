"""`encode_iterable`'s loop: text gathered from the items until a stretch is long enough, then
encoded up to the last place more text cannot change (the core's `_encode_prefix`), the rest
kept for the next items. Special tokens are refused across the cuts, as in one text."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from ._checks import check_text
from ._specials import AllowedSpecial, policy, refuse

#: The core is handed this many characters at a time (at least).
STREAM_CHARS = 1 << 16


def stream_ids(
    core: Any,
    special_tokens: Collection[str],
    iterable: Iterable[str],
    allowed_special: AllowedSpecial,
    disallowed_special: AllowedSpecial,
) -> Iterator[list[int]]:
    """The ids of `"".join(iterable)` by `core` (a Tokenizer), a list per encoded stretch."""
    allowed, disallowed = policy(special_tokens, allowed_special, disallowed_special)
    keep = max((len(t) for t in disallowed), default=1) - 1  # a disallowed token may span a cut
    done_tail = ""
    pieces: list[str] = []
    size = 0
    threshold = STREAM_CHARS
    for piece in iterable:
        if not isinstance(piece, str):
            raise TypeError(f"encode_iterable takes str items, got {type(piece).__name__}")
        pieces.append(piece)
        size += len(piece)
        if size < threshold:
            continue
        buffer = "".join(pieces)
        held = ""
        if "\ud800" <= buffer[-1] <= "\udbff":  # may pair with the next item's first char
            buffer, held = buffer[:-1], buffer[-1]
        buffer = check_text(buffer)
        refuse(done_tail + buffer, disallowed)
        ids, n_chars = core._encode_prefix(buffer, allowed)
        if n_chars:
            done_tail = buffer[max(0, n_chars - keep) : n_chars] if keep else ""
            buffer = buffer[n_chars:]
            threshold = len(buffer) + STREAM_CHARS
            yield ids
        else:
            threshold = 2 * len(buffer)  # no cut yet (e.g. one long word): wait for more
        pieces = [buffer, held]
        size = len(buffer) + len(held)
    buffer = check_text("".join(pieces))
    refuse(done_tail + buffer, disallowed)
    yield core._encode_prefix(buffer, allowed, last=True)[0]
