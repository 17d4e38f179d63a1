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
    train.add_argument("inputs", nargs="*", type=Path, help="UTF-8 text files")
    train.add_argument(
        "--vocab-size",
        type=int,
        required=True,
        help="total vocabulary: 256 bytes + merges + special tokens",
    )
    _special_option(train)
    train.add_argument(
        "--from-counts",
        nargs="+",
        default=None,
        metavar="BPC",
        help="train on the .bpc files of `bytepair count` (files, globs, folders: every shard "
        "of one plan) instead of text",
    )
    _ray_option(train, "count on a Ray cluster")
    train.add_argument(
        "--shards", type=int, default=None, help="with --ray: shards to count (default: 4 per CPU)"
    )
    train.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="output folder: vocab.json, merges.txt, tokenizer.json, tokenizer.tiktoken "
        "(+ .json sidecar), bytepair.model",
    )
    _pattern_option(train, "gpt2, or the pattern of --continue-from or --from-counts")
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
        "-o",
        "--output",
        type=Path,
        required=True,
        help="token file (NAME.bin, NAME.npy); with --ray a folder: one file per input",
    )
    _ray_option(encode, "encode on a Ray cluster, one task per input file")
    encode.add_argument(
        "--concat",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --ray: also join the shards, in input order, into this one token file",
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

    count = sub.add_parser(
        "count", help="count one shard of the inputs into a .bpc file (for Slurm arrays, k8s jobs)"
    )
    count.add_argument("inputs", nargs="+", help="UTF-8 text files, globs or folders")
    count.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="K/N",
        help="which shard, 0 <= K < N, of N of about equal size (default 0/1: all)",
    )
    count.add_argument("-o", "--output", type=Path, required=True, help="the .bpc file")
    _special_option(count)
    _pattern_option(count, "gpt2")
    count.add_argument("--partitions", type=int, default=16, help=argparse.SUPPRESS)
    _common_options(count)

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


def _special_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--special-token",
        action="append",
        default=[],
        dest="special_tokens",
        metavar="TOKEN",
        help="a special token (repeat for several)",
    )


def _pattern_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--pattern",
        default=None,
        help=f"pretokenization: a preset name (gpt2, cl100k, o200k) or a regex (default: "
        f"{default})",
    )


def _ray_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help=f"{what}: auto (the running cluster, or RAY_ADDRESS), local (a new one here), "
        f"ray://HEAD:10001 (needs pip install 'bytepair[ray]')",
    )


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N, e.g. 3/64; got {text!r}") from None
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"K/N needs 0 <= K < N (K counts from 0); got {text!r}")
    return k, n


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

    check_formats(args.formats)  # before training, not after
    bad = [n for n in args.save_at if n >= args.vocab_size]
    if bad:
        raise ValueError(f"--save-at sizes must be below --vocab-size {args.vocab_size}: {bad}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok, report = _run_training(args)
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


def _run_training(args: argparse.Namespace):
    """(tokenizer, report) from text files, locally or on Ray, or from `.bpc` files."""
    from .train import train_from_counts_with_report, train_with_report

    progress = None if not args.quiet else False
    if args.from_counts is not None and args.inputs:
        raise ValueError("give either text files or --from-counts, not both")
    if args.from_counts is None and not args.inputs:
        raise ValueError("no input files given (or train on counts: --from-counts 'counts/*.bpc')")
    common = {"pattern": args.pattern, "progress": progress, "continue_from": args.continue_from}
    if args.from_counts is not None:
        from .shards import load_counts
        from .train import TrainReport

        counts, info = load_counts(args.from_counts)
        if info.n_bytes == 0:
            raise ValueError(
                f"the counts hold no text ({len(info.files)} file(s)): nothing to train on"
            )
        specials = _counted_options(args, info)
        report = TrainReport(n_bytes=info.n_bytes, n_replaced=info.n_replaced)
        common["pattern"] = info.pattern
        if args.continue_from is not None:
            common["continue_from"] = _counted_base(args.continue_from, info, specials)
            common["pattern"] = None  # the base's, checked to be the counts'
        return train_from_counts_with_report(
            counts,
            args.vocab_size,
            specials,
            num_threads=args.threads,
            consume=True,
            report=report,
            **common,
        )
    if args.shards is not None and args.ray is None:
        raise ValueError("--shards splits the counting over a Ray cluster: it needs --ray")
    if args.ray is not None:
        from .ray_jobs import train_on_ray

        return train_on_ray(
            args.inputs,
            args.vocab_size,
            args.special_tokens,
            address=args.ray,
            n_shards=args.shards,
            num_threads=args.threads or 1,
            errors=args.errors,
            **common,
        )
    return train_with_report(
        args.inputs,
        args.vocab_size,
        args.special_tokens,
        num_threads=args.threads,
        errors=args.errors,
        **common,
    )


def _counted_options(args: argparse.Namespace, info) -> list[str]:
    """The special tokens to train with on counts: those they were counted with (options that
    would have counted otherwise are refused: the result would not be that of a local run)."""
    from .patterns import resolve_pattern

    if args.pattern is not None and resolve_pattern(args.pattern) != info.pattern:
        raise ValueError(
            f"the counts were made with the pattern {info.pattern!r}, not {args.pattern!r}: "
            f"leave --pattern out, or count again with it"
        )
    given = args.special_tokens
    if given and sorted(given) != sorted(info.special_tokens):
        raise ValueError(
            f"the counts were made with the special tokens {info.special_tokens!r}, not "
            f"{given!r}: leave --special-token out, or count again with them"
        )
    return given or info.special_tokens


def _counted_base(path: Path, info, specials: list[str]):
    """The tokenizer to continue from, if the counts were made as its pattern and special
    tokens (and those added) would have counted."""
    from .io import load

    base = load(path)
    if base.pattern != info.pattern:
        raise ValueError(
            f"{path} splits text with {base.pattern!r}, the counts were made with "
            f"{info.pattern!r}: count again with its pattern"
        )
    if set(base.special_tokens) | set(specials) != set(info.special_tokens):
        raise ValueError(
            f"the counts were made with the special tokens {info.special_tokens!r}; {path} "
            f"and --special-token make {sorted(set(base.special_tokens) | set(specials))!r}"
        )
    return base


def _count(args: argparse.Namespace) -> None:
    from .pretokenize import CountStats
    from .shards import count_shard, plan_shards, save_counts
    from .train import _Bar, _show_progress

    k, n = args.shard
    options = {"special_tokens": args.special_tokens, "pattern": args.pattern or "gpt2"}
    files = [str(s.path) for s in _expand(args.inputs)]
    shard = plan_shards(files, n, **options)[k]
    stats = CountStats()
    bar = _Bar(_show_progress(False if args.quiet else None), shard.n_bytes, "counting", "B", True)
    try:
        counts = count_shard(
            shard,
            errors=args.errors,
            num_threads=args.threads,
            progress=bar.to,
            stats=stats,
            **options,
        )
    finally:
        bar.close()
    save_counts(
        args.output,
        counts,
        shard,
        errors=args.errors,
        stats=stats,
        n_parts=args.partitions,
        **options,
    )
    if not args.quiet:
        print(
            f"counted {shard}: {stats.n_bytes:,} bytes, {len(counts):,} distinct words; "
            f"wrote {args.output}",
            file=sys.stderr,
        )


def _expand(inputs: list[str]):
    from .corpus_inputs import expand_inputs

    return expand_inputs(inputs)


def _encode(args: argparse.Namespace) -> None:
    from .corpus import DEFAULT_BLOCK_SIZE, encode_files
    from .io import load

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
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
        print(f"wrote {', '.join(report.outputs)}", file=sys.stderr)
    elif report.n_replaced:
        print(
            f"bytepair: warning: replaced {report.n_replaced:,} invalid UTF-8 sequences with "
            f"U+FFFD (use --errors strict to refuse invalid input)",
            file=sys.stderr,
        )


def _encode_on_ray(args: argparse.Namespace, tok, options: dict) -> None:
    from .ray_encode import encode_on_ray

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
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
        print(f"wrote {', '.join(report.outputs)}", file=sys.stderr)


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
            "count": _count,
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
