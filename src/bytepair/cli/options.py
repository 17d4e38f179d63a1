"""Options that several `bytepair` commands share (threads, errors, quiet; special tokens; pattern;
Ray; vocabulary shaping), so that every command spells and documents them alike. Only argparse:
no command logic.
"""

from __future__ import annotations

import argparse
from typing import TypedDict


def model_argument(parser: argparse.ArgumentParser, help: str = "a tokenizer") -> None:
    """The tokenizer a command reads: anything `bytepair.load` takes."""
    from ..loading import NAMES

    parser.add_argument(
        "model",
        help=f"{help}: a folder, or any one file `bytepair.load` reads (tokenizer.json, "
        f"vocab.json, NAME.tiktoken, bytepair.model), or a name: {', '.join(NAMES)} "
        f"(OpenAI's, read through tiktoken)",
    )


def common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads", type=int, default=None, help="worker threads (default: all cores)"
    )
    parser.add_argument(
        "--errors",
        choices=["replace", "strict"],
        default="replace",
        help="invalid UTF-8: replace with U+FFFD (default) or fail",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars and no summary")


def special_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--special-token",
        action="append",
        default=[],
        dest="special_tokens",
        metavar="TOKEN",
        help="a special token (repeat for several; default: none)",
    )


def pattern_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--pattern",
        default=None,
        help=f"pretokenization: a preset name (gpt2, cl100k, o200k) or a regex (default: "
        f"{default})",
    )


def ray_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help=f"{what}: auto (the running cluster, or RAY_ADDRESS), local (a new one here), "
        f"ray://HEAD:10001 (needs pip install 'bytepair[ray]'; default: no Ray, this machine)",
    )


def input_options(parser: argparse.ArgumentParser) -> None:
    """Where the text of record files is (every command that reads inputs)."""
    parser.add_argument(
        "--jsonl-field", default="text", help="the text field of .jsonl records (default: text)"
    )
    parser.add_argument(
        "--column", default="text", help="the text column of .parquet files (default: text)"
    )


def role_options(parser: argparse.ArgumentParser, *, kept: bool = False) -> None:
    """What `tokenizer_config.json` tells transformers: the special tokens' roles and the
    model's maximum length (`special_tokens.py` applies them); `kept`: a command on a saved
    tokenizer, whose values stay unless given."""
    group = parser.add_argument_group(
        "transformers (tokenizer_config.json)",
        "roles name special tokens of the tokenizer; '' removes a role",
    )
    for role, default in (
        ("eos", "<|endoftext|> when it is a special token"),
        ("bos", "none"),
        ("pad", "none"),
        ("unk", "none"),
    ):
        group.add_argument(
            f"--{role}-token",
            default=None,
            metavar="TOKEN",
            help=f"the {role} token (default: {'as saved' if kept else default})",
        )
    group.add_argument(
        "--model-max-length",
        type=int,
        default=None,
        metavar="N",
        help="the model's longest input in tokens (default: "
        + ("as saved" if kept else "unknown, written as transformers' int(1e30)")
        + ")",
    )


def shaping_options(parser: argparse.ArgumentParser) -> None:
    """`train`'s vocabulary shaping (docs/spec.md §1.8); `shaping_kwargs` passes them on."""
    parser.add_argument(
        "--min-frequency",
        type=int,
        default=1,
        metavar="N",
        help="never merge a pair seen fewer than N times: training ends early there (default 1)",
    )
    parser.add_argument(
        "--max-token-length",
        type=int,
        default=None,
        metavar="L",
        help="skip merges whose token would be longer than L bytes (default: no limit)",
    )
    parser.add_argument(
        "--pad-vocab-to-multiple",
        type=int,
        default=None,
        metavar="M",
        help="add special tokens <|reserved_0|>, ... until the vocabulary size is a multiple "
        "of M (e.g. 64), on top of --vocab-size (default: no padding)",
    )


class ShapingKwargs(TypedDict):
    min_frequency: int
    max_token_length: int | None
    pad_vocab_to_multiple: int | None


def shaping_kwargs(args: argparse.Namespace) -> ShapingKwargs:
    """The keyword arguments of the training functions for `shaping_options`."""
    return {
        "min_frequency": args.min_frequency,
        "max_token_length": args.max_token_length,
        "pad_vocab_to_multiple": args.pad_vocab_to_multiple,
    }


def superword_options(parser: argparse.ArgumentParser) -> None:
    """`train`'s superword training (SuperBPE, docs/spec.md §1.9); `superword_kwargs` passes
    them on."""
    parser.add_argument(
        "--superword-from",
        type=int,
        default=None,
        metavar="T",
        help="learn the merges after the first T on lines instead of words, so that tokens may "
        "span words (SuperBPE; e.g. 80%% of the merges; default: none, every merge on words)",
    )
    parser.add_argument(
        "--superword-pattern",
        default=None,
        metavar="REGEX",
        help="the pattern of the merges after T, and of the tokenizer: a preset "
        "(gpt2-superword, gpt4-superword) or a regex (default: the preset after --pattern)",
    )
    parser.add_argument(
        "--superword-max-words",
        type=int,
        default=4,
        metavar="N",
        help="never make a token of more than N words (runs of non-spaces; 0: no limit; default 4)",
    )
    parser.add_argument(
        "--superword-colon-space",
        action="store_true",
        help="let tokens hold ': ' (refused by default, as in SuperBPE)",
    )


class SuperwordKwargs(TypedDict):
    superword_from: int | None
    superword_pattern: str | None
    superword_max_words: int | None
    superword_colon_space: bool


def superword_kwargs(args: argparse.Namespace) -> SuperwordKwargs:
    """The keyword arguments of the training functions for `superword_options`."""
    return {
        "superword_from": args.superword_from,
        "superword_pattern": args.superword_pattern,
        "superword_max_words": args.superword_max_words or None,
        "superword_colon_space": args.superword_colon_space,
    }


def formats_option(parser: argparse.ArgumentParser) -> None:
    """Which formats a command that writes a tokenizer writes."""
    parser.add_argument(
        "--formats",
        type=lambda text: text.split(","),
        default=None,
        metavar="F,F,...",
        help="formats to write: bytepair, hf, gpt2, tiktoken (default: all)",
    )
