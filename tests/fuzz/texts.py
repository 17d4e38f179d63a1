"""Fuzz targets for text input: text files through `count_files` and `train` (chunking must never
change the counts; strict mode names the file and byte offset), special-token lists and custom
patterns through every call that takes them. `tests/reference.py` is the oracle where it applies.
"""

from __future__ import annotations

import codecs
import random
import warnings
from collections import Counter
from pathlib import Path

import bytepair
import reference as ref
from bytepair.count import CountStats, pretokenize
from bytepair.sources import _SNIFF, binary_kind

from . import gen
from .common import Target, Violation, base_args, clear_error, covering, oracle_applies

#: Patterns that cannot fail on any input, and those `reference.py` (Python `regex`) runs alike.
_SAFE_PATTERNS = ["gpt2", "gpt2", "gpt2", r"\S+|\s+", r"\S+", r"\p{L}+|\P{L}+", "."]
_REF_PATTERNS = {"gpt2": ref.GPT2_PATTERN, r"\S+|\s+": r"\S+|\s+", r"\S+": r"\S+"}
_BIG_CHUNK = 1 << 20


def _count_replacements(e: UnicodeDecodeError) -> tuple[str, int]:
    _count_replacements.n += 1
    return "\ufffd", e.end


_count_replacements.n = 0
codecs.register_error("bytepair-fuzz-count", _count_replacements)


def _decode(data: bytes) -> tuple[str, int]:
    """Python's `errors="replace"` decoding, and the number of sequences it replaced."""
    _count_replacements.n = 0
    return data.decode("utf-8", "bytepair-fuzz-count"), _count_replacements.n


def _gen_files(rng: random.Random) -> dict[str, object]:
    return {
        "files": [gen.raw_bytes(rng) for _ in range(rng.choice([1, 1, 1, 2]))],
        "specials": gen.special_tokens(rng),
        "pattern": rng.choice(_SAFE_PATTERNS),
        "chunk_size": rng.choice([1, 2, 3, rng.randrange(1, 64), rng.randrange(1, 4096)]),
        "num_threads": rng.choice([1, 2]),
        "errors": rng.choice(["replace", "replace", "strict"]),
        "vocab_size": rng.choice([0, 0, 0, 0, 0, 0, 0, 0, 0, 300]),
    }


def _items(counts: bytepair.WordCounts) -> list[tuple[bytes, int]]:
    return counts.items()


def _check_files(inp: dict[str, object], workdir: Path) -> str:
    paths = [workdir / f"input{i}.txt" for i in range(len(inp["files"]))]
    for path, data in zip(paths, inp["files"], strict=True):
        path.write_bytes(data)
    opts = {"special_tokens": inp["specials"], "pattern": inp["pattern"], "errors": inp["errors"]}
    stats = CountStats()
    try:
        counts = bytepair.count_files(
            paths, chunk_size=inp["chunk_size"], num_threads=inp["num_threads"], stats=stats, **opts
        )
    except ValueError as e:
        return _check_strict_error(e, paths, inp)
    whole = bytepair.count_files(paths, chunk_size=_BIG_CHUNK, num_threads=1, **opts)
    texts, n_replaced = zip(*(_decode(d) for d in inp["files"]), strict=True)
    alone = bytepair.count_texts(texts, special_tokens=inp["specials"], pattern=inp["pattern"])
    if not _items(counts) == _items(whole) == _items(alone):
        raise Violation("counts depend on chunk_size/num_threads, or differ from count_texts")
    if (stats.n_bytes, stats.n_replaced) != (sum(map(len, inp["files"])), sum(n_replaced)):
        raise Violation(f"stats {stats} do not match the input")
    if inp["pattern"] in _REF_PATTERNS and oracle_applies(*texts):
        expected = Counter()
        for t in texts:
            expected += ref.count_words(t, inp["specials"], _REF_PATTERNS[inp["pattern"]])
        if dict(_items(counts)) != dict(expected):
            raise Violation("counts differ from tests/reference.py")
    if inp["vocab_size"]:
        return _check_train(paths, inp)
    return "counted"


def _check_strict_error(e: ValueError, paths: list[Path], inp: dict[str, object]) -> str:
    """A ValueError from counting is right only on a file that looks binary (naming it), or in
    strict mode on invalid UTF-8, naming the first bad file and the offset of its first bad
    byte."""
    for path, data in zip(paths, inp["files"], strict=True):
        if binary_kind(data[:_SNIFF]):
            return clear_error(e, (ValueError,), str(path), "not UTF-8 text")
    for path, data in zip(paths, inp["files"], strict=True):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            if inp["errors"] != "strict":
                break
            return clear_error(e, (ValueError,), str(path), f"byte offset {bad.start}")
    raise Violation(f"count_files raised on a valid input: {e}") from e


def _check_train(paths: list[Path], inp: dict[str, object]) -> str:
    vocab_size = 256 + len(inp["specials"]) + random.Random(len(paths)).randrange(40)
    opts = {"special_tokens": inp["specials"], "pattern": inp["pattern"], "progress": False}
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for chunk_size in (inp["chunk_size"], _BIG_CHUNK):
            try:
                tok = bytepair.train(paths, vocab_size, chunk_size=chunk_size, **opts)
                results.append((tok.vocab, tok.merges))
            except ValueError as e:
                results.append(clear_error(e, (ValueError,), "empty"))
    if results[0] != results[1]:
        raise Violation("train depends on chunk_size")
    return "trained"


def _gen_specials(rng: random.Random) -> dict[str, object]:
    specials = gen.special_tokens(rng) if rng.random() < 0.5 else gen.bad_special_tokens(rng)
    text = gen.text(rng)
    strings = [t for t in specials if isinstance(t, str)] if isinstance(specials, list) else []
    for _ in range(rng.randrange(4) if strings else 0):
        i = rng.randrange(len(text) + 1)
        text = text[:i] + rng.choice(strings) + text[i:]
    api = rng.choice(["pretokenize", "count_texts", "tokenizer", "train_from_iterator"])
    return {"text": text, "specials": specials, "api": api}


def _valid_specials(value: object) -> list[str] | None:
    """The list the API should accept, or None if it must refuse `value` (an independent
    statement of the rules: a collection of distinct, non-empty, UTF-8-encodable strings)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return None
    tokens = list(value)
    for t in tokens:
        if not isinstance(t, str) or not t or not _encodable(t):
            return None
    return tokens if len(set(tokens)) == len(tokens) else None


def _encodable(t: str) -> bool:
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_specials(inp: dict[str, object], workdir: Path) -> str:
    specials, text, api = inp["specials"], inp["text"], inp["api"]
    expected = _valid_specials(specials)
    if isinstance(specials, gen.OneShot):
        specials = iter(specials)
    try:
        result = _call_specials(api, text, specials)
    except (TypeError, ValueError) as e:
        if expected is not None:
            raise Violation(f"{api} refused valid special tokens {expected!r}: {e}") from e
        return clear_error(e, (TypeError, ValueError), "special")
    if expected is None:
        raise Violation(f"{api} accepted invalid special tokens {inp['specials']!r}")
    pieces = ref.split_on_specials(text, expected)
    if api != "tokenizer" and not oracle_applies(text):
        return "ok, beyond the oracle's Unicode"
    if api == "pretokenize":
        want = [q for p, is_sp in pieces for q in ([p] if is_sp else ref.pretokenize(p))]
        if result != want:
            raise Violation(f"pretokenize gave {result!r}, reference {want!r}")
    elif api == "count_texts":
        if dict(result.items()) != dict(ref.count_words(text, expected)):
            raise Violation("count_texts differs from tests/reference.py")
    elif api == "tokenizer":
        want = [
            i
            for piece, is_sp in pieces
            for i in ([result.special_tokens[piece]] if is_sp else result.encode_ordinary(piece))
        ]
        if result.encode(text) != want or result.decode(want) != text:
            raise Violation(f"encode({text!r}) does not split on the special tokens {expected!r}")
    else:
        _, merges = ref.train_from_counts(ref.count_words(text + "x", expected), 300, expected)
        first = 256 + len(merges)
        if result.merges != merges or result.special_tokens != {
            t: first + k for k, t in enumerate(expected)
        }:
            raise Violation("train_from_iterator differs from tests/reference.py")
    return "ok"


def _call_specials(api: str, text: str, specials: object) -> object:
    if api == "pretokenize":
        return pretokenize(text, special_tokens=specials)
    if api == "count_texts":
        return bytepair.count_texts([text], special_tokens=specials)
    if api == "tokenizer":
        return bytepair.Tokenizer(*base_args(), specials)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bytepair.train_from_iterator([text + "x"], 300, specials, progress=False)


def _gen_patterns(rng: random.Random) -> dict[str, object]:
    pattern = gen.any_pattern(rng) if rng.random() < 0.97 else rng.choice([None, 5, b"\\S+", ""])
    text = gen.text(rng) if rng.random() < 0.8 else "a" * rng.randrange(1, 3000) + "b c!"
    return {"pattern": pattern, "text": text, "specials": gen.special_tokens(rng)}


def _check_patterns(inp: dict[str, object], workdir: Path) -> str:
    pattern, text, specials = inp["pattern"], inp["text"], inp["specials"]
    try:
        pieces = pretokenize(text, special_tokens=specials, pattern=pattern)
    except ValueError as e:
        clear_error(e, (ValueError,), "pattern")
        try:
            bytepair.count_texts([text], special_tokens=specials, pattern=pattern)
        except ValueError as e2:
            return clear_error(e2, (ValueError,), "pattern")
        raise Violation(f"pretokenize refused the pattern but count_texts took it: {e}") from e
    at = 0
    for p in pieces:
        at = text.find(p, at)
        if not p or at < 0:
            raise Violation(f"piece {p!r} is empty or not in order in the text")
        at += len(p)
    want = Counter()
    for piece, is_special in ref.split_on_specials(text, specials):
        if not is_special:
            want.update(p.encode() for p in pretokenize(piece, pattern=pattern))
    counts = bytepair.count_texts([text], special_tokens=specials, pattern=pattern)
    if dict(counts.items()) != dict(want):
        raise Violation("count_texts differs from the pieces of pretokenize")
    tok = bytepair.Tokenizer(*base_args(), specials, pattern=pattern)
    ids = tok.encode(text)
    if list(tok.encode_iterable(text[i : i + 7] for i in range(0, len(text), 7))) != ids:
        raise Violation("encode_iterable differs from encode")
    if covering(tok, text) and tok.decode(ids) != text:
        raise Violation("decode(encode(t)) != t")
    return "matched"


TARGETS = [
    Target("text_files", _gen_files, _check_files),
    Target("special_tokens", _gen_specials, _check_specials),
    Target("patterns", _gen_patterns, _check_patterns),
]
