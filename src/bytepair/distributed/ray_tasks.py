"""Ray itself, for the jobs of `ray_train.py` and `ray_encode.py`: importing it (only when a job
runs), connecting to a cluster, and waiting for one task per shard with progress, naming the
shard that failed and why. What a task computes is the job's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from types import ModuleType
from typing import Any

from .._progress import Bar

#: A task whose worker dies (killed, out of memory, node lost) is run again this many times.
MAX_RETRIES = 3


class ShardError(ValueError):
    """A shard of a cluster job failed: the message names the shard and the cause."""


def require_ray() -> ModuleType:
    """The `ray` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError("running on Ray needs ray: pip install 'bytepair[ray]'") from None
    return ray


@contextmanager
def connected(address: str | None) -> Iterator[ModuleType]:
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


def run_tasks(
    ray: ModuleType,
    refs: Sequence[object],
    labels: list[str],
    on_result: Callable[[int, Any], int],
    bar: Bar | None = None,
    siblings: Sequence[Sequence[object]] | None = None,
) -> None:
    """Waits for one task per shard (`refs`), calling `on_result(i, result)` (which returns the
    bytes done) as each ends; `bar` (see `shard_bar`) shows the bytes and shards done, and is
    closed at the end. `siblings[i]`: the task's other returns, whose copies of its
    error are read too so that Ray does not print them as unhandled. A shard that fails (an
    error in it, or its worker died more than `MAX_RETRIES` times) raises `ShardError` naming
    it. On an error or Ctrl-C the tasks still running are left to Ray, not `ray.cancel`led:
    Ray 2.60 aborts the driver (exit 1, "Tried to complete task that was not pending") when a
    cancel meets a task that is just ending (here, at the 25th failed job). `connected` ends the
    job as it disconnects, which stops them; a driver that was already connected lets them
    finish and drops their results."""
    pending = {ref: i for i, ref in enumerate(refs)}
    n_done = n_bytes = 0
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
                n_bytes += on_result(i, result)
                n_done += 1
                if bar is not None:
                    bar.to(n_bytes, f"{n_done}/{len(refs)} shards")
    finally:
        if bar is not None:
            bar.close()


def shard_bar(show: bool, desc: str, n_bytes: int, n_shards: int) -> Bar:
    """The progress of a cluster job on the driver for `run_tasks`: bytes done (with rate and
    ETA) and shards done of all."""
    return Bar(show, n_bytes, desc, note=f"0/{n_shards} shards")


def _cause(ray: ModuleType, e: Exception, label: str) -> str:
    if isinstance(e, ray.exceptions.RayTaskError) and e.cause is not None:
        text = str(e.cause)
        return text[len(label) + 2 :] if text.startswith(label + ": ") else text
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return (
        f"{type(e).__name__}: its worker died and {MAX_RETRIES} retries did not help "
        f"(out of memory? see the Ray logs) {first}"
    )
