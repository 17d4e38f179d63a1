"""Fuzz target for the numeric and policy options that reach the native core: `num_threads`,
`vocab_size`, `chunk_size`, `errors`, `batch_bytes`, `dtype`, `allowed_special` and
`disallowed_special`. Each must give a result, or a TypeError/ValueError naming the option;
never an OverflowError from the binding, a Rust panic, or an allocation that aborts.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np

import bytepair

from . import gen
from .common import Target, Violation, base_args, clear_error

#: Good and bad values of each option (2**31 - 1 as a vocab_size is left out: the core reserves
#: room for that many merges and aborts where memory is limited; see tests/test_fuzz.py).
VALUES: dict[str, list[object]] = {
    "num_threads": [None, 1, 2, 2, 0, -1, 1.5, True, "2", 2**64, 2**64 - 1, 2**63, 10**5, 257],
    "vocab_size": [256, 260, 300, 300, 255, 0, -5, 2**31, 2**40, 2**63, 2**64, 1.5, True, "300"],
    "chunk_size": [1, 7, 4096, 4096, 0, -1, 2**30, 2**30 + 1, 2**64, 1.5, True, None],
    "errors": ["replace", "strict", "strict", "ignore", None, 5],
    "batch_bytes": [1, 0, -1, 16 << 20, 2**64],
    "dtype": [None, "uint16", "uint32", "int64", "foo", 5, np.uint8],
    "allowed_special": ["all", set(), {"<|endoftext|>"}, {"nope"}, "nope", None, 5, ()],
    "disallowed_special": ["all", (), {"<|endoftext|>"}, "nope", 5],
}
#: The options each call takes.
CALLS = {
    "count_files": ["num_threads", "chunk_size", "errors"],
    "count_texts": ["num_threads", "batch_bytes"],
    "train": ["vocab_size", "num_threads", "chunk_size", "errors"],
    "train_from_iterator": ["vocab_size", "num_threads"],
    "train_from_counts": ["vocab_size", "num_threads"],
    "encode": ["allowed_special", "disallowed_special"],
    "encode_batch": ["num_threads", "allowed_special", "disallowed_special"],
    "encode_to_numpy": ["dtype", "allowed_special", "disallowed_special"],
}


def _gen(rng: random.Random) -> dict[str, object]:
    call = rng.choice(sorted(CALLS))
    opts = {name: rng.choice(VALUES[name]) for name in CALLS[call]}
    return {"call": call, "opts": opts, "text": gen.text(rng) + " <|endoftext|> x"}


def _run(call: str, opts: dict[str, object], text: str, workdir: Path) -> object:
    specials = ["<|endoftext|>"]
    if call in ("count_files", "train"):
        path = workdir / "input.txt"
        path.write_text(text, encoding="utf-8")
        if call == "count_files":
            return bytepair.count_files(path, special_tokens=specials, **opts)
        return bytepair.train(path, special_tokens=specials, progress=False, **opts)
    if call == "count_texts":
        return bytepair.count_texts([text, text], special_tokens=specials, **opts)
    if call == "train_from_iterator":
        return bytepair.train_from_iterator([text], special_tokens=specials, progress=False, **opts)
    if call == "train_from_counts":
        counts = bytepair.count_texts([text])
        return bytepair.train_from_counts(counts, special_tokens=specials, progress=False, **opts)
    tok = bytepair.Tokenizer(*base_args(), specials)
    if call == "encode_batch":
        return tok.encode_batch([text, text[:5]], **opts)
    return getattr(tok, call)(text, **opts)


def _check(inp: dict[str, object], workdir: Path) -> str:
    call, opts = inp["call"], inp["opts"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _run(call, opts, inp["text"], workdir)
    except Exception as e:
        label = clear_error(e, (TypeError, ValueError))
        named = [k for k in opts if k in str(e) or k.split("_")[0] in str(e).lower()]
        if not named:
            raise Violation(f"{call}({opts}): the error names no option: {e}") from e
        return label
    return "ok"


TARGETS = [Target("options", _gen, _check)]
