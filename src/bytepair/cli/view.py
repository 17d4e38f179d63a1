"""The `bytepair inspect` and `bytepair show` commands: their options and handlers, over
`inspection/` (figures, summary, report, show, presets). rich and matplotlib load only when these
commands run (`import bytepair` must not pull them in).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .options import common_options, model_argument
from .parser import Commands


def add_view_parsers(sub: Commands) -> None:
    """Adds `inspect` and `show` to the subcommands `sub`."""
    inspect = sub.add_parser(
        "inspect", help="a tokenizer's vocabulary and compression on sample text (+ HTML report)"
    )
    model_argument(inspect, "the tokenizer to inspect")
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
        help="tokenizers to compare compression with, each as MODEL (default: none)",
    )
    inspect.add_argument(
        "--html", type=Path, default=None, help="write an HTML report here (default: none)"
    )
    inspect.add_argument("--top", type=int, default=10, help="rows of each token list (default 10)")
    inspect.add_argument(
        "--excerpt-bytes",
        type=int,
        default=50_000,
        help="bytes of the first sample that the HTML report shows token by token (default 50000)",
    )
    common_options(inspect)

    show = sub.add_parser("show", help="text split into tokens, coloured on a terminal")
    model_argument(show, "the tokenizer to split with")
    show.add_argument("text", help="the text, or - to read standard input")
    show.add_argument("--ids", action="store_true", help="show each token's id")
    colour = show.add_mutually_exclusive_group()
    colour.add_argument(
        "--color",
        action="store_true",
        default=None,
        help="colours in a pipe too (needs rich; default: colours on a terminal where rich is "
        "installed)",
    )
    colour.add_argument(
        "--plain", dest="color", action="store_false", help="one token a line on a terminal too"
    )


def inspect_command(args: argparse.Namespace) -> None:
    from ..inspection.figures import inspect
    from ..inspection.show import print_tables, require
    from ..inspection.summary import tables
    from ..loading import load

    require("rich", "bytepair inspect")
    if args.html is not None:
        require("matplotlib", "bytepair inspect --html")
        if not args.html.parent.is_dir():
            raise FileNotFoundError(f"--html {args.html}: folder {args.html.parent} does not exist")
    if args.top < 0:
        raise ValueError(f"--top must be 0 or more, got {args.top}")
    tok = load(args.model)
    compare = {spec: load(spec) for spec in args.compare}
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
        from ..inspection.report import write_report

        write_report(found, args.html, args.top)
        if not args.quiet:
            print(f"wrote {args.html}", file=sys.stderr)


def show_command(args: argparse.Namespace) -> None:
    from ..inspection.show import has_rich, require, show
    from ..loading import load

    if args.color:
        require("rich", "bytepair show --color")
    tok = load(args.model)
    text = args.text
    if text == "-":
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if args.color is None and sys.stdout.isatty() and not has_rich():
        print(
            "bytepair: note: no colours without rich: pip install 'bytepair[inspect]' (--plain "
            "hides this note)",
            file=sys.stderr,
        )
    show(tok, text, ids=args.ids, color=args.color)
