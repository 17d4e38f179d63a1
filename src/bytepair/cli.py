"""The `bytepair` command: a thin argparse layer over the public API. Every error becomes one
clear line on stderr and exit status 2 (130 for Ctrl-C, as shells report SIGINT); no traceback
reaches the user, and no partial output file is left (every write is atomic).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bytepair", description="Byte-level BPE tokenizers.")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a tokenizer on text files")
    train.add_argument("inputs", nargs="+", type=Path, help="UTF-8 text files")
    train.add_argument(
        "--vocab-size",
        type=int,
        required=True,
        help="total vocabulary: 256 bytes + merges + special tokens",
    )
    train.add_argument(
        "--special-token",
        action="append",
        default=[],
        dest="special_tokens",
        metavar="TOKEN",
        help="a special token (repeat for several)",
    )
    train.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="output folder: vocab.json, merges.txt, tokenizer.json, tokenizer.tiktoken "
        "(+ .json sidecar), bytepair.model",
    )
    train.add_argument(
        "--pattern",
        default=None,
        help="pretokenization: a preset name (gpt2, cl100k, o200k) or a regex (default: gpt2, "
        "or the pattern of --continue-from)",
    )
    train.add_argument(
        "--save-at",
        type=_sizes,
        default=[],
        metavar="N,N,...",
        help="also write the tokenizers of these smaller vocabulary sizes, from the same run, "
        "into OUTPUT/N/ (each equal to a separate run at that size)",
    )
    train.add_argument(
        "--continue-from",
        type=Path,
        default=None,
        metavar="TOKENIZER",
        help="a saved tokenizer (folder or file) whose ids and merges are kept; training "
        "goes on from them to --vocab-size",
    )
    train.add_argument(
        "--formats",
        type=lambda text: text.split(","),
        default=None,
        metavar="F,F,...",
        help="formats to write: bytepair, hf, gpt2, tiktoken (default: all)",
    )
    _common_options(train)

    encode = sub.add_parser(
        "encode", help="encode text files, .jsonl or .parquet into one token file"
    )
    encode.add_argument("model", type=Path, help="a folder written by `bytepair train`")
    encode.add_argument(
        "inputs", nargs="+", help="files, globs or folders: text, .jsonl, .parquet (.gz, .zst)"
    )
    encode.add_argument(
        "-o", "--output", type=Path, required=True, help="token file (NAME.bin, NAME.npy)"
    )
    encode.add_argument(
        "--format",
        choices=["bin", "npy", "megatron"],
        default=None,
        help="flat ids (default; npy for a .npy name) or Megatron's .bin + .idx",
    )
    encode.add_argument("--dtype", default=None, help="uint16, uint32 (int32 for megatron)")
    encode.add_argument("--jsonl-field", default="text", help="the text field of .jsonl records")
    encode.add_argument("--column", default="text", help="the text column of .parquet files")
    encode.add_argument(
        "--append-eot", action="store_true", help="add the end-of-text id after each record/file"
    )
    encode.add_argument("--eot", default="<|endoftext|>", help="the end-of-text special token")
    encode.add_argument("--resume", action="store_true", help="continue an interrupted run")
    encode.add_argument("--block-size", type=int, default=None, help=argparse.SUPPRESS)
    _common_options(encode)

    decode = sub.add_parser("decode", help="print the start of a token file as text")
    decode.add_argument("model", type=Path, help="a folder written by `bytepair train`")
    decode.add_argument("tokens", type=Path, help="a token file written by `bytepair encode`")
    decode.add_argument("--head", type=int, default=200, help="how many tokens (default 200)")

    _inspect_parsers(sub)

    sample = sub.add_parser(
        "sample-corpus",
        help="write a sample corpus (the Python standard "
        "library's docstrings, documents separated by <|endoftext|>)",
    )
    sample.add_argument("output", type=Path)
    return parser


def _common_options(parser: argparse.ArgumentParser) -> None:
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


def _inspect_parsers(sub) -> None:
    inspect = sub.add_parser(
        "inspect", help="a tokenizer's vocabulary and compression on sample text (+ HTML report)"
    )
    inspect.add_argument("model", help="a tokenizer: a folder or file `load` reads, or gpt2")
    inspect.add_argument(
        "--sample",
        nargs="+",
        action="extend",
        required=True,
        metavar="FILE",
        help="sample text: files, globs or folders (text, .jsonl, .parquet; .gz, .zst); "
        "figures per file when several",
    )
    inspect.add_argument(
        "--compare",
        nargs="+",
        action="extend",
        default=[],
        metavar="TOKENIZER",
        help="tokenizers to compare compression with: folders or files, or a preset name "
        "(gpt2, cl100k, o200k; read through tiktoken)",
    )
    inspect.add_argument("--html", type=Path, default=None, help="write an HTML report here")
    inspect.add_argument("--top", type=int, default=10, help="rows of each token list (10)")
    inspect.add_argument(
        "--excerpt-bytes",
        type=int,
        default=50_000,
        help="how much of the first sample the HTML report shows token by token (50000)",
    )
    _common_options(inspect)

    show = sub.add_parser("show", help="text split into tokens, coloured on a terminal")
    show.add_argument("model", help="a tokenizer: a folder or file `load` reads, or gpt2")
    show.add_argument("text", help="the text, or - to read standard input")
    show.add_argument("--ids", action="store_true", help="show each token's id")
    colour = show.add_mutually_exclusive_group()
    colour.add_argument("--color", action="store_true", default=None, help="colours in a pipe too")
    colour.add_argument(
        "--plain", dest="color", action="store_false", help="one token a line on a terminal too"
    )


def _sizes(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected vocabulary sizes separated by commas, e.g. 8000,16000; got {text!r}"
        ) from None


def _train(args: argparse.Namespace) -> None:
    from .formats import check_formats
    from .resume import shrink
    from .train import train_with_report

    check_formats(args.formats)  # before training, not after
    bad = [n for n in args.save_at if n >= args.vocab_size]
    if bad:
        raise ValueError(f"--save-at sizes must be below --vocab-size {args.vocab_size}: {bad}")
    progress = None if not args.quiet else False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok, report = train_with_report(
            args.inputs,
            args.vocab_size,
            args.special_tokens,
            pattern=args.pattern,
            num_threads=args.threads,
            errors=args.errors,
            progress=progress,
            continue_from=args.continue_from,
        )
        # Cut before writing anything: a size that cannot be cut fails with no output.
        smaller = {n: shrink(tok, min(n, len(tok.vocab))) for n in args.save_at}
    written = [tok.save(args.output, formats=args.formats)]
    for n, small in smaller.items():
        written.append(small.save(args.output / str(n), formats=args.formats))
    for w in caught:
        print(f"bytepair: warning: {w.message}", file=sys.stderr)
    if report.n_replaced and args.quiet:  # else the summary says it
        print(
            f"bytepair: warning: replaced {report.n_replaced:,} invalid UTF-8 sequences with "
            f"U+FFFD (use --errors strict to refuse invalid input)",
            file=sys.stderr,
        )
    if report.uncut_note() and args.quiet:
        print(f"bytepair: warning: {report.uncut_note()}", file=sys.stderr)
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
        for paths in written:
            names = ", ".join(p.name for p in paths)
            print(f"wrote {paths[0].parent}/: {names}", file=sys.stderr)


def _encode(args: argparse.Namespace) -> None:
    from .corpus import DEFAULT_BLOCK_SIZE, encode_files
    from .io import load

    tok = load(args.model)
    try:
        report = encode_files(
            tok,
            args.inputs,
            args.output,
            format=args.format,
            dtype=args.dtype,
            jsonl_field=args.jsonl_field,
            column=args.column,
            append_eot=args.append_eot,
            eot=args.eot,
            errors=args.errors,
            num_threads=args.threads,
            resume=args.resume,
            progress=False if args.quiet else None,
            block_size=args.block_size or DEFAULT_BLOCK_SIZE,
        )
    except KeyboardInterrupt:
        print("bytepair: rerun with --resume to continue where it stopped", file=sys.stderr)
        raise
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
        print(f"wrote {', '.join(report.outputs)}", file=sys.stderr)
    elif report.n_replaced:
        print(
            f"bytepair: warning: replaced {report.n_replaced:,} invalid UTF-8 sequences with "
            f"U+FFFD (use --errors strict to refuse invalid input)",
            file=sys.stderr,
        )


def _decode(args: argparse.Namespace) -> None:
    from .io import load
    from .tokens import load_tokens

    if args.head < 0:
        raise ValueError(f"--head must be 0 or more, got {args.head}")
    tok = load(args.model)
    ids = load_tokens(args.tokens)[: args.head]
    sys.stdout.write(tok.decode(ids))
    sys.stdout.write("\n")


def _inspect(args: argparse.Namespace) -> None:
    from .inspect import inspect
    from .presets import load_named
    from .show import print_tables, require
    from .summary import tables

    require("rich", "bytepair inspect")
    if args.html is not None:
        require("matplotlib", "bytepair inspect --html")
        if not args.html.parent.is_dir():
            raise FileNotFoundError(f"--html {args.html}: folder {args.html.parent} does not exist")
    if args.top < 0:
        raise ValueError(f"--top must be 0 or more, got {args.top}")
    tok = load_named(args.model)
    compare = {spec: load_named(spec) for spec in args.compare}
    found = inspect(
        tok,
        args.sample,
        name=args.model,
        compare=compare,
        errors=args.errors,
        num_threads=args.threads,
        progress=False if args.quiet else None,
        excerpt_bytes=args.excerpt_bytes,
    )
    print_tables(tables(found, args.top))
    if args.html is not None:
        from .report import write_report

        write_report(found, args.html, args.top)
        if not args.quiet:
            print(f"wrote {args.html}", file=sys.stderr)


def _show(args: argparse.Namespace) -> None:
    from .presets import load_named
    from .show import show

    tok = load_named(args.model)
    text = args.text
    if text == "-":
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    show(tok, text, ids=args.ids, color=args.color)


def _sample(args: argparse.Namespace) -> None:
    from .sample import write_sample_corpus

    n_docs, n_bytes = write_sample_corpus(args.output)
    print(f"wrote {n_docs:,} documents ({n_bytes:,} bytes) to {args.output}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        commands = {
            "train": _train,
            "encode": _encode,
            "decode": _decode,
            "inspect": _inspect,
            "show": _show,
            "sample-corpus": _sample,
        }
        commands[args.command](args)
    except KeyboardInterrupt:
        print("bytepair: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, TypeError, KeyError, MemoryError, ImportError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"bytepair: error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
