"""The special-token policy of encoding (tiktoken's `allowed_special`/`disallowed_special`):
which special tokens a call matches, which it refuses, and the error when text holds a refused
one; HF's options of added tokens (`AddedToken`) and the template that wraps a text in special
tokens when asked (`add_special_tokens`). Pure functions over the tokens' strings; the
`Tokenizer` (`encoding.py`) applies them and the Rust encoder does the matching.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

AllowedSpecial = Literal["all"] | Collection[str]


class _Slow(enum.Enum):
    SLOW = enum.auto()


#: `quick_policy`'s answer when the general `policy` and `refuse` must run (an enum member, so
#: that `is SLOW` narrows the answer's type).
SLOW = _Slow.SLOW
#: The special tokens to match when none are.
NO_SPECIALS: list[str] = []
_EMPTY: frozenset[str] = frozenset()


def quick_policy(
    text: object, allowed_special: AllowedSpecial, disallowed_special: AllowedSpecial
) -> list[str] | Literal[_Slow.SLOW] | None:
    """The special tokens to match for the two common calls on a str (all, or none with
    nothing disallowed), else `SLOW`: per-document encoding calls this millions of times, and
    the general `policy` + `refuse` were half of a short text's time."""
    if type(text) is str and type(disallowed_special) is tuple and not disallowed_special:
        if allowed_special == "all":
            return None
        if type(allowed_special) in (set, frozenset) and allowed_special == _EMPTY:
            return NO_SPECIALS
    return SLOW


def policy(
    known: Collection[str], allowed_special: AllowedSpecial, disallowed_special: AllowedSpecial
) -> tuple[list[str] | None, frozenset[str]]:
    """(special tokens to match, None meaning all; special tokens that must not occur), for a
    tokenizer whose special tokens are `known`.

    >>> policy({"<a>", "<b>"}, {"<a>"}, "all")
    (['<a>'], frozenset({'<b>'}))
    """
    if (
        allowed_special == "all"
        and isinstance(disallowed_special, tuple)
        and not (disallowed_special)
    ):
        return None, frozenset()  # the defaults, without building sets on every call
    known = set(known)
    for name, value in (
        ("allowed_special", allowed_special),
        ("disallowed_special", disallowed_special),
    ):
        if isinstance(value, str) and value != "all":
            raise TypeError(
                f"{name} must be 'all' or a set of strings, got the string "
                f"{value!r}; write {{{value!r}}}"
            )
        if not isinstance(value, (str, Iterable)):
            raise TypeError(f"{name} must be 'all' or a set of strings, got {value!r}")
    allowed = known if allowed_special == "all" else set(allowed_special)
    unknown = allowed - known
    if unknown:
        raise ValueError(
            f"allowed_special names {sorted(unknown)!r}, which are not special tokens of this "
            f"tokenizer ({sorted(known)!r})"
        )
    disallowed = known - allowed if disallowed_special == "all" else set(disallowed_special)
    return (None if allowed == known else sorted(allowed)), frozenset(disallowed)


def refuse(text: str, disallowed: frozenset[str]) -> None:
    """Raises ValueError (tiktoken's message) if `text` holds a disallowed special token."""
    if not disallowed:
        return
    match = _special_regex(disallowed).search(text)
    if match:
        token = match.group()
        raise ValueError(
            f"Encountered text corresponding to disallowed special token {token!r}.\n"
            f"If you want this text to be encoded as a special token, pass it to "
            f"`allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
            f"If you want this text to be encoded as normal text, disable the check for this "
            f"token by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
            f"To disable this check for all special tokens, pass `disallowed_special=()`.\n"
        )


@functools.lru_cache(maxsize=64)
def _special_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))


@dataclass(frozen=True)
class AddedToken:
    """HF's options of an added token (`tokenizer.json`'s `added_tokens`), matched as HF's
    `AddedVocabulary` matches it: `lstrip`/`rstrip` take the whitespace before/after a match
    with it; `single_word` ignores a match next to a word character; `normalized` matches it in
    the normalized text between the other special tokens (after them); `special=False` marks
    a token HF does not count as special (it is still matched, as HF matches it)."""

    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    normalized: bool = False
    special: bool = True

    def core(self) -> tuple[bool, bool, bool, bool]:
        """The options the Rust encoder applies."""
        return (self.lstrip, self.rstrip, self.single_word, self.normalized)


#: The options of bytepair's own special tokens.
PLAIN = AddedToken()


def check_added(
    added: Mapping[str, AddedToken] | None, specials: Collection[str]
) -> dict[str, AddedToken]:
    """The options given for special tokens, checked; those with the defaults left out."""
    out: dict[str, AddedToken] = {}
    for token, options in (added or {}).items():
        if token not in specials:
            raise ValueError(
                f"added_tokens names {token!r}, which is not a special token of this tokenizer"
            )
        if not isinstance(options, AddedToken):
            raise TypeError(f"added_tokens[{token!r}] must be an AddedToken, got {options!r}")
        if options != PLAIN:
            out[token] = options
    return out


def template_ids(template: str | None, ids: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """The ids before and after a text of a template in HF's notation (`"<s> $A </s>"`:
    special tokens and `$A` for the text, `$0` or `$` alike); ([], []) for None. A token that
    is no special token, or a template without one `$A`, is a ValueError.

    >>> template_ids("<s> $A </s>", {"<s>": 1, "</s>": 2})
    ([1], [2])
    """
    if template is None:
        return [], []
    if not isinstance(template, str):
        raise TypeError(f"template must be a str like '<s> $A', got {template!r}")
    parts = template.split()
    slots = [i for i, p in enumerate(parts) if p.split(":")[0] in ("$A", "$0", "$")]
    if len(slots) != 1:
        raise ValueError(
            f"template {template!r} must hold the text once, as $A (e.g. '<s> $A </s>')"
        )
    found: list[int] = []
    for part in parts:
        name = part.split(":")[0] if part.startswith("$") else part
        if name in ("$A", "$0", "$"):
            continue
        typed = re.fullmatch(r"(.+):\d+", name)  # HF's "<s>:0": a type id, which ids ignore
        if name not in ids and typed and typed.group(1) in ids:
            name = typed.group(1)
        if name not in ids:
            raise ValueError(
                f"template {template!r} names {name!r}, which is not a special token of this "
                f"tokenizer"
            )
        found.append(ids[name])
    cut = slots[0]
    return found[:cut], found[cut:]
