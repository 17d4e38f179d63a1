"""What every fuzz target shares: the `Target` record, the contract checks, the base models
that mutations start from, and the encode/decode round trip a loaded tokenizer must pass.
"""

from __future__ import annotations

import functools
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import bytepair
from bytepair.count import pretokenize
from unicode_diff import diff_chars

from . import gen

#: GPT-2's own files, as they ship in `tests/data/cs336` (used when present).
CS336_DATA = Path(__file__).resolve().parents[1] / "data" / "cs336"


class Violation(AssertionError):
    """The reader broke its contract on this input."""


def oracle_applies(*texts: str) -> bool:
    """Whether `tests/reference.py` is the contract for these texts: not where one holds a code
    point that the oracle's newer Unicode classes differently (`tests/data/unicode_diff.txt`,
    docs/unicode.md), as the differential tests' text leaves them out."""
    diff = diff_chars()
    return not any(ch in diff for t in texts for ch in t)


@dataclass(frozen=True)
class Target:
    """A fuzz target: `generate(rng)` builds one input; `check(input, workdir)` runs the reader
    on it, raises `Violation` if the contract is broken, and returns an outcome label."""

    name: str
    generate: Callable[[random.Random], object]
    check: Callable[[object, Path], str]


def clear_error(e: BaseException, types: tuple[type, ...], *names: str) -> str:
    """The outcome label of an expected exception; `Violation` unless `e` is one of `types` and
    its message holds each of `names` (the file, the argument) and more than a bare repr."""
    message = str(e)
    if not isinstance(e, types):
        raise Violation(f"{type(e).__name__} is not one of the documented errors: {message}") from e
    missing = [n for n in names if n not in message]
    if missing or len(message) < 12:
        raise Violation(f"unclear {type(e).__name__} (should name {missing}): {message}") from e
    return type(e).__name__


def covering(tok: bytepair.Tokenizer, text: str) -> bool:
    """Whether the pieces of `text` cover it (a custom pattern may skip characters, which
    `encode` then drops, as `regex.findall` would)."""
    pieces = pretokenize(text, special_tokens=list(tok.special_tokens), pattern=tok.pattern)
    return "".join(pieces) == text


def round_trip(tok: bytepair.Tokenizer, rng: random.Random) -> None:
    """A tokenizer that loaded must encode and decode: `decode(encode(t)) == t` whenever its
    pattern covers `t`, a pattern failure is a ValueError naming it, an unknown id a KeyError."""
    text = gen.text(rng, 20)
    try:
        ids = tok.encode(text)
    except ValueError as e:
        clear_error(e, (ValueError,), "pattern")
        return
    if covering(tok, text) and tok.decode(ids) != text:
        raise Violation(f"decode(encode(t)) != t for t={text!r}: ids {ids}")
    try:
        tok.decode([*ids, tok.n_vocab])
    except KeyError as e:
        clear_error(e, (KeyError,), str(tok.n_vocab))
    else:
        raise Violation(f"decode accepted the unknown id {tok.n_vocab}")


_CORPUS_SEED = 20260601


@functools.cache
def base_files() -> list[dict[str, bytes]]:
    """Valid model folders (file name → content) that mutations start from: a GPT-2-pattern
    tokenizer with special tokens, one with a custom pattern, one without merges."""
    rng = random.Random(_CORPUS_SEED)
    corpus = [gen.text(rng, 200) for _ in range(30)] + ["low lower lowest newest widest"] * 5
    corpus += ["<|endoftext|>".join(corpus[:3]), "a<pad>b"]
    toks = [
        bytepair.train_from_iterator(corpus, 340, ["<|endoftext|>", "<pad>"], progress=False),
        bytepair.train_from_iterator(
            corpus, 300, ["<|endoftext|>"], pattern=r"\S+|\s+", progress=False
        ),
        bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, []),
    ]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, tok in enumerate(toks):
            tok.save(Path(tmp) / str(i))
            out.append({p.name: p.read_bytes() for p in (Path(tmp) / str(i)).iterdir()})
    return out


@functools.cache
def base_tokenizer() -> bytepair.Tokenizer:
    """The first base model, for targets that need a vocabulary and merges as Python values."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in base_files()[0].items():
            (Path(tmp) / name).write_bytes(data)
        return bytepair.load(tmp)


def base_args() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """A fresh copy of the base model's vocabulary (special tokens left out) and merges."""
    tok = base_tokenizer()
    n_ordinary = 256 + len(tok.merges)
    return {i: b for i, b in tok.vocab.items() if i < n_ordinary}, tok.merges


@functools.cache
def gpt2_files() -> dict[str, bytes] | None:
    """GPT-2's `vocab.json` and `merges.txt`, or None without the test data folder."""
    if not (CS336_DATA / "gpt2_vocab.json").is_file():
        return None
    return {
        "vocab.json": (CS336_DATA / "gpt2_vocab.json").read_bytes(),
        "merges.txt": (CS336_DATA / "gpt2_merges.txt").read_bytes(),
    }
