"""The `bytepair` command: a thin argparse layer over the public API. Every error becomes one
clear line on stderr and exit status 2 (130 for Ctrl-C, as shells report SIGINT), with no
traceback and no partial output file (every write is atomic). Here: the entry point and
train/encode/decode/sample-corpus; `count` and `--from-counts` are `shards.py`'s, `inspect` and
`show` `view.py`'s, `add-special-tokens` and the role options `special_tokens.py`'s, shared
options `options.py`'s. Each command imports its stage when it runs.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core import UNICODE_VERSION, __version__
from .options import (
    common_options,
    formats_option,
    input_options,
    model_argument,
    pattern_option,
    ray_option,
    role_options,
    shaping_kwargs,
    shaping_options,
    special_option,
    superword_kwargs,
    superword_options,
)
from .parser import Commands, Parser, ends_quietly
from .shards import add_count_parser, count_command, train_on_counts
from .special_tokens import (
    add_special_tokens_command,
    add_special_tokens_parser,
    apply_role_options,
    check_role_options,
)
from .view import add_view_parsers, inspect_command, show_command

if TYPE_CHECKING:
    from ..corpus.encode import CorpusReport
    from ..encoding import Tokenizer
    from ..train import TrainReport


def _parser() -> Parser:
    parser = Parser(prog="bytepair", description="Byte-level BPE tokenizers.")
    parser.add_argument(
        "--version",
        action="version",
        version=f"bytepair {__version__} (Unicode {UNICODE_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train_parser(sub)
    _add_encode_parser(sub)
    add_count_parser(sub)
    _add_decode_parser(sub)
    add_view_parsers(sub)
    add_special_tokens_parser(sub)
    sample = sub.add_parser(
        "sample-corpus",
        help="write a sample corpus (the Python standard "
        "library's docstrings, documents separated by <|endoftext|>)",
    )
    sample.add_argument(
        "output",
        type=Path,
        help="the text file to write (UTF-8; its folder must exist; an existing file is replaced)",
    )
    return parser


def _add_train_parser(sub: Commands) -> None:
    train = sub.add_parser("train", help="train a tokenizer on text, JSON lines or Parquet")
    train.add_argument(
        "inputs",
        nargs="*",
        help="files, globs or folders: UTF-8 text, .jsonl/.ndjson, .parquet; .gz or .zst",
    )
    input_options(train)
    train.add_argument(
        "--vocab-size",
        type=int,
        required=True,
        help="total vocabulary: 256 bytes + merges + special tokens",
    )
    special_option(train)
    train.add_argument(
        "--from-counts",
        nargs="+",
        default=None,
        metavar="BPC",
        help="train on the .bpc files of `bytepair count` (files, globs, folders: every shard "
        "of one plan) instead of text (default: train on INPUTS)",
    )
    ray_option(train, "count on a Ray cluster")
    train.add_argument(
        "--shards", type=int, default=None, help="with --ray: shards to count (default: 4 per CPU)"
    )
    train.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="output folder: vocab.json, merges.txt, tokenizer.json (+ transformers' "
        "tokenizer_config.json, special_tokens_map.json), tokenizer.tiktoken (+ .json "
        "sidecar), bytepair.model",
    )
    pattern_option(train, "gpt2, or the pattern of --continue-from or --from-counts")
    train.add_argument(
        "--save-at",
        type=_sizes,
        default=[],
        metavar="N,N,...",
        help="also write the tokenizers of these smaller vocabulary sizes, from the same run, "
        "into OUTPUT/N/ (each equal to a separate run at that size; default: none)",
    )
    train.add_argument(
        "--continue-from",
        default=None,
        metavar="TOKENIZER",
        help="a tokenizer (folder, file or name, as MODEL elsewhere) whose ids and merges are "
        "kept; training goes on from them to --vocab-size (default: a fresh run)",
    )
    formats_option(train)
    shaping_options(train)
    superword_options(train)
    common_options(train)
    role_options(train)


def _add_encode_parser(sub: Commands) -> None:
    encode = sub.add_parser(
        "encode", help="encode text files, .jsonl or .parquet into one token file"
    )
    model_argument(encode, "the tokenizer to encode with")
    encode.add_argument(
        "inputs", nargs="+", help="files, globs or folders: text, .jsonl, .parquet (.gz, .zst)"
    )
    encode.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="token file (NAME.bin, NAME.npy); with --ray a folder: one file per input",
    )
    ray_option(encode, "encode on a Ray cluster, one task per input file")
    encode.add_argument(
        "--concat",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --ray: also join the shards, in input order, into this one token file "
        "(default: the shards alone)",
    )
    encode.add_argument(
        "--format",
        choices=["bin", "npy", "megatron"],
        default=None,
        help="bin: flat ids, npy: a NumPy array, megatron: Megatron's .bin + .idx (default: "
        "npy for a .npy name, else bin)",
    )
    encode.add_argument(
        "--dtype",
        default=None,
        choices=["uint16", "uint32", "int32"],
        help="the ids' type: uint16, uint32 (int32 for megatron) (default: uint16 when every id "
        "fits, else uint32; int32 for megatron)",
    )
    input_options(encode)
    encode.add_argument(
        "--append-eot", action="store_true", help="add the end-of-text id after each record/file"
    )
    encode.add_argument(
        "--eot",
        default="<|endoftext|>",
        metavar="TOKEN",
        help="the end-of-text special token of --append-eot (default: <|endoftext|>)",
    )
    encode.add_argument("--resume", action="store_true", help="continue an interrupted run")
    encode.add_argument("--block-size", type=int, default=None, help=argparse.SUPPRESS)
    common_options(encode)


def _add_decode_parser(sub: Commands) -> None:
    decode = sub.add_parser("decode", help="print the start of a token file as text")
    model_argument(decode, "the tokenizer the file was encoded with")
    decode.add_argument(
        "tokens",
        type=Path,
        help="a token file written by `bytepair encode` (.bin with its sidecar, .npy, or "
        "Megatron's .bin + .idx; another .bin needs --dtype)",
    )
    decode.add_argument("--head", type=int, default=200, help="how many tokens (default 200)")
    decode.add_argument(
        "--dtype",
        default=None,
        choices=["uint16", "uint32", "int32"],
        help="the ids' type, for a .bin with no sidecar or index (default: as they say)",
    )


def _sizes(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected vocabulary sizes separated by commas, e.g. 8000,16000; got {text!r}"
        ) from None


def _train(args: argparse.Namespace) -> None:
    from ..formats import check_formats
    from ..train.sizes import cut

    check_formats(args.formats)  # before training, not after
    check_role_options(args, args.special_tokens)
    bad = [n for n in args.save_at if n >= args.vocab_size]
    if bad:
        raise ValueError(f"--save-at sizes must be below --vocab-size {args.vocab_size}: {bad}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok, report = _run_training(args)
        tok = apply_role_options(tok, args)
        # Cut before writing anything: a size that cannot be cut fails with no output.
        pad = args.pad_vocab_to_multiple
        smaller = {
            n: apply_role_options(cut(tok, n, report.n_reserved, pad), args) for n in args.save_at
        }
    written = [tok.save(args.output, formats=args.formats)]
    for n, small in smaller.items():
        written.append(small.save(args.output / str(n), formats=args.formats))
    for w in caught:
        print(f"bytepair: warning: {w.message}", file=sys.stderr)
    if report.n_replaced and args.quiet:  # else the summary says it
        _warn_replaced(report.n_replaced)
    if report.uncut_note() and args.quiet:
        print(f"bytepair: warning: {report.uncut_note()}", file=sys.stderr)
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
        for paths in written:
            names = ", ".join(p.name for p in paths)
            print(f"wrote {paths[0].parent}/: {names}", file=sys.stderr)


def _warn_replaced(n_replaced: int) -> None:
    """With --quiet, the one line of the summary that still matters."""
    print(
        f"bytepair: warning: replaced {n_replaced:,} invalid UTF-8 sequences with U+FFFD "
        f"(use --errors strict to refuse invalid input)",
        file=sys.stderr,
    )


def _run_training(args: argparse.Namespace) -> tuple[Tokenizer, TrainReport]:
    """(tokenizer, report) from text files, locally or on Ray, or from `.bpc` files."""
    from ..train import train_with_report

    if args.from_counts is not None and args.inputs:
        raise ValueError("give either text files or --from-counts, not both")
    if args.from_counts is None and not args.inputs:
        raise ValueError("no input files given (or train on counts: --from-counts 'counts/*.bpc')")
    if args.superword_from is not None:
        others = [(args.ray, "--ray"), (args.save_at or None, "--save-at")]
        for given, name in [(args.from_counts, "--from-counts"), *others]:
            if given is not None:
                raise ValueError(
                    f"--superword-from does not run with {name}: its second stage counts the "
                    f"text files again, on one machine, for one vocabulary size"
                )
    if args.from_counts is not None:
        return train_on_counts(args)
    if args.shards is not None and args.ray is None:
        raise ValueError("--shards splits the counting over a Ray cluster: it needs --ray")

    common = {
        "pattern": args.pattern,
        "errors": args.errors,
        "progress": False if args.quiet else None,
        "continue_from": args.continue_from,
        "jsonl_field": args.jsonl_field,
        "column": args.column,
        **shaping_kwargs(args),
    }
    if args.ray is not None:
        from ..distributed.ray_train import train_on_ray

        return train_on_ray(
            args.inputs,
            args.vocab_size,
            args.special_tokens,
            address=args.ray,
            n_shards=args.shards,
            num_threads=args.threads or 1,
            **common,
        )
    return train_with_report(
        args.inputs,
        args.vocab_size,
        args.special_tokens,
        num_threads=args.threads,
        **common,
        **superword_kwargs(args),
    )


def _encode(args: argparse.Namespace) -> None:
    from ..corpus.blocks import DEFAULT_BLOCK_SIZE
    from ..corpus.encode import encode_files
    from ..loading import load

    tok = load(args.model)
    options = {
        "format": args.format,
        "dtype": args.dtype,
        "jsonl_field": args.jsonl_field,
        "column": args.column,
        "append_eot": args.append_eot,
        "eot": args.eot,
        "errors": args.errors,
        "progress": False if args.quiet else None,
    }
    if args.ray is not None:
        _encode_on_ray(args, tok, options)
        return
    if args.concat is not None:
        raise ValueError("--concat joins the shards of --ray; without --ray the output is one file")
    try:
        report = encode_files(
            tok,
            args.inputs,
            args.output,
            num_threads=args.threads,
            resume=args.resume,
            block_size=args.block_size or DEFAULT_BLOCK_SIZE,
            **options,
        )
    except KeyboardInterrupt:
        print("bytepair: rerun with --resume to continue where it stopped", file=sys.stderr)
        raise
    _encode_summary(args, report)


def _encode_summary(args: argparse.Namespace, report: CorpusReport) -> None:
    """The summary of a local or Ray encode; with --quiet only the invalid UTF-8 warning."""
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
        print(f"wrote {', '.join(report.outputs)}", file=sys.stderr)
    elif report.n_replaced:
        _warn_replaced(report.n_replaced)


def _encode_on_ray(args: argparse.Namespace, tok: Tokenizer, options: dict[str, Any]) -> None:
    from ..distributed.ray_encode import encode_on_ray

    threads = args.threads or 1
    report = encode_on_ray(
        tok,
        args.inputs,
        args.output,
        address=args.ray,
        concat=args.concat,
        num_threads=threads,
        **options,
    )
    _encode_summary(args, report)


def _decode(args: argparse.Namespace) -> None:
    from ..corpus.tokens import load_tokens
    from ..loading import load

    if args.head < 0:
        raise ValueError(f"--head must be 0 or more, got {args.head}")
    tok = load(args.model)
    ids = load_tokens(args.tokens, dtype=args.dtype)[: args.head]
    sys.stdout.write(tok.decode(ids))
    sys.stdout.write("\n")


def _sample(args: argparse.Namespace) -> None:
    from ..sample import write_sample_corpus

    n_docs, n_bytes = write_sample_corpus(args.output)
    print(f"wrote {n_docs:,} documents ({n_bytes:,} bytes) to {args.output}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        commands = {
            "train": _train,
            "encode": _encode,
            "count": count_command,
            "decode": _decode,
            "inspect": inspect_command,
            "show": show_command,
            "sample-corpus": _sample,
            "add-special-tokens": add_special_tokens_command,
        }
        commands[args.command](args)
        sys.stdout.flush()  # a closed pipe fails here, inside the handlers, not at exit
    except KeyboardInterrupt:
        print("bytepair: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return ends_quietly()
    except (OSError, ValueError, TypeError, KeyError, MemoryError, ImportError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"bytepair: error: {message}", file=sys.stderr)
        return 2
    return 0
