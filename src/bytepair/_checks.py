"""Argument checks shared by training, counting and encoding: errors say what was passed and how
to fix it. Checks only: nothing here converts files or runs the core.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable

#: The most threads an operation takes, unless the machine has more CPUs.
MAX_THREADS = 256


def check_special_tokens(special_tokens: Iterable[str] | None) -> list[str]:
    """A list of distinct, non-empty special-token strings."""
    if special_tokens is None:
        return []
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError(
            f"special_tokens must be a list of strings, got the single string {special_tokens!r}; "
            f"write [{special_tokens!r}]"
        )
    try:
        tokens = list(special_tokens)
    except TypeError:
        raise TypeError(
            f"special_tokens must be a list of strings, got {type(special_tokens).__name__}"
        ) from None
    seen: set[str] = set()
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(f"special tokens must be strings, got {token!r}")
        if not token:
            raise ValueError("special tokens must not be empty; remove the empty string")
        if not is_utf8(token):
            raise ValueError(
                f"special token {token!r} holds a lone surrogate, which UTF-8 cannot encode; "
                f"join surrogate pairs into their characters"
            )
        if token in seen:
            raise ValueError(f"special token {token!r} is given twice; list each token once")
        seen.add(token)
    return tokens


#: The largest token id: ids fit the core's u32 with room to spare.
MAX_TOKEN_ID = (1 << 31) - 1


def is_utf8(text: str) -> bool:
    """Whether UTF-8 can encode `text` (it cannot encode lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_merges(merges: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Merges as (bytes, bytes) pairs. Only bytes-like items are taken: `bytes(n)` of an int
    would silently make n zero bytes (or try to allocate terabytes)."""
    if isinstance(merges, (str, bytes)) or not isinstance(merges, Iterable):
        raise TypeError(f"merges must be a list of (bytes, bytes) pairs, got {merges!r:.100}")
    out = []
    for k, pair in enumerate(merges):
        # The usual item, a tuple of two bytes, checked without a call (a call per item was most
        # of the time of checking 10K merges).
        if type(pair) is tuple and len(pair) == 2:
            a, b = pair
            if type(a) is bytes and type(b) is bytes:
                out.append(pair)
                continue
        if not (
            isinstance(pair, (tuple, list))
            and len(pair) == 2
            and all(isinstance(t, (bytes, bytearray, memoryview)) for t in pair)
        ):
            raise TypeError(
                f"merge {k} must be a pair of bytes like (b'a', b'b'), got {pair!r:.100}"
            )
        out.append((bytes(pair[0]), bytes(pair[1])))
    return out


def check_flag(name: str, value: object) -> bool:
    """A True/False option."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


#: The orders of merging (`Tokenizer`'s `bpe`).
BPE_ORDERS = ("gpt2", "hf", "tiktoken")


def check_bpe(bpe: object) -> str:
    """ "gpt2", "hf" or "tiktoken"."""
    if bpe in BPE_ORDERS:
        return str(bpe)
    raise ValueError(f"bpe must be 'gpt2', 'hf' or 'tiktoken', got {bpe!r}")


#: The Unicode normalizations a tokenizer may apply before pretokenizing.
NORMALIZATIONS = ("NFC", "NFKC")


def check_normalization(normalization: object) -> str | None:
    """None, "NFC" or "NFKC"."""
    if normalization is None or normalization in NORMALIZATIONS:
        return normalization
    raise ValueError(f"normalization must be None, 'NFC' or 'NFKC', got {normalization!r}")


def check_num_threads(num_threads: int | None) -> int:
    """A positive thread count; None means every core this process may use."""
    if num_threads is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:
            return os.cpu_count() or 1
    # Each worker holds a few MB of tables and a stack: 10**5 of them exhausted memory (and
    # 2**64 - 1 overflowed a channel's capacity), far past any use.
    limit = max(MAX_THREADS, os.cpu_count() or 1)
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise ValueError(f"num_threads must be a positive integer, got {num_threads!r}")
    if not 1 <= num_threads <= limit:
        raise ValueError(
            f"num_threads must be between 1 and {limit} (the larger of {MAX_THREADS} and the "
            f"CPU count), got {num_threads}"
        )
    return num_threads


def check_callback(progress: object) -> None:
    """`progress` is None or a callable (the counting functions call it with the amount read)."""
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable taking the amount read so far, or None; got "
            f"{progress!r} (train() and the CLI take progress=True/False for progress bars)"
        )


def check_str(text: object) -> str:
    """`text`, if it is a str."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__} (decode bytes first)")
    return text


def check_text(text: str) -> str:
    """`text` as a str that UTF-8 can encode: lone surrogates become U+FFFD (as in tiktoken),
    and a surrogate pair written as two code points becomes the character it encodes."""
    check_str(text)
    if text.isascii():  # O(1) for CPython strings
        return text
    if is_utf8(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def check_vocab(vocab: dict[int, bytes]) -> dict[int, bytes]:
    """A vocabulary as id → bytes, ids in 0..2**31-1 and not too sparse for the core's tables."""
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


def check_ids(ids: Iterable[int]) -> list[int]:
    """Ids as Python ints (numpy integers and arrays are accepted, as in tiktoken); an id that
    is no integer or out of u32 is a KeyError, as an unknown id is."""
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


def small_dtype(dtype: object, n_vocab: int) -> bool:
    """Whether ids go out as uint16: when every id (below `n_vocab`) fits, unless `dtype`
    says uint32; a dtype other than those two, or uint16 for ids that do not fit, is an
    error."""
    fits = n_vocab <= 1 << 16
    if dtype is None:
        return fits
    import numpy as np  # loaded only when ids go out as arrays

    try:
        wanted = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        wanted = None
    if wanted not in (np.uint16, np.uint32):
        raise ValueError(f"dtype must be uint16 or uint32, got {dtype!r}")
    if wanted == np.uint16 and not fits:
        raise ValueError(f"dtype uint16 cannot hold ids up to {n_vocab - 1}; use uint32")
    return bool(wanted == np.uint16)
