"""The Tokenizer (docs/spec.md §2): encode and decode with a vocabulary, merges and special
tokens, and save as model data that `formats/` writes (`loading.py` reads files into one).
Python decides policy (`_specials.py`); the Rust `Encoder` does the work, with training's
pretokenizer. It never trains and knows no file syntax.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ._checks import (
    check_flag,
    check_ids,
    check_merges,
    check_num_threads,
    check_special_tokens,
    check_str,
    check_text,
    check_vocab,
)
from ._core import UNICODE_VERSION, Encoder
from ._roles import check_max_length, check_roles
from ._specials import NO_SPECIALS, SLOW, AllowedSpecial, policy, quick_policy, refuse
from .formats import ModelData, write
from .formats.gpt2 import read_pair
from .patterns import resolve_pattern

if TYPE_CHECKING:  # numpy loads only when ids go out as arrays
    import numpy as np
    import numpy.typing as npt

    from .decoding import IncrementalDecoder

__all__ = ["AllowedSpecial", "Tokenizer", "core_encoder", "model_data"]

#: encode_iterable hands the core this many characters at a time (at least).
_STREAM_CHARS = 1 << 16


class Tokenizer(Encoder):
    """A byte-level BPE tokenizer.

    `vocab` maps ids to bytes (it must hold all 256 single bytes), `merges` lists byte pairs in
    creation order; special tokens not in `vocab` get the next free ids, in the order given.
    By default (CS336) `encode` matches every special token; for tiktoken's strict mode pass
    `allowed_special=set(), disallowed_special="all"`: text holding one then raises ValueError.
    `special_token_roles` (e.g. `{"eos_token": "<|endoftext|>"}`, the default when that token is
    present) and `model_max_length` (None: unknown) are what transformers reads of
    `tokenizer_config.json`; they do not change encoding. `ranks=True` encodes by tiktoken's rule
    for rank files (docs/spec.md §2.2): ids are ranks, any two adjacent tokens whose bytes are a
    token merge, lowest rank first, and a pretoken that is a token is taken whole; `merges` are
    then only kept for formats. `ignore_merges=True` takes a pretoken that is a token whole
    before the merges (HF's flag).

    It is the Rust encoder's subclass: `encode` and `encode_ordinary` are the core's own
    methods, which hand any other call (options, a text to mend or refuse) to the general path
    here.

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
        special_token_roles: Mapping[str, str | None] | None = None,
        model_max_length: int | None = None,
        ranks: bool = False,
        ignore_merges: bool = False,
    ) -> None:
        specials = check_special_tokens(special_tokens)
        self._vocab = check_vocab(vocab)
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
        self._roles = check_roles(special_token_roles, self._special_ids)
        self._model_max_length = check_max_length(model_max_length)
        self.pattern = resolve_pattern(pattern)
        #: The Unicode version of the classes it was trained with (`load` sets the file's).
        self.unicode_version = UNICODE_VERSION
        self._ranks = check_flag("ranks", ranks)
        self._ignore_merges = check_flag("ignore_merges", ignore_merges)
        self._build(
            list(self._vocab.items()),
            self._merges,
            list(self._special_ids.items()),
            self.pattern,
            ranks=self._ranks,
            whole=self._ignore_merges,
        )
        if self._ignore_merges and not self._ranks and not self._n_whole():
            self._ignore_merges = False  # every token is what its merges make of it anyway

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | os.PathLike[str],
        merges_filepath: str | os.PathLike[str],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
    ) -> Tokenizer:
        """Reads GPT-2-format `vocab.json` and `merges.txt` (docs/spec.md §3.3); special tokens
        in `vocab.json` are stored as their raw text.

        >>> Tokenizer.from_files("vocab.json", "merges.txt", ["<|endoftext|>"])  # doctest: +SKIP
        """
        specials = check_special_tokens(special_tokens)
        vocab, merges, _ = read_pair(Path(vocab_filepath), Path(merges_filepath), specials)
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
    def special_token_roles(self) -> dict[str, str]:
        """transformers' role (`eos_token`, `bos_token`, `pad_token`, `unk_token`) → special
        token (a copy). Assigning replaces them all; a role's token must be a special token.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>", "<p>"])
        >>> tok.special_token_roles
        {'eos_token': '<|endoftext|>'}
        >>> tok.special_token_roles = {"eos_token": "<|endoftext|>", "pad_token": "<p>"}
        """
        return dict(self._roles)

    @special_token_roles.setter
    def special_token_roles(self, roles: Mapping[str, str | None]) -> None:
        self._roles = check_roles(roles, self._special_ids)

    @property
    def model_max_length(self) -> int | None:
        """The longest input, in tokens, of the model this tokenizer serves; None if unknown."""
        return self._model_max_length

    @model_max_length.setter
    def model_max_length(self, value: int | None) -> None:
        self._model_max_length = check_max_length(value)

    @property
    def ranks(self) -> bool:
        """Whether it encodes by tiktoken's rule for rank files (see the class docstring)."""
        return self._ranks

    @property
    def ignore_merges(self) -> bool:
        """Whether a pretoken that is a token is taken whole before the merges (HF's flag)."""
        return self._ignore_merges

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
        rule = {"ranks": self._ranks, "ignore_merges": self._ignore_merges}
        return (
            _rebuild,
            (*state, self.unicode_version, self._roles, self._model_max_length, rule),
        )

    def with_special_tokens(
        self,
        tokens: Iterable[str],
        *,
        special_token_roles: Mapping[str, str | None] | None = None,
        model_max_length: int | None = None,
    ) -> Tokenizer:
        """A new tokenizer with `tokens` added as special tokens, with ids after the last one,
        in the order given: every existing id keeps its bytes, so ids encoded before stay valid.
        `special_token_roles` changes the roles it names (a None value removes one) and keeps
        the others; `<|endoftext|>` among `tokens` becomes the eos token when there is none.
        `model_max_length` replaces the maximum length when given. A token that is empty,
        listed twice or already a special token is a ValueError.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
        >>> chat = tok.with_special_tokens(["<|im_start|>", "<|im_end|>"])
        >>> chat.special_tokens
        {'<|endoftext|>': 256, '<|im_start|>': 257, '<|im_end|>': 258}
        """
        new = check_special_tokens(tokens)
        for token in new:
            if token in self._special_ids:
                raise ValueError(
                    f"{token!r} is already a special token of this tokenizer (id "
                    f"{self._special_ids[token]}); list only new special tokens"
                )
        vocab = dict(self._vocab)
        # Ids of their own even when the bytes are a token already: the last id with a special
        # token's bytes is the special (see __init__), and the old id stays a plain token.
        for n, token in enumerate(new):
            vocab[self._n_vocab + n] = token.encode("utf-8")
        roles: dict[str, str | None] = dict(self._roles)
        if "eos_token" not in roles:
            roles |= check_roles(None, new)  # the default eos token, if added now
        roles |= special_token_roles or {}
        tok = Tokenizer(
            vocab,
            self._merges,
            [*self._special_ids, *new],
            pattern=self.pattern,
            special_token_roles=roles,
            model_max_length=self._model_max_length
            if model_max_length is None
            else model_max_length,
            ranks=self._ranks,
            ignore_merges=self._ignore_merges,
        )
        tok.unicode_version = self.unicode_version
        return tok

    def save(
        self, directory: str | os.PathLike[str], *, formats: Iterable[str] | None = None
    ) -> list[Path]:
        """Writes the tokenizer into `directory` (atomically) in every format: GPT-2
        `vocab.json` + `merges.txt`, HF `tokenizer.json`, `tokenizer.tiktoken` + its sidecar and
        `bytepair.model`; `formats` picks some ("gpt2", "hf", "tiktoken", "bytepair"). Every
        file is rendered before any is written, so a format that cannot hold the tokenizer
        leaves the folder as it was. Returns the paths written."""
        return write(model_data(self), directory, formats=formats)

    # --- encoding ----------------------------------------------------------------------------
    # `encode(text)` and `encode_ordinary(text)` are the core's (see the class docstring);
    # these are their general paths.
    def _encode_options(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> list[int]:
        """`encode` with options, or of a text to refuse (not a str) or mend (lone surrogates)."""
        allowed = quick_policy(text, allowed_special, disallowed_special)
        if allowed is SLOW:
            allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
            refuse(check_str(text), disallowed)
        try:  # inline, not `_utf8`: per-document loops make millions of these calls
            return self._encode(text, allowed)
        except UnicodeEncodeError:
            return self._encode(check_text(text), allowed)

    def _encode_ordinary_mended(self, text: str) -> list[int]:
        """`encode_ordinary` of a text to refuse (not a str) or mend (lone surrogates)."""
        return self._encode(check_text(text), NO_SPECIALS)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> list[list[int]]:
        """`[encode(t) for t in texts]`, in parallel on `num_threads` threads (default: all)."""
        texts = [check_str(t) for t in texts]
        allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
        for t in texts:
            refuse(t, disallowed)
        return _utf8(self._encode_batch, texts, allowed, check_num_threads(num_threads))

    def encode_ordinary_batch(
        self, texts: Sequence[str], *, num_threads: int | None = None
    ) -> list[list[int]]:
        """`[encode_ordinary(t) for t in texts]`, in parallel."""
        texts = [check_str(t) for t in texts]
        return _utf8(self._encode_batch, texts, [], check_num_threads(num_threads))

    def encode_to_numpy(
        self,
        text: str,
        *,
        dtype: npt.DTypeLike | None = None,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> npt.NDArray[np.uint16] | npt.NDArray[np.uint32]:
        """Ids of `text` as a numpy array: uint16 when every id fits, else uint32 (or `dtype`:
        uint16 or uint32).

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).encode_to_numpy("hi").dtype
        dtype('uint16')
        """
        allowed = quick_policy(text, allowed_special, disallowed_special)
        if allowed is SLOW:
            allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
            refuse(check_str(text), disallowed)
        small = self._n_vocab <= 1 << 16 if dtype is None else self._small_dtype(dtype)
        try:
            return self._encode_to_numpy(text, allowed, small)
        except UnicodeEncodeError:
            return self._encode_to_numpy(check_text(text), allowed, small)

    def encode_batch_to_numpy(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        dtype: npt.DTypeLike | None = None,
        allowed_special: AllowedSpecial = "all",
        disallowed_special: AllowedSpecial = (),
    ) -> tuple[npt.NDArray[np.uint16] | npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
        """The ids of every text in one flat numpy array, and `offsets` (uint64, one more than
        the texts) such that text i's ids are `ids[offsets[i]:offsets[i + 1]]`: the form corpus
        tools and data loaders want, with no Python object per id. dtype as `encode_to_numpy`.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> ids, offsets = tok.encode_batch_to_numpy(["hi", "", "a"])
        >>> ids.tolist(), offsets.tolist()
        ([104, 105, 97], [0, 2, 2, 3])
        """
        texts = [check_str(t) for t in texts]
        allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
        for t in texts:
            refuse(t, disallowed)
        return _utf8(
            self._encode_batch_to_numpy,
            texts,
            allowed,
            check_num_threads(num_threads),
            self._small_dtype(dtype),
        )

    def _small_dtype(self, dtype: npt.DTypeLike | None) -> bool:
        """Whether ids go out as uint16: when every id fits, unless `dtype` says uint32."""
        fits = self._n_vocab <= 1 << 16
        if dtype is None:
            return fits
        import numpy as np

        wanted: np.dtype[np.generic] | None
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
        allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
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
            buffer = check_text(buffer)
            refuse(done_tail + buffer, disallowed)
            ids, n_chars = self._encode_prefix(buffer, allowed)
            if n_chars:
                done_tail = buffer[max(0, n_chars - keep) : n_chars] if keep else ""
                buffer = buffer[n_chars:]
                threshold = len(buffer) + _STREAM_CHARS
                yield ids
            else:
                threshold = 2 * len(buffer)  # no cut yet (e.g. one long word): wait for more
            pieces = [buffer, held]
            size = len(buffer) + len(held)
        buffer = check_text("".join(pieces))
        refuse(done_tail + buffer, disallowed)
        yield self._encode_prefix(buffer, allowed, last=True)[0]

    # --- decoding ----------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The tokens' bytes, concatenated; an unknown id raises KeyError naming it."""
        ids = check_ids(ids)
        try:
            return self._decode_bytes(ids)
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

    def incremental_decoder(self) -> IncrementalDecoder:
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


def model_data(tok: Tokenizer) -> ModelData:
    """What the formats write of a tokenizer: vocabulary, merges, special tokens, pattern, the
    Unicode version of its training, and the roles and maximum length transformers reads."""
    return ModelData(
        tok.vocab,
        tok.merges,
        tok.special_tokens,
        tok.pattern,
        tok.unicode_version,
        roles=tok.special_token_roles,
        model_max_length=tok.model_max_length,
        ranks=tok.ranks,
        ignore_merges=tok.ignore_merges,
    )


def core_encoder(tok: Tokenizer) -> Encoder:
    """The Rust encoder of `tok`, for stages that drive the core directly (corpus encoding
    hands it whole blocks of bytes): the tokenizer itself, a subclass of the core's."""
    return tok


_NO_ARG = object()
_R = TypeVar("_R")


def _utf8(
    call: Callable[..., _R],
    texts: str | list[str],
    allowed: list[str] | None,
    b: object = _NO_ARG,
    c: object = _NO_ARG,
) -> _R:
    """`call(texts, allowed[, b[, c]])`; if a text has lone surrogates, which UTF-8 cannot
    encode (the core then refuses it with UnicodeEncodeError), again with every text fixed by
    `check_text`. Checking every text first cost a UTF-8 copy of each non-ASCII one: ~10% of
    the time of per-document encoding (perf), as the core makes that copy again. Fixed
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


def _rebuild(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    specials: list[str],
    pattern: str,
    unicode_version: str,
    roles: dict[str, str] | None = None,
    model_max_length: int | None = None,
    rule: dict[str, bool] | None = None,
) -> Tokenizer:
    """The Tokenizer of a pickle; roles, maximum length and rule have defaults because pickles
    made before they existed lack them."""
    tok = Tokenizer(
        vocab,
        merges,
        specials,
        pattern=pattern,
        special_token_roles=roles,
        model_max_length=model_max_length,
        **(rule or {}),
    )
    tok.unicode_version = unicode_version
    return tok
