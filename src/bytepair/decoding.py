"""How token bytes become text beyond `decode`: with each token's start offset (tiktoken's
`decode_with_offsets`), incrementally for streaming generation (only whole characters come out,
however the tokens split them), and visibly for people (`visible`: bytes that are not whole
UTF-8 and unprintable characters as escapes such as `\\xe4`). It never encodes.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import Protocol


class _Tokens(Protocol):
    def id_to_token(self, token_id: int) -> bytes: ...


def decode_with_offsets(tok: _Tokens, ids: Iterable[int]) -> tuple[str, list[int]]:
    """The text of `ids` and, per token, the index in it of the first character holding bytes
    of that token, exactly as tiktoken's `decode_with_offsets`: a token that starts inside a
    character (its first byte a UTF-8 continuation byte) gets that character's index. Like
    tiktoken, ids whose bytes are not valid UTF-8 raise UnicodeDecodeError (a ValueError).

    >>> from bytepair import Tokenizer
    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"\\xe4\\xbd"}
    >>> tok = Tokenizer(vocab, [(b"\\xe4", b"\\xbd")])
    >>> decode_with_offsets(tok, [104, 256, 160, 33])  # "h你!"; 你 (e4 bd a0) in two tokens
    ('h你!', [0, 1, 1, 2])
    """
    parts = [tok.id_to_token(i) for i in ids]
    offsets = []
    n_chars = 0
    for raw in parts:
        # A character is counted at its lead byte; continuation bytes are 0x80..0xBF.
        offsets.append(max(0, n_chars - (0x80 <= raw[0] < 0xC0)))
        n_chars += sum(1 for b in raw if not 0x80 <= b < 0xC0)
    return b"".join(parts).decode("utf-8", errors="strict"), offsets


class IncrementalDecoder:
    """Takes ids one at a time and returns only complete characters: the bytes of a character
    split over tokens wait until its last byte arrives. Bytes that can never become a character
    come out as U+FFFD, as in `decode`; `flush()` ends the stream (an unfinished character
    becomes U+FFFD). `"".join(steps) + flush()` always equals `decode(all ids)`.

    >>> from bytepair import Tokenizer
    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    >>> dec = IncrementalDecoder(tok)
    >>> [dec.step(i) for i in "é!".encode()], dec.flush()
    (['', 'é', '!'], '')
    """

    def __init__(self, tok: _Tokens):
        self._tok = tok
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def step(self, token_id: int) -> str:
        """The text that `token_id` completes ('' while a character is unfinished); an unknown
        id raises KeyError naming it and leaves the decoder as it was."""
        return self._utf8.decode(self._tok.id_to_token(token_id))

    def flush(self) -> str:
        """What is left ('' or U+FFFD for an unfinished character); the decoder starts anew."""
        rest = self._utf8.decode(b"", final=True)
        self._utf8.reset()
        return rest


def decode_stream(tok: _Tokens, ids: Iterable[int]) -> Iterator[str]:
    """Yields the text of `ids` as it becomes complete (no empty strings), then the rest.

    >>> from bytepair import Tokenizer
    >>> list(decode_stream(Tokenizer({i: bytes([i]) for i in range(256)}, []), "hé".encode()))
    ['h', 'é']
    """
    dec = IncrementalDecoder(tok)
    for token_id in ids:
        text = dec.step(token_id)
        if text:
            yield text
    rest = dec.flush()
    if rest:
        yield rest


#: Shown as themselves although `str.isprintable` says no (the renderers lay out newlines).
_KEEP = frozenset("\n")
_NAMED = {"\t": "\\t", "\r": "\\r"}


def visible(raw: bytes) -> list[tuple[str, bool]]:
    """`raw` as (text, is_escape) pieces for display: printable characters, spaces and newlines
    as themselves; bytes that are not whole UTF-8 (a token that splits a character) as `\\xe4`;
    other unprintable characters (controls, tabs, zero-width and non-ASCII spaces) as `\\t`,
    `\\x00`, `\\u200b`. Renderers style the escapes so they differ from text that reads alike.

    >>> visible("a\\tb".encode() + b"\\xe4")
    [('a', False), ('\\\\t', True), ('b', False), ('\\\\xe4', True)]
    """
    pieces: list[tuple[str, bool]] = []
    text = raw.decode("utf-8", errors="surrogateescape")
    for ch in text:
        code = ord(ch)
        if ch == " " or ch in _KEEP or ch.isprintable():
            piece, escape = ch, False
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that is not part of a whole character
            piece, escape = f"\\x{code - 0xDC00:02x}", True
        else:
            piece, escape = _NAMED.get(ch) or ascii(ch)[1:-1], True
        if pieces and pieces[-1][1] == escape:
            pieces[-1] = (pieces[-1][0] + piece, escape)
        else:
            pieces.append((piece, escape))
    return pieces
