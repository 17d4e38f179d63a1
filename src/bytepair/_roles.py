"""What a tokenizer tells `transformers` beyond its tokens: which special token plays which role
(`eos_token`, `bos_token`, `pad_token`, `unk_token`) and the model's maximum input length. The
`Tokenizer` carries them so that a load and a save keep them; `formats/hf_config.py` writes them
as `tokenizer_config.json`. Checks and defaults only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

#: The roles, in the order transformers lists them (its `SPECIAL_TOKENS_ATTRIBUTES`).
ROLES = ("bos_token", "eos_token", "unk_token", "pad_token")
#: The special token that is the eos token by default, when the tokenizer has it (as GPT-2's
#: config has it; CS336 and GPT-2 separate documents with it).
DEFAULT_EOS = "<|endoftext|>"
#: transformers' `VERY_LARGE_INTEGER`, int(1e30): its value of `model_max_length` when the
#: length is unknown, which is what a tokenizer trained apart from a model can say.
VERY_LARGE_INTEGER = int(1e30)


def default_roles(special_tokens: Collection[str]) -> dict[str, str]:
    """The roles when none are given: `<|endoftext|>` is the eos token when present. Only eos:
    GPT-2's config also names it bos and unk, but a byte-level tokenizer has no unknown text,
    and a bos token makes tools that prepend one put `<|endoftext|>` before every text."""
    return {"eos_token": DEFAULT_EOS} if DEFAULT_EOS in special_tokens else {}


def check_roles(
    roles: Mapping[str, str | None] | None, special_tokens: Collection[str]
) -> dict[str, str]:
    """Role → special token, in `ROLES` order; None gives `default_roles`. A role whose value is
    None or "" is left out (no such token); a value must be a special token of the tokenizer."""
    if roles is None:
        return default_roles(special_tokens)
    if not isinstance(roles, Mapping):
        raise TypeError(
            f"special_token_roles must be a mapping such as {{'eos_token': '<|endoftext|>'}}, "
            f"got {type(roles).__name__}"
        )
    out: dict[str, str] = {}
    for role, token in roles.items():
        if role not in ROLES:
            raise ValueError(f"unknown special-token role {role!r}; the roles are {list(ROLES)}")
        if token is None or token == "":
            continue
        if not isinstance(token, str):
            raise TypeError(f"the {role} must be a string (a special token), got {token!r}")
        if token not in special_tokens:
            raise ValueError(
                f"the {role} {token!r} is not a special token of this tokenizer (its special "
                f"tokens: {list(special_tokens)!r}); add it as a special token first (train "
                f"--special-token, bytepair add-special-tokens, Tokenizer.with_special_tokens) "
                f"or name one of them"
            )
        out[role] = token
    return {role: out[role] for role in ROLES if role in out}


def check_max_length(model_max_length: object) -> int | None:
    """A positive int, or None (unknown: transformers' `VERY_LARGE_INTEGER` is written)."""
    if model_max_length is None:
        return None
    if isinstance(model_max_length, bool) or not isinstance(model_max_length, int):
        raise TypeError(f"model_max_length must be an int or None, got {model_max_length!r}")
    if model_max_length < 1:
        raise ValueError(f"model_max_length must be 1 or more, got {model_max_length}")
    return None if model_max_length >= VERY_LARGE_INTEGER else model_max_length
