"""Training on a Ray cluster: the driver plans shards (`shards.py`), each task counts one and
returns its table cut into partitions by a fixed hash of the word (blobs the core writes, not
pickled dicts), one task per partition adds that partition up across shards, and the driver
joins the disjoint partitions and runs the merge loop itself, so the result is the local one.
Ray is imported only here, and only when used; corpus encoding on Ray is `ray_encode.py`.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from . import _core
from ._checks import check_input_files, check_num_threads
from .encoding import Tokenizer
from .pretokenize import CountStats, WordCounts
from .resume import plan
from .shards import Shard, count_shard, plan_shards
from .train import ContinueFrom, TrainReport, _after_counting, _merge_stage, _show_progress

#: A task whose worker dies (killed, out of memory, node lost) is run again this many times.
MAX_RETRIES = 3
#: Shards are at most this large by default (and at least 4 per CPU of the cluster).
SHARD_BYTES = 256 << 20


class ShardError(ValueError):
    """A shard of a cluster job failed: the message names the shard and the cause."""


def require_ray():
    """The `ray` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError("running on Ray needs ray: pip install 'bytepair[ray]'") from None
    return ray


@contextmanager
def connected(address: str | None) -> Iterator[object]:
    """Ray, connected to `address` ("auto": the running cluster or RAY_ADDRESS's; "local": a
    new one on this machine; "ray://head:10001"; None: RAY_ADDRESS, else a new local one),
    unless this process is connected already; disconnects at the end if it connected."""
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    try:
        ray.init(address=address, logging_level=logging.WARNING)
    except Exception as e:  # ConnectionError, ValueError, RuntimeError, depending on the case
        where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
        raise ConnectionError(
            f"cannot connect to the Ray cluster at {where!r}: {e} (start one with "
            f"`ray start --head`, or use --ray local for one on this machine alone)"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


class _Bar:
    """Progress of a cluster job on the driver: bytes done (with rate and ETA) and shards done
    of all; a tqdm bar on a terminal, else nothing."""

    def __init__(self, show: bool, desc: str, n_bytes: int, n_shards: int):
        self.n_shards, self.done, self._bar = n_shards, 0, None
        if show:
            from tqdm import tqdm

            self._bar = tqdm(
                total=n_bytes,
                desc=desc,
                unit="B",
                unit_scale=True,
                unit_divisor=1000,
                file=sys.stderr,
                dynamic_ncols=True,
            )
            self._bar.set_postfix_str(f"0/{n_shards} shards")

    def shard_done(self, n_bytes: int) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.done}/{self.n_shards} shards", refresh=False)
            self._bar.update(n_bytes)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_tasks(
    ray,
    refs: list,
    labels: list[str],
    on_result: Callable[[int, object], int],
    bar: _Bar | None = None,
    siblings: list[list] | None = None,
) -> None:
    """Waits for one task per shard (`refs`), calling `on_result(i, result)` (which returns the
    bytes done) as each ends; `siblings[i]`: the task's other returns, whose copies of its
    error are read too so that Ray does not print them as unhandled. A shard that fails (an
    error in it, or its worker died more than `MAX_RETRIES` times) raises `ShardError` naming
    it. On an error or Ctrl-C the tasks still running are left to Ray, not `ray.cancel`led:
    Ray 2.60 aborts the driver (exit 1, "Tried to complete task that was not pending") when a
    cancel meets a task that is just ending (here, at the 25th failed job). `connected` ends the
    job as it disconnects, which stops them; a driver that was already connected lets them
    finish and drops their results."""
    pending = {ref: i for i, ref in enumerate(refs)}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.2)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as e:
                    for other in siblings[i] if siblings else ():
                        with suppress(ray.exceptions.RayError):
                            ray.get(other)
                    raise ShardError(f"{labels[i]}: {_cause(ray, e, labels[i])}") from None
                n_bytes = on_result(i, result)
                if bar is not None:
                    bar.shard_done(n_bytes)
    finally:
        if bar is not None:
            bar.close()


def _cause(ray, e: Exception, label: str) -> str:
    if isinstance(e, ray.exceptions.RayTaskError) and e.cause is not None:
        text = str(e.cause)
        return text[len(label) + 2 :] if text.startswith(label + ": ") else text
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return (
        f"{type(e).__name__}: its worker died and {MAX_RETRIES} retries did not help "
        f"(out of memory? see the Ray logs) {first}"
    )


def _count_task(shard: Shard, options: dict, n_parts: int, crash: str | None) -> tuple:
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
    return _core.sum_blobs(list(blobs))


def count_on_ray(
    ray,
    shards: list[Shard],
    options: dict,
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

    def counted(i: int, figures: tuple) -> int:
        n_bytes, n_replaced, max_chunk, _ = figures
        stats.n_bytes += n_bytes
        stats.n_replaced += n_replaced
        stats.max_chunk = max(stats.max_chunk, max_chunk)
        return shards[i].n_bytes

    reduced_blobs: list[bytes] = [b""] * n_parts

    def joined(j: int, blob: bytes) -> int:
        reduced_blobs[j] = blob
        return 0

    bar = _Bar(show, "counting", sum(s.n_bytes for s in shards), len(shards))
    labels = [str(s) for s in shards]
    run_tasks(ray, [m[0] for m in maps], labels, counted, bar, siblings=[m[1:] for m in maps])
    # submitted once every map has returned (they need all of them anyway), so that a failed
    # map leaves no reduce task whose copy of its error Ray would print as unhandled
    reduced = [reduce.remote(*(m[1 + j] for m in maps)) for j in range(n_parts)]
    run_tasks(ray, reduced, [f"partition {j}/{n_parts}" for j in range(n_parts)], joined)
    # the partitions are disjoint: joining them only inserts, on all this machine's cores
    return _core.table_of_blobs(reduced_blobs, num_threads=check_num_threads(None))


def train_on_ray(
    inputs: str | os.PathLike | Iterable[str | os.PathLike],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    address: str | None = None,
    n_shards: int | None = None,
    n_parts: int | None = None,
    pattern: str | None = None,
    num_threads: int = 1,
    errors: str = "replace",
    progress: bool | None = None,
    continue_from: ContinueFrom = None,
    _crash: tuple[int, str] | None = None,
) -> tuple[Tokenizer, TrainReport]:
    """`train_with_report` with counting spread over a Ray cluster (`address` as `connected`
    takes it): `n_shards` tasks of `num_threads` threads each (default: 4 per CPU of the
    cluster, shards of at most 256 MB), reduced by `n_parts` tasks (default: one per CPU, at
    most 256). The merges equal a local run's. Every node must see `inputs` at the same paths.

    >>> tok, report = train_on_ray("shards/*.txt", 32_000, address="auto")  # doctest: +SKIP
    """
    run = plan(vocab_size, special_tokens, pattern, continue_from)
    if n_parts is not None and (
        isinstance(n_parts, bool) or not isinstance(n_parts, int) or n_parts < 1
    ):
        raise ValueError(f"n_parts must be a positive integer, got {n_parts!r}")
    files = check_input_files(_expand(inputs))
    threads = check_num_threads(num_threads)
    show = _show_progress(progress)
    report, stats = TrainReport(), CountStats()
    with connected(address) as ray:
        start = time.perf_counter()
        n_cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = sum(os.stat(f).st_size for f in files)
        n_shards = n_shards or max(4 * n_cpus // threads, math.ceil(size / SHARD_BYTES), 1)
        specials, regex = run.special_tokens, run.pattern
        shards = plan_shards(files, n_shards, special_tokens=specials, pattern=regex)
        report.seconds["plan"] = time.perf_counter() - start
        options = {
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
    _after_counting(report, stats, files)
    # the merge loop runs here, on all this machine's cores (`num_threads` is per task)
    tok = _merge_stage(counts, run, report, show, consume=True, num_threads=None)
    return tok, report


def _expand(inputs: str | os.PathLike | Iterable[str | os.PathLike]) -> list[str]:
    """Files, globs and folders as the corpus encoder expands them."""
    from .corpus_inputs import expand_inputs

    return [str(s.path) for s in expand_inputs(inputs)]
