"""Sharded counting, the map step of a run on many machines: `plan_shards` cuts files into byte
ranges only where training's reader may cut (found by the core from a small window: planning
reads kilobytes), `count_shard` counts one with local training's very call, and `.bpc` files
(the core's format) hold its counts for `train --from-counts`. Where shards run (threads, Slurm,
Ray) is the caller's (`ray_train.py`, `cli/shards.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from .._atomic import write_atomic
from .._checks import check_special_tokens
from .._core import counts_file_bytes, find_cuts, read_counts_file, read_counts_header
from ..count import CountStats, WordCounts, count_ranges
from ..patterns import Pattern, resolve_pattern
from ..sources import Inputs, Source, expand_inputs, expand_paths, open_parquet, row_group_starts

#: The `format` field of a `.bpc` file's metadata, and its version.
COUNTS_FORMAT = "bytepair-counts"
_META_VERSION = 1
#: Sections of a `.bpc` file: a reduce over partitions reads one section of every file.
DEFAULT_PARTS = 16


@dataclass(frozen=True)
class ByteRange:
    """Bytes `start..end` of a file that was `file_size` bytes long when planned."""

    path: str
    start: int
    end: int
    file_size: int

    def __str__(self) -> str:
        if self.start == 0 and self.end == self.file_size:
            return self.path
        return f"{self.path} bytes {self.start:,}-{self.end:,}"


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `n_shards` of one plan (`plan` is its fingerprint: shards of one plan,
    and only those, add up to the whole input)."""

    index: int
    n_shards: int
    ranges: tuple[ByteRange, ...]
    plan: str
    #: where the text of record files is (`.jsonl` field, `.parquet` column)
    jsonl_field: str = "text"
    column: str = "text"

    @property
    def n_bytes(self) -> int:
        return sum(r.end - r.start for r in self.ranges)

    def __str__(self) -> str:
        where = ", ".join(map(str, self.ranges[:3])) or "no bytes"
        more = f" and {len(self.ranges) - 3} more" if len(self.ranges) > 3 else ""
        return f"shard {self.index}/{self.n_shards} ({where}{more})"


def plan_shards(
    paths: Inputs,
    n_shards: int,
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
    jsonl_field: str = "text",
    column: str = "text",
) -> list[Shard]:
    """`n_shards` shards of about equal size over `paths` (files, globs, folders, in the order
    given), cut only where training's reader may cut, so that counting them apart and adding up
    equals counting the files: plain text at safe cuts, JSON lines between lines, Parquet
    between row groups; a compressed file is not cut. A shard is empty when a stretch had no
    cut (e.g. a custom pattern and no special token, or one large compressed file). The plan
    depends only on the files, `n_shards` and the options: every machine gets the same shards.

    >>> shards = plan_shards(["big.txt"], 64, special_tokens=["<|endoftext|>"])  # doctest: +SKIP
    """
    if isinstance(n_shards, bool) or not isinstance(n_shards, int) or n_shards < 1:
        raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
    sources = expand_inputs(paths)
    files = [os.fspath(src.path) for src in sources]
    specials = check_special_tokens(special_tokens)
    regex = resolve_pattern(pattern)
    sizes = [src.size for src in sources]
    total = sum(sizes)
    targets = [total * k // n_shards for k in range(1, n_shards)]
    cut_of: dict[int, int] = {}  # a target inside a file → the cut found for it
    begin = 0
    for src, size in zip(sources, sizes, strict=True):
        inside = [t - begin for t in targets if begin < t < begin + size]
        if inside:
            found = _cuts(src, inside, specials, regex, column)
            for t, cut in zip(inside, found, strict=True):
                cut_of[begin + t] = begin + cut
        begin += size
    cuts, last = [], 0
    for t in targets:  # a target between two files is a cut as it is
        last = max(last, cut_of.get(t, t))
        cuts.append(last)
    bounds = [0, *cuts, total]
    kinds = [[src.kind, src.compression] for src in sources]
    options = [regex, specials, jsonl_field, column]
    digest = _fingerprint(files, sizes, kinds, n_shards, options, bounds)
    shards = []
    for k in range(n_shards):
        ranges, begin = [], 0
        for path, size in zip(files, sizes, strict=True):
            lo, hi = max(bounds[k] - begin, 0), min(bounds[k + 1] - begin, size)
            if lo < hi:
                ranges.append(ByteRange(path, lo, hi, size))
            begin += size
        shards.append(Shard(k, n_shards, tuple(ranges), digest, jsonl_field, column))
    return shards


def _cuts(
    src: Source, targets: list[int], specials: list[str], regex: Pattern, column: str
) -> list[int]:
    """Where `src` may be cut for each of `targets` (offsets in it): at or before the target (the
    file's start when nothing nearer), or for JSON lines at the next line's start."""
    if not src.splittable:
        return [0] * len(targets)
    if src.kind == "parquet":
        starts = row_group_starts(open_parquet(src.path, column))
        return [max((at for at in starts if at <= t), default=0) for t in targets]
    if src.kind == "jsonl":
        return [_next_line(src, t) for t in targets]
    found = find_cuts(os.fspath(src.path), targets, special_tokens=specials, pattern=regex)
    return [cut or 0 for cut in found]


def _next_line(src: Source, target: int) -> int:
    """The start of the first line that starts at or after `target` (the file's end if none)."""
    with open(src.path, "rb") as f:
        f.seek(target - 1)
        at = target - 1
        while block := f.read(1 << 16):
            newline = block.find(b"\n")
            if newline >= 0:
                return at + newline + 1
            at += len(block)
    return src.size


def _fingerprint(*parts: object) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


class CountOptions(TypedDict):
    """`count_shard`'s options as a cluster job sends them to its tasks."""

    special_tokens: list[str]
    pattern: Pattern
    errors: str
    num_threads: int


def count_shard(
    shard: Shard,
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
    errors: str = "replace",
    num_threads: int | None = None,
    progress: Callable[[int], object] | None = None,
    stats: CountStats | None = None,
) -> WordCounts:
    """The word counts of one shard (special tokens and pattern as planned); `stats` collects
    bytes read and invalid UTF-8 replaced. A file that changed size since planning is an error.

    >>> counts = count_shard(shards[3], special_tokens=["<|endoftext|>"])  # doctest: +SKIP
    """
    for r in shard.ranges:
        try:
            size = os.stat(r.path).st_size
        except OSError as e:
            raise type(e)(e.errno, f"{shard}: cannot read {r.path}: {e.strerror}") from None
        if size != r.file_size:
            raise ValueError(
                f"{shard}: {r.path} is {size:,} bytes now, {r.file_size:,} when the shards "
                f"were planned: plan (and count) again"
            )
    return count_ranges(
        [(r.path, r.start, r.end) for r in shard.ranges],
        jsonl_field=shard.jsonl_field,
        column=shard.column,
        special_tokens=special_tokens,
        pattern=pattern,
        errors=errors,
        num_threads=num_threads,
        progress=progress,
        stats=stats,
    )


def save_counts(
    path: str | os.PathLike[str],
    counts: WordCounts,
    shard: Shard,
    *,
    special_tokens: Iterable[str] | None = None,
    pattern: Pattern = "gpt2",
    errors: str = "replace",
    stats: CountStats | None = None,
    n_parts: int = DEFAULT_PARTS,
) -> None:
    """Writes a shard's counts as a `.bpc` file (atomically), with what `load_counts` checks:
    the options of counting and which shard of which plan it is."""
    stats = stats or CountStats()
    meta = {
        "format": COUNTS_FORMAT,
        "version": _META_VERSION,
        "pattern": resolve_pattern(pattern),
        "special_tokens": check_special_tokens(special_tokens),
        "errors": errors,
        "plan": shard.plan,
        "shard": shard.index,
        "n_shards": shard.n_shards,
        "ranges": [[r.path, r.start, r.end] for r in shard.ranges],
        "n_bytes": stats.n_bytes,
        "n_replaced": stats.n_replaced,
        "n_words": len(counts),
    }
    data = counts_file_bytes(counts, json.dumps(meta).encode("utf-8"), n_parts)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


@dataclass
class CountsInfo:
    """What a complete set of `.bpc` files says: the options they were counted with, totals."""

    pattern: Pattern = ""
    special_tokens: list[str] = field(default_factory=list)
    errors: str = "replace"
    n_shards: int = 0
    n_bytes: int = 0
    n_replaced: int = 0
    files: list[str] = field(default_factory=list)


def load_counts(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[WordCounts, CountsInfo]:
    """The sum of the `.bpc` files `paths` (files, globs, folders), which must hold every shard
    of one plan exactly once, counted with the same options; each file's checksums are checked.

    >>> counts, info = load_counts("counts/*.bpc")  # doctest: +SKIP
    """
    files = [str(p) for p in expand_paths(paths)]
    metas = [_read_meta(f) for f in files]
    info = _check_complete(files, metas)
    total = WordCounts()
    for f in files:
        read_counts_file(total, f)
    return total, info


def _read_meta(path: str) -> dict[str, Any]:
    raw, _ = read_counts_header(path)
    try:
        meta: dict[str, Any] = json.loads(raw)  # a JSON object, or the error below
        if meta.get("format") != COUNTS_FORMAT or meta.get("version") != _META_VERSION:
            raise ValueError
    except (ValueError, AttributeError):
        raise ValueError(
            f"{path}: its metadata is not that of bytepair counts version {_META_VERSION}"
        ) from None
    return meta


def _check_complete(files: list[str], metas: list[dict[str, Any]]) -> CountsInfo:
    """The files' common options, or an error naming a file that differs, a shard given
    twice or the shards missing."""
    first = metas[0]
    keys = ("pattern", "special_tokens", "errors", "plan", "n_shards")
    seen: dict[int, str] = {}
    for f, meta in zip(files, metas, strict=True):
        for key in keys:
            if meta[key] != first[key]:
                raise ValueError(
                    f"{f} was counted with {key} {meta[key]!r}, {files[0]} with {first[key]!r}: "
                    f"every shard must come from one plan (the same inputs, number of shards, "
                    f"special tokens and pattern)"
                )
        if meta["shard"] in seen:
            raise ValueError(
                f"shard {meta['shard']}/{meta['n_shards']} is given twice: {seen[meta['shard']]} "
                f"and {f}; give each shard's counts once"
            )
        seen[meta["shard"]] = f
    missing = sorted(set(range(first["n_shards"])) - set(seen))
    if missing:
        listed = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
        raise ValueError(
            f"the counts of {len(missing)} of {first['n_shards']} shards are missing (shards "
            f"{listed}); count them with `bytepair count ... --shard K/{first['n_shards']}`"
        )
    return CountsInfo(
        first["pattern"],
        first["special_tokens"],
        first["errors"],
        first["n_shards"],
        sum(m["n_bytes"] for m in metas),
        sum(m["n_replaced"] for m in metas),
        files,
    )
