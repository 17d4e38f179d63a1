"""GPT-2 `vocab.json` + `merges.txt` (docs/spec.md §3.3). Written exactly as OpenAI wrote GPT-2's
`encoder.json` and `vocab.bpe` (one-line JSON with ASCII escapes; `#version: 0.2` then one merge a
line), so GPT-2's own files come back byte for byte. The pair holds no pattern: it is the caller's
(GPT-2's by default). Special tokens are stored as their text in `vocab.json`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._common import (
    CannotHold,
    ModelData,
    bytes_to_unicode,
    check_id,
    decode_token,
    encode_token,
    gpt2_vocab_json,
    is_gpt2_text,
    read_json,
    read_text,
    refuse_unmatched_specials,
    starts_like_hf,
    utf8,
)

NAME = "gpt2"
FILES = ("vocab.json", "merges.txt")
OPTIONS: tuple[str, ...] = ("pattern", "special_tokens")


def matches(path: Path) -> bool:
    """`vocab.json`/`merges.txt` and their usual variants (`gpt2_vocab.json`, `encoder.json`,
    `vocab.bpe`); other `.json` files are HF's unless they do not start like one."""
    name = path.name
    if name.endswith((".bpe", "merges.txt")) or name in ("vocab.json", "encoder.json"):
        return True
    return (
        name.endswith(".json") and not name.endswith(".tiktoken.json") and not starts_like_hf(path)
    )


def pair_of(path: Path) -> tuple[Path, Path]:
    """(vocab.json, merges.txt) for either one of them: the other is found beside it."""
    name = path.name
    if name.endswith(".json"):
        names = ["vocab.bpe"] if name == "encoder.json" else []
        names.append(name[: -len(".json")].replace("vocab", "merges") + ".txt")
        vocab, others = path, [path.with_name(n) for n in names]
    else:
        names = ["encoder.json"] if name.endswith(".bpe") else []
        names.append(name.removesuffix(".txt").replace("merges", "vocab") + ".json")
        merges, others = path, [path.with_name(n) for n in names]
    found = next((p for p in others if p.exists() and p != path), None)
    if found is None:
        wanted = " or ".join(str(p) for p in others)
        raise FileNotFoundError(f"{path}: its partner file {wanted} is missing")
    return (vocab, found) if name.endswith(".json") else (found, merges)


def read(
    path: Path, *, special_tokens: list[str] | None = None, pattern: str | None = None
) -> ModelData:
    """Reads the pair (from either file). Without `special_tokens`, a token of `vocab.json`
    that is neither a byte nor made by a merge is a special token (GPT-2's `<|endoftext|>`)."""
    vocab_path, merges_path = pair_of(path)
    vocab, merges, specials = read_pair(vocab_path, merges_path, special_tokens)
    return ModelData(vocab, merges, specials, pattern or "gpt2")


def read_pair(
    vocab_path: Path, merges_path: Path, special_tokens: list[str] | None
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], dict[str, int]]:
    """(vocab, merges, special token → id); `special_tokens` not in the file are not added."""
    raw = read_json(vocab_path)
    if not isinstance(raw, dict):
        raise ValueError(f"{vocab_path}: expected a JSON object of token -> id")
    given = set(special_tokens or ())
    vocab: dict[int, bytes] = {}
    texts: dict[int, str] = {}
    for text, token_id in raw.items():
        check_id(token_id, vocab_path, f"token {text!r}")
        if token_id in vocab:
            raise ValueError(f"{vocab_path}: id {token_id} is given to two tokens")
        texts[token_id] = text
        if text in given or (special_tokens is None and not is_gpt2_text(text)):
            vocab[token_id] = utf8(text, vocab_path)
        else:
            vocab[token_id] = decode_token(text, f"{vocab_path}: token {text!r}")
    merges, merge_lines = _read_merges(merges_path)
    if special_tokens is None:
        made = {a + b for a, b in merges}
        found = {i: t for i, t in texts.items() if not is_gpt2_text(t)}
        found |= {i: texts[i] for i, b in vocab.items() if len(b) > 1 and b not in made}
        special_ids = {t: i for i, t in sorted(found.items())}
        for t, i in special_ids.items():
            vocab[i] = utf8(t, vocab_path)
    else:
        special_ids = {t: i for i, t in sorted(texts.items()) if t in given}
    _check_tokens(vocab, merges, merge_lines, vocab_path, merges_path)
    return vocab, merges, special_ids


def _read_merges(merges_path: Path) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    merges: list[tuple[bytes, bytes]] = []
    merge_lines: list[int] = []
    for lineno, line in enumerate(read_text(merges_path).split("\n"), 1):
        line = line.rstrip("\r")
        if (lineno == 1 and line.startswith("#version")) or not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{merges_path}: line {lineno}: expected 'left right' (two GPT-2 tokens "
                f"separated by one space), got {line!r}"
            )
        where = f"{merges_path}: line {lineno}"
        merges.append((decode_token(parts[0], where), decode_token(parts[1], where)))
        merge_lines.append(lineno)
    return merges, merge_lines


def _check_tokens(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    merge_lines: list[int],
    vocab_path: Path,
    merges_path: Path,
) -> None:
    """Every byte has a token and every merge joins known tokens into a known one: checked here
    so that the error names the file and line (the core would only say which token)."""
    known = set(vocab.values())
    for b in range(256):
        if bytes([b]) not in known:
            raise ValueError(
                f"{vocab_path}: no token for byte {b:#04x} (written {bytes_to_unicode()[b]!r}); "
                f"a byte-level vocab.json must hold all 256 single bytes"
            )
    for (left, right), lineno in zip(merges, merge_lines, strict=True):
        for token in (left, right, left + right):
            if token not in known:
                raise ValueError(
                    f"{merges_path}: line {lineno}: merge {encode_token(left)} "
                    f"{encode_token(right)}: {encode_token(token)!r} is not in the vocabulary "
                    f"({vocab_path})"
                )


def render(data: ModelData) -> dict[str, str]:
    """File name → content; refuses what a merge list cannot say (tiktoken's rule, whole
    tokens first)."""
    refuse_unmatched_specials(data, "vocab.json + merges.txt")
    if data.bpe == "tiktoken" or data.ignore_merges or data.normalization:
        how = (
            "by tiktoken's rule for ranks"
            if data.bpe == "tiktoken"
            else "with whole tokens first"
            if data.ignore_merges
            else f"after {data.normalization} normalization"
        )
        raise CannotHold(
            f"cannot save to vocab.json + merges.txt: the tokenizer encodes {how}, which a merge "
            f"list cannot say (GPT-2's files hold no such option); leave this format out. "
            f"Nothing was written."
        )
    vocab_json = gpt2_vocab_json(data, "GPT-2 vocab.json")
    merges_txt = "".join(f"{encode_token(a)} {encode_token(b)}\n" for a, b in data.merges)
    return {"vocab.json": json.dumps(vocab_json), "merges.txt": "#version: 0.2\n" + merges_txt}
