"""Training on a Ray cluster: the driver plans shards (`shards.py`), each task counts one and
returns its table cut into partitions by a fixed hash of the word (blobs the core writes, not
pickled dicts), one task per partition adds that partition up across shards, and the driver
joins the disjoint partitions and runs the merge loop itself, so the result is the local one.
Ray is imported only when used (`ray_tasks.py`); corpus encoding on Ray is `ray_encode.py`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from .._checks import check_num_threads
from .._core import sum_blobs, table_of_blobs
from .._progress import show_progress
from ..count import CountStats, WordCounts
from ..encoding import Tokenizer
from ..patterns import Pattern
from ..sources import Inputs, expand_inputs
from ..train import ContinueFrom, TrainReport, after_counting, merge_stage
from ..train.plan import plan
from ..train.shaping import Shaping
from .ray_tasks import MAX_RETRIES, connected, run_tasks, shard_bar
from .shards import CountOptions, Shard, count_shard, plan_shards

#: Shards are at most this large by default (and at least 4 per CPU of the cluster).
SHARD_BYTES = 256 << 20


#: A map task's figures: bytes, invalid UTF-8 replaced, largest chunk, distinct words.
_Figures = tuple[int, int, int, int]


def _count_task(
    shard: Shard, options: CountOptions, n_parts: int, crash: str | None
) -> tuple[_Figures | bytes, ...]:
    """A map task: the shard's counts as `n_parts` blobs (partition by word hash), after a
    tuple of figures (bytes, invalid UTF-8 replaced, largest chunk, distinct words). `crash`
    (tests): a marker file; while it is missing, the task creates it and its process dies
    after counting, as a killed worker would, so Ray must run the task again."""
    stats = CountStats()
    counts = count_shard(shard, stats=stats, **options)
    if crash is not None and not os.path.exists(crash):
        Path(crash).touch()
        os._exit(1)
    figures = (stats.n_bytes, stats.n_replaced, stats.max_chunk, len(counts))
    return figures, *counts.to_partitions(n_parts)


def _reduce_task(*blobs: bytes) -> bytes:
    """A reduce task: one partition's blobs from every shard, added up into one blob (a merge
    of their sorted word lists, in the core)."""
    return sum_blobs(list(blobs))


def count_on_ray(
    ray: ModuleType,
    shards: list[Shard],
    options: CountOptions,
    *,
    n_parts: int,
    show: bool,
    stats: CountStats,
    _crash: tuple[int, str] | None = None,
) -> WordCounts:
    """The counts of all `shards` (map and partitioned reduce on the cluster, the disjoint
    partitions joined here); `options` are `count_shard`'s."""
    threads = options.get("num_threads") or 1
    count = ray.remote(num_cpus=threads, max_retries=MAX_RETRIES)(_count_task)
    count = count.options(num_returns=n_parts + 1)
    reduce = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_reduce_task)
    maps = [
        count.remote(s, options, n_parts, _crash[1] if _crash and _crash[0] == s.index else None)
        for s in shards
    ]

    def counted(i: int, figures: _Figures) -> int:
        n_bytes, n_replaced, max_chunk, _ = figures
        stats.n_bytes += n_bytes
        stats.n_replaced += n_replaced
        stats.max_chunk = max(stats.max_chunk, max_chunk)
        return shards[i].n_bytes

    reduced_blobs: list[bytes] = [b""] * n_parts

    def joined(j: int, blob: bytes) -> int:
        reduced_blobs[j] = blob
        return 0

    bar = shard_bar(show, "counting", sum(s.n_bytes for s in shards), len(shards))
    labels = [str(s) for s in shards]
    run_tasks(ray, [m[0] for m in maps], labels, counted, bar, siblings=[m[1:] for m in maps])
    # submitted once every map has returned (they need all of them anyway), so that a failed
    # map leaves no reduce task whose copy of its error Ray would print as unhandled
    reduced = [reduce.remote(*(m[1 + j] for m in maps)) for j in range(n_parts)]
    run_tasks(ray, reduced, [f"partition {j}/{n_parts}" for j in range(n_parts)], joined)
    # the partitions are disjoint: joining them only inserts, on all this machine's cores
    return table_of_blobs(reduced_blobs, num_threads=check_num_threads(None))


def train_on_ray(
    inputs: Inputs,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    address: str | None = None,
    n_shards: int | None = None,
    n_parts: int | None = None,
    pattern: Pattern | None = None,
    num_threads: int = 1,
    errors: str = "replace",
    progress: bool | None = None,
    continue_from: ContinueFrom = None,
    jsonl_field: str = "text",
    column: str = "text",
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
    _crash: tuple[int, str] | None = None,
) -> tuple[Tokenizer, TrainReport]:
    """`train_with_report` with counting spread over a Ray cluster (`address` as `connected`
    takes it): `n_shards` tasks of `num_threads` threads each (default: 4 per CPU of the
    cluster, shards of at most 256 MB), reduced by `n_parts` tasks (default: one per CPU, at
    most 256). The merges equal a local run's (shaping options included: the merge loop runs
    here). Every node must see `inputs` at the same paths.

    >>> tok, report = train_on_ray("shards/*.txt", 32_000, address="auto")  # doctest: +SKIP
    """
    shaping = Shaping.of(min_frequency, max_token_length, pad_vocab_to_multiple)
    run = plan(vocab_size, special_tokens, pattern, continue_from, shaping)
    if n_parts is not None and (
        isinstance(n_parts, bool) or not isinstance(n_parts, int) or n_parts < 1
    ):
        raise ValueError(f"n_parts must be a positive integer, got {n_parts!r}")
    sources = expand_inputs(inputs)
    files = [src.path for src in sources]
    threads = check_num_threads(num_threads)
    show = show_progress(progress)
    report, stats = TrainReport(), CountStats()
    with connected(address) as ray:
        start = time.perf_counter()
        n_cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = sum(src.size for src in sources)
        n_shards = n_shards or max(4 * n_cpus // threads, math.ceil(size / SHARD_BYTES), 1)
        specials, regex = run.special_tokens, run.pattern
        reading = {"jsonl_field": jsonl_field, "column": column}
        shards = plan_shards(files, n_shards, special_tokens=specials, pattern=regex, **reading)
        report.seconds["plan"] = time.perf_counter() - start
        options: CountOptions = {
            "special_tokens": specials,
            "pattern": regex,
            "errors": errors,
            "num_threads": threads,
        }
        parts = n_parts or min(n_cpus, n_shards, 256)
        start = time.perf_counter()
        counts = count_on_ray(
            ray, shards, options, n_parts=parts, show=show, stats=stats, _crash=_crash
        )
        report.seconds["count+reduce (ray)"] = time.perf_counter() - start
    after_counting(report, stats, files)
    # the merge loop runs here, on all this machine's cores (`num_threads` is per task)
    tok = merge_stage(counts, run, report, show, consume=True, num_threads=None)
    return tok, report
