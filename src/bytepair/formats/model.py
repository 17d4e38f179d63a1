"""bytepair's own versioned `bytepair.model`: the only format that keeps everything verbatim,
the pattern, the special tokens with their ids, any vocabulary (sparse ids, tokens no merge
makes, equal byte strings), the Unicode version of training and transformers' special-token
roles and maximum length. Line-based, so an error names its line. Whether that Unicode version
matches this build is the loader's concern (`loading.py`).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from .._checks import BPE_ORDERS, MAX_TOKEN_ID, NORMALIZATIONS
from .._roles import ROLES
from .._specials import AddedToken
from ..patterns import GPT2_PATTERN, Pattern, Split, resolve_pattern
from ._common import ModelData, read_text

NAME = "bytepair"
MODEL_FILE = "bytepair.model"
FILES = (MODEL_FILE,)
OPTIONS: tuple[str, ...] = ()
MODEL_HEADER = "#bytepair-model v4"
#: Files without the `options` line (how text becomes ids beyond pattern and merges): they load
#: with the defaults.
MODEL_HEADER_V3 = "#bytepair-model v3"
#: Files without the `roles` and `model_max_length` sections: they load with the default roles.
MODEL_HEADER_V2 = "#bytepair-model v2"
#: Files without a `unicode` line either, written before the Unicode version was pinned.
MODEL_HEADER_V1 = "#bytepair-model v1"
MODEL_END = "#end"


def matches(path: Path) -> bool:
    return path.suffix == ".model"


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def render(data: ModelData) -> dict[str, str]:
    """File name → content."""
    lines = [
        MODEL_HEADER,
        f"unicode {data.unicode_version}",
        f"pattern {json.dumps(data.pattern)}",
        f"options {json.dumps(options_of(data), sort_keys=True)}",
        f"specials {len(data.special_tokens)}",
    ]
    lines += [f"{i} {json.dumps(t)}" for t, i in data.special_tokens.items()]
    roles = data.roles or {}
    lines.append(f"roles {len(roles)}")
    lines += [f"{role} {json.dumps(t)}" for role, t in roles.items()]
    lines.append(f"model_max_length {data.model_max_length or 'none'}")
    lines.append(f"vocab {len(data.vocab)}")
    lines += [f"{i} {_b64(b)}" for i, b in sorted(data.vocab.items())]
    lines.append(f"merges {len(data.merges)}")
    lines += [f"{_b64(a)} {_b64(b)}" for a, b in data.merges]
    lines.append(MODEL_END)
    return {MODEL_FILE: "\n".join(lines) + "\n"}


class _Lines:
    """Numbered lines of a model file, with errors that name the line."""

    def __init__(self, path: Path):
        self.path = path
        self.lines = read_text(path).splitlines()
        self.n = 0

    def error(self, what: str) -> ValueError:
        return ValueError(f"{self.path}: line {self.n}: {what}")

    def next(self) -> str:
        if self.n >= len(self.lines):
            self.n += 1
            raise self.error("unexpected end of file (the file is truncated)")
        self.n += 1
        return self.lines[self.n - 1]

    def section(self, name: str) -> tuple[str, str]:
        key, _, value = self.next().partition(" ")
        if key != name:
            raise self.error(f"expected a '{name} ...' line")
        return key, value

    def count(self, name: str) -> int:
        value = self.section(name)[1]
        if not _is_number(value):
            raise self.error(f"expected '{name} <count>'")
        return int(value)

    def pair(self) -> tuple[str, str]:
        parts = self.next().split(" ", 1)
        if len(parts) != 2:
            raise self.error("expected two fields separated by a space")
        return parts[0], parts[1]

    def b64(self, text: str) -> bytes:
        try:
            return base64.b64decode(text, validate=True)
        except ValueError:
            raise self.error(f"{text!r} is not base64") from None

    def integer(self, text: str) -> int:
        if not _is_number(text) or int(text) > MAX_TOKEN_ID:
            raise self.error(f"{text!r} is not a token id (an integer in 0..2**31-1)")
        return int(text)

    def json_str(self, text: str, what: str) -> str:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, digit limit, deep nesting
            raise self.error(f"bad JSON string ({getattr(e, 'msg', e)})") from None
        if not isinstance(value, str):
            raise self.error(f"the {what} must be a JSON string, got {text[:100]!r}")
        return value


def _pattern(lines: _Lines, text: str) -> Pattern:
    """A JSON string (one regex) or list (steps: regexes and `[regex, behavior, invert]`)."""
    if not text.startswith("["):
        return lines.json_str(text, "pattern")
    try:
        value = json.loads(text)
        steps = tuple(step if isinstance(step, str) else Split(*step) for step in value)
        return resolve_pattern(steps)
    except (ValueError, TypeError, RecursionError) as e:  # JSONDecodeError, deep nesting
        raise lines.error(f"bad JSON of a pattern's steps ({getattr(e, 'msg', e)})") from None


def options_of(data: ModelData) -> dict[str, object]:
    """The `options` line: how text becomes ids beyond the pattern and the merges (HF's options
    of added tokens and a template only where there are any)."""
    options: dict[str, object] = {
        "bpe": data.bpe,
        "ignore_merges": data.ignore_merges,
        "normalization": data.normalization,
        "match_specials": data.match_specials,
    }
    if data.added_tokens:
        options["added_tokens"] = {t: asdict(o) for t, o in data.added_tokens.items()}
    if data.template:
        options["template"] = data.template
    return options


#: Each option's allowed values (the first the default).
_OPTIONS: dict[str, tuple[object, ...]] = {
    "bpe": BPE_ORDERS,
    "ignore_merges": (False, True),
    "normalization": (None, *NORMALIZATIONS),
    "match_specials": (True, False),
}


def _options(lines: _Lines) -> dict[str, Any]:
    """The `options` line, checked: known keys, each one of its values."""
    text = lines.section("options")[1]
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    keys = [*_OPTIONS, "added_tokens", "template"]
    if not isinstance(value, dict) or set(value) - set(keys):
        raise lines.error(f"expected 'options' and a JSON object with keys {keys}")
    added = value.pop("added_tokens", {})
    template = value.pop("template", None)
    for key, given in value.items():
        if not any(given is v or (isinstance(v, str) and given == v) for v in _OPTIONS[key]):
            raise lines.error(f"option {key!r} must be one of {_OPTIONS[key]}, got {given!r}")
    if template is not None and not isinstance(template, str):
        raise lines.error(f"option 'template' must be a string like '<s> $A', got {template!r}")
    names = {f.name for f in fields(AddedToken)}
    tokens: dict[str, AddedToken] = {}
    for token, flags in added.items() if isinstance(added, dict) else [(None, None)]:
        if not (
            isinstance(token, str)
            and isinstance(flags, dict)
            and set(flags) <= names
            and all(isinstance(v, bool) for v in flags.values())
        ):
            raise lines.error(
                f"option 'added_tokens' must map each token to its flags ({sorted(names)}, "
                f"true or false), got {token!r}: {flags!r}"
            )
        tokens[token] = AddedToken(**flags)
    defaults = {key: values[0] for key, values in _OPTIONS.items()}
    return defaults | value | {"added_tokens": tokens, "template": template}


def _is_number(text: str) -> bool:
    """ASCII digits only (`str.isdigit` also takes '²', which `int` refuses), at most 18."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def read(path: Path) -> ModelData:
    """Parses a model file; a v1 file, which has no `unicode` line, gets the Unicode version
    it was trained with (`_v1_unicode`); v1 and v2 files have no roles (None: the default),
    v1 to v3 no options (the defaults)."""
    lines = _Lines(path)
    header = lines.next()
    if header not in (MODEL_HEADER, MODEL_HEADER_V3, MODEL_HEADER_V2, MODEL_HEADER_V1):
        raise lines.error(f"not a bytepair model file (expected {MODEL_HEADER!r})")
    unicode = None
    if header != MODEL_HEADER_V1:
        unicode = lines.section("unicode")[1]
        if not re.fullmatch(r"\d+\.\d+\.\d+", unicode):
            raise lines.error(f"expected 'unicode <version>' like 16.0.0, got {unicode!r}")
    pattern = _pattern(lines, lines.section("pattern")[1])
    options = _options(lines) if header == MODEL_HEADER else {}
    specials: dict[str, int] = {}
    for _ in range(lines.count("specials")):
        i, text = lines.pair()
        token = lines.json_str(text, "special token")
        if token in specials:
            raise lines.error(f"special token {token!r} is listed twice")
        specials[token] = lines.integer(i)
    new = header in (MODEL_HEADER, MODEL_HEADER_V3)
    roles, max_length = _roles(lines, specials) if new else (None, None)
    vocab: dict[int, bytes] = {}
    for _ in range(lines.count("vocab")):
        i, b = lines.pair()
        token_id = lines.integer(i)
        if token_id in vocab:
            raise lines.error(f"token id {token_id} is listed twice")
        vocab[token_id] = lines.b64(b)
    merges = []
    for _ in range(lines.count("merges")):
        a, b = lines.pair()
        merges.append((lines.b64(a), lines.b64(b)))
    if lines.next() != MODEL_END:
        raise lines.error(f"expected {MODEL_END!r} (the file is damaged or has extra lines)")
    return ModelData(
        vocab,
        merges,
        specials,
        pattern,
        unicode or _v1_unicode(pattern),
        roles=roles,
        model_max_length=max_length,
        **options,
    )


def _roles(lines: _Lines, specials: dict[str, int]) -> tuple[dict[str, str], int | None]:
    """The `roles` section (role → special token) and the `model_max_length` line."""
    roles: dict[str, str] = {}
    for _ in range(lines.count("roles")):
        role, text = lines.pair()
        token = lines.json_str(text, "role's token")
        if role not in ROLES or role in roles:
            raise lines.error(f"expected a role, one of {list(ROLES)}, each once; got {role!r}")
        if token not in specials:
            raise lines.error(f"the {role} {token!r} is not one of the special tokens above")
        roles[role] = token
    value = lines.section("model_max_length")[1]
    if value != "none" and not (_is_number(value) and int(value) > 0):
        raise lines.error(f"expected 'model_max_length <positive integer or none>', got {value!r}")
    return roles, None if value == "none" else int(value)


def _v1_unicode(pattern: Pattern) -> str:
    """The classes a v1 file was trained with: the GPT-2 scanner then had the Python `regex`
    package's (Unicode 17.0.0), other patterns ran on fancy-regex with regex-syntax 0.8.12's."""
    return "17.0.0" if pattern == GPT2_PATTERN else "16.0.0"
