"""Fuzz target for the encoder: random valid tokenizers (merges of random token pairs, ids in
any order, special tokens that overlap the text) on text made of their own tokens. Every entry
point must give `tests/reference.py`'s ids: `encode`, `encode_ordinary`, `encode_batch`,
`encode_to_numpy`, and `encode_iterable` with a tiny buffer so that it cuts the stream often.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from pathlib import Path

import bytepair
import reference as ref
from bytepair import _stream

from . import gen
from .common import Target, Violation, oracle_applies

_CHARS = ["a", "b", " ", "  ", "é", "\n", "'s", "1", "!", "你", "🙃", "\r\n"]


def _gen(rng: random.Random) -> dict[str, object]:
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    common = sorted({bytes([b]) for c in _CHARS for b in c.encode()})
    merges = []
    for _ in range(rng.randrange(80)):
        pool = common + tokens[256:]
        left, right = rng.choice(pool), rng.choice(pool)
        merges.append((left, right))
        if left + right not in known:
            known.add(left + right)
            tokens.append(left + right)
    ids = list(range(len(tokens)))
    if rng.random() < 0.3:
        rng.shuffle(ids)
    pieces = [rng.choice(_CHARS) for _ in range(rng.randrange(60))]
    for _ in range(rng.randrange(5) if len(tokens) > 256 else 0):
        pieces.append(rng.choice(tokens[256:]).decode("utf-8", "replace"))
    specials = gen.special_tokens(rng)
    pieces += [rng.choice(specials) for _ in range(rng.randrange(3) if specials else 0)]
    if rng.random() < 0.1:
        pieces.append(rng.choice(_CHARS) * rng.randrange(64, 300))  # the heap algorithm
    rng.shuffle(pieces)
    return {
        "vocab": dict(zip(ids, tokens, strict=True)),
        "merges": merges,
        "specials": specials,
        "text": "".join(pieces),
        "stream": rng.choice([1, 2, 3, 5, 16]),
    }


@contextlib.contextmanager
def _stream_chars(n: int) -> Iterator[None]:
    """`encode_iterable` with a buffer of `n` characters, so it encodes prefixes all the time."""
    saved, _stream.STREAM_CHARS = _stream.STREAM_CHARS, n
    try:
        yield
    finally:
        _stream.STREAM_CHARS = saved


def _check(inp: dict[str, object], workdir: Path) -> str:
    vocab, merges, specials, text = inp["vocab"], inp["merges"], inp["specials"], inp["text"]
    tok = bytepair.Tokenizer(vocab, merges, specials)
    # where the oracle's newer Unicode splits the text otherwise, the calls are checked
    # against each other only
    oracle = oracle_applies(text)
    want = ref.encode(text, vocab, merges, specials) if oracle else tok.encode(text)
    if tok.encode(text) != want:
        raise Violation(f"encode differs from the reference: {tok.encode(text)} != {want}")
    if oracle and tok.encode_ordinary(text) != ref.encode(text, vocab, merges, []):
        raise Violation("encode_ordinary differs from the reference")
    if tok.decode(want) != text:
        raise Violation("decode(encode(t)) != t")
    half = text[: len(text) // 2]
    if tok.encode_batch([text, half], num_threads=2) != [want, tok.encode(half)]:
        raise Violation("encode_batch differs from encode")
    if tok.encode_to_numpy(text).tolist() != want:
        raise Violation("encode_to_numpy differs from encode")
    step = inp["stream"]
    with _stream_chars(step):
        streamed = list(tok.encode_iterable(text[i : i + step] for i in range(0, len(text), step)))
    if streamed != want:
        raise Violation(f"encode_iterable (buffer {step}) differs from encode: {streamed}")
    return "matched"


TARGETS = [Target("encode", _gen, _check)]
