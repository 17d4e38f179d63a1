"""Whether a token spans words: what formats and the inspection need to know of superword tokens
(`train/superword.py` makes them), without knowing training.
"""

from __future__ import annotations

import re

#: A character other than whitespace, then a space: inside a token, the mark of one that spans
#: words, which only superword training's second stage makes (first-stage pretokens keep a space
#: only at their start or inside whitespace, as GPT-2's " \xa0 \xa0"). The core's encoder tells
#: superword tokenizers by the same test (`encode/parts.rs`).
_WORD_THEN_SPACE = re.compile(r"[^\s] ")


def spans_words(token: bytes) -> bool:
    r"""Whether `token` spans words (holds a space after a character other than whitespace; a
    partial character counts as other).

    >>> spans_words(b" of the"), spans_words(b" the"), spans_words(b" \xc2\xa0 \xc2\xa0")
    (True, False, False)
    """
    return _WORD_THEN_SPACE.search(token.decode("utf-8", errors="replace")) is not None
