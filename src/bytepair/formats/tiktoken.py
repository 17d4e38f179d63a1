"""tiktoken's `.tiktoken` (docs/spec.md §3.5): a `base64(token bytes) rank` line per token, rank =
id; tiktoken merges the pair whose joined bytes rank lowest, so ids must follow merge order.
Pattern and special tokens go in a JSON sidecar, `NAME.tiktoken.json`, with `tiktoken.Encoding`'s
keys (`name`, `pat_str`, `special_tokens`). Reading recovers the merges from the ranks as HF's
converter does (`from_ranks`), in the core.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

from .._core import pretokenizer_kind
from .._spans import spans_words
from ..patterns import FAMILIES, Pattern, preset_of, resolve_pattern
from ._common import (
    CannotHold,
    ModelData,
    check_id,
    from_ranks,
    read_json,
    read_text,
    refuse_unmatched_specials,
)

NAME = "tiktoken"
FILE = "tokenizer.tiktoken"
FILES = (FILE, FILE + ".json")
OPTIONS: tuple[str, ...] = ("pattern", "special_tokens")
SUFFIX = ".tiktoken"


def matches(path: Path) -> bool:
    return path.name.endswith((SUFFIX, SUFFIX + ".json"))


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def joins_words(data: ModelData) -> bool:
    """Whether a merge makes a token with a space after a byte other than whitespace, as the
    second stage of superword training does (docs/spec.md §1.9). tiktoken merges the pair whose
    joined bytes rank lowest, where bytepair merges the pair of lowest merge rank; the two agree
    when tokens have one way to be made, and superword tokens have several (`" of" + " the"`,
    `" of " + "the"`), so such a tokenizer is not written as `.tiktoken`."""
    return any(spans_words(a + b) for a, b in data.merges)


def render(data: ModelData, name: str = FILE) -> dict[str, str]:
    """File name → content; refuses ids out of merge order (tiktoken would merge otherwise), and
    superword tokenizers (`joins_words`)."""
    refuse_unmatched_specials(data, ".tiktoken")
    if data.normalization:
        raise CannotHold(
            f"cannot save to .tiktoken: the tokenizer applies {data.normalization} first, which "
            f"tiktoken does not (its files hold no normalization); leave this format out. "
            f"Nothing was written."
        )
    if joins_words(data):
        raise CannotHold(
            "cannot save to .tiktoken: the tokenizer's tokens span words (superword training), "
            "and tiktoken, which merges the pair whose joined bytes rank lowest, could encode "
            "them differently; leave this format out. Nothing was written."
        )
    plain = data.plain_tokens()
    id_of = {b: i for i, b in plain.items()}
    if len(id_of) != len(plain):
        raise CannotHold(
            "cannot save to .tiktoken: two tokens have the same bytes (tiktoken ranks are "
            "keyed by bytes); leave this format out. Nothing was written."
        )
    last = 255
    for n, (a, b) in enumerate(data.merges):
        made = id_of.get(a + b, -1)
        if made <= max(last, id_of.get(a, 0), id_of.get(b, 0)):
            raise CannotHold(
                f"cannot save to .tiktoken: merge {n} makes token id {made}, which is not above "
                f"the ids of earlier merges and of its parts; tiktoken applies merges in id "
                f"order, so it would encode differently. Leave this format out. Nothing was "
                f"written."
            )
        last = made
    lines = "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n" for i, t in plain.items())
    pattern = resolve_pattern(data.pattern)
    if isinstance(pattern, tuple):
        raise CannotHold(
            "cannot save to .tiktoken: the tokenizer splits text with several regexes in turn, "
            "and a .tiktoken's pattern is one; leave this format out. Nothing was written."
        )
    if pretokenizer_kind(pattern) in ("sequence", "nested"):
        raise CannotHold(
            "cannot save to .tiktoken: the pattern may leave text unmatched, which bytepair keeps "
            "as pieces (as HF's Split does) and tiktoken drops; add an alternative that matches "
            "the rest (e.g. |\\s+|.) or leave this format out. Nothing was written."
        )
    sidecar = {
        "name": Path(name).name.removesuffix(SUFFIX),
        "pat_str": pattern,
        "special_tokens": data.special_tokens,
    }
    sidecar_text = json.dumps(sidecar, ensure_ascii=False, indent=1) + "\n"
    return {name: lines, name + ".json": sidecar_text}


def read(
    path: Path,
    *,
    pattern: Pattern | None = None,
    special_tokens: dict[str, int] | list[str] | None = None,
) -> ModelData:
    """Parses a tiktoken rank file (`NAME.tiktoken`, Llama's `tokenizer.model`) and its sidecar,
    or `pattern=` and `special_tokens=` without one: a preset's name as the pattern also gives
    its family's special tokens after the ranks (unless `special_tokens=` says otherwise) and
    normalization (Qwen's NFC). Either file may be given."""
    if path.name.endswith(".json"):
        path = path.with_name(path.name.removesuffix(".json"))
    ranks = _read_ranks(path)
    sidecar = sidecar_of(path)
    if sidecar.exists():
        if pattern is not None or special_tokens is not None:
            raise ValueError(
                f"{sidecar} gives the pattern and special tokens; do not pass pattern= or "
                f"special_tokens= too"
            )
        pattern, specials = _read_sidecar(sidecar)
    elif pattern is None:
        raise ValueError(
            f"{path}: a tiktoken rank file holds no pattern and its sidecar {sidecar.name} is "
            f"missing; pass pattern= (a preset: {', '.join(p.names[0] for p in FAMILIES)}; or "
            f"the regex) and, if not the preset's, special_tokens= ({{token: id}})"
        )
    else:
        family = preset_of(pattern) if isinstance(pattern, str) else None
        if special_tokens is None and family is not None:
            special_tokens = list(family.special_tokens)
        specials = _given_specials(special_tokens, max(ranks.values(), default=-1) + 1, path)
        data = from_ranks(ranks, specials, pattern, path)
        data.normalization = family.normalization if family is not None else None
        return data
    return from_ranks(ranks, specials, pattern, path, sidecar if sidecar.exists() else path)


def _read_ranks(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    seen: set[int] = set()
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            token = base64.b64decode(parts[0], validate=True)
            rank = int(parts[1]) if len(parts) == 2 and parts[1].isascii() else None
        except (binascii.Error, ValueError, IndexError):
            token, rank = b"", None
        if rank is None or not token:
            raise ValueError(f"{path}: line {lineno}: expected 'base64-token rank', got {line!r}")
        check_id(rank, f"{path}: line {lineno}", "the token")
        if token in ranks or rank in seen:
            raise ValueError(f"{path}: line {lineno}: token or rank {rank} is listed twice")
        ranks[token] = rank
        seen.add(rank)
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise ValueError(
            f"{path}: no token for byte {missing[0]:#04x}; a byte-level .tiktoken "
            f"file ranks all 256 single bytes"
        )
    return ranks


def _read_sidecar(sidecar: Path) -> tuple[str, dict[str, int]]:
    doc = read_json(sidecar)
    pattern = doc.get("pat_str") if isinstance(doc, dict) else None
    specials = doc.get("special_tokens", {}) if isinstance(doc, dict) else None
    if not isinstance(pattern, str) or not pattern or not isinstance(specials, dict):
        raise ValueError(
            f"{sidecar}: expected an object with 'pat_str' (the pattern) and "
            f"'special_tokens' ({{token: id}})"
        )
    for token, i in specials.items():
        check_id(i, sidecar, f"special token {token!r}")
    return pattern, specials


def _given_specials(
    special_tokens: dict[str, int] | list[str] | None, next_id: int, path: Path
) -> dict[str, int]:
    if special_tokens is None:
        return {}
    if isinstance(special_tokens, dict):
        return {t: check_id(i, path, f"special token {t!r}") for t, i in special_tokens.items()}
    return {t: next_id + n for n, t in enumerate(special_tokens)}
