"""HF `tokenizer.json` (docs/spec.md §3.4): BPE model, an optional NFC/NFKC normalizer,
pre-tokenizer Sequence[Split(regex, behaviour, invert)..., ByteLevel(use_regex=false)], the
template as a post-processor, ByteLevel decoder, special tokens as `added_tokens` with their
options; merges written "a b" (every `tokenizers` reads that), read in both spellings. The
byte-level BPE files of open models load as shipped (normalizers, Split/Digits/ByteLevel
sequences, added-token options, templates, `ignore_merges`); other parts are refused naming
them; `hf_regex` writes each pattern in a form HF's Oniguruma reads alike. transformers'
`tokenizer_config.json` and `special_tokens_map.json` go beside it (`hf_config.py`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .._checks import NORMALIZATIONS
from .._specials import PLAIN, AddedToken, template_ids
from ..patterns import (
    BEHAVIORS,
    CL100K_PATTERN,
    GPT2_PATTERN,
    PRESETS,
    Pattern,
    Split,
    resolve_pattern,
)
from . import hf_config
from ._common import (
    CannotHold,
    ModelData,
    check_id,
    decode_token,
    encode_token,
    gpt2_vocab_json,
    read_json,
    read_text,
    refuse_unmatched_specials,
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
    """The form of a regex (or a preset's name) for HF's Split (Oniguruma) that splits text the
    same way."""
    named = PRESETS.get(pattern, pattern)
    pattern = named if isinstance(named, str) else pattern
    if pattern in _HF_FORMS:
        return _HF_FORMS[pattern]
    found = _POSSESSIVE_INTERVAL.search(pattern)
    if found:
        raise CannotHold(
            f"cannot save to tokenizer.json: the pattern's possessive {found.group()!r} means "
            f"'repeat {found.group()[:-1]} one or more times' in HF tokenizers' regex engine "
            f"(Oniguruma); write it as an atomic group (?>X{found.group()[:-1]}), or leave "
            f"this format out"
        )
    return pattern


def render(data: ModelData) -> dict[str, str]:
    """File name → content."""
    specials = [
        {"id": i, "content": t} | _flags(data.added_tokens.get(t, PLAIN))
        for t, i in data.special_tokens.items()
    ]
    # HF loses a special token spelt as another token's GPT-2 form: refuse it
    gpt2_vocab_json(data, "tokenizer.json")
    plain = ModelData(data.plain_tokens(), data.merges)
    merges = every_split(plain.vocab) if data.bpe == "tiktoken" else data.merges
    refuse_unmatched_specials(data, "tokenizer.json", options=False)
    pattern = resolve_pattern(data.pattern)
    splits = [
        {
            "type": "Split",
            "pattern": {"Regex": hf_regex(step.regex)},
            "behavior": step.behavior,
            "invert": step.invert,
        }
        for step in map(_as_split, (pattern,) if isinstance(pattern, str) else pattern)
    ]
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
        "normalizer": {"type": data.normalization} if data.normalization else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [*splits, byte_level]},
        "post_processor": _post_processor(data),
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
            "ignore_merges": data.bpe == "tiktoken" or data.ignore_merges,
            "vocab": gpt2_vocab_json(plain, "tokenizer.json"),
            "merges": [f"{encode_token(a)} {encode_token(b)}" for a, b in merges],
        },
    }
    return {FILE: json.dumps(doc, ensure_ascii=False, indent=2) + "\n", **hf_config.render(data)}


def _as_split(step: str | Split) -> Split:
    return step if isinstance(step, Split) else Split(step)


def _flags(token: AddedToken) -> dict[str, bool]:
    return {
        "single_word": token.single_word,
        "lstrip": token.lstrip,
        "rstrip": token.rstrip,
        "normalized": token.normalized,
        "special": token.special,
    }


def _post_processor(data: ModelData) -> dict[str, object] | None:
    """A `TemplateProcessing` of the template (pairs of texts get it around each), or None."""
    if not data.template:
        return None
    ids = data.special_tokens
    single: list[dict[str, object]] = []
    for part in data.template.split():
        if part.split(":")[0] in ("$A", "$0", "$"):
            single.append({"Sequence": {"id": "A", "type_id": 0}})
        else:
            single.append({"SpecialToken": {"id": part, "type_id": 0}})
    pair = [
        *single,
        *({"Sequence": {"id": "B", "type_id": 1}} if "Sequence" in p else p for p in single),
    ]
    used = [p for p in data.template.split() if p in ids]
    return {
        "type": "TemplateProcessing",
        "single": single,
        "pair": pair,
        "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in used},
    }


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
            f"is ByteLevel, or a Sequence of Split (Regex or String, Isolated), Digits and "
            f"ByteLevel (add_prefix_space false)",
            value if isinstance(value, str) else None,
        )


def read(path: Path) -> ModelData:
    """Parses a tokenizer.json; refuses, naming the part, what bytepair cannot reproduce. The
    roles and maximum length come from the `tokenizer_config.json` beside a `tokenizer.json`."""
    f = _Doc(path)
    doc = f.doc
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise f.error("not an HF tokenizer.json (no 'model' object)")
    normalization = _normalizer(f, doc.get("normalizer"))
    pattern = _pattern(f, doc.get("pre_tokenizer"))
    specials, added = _added_tokens(f, doc.get("added_tokens") or [])
    template = _template(f, doc.get("post_processor"), specials)
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
        normalization=normalization,
        bpe="hf",
        added_tokens=added,
        template=template,
    )


def _normalizer(f: _Doc, value: object) -> str | None:
    """The normalization of a `normalizer`: none, NFC, NFKC, or a `Sequence` of them (NFKC if
    one is, since NFC then NFKC is NFKC, and NFKC's text is NFC). Others are refused by name."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in NORMALIZATIONS:
        return str(kind)
    steps = value.get("normalizers") if isinstance(value, dict) else None
    if kind != "Sequence" or not isinstance(steps, list):
        raise f.error(
            f"unsupported normalizer {json.dumps(value)[:200]}: bytepair applies none, NFC, "
            f"NFKC, or a Sequence of them"
        )
    forms = {_normalizer(f, step) for step in steps}
    return "NFKC" if "NFKC" in forms else "NFC" if "NFC" in forms else None


def _pattern(f: _Doc, pre: object) -> Pattern:
    """The pattern of a pre-tokenizer: `ByteLevel` (GPT-2's regex, or none with
    `use_regex: false`), `Split` (a regex or a string, any behaviour, `invert`), `Digits`, or a
    `Sequence` of them, whose steps split the pieces of the ones before. A byte-level BPE has
    its `ByteLevel`; a part outside these is refused by name."""
    steps = (
        pre.get("pretokenizers")
        if isinstance(pre, dict) and pre.get("type") == "Sequence"
        else [pre]
    )
    if not isinstance(steps, list):
        raise f.unsupported("pre_tokenizer", pre)
    regexes: list[str | Split] = []
    byte_level = False
    for step in steps:
        kind = step.get("type") if isinstance(step, dict) else None
        if kind == "ByteLevel":
            if step.get("add_prefix_space", True):  # HF's default when absent
                raise f.unsupported("pre_tokenizer ByteLevel with add_prefix_space=true", step)
            byte_level = True
            if step.get("use_regex", True):
                regexes.append(GPT2_PATTERN)  # HF's ByteLevel regex is GPT-2's pattern
        elif kind == "Digits":
            regexes.append(r"\p{N}" if step.get("individual_digits") else r"\p{N}+")
        elif kind == "Split":
            regexes.append(_split(f, step))
        else:
            raise f.unsupported("pre_tokenizer", step)
    if not byte_level or not regexes:
        raise f.unsupported("pre_tokenizer (not byte-level BPE: no ByteLevel, or no split)", pre)
    return resolve_pattern(tuple(regexes))


def _split(f: _Doc, split: dict[str, object]) -> str | Split:
    """A `Split` step (a `String` pattern matches itself)."""
    pattern = split.get("pattern")
    regex = pattern.get("Regex") if isinstance(pattern, dict) else None
    text = pattern.get("String") if isinstance(pattern, dict) else None
    if isinstance(text, str) and text:
        # in a group: a literal of letters alone would read as a preset's name
        regex = "(?:" + re.sub(r"([\\.+*?()|\[\]{}^$#&\-~])", r"\\\1", text) + ")"
    if not isinstance(regex, str) or not regex:
        raise f.unsupported("Split pre-tokenizer (need a Regex or String pattern)", split)
    behavior, invert = split.get("behavior"), split.get("invert", False)
    if behavior not in BEHAVIORS:
        raise f.unsupported("Split behavior", split)
    if not isinstance(invert, bool):
        raise f.unsupported("Split invert", split)
    regex = _FROM_HF.get(regex, regex)
    return regex if (behavior, invert) == ("Isolated", False) else Split(regex, behavior, invert)


def _added_tokens(f: _Doc, added: object) -> tuple[dict[str, int], dict[str, AddedToken]]:
    """Added tokens become special tokens (HF matches both kinds in text before the
    pre-tokenizer), with their options where they have any."""
    if not isinstance(added, list):
        raise f.error("'added_tokens' must be a list")
    ids: dict[str, int] = {}
    options: dict[str, AddedToken] = {}
    for entry in added:
        content = entry.get("content") if isinstance(entry, dict) else None
        if not isinstance(content, str) or not content:
            raise f.error(f"added token {entry!r} has no 'content' string")
        assert isinstance(entry, dict)
        flags = {}
        for flag, default in (*_FLAGS, ("special", False)):
            value = entry.get(flag, default)
            if not isinstance(value, bool):
                raise f.error(f"added token {content!r}: {flag} must be true or false", content)
            flags[flag] = value
        ids[content] = check_id(entry.get("id"), f.path, f"added token {content!r}")
        token = AddedToken(**flags)
        if token != PLAIN:
            options[content] = token
    return ids, options


#: HF's options of an added token, and their defaults where a file leaves one out (HF's
#: `AddedToken::default()`).
_FLAGS = (("single_word", False), ("lstrip", False), ("rstrip", False), ("normalized", True))


def _template(f: _Doc, post: object, ids: dict[str, int]) -> str | None:
    """The special tokens a post-processor puts around one text, in HF's notation: from a
    `TemplateProcessing` (its `single`), `RobertaProcessing`/`BertProcessing` (`cls`, `sep`),
    or a `Sequence` of them; `ByteLevel` adds none (it trims offsets)."""
    kind = post.get("type") if isinstance(post, dict) else None
    if post is None or kind == "ByteLevel":
        return None
    assert isinstance(post, dict)
    if kind == "Sequence" and isinstance(post.get("processors"), list):
        found = [t for t in (_template(f, p, ids) for p in post["processors"]) if t]
        if len(found) > 1:
            raise f.unsupported("post_processor (several templates in a Sequence)", post)
        return found[0] if found else None
    if kind in ("RobertaProcessing", "BertProcessing"):
        cls, sep = post.get("cls"), post.get("sep")
        if isinstance(cls, list) and isinstance(sep, list) and cls and sep:
            return f"{cls[0]} $A {sep[0]}"
    if kind == "TemplateProcessing" and isinstance(post.get("single"), list):
        parts = []
        for piece in post["single"]:
            if isinstance(piece, dict) and isinstance(piece.get("Sequence"), dict):
                parts.append("$A")
            elif isinstance(piece, dict) and isinstance(piece.get("SpecialToken"), dict):
                parts.append(str(piece["SpecialToken"].get("id")))
            else:
                raise f.unsupported("post_processor template piece", piece)
        template = " ".join(parts)
        try:
            template_ids(template, ids)
        except ValueError as e:
            raise f.error(f"post_processor: {e}") from None
        return template
    raise f.unsupported("post_processor", post)


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
