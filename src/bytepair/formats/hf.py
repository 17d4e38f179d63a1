"""HF `tokenizer.json` (docs/spec.md §3.4): BPE model, pre-tokenizer Sequence[Split(regex,
Isolated), ByteLevel(use_regex=false)], ByteLevel decoder, special tokens as `added_tokens`;
merges written "a b" (every `tokenizers` reads that), read in both spellings. Byte-level BPE
files of that shape (Llama-3's, GPT-2's ByteLevel-only one) load with their own pattern, others
are refused naming the part; `hf_regex` writes each pattern in a form HF's Oniguruma reads alike.
transformers' `tokenizer_config.json` and `special_tokens_map.json` go beside it (`hf_config.py`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..patterns import CL100K_PATTERN, GPT2_PATTERN, PRESETS
from . import hf_config
from ._common import (
    ModelData,
    check_id,
    decode_token,
    encode_token,
    gpt2_vocab_json,
    read_json,
    read_text,
    starts_like_hf,
    utf8,
)

NAME = "hf"
FILE = "tokenizer.json"
FILES = (FILE, *hf_config.FILES)
OPTIONS: tuple[str, ...] = ()

#: Presets whose regex Oniguruma reads differently: the equivalent form written for HF. cl100k's
#: `\p{N}{1,3}+` is possessive in fancy-regex but means `(\p{N}{1,3})+` in Oniguruma's Ruby
#: syntax (any run of digits); as a whole alternative, plain greedy `{1,3}` is the same.
_HF_FORMS = {CL100K_PATTERN: CL100K_PATTERN.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")}
_FROM_HF = {hf: p for p, hf in _HF_FORMS.items()}
_POSSESSIVE_INTERVAL = re.compile(r"(?<!\\)\{\d+(?:,\d*)?\}\+")


def matches(path: Path) -> bool:
    """`tokenizer.json`, or a `.json` file that starts as HF writes them (`{"version": ...`)."""
    name = path.name
    return name == FILE or (
        name.endswith(".json") and not name.endswith(".tiktoken.json") and starts_like_hf(path)
    )


def hf_regex(pattern: str) -> str:
    """The form of `pattern` for HF's Split (Oniguruma) that splits text the same way."""
    pattern = PRESETS.get(pattern, pattern)
    if pattern in _HF_FORMS:
        return _HF_FORMS[pattern]
    found = _POSSESSIVE_INTERVAL.search(pattern)
    if found:
        raise ValueError(
            f"cannot save to tokenizer.json: the pattern's possessive {found.group()!r} means "
            f"'repeat {found.group()[:-1]} one or more times' in HF tokenizers' regex engine "
            f"(Oniguruma); write it as an atomic group (?>X{found.group()[:-1]}), or leave "
            f"this format out"
        )
    return pattern


def render(data: ModelData) -> dict[str, str]:
    """File name → content."""
    specials = [
        {
            "id": i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for t, i in data.special_tokens.items()
    ]
    plain = ModelData(data.plain_tokens(), data.merges)
    merges = every_split(plain.vocab) if data.ranks else data.merges
    split = {
        "type": "Split",
        "pattern": {"Regex": hf_regex(data.pattern)},
        "behavior": "Isolated",
        "invert": False,
    }
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": False,
    }
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": specials,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, byte_level]},
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": data.ranks or data.ignore_merges,
            "vocab": gpt2_vocab_json(plain, "tokenizer.json"),
            "merges": [f"{encode_token(a)} {encode_token(b)}" for a, b in merges],
        },
    }
    return {FILE: json.dumps(doc, ensure_ascii=False, indent=2) + "\n", **hf_config.render(data)}


def every_split(vocab: dict[int, bytes]) -> list[tuple[bytes, bytes]]:
    """Every way to make a token of two tokens, by the token's id, then the left part's: a rank
    file's tiktoken rule as an HF merge list (Meta's Llama 3 `tokenizer.json` holds the same,
    with `ignore_merges`)."""
    id_of = {b: i for i, b in vocab.items()}
    splits = [
        (i, id_of[t[:k]], t[:k], t[k:])
        for i, t in vocab.items()
        for k in range(1, len(t))
        if t[:k] in id_of and t[k:] in id_of
    ]
    return [(a, b) for _, _, a, b in sorted(splits)]


class _Doc:
    """The parsed file, with errors that name the line of the offending text."""

    def __init__(self, path: Path):
        self.path = path
        self.text = read_text(path)
        self.doc = read_json(path)

    def error(self, what: str, near: object = None) -> ValueError:
        line = ""
        if near is not None:
            at = max(self.text.find(json.dumps(near, ensure_ascii=a)) for a in (False, True))
            line = f" line {self.text.count(chr(10), 0, at) + 1}:" if at >= 0 else ""
        return ValueError(f"{self.path}:{line} {what}")

    def unsupported(self, part: str, value: object) -> ValueError:
        shown = json.dumps(value)[:200]
        return self.error(
            f"unsupported {part} {shown}: bytepair loads byte-level BPE files whose pre-tokenizer "
            f"is Split(Regex, Isolated) + ByteLevel(use_regex=false) or ByteLevel alone, with no "
            f"normalizer",
            value if isinstance(value, str) else None,
        )


def read(path: Path) -> ModelData:
    """Parses a tokenizer.json; refuses, naming the part, what bytepair cannot reproduce. The
    roles and maximum length come from the `tokenizer_config.json` beside a `tokenizer.json`."""
    f = _Doc(path)
    doc = f.doc
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise f.error("not an HF tokenizer.json (no 'model' object)")
    if doc.get("normalizer") is not None:
        raise f.unsupported("normalizer", doc["normalizer"])
    pattern = _pattern(f, doc.get("pre_tokenizer"))
    specials = _added_tokens(f, doc.get("added_tokens") or [])
    vocab, merges = _model(f, doc["model"], specials)
    roles, max_length = hf_config.read(path.parent, specials) if path.name == FILE else (None, None)
    ignore = doc["model"].get("ignore_merges", False)
    if not isinstance(ignore, bool):
        raise f.error(f"model option ignore_merges must be true or false, got {ignore!r}")
    return ModelData(
        vocab,
        merges,
        specials,
        pattern,
        roles=roles,
        model_max_length=max_length,
        ignore_merges=ignore,
    )


def _pattern(f: _Doc, pre: object) -> str:
    if not isinstance(pre, dict):
        raise f.unsupported("pre_tokenizer", pre)
    if pre.get("type") == "ByteLevel":
        if pre.get("use_regex", True) and not pre.get("add_prefix_space", False):
            return GPT2_PATTERN  # HF's ByteLevel regex is GPT-2's pattern
        raise f.unsupported("pre_tokenizer", pre)
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not isinstance(steps, list) or len(steps) != 2:
        raise f.unsupported("pre_tokenizer", pre)
    split, byte_level = steps
    if not isinstance(split, dict):
        raise f.unsupported("first pre-tokenizer", split)
    if not (
        isinstance(byte_level, dict)
        and byte_level.get("type") == "ByteLevel"
        and byte_level.get("use_regex") is False
        and not byte_level.get("add_prefix_space", False)
    ):
        raise f.unsupported("second pre-tokenizer", byte_level)
    pattern = split.get("pattern")
    regex = pattern.get("Regex") if isinstance(pattern, dict) else None
    if not (
        split.get("type") == "Split"
        and isinstance(regex, str)
        and regex
        and split.get("behavior") == "Isolated"
        and split.get("invert") is False
    ):
        raise f.unsupported(
            "Split pre-tokenizer (need a Regex pattern, Isolated, invert false)", split
        )
    return _FROM_HF.get(regex, regex)


def _added_tokens(f: _Doc, added: object) -> dict[str, int]:
    """Added tokens become special tokens: HF matches both kinds in raw text before the
    pre-tokenizer, as bytepair matches special tokens. Options that change the match are refused."""
    if not isinstance(added, list):
        raise f.error("'added_tokens' must be a list")
    out: dict[str, int] = {}
    for entry in added:
        content = entry.get("content") if isinstance(entry, dict) else None
        if not isinstance(content, str) or not content:
            raise f.error(f"added token {entry!r} has no 'content' string")
        for flag in ("single_word", "lstrip", "rstrip"):
            if entry.get(flag):
                raise f.error(
                    f"added token {content!r} has {flag}=true, which bytepair does not "
                    f"support (special tokens match their exact text)",
                    content,
                )
        out[content] = check_id(entry.get("id"), f.path, f"added token {content!r}")
    return out


def _model(
    f: _Doc, model: dict[str, object], specials: dict[str, int]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    if model.get("type", "BPE") != "BPE":
        raise f.unsupported("model type", model.get("type"))
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"):
        if model.get(key) not in (None, "", False):  # absent, empty or off
            raise f.unsupported(f"model option {key}=", model.get(key))
    raw = model.get("vocab")
    if not isinstance(raw, dict):
        raise f.error("model 'vocab' must be an object of token -> id")
    vocab: dict[int, bytes] = {}
    for text, token_id in raw.items():
        check_id(token_id, f.path, f"token {text!r}")
        if text in specials and specials[text] == token_id:
            vocab[token_id] = utf8(text, f.path)
            continue
        try:
            vocab[token_id] = decode_token(text, "")
        except ValueError:
            raise f.error(
                f"vocab token {text!r} is not written in GPT-2 byte characters "
                f"(not a byte-level BPE vocabulary)",
                text,
            ) from None
    for text, token_id in specials.items():
        vocab.setdefault(token_id, utf8(text, f.path))
    merges = [_merge(f, m, n) for n, m in enumerate(_list(f, model.get("merges")))]
    return vocab, merges


def _list(f: _Doc, merges: object) -> list[object]:
    if not isinstance(merges, list):
        raise f.error("model 'merges' must be a list")
    return merges


def _merge(f: _Doc, merge: object, n: int) -> tuple[bytes, bytes]:
    """One merge, "a b" or ["a", "b"]."""
    parts = merge.split(" ") if isinstance(merge, str) else merge
    if not (
        isinstance(parts, list) and len(parts) == 2 and all(isinstance(p, str) and p for p in parts)
    ):
        raise f.error(f'merge {n} is {merge!r}, expected "a b" or ["a", "b"]', merge)
    try:
        return decode_token(parts[0], ""), decode_token(parts[1], "")
    except ValueError:
        raise f.error(f"merge {n} {merge!r} is not in GPT-2 byte characters", merge) from None
