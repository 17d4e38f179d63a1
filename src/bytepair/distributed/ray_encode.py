"""Corpus encoding on a Ray cluster: one task per input file runs `encode_files` on it alone and
writes its own token file into the output folder; the driver keeps `manifest.json` (every
shard's token count and sha256, saved as each ends), skips shards already complete on a re-run
(a shard cut off mid-file resumes from its journal), and can concatenate the shards in input
order into one file equal to a local `encode_files` of all the inputs.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np
import numpy.typing as npt

from .._atomic import write_atomic
from .._progress import show_progress
from ..corpus.encode import EOT, CorpusReport, check_eot, encode_files, tokenizer_hash
from ..corpus.streams import Hashing
from ..corpus.tokens import TokenWriter, choose_dtype, load_tokens, output_paths, read_doc_lengths
from ..encoding import Tokenizer
from ..sources import Source, expand_inputs
from .ray_tasks import MAX_RETRIES, connected, run_tasks, shard_bar

MANIFEST = "manifest.json"
_MANIFEST_VERSION = 1
#: Tokens copied at a time when concatenating shards.
_COPY_TOKENS = 1 << 24

#: A shard's entry in the manifest (JSON): what `_encode_task` returns, and its output's name.
_Entry = dict[str, Any]


class _EncodeOptions(TypedDict):
    """`encode_files`' options as the driver sends them to every task."""

    format: str
    dtype: str
    jsonl_field: str
    column: str
    append_eot: bool
    eot: str
    errors: str
    num_threads: int


@dataclass
class ShardedReport(CorpusReport):
    """What `encode_on_ray` did: `CorpusReport`'s figures over all shards, and how many were
    complete before (skipped)."""

    n_skipped: int = 0

    def summary(self) -> str:
        return f"{super().summary()}; {self.n_skipped:,} of them complete before (skipped)"


def encode_on_ray(
    tokenizer: Tokenizer,
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    address: str | None = None,
    concat: str | os.PathLike[str] | None = None,
    format: str | None = None,
    dtype: npt.DTypeLike | None = None,
    jsonl_field: str = "text",
    column: str = "text",
    append_eot: bool = False,
    eot: str = EOT,
    errors: str = "replace",
    num_threads: int = 1,
    progress: bool | None = None,
) -> ShardedReport:
    """Encodes each input file into its own token file under the folder `output` (its path
    relative to the inputs' common folder, plus `.bin`, `.npy` or Megatron's `.bin` + `.idx`)
    on a Ray cluster, with `output/manifest.json`; `concat`: also one file of all shards in
    input order. Options as `encode_files`'; `num_threads` per task.

    >>> encode_on_ray(tok, "shards/*.jsonl.zst", "out/", address="auto")  # doctest: +SKIP
    """
    start = time.perf_counter()
    fmt = format or "bin"
    out_dtype = choose_dtype(tokenizer.n_vocab, fmt, dtype)
    sources = expand_inputs(inputs)
    names = _output_names(sources, fmt)
    out_dir = Path(output)
    options: _EncodeOptions = {
        "format": fmt,
        "dtype": out_dtype.name,
        "jsonl_field": jsonl_field,
        "column": column,
        "append_eot": append_eot,
        "eot": eot,
        "errors": errors,
        "num_threads": num_threads,
    }
    if append_eot:
        check_eot(tokenizer, eot)  # its error now, not in every task
    config: dict[str, object] = {"tokenizer": tokenizer_hash(tokenizer), **options}
    del config["num_threads"]  # may change between runs
    entries = _previous(out_dir, config, sources, names)
    todo = [i for i, entry in enumerate(entries) if entry is None]
    report = ShardedReport(n_inputs=len(sources), dtype=out_dtype.name)
    report.n_skipped = len(sources) - len(todo)
    out_dir.mkdir(parents=True, exist_ok=True)
    _save(out_dir, config, entries)
    if todo:
        with connected(address) as ray:
            task = ray.remote(num_cpus=num_threads, max_retries=MAX_RETRIES)(_encode_task)
            tok_ref = ray.put(tokenizer)
            refs = [
                task.remote(tok_ref, str(sources[i].path), str(out_dir / names[i]), options)
                for i in todo
            ]

            def done(k: int, entry: dict[str, str | int]) -> int:
                entries[todo[k]] = {**entry, "output": names[todo[k]]}
                _save(out_dir, config, entries)
                return sources[todo[k]].size

            labels = [f"shard {i} ({sources[i].path})" for i in todo]
            n_bytes = sum(sources[i].size for i in todo)
            bar = shard_bar(show_progress(progress), "encoding", n_bytes, len(todo))
            run_tasks(ray, refs, labels, done, bar)
    report.outputs = [str(out_dir / MANIFEST)]
    if concat is not None:
        report.outputs += concatenate(out_dir, concat)
    # every entry is filled now: `run_tasks` returned, so each shard to do was done
    complete = cast(list[_Entry], entries)
    for key in ("n_bytes", "n_documents", "n_tokens", "n_replaced"):
        setattr(report, key, sum(e[key] for e in complete))
    report.seconds = time.perf_counter() - start
    return report


def _output_names(sources: list[Source], fmt: str) -> list[str]:
    """Each input's output, relative to the folder: its path below the inputs' common folder,
    plus the format's suffix (Megatron's `.bin` beside its `.idx`)."""
    paths = [s.path.resolve() for s in sources]
    root = Path(os.path.commonpath([p.parent for p in paths]))
    names: list[str] = []
    seen: dict[str, Path] = {}
    for src, path in zip(sources, paths, strict=True):
        rel = path.relative_to(root).as_posix()
        if rel in seen:
            raise ValueError(f"input {src.path} is given twice (as {seen[rel]} too)")
        seen[rel] = src.path
        names.append(rel + (".npy" if fmt == "npy" else ".bin"))
    return names


def _encode_task(
    tok: Tokenizer, src: str, out: str, options: _EncodeOptions
) -> dict[str, str | int]:
    """A task: one input into its own token file, resuming from a journal a killed attempt
    left; returns its manifest entry."""
    data, _ = output_paths(out, options["format"])
    journal = data.with_name(data.name + ".partial.json")
    report = encode_files(tok, [src], out, resume=journal.is_file(), progress=False, **options)
    st = os.stat(src)
    return {
        "input": src,
        "input_size": st.st_size,
        "input_mtime_ns": st.st_mtime_ns,
        "n_bytes": report.n_bytes,
        "n_documents": report.n_documents,
        "n_tokens": report.n_tokens,
        "n_replaced": report.n_replaced,
        "size": data.stat().st_size,
        "sha256": file_sha256(data),
    }


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, as the sidecars record inputs."""
    with open(path, "rb") as f:
        return Hashing(f).finish()


def _previous(
    out_dir: Path, config: dict[str, object], sources: list[Source], names: list[str]
) -> list[_Entry | None]:
    """The manifest entries of shards a previous run completed (None for the others): same
    input (size and mtime), same output name and size. A manifest of another tokenizer or
    other options is refused rather than mixed."""
    path = out_dir / MANIFEST
    if not path.is_file():
        return [None] * len(sources)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        old_config, old_entries = old["config"], old["shards"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{path}: not a bytepair encoding manifest; use an empty folder") from None
    if old_config != config:
        raise ValueError(
            f"{out_dir} holds shards encoded with another tokenizer or other options "
            f"({path}); use another folder, or delete it to start over"
        )
    by_input = {e["input"]: e for e in old_entries if e is not None}
    out: list[_Entry | None] = []
    for src, name in zip(sources, names, strict=True):
        e = by_input.get(str(src.path))
        data = out_dir / name
        ok = (
            e is not None
            and (e["input_size"], e["input_mtime_ns"]) == (src.size, src.mtime_ns)
            and e["output"] == name
            and data.is_file()
            and data.stat().st_size == e["size"]
        )
        out.append(e if ok else None)
    return out


def _save(out_dir: Path, config: dict[str, object], entries: list[_Entry | None]) -> None:
    manifest = {
        "version": _MANIFEST_VERSION,
        "config": config,
        "complete": all(e is not None for e in entries),
        "n_tokens": sum(e["n_tokens"] for e in entries if e is not None),
        "shards": entries,
    }
    write_atomic(out_dir / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def concatenate(out_dir: str | os.PathLike[str], output: str | os.PathLike[str]) -> list[str]:
    """One token file of every shard of a complete `out_dir`, in input order, with the sidecar
    a local `encode_files` of all the inputs writes (so both files are identical)."""
    out_dir = Path(out_dir)
    manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    if not manifest["complete"]:
        raise ValueError(f"{out_dir} is not complete: run the encoding again to finish it")
    fmt, dtype = manifest["config"]["format"], np.dtype(manifest["config"]["dtype"])
    writer = TokenWriter(output, fmt, dtype)
    writer.open()
    sidecar: dict[str, Any] = {}
    try:
        for entry in manifest["shards"]:
            data, idx = output_paths(out_dir / entry["output"], fmt)
            ids = load_tokens(data, dtype=dtype)
            lengths = read_doc_lengths(idx) if idx else np.zeros(0, np.int64)
            for at in range(0, max(len(ids), 1), _COPY_TOKENS):
                writer.append(ids[at : at + _COPY_TOKENS], lengths if at == 0 else lengths[:0])
            part = json.loads(data.with_name(data.name + ".json").read_text(encoding="utf-8"))
            sidecar = _join_sidecars(sidecar, part)
        written = writer.finish(sidecar.get("n_tokens", 0), sidecar)
    finally:
        writer.close()
    return [str(p) for p in written]


def _join_sidecars(total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    if not total:
        return dict(part)
    for key in ("n_tokens", "n_documents", "n_bytes"):
        total[key] += part[key]
    total["inputs"] = total["inputs"] + part["inputs"]
    return total
