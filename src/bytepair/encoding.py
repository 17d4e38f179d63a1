"""The Tokenizer (docs/spec.md §2): encode and decode with a vocabulary, merges and special tokens.
Python decides policy (which special tokens are allowed, what is an error); the Rust `Encoder`
does all the work, with the same pretokenizer as training. It never trains.

Special tokens: by default (CS336) every special token of the tokenizer is matched in `encode`.
For tiktoken's strict mode pass `allowed_special=set(), disallowed_special="all"`: text that
contains a special token then raises ValueError.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from . import _core
from ._checks import MAX_TOKEN_ID, check_merges, check_num_threads, check_special_tokens
from ._checks import check_str as _check_str
from ._checks import check_text as _check_text
from .patterns import resolve_pattern

AllowedSpecial = Literal["all"] | Collection[str]

#: encode_iterable hands the core this many characters at a time (at least).
_STREAM_CHARS = 1 << 16


class Tokenizer:
    """A byte-level BPE tokenizer.

    `vocab` maps ids to bytes (it must hold all 256 single bytes), `merges` lists byte pairs in
    creation order; special tokens not in `vocab` get the next free ids, in the order given.

    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    >>> tok.encode("abc")
    [256, 99]
    """

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
    ):
        specials = check_special_tokens(special_tokens)
        self._vocab = _check_vocab(vocab)
        self._merges = check_merges(merges)
        # Where a special token's bytes have several ids (a one-byte special, say), the last
        # one is the special: training puts special tokens after every other token.
        id_of = {b: i for i, b in sorted(self._vocab.items())}
        next_id = max(self._vocab, default=-1) + 1
        self._special_ids: dict[str, int] = {}
        for token in specials:
            raw = token.encode("utf-8")
            if raw not in id_of:
                id_of[raw] = next_id
                self._vocab[next_id] = raw
                next_id += 1
            self._special_ids[token] = id_of[raw]
        self._n_vocab = next_id  # kept: a scan of the vocabulary per call cost 1 ms
        self.pattern = resolve_pattern(pattern)
        #: The Unicode version of the classes it was trained with (`load` sets the file's).
        self.unicode_version = _core.UNICODE_VERSION
        self._core = _core.Encoder(
            list(self._vocab.items()), self._merges, list(self._special_ids.items()), self.pattern
        )

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | os.PathLike,
        merges_filepath: str | os.PathLike,
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
    ) -> Tokenizer:
        """Reads GPT-2-format `vocab.json` and `merges.txt` (docs/spec.md §3.3).

        >>> Tokenizer.from_files("vocab.json", "merges.txt", ["<|endoftext|>"])  # doctest: +SKIP
        """
        from .io import read_gpt2

        specials = check_special_tokens(special_tokens)
        vocab, merges = read_gpt2(vocab_filepath, merges_filepath, specials)
        return cls(vocab, merges, specials, pattern=pattern)

    # --- what the tokenizer is -------------------------------------------------------------
    @property
    def vocab(self) -> dict[int, bytes]:
        """Id → bytes, special tokens included (a copy)."""
        return dict(self._vocab)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """Merges in creation order (a copy)."""
        return list(self._merges)

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special token → id, in the order given."""
        return dict(self._special_ids)

    @property
    def special_tokens_set(self) -> set[str]:
        """The special tokens, as tiktoken names them."""
        return set(self._special_ids)

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's meaning)."""
        return self._n_vocab

    def __repr__(self) -> str:
        return (
            f"<bytepair.Tokenizer n_vocab={self.n_vocab} merges={len(self._merges)} "
            f"special_tokens={list(self._special_ids)}>"
        )

    def __reduce__(self) -> tuple[object, ...]:
        """Pickles as its vocabulary, merges, special tokens and pattern (as tiktoken's
        `Encoding` does), so it can go to worker processes; the core is rebuilt there."""
        state = (self._vocab, self._merges, list(self._special_ids), self.pattern)
        return (_rebuild, (*state, self.unicode_version))

    def save(
        self, directory: str | os.PathLike, *, formats: Iterable[str] | None = None
    ) -> list[Path]:
        """Writes the tokenizer into `directory` (atomically) in every format: GPT-2
        `vocab.json` + `merges.txt`, HF `tokenizer.json`, `tokenizer.tiktoken` + its sidecar and
        `bytepair.model`; `formats` picks some ("gpt2", "hf", "tiktoken", "bytepair")."""
        from .formats import save

        return save(self, directory, formats=formats)

    # --- encoding ----------------------------------------------------------------------------
    def _policy(
        self, allowed_special: AllowedSpecial, disallowed_special: AllowedSpecial
    ) -> tuple[list[str] | None, frozenset[str]]:
        """(special tokens to match, None meaning all; special tokens that must not occur)."""
        if (
            allowed_special == "all"
            and isinstance(disallowed_special, tuple)
            and not (disallowed_special)
        ):
            return None, frozenset()  # the defaults, without building sets on every call
        known = set(self._special_ids)
        for name, value in (
            ("allowed_special", allowed_special),
            ("disallowed_special", disallowed_special),
        ):
            if isinstance(value, str) and value != "all":
                raise TypeError(
                    f"{name} must be 'all' or a set of strings, got the string "
                    f"{value!r}; write {{{value!r}}}"
                )
            if not isinstance(value, (str, Iterable)):
                raise TypeError(f"{name} must be 'all' or a set of strings, got {value!r}")
        allowed = known if allowed_special == "all" else set(allowed_special)
        unknown = allowed - known
        if unknown:
            raise ValueError(
                f"allowed_special names {sorted(unknown)!r}, which are not special tokens of this "
                f"tokenizer ({sorted(known)!r})"
            )
        disallowed = known - allowed if disallowed_special == "all" else set(disallowed_special)
        return (None if allowed == known else sorted(allowed)), frozenset(disallowed)

    @staticmethod
    def _refuse(text: str, disallowed: frozenset[str]) -> None:
        """Raises ValueError (tiktoken's message) if `text` holds a disallowed special token."""
        if not disallowed:
            return
        match = _special_regex(disallowed).search(text)
        if match:
            token = match.group()
            raise ValueError(
                f"Encountered text corresponding to disallowed special token {token!r}.\n"
                f"If you want this text to be encoded as a special token, pass it to "
                f"`allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
                f"If you want this text to be encoded as normal text, disable the check for this "
                f"token by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
                f"To disable this check for all special tokens, pass `disallowed_special=()`.\n"
            )

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> list[int]:
        """Ids of `text`. By default every special token of the tokenizer is matched (CS336);
        tiktoken's strict default is `allowed_special=set(), disallowed_special="all"`.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).encode("hi")
        [104, 105]
        """
        allowed = _quick_policy(text, allowed_special, disallowed_special)
        if allowed is _SLOW:
            allowed, disallowed = self._policy(allowed_special, disallowed_special)
            self._refuse(_check_str(text), disallowed)
        try:  # inline, not `_utf8`: per-document loops make millions of these calls
            return self._core.encode(text, allowed)
        except UnicodeEncodeError:
            return self._core.encode(_check_text(text), allowed)

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text` with special-token text encoded as plain text."""
        if type(text) is not str:
            text = _check_str(text)
        try:
            return self._core.encode(text, _NO_SPECIALS)
        except UnicodeEncodeError:
            return self._core.encode(_check_text(text), _NO_SPECIALS)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> list[list[int]]:
        """`[encode(t) for t in texts]`, in parallel on `num_threads` threads (default: all)."""
        texts = [_check_str(t) for t in texts]
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        for t in texts:
            self._refuse(t, disallowed)
        return _utf8(self._core.encode_batch, texts, allowed, check_num_threads(num_threads))

    def encode_ordinary_batch(
        self, texts: Sequence[str], *, num_threads: int | None = None
    ) -> list[list[int]]:
        """`[encode_ordinary(t) for t in texts]`, in parallel."""
        texts = [_check_str(t) for t in texts]
        return _utf8(self._core.encode_batch, texts, [], check_num_threads(num_threads))

    def encode_to_numpy(
        self,
        text: str,
        *,
        dtype: object = None,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ):
        """Ids of `text` as a numpy array: uint16 when every id fits, else uint32 (or `dtype`:
        uint16 or uint32).

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).encode_to_numpy("hi").dtype
        dtype('uint16')
        """
        allowed = _quick_policy(text, allowed_special, disallowed_special)
        if allowed is _SLOW:
            allowed, disallowed = self._policy(allowed_special, disallowed_special)
            self._refuse(_check_str(text), disallowed)
        small = self._n_vocab <= 1 << 16 if dtype is None else self._small_dtype(dtype)
        try:
            return self._core.encode_to_numpy(text, allowed, small)
        except UnicodeEncodeError:
            return self._core.encode_to_numpy(_check_text(text), allowed, small)

    def encode_batch_to_numpy(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        dtype: object = None,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ):
        """The ids of every text in one flat numpy array, and `offsets` (uint64, one more than
        the texts) such that text i's ids are `ids[offsets[i]:offsets[i + 1]]`: the form corpus
        tools and data loaders want, with no Python object per id. dtype as `encode_to_numpy`.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> ids, offsets = tok.encode_batch_to_numpy(["hi", "", "a"])
        >>> ids.tolist(), offsets.tolist()
        ([104, 105, 97], [0, 2, 2, 3])
        """
        texts = [_check_str(t) for t in texts]
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        for t in texts:
            self._refuse(t, disallowed)
        return _utf8(
            self._core.encode_batch_to_numpy,
            texts,
            allowed,
            check_num_threads(num_threads),
            self._small_dtype(dtype),
        )

    def _small_dtype(self, dtype: object) -> bool:
        """Whether ids go out as uint16: when every id fits, unless `dtype` says uint32."""
        fits = self._n_vocab <= 1 << 16
        if dtype is None:
            return fits
        import numpy as np

        try:
            wanted = np.dtype(dtype)
        except TypeError:
            wanted = None
        if wanted not in (np.uint16, np.uint32):
            raise ValueError(f"dtype must be uint16 or uint32, got {dtype!r}")
        if wanted == np.uint16 and not fits:
            raise ValueError(f"dtype uint16 cannot hold ids up to {self.n_vocab - 1}; use uint32")
        return bool(wanted == np.uint16)

    def encode_iterable(
        self,
        iterable: Iterable[str],
        *,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> Iterator[int]:
        """Lazily yields `encode("".join(iterable))`, in constant memory: text is encoded up to
        the last point that more text cannot change (a pretoken or special token may span items).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> list(tok.encode_iterable(["h", "i"]))
        [104, 105]
        """
        # ids by the list, chained in C: a Python generator yielding each id cost ~40 ns an
        # id, most of the time of a stream
        return itertools.chain.from_iterable(
            self._encode_lists(iterable, allowed_special, disallowed_special)
        )

    def _encode_lists(
        self,
        iterable: Iterable[str],
        allowed_special: AllowedSpecial,
        disallowed_special: AllowedSpecial,
    ) -> Iterator[list[int]]:
        """`encode_iterable`'s ids, a list per encoded stretch of text."""
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        keep = max((len(t) for t in disallowed), default=1) - 1  # a disallowed token may span a cut
        done_tail = ""
        pieces: list[str] = []
        size = 0
        threshold = _STREAM_CHARS
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
            buffer = _check_text(buffer)
            self._refuse(done_tail + buffer, disallowed)
            ids, n_chars = self._core.encode_prefix(buffer, allowed)
            if n_chars:
                done_tail = buffer[max(0, n_chars - keep) : n_chars] if keep else ""
                buffer = buffer[n_chars:]
                threshold = len(buffer) + _STREAM_CHARS
                yield ids
            else:
                threshold = 2 * len(buffer)  # no cut yet (e.g. one long word): wait for more
            pieces = [buffer, held]
            size = len(buffer) + len(held)
        buffer = _check_text("".join(pieces))
        self._refuse(done_tail + buffer, disallowed)
        yield self._core.encode_prefix(buffer, allowed, last=True)[0]

    # --- decoding ----------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The tokens' bytes, concatenated; an unknown id raises KeyError naming it."""
        ids = _check_ids(ids)
        try:
            return self._core.decode_bytes(ids)
        except KeyError as e:
            raise KeyError(
                f"token id {e.args[0]} is not in the vocabulary (0..{self.n_vocab - 1})"
            ) from None

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids`; malformed UTF-8 becomes U+FFFD.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).decode([104, 105])
        'hi'
        """
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_batch(self, batch: Iterable[Iterable[int]]) -> list[str]:
        """`[decode(ids) for ids in batch]`."""
        return [self.decode(ids) for ids in batch]

    def decode_with_offsets(self, ids: Iterable[int]) -> tuple[str, list[int]]:
        """The text and each token's start index in it, as tiktoken's (see `decoding.py`)."""
        from .decoding import decode_with_offsets

        return decode_with_offsets(self, ids)

    def incremental_decoder(self):
        """A decoder for streamed ids that returns only whole characters (see `decoding.py`)."""
        from .decoding import IncrementalDecoder

        return IncrementalDecoder(self)

    def token_to_id(self, token: bytes | str) -> int:
        """The id of one token (bytes, or a str taken as its UTF-8); KeyError if absent."""
        if isinstance(token, str) and token in self._special_ids:
            return self._special_ids[token]
        raw = token.encode("utf-8") if isinstance(token, str) else bytes(token)
        try:
            return self._id_of[raw]
        except KeyError:
            raise KeyError(f"{token!r} is not a token of this vocabulary") from None

    @functools.cached_property
    def _id_of(self) -> dict[bytes, int]:
        """Bytes → id (the lowest id where several share bytes), built on first use."""
        return {b: i for i, b in sorted(self._vocab.items(), reverse=True)}

    def id_to_token(self, token_id: int) -> bytes:
        """The bytes of one id; KeyError if absent."""
        try:
            return self._vocab[token_id]
        except KeyError:
            raise KeyError(f"token id {token_id!r} is not in the vocabulary") from None

    encode_single_token = token_to_id
    decode_single_token_bytes = id_to_token


_SLOW = object()
_NO_SPECIALS: list[str] = []
_EMPTY = frozenset()


_NO_ARG = object()


def _quick_policy(text, allowed_special, disallowed_special):
    """The special tokens to match for the two common calls on a str (all, or none with
    nothing disallowed), else `_SLOW`: per-document encoding calls this millions of times, and
    the general `_policy` + `_refuse` were half of a short text's time."""
    if type(text) is str and type(disallowed_special) is tuple and not disallowed_special:
        if allowed_special == "all":
            return None
        if type(allowed_special) in (set, frozenset) and allowed_special == _EMPTY:
            return _NO_SPECIALS
    return _SLOW


def _utf8(call, texts, allowed, b=_NO_ARG, c=_NO_ARG):
    """`call(texts, allowed[, b[, c]])`; if a text has lone surrogates, which UTF-8 cannot
    encode (the core then refuses it with UnicodeEncodeError), again with every text fixed by
    `check_text`. Checking every text first cost a UTF-8 copy of each non-ASCII one: ~10% of
    the time of per-document encoding (perf), as the core makes that copy again. Fixed
    arguments, not `*args`: a call then allocates no tuple, which the cyclic garbage collector
    would track (per-document loops ran a collection every ~700 calls)."""
    try:
        return _call(call, texts, allowed, b, c)
    except UnicodeEncodeError:
        fixed = _check_text(texts) if isinstance(texts, str) else [_check_text(t) for t in texts]
        return _call(call, fixed, allowed, b, c)


def _call(call, texts, allowed, b, c):
    if b is _NO_ARG:
        return call(texts, allowed)
    if c is _NO_ARG:
        return call(texts, allowed, b)
    return call(texts, allowed, b, c)


def _rebuild(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    specials: list[str],
    pattern: str,
    unicode_version: str,
) -> Tokenizer:
    tok = Tokenizer(vocab, merges, specials, pattern=pattern)
    tok.unicode_version = unicode_version
    return tok


def _check_vocab(vocab: dict[int, bytes]) -> dict[int, bytes]:
    if not isinstance(vocab, dict):
        raise TypeError(f"vocab must be a dict of id -> bytes, got {type(vocab).__name__}")
    out = {}
    for i, b in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= MAX_TOKEN_ID:
            raise ValueError(f"vocab id {i!r} is not an integer in 0..2**31-1")
        if not isinstance(b, (bytes, bytearray)):
            raise TypeError(f"vocab[{i}] must be bytes, got {type(b).__name__}")
        out[i] = bytes(b)
    if out and max(out) > 4 * len(out) + (1 << 20):
        raise ValueError(f"vocab ids are too sparse: {len(out)} tokens but ids up to {max(out)}")
    return out


def _check_ids(ids: Iterable[int]) -> list[int]:
    """Ids as Python ints (numpy integers and arrays are accepted, as in tiktoken)."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    out = []
    for i in ids:
        try:
            value = operator.index(i)
        except TypeError:
            raise KeyError(f"token id {i!r} is not an integer") from None
        if isinstance(i, bool) or not 0 <= value < 1 << 32:
            raise KeyError(f"token id {i!r} is not in the vocabulary")
        out.append(value)
    return out


@functools.lru_cache(maxsize=64)
def _special_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))
