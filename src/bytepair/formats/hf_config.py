"""transformers' `tokenizer_config.json` and `special_tokens_map.json`, written beside
`tokenizer.json` (the `hf` format's files): with them `AutoTokenizer.from_pretrained(folder)`
knows the tokenizer class, the model's maximum length and which special token is the eos, bos,
pad and unk token. Reading takes those back (other keys, such as a chat template, are not kept).
"""

from __future__ import annotations

import json
from pathlib import Path

from .._roles import ROLES, VERY_LARGE_INTEGER
from ._common import ModelData, read_json

CONFIG_FILE = "tokenizer_config.json"
MAP_FILE = "special_tokens_map.json"
FILES = (CONFIG_FILE, MAP_FILE)


def render(data: ModelData) -> dict[str, str]:
    """File name → content, as transformers' `save_pretrained` writes them (sorted keys).
    `added_tokens_decoder` marks every special token `special` (skipped by
    `decode(skip_special_tokens=True)`); those without a role are `additional_special_tokens`.
    `clean_up_tokenization_spaces` is false: true would drop spaces before punctuation in
    `decode`, which then would not give the text back."""
    roles = data.roles or {}
    others = [t for t in data.special_tokens if t not in roles.values()]
    added = {
        str(i): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for t, i in data.special_tokens.items()
    }
    config: dict[str, object] = {
        "added_tokens_decoder": added,
        "clean_up_tokenization_spaces": False,
        "model_max_length": data.model_max_length or VERY_LARGE_INTEGER,
        "tokenizer_class": "PreTrainedTokenizerFast",
        **roles,
    }
    special_map: dict[str, object] = dict(roles)
    if others:
        config["additional_special_tokens"] = others
        special_map["additional_special_tokens"] = others
    return {
        CONFIG_FILE: _dumps(config),
        MAP_FILE: _dumps(special_map),
    }


def _dumps(doc: dict[str, object]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def read(folder: Path, special_tokens: dict[str, int]) -> tuple[dict[str, str] | None, int | None]:
    """(roles, model_max_length) of the `tokenizer_config.json` in `folder`; (None, None)
    without one. A role token may be written as a string or as transformers' AddedToken object
    (`{"content": ...}`); it must be one of `special_tokens`."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        return None, None
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object")
    roles: dict[str, str] = {}
    for role in ROLES:
        value = doc.get(role)
        token = value.get("content") if isinstance(value, dict) else value
        if token is None or token == "":
            continue
        if not isinstance(token, str):
            raise ValueError(f"{path}: {role} must be a string or null, got {value!r}")
        if token not in special_tokens:
            raise ValueError(
                f"{path}: {role} {token!r} is not a special token of the tokenizer beside it "
                f"(its special tokens: {list(special_tokens)!r}); fix or remove the key"
            )
        roles[role] = token
    return roles, _max_length(doc.get("model_max_length"), path)


def _max_length(value: object, path: Path) -> int | None:
    """An int; transformers' "unknown" (int(1e30), sometimes written as a float) and absence
    are None."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{path}: model_max_length must be a positive integer, got {value!r}")
    return None if value >= VERY_LARGE_INTEGER else value
