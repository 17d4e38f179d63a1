"""Mistral's tekken JSON (`tekken_240718.json`: Mistral NeMo, Pixtral, Ministral), read as
mistral-common's `Tekkenizer.from_file` builds its encoder: a `config` (the pattern, the
vocabulary's size in use, how many special tokens come first) and a `vocab` list of
`{rank, token_bytes, token_str}`, of which the first `default_vocab_size -
default_num_special_tokens` ranks are kept; ids are ranks + the number of special tokens, whose
names (`special_tokens`, or for files of version v7 and older mistral-common's list, then
`<SPECIAL_ID>` fillers) take ids 0 up. mistral-common never matches them in text (its tiktoken
encoder has none), so neither does this tokenizer unless asked. Read only: bytepair writes
its own formats.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from ._common import CannotHold, ModelData, check_id, from_ranks, read_json

NAME = "tekken"
FILES: tuple[str, ...] = ()
OPTIONS: tuple[str, ...] = ()

#: The special tokens of tekken files up to v7, which do not list them (mistral-common's
#: `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`), at ids 0 up.
_OLD_SPECIALS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
_OLD_VERSIONS = ("v1", "v2", "v3", "v4", "v5", "v6", "v7")


def matches(path: Path) -> bool:
    """By content only (`formats.detect`): a JSON object whose first key is `config`."""
    return False


def render(data: ModelData) -> dict[str, str]:
    raise CannotHold("cannot save to tekken: bytepair writes its own formats, not Mistral's")


def read(path: Path) -> ModelData:
    """The tokenizer of a tekken file: pattern, ranks and special tokens as mistral-common's."""
    doc = read_json(path)
    config = doc.get("config") if isinstance(doc, dict) else None
    vocab = doc.get("vocab") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(config, dict) or not isinstance(vocab, list):
        raise ValueError(f"{path}: not a tekken file (expected 'config' and a 'vocab' list)")
    pattern = config.get("pattern")
    size = config.get("default_vocab_size")
    n_special = config.get("default_num_special_tokens")
    if not isinstance(pattern, str) or not isinstance(size, int) or not isinstance(n_special, int):
        raise ValueError(
            f"{path}: the tekken config needs 'pattern', 'default_vocab_size' and "
            f"'default_num_special_tokens'"
        )
    if not 0 <= n_special <= size <= len(vocab) + n_special:
        raise ValueError(
            f"{path}: default_vocab_size {size} does not fit the {len(vocab)} tokens and "
            f"{n_special} special tokens"
        )
    ranks = _ranks(path, vocab[: size - n_special])
    names = _specials(path, doc, config, n_special)
    data = from_ranks(
        {token: rank + n_special for token, rank in ranks.items()},
        {name: i for i, name in enumerate(names)},
        pattern,
        path,
    )
    data.match_specials = False
    return data


def _ranks(path: Path, entries: list[object]) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for n, entry in enumerate(entries):
        raw = entry.get("token_bytes") if isinstance(entry, dict) else None
        rank = entry.get("rank") if isinstance(entry, dict) else None
        try:
            token = base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
        except (binascii.Error, ValueError):
            token = b""
        if rank != n or not token:
            raise ValueError(
                f"{path}: vocab entry {n} must be {{'rank': {n}, 'token_bytes': base64, ...}}, "
                f"got {str(entry)[:100]}"
            )
        if token in ranks:
            raise ValueError(f"{path}: vocab entry {n}: its bytes are entry {ranks[token]}'s too")
        ranks[token] = check_id(rank, path, f"vocab entry {n}")
    return ranks


def _specials(path: Path, doc: dict[str, object], config: dict[str, object], n: int) -> list[str]:
    """The names of ids 0..n-1: the file's list, or up to v7 mistral-common's; then fillers."""
    given = doc.get("special_tokens")
    if given is None:
        if config.get("version") not in _OLD_VERSIONS:
            raise ValueError(
                f"{path}: a tekken file of version {config.get('version')!r} must list its "
                f"special_tokens"
            )
        names = list(_OLD_SPECIALS)
    elif isinstance(given, list):
        names = []
        for k, entry in enumerate(given):
            name = entry.get("token_str") if isinstance(entry, dict) else None
            if not isinstance(name, str) or entry.get("rank") != k:
                raise ValueError(f"{path}: special token {k} must be {{'rank': {k}, ...}}")
            names.append(name)
    else:
        raise ValueError(f"{path}: 'special_tokens' must be a list")
    return names[:n] + [f"<SPECIAL_{i}>" for i in range(len(names), n)]
