"""Fuzz targets for model files and the Tokenizer constructor: `bytepair.load` (bytepair.model,
HF tokenizer.json, tiktoken .tiktoken + sidecar), `Tokenizer.from_files` (GPT-2 vocab.json +
merges.txt), and `Tokenizer(vocab, merges, ...)` with arbitrary Python values. Inputs are
mutations of valid models, or built from scratch.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import bytepair

from . import gen
from .common import Target, Violation, base_args, base_files, clear_error, gpt2_files
from .common import round_trip as _round_trip


def _scratch_model(rng: random.Random) -> bytes:
    """A model file written from scratch, each section now valid, now subtly not."""
    pattern = rng.choice(["gpt2", gen.any_pattern(rng), 5, None, ["\\S+"], "\ud800"])
    specials = gen.special_tokens(rng) if rng.random() < 0.8 else [5, None, "\udcff"]
    tokens = [bytes([i]) for i in range(256)]
    if rng.random() < 0.2:
        del tokens[rng.randrange(256)]
    tokens += [rng.randbytes(rng.randrange(0, 4)) for _ in range(rng.randrange(8))]
    ids = list(range(len(tokens)))
    if rng.random() < 0.3:
        ids[rng.randrange(len(ids))] = rng.choice([0, 300, 2**31, 2**32 + 1, 10**12, 1 << 20])
    merges = [(rng.choice(tokens), rng.choice(tokens)) for _ in range(rng.randrange(5))]
    n_specials = len(specials) + rng.choice([0, 0, 0, 1, -1])
    lines = [
        rng.choice(["#bytepair-model v1"] * 9 + ["#bytepair-model v2"]),
        f"pattern {json.dumps(pattern)}",
        f"specials {n_specials}",
        *(f"{len(ids) + k} {json.dumps(t)}" for k, t in enumerate(specials)),
        f"vocab {len(tokens)}",
        *(f"{i} {base64.b64encode(t).decode()}" for i, t in zip(ids, tokens, strict=True)),
        f"merges {len(merges)}",
        *(f"{base64.b64encode(a).decode()} {base64.b64encode(b).decode()}" for a, b in merges),
        "#end",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _gen_model(rng: random.Random) -> dict[str, bytes]:
    if rng.random() < 0.8:
        return {"bytepair.model": gen.mutate(rng, rng.choice(base_files())["bytepair.model"])}
    return {"bytepair.model": _scratch_model(rng)}


def _check_model(inp: dict[str, bytes], workdir: Path) -> str:
    folder = workdir / "model"
    folder.mkdir()
    (folder / "bytepair.model").write_bytes(inp["bytepair.model"])
    try:
        tok = bytepair.load(folder)
    except Exception as e:
        return clear_error(e, (ValueError,), str(folder / "bytepair.model"))
    _round_trip(tok, random.Random(len(inp["bytepair.model"])))
    again = workdir / "again"
    try:
        tok.save(again, formats=["bytepair", "gpt2"])
    except ValueError as e:  # a special token's text equals another token's GPT-2 form
        return clear_error(e, (ValueError,), "cannot save")
    back = bytepair.load(again)
    if (back.vocab, back.merges, back.special_tokens, back.pattern) != (
        tok.vocab,
        tok.merges,
        tok.special_tokens,
        tok.pattern,
    ):
        raise Violation("save + load of a loaded model changed it")
    return "loaded"


def _gen_gpt2(rng: random.Random) -> dict[str, object]:
    real = gpt2_files()
    if real is not None and rng.random() < 0.003:
        files = dict(real)
        specials = ["<|endoftext|>"]
    else:
        base = rng.choice(base_files())
        files = {k: base[k] for k in ("merges.txt", "vocab.json")}
        specials = ["<|endoftext|>", "<pad>"] if rng.random() < 0.7 else gen.special_tokens(rng)
    for name in rng.sample(sorted(files), rng.randrange(1, 3)):
        files[name] = gen.mutate(rng, files[name])
    return {**files, "specials": specials}


def _check_gpt2(inp: dict[str, object], workdir: Path) -> str:
    vocab, merges = workdir / "vocab.json", workdir / "merges.txt"
    vocab.write_bytes(inp["vocab.json"])
    merges.write_bytes(inp["merges.txt"])
    try:
        tok = bytepair.Tokenizer.from_files(vocab, merges, inp["specials"])
    except Exception as e:
        named = str(vocab) if str(vocab) in str(e) else str(merges)
        return clear_error(e, (ValueError,), named)
    _round_trip(tok, random.Random(len(inp["merges.txt"])))
    return "loaded"


def _gen_format(names: tuple[str, ...]):
    """Inputs for one format: its files of a base model, one or two of them mutated."""

    def generate(rng: random.Random) -> dict[str, bytes]:
        files = {n: rng.choice(base_files())[n] for n in names[:1]}
        base = next(b for b in base_files() if b[names[0]] == files[names[0]])
        files |= {n: base[n] for n in names[1:]}
        for name in rng.sample(names, rng.randrange(1, len(names) + 1)):
            files[name] = gen.mutate(rng, files[name])
        return files

    return generate


def _check_format(inp: dict[str, bytes], workdir: Path) -> str:
    """Loads the first file: a tokenizer that encodes and saves back to an equal one in the
    same format, or a ValueError that names the file at fault."""
    for name, data in inp.items():
        (workdir / name).write_bytes(data)
    first = workdir / next(iter(inp))
    fmt = "hf" if first.name.endswith(".json") else "tiktoken"
    try:
        tok = bytepair.load(first)
    except Exception as e:
        named = next((str(workdir / n) for n in inp if str(workdir / n) in str(e)), str(first))
        return clear_error(e, (ValueError,), named)
    _round_trip(tok, random.Random(len(inp[first.name])))
    try:
        tok.save(workdir / "again", formats=[fmt])
    except ValueError as e:  # e.g. two tokens with the same bytes, a possessive interval
        return clear_error(e, (ValueError,), "cannot save")
    back = bytepair.load(workdir / "again")
    if (back.vocab, back.merges, back.special_tokens, back.pattern) != (
        tok.vocab,
        tok.merges,
        tok.special_tokens,
        tok.pattern,
    ):
        raise Violation(f"save + load of a loaded {fmt} file changed it")
    return "loaded"


_BAD_IDS = ["5", 5.0, -1, 2**31, 2**40, True, 10**30, None]
_BAD_TOKENS = ["a", 97, None, b"", memoryview(b"a"), 10**12, 2**33, -1]
_BAD_MERGES = [
    (b"a",),
    (b"a", b"b", b"c"),
    "ab",
    10**12,
    (10**12, b"a"),
    (2**33, b" "),
    (5, b"a"),
    (b"a", "b"),
    None,
    (b"zz", b"q"),
    (b"a", b""),
    [b"t", b"h"],
]


def _gen_args(rng: random.Random) -> dict[str, object]:
    """Tokenizer arguments: the base model's, with 0-3 values swapped for wrong ones."""
    vocab, merges = base_args()
    del merges[rng.randrange(len(merges) + 1) :]
    args = {"vocab": vocab, "merges": merges, "special_tokens": gen.special_tokens(rng)}
    args["pattern"] = "gpt2"
    for _ in range(rng.randrange(4)):
        op = rng.randrange(9)
        if op == 0:
            vocab[rng.choice(_BAD_IDS)] = rng.choice([b"x", b"\xff\xfe"])
        elif op == 1:
            vocab[rng.randrange(256)] = rng.choice(_BAD_TOKENS)
        elif op == 2:
            vocab.pop(rng.randrange(300), None)
        elif op == 3:
            vocab[rng.randrange(300, 400)] = vocab.get(rng.randrange(256), b"")
        elif op == 4:
            merges.insert(rng.randrange(len(merges) + 1), rng.choice(_BAD_MERGES))
        elif op == 5:
            args[rng.choice(["vocab", "merges"])] = rng.choice([None, "ab", 5, [], {}, (1, 2)])
        elif op == 6:
            args["special_tokens"] = gen.bad_special_tokens(rng)
        elif op == 7:
            args["pattern"] = rng.choice([gen.any_pattern(rng), None, 5, "", "\ud800", b"\\S+"])
        else:
            vocab[rng.choice([2**31 - 1, 1 << 20, 5 << 20])] = b"far"
    return args


def _check_args(args: dict[str, object], workdir: Path) -> str:
    specials = args["special_tokens"]
    specials = iter(specials) if isinstance(specials, gen.OneShot) else specials
    try:
        tok = bytepair.Tokenizer(args["vocab"], args["merges"], specials, pattern=args["pattern"])
    except Exception as e:
        label = clear_error(e, (TypeError, ValueError))
        if not any(w in str(e).lower() for w in ("vocab", "merge", "special", "pattern", "byte")):
            raise Violation(f"the error does not say which argument is wrong: {e}") from e
        return label
    _round_trip(tok, random.Random(len(tok.merges)))
    return "built"


TARGETS = [
    Target("model_file", _gen_model, _check_model),
    Target("gpt2_files", _gen_gpt2, _check_gpt2),
    Target("tokenizer_json", _gen_format(("tokenizer.json",)), _check_format),
    Target(
        "tiktoken_file",
        _gen_format(("tokenizer.tiktoken", "tokenizer.tiktoken.json")),
        _check_format,
    ),
    Target("tokenizer_args", _gen_args, _check_args),
]
