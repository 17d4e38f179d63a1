"""The Tokenizer (docs/spec.md §2): encode and decode with a vocabulary, merges and special
tokens, and save as model data that `formats/` writes (`loading.py` reads files into one).
Python decides policy (`_specials.py`); the Rust `Encoder` does the work, with training's
pretokenizer. It never trains and knows no file syntax.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._checks import (
    check_bpe,
    check_flag,
    check_ids,
    check_merges,
    check_normalization,
    check_num_threads,
    check_special_tokens,
    check_str,
    check_text,
    check_vocab,
    small_dtype,
)
from ._core import UNICODE_VERSION, Encoder
from ._mend import mended as _utf8
from ._roles import check_max_length, check_roles
from ._specials import (
    NO_SPECIALS,
    PLAIN,
    SLOW,
    AddedToken,
    AllowedSpecial,
    check_added,
    policy,
    quick_policy,
    refuse,
    template_ids,
)
from ._stream import stream_ids
from .formats import ModelData, write
from .formats.gpt2 import read_pair
from .patterns import Pattern, resolve_pattern

if TYPE_CHECKING:  # numpy loads only when ids go out as arrays
    import numpy as np
    import numpy.typing as npt

    from .decoding import IncrementalDecoder

__all__ = ["AllowedSpecial", "Tokenizer", "core_encoder", "model_data"]


class Tokenizer(Encoder):
    """A byte-level BPE tokenizer.

    `vocab` maps ids to bytes (it must hold all 256 single bytes), `merges` lists byte pairs in
    creation order; special tokens not in `vocab` get the next free ids, in the order given.
    By default (CS336) `encode` matches every special token; for tiktoken's strict mode pass
    `allowed_special=set(), disallowed_special="all"`: text holding one then raises ValueError.
    `special_token_roles` (e.g. `{"eos_token": "<|endoftext|>"}`, the default when that token is
    present) and `model_max_length` (None: unknown) are what transformers reads of
    `tokenizer_config.json`; they do not change encoding. `bpe` is the order of merging
    (docs/spec.md §2.2): "gpt2", GPT-2's rounds (the lowest-ranked pair, at all its places left
    to right); "hf", one pair at a time (lowest rank, then leftmost), as HF tokenizers merges;
    "tiktoken", tiktoken's rule for rank files (ids are ranks, any two adjacent tokens whose
    bytes are a token merge, one pair at a time, and a pretoken that is a token is taken whole;
    `merges` are then only kept for formats). The three agree for merges that make pairs of
    higher rank only, as trained ones. `ignore_merges=True` takes a pretoken that is a token
    whole before the merges (HF's flag). `normalization` ("NFC", "NFKC") normalizes the text
    between special tokens first; `added_tokens` gives special tokens HF's options
    (`AddedToken`); `template` (HF's notation, "<s> $A") wraps a text in special tokens when
    a call passes `add_special_tokens=True`. Loading a file sets these as the file says.

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
        pattern: Pattern = "gpt2",
        special_token_roles: Mapping[str, str | None] | None = None,
        model_max_length: int | None = None,
        bpe: str = "gpt2",
        ignore_merges: bool = False,
        normalization: str | None = None,
        match_specials: bool = True,
        added_tokens: Mapping[str, AddedToken] | None = None,
        template: str | None = None,
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
        self._bpe = check_bpe(bpe)
        self._ignore_merges = check_flag("ignore_merges", ignore_merges)
        self._normalization = check_normalization(normalization)
        self._match_specials = check_flag("match_specials", match_specials)
        self._added = check_added(added_tokens, self._special_ids)
        self._template = template
        self._wrap = template_ids(template, self._special_ids)
        self._build(
            list(self._vocab.items()),
            self._merges,
            list(self._special_ids.items()),
            self.pattern,
            bpe=self._bpe,
            whole=self._ignore_merges,
            normalization=self._normalization,
            match_specials=self._match_specials,
            added=[self._added.get(t, PLAIN).core() for t in self._special_ids if self._added],
        )
        if self._ignore_merges and self._bpe != "tiktoken" and not self._n_whole():
            self._ignore_merges = False  # every token is what its merges make of it anyway
        if self._bpe == "hf" and self._merges_grow():
            self._bpe = "gpt2"  # the orders merge alike (trained merges: nearly every file)

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | os.PathLike[str],
        merges_filepath: str | os.PathLike[str],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: Pattern = "gpt2",
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
    def bpe(self) -> str:
        """The order of merging: "gpt2", "hf" or "tiktoken" (see the class docstring)."""
        return self._bpe

    @property
    def ignore_merges(self) -> bool:
        """Whether a pretoken that is a token is taken whole before the merges (HF's flag)."""
        return self._ignore_merges

    @property
    def normalization(self) -> str | None:
        """ "NFC" or "NFKC": the Unicode normalization of text between special tokens before it
        is pretokenized (Qwen's tokenizers apply NFC); None for none."""
        return self._normalization

    @property
    def match_specials(self) -> bool:
        """Whether `encode` matches the special tokens in text by default (False: only those a
        call names in `allowed_special`, as Mistral's tokenizers, which never match them)."""
        return self._match_specials

    @property
    def added_tokens(self) -> dict[str, AddedToken]:
        """HF's options of the special tokens that have any (`AddedToken`)."""
        return dict(self._added)

    @property
    def template(self) -> str | None:
        """The special tokens around a text with `add_special_tokens=True`, in HF's notation
        ("<s> $A"), or None."""
        return self._template

    def _rule(self) -> dict[str, Any]:
        """How text becomes ids beyond vocabulary, merges and pattern: the keyword arguments
        a copy of this tokenizer is built with."""
        return {
            "bpe": self._bpe,
            "ignore_merges": self._ignore_merges,
            "normalization": self._normalization,
            "match_specials": self._match_specials,
            "added_tokens": self._added,
            "template": self._template,
        }

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
        return (
            _rebuild,
            (*state, self.unicode_version, self._roles, self._model_max_length, self._rule()),
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
            **self._rule(),
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
        add_special_tokens: bool = False,
    ) -> list[int]:
        """`encode` with options, or of a text to refuse (not a str) or mend (lone surrogates).
        `add_special_tokens` wraps the ids in the template's (transformers' flag; tiktoken and
        CS336 add none, nor does bytepair by default)."""
        allowed = quick_policy(text, allowed_special, disallowed_special)
        if allowed is SLOW:
            allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
            refuse(check_str(text), disallowed)
        try:  # inline, not `_utf8`: per-document loops make millions of these calls
            ids = self._encode(text, allowed)
        except UnicodeEncodeError:
            ids = self._encode(check_text(text), allowed)
        if check_flag("add_special_tokens", add_special_tokens):
            before, after = self._wrap
            return [*before, *ids, *after]
        return ids

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
        add_special_tokens: bool = False,
    ) -> list[list[int]]:
        """`[encode(t) for t in texts]`, in parallel on `num_threads` threads (default: all)."""
        texts = [check_str(t) for t in texts]
        allowed, disallowed = policy(self._special_ids, allowed_special, disallowed_special)
        for t in texts:
            refuse(t, disallowed)
        out = _utf8(self._encode_batch, texts, allowed, check_num_threads(num_threads))
        if check_flag("add_special_tokens", add_special_tokens):
            before, after = self._wrap
            return [[*before, *ids, *after] for ids in out]
        return out

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
        small = self._small_dtype(dtype)
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
        return small_dtype(dtype, self._n_vocab)

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
            stream_ids(self, self._special_ids, iterable, allowed_special, disallowed_special)
        )

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
        **tok._rule(),
    )


def core_encoder(tok: Tokenizer) -> Encoder:
    """The Rust encoder of `tok`, for stages that drive the core directly (corpus encoding
    hands it whole blocks of bytes): the tokenizer itself, a subclass of the core's."""
    return tok


def _rebuild(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    specials: list[str],
    pattern: Pattern,
    unicode_version: str,
    roles: dict[str, str] | None = None,
    model_max_length: int | None = None,
    rule: dict[str, Any] | None = None,
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
