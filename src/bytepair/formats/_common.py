"""What every format module shares: the plain model value they read and write (`ModelData`, so
no format imports `Tokenizer`), GPT-2's byte-to-character table (vocab.json, merges.txt and
tokenizer.json write bytes with it), and strict UTF-8 and JSON reading whose errors name the file
and line. Writing files is `formats/__init__.py`'s (through `_atomic.py`).
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._checks import MAX_TOKEN_ID
from .._core import canonical_merges
from .._specials import AddedToken
from ..patterns import Pattern


class CannotHold(ValueError):
    """A format cannot express a tokenizer (tiktoken's rule in a merge list, a normalization in
    a `.tiktoken`, ...): `save` without `formats=` leaves that format out; naming it is an error."""


@dataclass
class ModelData:
    """A tokenizer as data: what a format file holds. `special_tokens` maps text → id in the
    order given; `roles` maps transformers' role (`eos_token`, ...) → special token;
    `unicode_version` and `roles` are None when the format does not record them, and
    `model_max_length` when it is unknown. `loading.py` turns it into a `Tokenizer`, and
    `encoding.model_data` a `Tokenizer` into it. `bpe`: the order of merging, "gpt2", "hf" or
    "tiktoken" (`Tokenizer`; with "tiktoken", `merges` hold those HF's converter derives, for
    formats that need them);
    `ignore_merges`: a pretoken that is a token is that token (HF's flag); `normalization`:
    "NFC" or "NFKC" before pretokenizing, or None; `match_specials`: False where special tokens
    are matched in text only when a call names them (Mistral's control tokens);
    `added_tokens`: HF's options of the special tokens that have any; `template`: the special
    tokens around a text when a call asks for them, in HF's notation ("<s> $A")."""

    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    special_tokens: dict[str, int] = field(default_factory=dict)
    pattern: Pattern = "gpt2"
    unicode_version: str | None = None
    roles: dict[str, str] | None = None
    model_max_length: int | None = None
    bpe: str = "gpt2"
    ignore_merges: bool = False
    normalization: str | None = None
    match_specials: bool = True
    added_tokens: dict[str, AddedToken] = field(default_factory=dict)
    template: str | None = None

    def plain_tokens(self) -> dict[int, bytes]:
        """Id → bytes of every token that is not a special token."""
        special_ids = set(self.special_tokens.values())
        return {i: b for i, b in sorted(self.vocab.items()) if i not in special_ids}


def refuse_unmatched_specials(data: ModelData, target: str, options: bool = True) -> None:
    """Formats whose readers match every special token as it is cannot hold a tokenizer that
    does not; nor, unless `options` is False (HF's own), HF's options of added tokens or a
    template."""
    what = (
        "matches its special tokens in text only when a call names them (as Mistral's)"
        if not data.match_specials
        else f"gives special tokens HF's options ({_some(sorted(data.added_tokens))})"
        if data.added_tokens and options
        else f"wraps texts in the template {data.template!r} when asked"
        if data.template and options
        else None
    )
    if what:
        raise CannotHold(
            f"cannot save to {target}: the tokenizer {what}, which {target} cannot say; leave "
            f"this format out. Nothing was written."
        )


def _some(names: list[str]) -> str:
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character table: 188 printable bytes map to themselves, the
    other 68 to chr(256 + n) in byte order."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return table


@functools.cache
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of `bytes_to_unicode`."""
    return {c: b for b, c in bytes_to_unicode().items()}


@functools.cache
def _to_gpt2() -> dict[int, str]:
    """A `str.translate` table: latin-1 character of a byte → its GPT-2 character."""
    return dict(bytes_to_unicode())


@functools.cache
def _from_gpt2() -> dict[int, int]:
    """A `str.translate` table: GPT-2 character → latin-1 character of its byte."""
    return {ord(c): b for b, c in bytes_to_unicode().items()}


@functools.cache
def _gpt2_chars() -> frozenset[str]:
    return frozenset(bytes_to_unicode().values())


def encode_token(token: bytes) -> str:
    """A token's bytes as GPT-2 characters (C-speed: tokens can be megabytes long)."""
    return token.decode("latin-1").translate(_to_gpt2())


def is_gpt2_text(text: str) -> bool:
    """Whether every character of `text` is a GPT-2 byte character."""
    return _gpt2_chars().issuperset(text)


def decode_token(text: str, where: str) -> bytes:
    """GPT-2 characters back to bytes; `where` names the place for the error."""
    bad = set(text).difference(_gpt2_chars())
    if bad:
        raise ValueError(f"{where}: {min(bad)!r} is not a GPT-2 byte character in {text!r}")
    return text.translate(_from_gpt2()).encode("latin-1")


def utf8(text: str, where: object) -> bytes:
    """A token's text as UTF-8; a lone surrogate (JSON allows "\\ud800") is an error naming
    `where`."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"{where}: token {text!r} holds a lone surrogate, which UTF-8 cannot encode"
        ) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """A UTF-8 text file's content (a leading byte-order mark, as some editors write, is
    dropped); invalid UTF-8 is an error naming the file, line and byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{path}: line {line}: invalid UTF-8 at byte offset {e.start} (model files are UTF-8)"
        ) from None


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object hook that refuses a repeated key (json would keep the last silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return out


def read_json(path: str | os.PathLike[str]) -> object:
    """A JSON file's value; malformed JSON is an error naming the file and line."""
    text = read_text(path)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    except _DuplicateKey as e:
        key = json.dumps(e.args[0])
        line = text.count("\n", 0, max(text.rfind(key), 0)) + 1
        raise ValueError(
            f"{path}: line {line}: key {e.args[0]!r} is given twice; keep one"
        ) from None
    except (ValueError, RecursionError) as e:  # a number past int's digit limit; deep nesting
        raise ValueError(f"{path}: not valid JSON here ({e})") from None


def starts_like_hf(path: Path) -> bool:
    """Whether a JSON file starts as HF's tokenizer.json does (`{"version": ...`)."""
    with open(path, "rb") as f:
        head = f.read(256).lstrip(b"\xef\xbb\xbf \t\r\n{")
    return head.startswith(b'"version"')


def check_id(token_id: object, path: object, what: str) -> int:
    """A token id from a file: an int in 0..2**31-1, else an error naming `what`."""
    if isinstance(token_id, bool) or not isinstance(token_id, int):
        raise ValueError(f"{path}: {what} has id {token_id!r}, not an integer")
    if not 0 <= token_id <= MAX_TOKEN_ID:
        raise ValueError(f"{path}: {what} has id {token_id}, not in 0..2**31-1")
    return token_id


def gpt2_vocab_json(data: ModelData, target: str) -> dict[str, int]:
    """Token string → id as GPT-2's vocab.json and HF's model.vocab write it (special tokens as
    their text); refuses two tokens written alike, since one would be lost."""
    special_ids = {i: t for t, i in data.special_tokens.items()}
    out: dict[str, int] = {}
    for i, b in sorted(data.vocab.items()):
        key = special_ids[i] if i in special_ids else encode_token(b)
        if key in out:
            raise CannotHold(
                f"cannot save to {target}: token {i} ({b!r}) and token {out[key]} are both "
                f"written {key!r} there (a special token's text equals another token's GPT-2 "
                f"form, or two tokens have the same bytes); rename the special token or leave "
                f"this format out. Nothing was written."
            )
        out[key] = i
    return out


def from_ranks(
    ranks: dict[bytes, int],
    specials: dict[str, int],
    pattern: Pattern,
    where: object,
    specials_where: object = None,
) -> ModelData:
    """The model of tiktoken's ranks (token bytes → rank = id) and special tokens, as a
    `.tiktoken` file or a `tiktoken.Encoding` holds them; `where` names the source in messages.
    The merges are those HF's converter derives (tiktoken's BPE of each token's bytes with lower
    ranks only ends in two tokens). Where every token has one, they encode as tiktoken does
    (OpenAI's files); where some have none (Llama 3's 678 tokens), the model keeps tiktoken's
    rule (`ranks`), which bytepair's encoder follows exactly."""
    vocab = {r: b for b, r in ranks.items()}
    gaps = set(range(max(vocab, default=-1) + 1)) - set(vocab) - set(specials.values())
    if gaps:
        raise ValueError(
            f"{where}: the ranks skip {len(gaps):,} number(s) below the largest, the first "
            f"{min(gaps)}, and no special token takes them: a tiktoken rank file ranks its "
            f"tokens 0, 1, 2, ... (the file is damaged, or lines were removed)"
        )
    # one name an id: o200k_harmony also calls <|endofprompt|>'s 200018 <|reserved_200018|>,
    # which a bytepair tokenizer, whose ids have one text each, leaves out
    by_id: dict[int, str] = {}
    for token, i in specials.items():
        by_id.setdefault(i, token)
    specials = {token: i for i, token in by_id.items()}
    for token, i in specials.items():
        vocab.setdefault(i, utf8(token, specials_where or where))
    merges, unmade = canonical_merges(list(ranks.items()))
    pairs = [(a, b) for a, b in merges]
    return ModelData(vocab, pairs, specials, pattern, bpe="tiktoken" if unmade else "gpt2")
