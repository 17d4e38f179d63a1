"""Pretokenization presets as data: one table (`FAMILIES`) of the families of patterns that open
models and OpenAI's tokenizers use, each with what a rank file does not carry (the normalization,
the special tokens after the ranks). Training, encoding, loading, the command line and the docs
all read this table; `resolve_pattern` turns a name into its pattern, and refuses a name that is
no preset (a mistyped one was once taken as a literal regex, and lost the text).

GPT-2's, cl100k's and o200k's patterns and the two superword ones run on the core's hand-written
scanners, chosen by equality with the core's strings (defined once, there); other patterns are
compiled by the core (`pretokenize/`), or run on fancy-regex, the engine tiktoken uses, where they
cannot be. A pattern is one regex, or a tuple of steps that split the text in turn (HF's
`Sequence` of `Split`s: each works on the pieces of the one before), each a regex or a `Split`
with HF's behaviour and `invert`. Text a regex leaves unmatched is a piece of its own, as HF's
`Split` keeps it: no text is ever dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ._checks import is_utf8
from ._core import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN
from ._core import SUPERWORD_GPT2_PATTERN as GPT2_SUPERWORD_PATTERN
from ._core import SUPERWORD_GPT4_PATTERN as GPT4_SUPERWORD_PATTERN

__all__ = [
    "CL100K_PATTERN",
    "FAMILIES",
    "GPT2_PATTERN",
    "GPT2_SUPERWORD_PATTERN",
    "GPT4_SUPERWORD_PATTERN",
    "O200K_PATTERN",
    "PRESETS",
    "Pattern",
    "Preset",
    "Split",
    "preset_of",
    "resolve_pattern",
]

#: HF's `SplitDelimiterBehavior`: what a split makes of its matches and the text between.
BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")


class Split(NamedTuple):
    """One step of a sequence, as HF's `Split` pre-tokenizer: the matches of `regex` and the
    text between them are ranges (`invert` swaps which are matches); `behavior` makes pieces of
    them: "Isolated" keeps each, "Removed" drops the matches, "MergedWithPrevious"/"Next" join
    a match to the text before/after it, "Contiguous" joins adjacent matches. A bare regex
    step is `Split(regex)`."""

    regex: str
    behavior: str = "Isolated"
    invert: bool = False


#: One regex, or steps that split the text in turn.
Pattern = str | tuple[str | Split, ...]

_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#: Llama 3's (also OLMo 2's, GLM-4's, Phi-4's): cl100k's without possessives or `\s++$`.
LLAMA3_PATTERN = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen 2, 2.5 and 3's: Llama 3's with one digit a pretoken.
QWEN2_PATTERN = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen 3.5 and 3.6's: marks join letters.
QWEN35_PATTERN = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Mistral's tekken (also Nemotron's): o200k's without contractions, one digit a pretoken.
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Kimi K2's: Han characters apart, o200k's letters without them.
KIMI_PATTERN = "|".join(
    [
        r"[\p{Han}]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+" + _CONTRACTIONS + "?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*" + _CONTRACTIONS + "?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
#: DeepSeek V3 and V4's three splits, as its tokenizer.json holds them (the second's ranges are
#: characters there, as here once Python reads the escapes; the CR and LF in the third too).
DEEPSEEK_V3_PATTERN = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",  # CJK, hiragana, katakana
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
)
#: StarCoder 2's and SmolLM's: HF's `Digits` (one digit a piece), then GPT-2's pattern.
STARCODER2_PATTERN = (r"\p{N}", GPT2_PATTERN)


def _reserved(template: str, first: int, stop: int) -> tuple[str, ...]:
    return tuple(template.format(k) for k in range(first, stop))


_LLAMA3_SPECIALS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
    *_reserved("<|reserved_special_token_{}|>", 2, 246),
)
_LLAMA4_SPECIALS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|header_start|>",
    "<|header_end|>",
    "<|eom|>",
    "<|eot|>",
    "<|step|>",
    *_reserved("<|text_post_train_reserved_special_token_{}|>", 0, 6),
    "<|python_start|>",
    "<|python_end|>",
    "<|finetune_right_pad|>",
    *_reserved("<|text_post_train_reserved_special_token_{}|>", 8, 69),
    "<|image_start|>",
    "<|image_end|>",
    "<|vision_reserved_special_token_0|>",
    "<|vision_reserved_special_token_1|>",
    "<|tile_x_separator|>",
    "<|tile_y_separator|>",
    *_reserved("<|vision_reserved_special_token_{}|>", 2, 6),
    "<|image|>",
    "<|vision_reserved_special_token_6|>",
    "<|patch|>",
    *_reserved("<|vision_reserved_special_token_{}|>", 7, 1048),
    *_reserved("<|reasoning_reserved_special_token_{}|>", 0, 8),
    "<|reasoning_thinking_start|>",
    "<|reasoning_thinking_end|>",
    *_reserved("<|reserved_special_token_{}|>", 0, 904),
)
_QWEN_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
_QWEN35_SPECIALS = (
    *_QWEN_SPECIALS,
    "<|audio_start|>",
    "<|audio_end|>",
    "<tts_pad>",
    "<tts_text_bos>",
    "<tts_text_eod>",
    "<tts_text_bos_single>",
    "<|audio_pad|>",
)
_GLM4_SPECIALS = (
    "<|endoftext|>",
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "<sop>",
    "<eop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<|begin_of_image|>",
    "<|end_of_image|>",
    "<|begin_of_video|>",
    "<|end_of_video|>",
    "<|begin_of_audio|>",
    "<|end_of_audio|>",
    "<|begin_of_transcription|>",
    "<|end_of_transcription|>",
    "<|code_prefix|>",
    "<|code_middle|>",
    "<|code_suffix|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "/nothink",
    "<|begin_of_box|>",
    "<|end_of_box|>",
    "<|image|>",
    "<|video|>",
)
#: Kimi K2's names by their place after the ranks (163,584 of them); the other places of its
#: 256 are `<|reserved_token_ID|>`.
_KIMI_NAMED = {
    0: "[BOS]",
    1: "[EOS]",
    2: "<|im_end|>",
    3: "<|im_user|>",
    4: "<|im_assistant|>",
    6: "<|start_header_id|>",
    7: "<|end_header_id|>",
    9: "[EOT]",
    10: "<|im_system|>",
    11: "<|tool_calls_section_begin|>",
    12: "<|tool_calls_section_end|>",
    13: "<|tool_call_begin|>",
    14: "<|tool_call_argument_begin|>",
    15: "<|tool_call_end|>",
    17: "<|im_middle|>",
    18: "<|media_begin|>",
    19: "<|media_content|>",
    20: "<|media_end|>",
    21: "<|media_pad|>",
    22: "<think>",
    23: "</think>",
    254: "[UNK]",
    255: "[PAD]",
}
_KIMI_SPECIALS = tuple(_KIMI_NAMED.get(k, f"<|reserved_token_{163_584 + k}|>") for k in range(256))


@dataclass(frozen=True)
class Preset:
    """A family of tokenizers' pretokenization, as data."""

    #: Its names: the first is the one written; the others (tiktoken's, models') load alike.
    names: tuple[str, ...]
    pattern: Pattern
    #: The models that use it (for the docs and `--help`).
    models: str
    #: "NFC" where the family normalizes text first (Qwen).
    normalization: str | None = None
    #: The special tokens after a rank file's tokens, in id order (the first gets the id after
    #: the last rank), for `load(rank_file, pattern=name)`.
    special_tokens: tuple[str, ...] = field(default=(), repr=False)


FAMILIES: tuple[Preset, ...] = (
    Preset(("gpt2", "r50k_base", "p50k_base"), GPT2_PATTERN, "GPT-2, GPT-3, OLMo 1, ModernBERT"),
    Preset(("cl100k", "cl100k_base"), CL100K_PATTERN, "GPT-3.5, GPT-4"),
    Preset(("o200k", "o200k_base"), O200K_PATTERN, "GPT-4o"),
    Preset(("o200k_harmony", "gpt-oss"), O200K_PATTERN, "gpt-oss"),
    Preset(("llama4",), O200K_PATTERN, "Llama 4", special_tokens=_LLAMA4_SPECIALS),
    Preset(
        ("llama3", "llama3.1", "llama3.2", "llama3.3"),
        LLAMA3_PATTERN,
        "Llama 3.x",
        special_tokens=_LLAMA3_SPECIALS,
    ),
    Preset(("olmo2", "phi4"), LLAMA3_PATTERN, "OLMo 2, Phi-4 (with cl100k's ranks)"),
    Preset(("glm4", "glm4.5"), LLAMA3_PATTERN, "GLM-4, GLM-4.5", special_tokens=_GLM4_SPECIALS),
    Preset(("qwen2",), QWEN2_PATTERN, "Qwen 2", "NFC", _QWEN_SPECIALS[:3]),
    Preset(("qwen2.5",), QWEN2_PATTERN, "Qwen 2.5", "NFC", _QWEN_SPECIALS[:22]),
    Preset(("qwen3",), QWEN2_PATTERN, "Qwen 3", "NFC", _QWEN_SPECIALS),
    Preset(("qwen3.5", "qwen3.6"), QWEN35_PATTERN, "Qwen 3.5, 3.6", "NFC", _QWEN35_SPECIALS),
    Preset(("tekken", "mistral", "nemotron"), TEKKEN_PATTERN, "Mistral (tekken), Nemotron"),
    Preset(("kimi", "kimi-k2"), KIMI_PATTERN, "Kimi K2", special_tokens=_KIMI_SPECIALS),
    Preset(("deepseek-v3", "deepseek-v4"), DEEPSEEK_V3_PATTERN, "DeepSeek V3, V4"),
    Preset(("starcoder2", "smollm"), STARCODER2_PATTERN, "StarCoder 2, SmolLM"),
    Preset(("gpt2-superword",), GPT2_SUPERWORD_PATTERN, "superword training after gpt2"),
    Preset(("gpt4-superword",), GPT4_SUPERWORD_PATTERN, "superword training after cl100k, o200k"),
)
_BY_NAME = {name: p for p in FAMILIES for name in p.names}
#: Every preset's name → its pattern.
PRESETS: dict[str, Pattern] = {name: p.pattern for name, p in _BY_NAME.items()}


def preset_of(name: str) -> Preset | None:
    """The preset of a name, or None."""
    return _BY_NAME.get(name)


def _looks_like_a_name(pattern: str) -> bool:
    """Letters, digits, `_`, `-` and `.` only, starting with a letter: a name, as no useful regex
    is (it could only match itself, and would lose every other character of the text)."""
    return pattern[:1].isalpha() and all(c.isalnum() or c in "_-." for c in pattern)


def resolve_pattern(pattern: Pattern) -> Pattern:
    """The pattern of a preset's name, or `pattern` itself (a regex, or regexes in turn); a name
    that is no preset is an error listing them.

    >>> resolve_pattern("gpt2") == GPT2_PATTERN
    True
    """
    if isinstance(pattern, (tuple, list)) and not isinstance(pattern, Split) and pattern:
        steps = tuple(_step(p) for p in pattern)
        if len(steps) == 1 and isinstance(steps[0], str):
            return steps[0]
        return steps
    if not isinstance(pattern, str):
        raise ValueError(
            f"pattern must be a preset name, a regex or a tuple of steps (regexes or "
            f"bytepair.patterns.Split), got {pattern!r}"
        )
    return _resolve(pattern)


def _step(step: object) -> str | Split:
    """A step of a sequence: a regex (a preset's name stands for its single regex) or a
    `Split` whose fields are checked here, before the core compiles it."""
    if isinstance(step, (tuple, list)) and not isinstance(step, Split):
        try:
            step = Split(*step)
        except TypeError:
            raise ValueError(f"a Split is (regex, behavior, invert), got {step!r}") from None
    if isinstance(step, Split):
        regex, behavior, invert = step
        if behavior not in BEHAVIORS or not isinstance(invert, bool):
            raise ValueError(
                f"a Split's behavior is one of {', '.join(BEHAVIORS)} and its invert a bool, "
                f"got {step!r}"
            )
        one = _resolve(regex) if isinstance(regex, str) else None
        if not isinstance(one, str):
            raise ValueError(f"a Split's regex is one regex, got {regex!r}")
        plain = (behavior, invert) == ("Isolated", False)
        return one if plain else Split(one, behavior, invert)
    found = _resolve(step) if isinstance(step, str) else None
    if not isinstance(found, str):
        raise ValueError(f"a step of a pattern is a regex or a Split, got {step!r}")
    return found


def _resolve(pattern: str) -> Pattern:
    if not pattern:
        raise ValueError(f"pattern must be a preset name or a non-empty regex, got {pattern!r}")
    if not is_utf8(pattern):
        raise ValueError(f"pattern {pattern!r} holds a lone surrogate, which UTF-8 cannot encode")
    found = _BY_NAME.get(pattern)
    if found is not None:
        return found.pattern
    if _looks_like_a_name(pattern):
        names = ", ".join(PRESETS)
        raise ValueError(
            f"{pattern!r} is no pattern preset (the presets: {names}); give one of them, or a regex"
        )
    return pattern


def name_of(pattern: Pattern) -> str | None:
    """The first name of the preset whose pattern this is, or None."""
    return next((p.names[0] for p in FAMILIES if p.pattern == pattern), None)
