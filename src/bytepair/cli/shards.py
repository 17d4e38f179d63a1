"""The two halves of training on many machines without Ray: `bytepair count` (one shard of the
inputs into a `.bpc` file, e.g. one Slurm array task each) and `bytepair train --from-counts`
(the merge stage on all of them, refusing options the counts were not made with), over
`distributed/shards.py`. Training and encoding on a Ray cluster are `main.py`'s `--ray`, over
`distributed/ray_train.py` and `distributed/ray_encode.py`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .options import (
    common_options,
    input_options,
    pattern_option,
    shaping_kwargs,
    special_option,
)
from .parser import Commands

if TYPE_CHECKING:
    from ..distributed.shards import CountsInfo
    from ..encoding import Tokenizer
    from ..patterns import Pattern
    from ..train import TrainReport


def add_count_parser(sub: Commands) -> None:
    """Adds `count` to the subcommands `sub`."""
    count = sub.add_parser(
        "count", help="count one shard of the inputs into a .bpc file (for Slurm arrays, k8s jobs)"
    )
    count.add_argument(
        "inputs",
        nargs="+",
        help="files, globs or folders: UTF-8 text, .jsonl/.ndjson, .parquet; .gz or .zst",
    )
    input_options(count)
    count.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="K/N",
        help="which shard, 0 <= K < N, of N of about equal size (default 0/1: all)",
    )
    count.add_argument(
        "-o", "--output", type=Path, required=True, help="the .bpc file to write (word counts)"
    )
    special_option(count)
    pattern_option(count, "gpt2")
    count.add_argument("--partitions", type=int, default=16, help=argparse.SUPPRESS)
    common_options(count)


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N, e.g. 3/64; got {text!r}") from None
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"K/N needs 0 <= K < N (K counts from 0); got {text!r}")
    return k, n


def count_command(args: argparse.Namespace) -> None:
    from .._progress import Bar, show_progress
    from ..count import CountStats
    from ..distributed.shards import count_shard, plan_shards, save_counts

    k, n = args.shard
    options = {"special_tokens": args.special_tokens, "pattern": args.pattern or "gpt2"}
    reading = {"jsonl_field": args.jsonl_field, "column": args.column}
    shard = plan_shards(args.inputs, n, **options, **reading)[k]
    stats = CountStats()
    show = show_progress(False if args.quiet else None)
    bar = Bar(show, shard.n_bytes, "counting", divisor=1024)
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


def train_on_counts(args: argparse.Namespace) -> tuple[Tokenizer, TrainReport]:
    """`train --from-counts`: (tokenizer, report) from the `.bpc` files of every shard."""
    from ..distributed.shards import load_counts
    from ..train import TrainReport, train_from_counts_with_report

    counts, info = load_counts(args.from_counts)
    if info.n_bytes == 0:
        raise ValueError(
            f"the counts hold no text ({len(info.files)} file(s)): nothing to train on"
        )
    specials = _counted_options(args, info)
    report = TrainReport(n_bytes=info.n_bytes, n_replaced=info.n_replaced)
    pattern: Pattern | None = info.pattern
    base: Tokenizer | None = None
    if args.continue_from is not None:
        base = _counted_base(args.continue_from, info, specials)
        pattern = None  # the base's, checked to be the counts'
    return train_from_counts_with_report(
        counts,
        args.vocab_size,
        specials,
        pattern=pattern,
        num_threads=args.threads,
        progress=False if args.quiet else None,
        continue_from=base,
        consume=True,
        report=report,
        **shaping_kwargs(args),
    )


def _counted_options(args: argparse.Namespace, info: CountsInfo) -> list[str]:
    """The special tokens to train with on counts: those they were counted with (options that
    would have counted otherwise are refused: the result would not be that of a local run)."""
    from ..patterns import resolve_pattern

    if args.pattern is not None and resolve_pattern(args.pattern) != info.pattern:
        raise ValueError(
            f"the counts were made with the pattern {info.pattern!r}, not {args.pattern!r}: "
            f"leave --pattern out, or count again with it"
        )
    given: list[str] = args.special_tokens
    if given and sorted(given) != sorted(info.special_tokens):
        raise ValueError(
            f"the counts were made with the special tokens {info.special_tokens!r}, not "
            f"{given!r}: leave --special-token out, or count again with them"
        )
    return given or info.special_tokens


def _counted_base(path: Path, info: CountsInfo, specials: list[str]) -> Tokenizer:
    """The tokenizer to continue from, if the counts were made as its pattern and special
    tokens (and those added) would have counted."""
    from ..loading import load

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
